package store

// Cursors: small named values the reconciler and the sweeper keep (where a pass resumes,
// what a sweep has proven).

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
)

// GetCursor returns the value stored under name, or enforce.ErrNotFound.
func (s *Store) GetCursor(ctx context.Context, name string) (string, error) {
	var v string
	err := s.queryRow(ctx, `SELECT value FROM cursors WHERE name = ?`, name).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("store: cursor %q: %w", name, enforce.ErrNotFound)
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
