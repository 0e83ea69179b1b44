package policy

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// State names spelled out so tests never derive expectations from the machine under test.
const (
	sBacklog = "Backlog"
	sRN      = "Research Needed"
	sRIP     = "Research in Progress"
	sRFP     = "Ready for Plan"
	sPIP     = "Plan in Progress"
	sPIR     = "Plan in Review"
	sIP      = "In Progress"
	sIR      = "In Review"
	sHN      = "Human Needed"
	sDone    = "Done"
	sCancel  = "Canceled"
)

var allStates = []string{sBacklog, sRN, sRIP, sRFP, sPIP, sPIR, sIP, sIR, sHN, sDone, sCancel}

func defaultMachine(t testing.TB) *Machine {
	t.Helper()
	m, ps := Compile(DefaultSpec())
	if len(ps) > 0 {
		t.Fatalf("default spec invalid: %v", ps)
	}
	return m
}

// machineWith compiles DefaultSpec after applying edit.
func machineWith(t testing.TB, edit func(*Spec)) *Machine {
	t.Helper()
	s := DefaultSpec()
	edit(&s)
	m, ps := Compile(s)
	if len(ps) > 0 {
		t.Fatalf("spec invalid: %v", ps)
	}
	return m
}

// asRefusal asserts err is a *Refusal in three parts whose Recovery names every option.
func asRefusal(t *testing.T, err error) *Refusal {
	t.Helper()
	var r *Refusal
	if !errors.As(err, &r) {
		t.Fatalf("error %v (%T) is not a *Refusal", err, err)
	}
	msg := r.Error()
	if r.Tried == "" || r.Why == "" || r.Recovery == "" {
		t.Fatalf("refusal has an empty part: %#v", r)
	}
	if !strings.Contains(msg, ". Recovery: ") || strings.Count(msg, "Recovery:") != 1 {
		t.Fatalf("refusal %q lacks exactly one Recovery part", msg)
	}
	if !strings.HasPrefix(msg, sentence(r.Tried)+". "+sentence(r.Why)+". Recovery: ") {
		t.Fatalf("refusal %q is not Tried. Why. Recovery:", msg)
	}
	for _, o := range r.Options {
		if !strings.Contains(r.Recovery, o) {
			t.Errorf("option %q missing from Recovery %q", o, r.Recovery)
		}
	}
	return r
}

func sameStrings(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s = %q, want %q", what, got, want)
	}
}

var allCommands = []string{"triage", "split", "research", "plan", "plan_epic", "review", "impl", "pr", "merge", "hero"}

// the README's intent table ("allowed direct outputs per command") (lock first, then outputs).
var wantDirect = map[string][]string{
	"triage":    {sRN, sRFP, sDone, sCancel, sHN},
	"split":     {sBacklog, sIP, sRFP},
	"research":  {sRIP, sRFP, sHN},
	"plan":      {sPIP, sPIR, sIP, sHN},
	"plan_epic": {sPIP, sIP, sHN},
	"review":    {sIP, sRFP, sHN},
	"impl":      {sIP, sIR, sHN},
	"pr":        {sIR, sHN},
	"merge":     {sDone, sHN},
	"hero":      {sIR, sHN},
}
