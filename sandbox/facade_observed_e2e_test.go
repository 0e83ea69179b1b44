package sandbox

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ralph-gate/ralph-gate/app"
	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/ghsim"
	"github.com/ralph-gate/ralph-gate/health"
	"github.com/ralph-gate/ralph-gate/mcpserver/toolspec"
)

// facadeCall is one call the acceptance test makes and how it must be counted.
type facadeCall struct {
	tool    string
	args    map[string]any
	outcome string
	rule    string
}

// The façade observed (docs/OPERATIONS.md "The façade"): every tool, called through the SDK's
// client so that it goes through, is refused by a rule, and is refused for its arguments, is
// counted in /metrics by tool, agent, outcome and rule, timed per tool, and its GitHub
// requests are counted per tool; an agent past its rate is rate_limited; a call GitHub cannot
// answer is an error; and board_health / `ralph-gate report --facade` show the same counts,
// read from the store. Tokens nobody configured never add a label.
func TestFacadeCallsAreMeasuredEndToEnd(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, driver string) {
		e := start(t, driver, []byte(mcpSeed), func(c *config.Config) {
			configureMCP(c)
			c.MCP.Limits = config.MCPLimits{CallsPerMinute: 60, Burst: 40, MaxBatch: 10, GitHubReserve: 0.5}
		})
		e.settle()
		cs := e.agentClient(agent1Token)
		calls := []facadeCall{
			{toolspec.GetWorkflowState, map[string]any{"number": 1}, "ok", ""},
			{toolspec.GetWorkflowState, map[string]any{"number": 1, "project": 7}, "refused", "not_found"},
			{toolspec.GetWorkflowState, map[string]any{"number": "one"}, "refused", "arguments"},
			{toolspec.DetectPipelinePosition, map[string]any{"number": 10}, "ok", ""},
			{toolspec.DetectPipelinePosition, map[string]any{"number": 1, "owner": "nobody"}, "refused", "not_found"},
			{toolspec.DetectPipelinePosition, map[string]any{}, "refused", "arguments"},
			{toolspec.CheckConvergence, map[string]any{"number": 11, "targetState": "Ready for Plan"}, "ok", ""},
			{toolspec.CheckConvergence, map[string]any{"number": 11, "targetState": "Human Needed"}, "refused", "arguments"},
			{toolspec.CheckConvergence, map[string]any{"number": 11, "targetState": 5}, "refused", "arguments"},
			{toolspec.AdvanceChildren, map[string]any{"number": 20, "targetState": "In Progress"}, "refused", "convergence"},
			{toolspec.AdvanceChildren, map[string]any{"number": 20}, "refused", "arguments"},
			{toolspec.AdvanceChildren, map[string]any{"number": 20, "targetState": "Ready for Plan"}, "ok", ""},
			{toolspec.PickActionableIssue, map[string]any{"workflowState": "Research Needed"}, "ok", ""},
			{toolspec.PickActionableIssue, map[string]any{"workflowState": "Research Needed", "project": 7}, "refused", "not_found"},
			{toolspec.PickActionableIssue, map[string]any{"workflowState": 3}, "refused", "arguments"},
			{toolspec.DescribeWorkflow, map[string]any{}, "ok", ""},
			{toolspec.DescribeWorkflow, map[string]any{"verbose": true}, "refused", "arguments"},
			{toolspec.BoardHealth, map[string]any{}, "ok", ""},
			{toolspec.BoardHealth, map[string]any{"project": 9}, "refused", "not_found"},
			{toolspec.BoardHealth, map[string]any{"project": "acme/1"}, "refused", "arguments"},
			{toolspec.HandoffTicket, map[string]any{"number": 2, "command": "plan", "to_state": "Plan in Progress", "reason": "skip ahead"}, "refused", "transition"},
			{toolspec.HandoffTicket, map[string]any{"number": 2}, "refused", "arguments"},
			{toolspec.HandoffTicket, map[string]any{"number": 5, "command": "research", "intent": "lock", "reason": "mine"}, "ok", ""},
			{"drop_table", map[string]any{}, "refused", "arguments"},
		}
		want := map[string]int{} // series labels → count
		for _, c := range calls {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
			ok := err == nil && !res.IsError
			if ok != (c.outcome == "ok") {
				t.Fatalf("%s(%v): answered %v / %v, want %s", c.tool, c.args, res, err, c.outcome)
			}
			tool := c.tool
			if tool == "drop_table" {
				tool = "other"
			}
			want[fmt.Sprintf(`agent="agent-1",outcome=%q,rule=%q,tool=%q`, c.outcome, c.rule, tool)]++
			e.settle()
		}

		// One read in a quiet moment: the requests counted for it are those GitHub saw.
		before, metricBefore := e.sb.Sim.Requests().Total, series(t, e, "ralph_gate_mcp_github_requests_total", `tool="get_workflow_state"`)
		mustCall[toolspec.StateOutput](t, cs, toolspec.GetWorkflowState, map[string]any{"number": 5})
		want[`agent="agent-1",outcome="ok",rule="",tool="get_workflow_state"`]++
		seen, counted := appRequestsBetween(e, before), series(t, e, "ralph_gate_mcp_github_requests_total", `tool="get_workflow_state"`)-metricBefore
		if seen == 0 || counted != seen {
			t.Errorf("a get_workflow_state made %d GitHub requests, counted %d", seen, counted)
		}

		// GitHub down: an error, not a refusal.
		if err := e.sb.Sim.SetFaults(ghsim.Faults{ErrorRate: 1}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: toolspec.GetWorkflowState, Arguments: map[string]any{"number": 13}}); err == nil {
			t.Error("a read while GitHub answers 502 went through")
		}
		want[`agent="agent-1",outcome="error",rule="",tool="get_workflow_state"`]++
		if err := e.sb.Sim.SetFaults(ghsim.Faults{}); err != nil {
			t.Fatal(err)
		}

		// The researcher past its burst: rate limited, by the rate rule. (Calls in a row until
		// one is, at most 400: a loaded machine may make them slowly, the bucket refilling.)
		rs := e.agentClient(researcherToken)
		served, limited := 0, 0
		for i := 0; i < 400 && limited == 0; i++ {
			_, msg := call[toolspec.DescribeOutput](t, rs, toolspec.DescribeWorkflow, map[string]any{})
			if msg == "" {
				served++
			} else if strings.Contains(msg, "Retry-After") {
				limited++
			} else {
				t.Fatalf("refused for another reason: %s", msg)
			}
		}
		if limited == 0 {
			t.Fatal("400 calls in a row were never rate limited")
		}
		want[`agent="researcher",outcome="ok",rule="",tool="describe_workflow"`] += served
		want[`agent="researcher",outcome="rate_limited",rule="rate",tool="describe_workflow"`] += limited

		// Tokens nobody configured are turned away before anything is counted.
		rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
		for range 20 {
			token := fmt.Sprintf("%x", rng.Uint64()) + strings.Repeat("z", rng.IntN(40))
			resp := postMCP(t, e.sb.AppURL+"/mcp", "Bearer "+token,
				`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_workflow","arguments":{}}}`)
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("an unknown token got %d", resp.StatusCode)
			}
		}

		metrics := scrape(t, e)
		total := 0
		for labels, n := range want {
			total += n
			if got := seriesIn(metrics, "ralph_gate_mcp_tool_calls_total", labels); got != n {
				t.Errorf("ralph_gate_mcp_tool_calls_total{%s} = %d, want %d", labels, got, n)
			}
		}
		agents := map[string]bool{}
		for _, m := range regexp.MustCompile(`ralph_gate_mcp_tool_calls_total\{[^}]*agent="([^"]*)"`).FindAllStringSubmatch(metrics, -1) {
			agents[m[1]] = true
		}
		if len(agents) != 2 || !agents["agent-1"] || !agents["researcher"] {
			t.Errorf("tool calls are counted under agents %v, want agent-1 and researcher only", agents)
		}
		for _, tool := range []string{toolspec.HandoffTicket, toolspec.GetWorkflowState, toolspec.DetectPipelinePosition, toolspec.CheckConvergence,
			toolspec.AdvanceChildren, toolspec.PickActionableIssue, toolspec.DescribeWorkflow, toolspec.BoardHealth} {
			if seriesIn(metrics, "ralph_gate_mcp_tool_duration_seconds_count", fmt.Sprintf("tool=%q", tool)) == 0 {
				t.Errorf("no duration observed for %s", tool)
			}
		}
		if n := seriesIn(metrics, "ralph_gate_mcp_github_requests_total", `tool="describe_workflow"`); n != 0 {
			t.Errorf("describe_workflow is counted %d GitHub requests; it makes none", n)
		}

		// The report reads the same counts from the store.
		rep, err := app.HealthReader(e.sb.Config, e.sb.App.Store()).Report(context.Background(), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if rep.Facade.Hour.Calls != total || rep.Facade.Day.Calls != total {
			t.Errorf("the report counts %d calls in the hour, %d in the day; /metrics %d", rep.Facade.Hour.Calls, rep.Facade.Day.Calls, total)
		}
		byTool := map[string]health.Usage{}
		for _, u := range rep.Facade.Hour.Tools {
			byTool[u.Name] = u
		}
		for labels, n := range want {
			tool, outcome, rule := label(labels, "tool"), label(labels, "outcome"), label(labels, "rule")
			u := byTool[tool]
			var got int
			switch outcome {
			case enforce.OutcomeOK:
				got = u.OK
			case enforce.OutcomeError:
				got = u.Errors
			default:
				got = u.RefusedBy[rule]
			}
			if got < n {
				t.Errorf("the report's %s row %+v has %d %s (%s), want at least %d", tool, u, got, outcome, rule, n)
			}
		}
		if u := byTool[toolspec.GetWorkflowState]; u.GitHubRequests == 0 || u.P99Ms == 0 {
			t.Errorf("get_workflow_state row %+v has no requests or no p99", u)
		}
	})
}

// scrape reads /metrics.
func scrape(t *testing.T, e *env) string {
	t.Helper()
	resp, err := http.Get(e.sb.AppURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

// series is one series' value now.
func series(t *testing.T, e *env, name, labels string) int {
	t.Helper()
	return seriesIn(scrape(t, e), name, labels)
}

// seriesIn is the value of the series name{labels} in a scrape (0 when absent).
func seriesIn(metrics, name, labels string) int {
	for _, line := range strings.Split(metrics, "\n") {
		if rest, ok := strings.CutPrefix(line, name+"{"+labels+"} "); ok {
			n, _ := strconv.ParseFloat(rest, 64)
			return int(n)
		}
	}
	return 0
}

// label is one label's value in a `k="v",…` list.
func label(labels, key string) string {
	m := regexp.MustCompile(key + `="([^"]*)"`).FindStringSubmatch(labels)
	if m == nil {
		return ""
	}
	return m[1]
}
