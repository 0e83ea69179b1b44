package sandbox

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/app"
	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/ghsim"
	"github.com/ralph-gate/ralph-gate/mcpserver/toolspec"
)

// One agent cannot spend the installation's GitHub budget: a JSON-RPC batch of 500 tool calls
// in one POST (it once made 2,060 GitHub requests in under a second) is refused whole and
// costs no request; 100 calls in a row cost at most the agent's burst; and an illegal move
// right after is reverted as ever. docs/SECURITY.md "Budgets".
func TestAgentCannotSpendTheBudget(t *testing.T) {
	t.Parallel()
	seed := strings.Replace(mcpSeed, "users:\n", "users:\n  - {login: agent-1, token: agent-1-gh-token}\n", 1)
	e := start(t, "sqlite", []byte(seed), func(c *config.Config) {
		configureMCP(c)
		// One call a minute past the burst: the calls in a row are refused however slowly a
		// loaded machine makes them.
		c.MCP.Limits = config.MCPLimits{CallsPerMinute: 1, Burst: 20, MaxBatch: 10, GitHubReserve: 0.5}
	})
	e.settle()
	before := e.sb.Sim.Requests().Total
	var msgs []string
	for i := range 500 {
		msgs = append(msgs, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"get_workflow_state","arguments":{"number":1}}}`, i+1))
	}
	req, _ := http.NewRequest(http.MethodPost, e.sb.AppURL+"/mcp", strings.NewReader("["+strings.Join(msgs, ",")+"]"))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+agent1Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "at most 10 messages") {
		t.Fatalf("a batch of 500: %d %s", resp.StatusCode, body)
	}
	if n := appRequestsBetween(e, before); n != 0 {
		t.Errorf("the refused batch made %d GitHub requests", n)
	}

	cs := e.agentClient(agent1Token)
	// What one call costs, measured alone (it is refused by no limit yet: the burst is full).
	before = e.sb.Sim.Requests().Total
	if _, msg := call[toolspec.StateOutput](t, cs, toolspec.GetWorkflowState, map[string]any{"number": 1}); msg != "" {
		t.Fatalf("one call: %s", msg)
	}
	perCall := appRequestsBetween(e, before)
	served, refused := 1, 0
	before = e.sb.Sim.Requests().Total
	began := time.Now()
	for range 99 {
		_, msg := call[toolspec.StateOutput](t, cs, toolspec.GetWorkflowState, map[string]any{"number": 1})
		switch {
		case msg == "":
			served++
		case strings.Contains(msg, "Retry-After"):
			refused++
		default:
			t.Fatalf("refused for another reason: %s", msg)
		}
	}
	// The bucket refills one call a minute: calls that took longer (many sandboxes share the
	// machine) may have earned one more. Only the calls served cost GitHub requests, each what
	// one call costs.
	earned := 20 + int(math.Ceil(time.Since(began).Minutes()))
	if n := appRequestsBetween(e, before); served > earned || refused < 100-earned || n > (served-1)*perCall {
		t.Errorf("100 calls in a row: %d served, %d refused, %d GitHub requests; want at most the burst and one more a minute (%d) served, each costing what one call costs (%d)",
			served, refused, n, earned, perCall)
	}

	e.move("agent-1", 2, "In Progress")
	e.settle()
	e.wantState(2, "Backlog")

	// Each refusal is counted, by its reason.
	resp, err = http.Get(e.sb.AppURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`ralph_gate_mcp_refused_total{reason="batch"} 1`, fmt.Sprintf(`ralph_gate_mcp_refused_total{reason="rate"} %d`, refused)} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// A delivery GitHub could not make is not a change of nobody's: alice's legal move out of
// Human Needed (humans only), whose delivery and every redelivery failed, is taken from
// GitHub's record of the delivery once the sweeper gives up, and stands, audited as hers (it
// was judged "(unknown)" with an agent's rights and reverted, with a comment about "a change no
// webhook reported").
func TestFailedDeliveryKeepsItsSender(t *testing.T) {
	t.Parallel()
	seed := mcpSeed + "  - {repo: app, number: 30, title: Escalated, project: 1, fields: {Workflow State: Human Needed}}\n"
	e := start(t, "sqlite", []byte(seed), nil)
	ctx := t.Context()
	e.settle()
	e.faults(ghsim.Faults{Webhook: ghsim.WebhookFaults{DropRate: 1}})
	e.move("alice", 30, "Backlog")
	ingested := 0
	for range 10 {
		rep, err := e.sb.App.SweepNow(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ingested += rep.Ingested; ingested > 0 {
			break
		}
	}
	if ingested != 1 {
		t.Fatalf("%d deliveries taken from GitHub's record, want alice's", ingested)
	}
	e.faults(ghsim.Faults{})
	e.settle()
	if _, err := e.sb.App.ReconcileNow(ctx); err != nil {
		t.Fatal(err)
	}
	e.settle()
	e.wantState(30, "Backlog")
	var alice, nobody int
	for _, a := range e.audit(30) {
		switch {
		case a.Actor == "alice" && a.Verdict == enforce.VerdictAllowed && a.ToState == "Backlog":
			alice++
		case a.Actor == enforce.DriftActor:
			nobody++
		}
	}
	if alice != 1 || nobody != 0 {
		t.Fatalf("audit %+v: want alice's move allowed once, nothing judged as nobody's", e.audit(30))
	}
	for _, c := range e.comments(30) {
		t.Errorf("a comment on alice's legal move: %s", c.Body)
	}
}

// A signed delivery replayed under a new X-GitHub-Delivery (the id is outside the signature) is
// not judged again: agent-1's illegal move, replayed, made a second `reverted` row and a second
// line in the comment. It is held until GitHub's delivery log shows the new id, which it never
// does (the sweep drops it as a replay after a minute: redeliver's tests).
func TestReplayedDeliveryIsNotJudgedAgain(t *testing.T) {
	t.Parallel()
	seed := strings.Replace(mcpSeed, "users:\n", "users:\n  - {login: agent-1, token: agent-1-gh-token}\n", 1)
	e := start(t, "sqlite", []byte(seed), nil)
	ctx := t.Context()
	e.settle()
	e.move("agent-1", 2, "In Progress")
	// Replayed at once, while the move is fresh (a replay seconds later is an old report its
	// history no longer takes).
	var original ghsim.Delivery
	for deadline := time.Now().Add(10 * time.Second); original.GUID == "" && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		for _, d := range e.sb.Sim.Deliveries() {
			if d.Event == "projects_v2_item" && d.StatusCode/100 == 2 && strings.Contains(string(d.Payload()), `"login":"agent-1"`) {
				original = d
			}
		}
	}
	if original.GUID == "" {
		t.Fatal("no delivery of agent-1's move")
	}
	req, _ := http.NewRequest(http.MethodPost, e.sb.AppURL+app.WebhookRoute, bytes.NewReader(original.Payload()))
	for k, v := range original.Headers() {
		req.Header.Set(k, v)
	}
	req.Header.Set("X-GitHub-Delivery", "replayed-"+original.GUID)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("the replay was answered %d, want 202 (held, docs/SECURITY.md)", resp.StatusCode)
	}
	e.settle()
	e.wantState(2, "Backlog")
	rep, err := e.sb.App.SweepNow(ctx)
	if err != nil || rep.SuspectsTaken != 0 || rep.Replays != 0 {
		t.Fatalf("sweep %+v %v: the replay is neither taken in nor dropped within its minute", rep, err)
	}
	e.settle()
	reverted := 0
	for _, a := range e.audit(2) {
		if a.Verdict == enforce.VerdictReverted {
			reverted++
		}
	}
	lines := 0
	for _, c := range e.comments(2) {
		lines += strings.Count(c.Body, "moved this from")
	}
	if reverted != 1 || lines != 1 {
		t.Fatalf("%d reverted rows and %d comment lines after the replay, want 1 and 1", reverted, lines)
	}
}
