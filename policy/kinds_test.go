package policy

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestKindAndActorKind(t *testing.T) {
	for k, want := range map[Kind]string{Queue: "queue", Lock: "lock", HumanGate: "human_gate", Terminal: "terminal", Kind(9): "kind(9)", Kind(-1): "kind(-1)"} {
		if k.String() != want {
			t.Errorf("Kind(%d) = %q", int(k), k.String())
		}
		if got, err := ParseKind(want); err == nil && got != k {
			t.Errorf("ParseKind(%q) = %v", want, got)
		}
	}
	if _, err := ParseKind("Queue"); err == nil {
		t.Error("ParseKind is case-sensitive like the config")
	}
	for a, want := range map[ActorKind]string{ActorApp: "app", ActorBypass: "bypass", ActorAgent: "agent", ActorHuman: "human", 0: "unknown", 99: "unknown"} {
		if a.String() != want {
			t.Errorf("ActorKind(%d) = %q", int(a), a.String())
		}
	}
	for _, in := range []string{"app", "bypass", "agent", "human", " Agent ", "HUMAN"} {
		k, err := ParseActorKind(in)
		if err != nil || k.String() != strings.ToLower(strings.TrimSpace(in)) {
			t.Errorf("ParseActorKind(%q) = %v, %v", in, k, err)
		}
	}
	for _, in := range []string{"", "robot", "unknown"} {
		_, err := ParseActorKind(in)
		t.Run("parse "+in, func(t *testing.T) {
			r := asRefusal(t, err)
			sameStrings(t, "options", r.Options, []string{"app", "bypass", "agent", "human"})
		})
	}
	var a ActorKind
	if err := json.Unmarshal([]byte(`"agent"`), &a); err != nil || a != ActorAgent {
		t.Errorf("unmarshal: %v %v", a, err)
	}
	if err := json.Unmarshal([]byte(`"x"`), &a); err == nil {
		t.Error("unmarshal of x must fail")
	}
	b, _ := json.Marshal(struct {
		K Kind
		A ActorKind
		V Verdict
	}{Lock, ActorBypass, Revert})
	if string(b) != `{"K":"lock","A":"bypass","V":"revert"}` {
		t.Errorf("json = %s", b)
	}
	if Allow.String() != "allow" || Revert.String() != "revert" || Verdict(7).String() != "verdict(7)" {
		t.Error("Verdict.String")
	}
}
