package mcpserver

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
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

// A body is counted as the SDK will parse it: exactly one JSON value (one message, or one
// array of them). Trailing data, or a body that is not JSON, is refused whole with 400 before
// anything runs: 30 tool calls or 5,000 tools/list followed by a byte no longer pass for one
// message. The memory such a request makes the façade allocate is bounded by the body it may
// send (1 MiB), whatever it asks for.
func TestBodyIsOneJSONValue(t *testing.T) {
	f := newFixture(t, issue(1, "Research Needed"))
	var refused refusals
	cb := &countedBoard{board: f.board}
	f.opts.Board = func(context.Context, string) (enforce.Board, error) { return cb, nil }
	l := Limits{MaxBatch: 10, CallsPerMinute: 60, Burst: 20, Refused: refused.add}
	srv := httptest.NewServer(Handler(New(f.opts), []Credential{{Name: "agent-1", Hash: sha256.Sum256([]byte("a-long-enough-token"))}}, l))
	defer srv.Close()
	post := func(body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer a-long-enough-token")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	messages := func(n int, method, params string) string {
		var msgs []string
		for i := range n {
			msgs = append(msgs, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, i+1, method, params))
		}
		return "[" + strings.Join(msgs, ",") + "]"
	}
	call := `{"name":"get_workflow_state","arguments":{"number":1}}`
	tests := []struct {
		name, body string
		code       int
		want       string
	}{
		{"30 tool calls and a trailing byte", messages(30, "tools/call", call) + " x", http.StatusBadRequest, "bytes of trailing data after the first JSON value"},
		{"5,000 tools/list and a trailing byte", messages(5000, "tools/list", "{}") + "x", http.StatusBadRequest, "trailing data"},
		{"two values", `{"jsonrpc":"2.0","id":1,"method":"ping"} {"jsonrpc":"2.0","id":2,"method":"ping"}`, http.StatusBadRequest, "trailing data"},
		{"not JSON", `{"jsonrpc":`, http.StatusBadRequest, "not JSON"},
		{"5,000 tools/list", messages(5000, "tools/list", "{}"), http.StatusBadRequest, "at most 10 messages, this one carries 5000"},
		{"a batch of 2, white space after it", messages(2, "tools/call", call) + " \n", http.StatusOK, `"structuredContent"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			calls := cb.calls.Load()
			code, body := post(tt.body)
			runtime.ReadMemStats(&after)
			if code != tt.code || !strings.Contains(body, tt.want) {
				t.Fatalf("%d %.300q, want %d with %q", code, body, tt.code, tt.want)
			}
			if tt.code != http.StatusOK && cb.calls.Load() != calls {
				t.Errorf("a refused request called GitHub %d times", cb.calls.Load()-calls)
			}
			// What the request made the process allocate (server and client together): a
			// refused one, a few times its body at most.
			if allocated := after.TotalAlloc - before.TotalAlloc; tt.code != http.StatusOK && allocated > 16<<20 {
				t.Errorf("the refused request allocated %d MiB", allocated>>20)
			}
		})
	}
	if refused.get("malformed") != 4 || refused.get("batch") != 1 {
		t.Errorf("%d malformed and %d batch refusals counted, want 4 and 1", refused.get("malformed"), refused.get("batch"))
	}
}

// Every method is held to a rate: besides its tool calls, an agent may send a few times as many
// other messages (tools/list, initialize, pings); beyond, each is answered with a JSON-RPC error
// saying when to retry, and counted.
func TestEveryMethodHasARate(t *testing.T) {
	f := newFixture(t, issue(1, "Research Needed"))
	var refused refusals
	l := Limits{MaxBatch: 10, CallsPerMinute: 6, Burst: 2, Refused: refused.add}
	f.opts.Limits = l
	srv := httptest.NewServer(Handler(New(f.opts), []Credential{{Name: "agent-1", Hash: sha256.Sum256([]byte("a-long-enough-token"))}}, l))
	defer srv.Close()
	burst := 2 * otherMethodsPerCall
	var last string
	for i := range burst + 1 {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":{}}`, i+1)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer a-long-enough-token")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		last = string(out)
		if i < burst && !strings.Contains(last, `"tools"`) {
			t.Fatalf("tools/list %d of a burst of %d: %s", i+1, burst, last)
		}
	}
	if !strings.Contains(last, `"error"`) || !strings.Contains(last, "retry after") || refused.get("rate") != 1 {
		t.Errorf("tools/list past the burst: %s (%d rate refusals counted)", last, refused.get("rate"))
	}
}
