package policy

import (
	"reflect"
	"testing"
)

func TestDefaultSpecShape(t *testing.T) {
	s := DefaultSpec()
	// yaml.v3 decodes `[]` and `{}` to empty non-nil values and absent keys to nil: config.yml's
	// decoded workflow must DeepEqual this literal.
	if s.HumansOnly == nil || len(s.HumansOnly) != 0 {
		t.Error("humans_only must be an empty, non-nil slice")
	}
	if s.Gates.WIPLimits == nil || len(s.Gates.WIPLimits) != 0 {
		t.Error("wip_limits must be an empty, non-nil map")
	}
	for _, it := range s.Intents {
		if (it.Name == "complete") != (it.Ambiguous != nil) {
			t.Errorf("intent %s ambiguous = %#v", it.Name, it.Ambiguous)
		}
	}
	for _, c := range s.Commands {
		hasLock := c.Name == "research" || c.Name == "plan" || c.Name == "plan_epic" || c.Name == "impl"
		if hasLock != (c.Lock != "") {
			t.Errorf("command %s lock %q", c.Name, c.Lock)
		}
	}
	// A fresh value every call.
	s.States[0].Name = "X"
	s.Intents[0].Targets["x"] = "y"
	if !reflect.DeepEqual(DefaultSpec(), DefaultMachine().Spec()) {
		t.Error("DefaultSpec is shared or the machine does not round-trip it")
	}
}

func TestDefaultMachine(t *testing.T) {
	if m := DefaultMachine(); m == nil || len(m.States()) != 11 {
		t.Fatal("DefaultMachine")
	}
}
