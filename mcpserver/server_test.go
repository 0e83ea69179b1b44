package mcpserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/health"
	"github.com/ralph-gate/ralph-gate/mcpserver/toolspec"
	"github.com/ralph-gate/ralph-gate/policy"
	"github.com/ralph-gate/ralph-gate/store"
)

var update = flag.Bool("update", false, "rewrite the tool schema snapshots in testdata/")

// board is an in-memory enforce.Board: issues by number (one item per project they are on),
// with sub-issues and open blockers by issue id.
type board struct {
	mu       sync.Mutex
	items    map[string]enforce.Item
	comments map[string][]string
	children map[string][]string // parent issue id → its sub-issues' ids
	blockers map[string][]string // issue id → its open blockers' ids
}

func newBoard(items ...enforce.Item) *board {
	b := &board{items: map[string]enforce.Item{}, comments: map[string][]string{}, children: map[string][]string{}, blockers: map[string][]string{}}
	for _, it := range items {
		b.items[it.ID] = it
	}
	return b
}

func issue(n int, state string) enforce.Item {
	id := "PVTI_" + string(rune('a'+n))
	return enforce.Item{ID: id, ProjectID: "PVT_1", ProjectNumber: 1, Owner: "acme", ContentType: enforce.ContentIssue,
		ContentID: "I_" + id, Number: n, Repo: "acme/app", Title: "Issue", Open: true, State: state, Estimate: "S"}
}

func (b *board) Item(_ context.Context, id string) (enforce.Item, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.items[id], nil
}

func (b *board) SetState(_ context.Context, it enforce.Item, state string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	cur := b.items[it.ID]
	cur.State = state
	b.items[it.ID] = cur
	return nil
}

func (b *board) SetStatesIf(ctx context.Context, ws []enforce.StateWrite) []error {
	errs := make([]error, len(ws))
	for i, w := range ws {
		b.mu.Lock()
		cur := b.items[w.Item.ID]
		b.mu.Unlock()
		if errs[i] = w.Guard(ctx, cur); errs[i] == nil {
			errs[i] = b.SetState(ctx, w.Item, w.State)
		}
	}
	return errs
}

func (b *board) AddComment(_ context.Context, subject, body string) (enforce.Comment, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.comments[subject] = append(b.comments[subject], body)
	return enforce.Comment{ID: "IC_1", DatabaseID: 1}, nil
}

func (b *board) UpdateComment(context.Context, string, string) error { return nil }

func (b *board) Family(_ context.Context, issueID, _ string) (enforce.Family, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	rel := func(id string) enforce.Relative {
		for _, it := range b.items {
			if it.ContentID == id {
				return enforce.Relative{IssueID: it.ContentID, Number: it.Number, Title: it.Title, Repo: it.Repo,
					Open: true, ItemID: it.ID, State: it.State, Estimate: it.Estimate, SubIssues: it.SubIssues}
			}
		}
		return enforce.Relative{}
	}
	fam := enforce.Family{Self: rel(issueID)}
	if fam.Self.IssueID == "" {
		return enforce.Family{}, nil
	}
	for _, id := range b.children[issueID] {
		fam.Children = append(fam.Children, rel(id))
	}
	for _, id := range b.blockers[issueID] {
		fam.OpenBlockers = append(fam.OpenBlockers, rel(id))
	}
	return fam, nil
}

