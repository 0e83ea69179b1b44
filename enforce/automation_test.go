package enforce

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/marker"
	"github.com/ralph-gate/ralph-gate/policy"
)

// A parent's legal move carries its children (and theirs) that are earlier on the pipeline
// along, as the app's own legal moves; terminal children, children already as far and issues
// not on the project stay.
func TestCascadeToChildrenAndGrandchildren(t *testing.T) {
	parent := issueN("P", "Plan in Review", 10)
	c1 := issueN("C1", "Backlog", 11)
	c2 := issueN("C2", "Research Needed", 12)
	c3 := issueN("C3", "Done", 13)
	c4 := issueN("C4", "In Review", 14)
	g1 := issueN("G1", "", 21)
	gg := issueN("GG", "Backlog", 31)
	obs := &observer{}
	h := newHarnessWith(t, nil, func(_ *harness, o *Options) { o.Observer = obs }, parent, c1, c2, c3, c4, g1, gg)
	setFamily(h.board, g1, gg)
	setFamily(h.board, c1, h.boardItem("G1"))
	setFamily(h.board, parent, h.boardItem("C1"), c2, c3, c4)
	fam := h.board.family["I_P"]
	fam.Children = append(fam.Children, offProject(30))
	h.board.family["I_P"] = fam
	h.adoptAll("P", "C3")
	h.now = h.now.Add(time.Second)

	res := h.process(h.board.move("P", "alice", "In Progress", h.now))
	if res.Verdict != VerdictAllowed {
		t.Fatalf("%+v", res)
	}
	want := map[string]string{"P": "In Progress", "C1": "In Progress", "C2": "In Progress", "C3": "Done", "C4": "In Review", "G1": "In Progress", "GG": "In Progress"}
	for id, st := range want {
		if got := h.state(id); got != st {
			t.Errorf("%s is %q, want %q", id, got, st)
		}
	}
	causes := map[string]string{
		"C1": "cascade: parent #10 moved to In Progress (#10 moved to In Progress)",
		"C2": "cascade: parent #10 moved to In Progress (#10 moved to In Progress)",
		"G1": "cascade: parent #11 moved to In Progress (#10 moved to In Progress)",
		"GG": "cascade: parent #21 moved to In Progress (#10 moved to In Progress)",
	}
	for id, cause := range causes {
		rec := h.record(id)
		if rec.LastLegalState != "In Progress" || rec.ObservedState != "In Progress" || rec.IssueNumber == 0 || rec.ProjectID != "PVT_1" {
			t.Errorf("%s: record %+v", id, rec)
		}
		es := h.audit(id)
		if len(es) != 1 || es[0].Verdict != VerdictAutomated || es[0].Actor != "ralph-gate[bot]" || es[0].ActorKind != "app" ||
			es[0].Rule != "automation" || es[0].Cause != cause || es[0].ToState != "In Progress" {
			t.Errorf("%s: audit %+v", id, es)
		}
		o, err := h.st.PendingObservations(bg, id)
		if err != nil || len(o) != 0 {
			t.Errorf("%s: pending %+v", id, o)
		}
	}
	if es := h.audit("C3"); len(es) != 1 || es[0].Verdict != VerdictAdopted {
		t.Errorf("a terminal child was moved: %s", verdicts(es))
	}
	if obs.count(CauseCascade) != 4 || len(obs.causes) != 4 {
		t.Errorf("observed %v", obs.causes)
	}
	if h.board.adds != 0 {
		t.Errorf("comment_automation is off, but %d comments", h.board.adds)
	}
	// The parent's automation ran once: a second delivery of its move changes nothing.
	writes := len(h.board.sets)
	h.process(h.board.move("P", "alice", "In Progress", h.now))
	if len(h.board.sets) != writes {
		t.Errorf("automation ran again: %v", h.board.sets)
	}
	if rec := h.record("P"); rec.AutomateState != "" {
		t.Errorf("automation left pending: %+v", rec)
	}
}

