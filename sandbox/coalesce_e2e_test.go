package sandbox

import (
	"strings"
	"testing"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/marker"
)

// Violation comments are coalesced per actor, on the simulator over HTTP: within the window a
// second actor's violation is a new comment (GitHub notifies on a new comment, never on an
// edit), and the first actor's next violation updates their own comment.
func TestViolationCommentPerActorEndToEnd(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, driver string) {
		e := start(t, driver, nil, nil)
		before := e.sb.Sim.Requests().Counts
		for _, mv := range []struct {
			actor, to string
		}{
			{"agent-1", "In Progress"}, // illegal from Backlog: a comment naming agent-1
			{"agent-2", "In Review"},   // illegal: a comment of agent-2's own
			{"agent-1", "In Review"},   // illegal: agent-1's comment is updated
		} {
			e.move(mv.actor, 3, mv.to)
			e.settle()
			e.wantState(3, "Backlog")
		}
		after := e.sb.Sim.Requests().Counts
		if adds, edits := after["graphql:addComment"]-before["graphql:addComment"],
			after["graphql:updateIssueComment"]-before["graphql:updateIssueComment"]; adds != 2 || edits != 1 {
			t.Errorf("%d comments added, %d edited; want 2 added (one per actor) and 1 edited", adds, edits)
		}
		var violations []string // each violation comment's actors, in order
		for _, c := range e.comments(3) {
			if c.Author != e.sb.App.AppLogin() || !strings.Contains(c.Body, enforce.ViolationMarker) {
				continue
			}
			ms, err := marker.ParseTransitions(c.Body)
			if err != nil {
				t.Fatal(err)
			}
			var actors []string
			for _, m := range ms {
				actors = append(actors, m.Actor)
			}
			violations = append(violations, strings.Join(actors, ","))
		}
		if got := strings.Join(violations, " | "); got != "agent-1,agent-1 | agent-2" {
			t.Errorf("violation comments list %q; want agent-1's two, then agent-2's one", got)
		}
	})
}
