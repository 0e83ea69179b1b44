package enforce

import (
	"strings"
	"testing"
	"time"
)

// The app never moves an archived card: not when its issue closes, reopens or is merged
// (lifecycle sync), not as a child following its parent (cascade, advance_children), not as a
// parent following its children (convergence).

// archive archives an item on the board: the item reads as archived, and so does every
// relative Family returns for it.
func archive(b *fakeBoard, id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	it := b.items[id]
	it.Archived = true
	b.items[id] = it
	mark := func(r *Relative) {
		if r != nil && r.ItemID == id {
			r.Archived = true
		}
	}
	for k, f := range b.family {
		mark(&f.Self)
		if f.Parent != nil {
			p := *f.Parent
			mark(&p)
			f.Parent = &p
		}
		children := append([]Relative(nil), f.Children...)
		for i := range children {
			mark(&children[i])
		}
		f.Children = children
		b.family[k] = f
	}
}

// wantUnmoved fails unless no value was written to the items and none of them has a record
// or an audit entry.
func (h *harness) wantUnmoved(ids ...string) {
	h.t.Helper()
	for _, id := range ids {
		for _, s := range h.board.sets {
			if strings.HasPrefix(s, id+"=") {
				h.t.Errorf("archived %s was written: %v", id, h.board.sets)
			}
		}
		if h.hasRecord(id) || len(h.audit(id)) != 0 {
			h.t.Errorf("archived %s was recorded: %s", id, verdicts(h.audit(id)))
		}
	}
}

func TestLifecycleSyncLeavesArchivedItems(t *testing.T) {
	onTwo := onProject(issueN("B", "In Progress", 7), 2) // the same issue on another project, not archived
	h := newHarness(t, issueN("A", "In Progress", 7), onTwo)
	archive(h.board, "A")

	closed := Lifecycle{Kind: LifecycleIssueClosed, Owner: "acme", Repo: "app", Number: 7, StateReason: "completed", Actor: "owner"}
	res, err := h.svc.Enforcer.ProcessLifecycle(bg, h.board, closed)
	if err != nil || res.Verdict != VerdictAllowed || res.Reason != "1 item(s) moved" {
		t.Fatalf("%+v %v", res, err)
	}
	if h.state("A") != "In Progress" || h.state("B") != "Done" {
		t.Fatalf("A=%s B=%s; want the archived A left In Progress, B Done", h.state("A"), h.state("B"))
	}
	h.wantUnmoved("A")

	// Only archived items: nothing to move, and the reason says why.
	h2 := newHarness(t, issueN("A", "In Progress", 7))
	archive(h2.board, "A")
	for _, ev := range []Lifecycle{
		closed,
		{Kind: LifecycleIssueReopened, Owner: "acme", Repo: "app", Number: 7, Actor: "carol"},
		{Kind: LifecyclePRMerged, Owner: "acme", Repo: "app", Number: 80, Actor: "bob"}, // closes #7
	} {
		res, err := h2.svc.Enforcer.ProcessLifecycle(bg, h2.board, ev)
		if err != nil || res.Verdict != VerdictIgnored || res.Reason != "nothing to move (1 archived item(s) left as they are)" {
			t.Fatalf("%s: %+v %v", ev.Kind, res, err)
		}
	}
	if h2.state("A") != "In Progress" {
		t.Fatalf("A=%s", h2.state("A"))
	}
	h2.wantUnmoved("A")
}

// An item archived after the issue's items were listed is found archived when re-read under
// its lock, and left.
func TestLifecycleSyncRereadsArchived(t *testing.T) {
	h := newHarness(t, issueN("A", "In Progress", 7))
	hb := newHookBoard(h.board)
	hb.beforeItem = func(id string) { archive(h.board, id) }
	res, err := h.svc.Enforcer.ProcessLifecycle(bg, hb, Lifecycle{DeliveryID: "d1", Kind: LifecycleIssueClosed, Owner: "acme", Repo: "app", Number: 7, Actor: "carol"})
	if err != nil || res.Verdict != VerdictIgnored || h.state("A") != "In Progress" {
		t.Fatalf("%+v %v A=%s", res, err, h.state("A"))
	}
	// The close took its place in A's history (it is a report of it), and moved nothing.
	if len(h.board.sets) != 0 || len(h.audit("A")) != 0 || h.record("A").LastLegalState != "In Progress" {
		t.Fatalf("archived A was moved: writes %v, audit %s, legal %q", h.board.sets, verdicts(h.audit("A")), h.record("A").LastLegalState)
	}
}

