package store

import (
	"cmp"
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// holdMigrationLock takes the migration lock on a session of its own, as another replica
// would; release ends that session (and is called at the end of the test at the latest).
func holdMigrationLock(t *testing.T, tg target) (pid uint32, release func()) {
	t.Helper()
	cfg, err := pgx.ParseConfig(tg.dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["application_name"] = "another replica"
	conn, err := pgx.ConnectConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(t.Context(), `SELECT pg_advisory_lock($1)`, MigrationLockKey); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() { once.Do(func() { _ = conn.Close(context.Background()) }) }
	t.Cleanup(release)
	return conn.PgConn().PID(), release
}

// lockHolders lists the backend pids holding the migration lock.
func lockHolders(ctx context.Context, t *testing.T, s *Store) []int32 {
	t.Helper()
	key := uint64(MigrationLockKey)
	rows, err := s.pool.Query(ctx, `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted
		AND classid = $1 AND objid = $2 AND objsubid = 1`, uint32(key>>32), uint32(key))
	if err != nil {
		t.Fatal(err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		t.Fatal(err)
	}
	return pids
}

// WithMigrationLock runs fn holding the lock and returns fn's error; on PostgreSQL it waits
// for another session's hold, at most the given time, and then fails naming the key and the
// holder, without running fn.
func TestWithMigrationLock(t *testing.T) {
	t.Parallel()
	errMigrate := errors.New("migration failed")
	tests := []struct {
		name    string
		driver  string
		held    bool          // another session holds the lock throughout
		wait    time.Duration // the most WithMigrationLock waits; 0: 30 s
		fnErr   error
		wantErr []string // substrings of the error; none: fn's error itself
		wantFn  bool
	}{
		{name: "sqlite runs fn", driver: DriverSQLite, wantFn: true},
		{name: "sqlite returns fn's error", driver: DriverSQLite, fnErr: errMigrate, wantFn: true},
		{name: "postgres runs fn holding the lock", driver: DriverPostgres, wantFn: true},
		{name: "postgres returns fn's error and releases the lock", driver: DriverPostgres, fnErr: errMigrate, wantFn: true},
		{name: "postgres gives up on a holder that does not let go", driver: DriverPostgres, held: true, wait: 300 * time.Millisecond,
			wantErr: []string{"store: waited 300ms for the migration lock (PostgreSQL advisory lock 8243677942399525236), still held by PostgreSQL backend pid ",
				`application "another replica"`, "another replica is migrating the database, or is stuck doing so", context.DeadlineExceeded.Error()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tg := newTarget(t, tt.driver)
			s := tg.open(t)
			ctx := t.Context()
			var holder uint32
			if tt.held {
				holder, _ = holdMigrationLock(t, tg)
			}
			var (
				called bool
				inside []int32
			)
			// Other tests of the package take the lock too (it is one for the database): only
			// the case that waits on purpose waits briefly.
			wait := cmp.Or(tt.wait, 30*time.Second)
			start := time.Now()
			err := s.withMigrationLock(ctx, wait, func(ctx context.Context) error {
				called = true
				if s.pool != nil {
					inside = lockHolders(ctx, t, s)
				}
				return tt.fnErr
			})
			if called != tt.wantFn {
				t.Errorf("fn called: %v, want %v", called, tt.wantFn)
			}
			switch {
			case len(tt.wantErr) > 0:
				if err == nil {
					t.Fatal("no error")
				}
				t.Logf("error: %v", err)
				for _, want := range tt.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q lacks %q", err, want)
					}
				}
				if want := "pid " + strconv.FormatUint(uint64(holder), 10) + " "; !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name the holder (%s)", err, want)
				}
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("error %v is not context.DeadlineExceeded", err)
				}
				if d := time.Since(start); d > wait+10*time.Second {
					t.Errorf("gave up after %s, want about %s", d, wait)
				}
			case err != tt.fnErr:
				t.Errorf("error %v, want fn's %v", err, tt.fnErr)
			}
			if s.pool == nil || !called {
				return
			}
			// While fn ran, exactly one session held the lock; once it returned, that one no longer.
			if len(inside) != 1 {
				t.Fatalf("sessions holding the lock while fn ran: %v, want one", inside)
			}
			for _, pid := range lockHolders(ctx, t, s) {
				if pid == inside[0] {
					t.Errorf("session %d still holds the lock after WithMigrationLock returned", pid)
				}
			}
		})
	}
}

// Replicas on one PostgreSQL database take the lock in turn: never two at once.
func TestWithMigrationLockOneAtATime(t *testing.T) {
	t.Parallel()
	tg := newTarget(t, DriverPostgres)
	const replicas = 6
	stores := make([]*Store, replicas)
	for i := range stores {
		stores[i] = tg.open(t)
	}
	var (
		inside, most, runs atomic.Int32
		wg                 sync.WaitGroup
		start              = make(chan struct{})
		errs               = make([]error, replicas)
	)
	for i, s := range stores {
		wg.Go(func() {
			<-start
			errs[i] = s.WithMigrationLock(t.Context(), func(context.Context) error {
				n := inside.Add(1)
				defer inside.Add(-1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				runs.Add(1)
				time.Sleep(30 * time.Millisecond)
				return nil
			})
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("replica %d: %v", i, err)
		}
	}
	if runs.Load() != replicas || most.Load() != 1 {
		t.Errorf("%d runs, at most %d at once; want %d runs, one at a time", runs.Load(), most.Load(), replicas)
	}
}

// Open migrates under the migration lock: it waits while another replica holds it, and
// migrates once it is released.
func TestOpenWaitsForTheMigrationLock(t *testing.T) {
	t.Parallel()
	tg := newTarget(t, DriverPostgres)
	_, release := holdMigrationLock(t, tg)
	type opened struct {
		s   *Store
		err error
	}
	done := make(chan opened, 1)
	go func() {
		s, err := Open(t.Context(), tg.driver, tg.dsn)
		done <- opened{s, err}
	}()
	select {
	case o := <-done:
		if o.s != nil {
			o.s.Close()
		}
		t.Fatalf("Open returned (%v) while another replica held the migration lock", o.err)
	case <-time.After(500 * time.Millisecond):
	}
	release()
	select {
	case o := <-done:
		if o.err != nil {
			t.Fatalf("Open after the lock was released: %v", o.err)
		}
		defer o.s.Close()
		if v, err := o.s.AppliedMigrations(t.Context()); err != nil || len(v) == 0 || v[len(v)-1] != SchemaVersion() {
			t.Errorf("applied migrations %v (%v), want up to %d", v, err, SchemaVersion())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Open did not return after the lock was released")
	}
}

// The key documented in the code and docs is the constant's value.
func TestMigrationLockKeyDocumented(t *testing.T) {
	t.Parallel()
	key := uint64(MigrationLockKey)
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"decimal", strconv.FormatInt(MigrationLockKey, 10), "8243677942399525236"},
		{"bytes", string([]byte{byte(key >> 56), byte(key >> 48), byte(key >> 40), byte(key >> 32), byte(key >> 24), byte(key >> 16), byte(key >> 8), byte(key)}), "rgmigrat"},
		{"pg_locks classid", strconv.FormatUint(key>>32, 10), "1919380841"},
		{"pg_locks objid", strconv.FormatUint(uint64(uint32(key)), 10), "1735549300"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, tt.got, tt.want)
		}
	}
}
