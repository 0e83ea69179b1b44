package store

import (
	"errors"
	dsninfo "github.com/ralph-gate/ralph-gate/internal/dsn"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Open refuses a DSN meant for the other driver before it creates anything: with SQLite (the
// default) a postgres:// URL once became a file (and directories) named after it, password
// included. The error never carries the password.
func TestOpenRefusesDSNOfTheOtherDriver(t *testing.T) {
	const password = "hunter2-Pw"
	dir := t.TempDir()
	t.Chdir(dir) // a relative "file" would land here
	tests := []struct {
		driver, dsn string
		want        string
	}{
		{"", "postgres://ralph:" + password + "@db:5432/ralph", "postgres://xxxxx@db:5432/ralph"},
		{"sqlite", "postgresql://ralph:" + password + "@db/ralph?sslmode=require", "postgresql://xxxxx@db/ralph?…"},
		{"sqlite3", "postgres:ralph:" + password + "@db/ralph", "driver sqlite"},
		{"", "host=db user=ralph password=" + password + " dbname=ralph", "host=…, user=…, password=…, dbname=…"},
		{"sqlite", "mysql://ralph:" + password + "@db/ralph", "mysql"},
		{"postgres", "ralph-gate.db", "file path"},
		{"postgres", "file:ralph-gate.db", "file path"},
		{"postgres", "mysql://db/ralph", "mysql"},
	}
	for _, tt := range tests {
		s, err := Open(t.Context(), tt.driver, tt.dsn)
		if err == nil {
			_ = s.Close()
			t.Errorf("Open(%q, %q) succeeded", tt.driver, tt.dsn)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Open(%q, %q): %v, want it to mention %q", tt.driver, tt.dsn, err, tt.want)
		}
		if strings.Contains(err.Error(), password) {
			t.Errorf("Open(%q, …) echoes the password: %v", tt.driver, err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("Open created %q", e.Name())
	}
}

func TestCheckDSNAccepts(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ driver, dsn string }{
		{DriverSQLite, "ralph-gate.db"},
		{DriverSQLite, "/var/lib/ralph-gate/ralph-gate.db?_pragma=busy_timeout(50)"},
		{DriverSQLite, "file:ralph-gate.db?cache=shared"},
		{DriverSQLite, "file:///var/lib/ralph-gate.db"},
		{DriverSQLite, "data/a=b.db"},
		{DriverSQLite, `C:\ralph\ralph-gate.db`},
		{DriverPostgres, "postgres://ralph:pw@db:5432/ralph?sslmode=require"},
		{DriverPostgres, "postgresql://db/ralph"},
		{DriverPostgres, "host=db dbname=ralph"},
		{DriverPostgres, "search_path=x"},
	} {
		if err := checkDSN(tt.driver, tt.dsn); err != nil {
			t.Errorf("checkDSN(%s, %q): %v", tt.driver, tt.dsn, err)
		}
	}
}

func TestRedactDSNURL(t *testing.T) {
	t.Parallel()
	for dsn, want := range map[string]string{
		"postgres://u:p@host/db":                    "postgres://xxxxx@host/db",
		"postgres://host/db":                        "postgres://host/db",
		"postgres://u:p/w@x@host:5432/db?sslmode=1": "postgres://xxxxx@host:5432/db?…",
		"postgres://host/db?password=p":             "postgres://host/db?…",
		"postgres:u:p@host/db":                      "postgres:xxxxx@host/db",
	} {
		if got := dsninfo.RedactURL(dsn); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", dsn, got, want)
		}
	}
}

func TestSQLiteFilePath(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		dsn      string
		path     string
		readOnly bool
	}{
		{"ralph-gate.db", "ralph-gate.db", false},
		{filepath.Join("a", "b.db") + "?_pragma=busy_timeout(50)", filepath.Join("a", "b.db"), false},
		{"file:ralph-gate.db?cache=shared", "ralph-gate.db", false},
		{"file:/var/lib/my%20db.db", "/var/lib/my db.db", false},
		{"file:///var/lib/r.db", "/var/lib/r.db", false},
		{"file://localhost/var/lib/r.db", "/var/lib/r.db", false},
		{"file://elsewhere/var/lib/r.db", "", false},
		{"file:r.db?mode=ro", "r.db", true},
		{"file:r.db?mode=memory", "", false},
	} {
		path, ro := sqliteFilePath(tt.dsn)
		if path != tt.path || ro != tt.readOnly {
			t.Errorf("sqliteFilePath(%q) = %q, %v; want %q, %v", tt.dsn, path, ro, tt.path, tt.readOnly)
		}
	}
}

// Open creates an SQLite store's file on a first start, never its directory: a mistyped path
// (/nonexistent/dir/rg.db) is an error naming the missing directory, and nothing is created —
// it once became a new directory and an empty store that the service then ran on.
func TestOpenSQLiteRefusesAMissingDirectory(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir) // a relative path is named as the absolute directory it would be in
	for _, tt := range []struct{ dsn, wantDir string }{
		{filepath.Join(dir, "typo", "rg.db"), filepath.Join(dir, "typo")},
		{filepath.Join(dir, "a", "b", "rg.db") + "?_pragma=busy_timeout(50)", filepath.Join(dir, "a", "b")},
		{"file:" + filepath.Join(dir, "uri", "rg.db") + "?cache=shared", filepath.Join(dir, "uri")},
		{filepath.Join("rel", "rg.db"), filepath.Join(dir, "rel")},
	} {
		s, err := Open(t.Context(), DriverSQLite, tt.dsn)
		if err == nil {
			_ = s.Close()
			t.Errorf("Open(%q) succeeded", tt.dsn)
			continue
		}
		var nd *NoDirectoryError
		if !errors.As(err, &nd) || nd.Dir != tt.wantDir {
			t.Errorf("Open(%q): %v (%T), want a *NoDirectoryError for %s", tt.dsn, err, err, tt.wantDir)
		}
		for _, want := range []string{"the directory " + tt.wantDir, "does not exist", "store.dsn"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("Open(%q): %q lacks %q", tt.dsn, err, want)
			}
		}
	}
	// A file where the directory should be is refused too, naming it.
	if err := os.WriteFile(filepath.Join(dir, "plain"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := Open(t.Context(), DriverSQLite, filepath.Join(dir, "plain", "rg.db")); err == nil {
		_ = s.Close()
		t.Error("Open under a regular file succeeded")
	} else if !strings.Contains(err.Error(), "is not a directory") {
		t.Errorf("Open under a regular file: %v", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "plain" {
			t.Errorf("Open created %q", e.Name())
		}
	}

	// The file itself, in a directory that exists, is still created: a first start.
	path := filepath.Join(dir, "first.db")
	s, err := Open(t.Context(), DriverSQLite, path)
	if err != nil {
		t.Fatalf("Open(%q) in an existing directory: %v", path, err)
	}
	_ = s.Close()
	if _, err := os.Stat(path); err != nil {
		t.Errorf("the store's file was not created: %v", err)
	}
	if SQLitePath("file:"+path+"?cache=shared") != path || SQLitePath("file::memory:") != "" {
		t.Errorf("SQLitePath: %q", SQLitePath("file:"+path+"?cache=shared"))
	}
}
