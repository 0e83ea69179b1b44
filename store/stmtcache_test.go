package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
)

// openCached opens an SQLite file through the statement-keeping connector, on one
// connection as the store does.
func openCached(t *testing.T) *sql.DB {
	t.Helper()
	dsn, err := sqliteDSN(filepath.Join(t.TempDir(), "cache.db"))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := newSQLiteConnector(dsn)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(1)
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	mustExec(t, db, "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)")
	return db
}

func mustExec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.ExecContext(t.Context(), q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// cacheState reports how many statements the connection compiled to keep and how many it keeps.
func cacheState(t *testing.T, db *sql.DB, setSize int) (compiled, kept int) {
	t.Helper()
	c, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Raw(func(dc any) error {
		cc := dc.(*cachingConn)
		if setSize > 0 {
			cc.size = setSize
		}
		compiled, kept = cc.compiled, cc.lru.Len()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return compiled, kept
}

func queryIDs(t *testing.T, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, query string, args ...any) []int {
	t.Helper()
	rows, err := q.QueryContext(t.Context(), query, args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var id int
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		out = append(out, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestStatementsAreCompiledOnce(t *testing.T) {
	db := openCached(t)
	before, _ := cacheState(t, db, 0)
	for i := range 100 {
		mustExec(t, db, "INSERT INTO t (id, name) VALUES (?, ?)", i+1, "n"+string(rune('a'+i%26))+string(rune('0'+i/26)))
		if got := queryIDs(t, db, "SELECT id FROM t WHERE id >= ? ORDER BY id", i+1); len(got) != 1 || got[0] != i+1 {
			t.Fatalf("row %d: got %v", i+1, got)
		}
	}
	after, kept := cacheState(t, db, 0)
	if after-before != 2 {
		t.Errorf("compiled %d statements for 2 distinct ones run 100 times each", after-before)
	}
	if kept < 2 {
		t.Errorf("keeps %d statements, want at least 2", kept)
	}
}

// A query run while rows of the same query are still open (in one transaction, so on one
// connection) gets its own statement; the kept one is reused once its rows close.
func TestSameQueryWhileItsRowsAreOpen(t *testing.T) {
	db := openCached(t)
	for i := 1; i <= 3; i++ {
		mustExec(t, db, "INSERT INTO t (id, name) VALUES (?, ?)", i, string(rune('a'+i)))
	}
	const q = "SELECT id FROM t WHERE id >= ? ORDER BY id"
	tx, err := db.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	outer, err := tx.QueryContext(t.Context(), q, 1)
	if err != nil {
		t.Fatal(err)
	}
	var got [][]int
	for outer.Next() {
		var id int
		if err := outer.Scan(&id); err != nil {
			t.Fatal(err)
		}
		got = append(got, append([]int{id}, queryIDs(t, tx, q, id)...))
	}
	if err := outer.Close(); err != nil {
		t.Fatal(err)
	}
	want := [][]int{{1, 1, 2, 3}, {2, 2, 3}, {3, 3}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if len(got[i]) != len(want[i]) {
			t.Fatalf("got %v, want %v", got, want)
		}
		for j := range want[i] {
			if got[i][j] != want[i][j] {
				t.Fatalf("got %v, want %v", got, want)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	before, _ := cacheState(t, db, 0)
	queryIDs(t, db, q, 1)
	if after, _ := cacheState(t, db, 0); after != before {
		t.Errorf("the kept statement was compiled again (%d → %d) after its rows closed", before, after)
	}
}

// The least recently used statement is finalized when another is kept; one whose rows are
// still open is finalized when they close, after giving every row.
func TestEvictionKeepsOpenRows(t *testing.T) {
	db := openCached(t)
	for i := 1; i <= 5; i++ {
		mustExec(t, db, "INSERT INTO t (id, name) VALUES (?, ?)", i, string(rune('a'+i)))
	}
	cacheState(t, db, 3)
	tx, err := db.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(t.Context(), "SELECT id FROM t ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ { // five other statements push the open one out
		if got := queryIDs(t, tx, "SELECT id FROM t WHERE id = ? AND "+string(rune('0'+i))+" = "+string(rune('0'+i)), i); len(got) != 1 {
			t.Fatalf("query %d: %v", i, got)
		}
	}
	var n int
	for rows.Next() {
		n++
	}
	if err := rows.Close(); err != nil {
		t.Fatalf("closing rows of an evicted statement: %v", err)
	}
	if n != 5 {
		t.Errorf("an evicted statement's open rows gave %d rows, want 5", n)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, kept := cacheState(t, db, 0); kept != 3 {
		t.Errorf("keeps %d statements, want 3", kept)
	}
}

// A kept statement sees a schema change; a failed statement can run again; a script runs
// every statement each time; column types come through.
func TestKeptStatementsBehaveAsFreshOnes(t *testing.T) {
	db := openCached(t)
	const all = "SELECT * FROM t"
	cols := func() []string {
		rows, err := db.QueryContext(t.Context(), all)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		c, err := rows.Columns()
		if err != nil {
			t.Fatal(err)
		}
		types, err := rows.ColumnTypes()
		if err != nil {
			t.Fatal(err)
		}
		if got := types[0].DatabaseTypeName(); got != "INTEGER" {
			t.Errorf("column type %q, want INTEGER", got)
		}
		return c
	}
	if got := cols(); len(got) != 2 {
		t.Fatalf("columns %v", got)
	}
	mustExec(t, db, "ALTER TABLE t ADD COLUMN extra TEXT")
	if got := cols(); len(got) != 3 {
		t.Errorf("after ALTER TABLE the kept statement gives columns %v, want 3", got)
	}

	const ins = "INSERT INTO t (id, name) VALUES (?, ?)"
	mustExec(t, db, ins, 1, "x")
	if _, err := db.ExecContext(t.Context(), ins, 2, "x"); err == nil {
		t.Fatal("a duplicate name was accepted")
	}
	mustExec(t, db, ins, 2, "y")

	const script = "INSERT INTO t (name) VALUES ('s' || (SELECT count(*) FROM t)); INSERT INTO t (name) VALUES ('s' || (SELECT count(*) FROM t))"
	mustExec(t, db, script)
	mustExec(t, db, script)
	if got := queryIDs(t, db, "SELECT id FROM t"); len(got) != 6 {
		t.Errorf("after the script ran twice: %d rows, want 6", len(got))
	}
}
