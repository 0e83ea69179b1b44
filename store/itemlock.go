package store

import (
	"context"
	"fmt"
)

// LockItem serializes work on one item across every replica sharing the database, until
// unlock is called. On PostgreSQL it holds a session advisory lock on a dedicated connection;
// on SQLite (one replica by design) it is a no-op and callers serialize in process.
func (s *Store) LockItem(ctx context.Context, itemID string) (unlock func(), err error) {
	if s.pool == nil {
		return func() {}, nil
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: lock item %s: %w", itemID, err)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtextextended($1, 7))`, itemID); err != nil {
		conn.Release()
		return nil, fmt.Errorf("store: lock item %s: %w", itemID, err)
	}
	return func() {
		// A fresh context: the unlock must happen even when the caller's context has ended.
		if _, err := conn.Exec(context.Background(), `SELECT pg_advisory_unlock(hashtextextended($1, 7))`, itemID); err != nil {
			// Closing the session releases every advisory lock it held.
			conn.Conn().Close(context.Background())
		}
		conn.Release()
	}, nil
}

// MaxConns is the Postgres pool size (0 on SQLite).
func (s *Store) MaxConns() int {
	if s.pool == nil {
		return 0
	}
	return int(s.pool.Config().MaxConns)
}
