package store

// Violation comments: one per issue and actor, so a burst of one actor's violations updates one
// comment, and another actor's violation gets a comment of its own (GitHub notifies on a new
// comment, never on an edit).

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/ralph-gate/ralph-gate/enforce"
)

// GetActorViolationComment returns the violation comment of an issue and an actor, or
// enforce.ErrNotFound. Actor "" is a comment recorded before comments were kept per actor.
func (s *Store) GetActorViolationComment(ctx context.Context, repo string, issueNumber int, actor string) (enforce.ViolationComment, error) {
	c := enforce.ViolationComment{Actor: actor}
	err := s.queryRow(ctx, `SELECT comment_id, node_id, count, updated_at, body FROM violation_comments_by_actor
		WHERE repo = ? AND issue_number = ? AND actor = ?`, repo, issueNumber, actor).
		Scan(&c.CommentID, &c.NodeID, &c.Count, tc(&c.UpdatedAt), &c.Body)
	if errors.Is(err, sql.ErrNoRows) {
		return enforce.ViolationComment{}, fmt.Errorf("store: violation comment %s#%d of %q: %w", repo, issueNumber, actor, enforce.ErrNotFound)
	}
	if err != nil {
		return enforce.ViolationComment{}, fmt.Errorf("store: get violation comment %s#%d of %q: %w", repo, issueNumber, actor, err)
	}
	return c, nil
}

// GetViolationComment returns the most recently updated violation comment of an issue,
// whoever's, or enforce.ErrNotFound.
func (s *Store) GetViolationComment(ctx context.Context, repo string, issueNumber int) (enforce.ViolationComment, error) {
	var c enforce.ViolationComment
	err := s.queryRow(ctx, `SELECT actor, comment_id, node_id, count, updated_at, body FROM violation_comments_by_actor
		WHERE repo = ? AND issue_number = ? ORDER BY updated_at DESC, actor LIMIT 1`, repo, issueNumber).
		Scan(&c.Actor, &c.CommentID, &c.NodeID, &c.Count, tc(&c.UpdatedAt), &c.Body)
	if errors.Is(err, sql.ErrNoRows) {
		return enforce.ViolationComment{}, fmt.Errorf("store: violation comment %s#%d: %w", repo, issueNumber, enforce.ErrNotFound)
	}
	if err != nil {
		return enforce.ViolationComment{}, fmt.Errorf("store: get violation comment %s#%d: %w", repo, issueNumber, err)
	}
	return c, nil
}

// PutViolationComment inserts or replaces the violation comment of an issue and c.Actor.
// A zero UpdatedAt is stored as now.
func (s *Store) PutViolationComment(ctx context.Context, repo string, issueNumber int, c enforce.ViolationComment) error {
	if repo == "" || issueNumber <= 0 {
		return fmt.Errorf("store: put violation comment: need repo and issue number (got %q, %d)", repo, issueNumber)
	}
	_, err := s.exec(ctx, `INSERT INTO violation_comments_by_actor (repo, issue_number, actor, comment_id, node_id, count, updated_at, body)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (repo, issue_number, actor) DO UPDATE SET
			comment_id = excluded.comment_id,
			node_id = excluded.node_id,
			count = excluded.count,
			updated_at = excluded.updated_at,
			body = excluded.body`,
		repo, issueNumber, c.Actor, c.CommentID, c.NodeID, c.Count, s.t(nowUTC(c.UpdatedAt)), c.Body)
	if err != nil {
		return fmt.Errorf("store: put violation comment %s#%d of %q: %w", repo, issueNumber, c.Actor, err)
	}
	return nil
}
