package enforce

import (
	"strings"
	"testing"
)

// A payload's project number is not trusted: an item GitHub shows on a project that is not
// enforced is left alone, whatever the payload claimed.
func TestPayloadProjectIsNotTrusted(t *testing.T) {
	onlyProject1 := func(_ *harness, o *Options) {
		o.Enforced = func(owner string, number int) bool { return owner == "acme" && number == 1 }
	}
	elsewhere := issue("A", "Human Needed")
	elsewhere.ProjectNumber, elsewhere.ProjectID = 2, "PVT_2"
	h := newHarnessWith(t, nil, onlyProject1, elsewhere)
	ch := h.board.move("A", "agent-1", "Backlog", h.now) // humans only, on an enforced project
	ch.ProjectNumber, ch.ProjectID = 1, "PVT_1"          // the payload claims the enforced project
	res := h.process(ch)
	if res.Verdict != VerdictIgnored || !strings.Contains(res.Reason, "not enforced") {
		t.Fatalf("got %v (%s), want ignored: not enforced", res.Verdict, res.Reason)
	}
	if h.state("A") != "Backlog" || len(h.board.sets) != 0 || len(h.board.comments) != 0 {
		t.Fatalf("the app acted on a project it does not enforce: state %q, writes %v, %d comments", h.state("A"), h.board.sets, len(h.board.comments))
	}
	es := h.audit("A")
	if len(es) != 1 || es[0].Verdict != VerdictIgnored || !strings.Contains(es[0].Reason, "acme/2") {
		t.Fatalf("audit = %s, want one ignored entry naming acme/2", verdicts(es))
	}
	// The same move on the enforced project is judged as usual.
	h2 := newHarnessWith(t, nil, onlyProject1, issue("B", "Human Needed"))
	if res := h2.process(h2.board.move("B", "agent-1", "Backlog", h2.now)); res.Verdict != VerdictReverted {
		t.Fatalf("on the enforced project: %v, want reverted", res.Verdict)
	}
}
