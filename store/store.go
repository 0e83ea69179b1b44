// Package store persists what enforcement needs to remember: the last legal
// Workflow State of every item (with its lock holder and an optimistic
// concurrency version), the audit log of every decision, the reported
// changes and their judgements, the violation comments used for coalescing and
// small key-value cursors for the reconciler.
//
// Two drivers sit behind the one Store type and share every query:
//
//   - "sqlite" (the embedded default): modernc.org/sqlite, pure Go. The DSN is
//     a file path (or a "file:" URI), never a URL or libpq settings. The file
//     is created with mode 0600, or restricted to it (its -wal and -shm files
//     follow it); its directory must exist (Open creates no directory). The
//     database runs in WAL mode with a busy timeout, foreign keys on and
//     IMMEDIATE transactions; the pool holds a single connection, as River
//     recommends for SQLite, which keeps its compiled statements (stmtcache.go).
//   - "postgres": pgx v5. The DSN is anything pgx accepts (URL or key=value),
//     not a file path. A pgxpool.Pool backs a database/sql handle, so the Store
//     and River (via riverpgxv5) can share one pool of connections.
//
// Open runs the versioned migrations; several replicas may start at once (an
// advisory lock on Postgres, an IMMEDIATE transaction on SQLite serialise
// them). All times are stored in UTC with microsecond precision (the
// resolution of a Postgres timestamptz, applied to both drivers so they
// behave alike) and are returned in UTC.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	dsninfo "github.com/ralph-gate/ralph-gate/internal/dsn"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/rs/zerolog"
)

// Driver names accepted by Open.
const (
	DriverSQLite   = "sqlite"
	DriverPostgres = "postgres"
)

// sqliteBusyTimeout is how long an SQLite statement waits for a lock held by
// another connection or process before failing with SQLITE_BUSY.
const sqliteBusyTimeout = 10 * time.Second

// execer is what *sql.DB and *sql.Tx have in common.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Store is the persistence layer. It is safe for concurrent use.
type Store struct {
	driver string
	db     *sql.DB
	pool   *pgxpool.Pool // nil for SQLite
	ex     execer        // db, or CommitStep's transaction (see inTx)
	tx     bool          // true for a transaction's view (inTx)
	rebind *sync.Map     // query with '?' placeholders -> Postgres '$n' form
}

// Open connects to the database selected by driver ("sqlite", the default when
// empty, or "postgres") and dsn, and brings its schema up to date.
func Open(ctx context.Context, driver, dsn string) (*Store, error) {
	s, err := connect(ctx, driver, dsn, false)
	if err != nil {
		return nil, err
	}
	// Under the migration lock: replicas that start together migrate one at a time.
	if err := s.WithMigrationLock(ctx, s.migrate); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// connect opens the driver's database once the DSN is known to suit it: for reading only
// (OpenReadOnly) or to read and write (Open).
func connect(ctx context.Context, driver, dsn string, readOnly bool) (*Store, error) {
	switch strings.ToLower(strings.TrimSpace(driver)) {
	case "", DriverSQLite, "sqlite3":
		if err := checkDSN(DriverSQLite, dsn); err != nil {
			return nil, err
		}
		if readOnly {
			return openSQLiteReadOnly(ctx, dsn)
		}
		return openSQLite(ctx, dsn)
	case DriverPostgres, "postgresql", "pgx":
		if err := checkDSN(DriverPostgres, dsn); err != nil {
			return nil, err
		}
		if readOnly {
			return openPostgresReadOnly(ctx, dsn)
		}
		return openPostgres(ctx, dsn)
	}
	return nil, fmt.Errorf("store: unknown driver %q (want %q or %q)", driver, DriverSQLite, DriverPostgres)
}

func openSQLite(ctx context.Context, dsn string) (*Store, error) {
	full, err := sqliteDSN(dsn)
	if err != nil {
		return nil, err
	}
	if err := checkSQLiteDir(dsn); err != nil {
		return nil, err
	}
	if err := secureSQLiteFile(ctx, dsn); err != nil {
		return nil, err
	}
	conn, err := newSQLiteConnector(full)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(conn)
	// One connection: SQLite allows a single writer, River recommends it, and
	// it rules out SQLITE_BUSY between connections of this process. Other
	// processes (e.g. `ralph-gate audit`) wait up to the busy timeout.
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxIdleTime(0)
	db.SetConnMaxLifetime(0)
	s := &Store{driver: DriverSQLite, db: db, ex: db}
	if err := s.Ping(ctx); err != nil {
		_ = db.Close()
		return nil, err
	}
	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("store: sqlite journal_mode: %w", err)
	}
	if !strings.EqualFold(mode, "wal") && !strings.Contains(dsn, "journal_mode") {
		_ = db.Close()
		return nil, fmt.Errorf("store: sqlite journal_mode is %q, want wal", mode)
	}
	var fk int
	if err := db.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&fk); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("store: sqlite foreign_keys: %w", err)
	}
	if fk != 1 && !strings.Contains(dsn, "foreign_keys") {
		_ = db.Close()
		return nil, fmt.Errorf("store: sqlite foreign_keys is off")
	}
	return s, nil
}

