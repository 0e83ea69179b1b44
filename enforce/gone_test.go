package enforce

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// A change of an item deleted since (or whose issue was deleted) can never be enforced: it is
// audited as ignored and the job ends, instead of failing and being retried for an hour.
func TestChangeOfAGoneItemEnds(t *testing.T) {
	h := newHarness(t, issue("A", "Backlog"))
	ch := h.board.move("A", "agent-1", "In Progress", h.now)
	delete(h.board.items, "A") // deleted before its job ran
	res, err := h.svc.Enforcer.ProcessChange(context.Background(), h.board, ch)
	if err != nil || res.Verdict != VerdictIgnored || !strings.Contains(res.Reason, "no longer exists") {
		t.Fatalf("got %v (%s), %v; want ignored: no longer exists, no error", res.Verdict, res.Reason, err)
	}
	es := h.audit("A")
	if len(es) != 1 || es[0].Verdict != VerdictIgnored || es[0].DeliveryID != ch.DeliveryID {
		t.Fatalf("audit = %s, want the change audited as ignored", verdicts(es))
	}
	if p, _ := h.st.PendingObservations(bg, "A"); len(p) != 0 {
		t.Fatalf("%d reports still pending: the next run would read the item again", len(p))
	}
	// Any other failure to read the item is still retried.
	h2 := newHarness(t, issue("B", "Backlog"))
	h2.board.breakOn(errInjected, "Item")
	if _, err := h2.svc.Enforcer.ProcessChange(bg, h2.board, h2.board.move("B", "agent-1", "In Progress", h2.now)); err == nil {
		t.Fatal("a failed read was taken for a gone item")
	}
}

// A lifecycle event for an issue or pull request that no longer exists ends, audited.
func TestLifecycleOfAGoneIssueEnds(t *testing.T) {
	gone := fmt.Errorf("github: %w", ErrNotFound)
	for _, method := range []string{"ClosingIssues", "IssueItems", "Item"} {
		t.Run(method, func(t *testing.T) {
			h := newHarness(t, issue("A", "In Progress"))
			h.board.breakOn(gone, method)
			res, err := h.svc.Enforcer.ProcessLifecycle(bg, h.board, Lifecycle{DeliveryID: "d", Kind: LifecyclePRMerged,
				Owner: "acme", Repo: "app", Number: 80, Actor: "alice"})
			if err != nil || res.Verdict != VerdictIgnored {
				t.Fatalf("got %v (%s), %v; want ignored, no error", res.Verdict, res.Reason, err)
			}
			es, _ := h.st.entries("")
			if len(es) != 1 || es[0].Verdict != VerdictIgnored || !strings.Contains(es[0].Reason, "no longer exists") {
				t.Fatalf("audit = %s, want one ignored entry", verdicts(es))
			}
		})
	}
}
