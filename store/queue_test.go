package store

import (
	"testing"

	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
)

// QueueDepth reads River's own job table, as River's migrations make it on each driver.
func TestQueueDepth(t *testing.T) {
	forEachDriver(t, func(t *testing.T, tg target) {
		ctx := t.Context()
		s := tg.open(t)
		if n, err := s.QueueDepth(ctx); err != nil || n != -1 {
			t.Fatalf("QueueDepth without River's tables = %d, %v; want -1", n, err)
		}
		if err := migrateRiver(t, s); err != nil {
			t.Fatalf("river migrations: %v", err)
		}
		if n, err := s.QueueDepth(ctx); err != nil || n != 0 {
			t.Fatalf("QueueDepth of an empty queue = %d, %v; want 0", n, err)
		}
		states := map[string]bool{ // state -> finished
			"available": false, "scheduled": false, "retryable": false, "running": false,
			"completed": true, "discarded": true, "cancelled": true,
		}
		for state, finished := range states {
			var fin any
			if finished {
				fin = s.t(at(0))
			}
			if _, err := s.exec(ctx, `INSERT INTO river_job (kind, args, max_attempts, state, finalized_at) VALUES ('change', '{}', 5, ?, ?)`, state, fin); err != nil {
				t.Fatalf("insert a %s job: %v", state, err)
			}
		}
		if n, err := s.QueueDepth(ctx); err != nil || n != 4 {
			t.Fatalf("QueueDepth = %d, %v; want 4 (available, scheduled, retryable, running)", n, err)
		}
	})
}

// migrateRiver runs River's migrations on the store's database, as the service does.
func migrateRiver(t *testing.T, s *Store) error {
	if s.Driver() == DriverPostgres {
		mig, err := rivermigrate.New(riverpgxv5.New(s.Pool()), nil)
		if err != nil {
			return err
		}
		_, err = mig.Migrate(t.Context(), rivermigrate.DirectionUp, nil)
		return err
	}
	mig, err := rivermigrate.New(riversqlite.New(s.DB()), nil)
	if err != nil {
		return err
	}
	_, err = mig.Migrate(t.Context(), rivermigrate.DirectionUp, nil)
	return err
}
