package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"github.com/ralph-gate/ralph-gate/enforce"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/ghsim"
	"github.com/ralph-gate/ralph-gate/marker"
	"github.com/ralph-gate/ralph-gate/mcpserver/toolspec"
)

// Tokens of the agents the MCP tests configure (test values, not secrets).
const (
	agent1Token     = "agent-1-mcp-token-0001"
	agent2Token     = "agent-2-mcp-token-0002"
	researcherToken = "researcher-mcp-token-03"
)

const mcpSeed = `org: acme
app: {id: 1001, slug: ralph-gate, installation_id: 2002, webhook_secret: sandbox-c4f5601eebadb3454e70cbd7}
users:
  - {login: alice, token: alice-token}
  - {login: owner, token: owner-token}
repos: [app]
projects:
  - number: 1
    title: Ralph
    fields:
      Workflow State: [Backlog, Research Needed, Research in Progress, Ready for Plan, Plan in Progress,
                       Plan in Review, In Progress, In Review, Done, Canceled, Human Needed]
      Priority: [P0, P1, P2, P3]
      Estimate: [XS, S, M, L, XL]
issues:
  - {repo: app, number: 1, title: Research the cache, project: 1, fields: {Workflow State: Research Needed, Estimate: S, Priority: P1}}
  - {repo: app, number: 2, title: Untriaged idea, project: 1, fields: {Workflow State: Backlog, Estimate: S}}
  - {repo: app, number: 5, title: Small research, project: 1, fields: {Workflow State: Research Needed, Estimate: XS, Priority: P0}}
  - {repo: app, number: 10, title: Epic - search, project: 1, fields: {Workflow State: Research Needed, Estimate: M}}
  - {repo: app, number: 11, title: Index, parent: 10, project: 1, fields: {Workflow State: Ready for Plan, Estimate: S}}
  - {repo: app, number: 12, title: Rank, parent: 10, blocked_by: [13], project: 1, fields: {Workflow State: Research Needed, Estimate: XS}}
  - {repo: app, number: 13, title: Tokenize, parent: 10, project: 1, fields: {Workflow State: Ready for Plan, Estimate: S}}
  - {repo: app, number: 20, title: Epic - reports, project: 1, fields: {Workflow State: Ready for Plan, Estimate: L}}
  - {repo: app, number: 21, title: Backlog child, parent: 20, project: 1, fields: {Workflow State: Backlog}}
  - {repo: app, number: 22, title: Research child, parent: 20, project: 1, fields: {Workflow State: Research Needed, Estimate: M}}
  - {repo: app, number: 23, title: Done child, parent: 20, project: 1, fields: {Workflow State: Done}}
  - {repo: app, number: 24, title: Escalated child, parent: 20, project: 1, fields: {Workflow State: Human Needed}}
  - {repo: app, number: 25, title: Planning child, parent: 20, project: 1, fields: {Workflow State: Plan in Progress}}
`

func configureMCP(c *config.Config) {
	sum := sha256.Sum256([]byte(agent2Token))
	c.MCP = config.MCP{DefaultRepo: "app", Agents: []config.MCPAgent{
		{Name: "agent-1", Token: agent1Token},
		{Name: "agent-2", TokenSHA256: hex.EncodeToString(sum[:])},
		{Name: "researcher", Token: researcherToken, Commands: []string{"ralph_research"}},
	}}
}

type bearerTransport struct {
	token string
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// agentClient connects the SDK's client to the app's /mcp over HTTP with a bearer token.
func (e *env) agentClient(token string) *mcp.ClientSession {
	e.t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-agent", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint:   e.sb.AppURL + "/mcp",
		HTTPClient: &http.Client{Transport: bearerTransport{token: token}, Timeout: 30 * time.Second},
	}, nil)
	if err != nil {
		e.t.Fatalf("connect: %v", err)
	}
	e.t.Cleanup(func() { cs.Close() })
	return cs
}