func (b *board) IssueItems(_ context.Context, _, _ string, number int) ([]enforce.Item, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []enforce.Item
	for _, it := range b.items {
		if it.Number == number {
			out = append(out, it)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("issue #%d: %w", number, enforce.ErrNotFound)
	}
	slices.SortFunc(out, func(a, b enforce.Item) int { return a.ProjectNumber - b.ProjectNumber })
	return out, nil
}

func (b *board) FindComment(context.Context, string, string) (enforce.Comment, bool, error) {
	return enforce.Comment{}, false, nil
}

func (b *board) RateLimit() (enforce.RateLimit, bool) { return enforce.RateLimit{}, false }

func (b *board) ProjectItems(context.Context, string, int, string) (enforce.ItemsPage, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var page enforce.ItemsPage
	for _, it := range b.items {
		page.Items = append(page.Items, it)
	}
	page.Total = len(page.Items)
	return page, nil
}

func (b *board) SetIssueOpen(context.Context, string, bool, string) error { return nil }

func (b *board) ClosingIssues(context.Context, string, string, int) ([]enforce.IssueRef, error) {
	return nil, nil
}

// fixture is a façade over the default workflow, an in-memory board and an SQLite store.
type fixture struct {
	t     testing.TB
	board *board
	opts  Options
	st    *store.Store
}

func newFixture(t testing.TB, items ...enforce.Item) *fixture {
	t.Helper()
	return newFixtureSpec(t, nil, items...)
}

// newFixtureSpec is newFixture over the default workflow changed by edit (nil: unchanged).
// handoffWait is how long the fixtures' handoffs wait for the item's history to settle: this
// board reports no write of ours back, and with no sweeper a write is taken as reported once
// a second old (enforce.Options.HandoffWait).
const handoffWait = 3 * time.Second

func newFixtureSpec(t testing.TB, edit func(*policy.Spec), items ...enforce.Item) *fixture {
	t.Helper()
	spec := policy.DefaultSpec()
	if edit != nil {
		edit(&spec)
	}
	m, problems := policy.Compile(spec)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	st, err := store.Open(context.Background(), "sqlite", filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	svc := enforce.New(m, policy.Actors{Agents: []string{"agent-*"}}, st, nil, enforce.Options{AppLogin: "ralph-gate[bot]", HandoffWait: handoffWait})
	f := &fixture{t: t, board: newBoard(items...), st: st}
	f.opts = Options{
		Facade:      svc.Facade,
		Board:       func(context.Context, string) (enforce.Board, error) { return f.board, nil },
		Projects:    []enforce.ProjectRef{{Owner: "acme", Number: 1}},
		DefaultRepo: "app",
		Agents:      []Agent{{Name: "agent-1"}, {Name: "researcher", Commands: []string{"research"}}},
		Version:     "test",
		Health:      health.New(healthSource{st}, health.Options{Projects: []enforce.ProjectRef{{Owner: "acme", Number: 1}}, Spec: spec}),
	}
	return f
}

// session connects an in-process client to the façade as agent.
func (f *fixture) session(agent string) *mcp.ClientSession {
	f.t.Helper()
	opts := f.opts
	opts.Agent = agent
	srv := New(opts)
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { cs.Close() })
	return cs
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v", name, err)
	}
	if res.IsError {
		return res.Content[0].(*mcp.TextContent).Text
	}
	data, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatal(err)
	}
	return ""
}

