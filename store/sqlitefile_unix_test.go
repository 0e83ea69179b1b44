//go:build unix

package store

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// withUmask runs the test under a typical umask (022), which left SQLite's own 0644 in place.
// The umask is per process: callers are not parallel.
func withUmask(t *testing.T) {
	t.Helper()
	old := syscall.Umask(0o022)
	t.Cleanup(func() { syscall.Umask(old) })
}

// watchLog records the store's info log lines.
func watchLog(t *testing.T) *[]string {
	t.Helper()
	var lines []string
	old := logInfo
	logInfo = func(_ context.Context, msg string, args ...any) {
		lines = append(lines, fmt.Sprint(append([]any{msg}, args...)...))
	}
	t.Cleanup(func() { logInfo = old })
	return &lines
}

// writeSomething makes SQLite write (so the -wal and -shm files exist while the store is open).
func writeSomething(t *testing.T, s *Store) {
	t.Helper()
	if _, err := s.DB().ExecContext(t.Context(), "CREATE TABLE IF NOT EXISTS mode_probe (x INTEGER)"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().ExecContext(t.Context(), "INSERT INTO mode_probe (x) VALUES (1)"); err != nil {
		t.Fatal(err)
	}
}

func wantMode(t *testing.T, path string, want fs.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Errorf("stat %s: %v", filepath.Base(path), err)
		return
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s has mode %#o, want %#o", filepath.Base(path), got, want)
	}
}

// A new SQLite store's database file, and the -wal and -shm files SQLite creates beside it
// after a write, are readable by their owner only, whatever the DSN's form.
func TestSQLiteFilesCreatedOwnerOnly(t *testing.T) {
	withUmask(t)
	dir := t.TempDir()
	for _, dsn := range []string{
		filepath.Join(dir, "plain.db"),
		"file:" + filepath.Join(dir, "uri.db") + "?_pragma=busy_timeout(5000)",
	} {
		s, err := Open(t.Context(), DriverSQLite, dsn)
		if err != nil {
			t.Fatalf("Open(%q): %v", dsn, err)
		}
		writeSomething(t, s)
		path, _ := sqliteFilePath(dsn)
		for _, p := range []string{path, path + "-wal", path + "-shm"} {
			wantMode(t, p, 0o600)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// An existing database file (and a -wal file) the group or others may read is restricted to
// 0600 when the store opens it, with one info line saying so; the next open has nothing to say.
func TestSQLiteExistingFilesRestricted(t *testing.T) {
	withUmask(t)
	lines := watchLog(t)
	path := filepath.Join(t.TempDir(), "ralph-gate.db")
	s, err := Open(t.Context(), DriverSQLite, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	*lines = nil
	// As an older release left it: world-readable, with an (empty) WAL file beside it.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+"-wal", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path+"-wal", 0o664); err != nil {
		t.Fatal(err)
	}

	s, err = Open(t.Context(), DriverSQLite, path)
	if err != nil {
		t.Fatal(err)
	}
	wantMode(t, path, 0o600)
	wantMode(t, path+"-wal", 0o600)
	writeSomething(t, s)
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		wantMode(t, p, 0o600)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if len(*lines) != 1 || !strings.Contains((*lines)[0], "0600") ||
		!strings.Contains((*lines)[0], "ralph-gate.db (was 0644)") || !strings.Contains((*lines)[0], "ralph-gate.db-wal (was 0664)") {
		t.Errorf("want one info line naming both files, got %q", *lines)
	}

	*lines = nil
	s, err = Open(t.Context(), DriverSQLite, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if len(*lines) != 0 {
		t.Errorf("nothing to restrict, yet logged %q", *lines)
	}
}
