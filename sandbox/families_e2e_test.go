package sandbox

import (
	"strings"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
)

// The two scenarios of the families issue, through the real app on ghsim over HTTP.
//
// A person moves a parent twice, then an agent moves it illegally: the illegal value is
// reverted as a loose item's is, the child's cascades are audited, and the app spends a few
// requests, not the installation's budget (the convergence gate used to poll GitHub ~29 times a
// second while the child's own write waited for a walk that never came).
func TestFamilyCascadeThenIllegalMoveEndToEnd(t *testing.T) {
	t.Parallel()
	e := start(t, "sqlite", familySeed(t, []string{"Backlog", "Backlog"}, map[int]int{2: 1}), nil)
	e.move("alice", 1, "Ready for Plan")
	e.settle()
	e.wantState(2, "Ready for Plan")
	e.move("alice", 1, "Plan in Progress")
	e.settle()
	e.wantState(2, "Plan in Progress")

	before := e.sb.Sim.Requests().Total
	began := time.Now()
	e.move("agent-1", 1, "Done")
	e.settle()
	took := time.Since(began)
	e.wantState(1, "Plan in Progress")
	n := appRequestsBetween(e, before)
	t.Logf("the illegal move was reverted and explained within %s, with %d GitHub requests", took.Round(time.Millisecond), n)
	// Its item's read, its group's family, the guarded revert (a read again and the write), the
	// comment, and the reads of the relatives' families a step may need.
	if n > 8 {
		t.Errorf("%d GitHub requests for one illegal move of a parent, want at most 8", n)
	}
	cascades := automatedTo(e.audit(2))
	if !cascades["Ready for Plan"] || !cascades["Plan in Progress"] {
		t.Errorf("#2's cascades audited as automated: %v, want Ready for Plan and Plan in Progress", cascades)
	}
}

// A person moves a parent Backlog → Ready for Plan, then 1.5 s later → Plan in Progress: the
// second move stands (the first one's cascade came first in the true history), nothing is
// explained, and both children's cascades are audited.
func TestFamilyQuickSecondMoveEndToEnd(t *testing.T) {
	t.Parallel()
	e := start(t, "sqlite", familySeed(t, []string{"Backlog", "Backlog", "Backlog"}, map[int]int{2: 1, 3: 1}), nil)
	e.move("alice", 1, "Ready for Plan")
	time.Sleep(1500 * time.Millisecond)
	e.move("alice", 1, "Plan in Progress")
	e.settle()
	e.wantState(1, "Plan in Progress")
	for _, c := range e.comments(1) {
		if strings.Contains(c.Body, "ralph-gate:violation") {
			t.Errorf("alice's legal move was explained as a violation:\n%s", c.Body)
		}
	}
	for _, n := range []int{2, 3} {
		e.wantState(n, "Plan in Progress")
		if cascades := automatedTo(e.audit(n)); !cascades["Ready for Plan"] || !cascades["Plan in Progress"] {
			t.Errorf("#%d's cascades audited as automated: %v, want Ready for Plan and Plan in Progress", n, cascades)
		}
	}
}

// automatedTo lists the states automation moved an item to, by its audit entries that name a
// cause.
func automatedTo(es []enforce.AuditEntry) map[string]bool {
	out := map[string]bool{}
	for _, e := range es {
		if e.Verdict == enforce.VerdictAutomated && e.Cause != "" {
			out[e.ToState] = true
		}
	}
	return out
}

// Closing and reopening are moves of their actor: an agent that closes an issue in Ready for
// Plan (a move to Done agents may not make) finds it reopened, its card still in Ready for
// Plan, and the reason on the issue; an agent's reopen of a Done issue is closed again.
func TestLifecycleMovesOfAnAgentAreUndoneEndToEnd(t *testing.T) {
	t.Parallel()
	e := start(t, "sqlite", familySeed(t, []string{"Ready for Plan", "In Review"}, nil), nil)
	e.patchIssue("agent-1", 1, `{"state":"closed"}`)
	e.settle()
	e.wantState(1, "Ready for Plan")
	is, err := e.sb.Issue("app", 1)
	if err != nil {
		t.Fatal(err)
	}
	if is.State != "open" {
		t.Fatalf("#1 stays %s", is.State)
	}
	explained := false
	for _, c := range is.Comments {
		explained = explained || (c.Author == e.sb.App.AppLogin() && strings.Contains(c.Body, "ralph-gate reopened the issue") &&
			strings.Contains(c.Body, "Recovery:"))
	}
	if !explained {
		t.Errorf("#1's reopening is not explained: %+v", is.Comments)
	}

	e.patchIssue("owner", 2, `{"state":"closed"}`) // a bypass login closes it: Done
	e.settle()
	e.wantState(2, "Done")
	e.patchIssue("agent-2", 2, `{"state":"open"}`)
	e.settle()
	e.wantState(2, "Done")
	if is, err := e.sb.Issue("app", 2); err != nil || is.State != "closed" {
		t.Fatalf("#2 was not closed again: %s %v", is.State, err)
	}
	refused := 0
	for _, n := range []int{1, 2} {
		for _, a := range e.audit(n) {
			if a.Verdict == enforce.VerdictReverted && strings.HasPrefix(a.Actor, "agent-") && a.Cause != "" {
				refused++
			}
		}
	}
	if refused != 2 {
		t.Errorf("%d refused lifecycle moves audited, want 2", refused)
	}
}
