package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
)

// OpenReadOnly never creates a store: a mistyped SQLite path is an error naming the path and
// what is missing (the file, or its directory too), and nothing is left behind. It once went
// through Open, which created the directory and a fresh database and so answered "no
// decisions recorded".
func TestOpenReadOnlyMissingSQLite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name, dsn string
		want      []string
	}{
		{"missing file", filepath.Join(dir, "none.db"), []string{filepath.Join(dir, "none.db"), "the file does not exist"}},
		{"missing directory", filepath.Join(dir, "typo", "x.db"), []string{filepath.Join(dir, "typo", "x.db"), "nor its directory " + filepath.Join(dir, "typo")}},
		{"missing file, file: URI", "file:" + filepath.Join(dir, "typo", "x.db") + "?cache=shared", []string{"nor its directory"}},
		{"a directory", dir, []string{"is a directory"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := OpenReadOnly(t.Context(), DriverSQLite, tt.dsn)
			if err == nil {
				_ = s.Close()
				t.Fatalf("OpenReadOnly(%q) succeeded", tt.dsn)
			}
			if !errors.Is(err, ErrNoStore) {
				t.Errorf("error %v does not wrap ErrNoStore", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("OpenReadOnly created %q", e.Name())
	}
}

// On both drivers: an existing store opens read-only, reads what the service wrote, refuses
// every write, and reports a schema older than this build's; a database without
// ralph-gate's tables is no store, and stays without them.
func TestOpenReadOnly(t *testing.T) {
	forEachDriver(t, func(t *testing.T, tg target) {
		ctx := t.Context()

		empty, err := OpenReadOnly(ctx, tg.driver, emptyDatabase(t, tg))
		if err == nil {
			_ = empty.Close()
			t.Fatal("OpenReadOnly of a database without ralph-gate's tables succeeded")
		}
		if !errors.Is(err, ErrNoStore) || !strings.Contains(err.Error(), "no ralph-gate tables") {
			t.Errorf("empty database: %v, want ErrNoStore saying it has no ralph-gate tables", err)
		}

		rw := tg.open(t)
		at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
		if _, err := rw.AppendAudit(ctx, enforce.AuditEntry{At: at, ItemID: "PVTI_a", IssueNumber: 3, Repo: "acme/app",
			Actor: "agent-1", ActorKind: "agent", Verdict: enforce.VerdictReverted, Reason: "not a transition"}); err != nil {
			t.Fatal(err)
		}

		ro, err := OpenReadOnly(ctx, tg.driver, tg.dsn)
		if err != nil {
			t.Fatalf("OpenReadOnly of an existing store: %v", err)
		}
		defer ro.Close()
		entries, err := ro.QueryAudit(ctx, AuditFilter{})
		if err != nil || len(entries) != 1 || entries[0].Actor != "agent-1" {
			t.Fatalf("QueryAudit = %+v, %v; want the one entry written", entries, err)
		}
		if err := ro.CheckSchema(ctx); err != nil {
			t.Errorf("CheckSchema of a current store: %v", err)
		}
		if _, err := ro.AppendAudit(ctx, enforce.AuditEntry{ItemID: "PVTI_b", Verdict: enforce.VerdictAllowed}); err == nil {
			t.Error("a write through the read-only store succeeded")
		}
		if _, err := ro.DB().ExecContext(ctx, "CREATE TABLE ro_probe (x INTEGER)"); err == nil {
			t.Error("DDL through the read-only store succeeded")
		}

		// The service has not migrated to this build's newest version yet.
		if _, err := rw.DB().ExecContext(ctx, rw.q(`DELETE FROM schema_migrations WHERE version = ?`), SchemaVersion()); err != nil {
			t.Fatal(err)
		}
		var behind *SchemaBehindError
		err = ro.CheckSchema(ctx)
		if !errors.As(err, &behind) || behind.Applied != SchemaVersion()-1 || behind.Known != SchemaVersion() {
			t.Errorf("CheckSchema of an older store = %v, want a SchemaBehindError %d < %d", err, SchemaVersion()-1, SchemaVersion())
		}
	})
}

// emptyDatabase returns the DSN of a database of tg's driver that exists but holds no table
// (an empty SQLite file; a fresh Postgres schema), checking after the test that
// OpenReadOnly left it so.
func emptyDatabase(t *testing.T, tg target) string {
	t.Helper()
	var dsn string
	if tg.driver == DriverSQLite {
		dsn = filepath.Join(t.TempDir(), "empty.db")
		if err := os.WriteFile(dsn, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if fi, err := os.Stat(dsn); err != nil || fi.Size() != 0 {
				t.Errorf("OpenReadOnly wrote into the empty database file (%v)", err)
			}
		})
		return dsn
	}
	other := newTarget(t, DriverPostgres)
	t.Cleanup(func() {
		s, err := OpenReadOnly(t.Context(), DriverPostgres, other.dsn)
		if err == nil {
			_ = s.Close()
			t.Error("the empty Postgres schema gained ralph-gate's tables")
		}
	})
	return other.dsn
}

func TestSQLiteReadOnlyDSN(t *testing.T) {
	t.Parallel()
	abs, err := filepath.Abs("rel.db")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ dsn, want string }{
		{"/var/lib/ralph-gate.db", "file:/var/lib/ralph-gate.db?_pragma=busy_timeout%2810000%29&_pragma=query_only%281%29&mode=ro"},
		{"rel.db", "file:" + abs + "?_pragma=busy_timeout%2810000%29&_pragma=query_only%281%29&mode=ro"},
		{"/odd/100%#1.db", "file:/odd/100%25%231.db?_pragma=busy_timeout%2810000%29&_pragma=query_only%281%29&mode=ro"},
		{"/x.db?_pragma=busy_timeout(50)", "file:/x.db?_pragma=busy_timeout%2850%29&_pragma=query_only%281%29&mode=ro"},
		{"file:/x.db?mode=rwc&cache=shared", "file:/x.db?_pragma=busy_timeout%2810000%29&_pragma=query_only%281%29&cache=shared&mode=ro"},
	}
	for _, tt := range tests {
		got, err := sqliteReadOnlyDSN(tt.dsn)
		if err != nil || got != tt.want {
			t.Errorf("sqliteReadOnlyDSN(%q) = %q, %v; want %q", tt.dsn, got, err, tt.want)
		}
	}
}