// call calls a tool; a tool error is returned as its text, a protocol error fails the test.
func call[Out any](t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (Out, string) {
	t.Helper()
	var out Out
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s(%v): protocol error %v", tool, args, err)
	}
	if res.IsError {
		var text []string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text = append(text, tc.Text)
			}
		}
		return out, strings.Join(text, "\n")
	}
	data, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("%s: decode %s: %v", tool, data, err)
	}
	return out, ""
}

func mustCall[Out any](t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) Out {
	t.Helper()
	out, toolErr := call[Out](t, cs, tool, args)
	if toolErr != "" {
		t.Fatalf("%s(%v) refused: %s", tool, args, toolErr)
	}
	return out
}

func TestMCPHandoffChainEndToEnd(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, driver string) {
		e := start(t, driver, []byte(mcpSeed), configureMCP)
		cs := e.agentClient(agent1Token)

		steps := []struct {
			command, intent, want string
		}{
			{"research", "lock", "Research in Progress"},
			{"ralph_research", "__COMPLETE__", "Ready for Plan"},
			{"plan", "lock", "Plan in Progress"},
			{"plan", "complete", "Plan in Review"},
			{"review", "complete", "In Progress"},
		}
		prev := "Research Needed"
		for i, st := range steps {
			out := mustCall[toolspec.HandoffOutput](t, cs, toolspec.HandoffTicket, map[string]any{
				"number": 1, "command": st.command, "intent": st.intent, "reason": "step " + st.intent})
			if out.PreviousState != prev || out.NewState != st.want || !out.Changed {
				t.Fatalf("step %d: %+v", i, out)
			}
			prev = st.want
			e.settle()
			e.wantState(1, st.want) // our own write is not reverted
		}
		// Guidance after the review: In Progress is impl's lock; agents may go to In Review.
		ws := mustCall[toolspec.StateOutput](t, cs, toolspec.GetWorkflowState, map[string]any{"number": 1})
		if ws.State != "In Progress" || ws.LastLegalState != "In Progress" || !ws.Guidance.IsLock ||
			!strings.Contains(strings.Join(ws.Guidance.AllowedNext, ","), "In Review") {
			t.Fatalf("state after the chain: %+v", ws)
		}
		// The lock taken by the plan handoff named the agent.
		cs2 := e.agentClient(agent2Token)
		if _, refused := call[toolspec.HandoffOutput](t, cs2, toolspec.HandoffTicket, map[string]any{
			"number": 1, "command": "impl", "intent": "complete", "reason": "not mine"}); refused == "" {
			// The review handoff made In Progress a fresh lock held by agent-1.
			t.Fatal("agent-2 moved an item locked by agent-1")
		} else if !strings.Contains(refused, "locked by agent-1") || !strings.Contains(refused, "Recovery: ") {
			t.Fatalf("lock refusal: %s", refused)
		}

		// One audit comment per handoff, with the marker, the command and the reason.
		cs1 := e.comments(1)
		if len(cs1) != len(steps) {
			t.Fatalf("want %d comments, got %d", len(steps), len(cs1))
		}
		for i, c := range cs1 {
			ms, err := marker.ParseTransitions(c.Body)
			if err != nil || len(ms) != 1 || ms[0].Command == nil || ms[0].Actor != "agent-1" || ms[0].Verdict != "handoff" || ms[0].To != steps[i].want {
				t.Fatalf("comment %d marker: %+v %v\n%s", i, ms, err, c.Body)
			}
			if c.Author != "ralph-gate[bot]" || !strings.Contains(c.Body, "step "+steps[i].intent) || !strings.Contains(c.Body, "`agent-1`") {
				t.Fatalf("comment %d: %s by %s", i, c.Body, c.Author)
			}
		}
		handoffs := 0
		for _, a := range e.audit(1) {
			if a.Verdict == enforce.VerdictHandoff {
				handoffs++
				if a.Actor != "agent-1" || a.ActorKind != "agent" {
					t.Errorf("audit entry %+v", a)
				}
			}
			if a.Verdict == enforce.VerdictReverted {
				t.Errorf("a handoff was reverted: %+v", a)
			}
		}
		if handoffs != len(steps) {
			t.Fatalf("want %d handoff audit entries, got %d", len(steps), handoffs)
		}
	})
}