// NoDirectoryError is Open's error for an SQLite store whose directory does not exist. Open
// creates the database file on a first start, never its directory: a mistyped path
// (/nonexistent/dir/rg.db) once became a new directory and an empty store, and the service ran
// on it instead of refusing.
type NoDirectoryError struct {
	Dir  string // the missing directory, absolute
	Path string // the database file, as the DSN names it
}

func (e *NoDirectoryError) Error() string {
	return fmt.Sprintf("store: the directory %s of the SQLite store %s does not exist (ralph-gate creates the database file on its first start, never its directory): create the directory, or fix store.dsn",
		e.Dir, e.Path)
}

// SQLitePath is the database file an SQLite DSN names (a path, or a file: URI's path), as
// given; "" when it names no local file (an in-memory database, a remote file: URI).
func SQLitePath(dsn string) string {
	path, _ := sqliteFilePath(dsn)
	return path
}

// checkSQLiteDir refuses an SQLite DSN whose database file would sit in a directory that does
// not exist (a *NoDirectoryError), or in something that is not a directory.
func checkSQLiteDir(dsn string) error {
	path, _ := sqliteFilePath(dsn)
	if path == "" {
		return nil
	}
	dir := filepath.Dir(path)
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &NoDirectoryError{Dir: dir, Path: path}
	case err != nil:
		return fmt.Errorf("store: the directory of the SQLite store %s: %w", path, err)
	case !fi.IsDir():
		return fmt.Errorf("store: %s, where the SQLite store %s would be, is not a directory: fix store.dsn", dir, path)
	}
	return nil
}

// sqliteDSN turns a path or "file:" URI into a modernc.org/sqlite DSN with the
// pragmas the store relies on. Settings already present in dsn are kept. It creates
// nothing: openSQLite checks the directory (checkSQLiteDir) and creates the file.
func sqliteDSN(dsn string) (string, error) {
	dsn = strings.TrimSpace(dsn)
	if dsn == "" {
		return "", fmt.Errorf("store: sqlite needs a database file path as dsn")
	}
	if dsn == ":memory:" || strings.Contains(dsn, "mode=memory") || strings.HasPrefix(dsn, "file::memory:") {
		// Each connection would see its own empty database, and data would
		// vanish with the process; use a file in a temporary directory.
		return "", fmt.Errorf("store: in-memory sqlite is not supported; use a file path")
	}
	base, query, _ := strings.Cut(dsn, "?")
	q, err := url.ParseQuery(query)
	if err != nil {
		return "", fmt.Errorf("store: sqlite dsn query: %w", err)
	}
	has := func(name string) bool {
		for _, p := range q["_pragma"] {
			if strings.HasPrefix(strings.ToLower(strings.TrimSpace(p)), name) {
				return true
			}
		}
		return false
	}
	if !has("busy_timeout") && q.Get("_busy_timeout") == "" && q.Get("_timeout") == "" {
		q.Add("_pragma", "busy_timeout("+strconv.FormatInt(sqliteBusyTimeout.Milliseconds(), 10)+")")
	}
	if !has("journal_mode") && q.Get("_journal_mode") == "" && q.Get("_journal") == "" {
		q.Add("_pragma", "journal_mode(WAL)")
	}
	if !has("foreign_keys") && q.Get("_foreign_keys") == "" && q.Get("_fk") == "" {
		q.Add("_pragma", "foreign_keys(1)")
	}
	if !has("synchronous") && q.Get("_synchronous") == "" && q.Get("_sync") == "" {
		// NORMAL is durable across application crashes in WAL mode.
		q.Add("_pragma", "synchronous(NORMAL)")
	}
	if q.Get("_txlock") == "" {
		// Take the write lock when a transaction begins, so a transaction
		// never fails half-way trying to upgrade a read lock.
		q.Set("_txlock", "immediate")
	}
	return base + "?" + q.Encode(), nil
}

