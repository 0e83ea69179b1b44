package sandbox

import (
	"strings"
	"testing"

	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/policy"
)

// Worker roles over real HTTP: agent-2 of the builder role moving an item out of Research
// Needed is reverted with one comment naming both roles; agent-1 of the analyst role makes the
// same move and it stays; escalation by any role stays.
func TestWorkerRolesEndToEnd(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, driver string) {
		initial := []string{"Research Needed", "Research Needed", "Plan in Review"}
		e := start(t, driver, familySeed(t, initial, nil), func(c *config.Config) {
			c.Actors.Roles = map[string]policy.RoleSpec{
				"analyst": {Agents: []string{"agent-1"}, Owns: []string{"Backlog", "Research Needed", "Research in Progress"}},
				"builder": {Agents: []string{"agent-2"}, Owns: []string{"Ready for Plan", "Plan in Progress", "Plan in Review", "In Progress"}},
			}
		})
		e.move("agent-2", 1, "Research in Progress")
		e.settle()
		e.wantState(1, "Research Needed")
		cs := e.comments(1)
		if len(cs) != 1 {
			t.Fatalf("want one comment on #1, got %d", len(cs))
		}
		for _, want := range []string{"agent-2", "(builder)", "the analyst role owns it", "Recovery:", "leave it to an agent of the analyst role, or escalate to Human Needed"} {
			if !strings.Contains(cs[0].Body, want) {
				t.Errorf("comment lacks %q:\n%s", want, cs[0].Body)
			}
		}
		if es := e.audit(1); len(es) == 0 || es[0].Rule != string(policy.RuleRole) {
			t.Errorf("audit of #1: %+v", es)
		}
		e.move("agent-1", 2, "Research in Progress")
		e.move("agent-1", 3, "Human Needed")
		e.settle()
		e.wantState(2, "Research in Progress")
		e.wantState(3, "Human Needed")
		if n := len(e.comments(2)) + len(e.comments(3)); n != 0 {
			t.Errorf("legal moves were commented on (%d)", n)
		}
	})
}
