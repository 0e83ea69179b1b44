package sandbox

import (
	"context"
	"math"
	"testing"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/ghboard"
)

// The app never moves an archived card, end to end: not when its issue is closed, not as a
// child following its closed parent, not as a parent whose children all moved on.
func TestArchivedItemsAreNeverMoved(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, driver string) {
		// #1 alone; #2 a parent with children #3 (archived) and #4; #5 an archived parent of #6.
		initial := []string{"In Progress", "In Review", "In Progress", "In Progress", "Research Needed", "Research Needed"}
		e := start(t, driver, familySeed(t, initial, map[int]int{3: 2, 4: 2, 6: 5}), nil)
		for _, n := range []int{1, 3, 5} {
			e.archiveItem("alice", n)
		}
		e.settle()

		// Lifecycle: the archived card of a closed issue stays where it was archived.
		e.closeIssue("alice", 1)
		e.settle()
		e.wantState(1, "In Progress")
		// Cascade: the closed parent and its other child are Done, the archived child is not.
		e.closeIssue("alice", 2)
		e.settle()
		e.wantState(2, "Done")
		e.wantState(4, "Done")
		e.wantState(3, "In Progress")
		// Convergence: every child of #5 is ready, but #5 is archived.
		e.move("agent-1", 6, "Ready for Plan")
		e.settle()
		e.wantState(6, "Ready for Plan")
		e.wantState(5, "Research Needed")

		for _, n := range []int{1, 3, 5} {
			if is, err := e.sb.Issue("app", n); err != nil || !is.Archived {
				t.Fatalf("#%d: %+v %v; want it archived", n, is, err)
			}
			for _, a := range e.audit(n) {
				if a.Verdict == enforce.VerdictAutomated {
					t.Errorf("#%d is archived, but the app moved it: %+v", n, a)
				}
			}
		}
	})
}

// A violation comment's id is past 2^31 (as GitHub's are): the app reads it from
// fullDatabaseId and keeps every digit, through its store, to the comment it updates.
func TestViolationCommentIDPastInt32(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, driver string) {
		e := start(t, driver, familySeed(t, []string{"Backlog"}, nil), nil)
		e.move("agent-1", 1, "In Progress") // illegal: reverted and explained
		e.settle()
		e.wantState(1, "Backlog")
		cs := e.comments(1)
		if len(cs) != 1 || cs[0].ID <= math.MaxInt32 {
			t.Fatalf("comments %+v; want one, its id past 2^31", cs)
		}
		vc, err := e.sb.App.Store().GetViolationComment(context.Background(), e.sb.Org()+"/app", 1)
		if err != nil || vc.CommentID != cs[0].ID || vc.NodeID != cs[0].NodeID {
			t.Fatalf("stored %+v %v; want comment %d (%s)", vc, err, cs[0].ID, cs[0].NodeID)
		}
	})
}

// archiveItem archives issue number's item on its project as login, as the project's UI does.
func (e *env) archiveItem(login string, number int) {
	e.t.Helper()
	e.itemMutation(login, number, `mutation($p: ID!, $i: ID!) { archiveProjectV2Item(input: {projectId: $p, itemId: $i}) { item { isArchived } } }`)
}

// closeIssue closes an issue as completed, as login.
func (e *env) closeIssue(login string, number int) {
	e.t.Helper()
	ctx := context.Background()
	b, c := e.userClient(login)
	items, err := b.IssueItems(ctx, e.sb.Org(), "app", number)
	if err != nil || len(items) == 0 {
		e.t.Fatalf("items of #%d: %v %v", number, items, err)
	}
	if err := c.Do(ctx, `mutation($id: ID!) { closeIssue(input: {issueId: $id, stateReason: COMPLETED}) { issue { state } } }`,
		map[string]any{"id": items[0].ContentID}, nil); err != nil {
		e.t.Fatalf("close #%d: %v", number, err)
	}
}

func (e *env) itemMutation(login string, number int, mutation string) {
	e.t.Helper()
	ctx := context.Background()
	b, c := e.userClient(login)
	items, err := b.IssueItems(ctx, e.sb.Org(), "app", number)
	if err != nil || len(items) == 0 {
		e.t.Fatalf("items of #%d: %v %v", number, items, err)
	}
	if err := c.Do(ctx, mutation, map[string]any{"p": items[0].ProjectID, "i": items[0].ID}, nil); err != nil {
		e.t.Fatalf("#%d: %v", number, err)
	}
}

func (e *env) userClient(login string) (*ghboard.Board, *ghboard.Client) {
	e.t.Helper()
	b, err := e.sb.UserBoard(login)
	if err != nil {
		e.t.Fatal(err)
	}
	token, err := e.sb.Token(login)
	if err != nil {
		e.t.Fatal(err)
	}
	return b, ghboard.NewClient(UserClient(token, nil), e.sb.SimURL+"/api/graphql")
}
