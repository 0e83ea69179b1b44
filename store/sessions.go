package store

// Revoked page sessions: a session signed out stays refused until it would have expired.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// RevokeSession refuses the session id from now until until (when its cookie expires).
func (s *Store) RevokeSession(ctx context.Context, id string, until time.Time) error {
	if id == "" {
		return errors.New("store: revoke session: empty id")
	}
	if _, err := s.exec(ctx, `INSERT INTO revoked_sessions (id, until) VALUES (?, ?) ON CONFLICT (id) DO NOTHING`, id, s.t(until)); err != nil {
		return fmt.Errorf("store: revoke session: %w", err)
	}
	return nil
}

// SessionRevoked reports whether the session id was revoked.
func (s *Store) SessionRevoked(ctx context.Context, id string) (bool, error) {
	var one int
	err := s.queryRow(ctx, `SELECT 1 FROM revoked_sessions WHERE id = ?`, id).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("store: session revoked: %w", err)
	}
	return true, nil
}

// PruneRevokedSessions forgets revocations of sessions expired before now (their cookies are
// refused anyway).
func (s *Store) PruneRevokedSessions(ctx context.Context, now time.Time) (int64, error) {
	res, err := s.exec(ctx, `DELETE FROM revoked_sessions WHERE until < ?`, s.t(now))
	return pruned(res, err, "revoked sessions")
}
