package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestStoreDSNFromEnvironment(t *testing.T) {
	file := filepath.Join(t.TempDir(), "c.yml")
	if err := os.WriteFile(file, []byte("store:\n  driver: postgres\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	noEnv := func(string) (string, bool) { return "", false }
	_, err := LoadFor(file, ForFile, noEnv)
	if err == nil || !strings.Contains(err.Error(), "store.dsn") || !strings.Contains(err.Error(), EnvStoreDSN) {
		t.Fatalf("want a store.dsn problem naming %s, got %v", EnvStoreDSN, err)
	}
	env := func(k string) (string, bool) {
		if k == EnvStoreDSN {
			return "postgres://ralph@db:5432/ralph", true
		}
		return "", false
	}
	cfg, err := LoadFor(file, ForFile, env)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Store.DSN != "postgres://ralph@db:5432/ralph" {
		t.Errorf("dsn = %q", cfg.Store.DSN)
	}
}