func TestMCPRefusals(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, driver string) {
		e := start(t, driver, []byte(mcpSeed), configureMCP)
		cs := e.agentClient(agent1Token)

		// An illegal handoff: research cannot lock an issue still in Backlog.
		_, refused := call[toolspec.HandoffOutput](t, cs, toolspec.HandoffTicket, map[string]any{
			"number": 2, "command": "research", "intent": "lock", "reason": "start"})
		for _, want := range []string{"Backlog", "Research in Progress", "Recovery: ", "intent complete (→ Ready for Plan)", "release (→ Research Needed)"} {
			if !strings.Contains(refused, want) {
				t.Errorf("refusal lacks %q: %s", want, refused)
			}
		}
		e.settle()
		e.wantState(2, "Backlog")
		if n := len(e.comments(2)); n != 0 {
			t.Errorf("a refused handoff commented (%d)", n)
		}
		// An intent the command does not define, and both intent and to_state.
		if _, refused := call[toolspec.HandoffOutput](t, cs, toolspec.HandoffTicket, map[string]any{
			"number": 2, "command": "triage", "intent": "complete", "reason": "x"}); !strings.Contains(refused, `retry without intent, with to_state "Research Needed"`) {
			t.Errorf("ambiguous intent: %s", refused)
		}
		if _, refused := call[toolspec.HandoffOutput](t, cs, toolspec.HandoffTicket, map[string]any{
			"number": 2, "command": "triage", "intent": "complete", "to_state": "Ready for Plan", "reason": "x"}); !strings.Contains(refused, "Both intent and to_state") {
			t.Errorf("intent and to_state: %s", refused)
		}
		// A direct state works for triage.
		out := mustCall[toolspec.HandoffOutput](t, cs, toolspec.HandoffTicket, map[string]any{
			"number": 2, "repo": "acme/app", "command": "triage", "to_state": "Research Needed", "reason": "needs research"})
		if out.NewState != "Research Needed" || !slicesContain(out.Guidance.CommandsExpecting, "research") {
			t.Fatalf("triage: %+v", out)
		}
		// An issue that does not exist, and an organization that is not enforced.
		if _, refused := call[toolspec.StateOutput](t, cs, toolspec.GetWorkflowState, map[string]any{"number": 999}); !strings.Contains(refused, "not found") {
			t.Errorf("missing issue: %s", refused)
		}
		if _, refused := call[toolspec.StateOutput](t, cs, toolspec.GetWorkflowState, map[string]any{"owner": "other", "number": 1}); !strings.Contains(refused, "no project ralph-gate enforces") {
			t.Errorf("other org: %s", refused)
		}

		// An agent limited to research cannot hand off with impl.
		rs := e.agentClient(researcherToken)
		_, refused = call[toolspec.HandoffOutput](t, rs, toolspec.HandoffTicket, map[string]any{
			"number": 1, "command": "impl", "intent": "lock", "reason": "sneaky"})
		if !strings.Contains(refused, "researcher may only use the commands research") || !strings.Contains(refused, "Recovery: ") {
			t.Fatalf("command limit: %s", refused)
		}
		if got := mustCall[toolspec.HandoffOutput](t, rs, toolspec.HandoffTicket, map[string]any{
			"number": 1, "command": "research", "intent": "lock", "reason": "mine"}); got.NewState != "Research in Progress" || got.Guidance.LockHolder != "researcher" {
			t.Fatalf("researcher lock: %+v", got)
		}
		desc := mustCall[toolspec.DescribeOutput](t, rs, toolspec.DescribeWorkflow, map[string]any{})
		if desc.Agent != "researcher" || strings.Join(desc.YourCommands, ",") != "research" || len(desc.States) != 11 {
			t.Fatalf("describe for the researcher: agent %q commands %v states %d", desc.Agent, desc.YourCommands, len(desc.States))
		}
		res, err := rs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: toolspec.WorkflowResourceURI})
		if err != nil || len(res.Contents) != 1 || !strings.Contains(res.Contents[0].Text, `"Research in Progress"`) {
			t.Fatalf("workflow resource: %v %v", res, err)
		}
	})
}