// checkDSN refuses a DSN that does not suit the driver, before anything is created: given to
// SQLite, a postgres:// URL or libpq key=value settings would become the name of a new file
// (password included); given to Postgres, a file path is a mistake too. app/config refuses
// both at validation; this is the last line of defence for callers that skip it. The DSN is
// never echoed whole: a URL without its user information and query, key=value settings as
// their keys.
func checkDSN(driver, dsn string) error {
	dsn = strings.TrimSpace(dsn)
	if dsn == "" {
		return nil
	}
	scheme := dsninfo.Scheme(dsn)
	switch driver {
	case DriverSQLite:
		switch {
		case scheme != "" && scheme != "file":
			return fmt.Errorf("store: driver sqlite, but the dsn is a %s: URL (%s), not a file path or file: URI; refusing to create a file named after it (use driver postgres for PostgreSQL)",
				scheme, dsninfo.RedactURL(dsn))
		case scheme == "" && !strings.HasPrefix(strings.ToLower(dsn), "file:"):
			if keys := dsninfo.LibpqKeys(dsn); len(keys) > 0 {
				return fmt.Errorf("store: driver sqlite, but the dsn is PostgreSQL key=value settings (%s=…), not a file path; refusing to create a file named after them (use driver postgres)",
					strings.Join(keys, "=…, "))
			}
		}
	case DriverPostgres:
		switch {
		case scheme == "postgres" || scheme == "postgresql":
			if !strings.HasPrefix(dsn[len(scheme):], "://") {
				return fmt.Errorf("store: postgres dsn must start with %s:// (got %s)", scheme, dsninfo.RedactURL(dsn))
			}
		case scheme != "":
			return fmt.Errorf("store: driver postgres, but the dsn is a %s: URL (%s), not a postgres:// URL or key=value settings", scheme, dsninfo.RedactURL(dsn))
		case !dsninfo.IsKeyValue(dsn):
			return fmt.Errorf("store: driver postgres, but the dsn looks like a file path, not a postgres:// URL or key=value settings (use driver sqlite for a file)")
		}
	}
	return nil
}

// sqliteFileMode is the mode of the SQLite database file and, since SQLite gives its -wal,
// -shm and -journal files the database file's mode on unix, of those too: the store holds
// the audit log and the app's state, readable by the service's user only.
const sqliteFileMode fs.FileMode = 0o600

// logInfo logs at info level with the context's logger (a variable so tests can watch it);
// args are key-value pairs.
var logInfo = func(ctx context.Context, msg string, args ...any) {
	zerolog.Ctx(ctx).Info().Fields(args).Msg(msg)
}

// secureSQLiteFile creates the database file of dsn with mode 0600 when it does not exist
// (explicitly, so that neither SQLite's default 0644 nor the umask decides), and restricts an
// existing database file, and its -wal, -shm and -journal files, that the group or others may
// read or write to 0600, logging once that it did. Skipped on Windows, which has no such modes.
func secureSQLiteFile(ctx context.Context, dsn string) error {
	path, readOnly := sqliteFilePath(dsn)
	if path == "" {
		return nil
	}
	if !readOnly {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, sqliteFileMode)
		switch {
		case err == nil:
			if err := f.Close(); err != nil {
				return fmt.Errorf("store: create sqlite file: %w", err)
			}
		case errors.Is(err, fs.ErrExist):
		default:
			return fmt.Errorf("store: create sqlite file: %w", err)
		}
	}
	if runtime.GOOS == "windows" {
		return nil
	}
	var restricted []string
	for _, p := range []string{path, path + "-wal", path + "-shm", path + "-journal"} {
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("store: sqlite file: %w", err)
		}
		if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 == 0 {
			continue
		}
		if err := os.Chmod(p, sqliteFileMode); err != nil {
			return fmt.Errorf("store: %s is readable by others (mode %#o) and could not be restricted to %#o: %w",
				p, fi.Mode().Perm(), sqliteFileMode, err)
		}
		restricted = append(restricted, fmt.Sprintf("%s (was %#o)", filepath.Base(p), fi.Mode().Perm()))
	}
	if len(restricted) > 0 {
		logInfo(ctx, "store: restricted the SQLite files to mode 0600 (owner only)",
			"dir", filepath.Dir(path), "files", strings.Join(restricted, ", "))
	}
	return nil
}

