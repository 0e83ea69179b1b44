package enforce

import (
	"strings"
	"testing"
)

// A payload without a sender (sender: null) is an unknown actor: judged with an agent's rights,
// holding no lock, and named so in the audit and the comment.
func TestChangeWithoutSenderGetsTheLeastPrivilege(t *testing.T) {
	tests := []struct {
		name, start, to string
		want            Verdict
		final           string
	}{
		{"humans-only move refused", "Human Needed", "Backlog", VerdictReverted, "Human Needed"},
		{"agent's move allowed", "In Progress", "Human Needed", VerdictAllowed, "Human Needed"},
		{"a lock taken holds no holder", "Research Needed", "Research in Progress", VerdictAllowed, "Research in Progress"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, issue("A", tt.start))
			res := h.process(h.board.move("A", "", tt.to, h.now))
			if res.Verdict != tt.want || h.state("A") != tt.final {
				t.Fatalf("got %v (%s), state %q; want %v, %q", res.Verdict, res.Reason, h.state("A"), tt.want, tt.final)
			}
			entries, _ := h.st.entries("A")
			last := entries[len(entries)-1]
			if last.Actor != NoSender || last.ActorKind != "agent" {
				t.Errorf("audit names %q (%s), want %q (agent)", last.Actor, last.ActorKind, NoSender)
			}
			rec, _ := h.st.GetItem(bg, "A")
			if rec.LockHolder != "" {
				t.Errorf("lock holder %q, want none for an unknown author", rec.LockHolder)
			}
			if tt.want == VerdictReverted {
				if len(h.board.comments) != 1 {
					t.Fatalf("%d comments, want 1", len(h.board.comments))
				}
				var body string
				for _, b := range h.board.comments {
					body = b
				}
				if !strings.Contains(body, "named no sender") {
					t.Errorf("the comment does not say the sender was unknown:\n%s", body)
				}
			}
		})
	}
}
