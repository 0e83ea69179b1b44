package enforce

import (
	"strings"
	"testing"
	"time"
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

// However a report without a sender reaches the explanation, the comment names it as one
// (it once read "“ (agent) moved this…").
func TestExplanationOfNoSender(t *testing.T) {
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	for _, actor := range []string{"", NoSender} {
		line := violationLine(Observation{Actor: actor, ActorKind: "agent", LegalFrom: "Backlog", To: "Done", At: at, Reason: "not a transition"}, "Backlog")
		if !strings.HasPrefix(line, "A change whose webhook named no sender") || strings.Contains(line, "``") {
			t.Errorf("actor %q: %s", actor, line)
		}
	}
}
