package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/jobs"
	"github.com/ralph-gate/ralph-gate/store"
)

// pgDSNEnv names the PostgreSQL server the tests use (see .ci/postgres.sh).
const pgDSNEnv = "RALPH_GATE_TEST_POSTGRES_DSN"

// freshPostgresDatabase creates an empty database on the test server, dropped at the end of
// the test, and returns a DSN for it. Without a server the test is skipped, except in CI
// (CI=true), where that is a failure.
func freshPostgresDatabase(t *testing.T) string {
	t.Helper()
	base := os.Getenv(pgDSNEnv)
	if base == "" {
		const hint = "set " + pgDSNEnv + " (eval \"$(bash .ci/postgres.sh start)\") to run against PostgreSQL"
		if os.Getenv("CI") == "true" {
			t.Fatal(hint)
		}
		t.Skip(hint)
	}
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	name := "rg_migrate_" + hex.EncodeToString(b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("postgres: %v", err)
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		admin, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("postgres: %v", err)
			return
		}
		defer admin.Close(context.Background())
		if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	if !strings.HasPrefix(base, "postgres://") && !strings.HasPrefix(base, "postgresql://") {
		return base + " dbname=" + name // key=value settings: the last one wins
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse %s: %v", pgDSNEnv, err)
	}
	u.Path = "/" + name
	return u.String()
}

// idle processes nothing: the queue is never started here.
type idle struct{}

func (idle) ProcessChange(context.Context, enforce.Change) (enforce.Result, error) {
	return enforce.Result{}, nil
}

func (idle) ProcessLifecycle(context.Context, enforce.Lifecycle) (enforce.Result, error) {
	return enforce.Result{}, nil
}

func (idle) ProcessPolicyPush(context.Context, json.RawMessage) error { return nil }

// startReplica does what New does with the database: open the store (its migrations) and
// prepare the queue (River's).
func startReplica(ctx context.Context, dsn string) error {
	st, err := store.Open(ctx, store.DriverPostgres, dsn)
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	defer st.Close()
	if _, err := prepareQueue(ctx, st, idle{}, jobs.Options{Logger: slog.New(slog.DiscardHandler)}); err != nil {
		return fmt.Errorf("prepare queue: %w", err)
	}
	return nil
}

// Replicas that start at the same moment on one PostgreSQL database (helm install with
// replicaCount > 1) all start: they migrate one at a time, the later ones find nothing left to
// do, and every migration, the store's and River's, is applied exactly once.
func TestConcurrentStartsMigrateOneAtATime(t *testing.T) {
	tests := []struct {
		name     string
		replicas int
		// before starts this many replicas, one after the other, before the concurrent ones.
		before int
	}{
		{name: "four replicas on a fresh database", replicas: 4},
		{name: "eight replicas on a fresh database", replicas: 8},
		{name: "four replicas on a migrated database", replicas: 4, before: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dsn := freshPostgresDatabase(t)
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			for i := range tt.before {
				if err := startReplica(ctx, dsn); err != nil {
					t.Fatalf("replica %d started alone: %v", i+1, err)
				}
			}
			errs := make([]error, tt.replicas)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range tt.replicas {
				wg.Go(func() {
					<-start
					errs[i] = startReplica(ctx, dsn)
				})
			}
			close(start)
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Errorf("replica %d of %d did not start: %v", i+1, tt.replicas, err)
				}
			}
			if t.Failed() {
				return
			}
			checkMigrated(ctx, t, dsn)
		})
	}
}

// checkMigrated asserts that the store's and River's migrations are each recorded once.
func checkMigrated(ctx context.Context, t *testing.T, dsn string) {
	t.Helper()
	st, err := store.Open(ctx, store.DriverPostgres, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got, err := st.AppliedMigrations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var want []int
	for v := 1; v <= store.SchemaVersion(); v++ {
		want = append(want, v)
	}
	if !slices.Equal(got, want) {
		t.Errorf("the store's migrations: %v, want %v", got, want)
	}
	migrator, err := rivermigrate.New(riverpgxv5.New(st.Pool()), nil)
	if err != nil {
		t.Fatal(err)
	}
	existing, err := migrator.ExistingVersions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(existing) != len(migrator.AllVersions()) {
		t.Errorf("River's migrations: %d applied, want %d", len(existing), len(migrator.AllVersions()))
	}
	res, err := migrator.Validate(ctx, nil)
	if err != nil || !res.OK {
		t.Errorf("River's schema: %+v (%v)", res, err)
	}
}
