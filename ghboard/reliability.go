package ghboard

import (
	"context"
	"fmt"
	"strings"

	"github.com/ralph-gate/ralph-gate/enforce"
)

var (
	_ enforce.CommentFinder = (*Board)(nil)
	_ enforce.RateReporter  = (*Board)(nil)
)

// queryFindComment reads the newest comments of an issue or pull request; enforcement looks
// among the app's own for one whose posting was interrupted.
const queryFindComment = `query RalphGateFindComment($id: ID!) {
  node(id: $id) {
    __typename
    ... on Issue { comments(last: 100) { nodes { id databaseId body viewerDidAuthor } } }
    ... on PullRequest { comments(last: 100) { nodes { id databaseId body viewerDidAuthor } } }
  }
}`

// FindComment looks among the newest 100 comments the app wrote on an issue or pull request
// for one whose body contains the given text. One request.
func (b *Board) FindComment(ctx context.Context, subjectID, contains string) (enforce.Comment, bool, error) {
	var d struct {
		Node *struct {
			Comments struct {
				Nodes []struct {
					ID              string `json:"id"`
					DatabaseID      int64  `json:"databaseId"`
					Body            string `json:"body"`
					ViewerDidAuthor bool   `json:"viewerDidAuthor"`
				} `json:"nodes"`
			} `json:"comments"`
		} `json:"node"`
	}
	if err := b.gql.Do(ctx, queryFindComment, map[string]any{"id": subjectID}, &d); err != nil {
		return enforce.Comment{}, false, fmt.Errorf("read comments of %s: %w", subjectID, err)
	}
	if d.Node == nil {
		return enforce.Comment{}, false, fmt.Errorf("subject %s: %w", subjectID, ErrNotFound)
	}
	for _, c := range d.Node.Comments.Nodes {
		if c.ViewerDidAuthor && strings.Contains(c.Body, contains) {
			return enforce.Comment{ID: c.ID, DatabaseID: c.DatabaseID}, true, nil
		}
	}
	return enforce.Comment{}, false, nil
}

// RateLimit is GitHub's GraphQL budget for this installation as last reported.
func (b *Board) RateLimit() (enforce.RateLimit, bool) { return b.gql.RateLimit() }