// TestToolSchemas snapshots every tool as clients see it (name, description, hints, input and
// output schema): a change to the contract agents rely on shows up in review.
func TestToolSchemas(t *testing.T) {
	f := newFixture(t)
	cs := f.session("agent-1")
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != len(toolspec.Tools()) {
		t.Fatalf("want %d tools, got %d", len(toolspec.Tools()), len(res.Tools))
	}
	for _, tool := range res.Tools {
		got, err := json.MarshalIndent(tool, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, '\n')
		file := filepath.Join("testdata", tool.Name+".json")
		if *update {
			if err := os.MkdirAll("testdata", 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("%v (run go test ./mcpserver -run TestToolSchemas -update)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("tool %s differs from %s: run go test ./mcpserver -run TestToolSchemas -update and review the diff", tool.Name, file)
		}
		if tool.Annotations == nil || tool.Annotations.DestructiveHint == nil {
			t.Errorf("tool %s has no hints", tool.Name)
		}
	}
}

func TestHandoffInProcess(t *testing.T) {
	f := newFixture(t, issue(1, "Research Needed"), issue(2, "Backlog"))
	cs := f.session("agent-1")
	var out toolspec.HandoffOutput
	if msg := callTool(t, cs, toolspec.HandoffTicket, map[string]any{"number": 1, "command": "research", "intent": "lock", "reason": "mine"}, &out); msg != "" {
		t.Fatal(msg)
	}
	if out.PreviousState != "Research Needed" || out.NewState != "Research in Progress" || out.Guidance.LockHolder != "agent-1" || !out.Guidance.IsLock {
		t.Fatalf("%+v", out)
	}
	if c := f.board.comments["I_PVTI_b"]; len(c) != 1 || !strings.Contains(c[0], "ralph-transition") {
		t.Fatalf("comments: %v", c)
	}
	rec, err := f.st.GetItem(context.Background(), "PVTI_b")
	if err != nil || rec.LockHolder != "agent-1" || rec.LastLegalState != "Research in Progress" {
		t.Fatalf("store: %+v %v", rec, err)
	}
	// Refusals are tool errors with a Recovery, never protocol errors.
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"number": 2, "command": "research", "intent": "lock", "reason": "x"}, "intent complete (→ Ready for Plan)"},
		{map[string]any{"number": 2, "command": "nope", "intent": "lock", "reason": "x"}, `Unknown command "nope"`},
		{map[string]any{"number": 2, "command": "research", "reason": "x"}, "Neither intent nor to_state"},
		{map[string]any{"number": 2, "command": "research", "intent": "lock"}, "handoff_ticket: argument `reason` is missing"},
		{map[string]any{"number": 2, "command": "research", "intent": "lock", "reason": "   "}, "Invalid reason"},
		{map[string]any{"number": 0, "command": "research", "intent": "lock", "reason": "x"}, "Invalid number"},
		{map[string]any{"number": 77, "command": "research", "intent": "lock", "reason": "x"}, "was not found"},
		{map[string]any{"number": 2, "command": "research", "intent": "lock", "reason": "x", "extra": 1}, "extra"},
		{map[string]any{"number": 1, "owner": "elsewhere", "command": "research", "intent": "lock", "reason": "x"}, "no project ralph-gate enforces"},
	} {
		msg := callTool(t, cs, toolspec.HandoffTicket, tc.args, &out)
		if !strings.Contains(msg, tc.want) {
			t.Errorf("%v: want a tool error containing %q, got %q", tc.args, tc.want, msg)
		}
	}
	// Another agent cannot take the lock; a research-only agent cannot use impl.
	other := f.session("agent-2")
	if msg := callTool(t, other, toolspec.HandoffTicket, map[string]any{"number": 1, "command": "research", "intent": "complete", "reason": "x"}, &out); !strings.Contains(msg, "locked by agent-1") {
		t.Errorf("lock ownership: %q", msg)
	}
	rs := f.session("researcher")
	if msg := callTool(t, rs, toolspec.HandoffTicket, map[string]any{"number": 2, "command": "impl", "intent": "lock", "reason": "x"}, &out); !strings.Contains(msg, "may only use the commands research") {
		t.Errorf("command limit: %q", msg)
	}
	// The same handoff twice is harmless.
	if msg := callTool(t, cs, toolspec.HandoffTicket, map[string]any{"number": 1, "command": "research", "intent": "lock", "reason": "again"}, &out); msg != "" || out.Changed {
		t.Errorf("repeat: %q %+v", msg, out)
	}
}

