package sandbox

import (
	"strings"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/mcpserver/toolspec"
)

// Lock expiry end to end (docs/ENFORCEMENT.md "Lock expiry"): agent-1 claims #1 and goes
// away; before workflow.locks.ttl another agent cannot take the lock over, after it agent-2
// does through handoff_ticket's take_over (audited with the previous holder), and agent-1's
// next move is refused, telling it the lock was taken over; agent-2 finishes the work. A claim
// of pick_actionable_issue in the lock state takes over another expired lock.
func TestLockExpiryEndToEnd(t *testing.T) {
	t.Parallel()
	const ttl = 10 * time.Second
	each(t, func(t *testing.T, driver string) {
		e := start(t, driver, []byte(mcpSeed), func(c *config.Config) {
			configureMCP(c)
			c.Workflow.Locks.TTL = ttl
		})
		e.settle()
		one, two := e.agentClient(agent1Token), e.agentClient(agent2Token)
		// The locks are taken between these two times: before claimStart + ttl none has
		// expired, after claimEnd + ttl both have.
		claimStart := time.Now()
		for _, n := range []int{1, 5} {
			claimed := mustCall[toolspec.HandoffOutput](t, one, toolspec.HandoffTicket,
				map[string]any{"number": n, "command": "research", "intent": "lock", "reason": "researching"})
			if claimed.NewState != "Research in Progress" || claimed.Guidance.LockHolder != "agent-1" {
				t.Fatalf("claim of #%d: %+v", n, claimed)
			}
		}
		claimEnd := time.Now()
		// Checked only when answered before the locks could expire: a machine that slow
		// (many sandboxes share it) cannot tell.
		early := func() bool { return time.Since(claimStart) < ttl }
		pickExpired := map[string]any{"workflowState": "Research in Progress", "claim": true, "command": "research", "reason": "picking up abandoned research"}
		if p := mustCall[toolspec.PickOutput](t, two, toolspec.PickActionableIssue, pickExpired); early() && (p.Found || p.Claimed) {
			t.Fatalf("a claim in a lock state before any lock expired: %+v", p)
		}
		takeOver := map[string]any{"number": 1, "command": "research", "to_state": "Research in Progress", "take_over": true,
			"reason": "agent-1 stopped answering"}
		if _, msg := call[toolspec.HandoffOutput](t, two, toolspec.HandoffTicket, takeOver); early() && (!strings.Contains(msg, "within workflow.locks.ttl (10s)") ||
			!strings.Contains(msg, "Recovery: wait until the lock expires, or ask agent-1 to hand the item off")) {
			t.Fatalf("a take-over before the ttl: %q", msg)
		}
		if !early() {
			t.Log("the checks before the ttl were answered too late to tell")
		}

		time.Sleep(time.Until(claimEnd.Add(ttl + 500*time.Millisecond))) // agent-1 is away
		took := mustCall[toolspec.HandoffOutput](t, two, toolspec.HandoffTicket, takeOver)
		if took.TookOverFrom != "agent-1" || took.Changed || took.Guidance.LockHolder != "agent-2" {
			t.Fatalf("take-over: %+v", took)
		}
		audited := false
		for _, a := range e.audit(1) {
			if a.Actor == "agent-2" && a.Verdict == enforce.VerdictHandoff && strings.Contains(a.Reason, "took over the lock on Research in Progress from agent-1") {
				audited = true
			}
		}
		if !audited {
			t.Errorf("the take-over is not audited with the previous holder: %+v", e.audit(1))
		}

		_, msg := call[toolspec.HandoffOutput](t, one, toolspec.HandoffTicket,
			map[string]any{"number": 1, "command": "research", "intent": "complete", "reason": "done researching"})
		if !strings.Contains(msg, "agent-2 took over the lock on Research in Progress from agent-1 after it expired") ||
			!strings.Contains(msg, "Recovery: leave #1 to agent-2 and pick other work (pick_actionable_issue)") {
			t.Fatalf("agent-1's move after the take-over: %q", msg)
		}
		done := mustCall[toolspec.HandoffOutput](t, two, toolspec.HandoffTicket,
			map[string]any{"number": 1, "command": "research", "intent": "complete", "reason": "finished agent-1's research"})
		if done.NewState != "Ready for Plan" {
			t.Fatalf("agent-2 completes: %+v", done)
		}
		e.settle()
		e.wantState(1, "Ready for Plan")

		// A claim in the lock state takes over the other expired lock (#5).
		p := mustCall[toolspec.PickOutput](t, two, toolspec.PickActionableIssue, pickExpired)
		if !p.Claimed || p.Issue == nil || p.Issue.Number != 5 || p.Handoff == nil || p.Handoff.TookOverFrom != "agent-1" ||
			p.Handoff.Guidance.LockHolder != "agent-2" {
			t.Fatalf("pick with claim over an expired lock: %+v (handoff %+v)", p, p.Handoff)
		}
	})
}
