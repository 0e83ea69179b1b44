package app

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/health"
	"github.com/ralph-gate/ralph-gate/mcpserver"
	"github.com/ralph-gate/ralph-gate/metrics"
	"github.com/ralph-gate/ralph-gate/redeliver"
	"github.com/ralph-gate/ralph-gate/store"
)

// MCPServer builds the MCP façade over the app's enforcement service and GitHub boards. agent,
// when set, is the caller of every request (stdio: one local agent); otherwise each HTTP
// request's bearer token names its agent.
func (a *App) MCPServer(agent string) *mcp.Server {
	opts := mcpserver.Options{
		Facade:      a.service.Facade,
		Board:       func(ctx context.Context, owner string) (enforce.Board, error) { return a.boards.get(ctx, 0, owner) },
		DefaultRepo: a.cfg.MCP.DefaultRepo,
		Agent:       agent,
		Version:     a.version,
		Health:      HealthReader(a.cfg, a.store),
		Limits:      a.mcpLimits(),
		Calls:       toolCalls{metrics: a.metrics, store: a.store},
	}
	for _, p := range a.cfg.Projects {
		opts.Projects = append(opts.Projects, enforce.ProjectRef{Owner: p.Owner, Number: p.Number})
	}
	opts.Agents = mcpAgents(a.cfg.MCP.Agents)
	if a.orgs != nil {
		opts.Scope = func(agent string) (mcpserver.Scope, bool) {
			op, ok := a.orgs.ofAgent(agent)
			if !ok {
				return mcpserver.Scope{}, false
			}
			sc := mcpserver.Scope{Facade: a.service.Facade.In(op.owner), Agents: mcpAgents(op.cfg.MCP.Agents)}
			if _, named := op.cfg.MCPAgentNamed(agent); !named {
				if d, ok := a.cfg.MCPAgentNamed(agent); ok { // bound by config.yml (mcp.agents[].org)
					sc.Agents = append(sc.Agents, mcpAgents([]config.MCPAgent{d})...)
				}
			}
			for _, p := range op.cfg.Projects {
				sc.Projects = append(sc.Projects, enforce.ProjectRef{Owner: p.Owner, Number: p.Number})
			}
			return sc, true
		}
	}
	return mcpserver.New(opts)
}

// mcpAgents are the configured agents as the façade knows them.
func mcpAgents(agents []config.MCPAgent) []mcpserver.Agent {
	out := make([]mcpserver.Agent, 0, len(agents))
	for _, ag := range agents {
		out = append(out, mcpserver.Agent{Name: ag.Name, Role: ag.Role, Commands: ag.Commands})
	}
	return out
}

// toolCalls counts the façade's tool calls in the metrics (when the app has them) and in the
// store, per minute, where board_health, the board page and `ralph-gate report --facade` read
// them across replicas and restarts. A call whose count cannot be stored is logged, not
// failed: the agent's work went through.
type toolCalls struct {
	metrics *metrics.Metrics
	store   *store.Store
}

var _ mcpserver.CallObserver = toolCalls{}

func (t toolCalls) CallEnded(ctx context.Context, c enforce.ToolCall) {
	if t.metrics != nil {
		t.metrics.ToolCalled(c.Tool, c.Agent, c.Outcome, c.Rule, c.Duration)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := t.store.RecordToolCall(ctx, c); err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Str("tool", c.Tool).Msg("could not count the tool call in the store")
	}
}

func (t toolCalls) RequestMade(tool string) {
	if t.metrics != nil {
		t.metrics.ToolRequest(tool)
	}
}

// mcpHandler serves the façade at /mcp behind bearer-token authentication. A token_env
// variable that is unset is a configuration problem: the app refuses to start.
func (a *App) mcpHandler() (http.Handler, error) {
	creds, problems := a.cfg.MCPCredentials(os.LookupEnv)
	if len(problems) > 0 {
		return nil, problems
	}
	out := make([]mcpserver.Credential, len(creds))
	for i, c := range creds {
		out[i] = mcpserver.Credential{Name: c.Name, Hash: c.Hash}
	}
	return mcpserver.Handler(a.MCPServer(""), out, a.mcpLimits()), nil
}

// mcpLimits are the configured limits, their refusals counted.
func (a *App) mcpLimits() mcpserver.Limits {
	l := a.cfg.MCP.Limits
	out := mcpserver.Limits{CallsPerMinute: l.CallsPerMinute, Burst: l.Burst, MaxBatch: l.MaxBatch, GitHubReserve: l.GitHubReserve}
	if a.metrics != nil {
		out.Refused = a.metrics.MCPRefused
	}
	return out
}

// HealthReader is the board health report of cfg's projects over st, with cfg's health
// thresholds: what board_health answers and what `ralph-gate report` prints, from a store
// alone (the command opens one read-only, without an App).
func HealthReader(cfg config.Config, st *store.Store) *health.Reader {
	refs := make([]enforce.ProjectRef, 0, len(cfg.Projects))
	for _, p := range cfg.Projects {
		refs = append(refs, enforce.ProjectRef{Owner: p.Owner, Number: p.Number})
	}
	// The sweeper only reads its proof here: it never lists or redelivers anything.
	src := storeHealth{Store: st, sweeper: redeliver.New(nil, st, redeliver.Options{}, nil)}
	opts := health.Options{Projects: refs, Spec: cfg.Workflow,
		StaleLockAfter: cfg.Health.StaleLockAfter, HumanWaitAfter: cfg.Health.HumanWaitAfter, Mode: modeOf(cfg)}
	if cfg.OrgPolicies() {
		opts.Orgs = func(ctx context.Context) ([]health.Org, error) { return orgsHealth(ctx, cfg, st) }
	}
	return health.New(src, opts)
}

// orgsHealth is what the store keeps of each organization's policy, as the health report
// shows it: the commit in force (its projects, workflow and modes, from its kept file) and
// the newest refused push.
func orgsHealth(ctx context.Context, cfg config.Config, st *store.Store) ([]health.Org, error) {
	kept, err := st.OrgPolicies(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]health.Org, 0, len(kept))
	for _, k := range kept {
		o := health.Org{Owner: k.Owner, Commit: k.SHA, Since: k.LoadedAt, Refused: k.RefusedSHA, RefusedAt: k.RefusedAt, RefusedWhy: k.RefusedWhy}
		if k.SHA != "" {
			if org, problems := cfg.ForOrganization(k.Owner, []byte(k.Text)); len(problems) == 0 {
				o.Spec, o.Mode = org.Workflow, modeOf(org)
				for _, p := range org.Projects {
					o.Projects = append(o.Projects, enforce.ProjectRef{Owner: p.Owner, Number: p.Number})
				}
			}
		}
		out = append(out, o)
	}
	return out, nil
}

// modeOf is each project's enforcement mode, as the configuration says.
func modeOf(cfg config.Config) func(owner string, number int) enforce.Mode {
	return func(owner string, number int) enforce.Mode { return enforce.Mode(cfg.ModeOf(owner, number)) }
}

// storeHealth is what a health report reads: the store, and when the newest complete
// redelivery sweep began (its proof, kept in the store).
type storeHealth struct {
	*store.Store
	sweeper *redeliver.Sweeper
}

// LastSweep implements health.Source.
func (h storeHealth) LastSweep(ctx context.Context) (time.Time, error) {
	p, err := h.sweeper.Proof(ctx)
	if err != nil {
		return time.Time{}, fmt.Errorf("redelivery proof: %w", err)
	}
	return p.Until, nil
}
