package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/ghsim"
)

// logBuffer is a bytes.Buffer the serving goroutine and the test may share.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// lines returns the log lines that contain every one of words.
func (b *logBuffer) lines(words ...string) []string {
	var out []string
	for _, l := range strings.Split(b.String(), "\n") {
		all := l != ""
		for _, w := range words {
			all = all && strings.Contains(l, w)
		}
		if all {
			out = append(out, l)
		}
	}
	return out
}

// served is a `ralph-gate serve` running in the test.
type served struct {
	url    string
	stderr *logBuffer
	done   chan int
	stop   context.CancelFunc
}

// startServe runs `ralph-gate serve --config file` on a free local port, with its store in the
// test's directory, and waits until /healthz answers.
func startServe(t *testing.T, file string) *served {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	editConfig(t, file, func(c map[string]any) {
		c["server"] = map[string]any{"address": "127.0.0.1", "port": port}
		c["store"] = map[string]any{"driver": "sqlite", "dsn": filepath.Join(filepath.Dir(file), "ralph-gate.db")}
	})
	ctx, cancel := context.WithCancel(context.Background())
	sv := &served{url: fmt.Sprintf("http://127.0.0.1:%d", port), stderr: &logBuffer{}, done: make(chan int, 1), stop: cancel}
	go func() {
		sv.done <- run(ctx, []string{"serve", "--config", file}, streams{in: strings.NewReader(""), out: io.Discard, err: sv.stderr})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-sv.done:
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop")
		}
	})
	sv.waitFor(t, "/healthz", http.StatusOK, "", 20*time.Second)
	return sv
}

