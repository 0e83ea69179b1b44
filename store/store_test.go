package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // "pgx" driver for the test admin connection

	"github.com/ralph-gate/ralph-gate/enforce"
)

// pgDSNEnv names the Postgres server the tests use (see .ci/postgres.sh).
const pgDSNEnv = "RALPH_GATE_TEST_POSTGRES_DSN"

// target is one fresh, isolated database: an SQLite file in a temporary
// directory, or a new schema in the Postgres test database.
type target struct {
	driver string
	dsn    string
}

func (tg target) open(t *testing.T) *Store {
	t.Helper()
	s, err := Open(t.Context(), tg.driver, tg.dsn)
	if err != nil {
		t.Fatalf("Open(%s): %v", tg.driver, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// forEachDriver runs fn as a parallel subtest per driver, each with its own
// fresh database.
func forEachDriver(t *testing.T, fn func(t *testing.T, tg target)) {
	t.Helper()
	t.Parallel()
	for _, driver := range []string{DriverSQLite, DriverPostgres} {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			fn(t, newTarget(t, driver))
		})
	}
}

func newTarget(t *testing.T, driver string) target {
	t.Helper()
	if driver == DriverSQLite {
		return target{driver: driver, dsn: filepath.Join(t.TempDir(), "ralph-gate.db")}
	}
	base := os.Getenv(pgDSNEnv)
	if base == "" {
		t.Skipf("Postgres tests skipped: set %s (e.g. eval \"$(bash .ci/postgres.sh start)\")", pgDSNEnv)
	}
	schema := "t_" + randHex(t, 8)
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatalf("open admin connection: %v", err)
	}
	defer admin.Close()
	if _, err := admin.ExecContext(t.Context(), "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		admin, err := sql.Open("pgx", base)
		if err != nil {
			t.Errorf("open admin connection: %v", err)
			return
		}
		defer admin.Close()
		if _, err := admin.ExecContext(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return target{driver: driver, dsn: withSearchPath(t, base, schema)}
}

// withSearchPath points a pgx DSN (URL or key=value form) at schema.
func withSearchPath(t *testing.T, dsn, schema string) string {
	t.Helper()
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatalf("parse %s: %v", pgDSNEnv, err)
		}
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return dsn + " search_path=" + schema
}

func randHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// race starts n goroutines at once and returns how many fn calls reported a
// win, and the index of the last winner.
func race(t *testing.T, n int, fn func(i int) (bool, error)) (wins int, winner int) {
	t.Helper()
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		count atomic.Int32
		last  atomic.Int32
		errs  = make(chan error, n)
	)
	for i := range n {
		wg.Go(func() {
			<-start
			ok, err := fn(i)
			if err != nil {
				errs <- err
				return
			}
			if ok {
				count.Add(1)
				last.Store(int32(i))
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("racer: %v", err)
	}
	return int(count.Load()), int(last.Load())
}

// seed writes rec as the item's new record, whatever is stored: it compares
// and sets against the current version (0 when the item is absent).
func seed(t *testing.T, s *Store, rec enforce.Record) {
	t.Helper()
	var version int64
	cur, err := s.GetItem(t.Context(), rec.ItemID)
	switch {
	case err == nil:
		version = cur.Version
	case !errors.Is(err, enforce.ErrNotFound):
		t.Fatalf("seed %q: %v", rec.ItemID, err)
	}
	if ok, err := s.CompareAndSetItem(t.Context(), rec, version); !ok || err != nil {
		t.Fatalf("seed %q at version %d: %v, %v", rec.ItemID, version, ok, err)
	}
}

// at returns a fixed UTC time with microsecond detail, offset by d.
func at(d time.Duration) time.Time {
	return time.Date(2025, 3, 14, 15, 9, 26, 535897000, time.UTC).Add(d)
}

func TestOpenUnknownDriver(t *testing.T) {
	t.Parallel()
	if _, err := Open(t.Context(), "mysql", "x"); err == nil {
		t.Fatal("Open with an unknown driver succeeded")
	}
}

func TestSQLiteDSN(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name    string
		dsn     string
		wantErr bool
		want    []string // substrings of the result
		notWant []string
	}{
		{name: "empty", dsn: "", wantErr: true},
		{name: "memory", dsn: ":memory:", wantErr: true},
		{name: "memory uri", dsn: "file::memory:?cache=shared", wantErr: true},
		{name: "plain path", dsn: filepath.Join(dir, "a", "b.db"),
			want: []string{"busy_timeout%2810000%29", "journal_mode%28WAL%29", "foreign_keys%281%29", "_txlock=immediate"}},
		{name: "keeps own pragmas", dsn: filepath.Join(dir, "c.db") + "?_pragma=busy_timeout(50)&_txlock=deferred",
			want: []string{"busy_timeout%2850%29", "_txlock=deferred"}, notWant: []string{"10000", "immediate"}},
		{name: "file uri", dsn: "file:" + filepath.Join(dir, "d.db"), want: []string{"file:", "journal_mode%28WAL%29"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := sqliteDSN(tt.dsn)
			if (err != nil) != tt.wantErr {
				t.Fatalf("sqliteDSN(%q) = %q, %v; wantErr %v", tt.dsn, got, err, tt.wantErr)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("sqliteDSN(%q) = %q, want it to contain %q", tt.dsn, got, w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(got, w) {
					t.Errorf("sqliteDSN(%q) = %q, want it not to contain %q", tt.dsn, got, w)
				}
			}
		})
	}
	// sqliteDSN only spells the DSN: the directory is neither created nor required here
	// (openSQLite refuses a missing one: TestOpenSQLiteRefusesAMissingDirectory).
	if _, err := os.Stat(filepath.Join(dir, "a")); err == nil {
		t.Errorf("sqliteDSN created the directory %s", filepath.Join(dir, "a"))
	}
}

func TestSQLitePragmas(t *testing.T) {
	t.Parallel()
	s := newTarget(t, DriverSQLite).open(t)
	for pragma, want := range map[string]string{"journal_mode": "wal", "foreign_keys": "1", "busy_timeout": "10000"} {
		var got string
		if err := s.DB().QueryRowContext(t.Context(), "PRAGMA "+pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("PRAGMA %s = %q, want %q", pragma, got, want)
		}
	}
	if s.Pool() != nil {
		t.Error("Pool() is not nil for SQLite")
	}
}

func TestMigrationsIdempotent(t *testing.T) {
	forEachDriver(t, func(t *testing.T, tg target) {
		ctx := t.Context()
		s1 := tg.open(t)
		if got, want := s1.Driver(), tg.driver; got != want {
			t.Errorf("Driver() = %q, want %q", got, want)
		}
		if err := s1.Ping(ctx); err != nil {
			t.Fatal(err)
		}
		seed(t, s1, enforce.Record{ItemID: "I1", ProjectID: "P", LastLegalState: "Backlog"})
		if err := s1.Close(); err != nil {
			t.Fatal(err)
		}
		// Open again (sequentially), then several replicas at once.
		s2 := tg.open(t)
		var wg sync.WaitGroup
		errs := make(chan error, 5)
		for range 5 {
			wg.Go(func() {
				s, err := Open(ctx, tg.driver, tg.dsn)
				if err != nil {
					errs <- err
					return
				}
				errs <- s.Close()
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Errorf("concurrent Open: %v", err)
			}
		}
		applied, err := s2.AppliedMigrations(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var want []int
		for _, m := range migrations {
			want = append(want, m.version)
		}
		if !slices.Equal(applied, want) || applied[len(applied)-1] != SchemaVersion() {
			t.Errorf("applied migrations = %v, want %v", applied, want)
		}
		it, err := s2.GetItem(ctx, "I1")
		if err != nil || it.LastLegalState != "Backlog" {
			t.Errorf("item after reopen = %+v, %v", it, err)
		}
	})
}

// migrateTo brings tg's empty database to version, as a build whose newest
// migration was version would have left it.
func migrateTo(t *testing.T, tg target, version int) *Store {
	t.Helper()
	ctx := t.Context()
	open := openSQLite
	if tg.driver == DriverPostgres {
		open = openPostgres
	}
	s, err := open(ctx, tg.dsn)
	if err != nil {
		t.Fatalf("open %s: %v", tg.driver, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	stmts := []string{`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at {{ts}} NOT NULL)`}
	for _, m := range migrations {
		if m.version > version {
			break
		}
		stmts = append(stmts, m.stmts...)
		stmts = append(stmts, fmt.Sprintf(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (%d, '%s', CURRENT_TIMESTAMP)`, m.version, m.name))
	}
	for _, stmt := range stmts {
		if _, err := s.DB().ExecContext(ctx, s.ddl(stmt)); err != nil {
			t.Fatalf("migrate to version %d: %s: %v", version, stmt, err)
		}
	}
	return s
}

// relationExists reports whether the database has a table or index called name.
func relationExists(t *testing.T, s *Store, name string) bool {
	t.Helper()
	q := `SELECT COUNT(*) FROM sqlite_master WHERE name = ?`
	if s.Driver() == DriverPostgres {
		q = `SELECT COUNT(*) FROM pg_class WHERE oid = to_regclass(CAST(? AS TEXT))`
	}
	var n int
	if err := s.queryRow(t.Context(), q, name).Scan(&n); err != nil {
		t.Fatalf("look up %s: %v", name, err)
	}
	return n > 0
}

// Version 3 drops the deliveries table (deliveries are recorded as
// observations): a new database never has it, and a database of version 2
// loses it on Open and keeps everything else.
func TestMigrationDropsDeliveries(t *testing.T) {
	if got := SchemaVersion(); got != 18 {
		t.Errorf("SchemaVersion() = %d, want 18", got)
	}
	forEachDriver(t, func(t *testing.T, tg target) {
		tests := []struct {
			name string
			from int // version the database is at before Open; 0 = new
		}{
			{"new database", 0},
			{"database at version 2", 2},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				ctx := t.Context()
				tg := newTarget(t, tg.driver)
				if tt.from > 0 {
					old := migrateTo(t, tg, tt.from)
					if !relationExists(t, old, "deliveries") || !relationExists(t, old, "deliveries_received_at") {
						t.Fatalf("version %d has no deliveries table and index", tt.from)
					}
					if _, err := old.DB().ExecContext(ctx, old.q(`INSERT INTO deliveries (delivery_id, event, received_at) VALUES (?, ?, ?)`),
						"d-1", "projects_v2_item", old.t(at(0))); err != nil {
						t.Fatal(err)
					}
					// (Written as version 2 knew items: the code's own write knows the columns of now.)
					if _, err := old.DB().ExecContext(ctx, old.q(`INSERT INTO items (item_id, project_id, last_legal_state, observed_state, updated_at, version)
						VALUES (?, ?, ?, ?, ?, 1)`), "I1", "P", "Backlog", "Backlog", old.t(at(0))); err != nil {
						t.Fatal(err)
					}
					if err := old.Close(); err != nil {
						t.Fatal(err)
					}
				}
				s := tg.open(t)
				for _, name := range []string{"deliveries", "deliveries_received_at"} {
					if relationExists(t, s, name) {
						t.Errorf("%s still exists after Open", name)
					}
				}
				applied, err := s.AppliedMigrations(ctx)
				var every []int
				for v := 1; v <= SchemaVersion(); v++ {
					every = append(every, v)
				}
				if err != nil || !slices.Equal(applied, every) {
					t.Errorf("applied migrations = %v, %v; want %v", applied, err, every)
				}
				if tt.from > 0 {
					if it, err := s.GetItem(ctx, "I1"); err != nil || it.LastLegalState != "Backlog" || it.Version != 1 {
						t.Errorf("item after the migration = %+v, %v; want Backlog at version 1", it, err)
					}
				}
			})
		}
	})
}

func TestItems(t *testing.T) {
	forEachDriver(t, func(t *testing.T, tg target) {
		ctx := t.Context()
		s := tg.open(t)
		if _, err := s.GetItem(ctx, "missing"); !errors.Is(err, enforce.ErrNotFound) {
			t.Errorf("GetItem(missing) error = %v, want ErrNotFound", err)
		}
		tests := []struct {
			name string
			item enforce.Record
		}{
			{"unlocked", enforce.Record{ProjectID: "PVT_1", ItemID: "PVTI_a", IssueNumber: 12, Repo: "acme/web",
				LastLegalState: "Ready for Plan", UpdatedAt: at(0)}},
			{"locked, with legal time and rejected value", enforce.Record{ProjectID: "PVT_1", ItemID: "PVTI_b", IssueNumber: 13, Repo: "acme/web",
				LastLegalState: "Plan in Progress", LegalAt: at(-time.Minute), RejectedState: "Done", LockHolder: "agent-1", LockSince: at(-time.Hour), UpdatedAt: at(time.Second)}},
			{"draft, unset state", enforce.Record{ProjectID: "PVT_2", ItemID: "PVTI_c", UpdatedAt: at(2 * time.Second)}},
			{"required fields in its history", enforce.Record{ProjectID: "PVT_3", ItemID: "PVTI_f", LastLegalState: "Backlog", UpdatedAt: at(3 * time.Second),
				Fields: map[string]enforce.FieldValue{"Estimate": {Value: "S", At: at(-time.Minute)}, "Priority": {Value: ""}},
				Writes: []enforce.Write{{Over: "Done", To: "Backlog", At: at(-time.Second)}}, Raced: []enforce.Write{{Over: "Backlog", To: "Done"}}}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if ok, err := s.CompareAndSetItem(ctx, tt.item, 0); !ok || err != nil {
					t.Fatalf("insert: %v, %v", ok, err)
				}
				got, err := s.GetItem(ctx, tt.item.ItemID)
				if err != nil {
					t.Fatal(err)
				}
				want := tt.item
				want.Version = 1
				if !reflect.DeepEqual(got, want) {
					t.Errorf("GetItem = %+v\nwant      %+v", got, want)
				}
				// Overwrite bumps the version.
				tt.item.LastLegalState = "Backlog"
				tt.item.Version = 99 // ignored: the expected version decides
				if ok, err := s.CompareAndSetItem(ctx, tt.item, 1); !ok || err != nil {
					t.Fatalf("overwrite: %v, %v", ok, err)
				}
				got, err = s.GetItem(ctx, tt.item.ItemID)
				if err != nil || got.Version != 2 || got.LastLegalState != "Backlog" {
					t.Errorf("after overwrite: %+v, %v; want version 2, Backlog", got, err)
				}
			})
		}
		items, err := s.ListItems(ctx, "PVT_1")
		if err != nil || len(items) != 2 || items[0].ItemID != "PVTI_a" || items[1].ItemID != "PVTI_b" {
			t.Errorf("ListItems(PVT_1) = %+v, %v", items, err)
		}
		all, err := s.ListItems(ctx, "")
		if err != nil || len(all) != 4 {
			t.Errorf("ListItems(all) = %d items, %v; want 4", len(all), err)
		}
		// A holder without a time gets "now"; a time without a holder is refused.
		if ok, err := s.CompareAndSetItem(ctx, enforce.Record{ItemID: "PVTI_d", LockHolder: "agent-2"}, 0); !ok || err != nil {
			t.Fatalf("insert with a holder: %v, %v", ok, err)
		}
		if got, _ := s.GetItem(ctx, "PVTI_d"); got.LockSince.IsZero() {
			t.Error("lock since not defaulted to now")
		}
		if _, err := s.CompareAndSetItem(ctx, enforce.Record{ItemID: "PVTI_e", LockSince: at(0)}, 0); err == nil {
			t.Error("CompareAndSetItem with lock time but no holder succeeded")
		}
		if _, err := s.CompareAndSetItem(ctx, enforce.Record{}, 0); err == nil {
			t.Error("CompareAndSetItem without item id succeeded")
		}
	})
}

func TestItemVersions(t *testing.T) {
	forEachDriver(t, func(t *testing.T, tg target) {
		ctx := t.Context()
		s := tg.open(t)
		var ids []string
		want := map[string]int64{}
		for i := range 150 { // more than one query's worth
			id := fmt.Sprintf("PVTI_%03d", i)
			ids = append(ids, id)
			if i%3 == 0 {
				continue // never recorded: absent from the answer
			}
			rec := enforce.Record{ItemID: id, ProjectID: "PVT_1"}
			for v := int64(0); v <= int64(i%4); v++ {
				if ok, err := s.CompareAndSetItem(ctx, rec, v); !ok || err != nil {
					t.Fatalf("write %s at %d: %v, %v", id, v, ok, err)
				}
			}
			want[id] = int64(i%4) + 1
		}
		got, err := s.ItemVersions(ctx, append(ids, "PVTI_missing"))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Errorf("%d versions, want %d", len(got), len(want))
		}
		for id, v := range want {
			if got[id] != v {
				t.Errorf("%s: version %d, want %d", id, got[id], v)
			}
		}
		if got, err := s.ItemVersions(ctx, nil); err != nil || len(got) != 0 {
			t.Errorf("no ids: %v, %v", got, err)
		}
	})
}

func TestCompareAndSetItem(t *testing.T) {
	forEachDriver(t, func(t *testing.T, tg target) {
		ctx := t.Context()
		s := tg.open(t)
		base := enforce.Record{ProjectID: "P", ItemID: "I", IssueNumber: 7, Repo: "acme/api"}
		steps := []struct {
			name        string
			state       string
			expected    int64
			wantOK      bool
			wantVersion int64 // stored version afterwards
			wantState   string
		}{
			{"insert when absent", "Backlog", 0, true, 1, "Backlog"},
			{"insert when present", "Research Needed", 0, false, 1, "Backlog"},
			{"stale version", "Research Needed", 5, false, 1, "Backlog"},
			{"matching version", "Research Needed", 1, true, 2, "Research Needed"},
			{"replayed version", "Ready for Plan", 1, false, 2, "Research Needed"},
			{"next version", "Ready for Plan", 2, true, 3, "Ready for Plan"},
		}
		for i, st := range steps {
			it := base
			it.LastLegalState = st.state
			it.LegalAt = at(time.Duration(i) * time.Second)
			it.RejectedState = "rejected-" + st.name
			ok, err := s.CompareAndSetItem(ctx, it, st.expected)
			if err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
			if ok != st.wantOK {
				t.Errorf("%s: CompareAndSetItem = %v, want %v", st.name, ok, st.wantOK)
			}
			got, err := s.GetItem(ctx, "I")
			if err != nil {
				t.Fatal(err)
			}
			if got.Version != st.wantVersion || got.LastLegalState != st.wantState {
				t.Errorf("%s: stored %q v%d, want %q v%d", st.name, got.LastLegalState, got.Version, st.wantState, st.wantVersion)
			}
			if st.wantOK && (!got.LegalAt.Equal(it.LegalAt) || got.RejectedState != it.RejectedState) {
				t.Errorf("%s: stored legal at %v, rejected %q; want %v, %q", st.name, got.LegalAt, got.RejectedState, it.LegalAt, it.RejectedState)
			}
		}
		if _, err := s.CompareAndSetItem(ctx, base, -1); err == nil {
			t.Error("negative expected version accepted")
		}
		if ok, err := s.CompareAndSetItem(ctx, enforce.Record{ItemID: "absent"}, 1); ok || err != nil {
			t.Errorf("CAS on an absent item with version 1 = %v, %v; want false, nil", ok, err)
		}

		// Concurrent workers updating from the same version: exactly one wins.
		const workers = 16
		for round := range 3 {
			cur, err := s.GetItem(ctx, "I")
			if err != nil {
				t.Fatal(err)
			}
			wins, winner := race(t, workers, func(i int) (bool, error) {
				it := cur
				it.LastLegalState = fmt.Sprintf("state-%d-%d", round, i)
				return s.CompareAndSetItem(ctx, it, cur.Version)
			})
			if wins != 1 {
				t.Fatalf("round %d: %d CAS winners, want exactly 1", round, wins)
			}
			got, _ := s.GetItem(ctx, "I")
			if want := fmt.Sprintf("state-%d-%d", round, winner); got.LastLegalState != want || got.Version != cur.Version+1 {
				t.Errorf("round %d: stored %q v%d, want %q v%d", round, got.LastLegalState, got.Version, want, cur.Version+1)
			}
		}
		// Concurrent first inserts: exactly one wins.
		wins, _ := race(t, workers, func(i int) (bool, error) {
			return s.CompareAndSetItem(ctx, enforce.Record{ItemID: "new", LastLegalState: fmt.Sprint(i)}, 0)
		})
		if wins != 1 {
			t.Errorf("%d concurrent inserts won, want exactly 1", wins)
		}
	})
}

func TestClaimLock(t *testing.T) {
	forEachDriver(t, func(t *testing.T, tg target) {
		ctx := t.Context()
		s := tg.open(t)
		seed(t, s, enforce.Record{ProjectID: "P", ItemID: "I", IssueNumber: 3, Repo: "acme/api", LastLegalState: "Research Needed",
			LegalAt: at(-time.Hour), RejectedState: "Done"})
		steps := []struct {
			name       string
			op         string // claim or release
			holder     string
			now        time.Time
			wantOK     bool
			wantHolder string
			wantSince  time.Time
		}{
			{"claim free item", "claim", "agent-a", at(0), true, "agent-a", at(0)},
			{"same holder re-claims, keeps time", "claim", "agent-a", at(time.Minute), true, "agent-a", at(0)},
			{"other holder refused", "claim", "agent-b", at(2 * time.Minute), false, "agent-a", at(0)},
			{"release by non-holder refused", "release", "agent-b", at(3 * time.Minute), false, "agent-a", at(0)},
			{"release by holder", "release", "agent-a", at(4 * time.Minute), true, "", time.Time{}},
			{"release when free", "release", "", at(5 * time.Minute), false, "", time.Time{}},
			{"other holder claims freed item", "claim", "agent-b", at(6 * time.Minute), true, "agent-b", at(6 * time.Minute)},
			{"forced release", "release", "", at(7 * time.Minute), true, "", time.Time{}},
		}
		for _, st := range steps {
			var (
				ok  bool
				err error
			)
			if st.op == "claim" {
				ok, err = s.ClaimLock(ctx, "I", st.holder, st.now)
			} else {
				ok, err = s.ReleaseLock(ctx, "I", st.holder, st.now)
			}
			if err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
			if ok != st.wantOK {
				t.Errorf("%s: ok = %v, want %v", st.name, ok, st.wantOK)
			}
			got, err := s.GetItem(ctx, "I")
			if err != nil {
				t.Fatal(err)
			}
			if got.LockHolder != st.wantHolder || !got.LockSince.Equal(st.wantSince) {
				t.Errorf("%s: lock = %q since %v, want %q since %v", st.name, got.LockHolder, got.LockSince, st.wantHolder, st.wantSince)
			}
			if got.LastLegalState != "Research Needed" || got.Repo != "acme/api" || !got.LegalAt.Equal(at(-time.Hour)) || got.RejectedState != "Done" {
				t.Errorf("%s: lock operation changed other fields: %+v", st.name, got)
			}
		}
		if _, err := s.ClaimLock(ctx, "I", "", at(0)); err == nil {
			t.Error("ClaimLock with empty holder succeeded")
		}

		// 10 agents race for one item (known and not yet known): one wins.
		for _, itemID := range []string{"I", "unseen"} {
			wins, winner := race(t, 10, func(i int) (bool, error) {
				return s.ClaimLock(ctx, itemID, fmt.Sprintf("agent-%d", i), at(time.Hour))
			})
			if wins != 1 {
				t.Fatalf("%s: %d ClaimLock winners, want exactly 1", itemID, wins)
			}
			got, err := s.GetItem(ctx, itemID)
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("agent-%d", winner); got.LockHolder != want || !got.LockSince.Equal(at(time.Hour)) {
				t.Errorf("%s: holder %q since %v, want %q since %v", itemID, got.LockHolder, got.LockSince, want, at(time.Hour))
			}
		}
	})
}

func TestAudit(t *testing.T) {
	forEachDriver(t, func(t *testing.T, tg target) {
		ctx := t.Context()
		s := tg.open(t)
		entries := []enforce.AuditEntry{
			{At: at(0), DeliveryID: "d1", ProjectID: "P", ItemID: "I12", IssueNumber: 12, Repo: "acme/web", Actor: "alice",
				ActorKind: "human", FromState: "", ToState: "Backlog", Verdict: enforce.VerdictAllowed, Rule: "initial"},
			{At: at(time.Minute), DeliveryID: "d2", ProjectID: "P", ItemID: "I12", IssueNumber: 12, Repo: "acme/web", Actor: "agent-1",
				ActorKind: "agent", FromState: "Backlog", ToState: "Done", Verdict: enforce.VerdictReverted, Rule: "transition",
				Reason: "Backlog → Done is not allowed for agents"},
			{At: at(2 * time.Minute), ProjectID: "P", ItemID: "I13", IssueNumber: 13, Repo: "acme/web", Actor: "ralph-gate[bot]",
				ActorKind: "app", FromState: "Backlog", ToState: "Research Needed", Verdict: enforce.VerdictAutomated, Cause: "cascade from #12"},
			// Same time as the previous entry: ties are ordered by id.
			{At: at(2 * time.Minute), ProjectID: "P", ItemID: "I12b", IssueNumber: 12, Repo: "acme/api", Actor: "bob",
				ActorKind: "human", ToState: "Backlog", Verdict: enforce.VerdictAdopted},
			// Appended last but happened earlier.
			{At: at(-time.Minute), ProjectID: "P", ItemID: "I13", IssueNumber: 13, Repo: "acme/web", Actor: "carol",
				ActorKind: "bypass", FromState: "Done", ToState: "Backlog", Verdict: enforce.VerdictAllowed, Rule: "bypass"},
		}
		ids := make([]int64, len(entries))
		for i, e := range entries {
			id, err := s.AppendAudit(ctx, e)
			if err != nil {
				t.Fatal(err)
			}
			if i > 0 && id <= ids[i-1] {
				t.Errorf("audit id %d not increasing after %d", id, ids[i-1])
			}
			ids[i] = id
			entries[i].ID = id
		}
		if _, err := s.AppendAudit(ctx, enforce.AuditEntry{Verdict: "maybe"}); err == nil {
			t.Error("AppendAudit with an unknown verdict succeeded")
		}
		tests := []struct {
			name    string
			filter  AuditFilter
			want    []int // indexes into entries, in the expected order
			wantErr bool
		}{
			{"all, oldest first", AuditFilter{}, []int{4, 0, 1, 2, 3}, false},
			{"by issue", AuditFilter{IssueNumber: 12}, []int{0, 1, 3}, false},
			{"by issue and repo", AuditFilter{IssueNumber: 12, Repo: "acme/web"}, []int{0, 1}, false},
			{"by item", AuditFilter{ItemID: "I13"}, []int{4, 2}, false},
			{"since (inclusive)", AuditFilter{Since: at(time.Minute)}, []int{1, 2, 3}, false},
			{"since, non-UTC zone", AuditFilter{Since: at(time.Minute).In(time.FixedZone("X", -5*3600))}, []int{1, 2, 3}, false},
			{"limit keeps the newest", AuditFilter{Limit: 2}, []int{2, 3}, false},
			{"issue and limit", AuditFilter{IssueNumber: 12, Limit: 2}, []int{1, 3}, false},
			{"issue, since and limit", AuditFilter{IssueNumber: 13, Since: at(-time.Hour), Limit: 10}, []int{4, 2}, false},
			{"no match", AuditFilter{IssueNumber: 99}, nil, false},
			{"negative limit", AuditFilter{Limit: -1}, nil, true},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got, err := s.QueryAudit(ctx, tt.filter)
				if (err != nil) != tt.wantErr {
					t.Fatalf("QueryAudit err = %v, wantErr %v", err, tt.wantErr)
				}
				var want []enforce.AuditEntry
				for _, i := range tt.want {
					want = append(want, entries[i])
				}
				if !slices.Equal(got, want) {
					t.Errorf("QueryAudit(%+v) =\n%+v\nwant\n%+v", tt.filter, got, want)
				}
			})
		}
	})
}

func TestViolationComments(t *testing.T) {
	forEachDriver(t, func(t *testing.T, tg target) {
		ctx := t.Context()
		s := tg.open(t)
		if _, err := s.GetViolationComment(ctx, "acme/web", 12); !errors.Is(err, enforce.ErrNotFound) {
			t.Errorf("missing comment error = %v, want ErrNotFound", err)
		}
		versions := []enforce.ViolationComment{
			{CommentID: 1001, NodeID: "IC_1", Count: 1, UpdatedAt: at(0), Body: "<!-- ralph-transition: {} -->\nfirst"},
			{CommentID: 1001, NodeID: "IC_1", Count: 2, UpdatedAt: at(time.Second), Body: "<!-- ralph-transition: {} -->\nsecond ✓"},
		}
		for _, c := range versions {
			if err := s.PutViolationComment(ctx, "acme/web", 12, c); err != nil {
				t.Fatal(err)
			}
			got, err := s.GetViolationComment(ctx, "acme/web", 12)
			if err != nil || got != c {
				t.Errorf("GetViolationComment = %+v, %v; want %+v", got, err, c)
			}
		}
		if _, err := s.GetViolationComment(ctx, "acme/api", 12); !errors.Is(err, enforce.ErrNotFound) {
			t.Errorf("other repo: error = %v, want ErrNotFound", err)
		}
		if err := s.PutViolationComment(ctx, "", 1, versions[0]); err == nil {
			t.Error("PutViolationComment without repo succeeded")
		}
	})
}

func TestCursors(t *testing.T) {
	forEachDriver(t, func(t *testing.T, tg target) {
		ctx := t.Context()
		s := tg.open(t)
		if _, err := s.GetCursor(ctx, "reconcile/PVT_1"); !errors.Is(err, enforce.ErrNotFound) {
			t.Errorf("missing cursor error = %v, want ErrNotFound", err)
		}
		for _, v := range []string{"Y3Vyc29yOjEwMA==", "", "done"} {
			if err := s.PutCursor(ctx, "reconcile/PVT_1", v); err != nil {
				t.Fatal(err)
			}
			if got, err := s.GetCursor(ctx, "reconcile/PVT_1"); err != nil || got != v {
				t.Errorf("GetCursor = %q, %v; want %q", got, err, v)
			}
		}
		if err := s.PutCursor(ctx, "", "x"); err == nil {
			t.Error("PutCursor with an empty name succeeded")
		}
	})
}

func TestTimesRoundTripUTC(t *testing.T) {
	forEachDriver(t, func(t *testing.T, tg target) {
		ctx := t.Context()
		s := tg.open(t)
		zone := time.FixedZone("UTC+5:30", 5*3600+1800)
		tests := []struct {
			name string
			in   time.Time
		}{
			{"nanoseconds in another zone", time.Date(2025, 6, 1, 23, 59, 59, 123456789, zone)},
			{"local", time.Date(2024, 2, 29, 12, 0, 0, 1000, time.Local)},
			{"whole second UTC", time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)},
		}
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				want := tt.in.UTC().Truncate(time.Microsecond)
				check := func(what string, got time.Time) {
					t.Helper()
					if !got.Equal(want) || got.Location() != time.UTC || got != want {
						t.Errorf("%s = %v (%v), want %v in UTC", what, got, got.Location(), want)
					}
				}
				id := fmt.Sprintf("I%d", i)
				seed(t, s, enforce.Record{ItemID: id, LegalAt: tt.in, LockHolder: "a", LockSince: tt.in, UpdatedAt: tt.in})
				it, err := s.GetItem(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				check("item.UpdatedAt", it.UpdatedAt)
				check("item.LockSince", it.LockSince)
				check("item.LegalAt", it.LegalAt)

				if _, err := s.AppendAudit(ctx, enforce.AuditEntry{At: tt.in, ItemID: id, Verdict: enforce.VerdictAllowed}); err != nil {
					t.Fatal(err)
				}
				es, err := s.QueryAudit(ctx, AuditFilter{ItemID: id})
				if err != nil || len(es) != 1 {
					t.Fatalf("QueryAudit = %v, %v", es, err)
				}
				check("audit.At", es[0].At)

				if err := s.PutViolationComment(ctx, "o/r", i+1, enforce.ViolationComment{UpdatedAt: tt.in}); err != nil {
					t.Fatal(err)
				}
				c, err := s.GetViolationComment(ctx, "o/r", i+1)
				if err != nil {
					t.Fatal(err)
				}
				check("comment.UpdatedAt", c.UpdatedAt)
			})
		}
		// Times left zero are filled with "now", in UTC.
		before := time.Now().Add(-time.Second)
		seed(t, s, enforce.Record{ItemID: "now"})
		it, _ := s.GetItem(ctx, "now")
		if it.UpdatedAt.Location() != time.UTC || it.UpdatedAt.Before(before) || !it.LockSince.IsZero() || !it.LegalAt.IsZero() {
			t.Errorf("defaulted times: updated %v, lock since %v", it.UpdatedAt, it.LockSince)
		}
	})
}

// A transaction's view (CommitStep's) writes inside the transaction only, and
// its Close leaves the store open.
func TestInTx(t *testing.T) {
	forEachDriver(t, func(t *testing.T, tg target) {
		ctx := t.Context()
		s := tg.open(t)
		for _, commit := range []bool{false, true} {
			tx, err := s.DB().BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			ts := s.inTx(tx)
			id := fmt.Sprintf("d-commit-%v", commit)
			if _, err := ts.AppendAudit(ctx, enforce.AuditEntry{DeliveryID: id, Verdict: enforce.VerdictIgnored}); err != nil {
				t.Fatal(err)
			}
			if err := ts.Close(); err != nil { // no-op on a tx view
				t.Fatal(err)
			}
			if commit {
				err = tx.Commit()
			} else {
				err = tx.Rollback()
			}
			if err != nil {
				t.Fatal(err)
			}
			es, err := s.QueryAudit(ctx, AuditFilter{})
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, e := range es {
				if e.DeliveryID == id {
					n++
				}
			}
			if want := map[bool]int{false: 0, true: 1}[commit]; n != want {
				t.Errorf("commit=%v: %d audit entries, want %d", commit, n, want)
			}
		}
		if err := s.Ping(ctx); err != nil { // the tx view's Close left the store open
			t.Fatal(err)
		}
	})
}

func TestPostgresPool(t *testing.T) {
	t.Parallel()
	s := newTarget(t, DriverPostgres).open(t)
	if s.Pool() == nil {
		t.Fatal("Pool() is nil for Postgres")
	}
	if err := s.Pool().Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(t.Context(), DriverPostgres, "postgres://%zz"); err == nil {
		t.Error("Open with a malformed DSN succeeded")
	}
}

// PendingItemsBefore names the items whose history before a time is not settled: a report
// from before it not judged (but not the app's own), or a step from before it whose automation
// has not run. The item asking is left out.
func TestPendingItemsBefore(t *testing.T) {
	forEachDriver(t, func(t *testing.T, tg target) {
		ctx := t.Context()
		s := tg.open(t)
		t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
		report := func(delivery, item, actor string, at time.Time) {
			t.Helper()
			if _, err := s.RecordObservation(ctx, enforce.Observation{DeliveryID: delivery, ItemID: item, FromKnown: true,
				From: "Backlog", To: "Research Needed", Actor: actor, At: at, ReceivedAt: at}); err != nil {
				t.Fatal(err)
			}
		}
		report("d1", "A", "alice", t0)                    // before: A
		report("d2", "B", "alice", t0.Add(2*time.Second)) // after
		report("d3", "C", "ralph-gate[bot]", t0)          // ours: left out
		report("d4", "SELF", "alice", t0)                 // the asking item: left out
		rec := enforce.Record{ItemID: "D", ProjectID: "PVT_1", LastLegalState: "Ready for Plan", LegalAt: t0, AutomateState: "Ready for Plan"}
		if ok, err := s.CompareAndSetItem(ctx, rec, 0); !ok || err != nil {
			t.Fatal(ok, err)
		}
		rec = enforce.Record{ItemID: "E", ProjectID: "PVT_1", LastLegalState: "Ready for Plan", LegalAt: t0.Add(5 * time.Second), AutomateState: "Ready for Plan"}
		if ok, err := s.CompareAndSetItem(ctx, rec, 0); !ok || err != nil {
			t.Fatal(ok, err)
		}
		got, err := s.PendingItemsBefore(ctx, t0.Add(time.Second), "SELF", "ralph-gate[bot]")
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		if !slices.Equal(got, []string{"A", "D"}) {
			t.Fatalf("got %v, want [A D]", got)
		}
	})
}

// Whom a lock was taken over from (workflow.locks.ttl) is kept with the record, and forgotten
// when the lock changes hands the ordinary way: a claim by someone else, a release.
func TestLockTakenFrom(t *testing.T) {
	forEachDriver(t, func(t *testing.T, tg target) {
		ctx := t.Context()
		s := tg.open(t)
		seed(t, s, enforce.Record{ProjectID: "P", ItemID: "I", IssueNumber: 3, LastLegalState: "Research in Progress",
			LockHolder: "agent-b", LockSince: at(0), LockTakenFrom: "agent-a"})
		check := func(step, holder, from string) {
			t.Helper()
			got, err := s.GetItem(ctx, "I")
			if err != nil {
				t.Fatal(err)
			}
			if got.LockHolder != holder || got.LockTakenFrom != from {
				t.Errorf("%s: holder %q taken from %q, want %q from %q", step, got.LockHolder, got.LockTakenFrom, holder, from)
			}
		}
		check("stored", "agent-b", "agent-a")
		if ok, err := s.ClaimLock(ctx, "I", "agent-b", at(time.Minute)); !ok || err != nil {
			t.Fatal(ok, err)
		}
		check("the holder claims again", "agent-b", "agent-a")
		if ok, err := s.ReleaseLock(ctx, "I", "agent-b", at(2*time.Minute)); !ok || err != nil {
			t.Fatal(ok, err)
		}
		check("released", "", "")
		seed(t, s, enforce.Record{ProjectID: "P", ItemID: "I", IssueNumber: 3, LastLegalState: "Research in Progress",
			LockHolder: "agent-b", LockSince: at(0), LockTakenFrom: "agent-a"})
		if ok, err := s.ReleaseLock(ctx, "I", "", at(3*time.Minute)); !ok || err != nil {
			t.Fatal(ok, err)
		}
		if ok, err := s.ClaimLock(ctx, "I", "agent-c", at(4*time.Minute)); !ok || err != nil {
			t.Fatal(ok, err)
		}
		check("claimed by another", "agent-c", "")
	})
}
