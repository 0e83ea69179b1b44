package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// MarkDelivery records a webhook delivery id and reports whether this is the
// first time it is seen. Concurrent calls with one id: exactly one is first.
func (s *Store) MarkDelivery(ctx context.Context, deliveryID, event string, now time.Time) (first bool, err error) {
	if deliveryID == "" {
		return false, errors.New("store: mark delivery: empty delivery id")
	}
	res, err := s.exec(ctx, `INSERT INTO deliveries (delivery_id, event, received_at) VALUES (?, ?, ?)
		ON CONFLICT (delivery_id) DO NOTHING`, deliveryID, event, s.t(nowUTC(now)))
	if err != nil {
		return false, fmt.Errorf("store: mark delivery %q: %w", deliveryID, err)
	}
	return affectedOne(res, "mark delivery "+deliveryID)
}

// DeliverySeen reports whether MarkDelivery has recorded deliveryID.
func (s *Store) DeliverySeen(ctx context.Context, deliveryID string) (bool, error) {
	var one int
	err := s.queryRow(ctx, `SELECT 1 FROM deliveries WHERE delivery_id = ?`, deliveryID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: delivery seen %q: %w", deliveryID, err)
	}
	return true, nil
}

// PruneDeliveries forgets deliveries received before cutoff and returns how
// many were removed. Keep them longer than GitHub may redeliver.
func (s *Store) PruneDeliveries(ctx context.Context, cutoff time.Time) (int64, error) {
	res, err := s.exec(ctx, `DELETE FROM deliveries WHERE received_at < ?`, s.t(cutoff))
	if err != nil {
		return 0, fmt.Errorf("store: prune deliveries: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("store: prune deliveries: %w", err)
	}
	return n, nil
}

// ViolationComment is the explanatory comment kept per issue so that a burst
// of violations updates one comment instead of adding many.
type ViolationComment struct {
	CommentID int64  // REST id
	NodeID    string // GraphQL node id
	Count     int    // violations explained by this comment
	UpdatedAt time.Time
	Body      string
}

// GetViolationComment returns the violation comment of an issue, or
// ErrNotFound.
func (s *Store) GetViolationComment(ctx context.Context, repo string, issueNumber int) (ViolationComment, error) {
	var c ViolationComment
	err := s.queryRow(ctx, `SELECT comment_id, node_id, count, updated_at, body FROM violation_comments
		WHERE repo = ? AND issue_number = ?`, repo, issueNumber).
		Scan(&c.CommentID, &c.NodeID, &c.Count, tc(&c.UpdatedAt), &c.Body)
	if errors.Is(err, sql.ErrNoRows) {
		return ViolationComment{}, fmt.Errorf("store: violation comment %s#%d: %w", repo, issueNumber, ErrNotFound)
	}
	if err != nil {
		return ViolationComment{}, fmt.Errorf("store: get violation comment %s#%d: %w", repo, issueNumber, err)
	}
	return c, nil
}

// PutViolationComment inserts or replaces the violation comment of an issue.
// A zero UpdatedAt is stored as now.
func (s *Store) PutViolationComment(ctx context.Context, repo string, issueNumber int, c ViolationComment) error {
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

// DeleteViolationComment forgets the violation comment of an issue (e.g.
// after it was deleted on GitHub). Deleting a missing one is not an error.
func (s *Store) DeleteViolationComment(ctx context.Context, repo string, issueNumber int) error {
	if _, err := s.exec(ctx, `DELETE FROM violation_comments WHERE repo = ? AND issue_number = ?`, repo, issueNumber); err != nil {
		return fmt.Errorf("store: delete violation comment %s#%d: %w", repo, issueNumber, err)
	}
	return nil
}

// GetCursor returns the value stored under name, or ErrNotFound.
func (s *Store) GetCursor(ctx context.Context, name string) (string, error) {
	var v string
	err := s.queryRow(ctx, `SELECT value FROM cursors WHERE name = ?`, name).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("store: cursor %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("store: get cursor %q: %w", name, err)
	}
	return v, nil
}

// PutCursor stores value under name, replacing any previous value.
func (s *Store) PutCursor(ctx context.Context, name, value string) error {
	if name == "" {
		return errors.New("store: put cursor: empty name")
	}
	_, err := s.exec(ctx, `INSERT INTO cursors (name, value, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
		name, value, s.t(time.Now()))
	if err != nil {
		return fmt.Errorf("store: put cursor %q: %w", name, err)
	}
	return nil
}
