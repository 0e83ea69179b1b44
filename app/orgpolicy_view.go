package app

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/health"
)

// What is enforced now, as /readyz and the board health pages show it: config.yml's projects,
// or the projects of each organization whose own policy is in force.

// servedOrgs are the organizations whose projects are enforced now: config.yml's projects'
// owners, or the organizations whose own policy is in force (none yet: none).
func (a *App) servedOrgs() []string {
	var out []string
	for _, p := range a.projects() {
		if !slices.ContainsFunc(out, func(o string) bool { return strings.EqualFold(o, p.Owner) }) {
			out = append(out, p.Owner)
		}
	}
	return out
}

// modeNow is how a project is enforced now: its mode under config.yml, or under its
// organization's policy in force.
func (a *App) modeNow(owner string, number int) enforce.Mode {
	if a.orgs != nil {
		return a.orgs.mode(owner, number)
	}
	return enforce.Mode(a.cfg.ModeOf(owner, number))
}

// agentOrg is the organization an MCP agent works for: the one whose policy in force names
// it (or that config.yml binds it to: mcp.agents[].org); false when it works for none, or for
// every project config.yml lists.
func (a *App) agentOrg(agent string) (string, bool) {
	if a.orgs != nil {
		op, ok := a.orgs.ofAgent(agent)
		return op.owner, ok
	}
	if ag, ok := a.cfg.MCPAgentNamed(agent); ok && ag.Org != "" {
		return ag.Org, true
	}
	return "", false
}

// facadeOf is the façade's use over the last hour and day by the agents that work for some
// organizations (agentOrg), summed as the health report sums every agent's: what the board
// page shows a viewer who does not belong to every organization served.
func (a *App) facadeOf(ctx context.Context, now time.Time, orgs []string) (health.Facade, error) {
	var f health.Facade
	for _, w := range []struct {
		into *health.FacadeWindow
		span time.Duration
	}{{&f.Hour, time.Hour}, {&f.Day, 24 * time.Hour}} {
		since := now.Add(-w.span).Truncate(time.Minute)
		counts, err := a.store.ToolCallCounts(ctx, since)
		if err != nil {
			return health.Facade{}, fmt.Errorf("tool calls: %w", err)
		}
		counts = slices.DeleteFunc(counts, func(c enforce.ToolCallCount) bool {
			org, ok := a.agentOrg(c.Agent)
			return !ok || !slices.ContainsFunc(orgs, func(o string) bool { return strings.EqualFold(o, org) })
		})
		*w.into = health.Window(since, counts)
	}
	return f, nil
}
