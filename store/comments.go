package store

// Violation comments: one per issue, so a burst of violations updates one comment.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/ralph-gate/ralph-gate/enforce"
)

// GetViolationComment returns the violation comment of an issue, or
// enforce.ErrNotFound.
func (s *Store) GetViolationComment(ctx context.Context, repo string, issueNumber int) (enforce.ViolationComment, error) {
	var c enforce.ViolationComment
	err := s.queryRow(ctx, `SELECT comment_id, node_id, count, updated_at, body FROM violation_comments
		WHERE repo = ? AND issue_number = ?`, repo, issueNumber).
		Scan(&c.CommentID, &c.NodeID, &c.Count, tc(&c.UpdatedAt), &c.Body)
	if errors.Is(err, sql.ErrNoRows) {
		return enforce.ViolationComment{}, fmt.Errorf("store: violation comment %s#%d: %w", repo, issueNumber, enforce.ErrNotFound)
	}
	if err != nil {
		return enforce.ViolationComment{}, fmt.Errorf("store: get violation comment %s#%d: %w", repo, issueNumber, err)
	}
	return c, nil
}

// PutViolationComment inserts or replaces the violation comment of an issue.
// A zero UpdatedAt is stored as now.
func (s *Store) PutViolationComment(ctx context.Context, repo string, issueNumber int, c enforce.ViolationComment) error {
	if repo == "" || issueNumber <= 0 {
		return fmt.Errorf("store: put violation comment: need repo and issue number (got %q, %d)", repo, issueNumber)
	}
	_, err := s.exec(ctx, `INSERT INTO violation_comments (repo, issue_number, comment_id, node_id, count, updated_at, body)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (repo, issue_number) DO UPDATE SET
			comment_id = excluded.comment_id,
			node_id = excluded.node_id,
			count = excluded.count,
			updated_at = excluded.updated_at,
			body = excluded.body`,
		repo, issueNumber, c.CommentID, c.NodeID, c.Count, s.t(nowUTC(c.UpdatedAt)), c.Body)
	if err != nil {
		return fmt.Errorf("store: put violation comment %s#%d: %w", repo, issueNumber, err)
	}
	return nil
}
