package store

import (
	"container/list"
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"reflect"

	"modernc.org/sqlite"
)

// The SQLite connection keeps its prepared statements.
//
// modernc.org/sqlite compiles the text of every statement it is handed through
// ExecContext or QueryContext and throws the compiled statement away afterwards; the
// store and River send the same few dozen statements thousands of times a second in a
// burst, and compiling them was about a quarter of the process's CPU (measured with
// `ralph-gate bench --cpuprofile`, docs/BENCHMARKS.md). Every SQLite connection the
// store opens is therefore wrapped: a statement is compiled once per connection and
// reset between uses, as a prepared statement in database/sql would be, for every
// caller of the *sql.DB (River included) without changing any query.
//
// A statement whose rows are still being read (a query inside a loop over the same
// query's rows) is not reused: that call compiles its own copy, as before. At most
// stmtCacheSize statements are kept; the least recently used is finalized when another
// is added. SQLite recompiles a kept statement itself when the schema changes under it.

// stmtCacheSize bounds the statements one connection keeps (River's and the store's
// distinct statements are about a hundred; queries with lists of varying length make
// more, and those are the ones evicted).
const stmtCacheSize = 256

// cachingConnector opens SQLite connections that keep their statements.
type cachingConnector struct{ base driver.Connector }

// newSQLiteConnector returns a connector for dsn whose connections keep their statements.
func newSQLiteConnector(dsn string) (driver.Connector, error) {
	base, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, fmt.Errorf("store: sqlite dsn: %w", err)
	}
	return cachingConnector{base: base}, nil
}

func (c cachingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.base.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return newCachingConn(conn)
}

func (c cachingConnector) Driver() driver.Driver { return c.base.Driver() }

// sqliteConn is what the wrapper needs of a modernc.org/sqlite connection.
type sqliteConn interface {
	driver.Conn
	driver.ConnPrepareContext
	driver.ConnBeginTx
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// cachedStmt is a kept statement; busy while rows read from it are open.
type cachedStmt struct {
	query string
	stmt  driver.Stmt
	busy  bool
	gone  bool // evicted or the connection closed while busy: finalize when the rows close
}

// cachingConn is one SQLite connection with its kept statements. database/sql uses a
// connection from one goroutine at a time, so it needs no lock of its own.
type cachingConn struct {
	sqliteConn
	byQuery  map[string]*list.Element // of *cachedStmt
	lru      *list.List               // front: most recently used
	size     int
	compiled int // statements compiled to be kept (for tests)
}

func newCachingConn(c driver.Conn) (*cachingConn, error) {
	sc, ok := c.(sqliteConn)
	if !ok {
		_ = c.Close()
		return nil, fmt.Errorf("store: sqlite connection %T lacks a method the store uses", c)
	}
	return &cachingConn{sqliteConn: sc, byQuery: map[string]*list.Element{}, lru: list.New(), size: stmtCacheSize}, nil
}

// take returns the kept statement for query, compiling and keeping it when there is none,
// or nil when the kept one is busy (the caller then runs the query uncached).
func (c *cachingConn) take(ctx context.Context, query string) (*cachedStmt, error) {
	if e, ok := c.byQuery[query]; ok {
		cs := e.Value.(*cachedStmt)
		if cs.busy {
			return nil, nil
		}
		c.lru.MoveToFront(e)
		return cs, nil
	}
	st, err := c.sqliteConn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.compiled++
	cs := &cachedStmt{query: query, stmt: st}
	c.byQuery[query] = c.lru.PushFront(cs)
	for c.lru.Len() > c.size {
		c.evict(c.lru.Back())
	}
	return cs, nil
}

// evict forgets a kept statement and finalizes it, or leaves that to its rows when busy.
func (c *cachingConn) evict(e *list.Element) error {
	cs := c.lru.Remove(e).(*cachedStmt)
	delete(c.byQuery, cs.query)
	if cs.busy {
		cs.gone = true
		return nil
	}
	return cs.stmt.Close()
}

func (c *cachingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	cs, err := c.take(ctx, query)
	if err != nil || cs == nil {
		return c.sqliteConn.ExecContext(ctx, query, args)
	}
	return cs.stmt.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (c *cachingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	cs, err := c.take(ctx, query)
	if err != nil || cs == nil {
		return c.sqliteConn.QueryContext(ctx, query, args)
	}
	rows, err := cs.stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		return nil, err
	}
	cs.busy = true
	return newCachedRows(rows, cs), nil
}

// Close finalizes the kept statements (a busy one when its rows close), then closes the
// connection.
func (c *cachingConn) Close() error {
	var errs []error
	for c.lru.Len() > 0 {
		errs = append(errs, c.evict(c.lru.Front()))
	}
	errs = append(errs, c.sqliteConn.Close())
	return errors.Join(errs...)
}

// cachedRows releases its statement for reuse when closed.
type cachedRows struct {
	driver.Rows
	types columnTypes
	cs    *cachedStmt
}

// columnTypes is what modernc.org/sqlite's rows tell of their columns; database/sql asks
// for them through sql.Rows.ColumnTypes.
type columnTypes interface {
	driver.RowsColumnTypeDatabaseTypeName
	driver.RowsColumnTypeLength
	driver.RowsColumnTypeNullable
	driver.RowsColumnTypePrecisionScale
	driver.RowsColumnTypeScanType
}

func newCachedRows(r driver.Rows, cs *cachedStmt) *cachedRows {
	t, _ := r.(columnTypes)
	return &cachedRows{Rows: r, types: t, cs: cs}
}

func (r *cachedRows) Close() error {
	err := r.Rows.Close()
	if r.cs != nil {
		r.cs.busy = false
		if r.cs.gone {
			err = errors.Join(err, r.cs.stmt.Close())
		}
		r.cs = nil
	}
	return err
}

func (r *cachedRows) ColumnTypeDatabaseTypeName(i int) string {
	if r.types == nil {
		return ""
	}
	return r.types.ColumnTypeDatabaseTypeName(i)
}

func (r *cachedRows) ColumnTypeLength(i int) (int64, bool) {
	if r.types == nil {
		return 0, false
	}
	return r.types.ColumnTypeLength(i)
}

func (r *cachedRows) ColumnTypeNullable(i int) (bool, bool) {
	if r.types == nil {
		return false, false
	}
	return r.types.ColumnTypeNullable(i)
}

func (r *cachedRows) ColumnTypePrecisionScale(i int) (int64, int64, bool) {
	if r.types == nil {
		return 0, 0, false
	}
	return r.types.ColumnTypePrecisionScale(i)
}

func (r *cachedRows) ColumnTypeScanType(i int) reflect.Type {
	if r.types == nil {
		return reflect.TypeFor[any]()
	}
	return r.types.ColumnTypeScanType(i)
}