func TestCascadeStopsAtMaxDepth(t *testing.T) {
	parent := issueN("P", "Plan in Review", 10)
	c1 := issueN("C1", "Backlog", 11)
	g1 := issueN("G1", "Backlog", 21)
	h := newHarnessWith(t, func(s *policy.Spec) { s.Automation.MaxCascadeDepth = 1 }, nil, parent, c1, g1)
	setFamily(h.board, c1, g1)
	setFamily(h.board, parent, h.boardItem("C1"))
	h.adoptAll("P")
	h.now = h.now.Add(time.Second)
	h.process(h.board.move("P", "alice", "In Progress", h.now))
	if h.state("C1") != "In Progress" || h.state("G1") != "Backlog" || h.hasRecord("G1") {
		t.Fatalf("C1=%s G1=%s", h.state("C1"), h.state("G1"))
	}
}

// When every child reaches a parent gate, the parent follows, and its parent in turn.
func TestConvergenceMovesParentsUp(t *testing.T) {
	gp := issueN("GP", "In Progress", 1)
	p := issueN("P", "In Progress", 10)
	q := issueN("Q", "In Review", 11)
	c1 := issueN("C1", "In Review", 21)
	c2 := issueN("C2", "In Progress", 22)
	c3 := issueN("C3", "Canceled", 23)
	obs := &observer{}
	h := newHarnessWith(t, func(s *policy.Spec) { s.Automation.CommentAutomation = true }, func(_ *harness, o *Options) { o.Observer = obs },
		gp, p, q, c1, c2, c3)
	setFamily(h.board, p, c1, c2, c3)
	setFamily(h.board, gp, h.boardItem("P"), q)
	h.adoptAll("C2", "P")
	h.put(Record{ItemID: "GP", LastLegalState: "In Progress"})
	h.now = h.now.Add(time.Second)

	if res := h.process(h.board.move("C2", "agent-1", "In Review", h.now)); res.Verdict != VerdictAllowed {
		t.Fatalf("%+v", res)
	}
	for id, want := range map[string]string{"C2": "In Review", "P": "In Review", "GP": "In Review", "C3": "Canceled"} {
		if got := h.state(id); got != want {
			t.Errorf("%s is %q, want %q", id, got, want)
		}
	}
	for id, cause := range map[string]string{"P": "convergence: every child of #10 is at In Review or later", "GP": "convergence: every child of #1 is at In Review or later"} {
		es := h.audit(id)
		last := es[len(es)-1]
		if last.Verdict != VerdictAutomated || last.FromState != "In Progress" || last.ToState != "In Review" || last.Cause != cause {
			t.Errorf("%s: audit %s", id, verdicts(es))
		}
		if rec := h.record(id); rec.LastLegalState != "In Review" {
			t.Errorf("%s: record %+v", id, rec)
		}
	}
	if obs.count(CauseConvergence) != 2 {
		t.Errorf("observed %v", obs.causes)
	}
	// comment_automation: each automated move is explained on its issue.
	bodies := h.commentBodies()
	if len(bodies) != 2 {
		t.Fatalf("comments %q", bodies)
	}
	for _, b := range bodies {
		ms, err := marker.ParseTransitions(b)
		if err != nil || len(ms) != 1 || ms[0].Verdict != "automated" || ms[0].Actor != "ralph-gate[bot]" || !strings.HasPrefix(ms[0].Cause, "convergence: ") {
			t.Errorf("marker %+v %v in\n%s", ms, err, b)
		}
		if !strings.Contains(b, "ralph-gate moved this from **In Progress** to **In Review**: convergence: every child of #") {
			t.Errorf("comment:\n%s", b)
		}
	}
}

func TestConvergenceWaitsForEveryChild(t *testing.T) {
	p := issueN("P", "In Progress", 10)
	c1 := issueN("C1", "Human Needed", 21)
	c2 := issueN("C2", "In Progress", 22)
	h := newHarness(t, p, c1, c2)
	setFamily(h.board, p, c1, c2)
	h.adoptAll("C2", "P")
	h.now = h.now.Add(time.Second)
	h.process(h.board.move("C2", "agent-1", "In Review", h.now))
	if h.state("P") != "In Progress" || len(h.audit("P")) != 1 {
		t.Fatalf("a parent converged past a child in Human Needed: %s", h.state("P"))
	}
}

