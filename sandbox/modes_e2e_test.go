package sandbox

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/app"
	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/enforce"
)

// Rolling out in stages (docs/ENFORCEMENT.md "Modes", docs/INSTALL.md): under evaluate and
// warn an agent's refused move stands, audited would_revert (warn explains it on the issue,
// saying it was not reverted; evaluate writes nothing), a parent's legal move carries no child
// along, a close does not move the card, and the report says what enforce would have reverted.
// The mode comes from enforcement.mode, or from the project's own.
func TestRolloutModesEndToEnd(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode      string
		configure func(*config.Config)
	}{
		{"evaluate", func(c *config.Config) { c.Enforcement.Mode = "evaluate" }},
		{"warn", func(c *config.Config) { c.Projects[0].Mode = "warn" }},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			each(t, func(t *testing.T, driver string) {
				e := start(t, driver, nil, tc.configure)
				ctx := context.Background()
				if _, err := e.sb.App.ReconcileNow(ctx); err != nil { // first sight: adopted
					t.Fatal(err)
				}
				e.move("agent-1", 3, "In Progress") // Backlog → In Progress: not a transition
				e.settle()
				e.wantState(3, "In Progress")
				var stood []enforce.AuditEntry
				for _, a := range e.audit(3) {
					if a.Verdict == enforce.VerdictWouldRevert {
						stood = append(stood, a)
					}
				}
				if len(stood) != 1 || stood[0].Actor != "agent-1" || stood[0].Rule != "transition" || stood[0].ToState != "In Progress" {
					t.Fatalf("audit of #3: %+v, want one would_revert by agent-1 (transition)", e.audit(3))
				}
				cs := e.comments(3)
				switch tc.mode {
				case "evaluate":
					if len(cs) != 0 {
						t.Errorf("evaluate wrote %d comments on #3", len(cs))
					}
				case "warn":
					if len(cs) != 1 || !strings.Contains(cs[0].Body, "not reverted, because the project is in warn mode") ||
						!strings.Contains(cs[0].Body, "Recovery:") || !strings.Contains(cs[0].Body, "would have reverted") {
						t.Errorf("warn's comments on #3: %+v", cs)
					}
				}
				// The next move is judged from the card: In Progress → In Review is legal.
				e.move("agent-1", 3, "In Review")
				e.settle()
				e.wantState(3, "In Review")

				// No automation: the parent's legal move carries no child along; a close does
				// not move the card.
				e.move("alice", 9, "Ready for Plan")
				e.patchIssue("alice", 5, `{"state":"closed"}`)
				e.settle()
				e.wantState(9, "Ready for Plan")
				e.wantState(10, "Research Needed")
				e.wantState(11, "Research Needed")
				e.wantState(5, "Backlog")

				rep, err := app.HealthReader(e.sb.Config, e.sb.App.Store()).Report(ctx, time.Now())
				if err != nil {
					t.Fatal(err)
				}
				p := rep.Projects[0]
				if p.Mode != tc.mode || p.WouldRevert == nil || p.WouldRevert.Count != 1 || p.WouldRevert.ByRule["transition"] != 1 ||
					p.WouldRevert.ByActor["agent-1"] != 1 || len(p.WouldRevert.Moves) != 1 || p.WouldRevert.Moves[0].Item.Number != 3 {
					t.Errorf("the report says mode %q, would have reverted %+v", p.Mode, p.WouldRevert)
				}
			})
		})
	}
}