func TestReadToolsInProcess(t *testing.T) {
	f := newFixture(t, issue(1, "Research Needed"), issue(2, "Research Needed"), issue(3, "Ready for Plan"))
	cs := f.session("agent-1")
	var st toolspec.StateOutput
	if msg := callTool(t, cs, toolspec.GetWorkflowState, map[string]any{"number": 3}, &st); msg != "" {
		t.Fatal(msg)
	}
	if st.State != "Ready for Plan" || !strings.Contains(strings.Join(st.Guidance.CommandsExpecting, ","), "plan,plan_epic") || st.Parent != nil {
		t.Fatalf("%+v", st)
	}
	var pos toolspec.PipelineOutput
	if msg := callTool(t, cs, toolspec.DetectPipelinePosition, map[string]any{"number": 3}, &pos); msg != "" || pos.Phase != "PLAN" || pos.IsGroup {
		t.Fatalf("%q %+v", msg, pos)
	}
	var conv toolspec.ConvergenceOutput
	if msg := callTool(t, cs, toolspec.CheckConvergence, map[string]any{"number": 1, "targetState": "Ready for Plan"}, &conv); msg != "" || conv.Converged || conv.Total != 1 {
		t.Fatalf("%q %+v", msg, conv)
	}
	var pick toolspec.PickOutput
	if msg := callTool(t, cs, toolspec.PickActionableIssue, map[string]any{"workflowState": "Research Needed"}, &pick); msg != "" || !pick.Found || pick.Issue.Number != 1 || pick.Alternatives != 1 {
		t.Fatalf("%q %+v", msg, pick)
	}
	if msg := callTool(t, cs, toolspec.PickActionableIssue, map[string]any{"workflowState": "Nowhere"}, &pick); !strings.Contains(msg, "Unknown workflow state") {
		t.Fatalf("%q", msg)
	}
	if msg := callTool(t, cs, toolspec.PickActionableIssue, map[string]any{"workflowState": "Research Needed", "maxEstimate": "XXL"}, &pick); !strings.Contains(msg, "Unknown maxEstimate") {
		t.Fatalf("%q", msg)
	}
	var adv toolspec.AdvanceOutput
	if msg := callTool(t, cs, toolspec.AdvanceChildren, map[string]any{"number": 3, "targetState": "Ready for Plan"}, &adv); msg != "" || len(adv.Advanced) != 0 {
		t.Fatalf("%q %+v", msg, adv)
	}
	var desc toolspec.DescribeOutput
	if msg := callTool(t, cs, toolspec.DescribeWorkflow, map[string]any{}, &desc); msg != "" || len(desc.States) != 11 || len(desc.Commands) == 0 || desc.Agent != "agent-1" {
		t.Fatalf("%q %+v", msg, desc)
	}
	res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: toolspec.WorkflowResourceURI})
	if err != nil || len(res.Contents) != 1 || res.Contents[0].MIMEType != "application/json" {
		t.Fatalf("%+v %v", res, err)
	}
}

// TestBearerAuth: no tool runs without a configured token; the token's agent is the caller.
func TestBearerAuth(t *testing.T) {
	f := newFixture(t, issue(1, "Research Needed"))
	srv := httptest.NewServer(Handler(New(f.opts), []Credential{{Name: "agent-1", Hash: sha256.Sum256([]byte("a-long-enough-token"))}}, Limits{}))
	defer srv.Close()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	for _, tc := range []struct {
		auth string
		want int
	}{{"", 401}, {"Bearer wrong", 401}, {"Bearer a-long-enough-token", 200}, {"bearer a-long-enough-token", 200}, {"Token a-long-enough-token", 401}} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("Authorization %q: status %d, want %d", tc.auth, resp.StatusCode, tc.want)
		}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL,
		HTTPClient: &http.Client{Transport: tokenTransport("a-long-enough-token"), Timeout: 10 * time.Second}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var out toolspec.HandoffOutput
	if msg := callTool(t, cs, toolspec.HandoffTicket, map[string]any{"number": 1, "command": "research", "intent": "lock", "reason": "x"}, &out); msg != "" || out.Guidance.LockHolder != "agent-1" {
		t.Fatalf("%q %+v", msg, out)
	}
}

type tokenTransport string

func (tt tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(tt))
	return http.DefaultTransport.RoundTrip(r)
}

// A claim answers the issue as the claim left it: in the state the handoff moved it to, and
// locked; without claim, as it is.
func TestPickClaimReportsTheClaimedState(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   map[string]any
		state  string
		locked bool
	}{
		{"claim", map[string]any{"workflowState": "Research Needed", "claim": true, "command": "research"}, "Research in Progress", true},
		{"no claim", map[string]any{"workflowState": "Research Needed"}, "Research Needed", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, issue(1, "Research Needed"))
			var out toolspec.PickOutput
			if msg := callTool(t, f.session("agent-1"), toolspec.PickActionableIssue, tc.args, &out); msg != "" {
				t.Fatal(msg)
			}
			if !out.Found || out.Issue == nil || out.Issue.WorkflowState != tc.state || out.Issue.IsLocked != tc.locked {
				t.Fatalf("issue %+v, want it in %s, locked %v", out.Issue, tc.state, tc.locked)
			}
			if out.Claimed != (out.Handoff != nil) || out.Handoff != nil && out.Handoff.NewState != out.Issue.WorkflowState {
				t.Fatalf("the issue says %s, the handoff %+v", out.Issue.WorkflowState, out.Handoff)
			}
		})
	}
}
