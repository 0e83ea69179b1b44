package policy

import (
	"errors"
	"strings"
	"testing"
)

func TestHandoffRefusal(t *testing.T) {
	m := defaultMachine(t)
	c := Change{From: "Backlog", To: "Research in Progress", Actor: "agent-1", ActorKind: ActorAgent}
	d := m.Decide(c)
	r := m.HandoffRefusal("research", c, d)
	if r == nil {
		t.Fatal("Backlog → Research in Progress must be refused")
	}
	msg := r.Error()
	for _, want := range []string{"agent-1 asked to hand the item off from Backlog", "Recovery: from Backlog, research may retry with intent complete (→ Ready for Plan)",
		"release (→ Research Needed)", `or with state "Ready for Plan" or "Human Needed" (give intent or state, not both)`} {
		if !strings.Contains(msg, want) {
			t.Errorf("refusal lacks %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, "lock (→") {
		t.Errorf("the refused intent is offered again: %s", msg)
	}
	for _, o := range r.Options {
		if !strings.Contains(r.Recovery, o) {
			t.Errorf("option %q is not named in the recovery", o)
		}
	}
	// Each surface names its own arguments: the MCP tool's direct state is to_state.
	spelt := r.Spell(func(a Arg) string {
		if a == ArgState {
			return "to_state"
		}
		return ""
	})
	if want := `or with to_state "Ready for Plan" or "Human Needed" (give intent or to_state, not both)`; !strings.Contains(spelt.Recovery, want) || strings.Contains(r.Recovery, "to_state") {
		t.Errorf("spelt recovery lacks %q: %s (the refusal itself: %s)", want, spelt.Recovery, r.Recovery)
	}
	if m.HandoffRefusal("research", c, Decision{Verdict: Allow}) != nil {
		t.Error("an allowed change has no refusal")
	}
	// Gate refusals keep their own recovery.
	lc := Change{From: "Research in Progress", To: "Ready for Plan", Actor: "agent-2", ActorKind: ActorAgent, LockHolder: "agent-1"}
	if r := m.HandoffRefusal("research", lc, m.Decide(lc)); r == nil || !strings.Contains(r.Recovery, "ask agent-1") {
		t.Errorf("lock refusal: %v", r)
	}
	// Nothing the command can do: the other moves are named.
	hc := Change{From: "Human Needed", To: "Backlog", Actor: "agent-1", ActorKind: ActorAgent}
	if r := m.HandoffRefusal("triage", hc, m.Decide(hc)); r == nil || !strings.Contains(r.Recovery, "ask a human") {
		t.Errorf("human needed: %v", r)
	}
}

func TestHandoffRetries(t *testing.T) {
	m := defaultMachine(t)
	intents, states := m.HandoffRetries("ralph_plan", "Ready for Plan", ActorAgent)
	if strings.Join(states, ",") != "Plan in Progress,Human Needed" || !strings.HasPrefix(strings.Join(intents, ","), "lock (→ Plan in Progress)") {
		t.Fatalf("%v %v", intents, states)
	}
	if i, s := m.HandoffRetries("nope", "Backlog", ActorAgent); i != nil || s != nil {
		t.Fatal("an unknown command has no retries")
	}
}

func TestCheckAdvance(t *testing.T) {
	m := defaultMachine(t)
	for _, tc := range []struct {
		parent, target, want string
	}{
		{"Plan in Review", "Ready for Plan", ""},
		{"Plan in Review", "Plan in Review", ""},
		{"Ready for Plan", "In Progress", "children never get ahead"},
		{"Human Needed", "Backlog", "off the pipeline"},
		{"In Progress", "Canceled", "off the pipeline"},
		{"In Progress", "Nowhere", "Unknown target state"},
	} {
		err := m.CheckAdvance(tc.parent, tc.target)
		var r *Refusal
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s/%s: %v", tc.parent, tc.target, err)
		case tc.want != "" && (!errors.As(err, &r) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "Recovery: ")):
			t.Errorf("%s/%s: want %q, got %v", tc.parent, tc.target, tc.want, err)
		}
	}
}
