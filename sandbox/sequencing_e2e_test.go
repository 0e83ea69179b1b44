package sandbox

import (
	"context"
	"strings"
	"testing"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/ghsim"
	"github.com/ralph-gate/ralph-gate/marker"
)

// The case that broke the promise: webhooks lost for a while (a pod restart, a 5xx), then
// later moves arrive first. Each step must be judged from the state it actually left, with its
// own actor, once the sweeper has brought the lost ones back:
//   - #1: agent-1 takes the lock (lost), agent-2 moves it on: a lock violation by agent-2,
//     reverted to Research in Progress, with agent-1 still holding the lock;
//   - #2: alice's legal chain (first two webhooks lost) stands, with no comment.
func TestLostWebhooksJudgedInHistoryOrder(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, driver string) {
		e := start(t, driver, flatSeed(t, 2, func(int) string { return "Research Needed" }), nil)
		e.reconcile() // installed on the board: both adopted
		e.faults(ghsim.Faults{Webhook: ghsim.WebhookFaults{DropRate: 1}})
		e.move("agent-1", 1, "Research in Progress")
		e.move("alice", 2, "Research in Progress")
		e.move("alice", 2, "Ready for Plan")
		e.settle()
		e.faults(ghsim.Faults{})
		e.move("agent-2", 1, "Ready for Plan")
		e.move("alice", 2, "Plan in Progress")
		e.settle()

		e.wantState(1, "Research in Progress")
		e.wantState(2, "Plan in Progress")
		if cs := e.comments(2); len(cs) != 0 {
			t.Errorf("alice's legal chain was explained as a violation: %+v", cs)
		}
		cs := e.comments(1)
		if len(cs) != 1 {
			t.Fatalf("#1 has %d comments, want one explaining agent-2's move", len(cs))
		}
		ms, err := marker.ParseTransitions(cs[0].Body)
		if err != nil || len(ms) != 1 || ms[0].Actor != "agent-2" || ms[0].From != "Research in Progress" || ms[0].To != "Ready for Plan" || ms[0].Rule != "lock_ownership" {
			t.Fatalf("#1's explanation %+v (%v), want agent-2's lock violation Research in Progress → Ready for Plan:\n%s", ms, err, cs[0].Body)
		}
		if !strings.Contains(cs[0].Body, "agent-1") {
			t.Errorf("the explanation does not name the lock holder agent-1:\n%s", cs[0].Body)
		}
		rec := e.item(1)
		if rec.LockHolder != "agent-1" || rec.LastLegalState != "Research in Progress" {
			t.Errorf("#1 record %+v: want Research in Progress held by agent-1", rec)
		}
		for _, i := range []int{1, 2} {
			for _, a := range e.audit(i) {
				if a.Actor == enforce.DriftActor && a.Verdict != enforce.VerdictAdopted {
					t.Errorf("#%d: a step with a redeliverable webhook was judged as an unknown author's: %+v", i, a)
				}
				if i == 2 && a.Verdict == enforce.VerdictReverted {
					t.Errorf("#2: alice's legal move was refused: %+v", a)
				}
			}
		}
		if n := e.appWrites(); n != 1 {
			t.Errorf("the app wrote %d values, want 1 (the revert of agent-2's move)", n)
		}
	})
}

// item returns the store's record of issue number's item.
func (e *env) item(number int) enforce.Record {
	e.t.Helper()
	for _, a := range e.audit(number) {
		rec, err := e.sb.App.Store().GetItem(context.Background(), a.ItemID)
		if err != nil {
			e.t.Fatal(err)
		}
		return rec
	}
	e.t.Fatalf("#%d has no record", number)
	return enforce.Record{}
}
