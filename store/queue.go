package store

import (
	"context"
	"fmt"
)

// QueueDepth counts the jobs River has not finished (available, scheduled, retryable or
// running) in its job table, which lives in the store's database; -1 when there is no such
// table (a store no service has queued work in yet).
func (s *Store) QueueDepth(ctx context.Context) (int, error) {
	var found bool
	switch s.driver {
	case DriverSQLite:
		var n int
		if err := s.queryRow(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'river_job'`).Scan(&n); err != nil {
			return 0, fmt.Errorf("store: queue depth: %w", err)
		}
		found = n > 0
	default:
		if err := s.queryRow(ctx, `SELECT to_regclass('river_job') IS NOT NULL`).Scan(&found); err != nil {
			return 0, fmt.Errorf("store: queue depth: %w", err)
		}
	}
	if !found {
		return -1, nil
	}
	var n int
	if err := s.queryRow(ctx, `SELECT COUNT(*) FROM river_job WHERE state IN ('available', 'scheduled', 'retryable', 'running')`).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: queue depth: %w", err)
	}
	return n, nil
}
