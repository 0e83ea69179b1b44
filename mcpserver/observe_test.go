package mcpserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/internal/spend"
	"github.com/ralph-gate/ralph-gate/mcpserver/toolspec"
	"github.com/ralph-gate/ralph-gate/policy"
)

// observed collects what the façade tells its CallObserver.
type observed struct {
	mu       sync.Mutex
	calls    []enforce.ToolCall
	requests map[string]int
}

func (o *observed) CallEnded(_ context.Context, c enforce.ToolCall) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, c)
}

func (o *observed) RequestMade(tool string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.requests == nil {
		o.requests = map[string]int{}
	}
	o.requests[tool]++
}

func (o *observed) last() enforce.ToolCall {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.calls) == 0 {
		return enforce.ToolCall{}
	}
	return o.calls[len(o.calls)-1]
}

func (o *observed) all() []enforce.ToolCall {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.calls)
}

// meteredBoard is the in-memory board sending one "GitHub request" per item read, as the
// metrics middleware counts a real one: on the context's meter.
type meteredBoard struct{ *board }

func (b meteredBoard) Item(ctx context.Context, id string) (enforce.Item, error) {
	spend.Add(ctx)
	return b.board.Item(ctx, id)
}

func (b meteredBoard) IssueItems(ctx context.Context, owner, repo string, number int) ([]enforce.Item, error) {
	spend.Add(ctx)
	return b.board.IssueItems(ctx, owner, repo, number)
}

// observedFacade serves the façade over HTTP to agent-1 and researcher, its calls observed and
// logged into logs; failing makes every board unavailable.
func observedFacade(t testing.TB, obs *observed, logs *syncBuf, failing *atomic.Bool) string {
	t.Helper()
	f := newFixture(t, issue(1, "Research Needed"), issue(2, "Backlog"))
	f.opts.Calls = obs
	f.opts.Board = func(context.Context, string) (enforce.Board, error) {
		if failing.Load() {
			return nil, errors.New("GitHub answered 502")
		}
		return meteredBoard{f.board}, nil
	}
	f.opts.Limits = Limits{CallsPerMinute: 600, Burst: 40}
	creds := []Credential{{Name: "agent-1", Hash: sha256.Sum256([]byte("agent-1-long-token"))},
		{Name: "researcher", Hash: sha256.Sum256([]byte("researcher-long-token"))}}
	logger := zerolog.New(logs).Level(zerolog.DebugLevel)
	h := Handler(New(f.opts), creds, f.opts.Limits)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(logger.WithContext(r.Context())))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// lines are the "tool call" lines logged so far.
func (s *syncBuf) lines(t *testing.T) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) != nil {
			t.Fatalf("not a JSON log line: %q", l)
		}
		if m["message"] == "tool call" {
			out = append(out, m)
		}
	}
	return out
}

// Every tool call is observed once, whatever becomes of it: its tool and agent, how it ended
// and under which rule, its duration and the GitHub requests it made; and it is logged in one
// line, at debug when it went through and above when it did not.
func TestEveryToolCallIsObserved(t *testing.T) {
	var obs observed
	var logs syncBuf
	var failing atomic.Bool
	url := observedFacade(t, &obs, &logs, &failing)
	cs := connectWith(t, url, "agent-1-long-token")
	for _, tc := range []struct {
		name    string
		tool    string
		args    map[string]any
		fail    bool
		want    enforce.ToolCall
		level   string
		minReqs int
	}{
		{name: "a read", tool: toolspec.GetWorkflowState, args: map[string]any{"number": 1},
			want: enforce.ToolCall{Tool: toolspec.GetWorkflowState, Outcome: enforce.OutcomeOK}, level: "debug", minReqs: 1},
		{name: "a handoff the command cannot make", tool: toolspec.HandoffTicket,
			args: map[string]any{"number": 1, "command": "research", "to_state": "In Progress", "reason": "go"},
			want: enforce.ToolCall{Tool: toolspec.HandoffTicket, Outcome: enforce.OutcomeRefused, Rule: "command"}, level: "info"},
		{name: "a handoff the workflow refuses", tool: toolspec.HandoffTicket,
			args: map[string]any{"number": 2, "command": "plan", "to_state": "Plan in Progress", "reason": "go"},
			want: enforce.ToolCall{Tool: toolspec.HandoffTicket, Outcome: enforce.OutcomeRefused, Rule: "transition"}, level: "info"},
		{name: "an argument of the wrong type", tool: toolspec.GetWorkflowState, args: map[string]any{"number": "one"},
			want: enforce.ToolCall{Tool: toolspec.GetWorkflowState, Outcome: enforce.OutcomeRefused, Rule: "arguments"}, level: "info"},
		{name: "a project not enforced", tool: toolspec.BoardHealth, args: map[string]any{"project": 9},
			want: enforce.ToolCall{Tool: toolspec.BoardHealth, Outcome: enforce.OutcomeRefused, Rule: "not_found"}, level: "info"},
		{name: "a tool the façade does not have", tool: "drop_table", args: map[string]any{},
			want: enforce.ToolCall{Tool: "other", Outcome: enforce.OutcomeRefused, Rule: "arguments"}, level: "info"},
		{name: "GitHub unreachable", tool: toolspec.GetWorkflowState, args: map[string]any{"number": 1}, fail: true,
			want: enforce.ToolCall{Tool: toolspec.GetWorkflowState, Outcome: enforce.OutcomeError}, level: "error"},
		{name: "no GitHub needed", tool: toolspec.DescribeWorkflow, args: map[string]any{},
			want: enforce.ToolCall{Tool: toolspec.DescribeWorkflow, Outcome: enforce.OutcomeOK}, level: "debug"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(obs.all())
			failing.Store(tc.fail)
			defer failing.Store(false)
			_, _ = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
			if n := len(obs.all()) - before; n != 1 {
				t.Fatalf("the call was observed %d times, want once", n)
			}
			got := obs.last()
			if got.Tool != tc.want.Tool || got.Agent != "agent-1" || got.Outcome != tc.want.Outcome || got.Rule != tc.want.Rule {
				t.Errorf("observed %+v, want tool %s, agent agent-1, outcome %s, rule %q", got, tc.want.Tool, tc.want.Outcome, tc.want.Rule)
			}
			if got.Duration <= 0 || got.At.IsZero() || got.Requests < tc.minReqs {
				t.Errorf("observed duration %v at %v with %d requests, want a duration, a time and at least %d requests", got.Duration, got.At, got.Requests, tc.minReqs)
			}
			lines := logs.lines(t)
			line := lines[len(lines)-1]
			if line["level"] != tc.level || line["tool"] != got.Tool || line["agent"] != "agent-1" || line["outcome"] != got.Outcome {
				t.Errorf("log line %v, want level %s, tool, agent and outcome as observed", line, tc.level)
			}
			if got.Rule != "" && line["rule"] != got.Rule {
				t.Errorf("log line %v has no rule %q", line, got.Rule)
			}
		})
	}
	reqs := 0
	for _, c := range obs.all() {
		if c.Tool == toolspec.GetWorkflowState {
			reqs += c.Requests
		}
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if reqs == 0 || obs.requests[toolspec.GetWorkflowState] != reqs || obs.requests[toolspec.DescribeWorkflow] != 0 {
		t.Errorf("requests told as made %v, calls counted %d for get_workflow_state; want them equal and none for describe_workflow", obs.requests, reqs)
	}
}

