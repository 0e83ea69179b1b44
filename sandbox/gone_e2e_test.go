package sandbox

import (
	"context"
	"strings"
	"testing"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/ghboard"
	"github.com/ralph-gate/ralph-gate/ghsim"
)

// A change whose item is deleted from the project before its job runs can never be enforced:
// the job ends at once, audited as ignored, instead of failing and being retried for an hour
// (which would also fire the stuck-queue alert).
func TestChangeOfADeletedItemEnds(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, driver string) {
		e := start(t, driver, flatSeed(t, 1, func(int) string { return "Research Needed" }), nil)
		e.reconcile()
		e.faults(ghsim.Faults{Webhook: ghsim.WebhookFaults{DelayMS: 500}})
		e.move("agent-1", 1, "In Progress") // illegal: would be reverted
		e.deleteItem("alice", 1)
		e.faults(ghsim.Faults{})
		e.settle() // the queue drains: no job is left retrying
		if n := e.appWrites(); n != 0 {
			t.Errorf("the app wrote %d values to a deleted item", n)
		}
		var ignored bool
		for _, a := range e.audit(1) {
			if a.Verdict == enforce.VerdictIgnored && strings.Contains(a.Reason, "no longer exists") && a.Actor == "agent-1" {
				ignored = true
			}
		}
		if !ignored {
			t.Fatalf("the change was not audited as ignored: %+v", e.audit(1))
		}
	})
}

// deleteItem removes issue number's item from its project as login, as the project's UI does.
func (e *env) deleteItem(login string, number int) {
	e.t.Helper()
	ctx := context.Background()
	b, err := e.sb.UserBoard(login)
	if err != nil {
		e.t.Fatal(err)
	}
	items, err := b.IssueItems(ctx, e.sb.Org(), "app", number)
	if err != nil || len(items) == 0 {
		e.t.Fatalf("items of #%d: %v %v", number, items, err)
	}
	token, err := e.sb.Token(login)
	if err != nil {
		e.t.Fatal(err)
	}
	c := ghboard.NewClient(UserClient(token, nil), e.sb.SimURL+"/api/graphql")
	if err := c.Do(ctx, `mutation($p: ID!, $i: ID!) { deleteProjectV2Item(input: {projectId: $p, itemId: $i}) { deletedItemId } }`,
		map[string]any{"p": items[0].ProjectID, "i": items[0].ID}, nil); err != nil {
		e.t.Fatalf("delete the item of #%d: %v", number, err)
	}
}