// A failed automation comment is logged: the move stands.
func TestAutomationCommentFailureKeepsTheMove(t *testing.T) {
	p := issueN("P", "Plan in Review", 10)
	c := issueN("C", "Backlog", 11)
	h := newHarnessWith(t, func(s *policy.Spec) { s.Automation.CommentAutomation = true }, nil, p, c)
	setFamily(h.board, p, c)
	h.adoptAll("P")
	h.board.breakOn(errInjected, "AddComment")
	h.now = h.now.Add(time.Second)
	if res := h.process(h.board.move("P", "alice", "In Progress", h.now)); res.Verdict != VerdictAllowed {
		t.Fatalf("%+v", res)
	}
	if h.state("C") != "In Progress" || h.record("C").LastLegalState != "In Progress" || h.board.calls["AddComment"] != 1 {
		t.Fatalf("C=%s, %d comment attempts", h.state("C"), h.board.calls["AddComment"])
	}
}

// A parent's move is judged after its child's earlier reported move (its relatives' history
// before it comes first: relatives.go), then cascades onto the child from the state that
// move left.
func TestCascadeComesAfterTheChildsEarlierMove(t *testing.T) {
	p := issueN("P", "Plan in Review", 10)
	c := issueN("C", "Research Needed", 11)
	obs := &observer{}
	h := newHarnessWith(t, nil, func(_ *harness, o *Options) { o.Observer = obs }, p, c)
	setFamily(h.board, p, c)
	h.adoptAll("P", "C")
	t0 := h.now.Add(time.Second)
	// alice's move of the child is reported, not judged yet.
	pendingChild := h.board.move("C", "alice", "Ready for Plan", t0)
	if _, err := h.svc.Enforcer.Observe(bg, pendingChild); err != nil {
		t.Fatal(err)
	}
	h.now = t0.Add(time.Second)
	parentMove := h.board.move("P", "alice", "In Progress", h.now)
	if res := h.process(parentMove); res.Verdict != VerdictWait || !strings.Contains(res.Reason, "#11") {
		t.Fatalf("the parent's move did not wait for the child's earlier one: %+v", res)
	}
	// The child's walk judges alice's move, then wakes the parent's, which cascades.
	if res := h.process(pendingChild); res.Verdict != VerdictAllowed {
		t.Fatalf("alice's move: %+v", res)
	}
	h.drain()
	rec := h.record("C")
	if rec.LastLegalState != "In Progress" || rec.ObservedState != "In Progress" || h.state("C") != "In Progress" || len(h.board.sets) != 1 {
		t.Fatalf("record %+v, board %s, writes %v", rec, h.state("C"), h.board.sets)
	}
	es := h.audit("C")
	if len(es) != 3 || es[1].Verdict != VerdictAllowed || es[1].Actor != "alice" || es[2].Verdict != VerdictAutomated || es[2].ActorKind != "app" ||
		es[2].FromState != "Ready for Plan" || !strings.Contains(es[2].Cause, "cascade: parent #10 moved to In Progress") {
		t.Fatalf("audit %s", verdicts(es))
	}
	if obs.count(CauseCascade) != 1 {
		t.Errorf("observed %v", obs.causes)
	}
	// The parent's job, coming back, finds its move judged.
	if res := h.process(parentMove); res.Verdict != VerdictAllowed {
		t.Fatalf("the parent's job: %+v", res)
	}
}

