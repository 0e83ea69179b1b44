package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
)

// ErrNoStore is wrapped by OpenReadOnly's error when the DSN names no ralph-gate store: no
// SQLite file there (or not even its directory), or a database without ralph-gate's tables.
var ErrNoStore = errors.New("no ralph-gate store")

// SchemaBehindError is CheckSchema's error for a store whose newest migration is older than
// this build's: the service that writes it runs an older ralph-gate, or has not started
// since an upgrade (Open migrates; OpenReadOnly never does).
type SchemaBehindError struct {
	Applied int // the store's newest migration
	Known   int // this build's newest migration (SchemaVersion)
}

func (e *SchemaBehindError) Error() string {
	return fmt.Sprintf("store: the schema is at version %d, older than this build's %d (it is migrated when a ralph-gate of this version starts serving with it)",
		e.Applied, e.Known)
}

// readOnlyPostgresConns bounds the pool of a read-only store unless the DSN sets
// pool_max_conns: a reading command needs one or two connections, not the service's pool.
const readOnlyPostgresConns = 2

// OpenReadOnly opens an existing store for reading, for commands that only read (audit). It
// never creates anything and never migrates:
//
//   - SQLite: the file must exist (it is opened with mode=ro; no directory or file is
//     created, no mode is changed);
//   - PostgreSQL: every transaction is read-only (default_transaction_read_only), so no
//     statement can write or change the schema.
//
// A missing store, or a database without ralph-gate's tables, is an error wrapping
// ErrNoStore. A store with an older schema opens; CheckSchema says so.
func OpenReadOnly(ctx context.Context, driver, dsn string) (*Store, error) {
	s, err := connect(ctx, driver, dsn, true)
	if err != nil {
		return nil, err
	}
	if err := s.checkTables(ctx, dsn); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

func openSQLiteReadOnly(ctx context.Context, dsn string) (*Store, error) {
	if strings.TrimSpace(dsn) == "" {
		return nil, fmt.Errorf("store: sqlite needs a database file path as dsn")
	}
	path, _ := sqliteFilePath(dsn)
	if path == "" {
		return nil, fmt.Errorf("store: %w: %q names no database file (an in-memory database holds no store)", ErrNoStore, dsn)
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		dir := filepath.Dir(path)
		if _, derr := os.Stat(dir); errors.Is(derr, fs.ErrNotExist) {
			return nil, fmt.Errorf("store: %w at %s: neither the file nor its directory %s exists", ErrNoStore, path, dir)
		}
		return nil, fmt.Errorf("store: %w at %s: the file does not exist", ErrNoStore, path)
	case err != nil:
		return nil, fmt.Errorf("store: sqlite file: %w", err)
	case fi.IsDir():
		return nil, fmt.Errorf("store: %w at %s: it is a directory, not a database file", ErrNoStore, path)
	}
	full, err := sqliteReadOnlyDSN(dsn)
	if err != nil {
		return nil, err
	}
	conn, err := newSQLiteConnector(full)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	s := &Store{driver: DriverSQLite, db: db, ex: db}
	if err := s.Ping(ctx); err != nil {
		_ = db.Close()
		return nil, err
	}
	return s, nil
}

// sqliteReadOnlyDSN turns a path or "file:" URI into a read-only modernc.org/sqlite DSN:
// always a file: URI with mode=ro (SQLite then neither creates nor writes the file) and
// query_only on, with the store's busy timeout unless the DSN sets one. Unlike sqliteDSN it
// creates no directory and asks for no journal mode (changing it would be a write).
func sqliteReadOnlyDSN(dsn string) (string, error) {
	base, query, _ := strings.Cut(strings.TrimSpace(dsn), "?")
	q, err := url.ParseQuery(query)
	if err != nil {
		return "", fmt.Errorf("store: sqlite dsn query: %w", err)
	}
	if !strings.HasPrefix(base, "file:") {
		abs, err := filepath.Abs(base)
		if err != nil {
			return "", fmt.Errorf("store: sqlite path: %w", err)
		}
		// In a URI, '%', '?' and '#' are syntax; everything else of a path is taken as is.
		base = "file:" + strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(filepath.ToSlash(abs))
	}
	q.Set("mode", "ro")
	busy := q.Get("_busy_timeout") != "" || q.Get("_timeout") != ""
	for _, p := range q["_pragma"] {
		busy = busy || strings.HasPrefix(strings.ToLower(strings.TrimSpace(p)), "busy_timeout")
	}
	if !busy {
		q.Add("_pragma", "busy_timeout("+strconv.FormatInt(sqliteBusyTimeout.Milliseconds(), 10)+")")
	}
	q.Add("_pragma", "query_only(1)")
	return base + "?" + q.Encode(), nil
}

func openPostgresReadOnly(ctx context.Context, dsn string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("store: parse postgres dsn: %w", err)
	}
	if !strings.Contains(dsn, "pool_max_conns") {
		cfg.MaxConns = readOnlyPostgresConns
	}
	// Set at connection start-up: every transaction of every connection is read-only, so
	// the server refuses any write or DDL, whatever a caller runs.
	cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: open postgres: %w", err)
	}
	db := stdlib.OpenDBFromPool(pool)
	s := &Store{driver: DriverPostgres, db: db, pool: pool, ex: db, rebind: &sync.Map{}}
	if err := s.Ping(ctx); err != nil {
		_ = db.Close()
		pool.Close()
		return nil, err
	}
	return s, nil
}

// checkTables refuses a database that holds no ralph-gate store (no schema_migrations table,
// the first thing Open creates), naming where it looked.
func (s *Store) checkTables(ctx context.Context, dsn string) error {
	var (
		found bool
		err   error
		where string
	)
	switch s.driver {
	case DriverSQLite:
		var n int
		err = s.db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'`).Scan(&n)
		found = n > 0
		path, _ := sqliteFilePath(dsn)
		where = path
		if err != nil {
			return fmt.Errorf("store: %s is not a readable SQLite database: %w", where, err)
		}
	default:
		err = s.db.QueryRowContext(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL`).Scan(&found)
		where = "the PostgreSQL database (in its search_path)"
		if err != nil {
			return fmt.Errorf("store: read the postgres catalog: %w", err)
		}
	}
	if !found {
		return fmt.Errorf("store: %w in %s: it has no ralph-gate tables (no schema_migrations)", ErrNoStore, where)
	}
	return nil
}

// CheckSchema returns a *SchemaBehindError when the store's newest migration is older than
// this build's (SchemaVersion), nil when it is as new or newer (migrations only add, so a
// newer store reads as before).
func (s *Store) CheckSchema(ctx context.Context) error {
	applied, err := s.AppliedMigrations(ctx)
	if err != nil {
		return err
	}
	newest := 0
	if len(applied) > 0 {
		newest = applied[len(applied)-1]
	}
	if newest < SchemaVersion() {
		return &SchemaBehindError{Applied: newest, Known: SchemaVersion()}
	}
	return nil
}