// An agent past its rate is counted as rate limited, under the rule that held it back.
func TestRateLimitedCallIsObserved(t *testing.T) {
	f := newFixture(t, issue(1, "Research Needed"))
	var obs observed
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	f.opts.Now = func() time.Time { return now }
	f.opts.Calls = &obs
	f.opts.Limits = Limits{CallsPerMinute: 1, Burst: 1}
	cs := f.session("agent-1")
	for range 2 {
		_, _ = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: toolspec.DescribeWorkflow, Arguments: map[string]any{}})
	}
	calls := obs.all()
	if len(calls) != 2 || calls[0].Outcome != enforce.OutcomeOK || calls[1].Outcome != enforce.OutcomeRateLimited || calls[1].Rule != string(policy.RuleRate) {
		t.Errorf("observed %+v, want ok then rate_limited by rate", calls)
	}
}

// An agent's text in a log line is cut short and escaped: no line break, no bidi override,
// no terminal escape reaches the log as it was sent.
func TestToolCallLogEscapesArguments(t *testing.T) {
	var obs observed
	var logs syncBuf
	var failing atomic.Bool
	url := observedFacade(t, &obs, &logs, &failing)
	cs := connectWith(t, url, "agent-1-long-token")
	reason := "line\nbreak \u202eevil\x1b[31m " + strings.Repeat("x", 500)
	_, _ = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: toolspec.HandoffTicket,
		Arguments: map[string]any{"number": 1, "command": "research", "to_state": "In Progress", "reason": reason}})
	lines := logs.lines(t)
	args, _ := lines[len(lines)-1]["arguments"].(string)
	for _, bad := range []string{"\n", "\u202e", "\x1b", strings.Repeat("x", maxArgRunes+1)} {
		if strings.Contains(args, bad) {
			t.Errorf("arguments %q hold %q", args, bad)
		}
	}
	for _, want := range []string{`reason="line\nbreak \u202eevil\x1b[31m`, `number=1`, `to_state="In Progress"`, "…"} {
		if !strings.Contains(args, want) {
			t.Errorf("arguments %q lack %q", args, want)
		}
	}
	if len(args) > maxArgsBytes+len("…") {
		t.Errorf("arguments are %d bytes long, want at most %d", len(args), maxArgsBytes)
	}
}

func connectWith(t *testing.T, url, token string) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: tokenTransport(token), Timeout: 10 * time.Second}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// FuzzObservedLabelsAreBounded: whatever token, tool name and arguments a caller sends, a call
// is counted only under a tool the façade has (or other) and an agent the configuration names:
// an unknown token is turned away before anything is counted.
func FuzzObservedLabelsAreBounded(f *testing.F) {
	f.Add("agent-1-long-token", toolspec.GetWorkflowState, `{"number":1}`)
	f.Add("wrong-token", toolspec.GetWorkflowState, `{"number":1}`)
	f.Add("researcher-long-token", "evil\u202etool", `{"x":"\n"}`)
	f.Add("", "", ``)
	var obs observed
	var logs syncBuf
	var failing atomic.Bool
	url := observedFacade(f, &obs, &logs, &failing)
	tools := []string{labelOther}
	for _, sp := range toolspec.Tools() {
		tools = append(tools, sp.Name)
	}
	f.Fuzz(func(t *testing.T, token, tool, args string) {
		if strings.ContainsFunc(token, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			t.Skip("no HTTP client can send this token")
		}
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
			"params": map[string]any{"name": tool, "arguments": json.RawMessage(validJSON(args))}})
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		for _, c := range obs.all() {
			if !slices.Contains(tools, c.Tool) || (c.Agent != "agent-1" && c.Agent != "researcher") {
				t.Fatalf("a call was counted under tool %q, agent %q", c.Tool, c.Agent)
			}
		}
	})
}

// validJSON is s when it is a JSON value, else s as a JSON string.
func validJSON(s string) string {
	if json.Valid([]byte(s)) {
		return s
	}
	b, _ := json.Marshal(s)
	return string(b)
}