func TestLifecycleSync(t *testing.T) {
	other := onProject(issueN("O", "In Progress", 7), 2) // the same issue on an unenforced project
	obs := &observer{}
	h := newHarnessWith(t, nil, func(_ *harness, o *Options) {
		o.Observer = obs
		o.Enforced = func(_ string, n int) bool { return n == 1 }
	}, issueN("A", "In Progress", 7), other)

	ev := Lifecycle{DeliveryID: "d1", Kind: LifecyclePRMerged, Owner: "acme", Repo: "app", Number: 80, Actor: "bob"}
	res, err := h.svc.Enforcer.ProcessLifecycle(bg, h.board, ev)
	if err != nil || res.Verdict != VerdictAllowed || res.Reason != "1 item(s) moved" {
		t.Fatalf("%+v %v", res, err)
	}
	if h.state("A") != "In Review" || h.state("O") != "In Progress" {
		t.Fatalf("A=%s O=%s", h.state("A"), h.state("O"))
	}
	es := h.audit("A")
	if len(es) != 1 || es[0].Cause != "pull request acme/app#80 merged by bob" || es[0].Verdict != VerdictAutomated {
		t.Fatalf("audit %+v", es)
	}
	if obs.count(CauseLifecycle) != 1 {
		t.Errorf("observed %v", obs.causes)
	}

	// Closed as not planned; the reason is told.
	h.now = h.now.Add(time.Minute)
	res, err = h.svc.Enforcer.ProcessLifecycle(bg, h.board, Lifecycle{DeliveryID: "d2", Kind: LifecycleIssueClosed, Owner: "acme", Repo: "app", Number: 7, StateReason: "not_planned", Actor: "carol"})
	if err != nil || res.Verdict != VerdictAllowed || h.state("A") != "Canceled" {
		t.Fatalf("%+v %v %s", res, err, h.state("A"))
	}
	if es := h.audit("A"); es[len(es)-1].Cause != "issue closed by carol (not_planned)" {
		t.Errorf("cause %q", es[len(es)-1].Cause)
	}
	// Nothing to move: ignored.
	res, err = h.svc.Enforcer.ProcessLifecycle(bg, h.board, Lifecycle{DeliveryID: "d3", Kind: LifecycleIssueClosed, Owner: "acme", Repo: "app", Number: 7, StateReason: "not_planned", Actor: "carol"})
	if err != nil || res.Verdict != VerdictIgnored || res.Reason != "nothing to move" {
		t.Fatalf("%+v %v", res, err)
	}
	h.now = h.now.Add(time.Minute)
	if res, err := h.svc.Enforcer.ProcessLifecycle(bg, h.board, Lifecycle{DeliveryID: "d4", Kind: LifecycleIssueReopened, Owner: "acme", Repo: "app", Number: 7, Actor: "carol"}); err != nil || h.state("A") != "Backlog" {
		t.Fatalf("reopened: %+v %v %s", res, err, h.state("A"))
	}
	if es := h.audit("A"); es[len(es)-1].Cause != "issue reopened by carol" {
		t.Errorf("cause %q", es[len(es)-1].Cause)
	}
}

func TestLifecycleSyncOff(t *testing.T) {
	h := newHarnessWith(t, func(s *policy.Spec) { s.Automation.LifecycleSync = false }, nil, issueN("A", "In Progress", 7))
	res, err := h.svc.Enforcer.ProcessLifecycle(bg, h.board, Lifecycle{Kind: LifecycleIssueClosed, Owner: "acme", Repo: "app", Number: 7})
	if err != nil || res.Verdict != VerdictIgnored || res.Reason != "lifecycle sync is off" || h.state("A") != "In Progress" || h.board.calls["IssueItems"] != 0 {
		t.Fatalf("%+v %v", res, err)
	}
}