// get returns a route's status and body.
func (sv *served) get(route string) (int, string, error) {
	resp, err := http.Get(sv.url + route)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// waitFor polls route until it answers status with a body containing want.
func (sv *served) waitFor(t *testing.T, route string, status int, want string, limit time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(limit)
	var (
		code int
		body string
		err  error
	)
	for time.Now().Before(deadline) {
		select {
		case c := <-sv.done:
			t.Fatalf("serve exited %d:\n%s", c, sv.stderr.String())
		default:
		}
		if code, body, err = sv.get(route); err == nil && code == status && strings.Contains(body, want) {
			return body
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: %d %q (%v), want %d with %q\nstderr:\n%s", route, code, body, err, status, want, sv.stderr.String())
	return ""
}

// serve checks every enforced board before it reports ready: a missing project, or a board
// without an option the workflow needs, keeps /readyz at 503 and is named in one log line
// with its fix; a sound board is ready.
func TestServeChecksTheBoardsBeforeReady(t *testing.T) {
	clearAppEnv(t)
	tests := []struct {
		name   string
		edit   func(string) string
		config func(map[string]any)
		ready  string   // /readyz's body, 200 when "ready"
		log    []string // the one not-ready line contains each
	}{
		{name: "a sound board is ready", ready: "ready"},
		{name: "a board without Canceled and Human Needed",
			edit:  func(s string) string { return strings.Replace(s, ", Canceled, Human Needed]", ", Cancelled]", 1) },
			ready: `not ready: project acme/1: field "Workflow State" lacks the option "Human Needed"; project acme/1: field "Workflow State" lacks the option "Canceled"`,
			log: []string{`"level":"error"`, `project acme/1: field \"Workflow State\" lacks the option \"Canceled\": rename the option \"Cancelled\" to \"Canceled\"`,
				`lacks the option \"Human Needed\": in the project's settings edit the field`, "deleting an option clears it on every item"}},
		{name: "a project that does not exist",
			config: func(c map[string]any) {
				c["projects"] = []map[string]any{{"owner": "acme", "number": 1}, {"owner": "acme", "number": 9}}
			},
			ready: "not ready: project acme/9: the project does not exist, or the App cannot see it",
			log:   []string{`"level":"error"`, "project acme/9: the project does not exist", "check projects[].owner and number"}},
		{name: "an organization the App is not installed on",
			config: func(c map[string]any) { c["projects"] = []map[string]any{{"owner": "globex", "number": 1}} },
			ready:  "not ready: project globex/1: the App is not installed on the organization globex",
			log:    []string{`"level":"error"`, "project globex/1: the App is not installed on the organization globex"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := startSim(t, tt.edit, nil)
			if tt.config != nil {
				editConfig(t, file, tt.config)
			}
			sv := startServe(t, file)
			if tt.ready == "ready" {
				sv.waitFor(t, "/readyz", http.StatusOK, "ready", 20*time.Second)
				if ls := sv.stderr.lines("not ready"); len(ls) > 0 {
					t.Errorf("a sound board logged %q", ls)
				}
				return
			}
			sv.waitFor(t, "/readyz", http.StatusServiceUnavailable, tt.ready, 20*time.Second)
			// Still not ready after the first retries, and the problem logged once.
			time.Sleep(3500 * time.Millisecond)
			if code, body, _ := sv.get("/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, tt.ready) {
				t.Errorf("/readyz: %d %q after the retries", code, body)
			}
			if code, _, _ := sv.get("/healthz"); code != http.StatusOK {
				t.Errorf("/healthz: %d: the process is up and must say so", code)
			}
			if ls := sv.stderr.lines("not ready"); len(ls) != 1 {
				t.Fatalf("want one not-ready log line, got %d:\n%s", len(ls), sv.stderr.String())
			}
			for _, want := range tt.log {
				if len(sv.stderr.lines("not ready", want)) != 1 {
					t.Errorf("the not-ready line lacks %s:\n%s", want, sv.stderr.lines("not ready")[0])
				}
			}
		})
	}
}

// A board serve cannot read yet (GitHub failing) keeps it not ready; it becomes ready without
// a restart once GitHub answers.
func TestServeBecomesReadyOnceTheBoardsCanBeChecked(t *testing.T) {
	clearAppEnv(t)
	file, sim := startSimServer(t, nil, nil)
	// Every read of a project's field fails (after ghboard's own retries) until lifted.
	if err := sim.SetFaults(ghsim.Faults{ErrorRate: 1, Operations: []string{"graphql:organization"}}); err != nil {
		t.Fatal(err)
	}
	sv := startServe(t, file)
	sv.waitFor(t, "/readyz", http.StatusServiceUnavailable, "not ready: cannot check the project boards", 30*time.Second)
	if err := sim.SetFaults(ghsim.Faults{}); err != nil {
		t.Fatal(err)
	}
	sv.waitFor(t, "/readyz", http.StatusOK, "ready", 30*time.Second)
	if len(sv.stderr.lines("cannot check the project boards yet")) != 1 || len(sv.stderr.lines("ralph-gate is ready")) != 1 {
		t.Errorf("want one line for the wait and one for its end:\n%s", sv.stderr.String())
	}
}

// serve outlives a GitHub outage at start: while GET /app answers 502 it holds its port,
// alive (/healthz 200) and not ready (/readyz 503 saying it waits for GitHub; a webhook gets
// 503 and is redelivered), and becomes ready once GitHub answers — it used to exit at once.
func TestServeWaitsForGitHubAtStart(t *testing.T) {
	clearAppEnv(t)
	file, sim := startSimServer(t, nil, nil)
	if err := sim.SetFaults(ghsim.Faults{ErrorRate: 1, Operations: []string{"rest:GET /app"}}); err != nil {
		t.Fatal(err)
	}
	sv := startServe(t, file)
	sv.waitFor(t, "/readyz", http.StatusServiceUnavailable, "waiting for GitHub", 10*time.Second)
	resp, err := http.Post(sv.url+"/api/github/hook", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a webhook while waiting: %d (Retry-After %q), want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if err := sim.SetFaults(ghsim.Faults{}); err != nil {
		t.Fatal(err)
	}
	sv.waitFor(t, "/readyz", http.StatusOK, "ready", 45*time.Second)
	if n := len(sv.stderr.lines("GitHub cannot be reached yet")); n == 0 || n > 8 {
		t.Errorf("%d lines about the wait, want a few (backoff):\n%s", n, sv.stderr.String())
	}
}

// Credentials GitHub refuses still stop serve at once: waiting would fix nothing.
func TestServeStopsOnRefusedCredentials(t *testing.T) {
	clearAppEnv(t)
	file, _ := startSimServer(t, nil, nil)
	editConfig(t, file, func(c map[string]any) {
		gh := c["github"].(map[string]any)
		app := gh["app"].(map[string]any)
		app["integration_id"] = 999999 // not the simulator's App
		c["server"] = map[string]any{"address": "127.0.0.1", "port": 0}
		c["store"] = map[string]any{"driver": "sqlite", "dsn": filepath.Join(filepath.Dir(file), "ralph-gate.db")}
	})
	var stderr logBuffer
	code := run(context.Background(), []string{"serve", "--config", file}, streams{in: strings.NewReader(""), out: io.Discard, err: &stderr})
	if code == exitOK || !strings.Contains(stderr.String(), "check github.app.integration_id") {
		t.Errorf("serve with an App GitHub does not know: exit %d\n%s", code, stderr.String())
	}
}
