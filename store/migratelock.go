package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"
)

// MigrationLockKey is the PostgreSQL advisory lock every replica holds while it migrates
// (WithMigrationLock): the 64-bit key 8243677942399525236 (0x72676d6967726174, the bytes of
// "rgmigrat"). In pg_locks it is the advisory lock with classid 1919380841, objid 1735549300
// and objsubid 1. It is one key for the whole database, whatever the schema: replicas of
// deployments in other schemas of the same database only wait for each other's migrations.
const MigrationLockKey int64 = 0x72676d6967726174

// migrationLockWait bounds the wait for the migration lock: long enough for another replica's
// migrations, and shorter than the chart's startup probe (2 s × 60), so a replica behind a
// stuck holder exits with an error that says so rather than being killed without one.
const migrationLockWait = time.Minute

// migrationLockApp is the application_name of the lock's connection, to find its holder in
// pg_stat_activity.
const migrationLockApp = "ralph-gate migration lock"

// WithMigrationLock runs fn while this process holds the migration lock, so replicas that
// start together migrate one at a time and the later ones find nothing left to do. On
// PostgreSQL it is a session advisory lock (MigrationLockKey) on a connection of its own,
// outside the pool, released when fn returns; the wait for it is bounded (a minute), and
// running out of it is an error naming the key and the holder. On SQLite (one replica) it
// just runs fn. fn must not call WithMigrationLock or Open: it would wait for itself.
func (s *Store) WithMigrationLock(ctx context.Context, fn func(ctx context.Context) error) error {
	return s.withMigrationLock(ctx, migrationLockWait, fn)
}

// withMigrationLock is WithMigrationLock waiting at most wait for the lock.
func (s *Store) withMigrationLock(ctx context.Context, wait time.Duration, fn func(ctx context.Context) error) error {
	if s.pool == nil {
		return fn(ctx)
	}
	unlock, err := s.lockMigrations(ctx, wait)
	if err != nil {
		return err
	}
	defer unlock()
	return fn(ctx)
}

// lockMigrations takes the migration lock on a dedicated connection, waiting at most wait.
func (s *Store) lockMigrations(ctx context.Context, wait time.Duration) (unlock func(), err error) {
	waitCtx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	cfg := s.pool.Config().ConnConfig.Copy()
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	cfg.RuntimeParams["application_name"] = migrationLockApp
	conn, err := pgx.ConnectConfig(waitCtx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: migration lock: connect: %w", err)
	}
	closeConn := func() {
		// Closing the session releases every advisory lock it holds.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = conn.Close(ctx)
	}
	var got bool
	if err := conn.QueryRow(waitCtx, `SELECT pg_try_advisory_lock($1)`, MigrationLockKey).Scan(&got); err != nil {
		closeConn()
		return nil, fmt.Errorf("store: migration lock %d: %w", MigrationLockKey, err)
	}
	if !got {
		zerolog.Ctx(ctx).Info().Int64("lock_key", MigrationLockKey).Str("held_by", s.migrationLockHolder()).
			Msg("store: waiting for the migration lock: another replica is migrating the database")
		start := time.Now()
		if _, err := conn.Exec(waitCtx, `SELECT pg_advisory_lock($1)`, MigrationLockKey); err != nil {
			closeConn()
			if ctx.Err() == nil && errors.Is(waitCtx.Err(), context.DeadlineExceeded) {
				return nil, fmt.Errorf("store: waited %s for the migration lock (PostgreSQL advisory lock %d), still held by %s: "+
					"another replica is migrating the database, or is stuck doing so (end its session, or let it finish, and start again): %w",
					wait, MigrationLockKey, s.migrationLockHolder(), context.DeadlineExceeded)
			}
			return nil, fmt.Errorf("store: migration lock %d: %w", MigrationLockKey, err)
		}
		zerolog.Ctx(ctx).Info().Int64("lock_key", MigrationLockKey).Dur("waited", time.Since(start)).
			Msg("store: took the migration lock")
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, MigrationLockKey)
		closeConn()
	}, nil
}

// migrationLockHolder describes the sessions holding the migration lock, for logs and errors
// (best effort).
func (s *Store) migrationLockHolder() string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	key := uint64(MigrationLockKey)
	rows, err := s.pool.Query(ctx, `SELECT l.pid, coalesce(host(a.client_addr), 'local'), coalesce(a.application_name, '')
		FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
			AND l.classid = $1 AND l.objid = $2 AND l.objsubid = 1`,
		uint32(key>>32), uint32(key))
	if err != nil {
		return "an unknown session"
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var (
			pid        int32
			addr, name string
		)
		if err := rows.Scan(&pid, &addr, &name); err != nil {
			return "an unknown session"
		}
		out = append(out, fmt.Sprintf("PostgreSQL backend pid %d (client %s, application %q)", pid, addr, name))
	}
	if rows.Err() != nil || len(out) == 0 {
		return "an unknown session"
	}
	return strings.Join(out, ", ")
}
