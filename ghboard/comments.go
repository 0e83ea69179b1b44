package ghboard

// Comments: the app writes violation, handoff and automation comments, and finds one whose
// posting was interrupted.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/ralph-gate/ralph-gate/enforce"
)

// bigInt is GraphQL's BigInt, which GitHub sends as a string. A comment's database id is one:
// comment ids are past 2^31, which IssueComment.databaseId (an Int, 32 bits) cannot hold, so
// the app reads fullDatabaseId. A number is accepted too; null leaves 0.
type bigInt int64

func (n *bigInt) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	s := string(b)
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("BigInt %s: %w", b, err)
	}
	*n = bigInt(v)
	return nil
}

// AddComment comments on an issue or pull request.
func (b *Board) AddComment(ctx context.Context, subjectID, body string) (enforce.Comment, error) {
	var d struct {
		AddComment struct {
			CommentEdge struct {
				Node struct {
					ID         string `json:"id"`
					DatabaseID bigInt `json:"fullDatabaseId"`
				} `json:"node"`
			} `json:"commentEdge"`
		} `json:"addComment"`
	}
	if wait, ok := b.gql.content.reserve(b.gql.now()); !ok {
		return enforce.Comment{}, fmt.Errorf("comment on %s: %w", subjectID, &RateLimitError{RetryAfter: wait, Secondary: true,
			Message: "held back by ralph-gate: the comments of the last minute or hour reached the budget kept below GitHub's content-creation limit"})
	}
	if err := b.gql.Do(asExplanation(ctx), mutationAddComment, map[string]any{"subject": subjectID, "body": body}, &d); err != nil {
		return enforce.Comment{}, fmt.Errorf("comment on %s: %w", subjectID, err)
	}
	n := d.AddComment.CommentEdge.Node
	return enforce.Comment{ID: n.ID, DatabaseID: int64(n.DatabaseID)}, nil
}

// UpdateComment replaces a comment's body.
func (b *Board) UpdateComment(ctx context.Context, commentID, body string) error {
	if err := b.gql.Do(asExplanation(ctx), mutationUpdateComment, map[string]any{"id": commentID, "body": body}, nil); err != nil {
		return fmt.Errorf("update comment %s: %w", commentID, err)
	}
	return nil
}

// queryFindComment reads the newest comments of an issue or pull request; enforcement looks
// among the app's own for one whose posting was interrupted.
const queryFindComment = `query RalphGateFindComment($id: ID!) {
  node(id: $id) {
    __typename
    ... on Issue { comments(last: 100) { nodes { id fullDatabaseId body viewerDidAuthor } } }
    ... on PullRequest { comments(last: 100) { nodes { id fullDatabaseId body viewerDidAuthor } } }
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
					DatabaseID      bigInt `json:"fullDatabaseId"`
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
			return enforce.Comment{ID: c.ID, DatabaseID: int64(c.DatabaseID)}, true, nil
		}
	}
	return enforce.Comment{}, false, nil
}
