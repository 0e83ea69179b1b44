package enforce

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/policy"
)

// A take-over whose move is then refused stands, and the refusal says so (the agent holds the
// lock now); the refused move keeps its own Recovery (here a requirement's). The previous
// holder's next handoff is refused, saying the lock was taken over.
func TestTakeOverThenARefusedMove(t *testing.T) {
	h := newHarnessWith(t, func(s *policy.Spec) {
		s.Locks.TTL = time.Hour
		s.Requirements = []policy.Requirement{{Into: []string{"Ready for Plan"}, Fields: []string{"Estimate"}}}
	}, nil, issue("A", "Research Needed"))
	if _, err := h.handoff("A", Handoff{Agent: "agent-1", Command: "research", Intent: "lock", Reason: "mine"}); err != nil {
		t.Fatal(err)
	}
	h.now = h.now.Add(90 * time.Minute)
	_, err := h.handoff("A", Handoff{Agent: "agent-2", Command: "research", Intent: "complete", TakeOver: true, Reason: "agent-1 is gone"})
	var r *policy.Refusal
	if !errors.As(err, &r) || r.Rule != policy.RuleRequirement ||
		!strings.Contains(r.Why, "Ready for Plan requires Estimate to have a value (the lock on Research in Progress is yours now: you took it over from agent-1)") ||
		r.Recovery != "set Estimate on the item first, then retry Ready for Plan" {
		t.Fatalf("refusal %+v", err)
	}
	rec, _ := h.st.GetItem(context.Background(), "A")
	if rec.LockHolder != "agent-2" || rec.LockTakenFrom != "agent-1" || rec.LastLegalState != "Research in Progress" {
		t.Fatalf("record %+v", rec)
	}
	if _, err := h.handoff("A", Handoff{Agent: "agent-1", Command: "research", Intent: "release", Reason: "back"}); err == nil ||
		!strings.Contains(err.Error(), "agent-2 took over the lock on Research in Progress from agent-1 after it expired") {
		t.Fatalf("the previous holder's handoff: %v", err)
	}
	// A take-over within the ttl is refused and changes nothing.
	h.now = h.now.Add(time.Minute)
	if _, err := h.handoff("A", Handoff{Agent: "agent-3", Command: "research", ToState: "Research in Progress", TakeOver: true, Reason: "r"}); err == nil ||
		!strings.Contains(err.Error(), "within workflow.locks.ttl (1h0m0s): it expires in 59m0s") {
		t.Fatalf("a take-over within the ttl: %v", err)
	}
}