// Closing a parent carries its children to Done, but not an archived child, nor (through it)
// that child's own children.
func TestLifecycleCascadeSkipsArchivedChildren(t *testing.T) {
	p := issueN("P", "In Review", 7)
	c1 := issueN("C1", "In Progress", 8)
	c2 := issueN("C2", "In Progress", 9)
	g := issueN("G", "In Progress", 21)
	h := newHarness(t, p, c1, c2, g)
	setFamily(h.board, c1, g)
	setFamily(h.board, p, h.boardItem("C1"), c2)
	archive(h.board, "C1")
	closed := Lifecycle{Kind: LifecycleIssueClosed, Owner: "acme", Repo: "app", Number: 7, StateReason: "completed", Actor: "dan"}
	if _, err := h.svc.Enforcer.ProcessLifecycle(bg, h.board, closed); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{"P": "Done", "C1": "In Progress", "C2": "Done", "G": "In Progress"} {
		if got := h.state(id); got != want {
			t.Errorf("%s is %q, want %q", id, got, want)
		}
	}
	h.wantUnmoved("C1", "G")
}

// A parent's legal move carries its children along, but not an archived one.
func TestCascadeSkipsArchivedChildren(t *testing.T) {
	parent := issueN("P", "Plan in Review", 10)
	c1 := issueN("C1", "Backlog", 11)
	c2 := issueN("C2", "Research Needed", 12)
	h := newHarness(t, parent, c1, c2)
	setFamily(h.board, parent, c1, c2)
	archive(h.board, "C2")
	h.adoptAll("P")
	h.now = h.now.Add(time.Second)
	if res := h.process(h.board.move("P", "alice", "In Progress", h.now)); res.Verdict != VerdictAllowed {
		t.Fatalf("%+v", res)
	}
	if h.state("C1") != "In Progress" || h.state("C2") != "Research Needed" {
		t.Fatalf("C1=%s C2=%s", h.state("C1"), h.state("C2"))
	}
	h.wantUnmoved("C2")
}

// When every child reaches a parent gate, an archived parent stays where it is, and so do
// its ancestors.
func TestConvergenceLeavesArchivedParent(t *testing.T) {
	gp := issueN("GP", "In Progress", 1)
	p := issueN("P", "In Progress", 10)
	c1 := issueN("C1", "In Review", 21)
	c2 := issueN("C2", "In Progress", 22)
	h := newHarness(t, gp, p, c1, c2)
	setFamily(h.board, p, c1, c2)
	setFamily(h.board, gp, h.boardItem("P"))
	archive(h.board, "P")
	h.adoptAll("C2")
	h.put(Record{ItemID: "GP", LastLegalState: "In Progress"})
	h.now = h.now.Add(time.Second)
	if res := h.process(h.board.move("C2", "agent-1", "In Review", h.now)); res.Verdict != VerdictAllowed {
		t.Fatalf("%+v", res)
	}
	if h.state("P") != "In Progress" || h.state("GP") != "In Progress" {
		t.Fatalf("P=%s GP=%s", h.state("P"), h.state("GP"))
	}
	h.wantUnmoved("P")
	if es := h.audit("GP"); len(es) != 0 {
		t.Errorf("GP: %s", verdicts(es))
	}
}

// advance_children skips an archived child, and says so.
func TestAdvanceChildrenSkipsArchived(t *testing.T) {
	parent := issueN("P", "In Progress", 10)
	c1 := issueN("C1", "Backlog", 11)
	c2 := issueN("C2", "Backlog", 12)
	h := newHarness(t, parent, c1, c2)
	setFamily(h.board, parent, c1, c2)
	archive(h.board, "C2")
	adv, err := h.svc.Facade.AdvanceChildren(bg, h.board, h.boardItem("P"), "Ready for Plan", Handoff{Agent: "agent-1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(adv.Advanced) != 1 || adv.Advanced[0].Number != 11 || len(adv.Errors) != 0 {
		t.Fatalf("advanced %+v errors %+v", adv.Advanced, adv.Errors)
	}
	if len(adv.Skipped) != 1 || adv.Skipped[0].Number != 12 || adv.Skipped[0].Reason != "archived on this project" {
		t.Fatalf("skipped %+v", adv.Skipped)
	}
	if h.state("C1") != "Ready for Plan" || h.state("C2") != "Backlog" {
		t.Fatalf("C1=%s C2=%s", h.state("C1"), h.state("C2"))
	}
	h.wantUnmoved("C2")
}
