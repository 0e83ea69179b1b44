package enforce

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A revert is written only over the refused value. Writes wait for their turn (paced per
// installation), so the board read at the start of a walk can be seconds old: found by the
// three-replica cluster test, a revert decided at 18:44:08 and written at 18:44:14 overwrote a
// person's legal move of 18:44:09, and the app then took its own write for a change nobody
// reported and explained the refused move a second time. Here the person moves the card
// while the revert waits: their move stands, is judged legal from the last legal state, and the
// refused move is explained once, as moved on.
func TestRevertNeverOverwritesANewerMove(t *testing.T) {
	h := newHarness(t, issue("A", "Human Needed"))
	h.adoptAll("A")
	hb := newHookBoard(h.board)
	ctx := context.Background()
	var later Change
	hb.beforeSet = func(id string) {
		hb.beforeSet = nil
		later = h.board.move("A", "bob", "Backlog", h.now.Add(time.Second))
		// GitHub delivers it at once; intake records it before answering.
		if _, err := h.svc.Enforcer.Observe(ctx, later); err != nil {
			t.Error(err)
		}
	}
	refused := h.board.move("A", "alice", "Done", h.now)
	res, err := h.svc.Enforcer.ProcessChange(ctx, hb, refused)
	if err != nil {
		t.Fatal(err)
	}
	if h.state("A") != "Backlog" {
		t.Fatalf("the revert overwrote bob's move: board %q (%+v)", h.state("A"), res)
	}
	for _, s := range h.board.sets {
		if s == "A=Human Needed" {
			t.Fatalf("a revert was written over a newer move: %v", h.board.sets)
		}
	}
	h.now = h.now.Add(2 * time.Second)
	if res, err := h.svc.Enforcer.ProcessChange(ctx, hb, later); err != nil || res.Verdict != VerdictAllowed {
		t.Fatalf("bob's move: %+v %v", res, err)
	}
	if h.state("A") != "Backlog" || h.record("A").LastLegalState != "Backlog" {
		t.Fatalf("board %q, record %+v", h.state("A"), h.record("A"))
	}
	bodies := h.commentBodies()
	if len(bodies) != 1 {
		t.Fatalf("want one comment (alice's refused move), got %d:\n%s", len(bodies), strings.Join(bodies, "\n---\n"))
	}
	for _, want := range []string{"`alice`", "moved on by a later legal change", "**Backlog**"} {
		if !strings.Contains(bodies[0], want) {
			t.Errorf("comment lacks %q:\n%s", want, bodies[0])
		}
	}
	if strings.Contains(bodies[0], "no webhook reported") {
		t.Errorf("the app took its own view for an unreported change:\n%s", bodies[0])
	}
}