func slicesContain(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func TestMCPAuthentication(t *testing.T) {
	t.Parallel()
	e := start(t, "sqlite", []byte(mcpSeed), configureMCP)
	before := len(e.sb.Sim.Requests().Entries)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"handoff_ticket","arguments":{"number":2,"command":"triage","to_state":"Research Needed","reason":"x"}}}`
	for name, header := range map[string]string{"missing": "", "wrong": "Bearer not-a-configured-token", "basic": "Basic " + agent1Token, "prefix": "Bearer " + agent1Token[:10]} {
		req, _ := http.NewRequest(http.MethodPost, e.sb.AppURL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if header != "" {
			req.Header.Set("Authorization", header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s token: status %d, want 401", name, resp.StatusCode)
		}
	}
	// The SDK's client with a wrong token cannot even connect.
	client := mcp.NewClient(&mcp.Implementation{Name: "intruder", Version: "1"}, nil)
	if _, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: e.sb.AppURL + "/mcp",
		HTTPClient: &http.Client{Transport: bearerTransport{token: "wrong-token-wrong-token"}}, MaxRetries: -1}, nil); err == nil {
		t.Error("a wrong token connected")
	}
	e.settle()
	e.wantState(2, "Backlog")
	if after := len(e.sb.Sim.Requests().Entries); after != before {
		t.Errorf("unauthenticated requests reached GitHub: %d requests", after-before)
	}
	if n := len(e.audit(2)); n != 0 {
		t.Errorf("unauthenticated requests were audited: %d", n)
	}
}

func TestMCPClaimRace(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, driver string) {
		e := start(t, driver, []byte(mcpSeed), configureMCP)
		a1, a2 := e.agentClient(agent1Token), e.agentClient(agent2Token)
		// Without claim nothing changes, and #5 (P0, XS) ranks first.
		peek := mustCall[toolspec.PickOutput](t, a1, toolspec.PickActionableIssue, map[string]any{"workflowState": "Research Needed", "maxEstimate": "S"})
		if !peek.Found || peek.Issue.Number != 5 || peek.Claimed || peek.Alternatives < 1 {
			t.Fatalf("peek: %+v", peek)
		}
		args := map[string]any{"workflowState": "Research Needed", "maxEstimate": "XS", "claim": true, "command": "research"}
		var wg sync.WaitGroup
		results := make([]toolspec.PickOutput, 2)
		for i, cs := range []*mcp.ClientSession{a1, a2} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = mustCall[toolspec.PickOutput](t, cs, toolspec.PickActionableIssue, args)
			}()
		}
		wg.Wait()
		winners := 0
		for _, r := range results {
			if r.Claimed {
				winners++
				if r.Issue.Number != 5 || r.Handoff == nil || r.Handoff.NewState != "Research in Progress" {
					t.Errorf("winner: %+v", r)
				}
			} else if r.Found || !strings.Contains(r.Message, "nothing actionable") {
				t.Errorf("loser: %+v", r)
			}
		}
		if winners != 1 {
			t.Fatalf("want exactly one winner, got %d: %+v", winners, results)
		}
		e.settle()
		e.wantState(5, "Research in Progress")
		if n := len(e.comments(5)); n != 1 {
			t.Errorf("want one audit comment on #5, got %d", n)
		}
	})
}

func TestMCPGroupTools(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, driver string) {
		e := start(t, driver, []byte(mcpSeed), configureMCP)
		cs := e.agentClient(agent1Token)

		// policy.DetectPipeline: a member in Research Needed makes the group RESEARCH, not converged.
		pos := mustCall[toolspec.PipelineOutput](t, cs, toolspec.DetectPipelinePosition, map[string]any{"number": 11})
		var order []int
		for _, is := range pos.Issues {
			order = append(order, is.Number)
		}
		if pos.Phase != "RESEARCH" || !pos.IsGroup || pos.GroupParent != 10 || pos.Convergence.Met || pos.Convergence.Recommendation != "wait" ||
			len(pos.Convergence.Blocking) != 1 || pos.Convergence.Blocking[0].Number != 12 ||
			strings.Join(pos.RemainingPhases, ",") != "research,plan,review,implement,pr" ||
			pos.SuggestedRoster.Analyst != 1 || pos.SuggestedRoster.Builder != 1 || pos.SuggestedRoster.Integrator != 1 {
			t.Fatalf("pipeline position: %+v", pos)
		}
		if strings.Trim(strings.Join(strings.Fields(strings.Trim(jsonOf(order), "[]")), ""), ",") != "11,13,12" || pos.GroupPrimary != 11 {
			t.Fatalf("group order %v (primary %d), want blockers first: 11, 13, 12", order, pos.GroupPrimary)
		}
		// An epic with an M estimate alone is a SPLIT candidate... but #10 has sub-issues: its
		// group is its children.
		if epic := mustCall[toolspec.PipelineOutput](t, cs, toolspec.DetectPipelinePosition, map[string]any{"number": 10}); epic.Phase != "RESEARCH" || len(epic.Issues) != 3 {
			t.Fatalf("epic position: %+v", epic)
		}
		conv := mustCall[toolspec.ConvergenceOutput](t, cs, toolspec.CheckConvergence, map[string]any{"number": 12, "targetState": "Ready for Plan"})
		if conv.Converged || conv.Total != 3 || conv.Ready != 2 || len(conv.Blocking) != 1 || conv.Blocking[0].Number != 12 ||
			conv.Blocking[0].DistanceToTarget != 2 || conv.Recommendation != "wait" {
			t.Fatalf("convergence: %+v", conv)
		}
		if _, refused := call[toolspec.ConvergenceOutput](t, cs, toolspec.CheckConvergence, map[string]any{"number": 12, "targetState": "Nowhere"}); !strings.Contains(refused, "Recovery: retry with targetState") {
			t.Fatalf("unknown target: %s", refused)
		}
		// #12 is blocked by #13: locking it is refused by the blockers gate.
		if _, refused := call[toolspec.HandoffOutput](t, cs, toolspec.HandoffTicket, map[string]any{"number": 12, "command": "research", "intent": "lock", "reason": "x"}); !strings.Contains(refused, "#13") {
			t.Fatalf("blocked lock: %s", refused)
		}
		mustCall[toolspec.HandoffOutput](t, cs, toolspec.HandoffTicket, map[string]any{"number": 12, "command": "research", "intent": "complete", "reason": "known already"})
		e.settle()
		conv = mustCall[toolspec.ConvergenceOutput](t, cs, toolspec.CheckConvergence, map[string]any{"number": 12, "targetState": "Ready for Plan"})
		if !conv.Converged || conv.Recommendation != "proceed" || conv.Ready != 3 {
			t.Fatalf("convergence after the handoff: %+v", conv)
		}
		// Every child at Ready for Plan: the parent converged there (automation after a handoff).
		e.wantState(10, "Ready for Plan")
		if pos := mustCall[toolspec.PipelineOutput](t, cs, toolspec.DetectPipelinePosition, map[string]any{"number": 11}); pos.Phase != "PLAN" || !pos.Convergence.Met {
			t.Fatalf("after convergence: %+v", pos)
		}

		// advance_children: children never get ahead of their parent; partial results name why.
		if _, refused := call[toolspec.AdvanceOutput](t, cs, toolspec.AdvanceChildren, map[string]any{"number": 20, "targetState": "In Progress"}); !strings.Contains(refused, "children never get ahead") {
			t.Fatalf("ahead of the parent: %s", refused)
		}
		adv := mustCall[toolspec.AdvanceOutput](t, cs, toolspec.AdvanceChildren, map[string]any{"number": 20, "targetState": "Ready for Plan"})
		got := map[int]string{}
		for _, a := range adv.Advanced {
			got[a.Number] = a.FromState + "→" + a.ToState
		}
		if len(adv.Advanced) != 2 || got[21] != "Backlog→Ready for Plan" || got[22] != "Research Needed→Ready for Plan" || len(adv.Skipped) != 3 || len(adv.Errors) != 0 {
			t.Fatalf("advance: %+v", adv)
		}
		for _, sk := range adv.Skipped {
			if sk.Reason == "" || (sk.Number != 23 && sk.Number != 24 && sk.Number != 25) {
				t.Errorf("skip %+v", sk)
			}
		}
		e.settle()
		e.wantState(21, "Ready for Plan")
		e.wantState(22, "Ready for Plan")
		e.wantState(24, "Human Needed")
		again := mustCall[toolspec.AdvanceOutput](t, cs, toolspec.AdvanceChildren, map[string]any{"number": 20, "targetState": "Ready for Plan"})
		if len(again.Advanced) != 0 {
			t.Fatalf("advance_children is not idempotent: %+v", again)
		}
	})
}

func jsonOf(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}

// A close and a reopen whose webhooks failed leave #2 open, as its history left it; the issue's
// timeline (read with the item over GraphQL, the App's own events told apart) tells of them, and
// agent-1's handoff of #2 is refused as busy until the sweep has redelivered them and they are
// judged; then it is made.
func TestHandoffWaitsForAnUnreportedCloseAndReopenEndToEnd(t *testing.T) {
	t.Parallel()
	e := start(t, "sqlite", []byte(mcpSeed), configureMCP)
	cs := e.agentClient(agent1Token)
	mustCall[toolspec.StateOutput](t, cs, toolspec.GetWorkflowState, map[string]any{"number": 2}) // known before
	e.faults(ghsim.Faults{Webhook: ghsim.WebhookFaults{DropRate: 1}})                             // failed: GitHub lists them
	e.patchIssue("alice", 2, `{"state":"closed"}`)
	e.patchIssue("alice", 2, `{"state":"open"}`)
	e.delivered()
	e.faults(ghsim.Faults{})
	args := map[string]any{"number": 2, "command": "triage", "to_state": "Research Needed", "reason": "triaged"}
	if _, refused := call[toolspec.HandoffOutput](t, cs, toolspec.HandoffTicket, args); !strings.Contains(refused, "#2: it was reopened at ") ||
		!strings.Contains(refused, "wait a few seconds and retry") {
		t.Fatalf("handoff over an unreported close and reopen: %q", refused)
	}
	e.wantState(2, "Backlog")
	if rep, err := e.sb.App.SweepNow(context.Background()); err != nil || rep.Redelivered != 2 {
		t.Fatalf("sweep: %+v %v; want both deliveries redelivered", rep, err)
	}
	e.settle()
	out := mustCall[toolspec.HandoffOutput](t, cs, toolspec.HandoffTicket, args)
	if out.PreviousState != "Backlog" || out.NewState != "Research Needed" || !out.Changed {
		t.Fatalf("handoff after the close and the reopen were judged: %+v", out)
	}
	e.settle()
	e.wantState(2, "Research Needed")
}
