package mcpserver

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/mcpserver/toolspec"
)

// refusals counts Limits.Refused by reason.
type refusals struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *refusals) add(reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == nil {
		r.n = map[string]int{}
	}
	r.n[reason]++
}

func (r *refusals) get(reason string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[reason]
}

// Each agent has its own rate of tool calls: a burst passes, the next call is refused with the
// time to wait (and counted), another agent is not held back, and a call passes once the wait
// is over.
func TestAgentRateLimit(t *testing.T) {
	f := newFixture(t, issue(1, "Research Needed"))
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	var refused refusals
	f.opts.Now = func() time.Time { return now }
	f.opts.Limits = Limits{CallsPerMinute: 30, Burst: 3, Refused: refused.add}
	creds := []Credential{{Name: "agent-1", Hash: sha256.Sum256([]byte("agent-1-long-token"))}, {Name: "researcher", Hash: sha256.Sum256([]byte("researcher-long-token"))}}
	srv := httptest.NewServer(Handler(New(f.opts), creds, f.opts.Limits))
	defer srv.Close()
	connect := func(token string) *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL,
			HTTPClient: &http.Client{Transport: tokenTransport(token), Timeout: 10 * time.Second}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	agent1, researcher := connect("agent-1-long-token"), connect("researcher-long-token")
	var out toolspec.StateOutput
	for i := range 3 {
		if msg := callTool(t, agent1, toolspec.GetWorkflowState, map[string]any{"number": 1}, &out); msg != "" {
			t.Fatalf("call %d of the burst: %s", i+1, msg)
		}
	}
	msg := callTool(t, agent1, toolspec.GetWorkflowState, map[string]any{"number": 1}, &out)
	want := "get_workflow_state: agent-1 has called more than 30 tools a minute. Each agent may make 30 tool calls a minute, in bursts of up to 3 (config mcp.limits). Recovery: retry after 2 s (Retry-After: 2)"
	if msg != want {
		t.Fatalf("the call past the burst:\n got %q\nwant %q", msg, want)
	}
	// A bad call counts too: it is refused for the rate, not for its arguments.
	if msg := callTool(t, agent1, toolspec.GetWorkflowState, map[string]any{"number": "x"}, &out); !strings.Contains(msg, "Retry-After") {
		t.Fatalf("a bad call past the burst: %q", msg)
	}
	if refused.get("rate") != 2 {
		t.Errorf("%d rate refusals counted, want 2", refused.get("rate"))
	}
	if msg := callTool(t, researcher, toolspec.GetWorkflowState, map[string]any{"number": 1}, &out); msg != "" {
		t.Fatalf("another agent is held back: %s", msg)
	}
	now = now.Add(2 * time.Second)
	if msg := callTool(t, agent1, toolspec.GetWorkflowState, map[string]any{"number": 1}, &out); msg != "" {
		t.Fatalf("after the wait: %s", msg)
	}
}

// countedBoard counts the calls made to GitHub and reports the rate limit it is given.
type countedBoard struct {
	*board
	rl    enforce.RateLimit
	calls atomic.Int64
}

func (b *countedBoard) RateLimit() (enforce.RateLimit, bool) { return b.rl, true }

func (b *countedBoard) IssueItems(ctx context.Context, owner, repo string, number int) ([]enforce.Item, error) {
	b.calls.Add(1)
	return b.board.IssueItems(ctx, owner, repo, number)
}

// While less than the reserve of the installation's rate limit is left, the façade makes no
// GitHub request: a tool call is refused until the limit resets (the time to wait is said),
// and counted; with more left, or once the limit has reset, it is made.
func TestGitHubReserveIsKeptForEnforcement(t *testing.T) {
	f := newFixture(t, issue(1, "Research Needed"))
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	var refused refusals
	cb := &countedBoard{board: f.board, rl: enforce.RateLimit{Limit: 5000, Remaining: 2499, Reset: now.Add(10 * time.Minute)}}
	f.opts.Board = func(context.Context, string) (enforce.Board, error) { return cb, nil }
	f.opts.Now = func() time.Time { return now }
	f.opts.Limits = Limits{GitHubReserve: 0.5, Refused: refused.add}
	cs := f.session("agent-1")
	var out toolspec.StateOutput
	msg := callTool(t, cs, toolspec.GetWorkflowState, map[string]any{"number": 1}, &out)
	want := "The façade did not call GitHub for acme: 2499 of the installation's 5000 requests an hour are left. The last 50% are kept for enforcing the workflow (config mcp.limits.github_reserve). Recovery: retry after 600 s (Retry-After: 600)"
	if msg != want || cb.calls.Load() != 0 || refused.get("budget") != 1 {
		t.Fatalf("below the reserve: %d GitHub calls, %d refusals counted, message\n got %q\nwant %q", cb.calls.Load(), refused.get("budget"), msg, want)
	}
	cb.rl.Remaining = 2500
	if msg := callTool(t, cs, toolspec.GetWorkflowState, map[string]any{"number": 1}, &out); msg != "" || cb.calls.Load() == 0 {
		t.Fatalf("at the reserve: %q, %d GitHub calls", msg, cb.calls.Load())
	}
	cb.rl.Remaining, now = 10, now.Add(10*time.Minute)
	if msg := callTool(t, cs, toolspec.GetWorkflowState, map[string]any{"number": 1}, &out); msg != "" {
		t.Fatalf("once the limit has reset: %q", msg)
	}
}

// A POST carrying more JSON-RPC messages than the limit is refused whole, over HTTP, before
// any is handled (and counted); a small batch is served.
func TestBatchLimit(t *testing.T) {
	f := newFixture(t, issue(1, "Research Needed"))
	var refused refusals
	cb := &countedBoard{board: f.board}
	f.opts.Board = func(context.Context, string) (enforce.Board, error) { return cb, nil }
	l := Limits{MaxBatch: 10, Refused: refused.add}
	srv := httptest.NewServer(Handler(New(f.opts), []Credential{{Name: "agent-1", Hash: sha256.Sum256([]byte("a-long-enough-token"))}}, l))
	defer srv.Close()
	post := func(n int) (int, string) {
		t.Helper()
		var msgs []string
		for i := range n {
			msgs = append(msgs, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"get_workflow_state","arguments":{"number":1}}}`, i+1))
		}
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader("["+strings.Join(msgs, ",")+"]"))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer a-long-enough-token")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	code, body := post(500)
	if code != http.StatusBadRequest || !strings.Contains(body, "a JSON-RPC batch may carry at most 10 messages, this one carries 500") ||
		cb.calls.Load() != 0 || refused.get("batch") != 1 {
		t.Fatalf("a batch of 500: %d %q, %d GitHub calls, %d refusals counted", code, body, cb.calls.Load(), refused.get("batch"))
	}
	if code, body := post(2); code != http.StatusOK || strings.Count(body, `"structuredContent"`) != 2 {
		t.Fatalf("a batch of 2: %d %s", code, body)
	}
}