// sqliteFilePath returns the file an SQLite DSN opens (a path, or a file: URI's path,
// percent-decoded), and whether the URI opens it read-only (mode=ro); "" when it names no
// local file.
func sqliteFilePath(dsn string) (path string, readOnly bool) {
	dsn = strings.TrimSpace(dsn)
	base, query, _ := strings.Cut(dsn, "?")
	if !strings.HasPrefix(base, "file:") {
		return base, false
	}
	q, _ := url.ParseQuery(query)
	readOnly = q.Get("mode") == "ro"
	rest, _, _ := strings.Cut(strings.TrimPrefix(base, "file:"), "#")
	if strings.HasPrefix(rest, "//") {
		// file://AUTHORITY/path: SQLite accepts only an empty authority or "localhost".
		authority, p, _ := strings.Cut(rest[2:], "/")
		if authority != "" && authority != "localhost" {
			return "", readOnly
		}
		rest = "/" + p
	}
	if p, err := url.PathUnescape(rest); err == nil {
		rest = p
	}
	if rest == "" || rest == ":memory:" || q.Get("mode") == "memory" {
		return "", readOnly
	}
	return rest, readOnly
}

// defaultPostgresConns is the pool size unless the DSN sets pool_max_conns.
const defaultPostgresConns = 40

func openPostgres(ctx context.Context, dsn string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("store: parse postgres dsn: %w", err)
	}
	if !strings.Contains(dsn, "pool_max_conns") && cfg.MaxConns < defaultPostgresConns {
		// Each worker may hold one connection for its item lock while using another.
		cfg.MaxConns = defaultPostgresConns
	}
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

// Close releases the database handles. It is a no-op on a transaction's view.
func (s *Store) Close() error {
	if s == nil || s.tx {
		return nil
	}
	err := s.db.Close()
	if s.pool != nil {
		s.pool.Close()
	}
	if err != nil {
		return fmt.Errorf("store: close: %w", err)
	}
	return nil
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.db.PingContext(ctx); err != nil {
		return fmt.Errorf("store: ping %s: %w", s.driver, err)
	}
	return nil
}

// Driver reports "sqlite" or "postgres".
func (s *Store) Driver() string { return s.driver }

// DB returns the underlying database handle, e.g. for River's riversqlite
// driver. For SQLite the pool has a single connection: do not call Store
// methods while holding a transaction of it, or
// they will wait for that connection.
func (s *Store) DB() *sql.DB { return s.db }

// Pool returns the pgx pool behind DB for Postgres (for River's riverpgxv5
// driver), or nil for SQLite.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// inTx returns a view of the Store whose methods run inside tx (CommitStep's
// transaction). Committing or rolling back stays the caller's job.
func (s *Store) inTx(tx *sql.Tx) *Store {
	c := *s
	c.ex = tx
	c.tx = true
	return &c
}

// q adapts a query written with '?' placeholders to the driver.
func (s *Store) q(query string) string {
	if s.driver != DriverPostgres {
		return query
	}
	if v, ok := s.rebind.Load(query); ok {
		return v.(string)
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	out := b.String()
	s.rebind.Store(query, out)
	return out
}

func (s *Store) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return s.ex.ExecContext(ctx, s.q(query), args...)
}

func (s *Store) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return s.ex.QueryContext(ctx, s.q(query), args...)
}

func (s *Store) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	return s.ex.QueryRowContext(ctx, s.q(query), args...)
}

// sqliteTimeLayout is fixed-width so that text comparison orders times.
const sqliteTimeLayout = "2006-01-02T15:04:05.000000Z"