// Closing a parent carries its children to Done; lifecycle failures are returned.
func TestLifecycleCascadesAndFails(t *testing.T) {
	p := issueN("P", "In Review", 7)
	c := issueN("C", "In Progress", 8)
	h := newHarness(t, p, c)
	setFamily(h.board, p, c)
	closed := Lifecycle{Kind: LifecycleIssueClosed, Owner: "acme", Repo: "app", Number: 7, StateReason: "completed", Actor: "dan"}
	if _, err := h.svc.Enforcer.ProcessLifecycle(bg, h.board, closed); err != nil {
		t.Fatal(err)
	}
	if h.state("P") != "Done" || h.state("C") != "Done" {
		t.Fatalf("P=%s C=%s", h.state("P"), h.state("C"))
	}
	if es := h.audit("C"); len(es) != 1 || es[0].Cause != "cascade: parent #7 moved to Done (issue closed by dan (completed))" {
		t.Fatalf("audit %+v", es)
	}

	tests := []struct {
		name         string
		ev           Lifecycle
		board, store string
		want         string
	}{
		{name: "closing issues", ev: Lifecycle{Kind: LifecyclePRMerged, Number: 80}, board: "ClosingIssues", want: "ClosingIssues"},
		{name: "issue items", ev: Lifecycle{Kind: LifecycleIssueReopened, Number: 7}, board: "IssueItems", want: "IssueItems"},
		{name: "item read", ev: Lifecycle{Kind: LifecycleIssueReopened, Number: 7}, board: "Item", want: "read item P"},
		{name: "write", ev: Lifecycle{Kind: LifecycleIssueReopened, Number: 7}, board: "SetState", want: `revert item P to "Backlog"`},
		{name: "lock", ev: Lifecycle{Kind: LifecycleIssueReopened, Number: 7}, store: "LockItem", want: "lock item P"},
		{name: "record", ev: Lifecycle{Kind: LifecycleIssueReopened, Number: 7}, store: "CommitStep", want: "save item P"},
		{name: "automation", ev: Lifecycle{Kind: LifecycleIssueReopened, Number: 8}, board: "Family", want: "converge parents of #8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, issueN("P", "Done", 7), child("C", "Done", 8, issueN("P", "Done", 7)))
			h.board.breakOn(errInjected, tt.board)
			h.st.breakOn(errInjected, tt.store)
			tt.ev.Owner, tt.ev.Repo, tt.ev.Actor = "acme", "app", "dan"
			_, err := h.svc.Enforcer.ProcessLifecycle(bg, h.board, tt.ev)
			if !errors.Is(err, errInjected) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// Only issues are automated: a pull request's move sets nothing off.
func TestAutomationOnlyForIssues(t *testing.T) {
	pr := issueN("R", "In Progress", 90)
	pr.ContentType, pr.SubIssues = ContentPullRequest, 1
	h := newHarness(t, pr)
	h.adoptAll("R")
	h.now = h.now.Add(time.Second)
	h.process(h.board.move("R", "alice", "In Review", h.now))
	if h.board.calls["Family"] != 0 {
		t.Fatalf("a pull request's move read relatives")
	}
}

// A cascade that fails to write is returned by the walk, and finished by its retry.
func TestCascadeFailureIsRetried(t *testing.T) {
	p := issueN("P", "Plan in Review", 10)
	c := issueN("C", "Backlog", 11)
	h := newHarness(t, p, c)
	setFamily(h.board, p, c)
	h.adoptAll("P")
	h.now = h.now.Add(time.Second)
	ch := h.board.move("P", "alice", "In Progress", h.now)
	hb := newHookBoard(h.board)
	hb.failSet["C"] = errInjected
	if _, err := h.svc.Enforcer.ProcessChange(bg, hb, ch); !errors.Is(err, errInjected) || !strings.Contains(err.Error(), "cascade to children of #10") {
		t.Fatalf("error %v", err)
	}
	if rec := h.record("P"); rec.AutomateState != "In Progress" || rec.LastLegalState != "In Progress" {
		t.Fatalf("the pending automation was not kept: %+v", rec)
	}
	hb.unfail("C")
	h.drain()
	if res := h.process(ch); res.Verdict != VerdictAllowed {
		t.Fatalf("retry %+v", res)
	}
	h.drain() // the child owed by the failed run is written by its own walk
	if h.state("C") != "In Progress" || h.record("P").AutomateState != "" || len(h.audit("C")) != 1 {
		t.Fatalf("C=%s, P %+v", h.state("C"), h.record("P"))
	}
	// Recording the cascade fails when the child's reports cannot be read.
	h2 := newHarness(t, p, c)
	setFamily(h2.board, p, c)
	h2.adoptAll("P", "C")
	h2.useStore(&failPendingFor{memStore: h2.st, id: "C", after: 1}) // (the cascade's look at C's reports passes)
	h2.now = h2.now.Add(time.Second)
	ch = h2.board.move("P", "alice", "In Progress", h2.now)
	if _, err := h2.svc.Enforcer.ProcessChange(bg, h2.board, ch); !errors.Is(err, errInjected) || !strings.Contains(err.Error(), "record automation on C: load reports of item C") {
		t.Fatalf("error %v", err)
	}
	if rec := h2.record("C"); rec.LastLegalState != "Backlog" || h2.record("P").AutomateState != "In Progress" {
		t.Fatalf("C %+v, P %+v", rec, h2.record("P"))
	}
}

// failPendingFor fails PendingObservations for one item, after its first `after` calls.
type failPendingFor struct {
	*memStore
	id    string
	after int
}

func (s *failPendingFor) PendingObservations(ctx context.Context, itemID string) ([]Observation, error) {
	if itemID == s.id {
		if s.after <= 0 {
			return nil, errInjected
		}
		s.after--
	}
	return s.memStore.PendingObservations(ctx, itemID)
}

// Children that are all as far as their parent, or further, are not moved (nothing written).
func TestCascadeWithNothingToMove(t *testing.T) {
	p := issueN("P", "Plan in Review", 10)
	c := issueN("C", "In Review", 11)
	h := newHarness(t, p, c)
	setFamily(h.board, p, c)
	h.adoptAll("P")
	h.now = h.now.Add(time.Second)
	h.process(h.board.move("P", "alice", "In Progress", h.now))
	if h.board.calls["Family"] != 1 || h.board.calls["SetState"] != 0 || h.hasRecord("C") {
		t.Fatalf("%d family reads, %d writes", h.board.calls["Family"], h.board.calls["SetState"])
	}
}

// Automation that fails part-way returns the failure to the walk (whose retry finishes it);
// a parent that is not on the project is left alone.
func TestAutomationFailuresAreReturned(t *testing.T) {
	tests := []struct {
		name  string
		setup func(h *harness, hb *hookBoard) Change
		store func(h *harness) Store // a store wrapper, or nil
		want  string                 // "" : no error
	}{
		{
			name: "grandchildren cannot be read",
			setup: func(h *harness, hb *hookBoard) Change {
				p, c, g := issueN("P", "Plan in Review", 10), issueN("C", "Backlog", 11), issueN("G", "Backlog", 12)
				h.board.items["P"], h.board.items["C"], h.board.items["G"] = p, c, g
				setFamily(h.board, c, g)
				setFamily(h.board, p, h.boardItem("C"))
				h.adoptAll("P")
				hb.failFamily["I_C"] = errInjected
				return h.board.move("P", "alice", "In Progress", h.now.Add(time.Second))
			},
			want: "cascade to children of #10",
		},
		{
			name: "the converging parent cannot be written",
			setup: func(h *harness, hb *hookBoard) Change {
				p, c := issueN("P", "In Progress", 10), issueN("C", "In Progress", 21)
				h.board.items["P"], h.board.items["C"] = p, c
				setFamily(h.board, p, c)
				h.adoptAll("C", "P")
				hb.failSet["P"] = errInjected
				return h.board.move("C", "alice", "In Review", h.now.Add(time.Second))
			},
			want: "converge parents of #21",
		},
		{
			name: "the converging parent cannot be recorded",
			setup: func(h *harness, hb *hookBoard) Change {
				p, c := issueN("P", "In Progress", 10), issueN("C", "In Progress", 21)
				h.board.items["P"], h.board.items["C"] = p, c
				setFamily(h.board, p, c)
				h.adoptAll("C", "P")
				return h.board.move("C", "alice", "In Review", h.now.Add(time.Second))
			},
			store: func(h *harness) Store { return &failPendingFor{memStore: h.st, id: "P"} },
			want:  "converge parents of #21: record automation on P",
		},
		{
			name: "the parent is not on the project",
			setup: func(h *harness, hb *hookBoard) Change {
				p, c := issueN("P", "In Progress", 10), issueN("C", "In Progress", 21)
				h.board.items["P"], h.board.items["C"] = p, c
				setFamily(h.board, p, c)
				fam := h.board.family["I_P"]
				fam.Self.ItemID = ""
				h.board.family["I_P"] = fam
				h.adoptAll("C")
				return h.board.move("C", "alice", "In Review", h.now.Add(time.Second))
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			hb := newHookBoard(h.board)
			ch := tt.setup(h, hb)
			if tt.store != nil {
				h.useStore(tt.store(h))
			}
			h.now = ch.At
			_, err := h.svc.Enforcer.ProcessChange(bg, hb, ch)
			if tt.want == "" {
				if err != nil || h.state("P") != "In Progress" {
					t.Fatalf("%v, P=%s", err, h.state("P"))
				}
				return
			}
			if !errors.Is(err, errInjected) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
			if rec := h.record(ch.ItemID); rec.AutomateState != ch.To {
				t.Errorf("the automation is not kept for the retry: %+v", rec)
			}
		})
	}
}

// casLoser loses the first n compare-and-sets to another worker's write.
type casLoser struct {
	*memStore
	mu   sync.Mutex
	n    int
	lost int
}

func (s *casLoser) CommitStep(ctx context.Context, st Step) (bool, error) {
	s.mu.Lock()
	lose := s.lost < s.n
	if lose {
		s.lost++
	}
	s.mu.Unlock()
	if lose {
		return false, nil
	}
	return s.memStore.CommitStep(ctx, st)
}

// A move the app makes for an agent whose record another worker changed meanwhile is recorded
// again from a fresh load (audited once); after maxUpdateAttempts lost races, the failure is
// returned and nothing is written or audited.
func TestActorStepRetriesConcurrentUpdates(t *testing.T) {
	ho := Handoff{Agent: "agent-1", Command: "research", Intent: "complete"}
	for _, n := range []int{1, maxUpdateAttempts + 1} {
		t.Run(fmt.Sprintf("%d lost races", n), func(t *testing.T) {
			h := newHarness(t, issueN("A", "Research Needed", 7))
			h.adoptAll("A")
			st := &casLoser{memStore: h.st, n: n}
			h.useStore(st)
			res, err := h.handoff("A", ho)
			if n <= maxUpdateAttempts {
				if err != nil || !res.Changed || st.lost != n || h.record("A").LastLegalState != "Ready for Plan" || h.state("A") != "Ready for Plan" ||
					len(h.handoffs("A")) != 1 {
					t.Fatalf("%+v %v (%d lost), record %+v", res, err, st.lost, h.record("A"))
				}
				return
			}
			if !errors.Is(err, ErrConcurrentUpdate) || !strings.Contains(err.Error(), "record the move of #7") || len(h.board.sets) != 0 ||
				len(h.handoffs("A")) != 0 {
				t.Fatalf("%v (%d lost), writes %v", err, st.lost, h.board.sets)
			}
		})
	}
}

// A cascade onto a child moved again since the parent's move (its report still on its way) is
// a step of the child's history before that move: recorded, not written over the move, whose
// report is then judged from the cascade's state.
func TestCascadeBeforeTheChildsLaterMove(t *testing.T) {
	p := issueN("P", "Plan in Review", 10)
	c := issueN("C", "Research Needed", 11)
	h := newHarness(t, p, c)
	setFamily(h.board, p, c)
	h.adoptAll("P", "C")
	h.now = h.now.Add(time.Second)
	parentMove := h.board.move("P", "alice", "In Progress", h.now)
	later := h.board.move("C", "alice", "Human Needed", h.now.Add(time.Second))
	if _, err := h.svc.Enforcer.Observe(bg, later); err != nil {
		t.Fatal(err)
	}
	h.now = h.now.Add(2 * time.Second)
	if res := h.process(parentMove); res.Verdict != VerdictAllowed {
		t.Fatalf("%+v", res)
	}
	h.drain()
	if rec := h.record("C"); len(h.board.sets) != 0 && h.board.sets[0] == "C=In Progress" {
		t.Fatalf("the cascade was written over alice's later move: %v, record %+v", h.board.sets, rec)
	}
	h.process(later)
	h.drain()
	rec := h.record("C")
	es := h.audit("C")
	if h.state("C") != "Human Needed" || rec.LastLegalState != "Human Needed" || len(es) != 3 ||
		es[1].Verdict != VerdictAutomated || es[1].ToState != "In Progress" ||
		es[2].Actor != "alice" || es[2].Verdict != VerdictAllowed || es[2].FromState != "In Progress" {
		t.Fatalf("board %s, record %+v, audit %s, writes %v", h.state("C"), rec, verdicts(es), h.board.sets)
	}
}

// A change nobody reported, made on the child before its parent's move, belongs before the
// cascade in the true history: the cascade waits for the child's walk (the card's change time,
// read with the family, is before the cause), which judges it first, from the child's state then
// (Research Needed → Ready for Plan, legal), explaining nothing; then the cascade follows, and
// is never written over the change.
func TestUnreportedEarlierChangeComesBeforeTheCascade(t *testing.T) {
	p := issueN("P", "Plan in Review", 10)
	c := issueN("C", "Research Needed", 11)
	h := newHarness(t, p, c)
	setFamily(h.board, p, c)
	h.adoptAll("P", "C")
	driftTo(h.board, "C", "Ready for Plan", h.now.Add(time.Second)) // reported by nobody
	h.now = h.now.Add(2 * time.Second)
	h.processDone(h.board.move("P", "alice", "In Progress", h.now))
	check := func(when string) {
		t.Helper()
		rec, es := h.record("C"), h.audit("C")
		if rec.LastLegalState != "In Progress" || h.state("C") != "In Progress" || h.board.adds != 0 || len(es) != 3 ||
			es[1].Actor != DriftActor || es[1].ToState != "Ready for Plan" || es[1].Verdict != VerdictAllowed ||
			es[2].Verdict != VerdictAutomated || es[2].ToState != "In Progress" {
			t.Fatalf("%s: record %+v, audit %s\nwrites %v\ncomments %q", when, rec, verdicts(es), h.board.sets, h.commentBodies())
		}
	}
	check("after the parent's move")
	// Walked again once no report can come: the cascade is never judged as an unknown author's
	// drift, nor reverted.
	h.now = h.now.Add(time.Hour)
	if _, err := h.svc.Enforcer.walk(bg, h.board, "C", ""); err != nil {
		t.Fatal(err)
	}
	check("walked again")
}

// An owed cascade write is guarded as a revert is: a person's move of the child that lands
// while the write waits for its turn is never written over; its report is judged from the
// cascade's state.
func TestCascadeWriteNeverOverwritesANewerMove(t *testing.T) {
	p := issueN("P", "Plan in Review", 10)
	c := issueN("C", "Backlog", 11)
	h := newHarness(t, p, c)
	setFamily(h.board, p, c)
	h.adoptAll("P", "C")
	h.now = h.now.Add(time.Second)
	parentMove := h.board.move("P", "alice", "In Progress", h.now)
	hb := newHookBoard(h.board)
	var later Change
	hb.beforeSet = func(id string) {
		if id == "C" && later.DeliveryID == "" {
			later = h.board.move("C", "bob", "In Review", h.now.Add(time.Second))
			if _, err := h.svc.Enforcer.Observe(bg, later); err != nil { // its webhook's intake
				t.Error(err)
			}
		}
	}
	h.now = h.now.Add(2 * time.Second)
	if res, err := h.svc.Enforcer.ProcessChange(bg, hb, parentMove); err != nil || res.Verdict != VerdictAllowed {
		t.Fatalf("%+v %v", res, err)
	}
	h.drain()
	if h.state("C") != "In Review" || slices.Contains(h.board.sets, "C=In Progress") {
		t.Fatalf("the cascade wrote over bob's move: C is %q, writes %v", h.state("C"), h.board.sets)
	}
	// The cascade is the child's step, and bob's move (its report recorded at intake, judged by
	// the child's walk) follows it: In Progress → In Review, allowed, and it stands.
	es := h.audit("C")
	if rec := h.record("C"); rec.LastLegalState != "In Review" || rec.RevertPending != "" || len(es) != 3 ||
		es[1].Verdict != VerdictAutomated || es[1].ToState != "In Progress" ||
		es[2].Actor != "bob" || es[2].FromState != "In Progress" || es[2].Verdict != VerdictAllowed {
		t.Fatalf("record %+v, audit %s", rec, verdicts(es))
	}
	if res := h.processDone(later); res.Verdict != VerdictAllowed || h.state("C") != "In Review" {
		t.Fatalf("bob's job: %+v, C is %q", res, h.state("C"))
	}
}
