package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"
)

// freshPostgresDatabase creates an empty database on the test server
// (RALPH_GATE_TEST_POSTGRES_DSN), dropped at the end of the test, and returns a DSN for it.
// Without a server the test is skipped, except in CI (CI=true), where that is a failure.
func freshPostgresDatabase(t *testing.T) string {
	t.Helper()
	base := os.Getenv("RALPH_GATE_TEST_POSTGRES_DSN")
	if base == "" {
		const hint = "set RALPH_GATE_TEST_POSTGRES_DSN (eval \"$(bash .ci/postgres.sh start)\") to run against PostgreSQL"
		if os.Getenv("CI") == "true" {
			t.Fatal(hint)
		}
		t.Skip(hint)
	}
	if !strings.HasPrefix(base, "postgres://") && !strings.HasPrefix(base, "postgresql://") {
		t.Fatalf("RALPH_GATE_TEST_POSTGRES_DSN must be a postgres:// URL for this test")
	}
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	name := "rg_replicas_" + hex.EncodeToString(b)
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// Three `ralph-gate serve` processes started at the same moment on one fresh PostgreSQL
// database (helm install with replicaCount: 3) all start and become ready: they migrate the
// database one at a time, and none exits.
func TestServeReplicasStartTogetherOnPostgres(t *testing.T) {
	clearAppEnv(t)
	dsn := freshPostgresDatabase(t)
	bin := buildRalphGate(t)
	file := startSim(t, nil, nil)
	// startCluster starts them at once and fails the test unless every one becomes ready
	// (its migrations done, its board checked) within its bound.
	c := startCluster(t, bin, file, t.TempDir(), 3, func(cfg map[string]any) {
		cfg["store"] = map[string]any{"driver": "postgres", "dsn": dsn}
	})
	// And they stay up.
	time.Sleep(time.Second)
	for _, nd := range c.nodes {
		if !nd.running() {
			t.Errorf("replica %d exited (%v):\n%s", nd.n, nd.err, nd.log.Tail(40))
			continue
		}
		if code, _, err := nd.get("/healthz"); err != nil || code != http.StatusOK {
			t.Errorf("replica %d: /healthz %d (%v)", nd.n, code, err)
		}
		for _, ln := range nd.log.Lines() {
			if strings.Contains(ln.text, "river migrations") || strings.Contains(ln.text, `"level":"error"`) {
				t.Errorf("replica %d logged an error: %s", nd.n, ln.text)
			}
		}
	}
}
