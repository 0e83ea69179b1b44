package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// demoMCPToken is the demo agent's bearer token (the demo's simulator only, never a secret).
const demoMCPToken = "demo-planner-1-mcp-token"

type demoBearer struct{}

func (demoBearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+demoMCPToken)
	return http.DefaultTransport.RoundTrip(r)
}

// mcpHandoff connects to /mcp as an agent, asks for an illegal handoff (refused with the
// valid retries) and then a legal one (applied and explained in a comment).
func (d *demo) mcpHandoff() {
	if d.err != nil {
		return
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "demo-agent", Version: version}, nil)
	cs, err := client.Connect(d.ctx, &mcp.StreamableClientTransport{Endpoint: d.sb.AppURL + "/mcp",
		HTTPClient: &http.Client{Transport: demoBearer{}, Timeout: 30 * time.Second}}, nil)
	if err != nil {
		d.err = err
		return
	}
	defer cs.Close()
	d.snapshot(8, "Plan in Progress")
	call := func(args map[string]any) {
		if d.err != nil {
			return
		}
		d.say("planner-1 calls handoff_ticket(number=%v, command=%q, intent=%q)", args["number"], args["command"], args["intent"])
		res, err := cs.CallTool(d.ctx, &mcp.CallToolParams{Name: "handoff_ticket", Arguments: args})
		if err != nil {
			d.err = err
			return
		}
		if res.IsError {
			for _, c := range res.Content {
				if tc, ok := c.(*mcp.TextContent); ok {
					d.say("   refused: %s", tc.Text)
				}
			}
			return
		}
		var out struct {
			PreviousState, NewState string
			Guidance                struct{ CommandsExpecting, AllowedNext []string }
		}
		data, _ := json.Marshal(res.StructuredContent)
		if d.err = json.Unmarshal(data, &out); d.err != nil {
			return
		}
		next := "commands " + strings.Join(out.Guidance.CommandsExpecting, ", ")
		if len(out.Guidance.CommandsExpecting) == 0 {
			next = "moves to " + strings.Join(out.Guidance.AllowedNext, ", ")
		}
		d.say("   handed off #%v: %q → %q; next: %s", args["number"], out.PreviousState, out.NewState, next)
		d.err = d.sb.Settle(d.ctx)
	}
	call(map[string]any{"number": 8, "command": "plan", "intent": "complete", "reason": "the plan is written"})
	call(map[string]any{"number": 8, "command": "plan", "intent": "lock", "reason": "planning the cache"})
	d.show(8)
	d.lastComment(8)
}
