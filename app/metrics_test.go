package app_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/sandbox"
)

// syncBuffer collects log lines written from many goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func startSandbox(t *testing.T, logs io.Writer) *sandbox.Sandbox {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if logs != nil {
		ctx = zerolog.New(logs).Level(zerolog.InfoLevel).WithContext(ctx)
	}
	sb, err := sandbox.Start(ctx, sandbox.Options{Configure: func(c *config.Config) { c.Logging.Level = "info" }})
	if err != nil {
		t.Fatalf("sandbox: %v", err)
	}
	t.Cleanup(func() { sb.Close() })
	return sb
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestMetricsAfterEnforcement drives a legal and an illegal move end to end and checks the
// series operators alert on, and that every decision line carries the fields to find it.
func TestMetricsAfterEnforcement(t *testing.T) {
	logs := &syncBuffer{}
	sb := startSandbox(t, logs)
	ctx := context.Background()
	if _, err := sb.App.ReconcileNow(ctx); err != nil { // the board's values adopted: known items
		t.Fatal(err)
	}
	if err := sb.Move(ctx, "alice", "app", 5, "Ready for Plan"); err != nil { // legal
		t.Fatal(err)
	}
	if err := sb.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	if err := sb.Move(ctx, "agent-1", "app", 3, "In Progress"); err != nil { // illegal: reverted at once, then confirmed
		t.Fatal(err)
	}
	if err := sb.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	if err := sb.Move(ctx, "alice", "app", 1, "Ready for Plan"); err != nil { // the epic: its children follow
		t.Fatal(err)
	}
	if err := sb.Settle(ctx); err != nil {
		t.Fatal(err)
	}

	code, body := get(t, sb.AppURL+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics answered %d", code)
	}
	for _, want := range []string{
		`ralph_gate_webhooks_received_total{event="projects_v2_item",outcome="accepted"}`,
		`ralph_gate_decisions_total{verdict="allowed"}`,
		`ralph_gate_decisions_total{verdict="reverted"} 1`,
		`ralph_gate_reverts_total 1`,
		`ralph_gate_decision_duration_seconds_count`,
		`ralph_gate_queue_depth 0`,
		`ralph_gate_queue_oldest_age_seconds 0`,
		`ralph_gate_proof_waiting_items 0`,
		`ralph_gate_github_requests_total{api="graphql",code="200"}`,
		`ralph_gate_github_requests_total{api="rest",code="200"}`,
		`ralph_gate_github_rate_limit_remaining{resource="graphql"}`,
		`ralph_gate_github_request_duration_seconds_count{api="graphql"}`,
		`ralph_gate_build_info{version=`,
		`ralph_gate_automation_moves_total{cause="cascade"}`,
		`ralph_gate_provisional_reverts_total{outcome="confirmed"} 1`,
		`ralph_gate_processing_errors_total 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	decisions := 0
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("a log line is not JSON: %s", sc.Text())
		}
		if line["message"] != "decision" && !strings.HasPrefix(fmt.Sprint(line["message"]), "reverted an illegal move") {
			continue
		}
		decisions++
		for _, key := range []string{"delivery", "org", "project", "item", "actor"} {
			if v, ok := line[key]; !ok || v == "" {
				t.Errorf("decision line lacks %q: %s", key, sc.Text())
			}
		}
	}
	if decisions < 3 { // allowed, reverted (+ its revert line)
		t.Errorf("want decision lines for both moves, got %d:\n%s", decisions, logs.String())
	}
}

func TestReadyzFollowsTheStore(t *testing.T) {
	sb := startSandbox(t, nil)
	if code, _ := get(t, sb.AppURL+"/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz = %d before the store went down", code)
	}
	// A store that answers but cannot write (a full disk) fails every delivery: not ready,
	// and ready again once it can.
	if _, err := sb.App.Store().DB().Exec(`PRAGMA query_only = 1`); err != nil {
		t.Fatal(err)
	}
	if code, body := get(t, sb.AppURL+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "store cannot write") {
		t.Errorf("/readyz = %d %q with a store that cannot write, want 503", code, body)
	}
	if _, err := sb.App.Store().DB().Exec(`PRAGMA query_only = 0`); err != nil {
		t.Fatal(err)
	}
	if code, _ := get(t, sb.AppURL+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz = %d once the store can write again", code)
	}
	if err := sb.App.Store().Close(); err != nil {
		t.Fatal(err)
	}
	code, body := get(t, sb.AppURL+"/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "store") {
		t.Errorf("/readyz = %d %q with the store down, want 503 naming the store", code, body)
	}
	// The process itself is still up: liveness must not restart it for a database outage.
	if code, _ := get(t, sb.AppURL+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz = %d with the store down, want 200", code)
	}
}