// normTime is how every time is stored: UTC, microseconds.
func normTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// t encodes a time argument; the zero time becomes NULL.
func (s *Store) t(tm time.Time) any {
	if tm.IsZero() {
		return nil
	}
	tm = normTime(tm)
	if s.driver == DriverSQLite {
		return tm.Format(sqliteTimeLayout)
	}
	return tm
}

// timeCol scans a time column written by Store.t (NULL -> zero time).
type timeCol struct{ t *time.Time }

func (c timeCol) Scan(v any) error {
	switch x := v.(type) {
	case nil:
		*c.t = time.Time{}
	case time.Time:
		*c.t = x.UTC()
	case string:
		return c.parse(x)
	case []byte:
		return c.parse(string(x))
	default:
		return fmt.Errorf("store: cannot scan %T into a time", v)
	}
	return nil
}

func (c timeCol) parse(v string) error {
	tm, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return fmt.Errorf("store: bad stored time %q: %w", v, err)
	}
	*c.t = tm.UTC()
	return nil
}

func tc(t *time.Time) timeCol { return timeCol{t: t} }

// nowUTC is the default for times callers leave zero.
func nowUTC(t time.Time) time.Time {
	if t.IsZero() {
		return time.Now()
	}
	return t
}

// OpenProblem says why a store would not open, as far as an operator can act on it
// (ClassifyOpenError): commands that check a store before the service starts (doctor) turn it
// into a fix.
type OpenProblem string

// What ClassifyOpenError tells apart.
const (
	// ProblemOther is any other failure: the error's text says what.
	ProblemOther OpenProblem = ""
	// ProblemUnreachable: the database server could not be reached (no such host, connection
	// refused, no answer in time).
	ProblemUnreachable OpenProblem = "unreachable"
	// ProblemCredentials: the server refused the user or its password (or has no pg_hba.conf
	// entry letting it in).
	ProblemCredentials OpenProblem = "credentials"
	// ProblemNoDatabase: the server has no database of the DSN's name.
	ProblemNoDatabase OpenProblem = "no database"
	// ProblemPrivileges: the user may not connect to the database or read it.
	ProblemPrivileges OpenProblem = "privileges"
)

// ClassifyOpenError sorts an error of Open or OpenReadOnly by PostgreSQL's SQLSTATE, or the
// network error that kept the connection from being made, and says why in a few words: the
// server's message with its SQLSTATE (password authentication failed for user "ralph"
// (SQLSTATE 28P01)), or what the network said ("connection refused", "no such host"); ""
// for ProblemOther.
func ClassifyOpenError(err error) (OpenProblem, string) {
	if err == nil {
		return ProblemOther, ""
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		why := fmt.Sprintf("%s (SQLSTATE %s)", pe.Message, pe.Code)
		switch pe.Code {
		case "28P01", "28000": // invalid_password, invalid_authorization_specification
			return ProblemCredentials, why
		case "3D000": // invalid_catalog_name
			return ProblemNoDatabase, why
		case "42501": // insufficient_privilege
			return ProblemPrivileges, why
		}
		return ProblemOther, ""
	}
	var (
		dnsErr *net.DNSError
		opErr  *net.OpError
		netErr net.Error
	)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return ProblemUnreachable, "no answer in time"
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return ProblemUnreachable, "no such host " + dnsErr.Name
	case errors.As(err, &dnsErr):
		return ProblemUnreachable, "DNS lookup failed: " + dnsErr.Err
	case errors.Is(err, syscall.ECONNREFUSED):
		return ProblemUnreachable, "connection refused"
	case errors.As(err, &netErr) && netErr.Timeout():
		return ProblemUnreachable, "timed out"
	case errors.As(err, &opErr):
		return ProblemUnreachable, opErr.Err.Error()
	}
	return ProblemOther, ""
}

// PostgresTarget names the database, the server ("db:5432", or the Unix socket's directory)
// and the user a PostgreSQL DSN connects to, for messages; never the password. ok is false
// when the DSN does not parse.
func PostgresTarget(dsn string) (database, server, user string, ok bool) {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return "", "", "", false
	}
	server = net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
	if strings.HasPrefix(cfg.Host, "/") {
		server = "the Unix socket in " + cfg.Host
	}
	return cfg.Database, server, cfg.User, true
}
