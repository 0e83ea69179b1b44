package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
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

// replica is one `ralph-gate serve` process.
type replica struct {
	url    string
	cmd    *exec.Cmd
	stderr *logBuffer
	exited chan struct{} // closed when the process has exited
	err    error         // Wait's result, once exited is closed
}

func (r *replica) running() bool {
	select {
	case <-r.exited:
		return false
	default:
		return true
	}
}

// Three `ralph-gate serve` processes started at the same moment on one fresh PostgreSQL
// database (helm install with replicaCount: 3) all start and become ready: they migrate the
// database one at a time, and none exits.
func TestServeReplicasStartTogetherOnPostgres(t *testing.T) {
	clearAppEnv(t)
	dsn := freshPostgresDatabase(t)
	bin := filepath.Join(t.TempDir(), "ralph-gate")
	build := exec.Command(goTool(t), "build", "-o", bin, "./cmd/ralph-gate")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/ralph-gate: %v\n%s", err, out)
	}
	file := startSim(t, nil, nil)

	const replicas = 3
	rs := make([]*replica, replicas)
	for i := range rs {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		own := filepath.Join(t.TempDir(), "config.yml")
		if err := os.WriteFile(own, data, 0o600); err != nil {
			t.Fatal(err)
		}
		editConfig(t, own, func(c map[string]any) {
			c["server"] = map[string]any{"address": "127.0.0.1", "port": port}
			c["store"] = map[string]any{"driver": "postgres", "dsn": dsn}
		})
		r := &replica{url: fmt.Sprintf("http://127.0.0.1:%d", port), stderr: &logBuffer{}, exited: make(chan struct{})}
		r.cmd = exec.Command(bin, "serve", "--config", own)
		r.cmd.Stdout, r.cmd.Stderr = r.stderr, r.stderr
		rs[i] = r
	}
	// Stop every started process at the end, by its pid: SIGTERM, then SIGKILL after 15 s.
	t.Cleanup(func() {
		for _, r := range rs {
			if r.cmd.Process != nil && r.running() {
				_ = r.cmd.Process.Signal(syscall.SIGTERM)
			}
		}
		for i, r := range rs {
			if r.cmd.Process == nil {
				continue
			}
			select {
			case <-r.exited:
			case <-time.After(15 * time.Second):
				t.Errorf("replica %d (pid %d) did not stop on SIGTERM; killing it", i+1, r.cmd.Process.Pid)
				_ = r.cmd.Process.Kill()
				<-r.exited
			}
		}
	})

	// All at once.
	var (
		wg       sync.WaitGroup
		start    = make(chan struct{})
		startErr = make([]error, replicas)
	)
	for i, r := range rs {
		wg.Go(func() {
			<-start
			if startErr[i] = r.cmd.Start(); startErr[i] != nil {
				close(r.exited)
				return
			}
			go func() {
				r.err = r.cmd.Wait()
				close(r.exited)
			}()
		})
	}
	close(start)
	wg.Wait()
	for i, err := range startErr {
		if err != nil {
			t.Fatalf("start replica %d: %v", i+1, err)
		}
	}

	// Every replica becomes ready (its migrations done, its board checked) within the bound.
	deadline := time.Now().Add(45 * time.Second)
	ready := make([]bool, replicas)
	for left := replicas; left > 0 && time.Now().Before(deadline); {
		for i, r := range rs {
			if ready[i] {
				continue
			}
			if !r.running() {
				t.Fatalf("replica %d exited (%v) before it was ready:\n%s", i+1, r.err, r.stderr.String())
			}
			if code, body, err := r.get("/readyz"); err == nil && code == http.StatusOK && strings.Contains(body, "ready") {
				ready[i] = true
				left--
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	for i, r := range rs {
		if !ready[i] {
			code, body, err := r.get("/readyz")
			t.Errorf("replica %d not ready after 45 s: /readyz %d %q (%v)\n%s", i+1, code, body, err, r.stderr.String())
		}
	}
	// And they stay up.
	time.Sleep(time.Second)
	for i, r := range rs {
		if !r.running() {
			t.Errorf("replica %d exited (%v):\n%s", i+1, r.err, r.stderr.String())
			continue
		}
		if code, _, err := r.get("/healthz"); err != nil || code != http.StatusOK {
			t.Errorf("replica %d: /healthz %d (%v)", i+1, code, err)
		}
		if s := r.stderr.String(); strings.Contains(s, "river migrations") || strings.Contains(s, `"level":"error"`) {
			t.Errorf("replica %d logged an error:\n%s", i+1, s)
		}
	}
}

// get returns one of the replica's routes: its status and body.
func (r *replica) get(route string) (int, string, error) {
	resp, err := http.Get(r.url + route)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}
