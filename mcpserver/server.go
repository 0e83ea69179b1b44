// Package mcpserver is ralph-gate's MCP façade for agents: typed tools over the official Go SDK
// that map a tool's input to an enforce use case and its result to the tool's output. It holds
// no workflow rules — every decision comes from policy through enforce, exactly as for
// webhooks. The tools' contract (names, descriptions, inputs, outputs) lives in toolspec.
//
// User-fixable problems (a refused handoff, an unknown state, a missing repo) are tool errors
// in the three-part "… Recovery: …" form; infrastructure failures are protocol errors.
package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/mcpserver/toolspec"
	"github.com/ralph-gate/ralph-gate/policy"
)

// Agent is an agent the façade knows: its name, its worker role (empty: the one its name
// matches, if any) and the commands it may use (empty: its role's, else all).
type Agent struct {
	Name     string
	Role     string
	Commands []string
}

// Options wire the façade.
type Options struct {
	// Facade is enforcement's use cases for agents.
	Facade *enforce.Facade
	// Board returns the board of the installation on an organization.
	Board func(ctx context.Context, owner string) (enforce.Board, error)
	// Projects are the enforced projects: the only ones the façade acts on.
	Projects []enforce.ProjectRef
	// DefaultRepo is used when a call names no repo ("name" or "owner/name"); "" means required.
	DefaultRepo string
	// Agents are the configured agents, by name (commands per agent).
	Agents []Agent
	// Agent, when set, is the caller of every request (stdio: one local agent); otherwise the
	// caller is the agent the HTTP bearer token authenticated.
	Agent   string
	Version string
	// Health computes board_health's report from the store.
	Health HealthReporter
	// Now is the time board_health reports at, and agents' rates are counted by (nil: the
	// clock).
	Now func() time.Time
	// Limits bound what an agent may make the façade spend (limits.go).
	Limits Limits
	// Calls, when set, is told of every tool call (observe.go).
	Calls CallObserver
	// Scope, when set, is the organization an agent works for (the app: the one whose policy
	// file lists it, docs/CONFIGURATION.md "Policy in the organization's repository"): its
	// calls are held to that organization's policy and act on its projects only. false: the
	// agent works for no organization, and acts on no project.
	Scope func(agent string) (Scope, bool)
}

// Scope is what an agent has in the organization it works for.
type Scope struct {
	// Facade is held to the organization's policy (enforce.Facade.In).
	Facade   *enforce.Facade
	Projects []enforce.ProjectRef
	// Agents are the organization's agents (its file's commands and roles).
	Agents []Agent
}

// as is the server as an agent's calls see it: in its organization when Options.Scope says
// one (the limits and counts stay the server's).
func (s *server) as(agent string) *server {
	if s.opts.Scope == nil {
		return s
	}
	v := *s
	sc, ok := s.opts.Scope(agent)
	if !ok {
		v.opts.Projects, v.opts.Agents = nil, nil
		return &v
	}
	v.opts.Facade, v.opts.Projects, v.opts.Agents = sc.Facade, sc.Projects, sc.Agents
	return &v
}

type server struct {
	opts   Options
	rates  *agentRates // tool calls
	others *agentRates // every other message (limits.go)
}

// New builds the MCP server with every tool and the workflow resource.
func New(opts Options) *mcp.Server {
	s := &server{opts: opts, rates: newAgentRates(opts.Limits), others: newOtherRates(opts.Limits)}
	srv := mcp.NewServer(&mcp.Implementation{Name: "ralph-gate", Title: "ralph-gate workflow", Version: opts.Version}, &mcp.ServerOptions{
		Instructions: "ralph-gate enforces the agent workflow on a GitHub Projects board. Change an issue's Workflow State only with handoff_ticket; " +
			"find work with pick_actionable_issue (claim: true locks it for you); ask detect_pipeline_position and check_convergence instead of interpreting state tables. " +
			"When a tool refuses, its message ends with \"Recovery:\" naming exactly what to retry with.",
	})
	specs := map[string]toolspec.Spec{}
	var tools []string
	for _, sp := range toolspec.Tools() {
		specs[sp.Name] = sp
		tools = append(tools, sp.Name)
	}
	srv.AddReceivingMiddleware(s.observeCalls(tools), s.limitCalls(), s.checkArguments(specs))
	addTool(srv, s, specs[toolspec.HandoffTicket], (*server).handoff)
	addTool(srv, s, specs[toolspec.GetWorkflowState], (*server).state)
	addTool(srv, s, specs[toolspec.DetectPipelinePosition], (*server).pipeline)
	addTool(srv, s, specs[toolspec.CheckConvergence], (*server).convergence)
	addTool(srv, s, specs[toolspec.AdvanceChildren], (*server).advance)
	addTool(srv, s, specs[toolspec.PickActionableIssue], (*server).pick)
	addTool(srv, s, specs[toolspec.DescribeWorkflow], (*server).describe)
	addTool(srv, s, specs[toolspec.BoardHealth], (*server).boardHealth)
	srv.AddResource(&mcp.Resource{
		URI: toolspec.WorkflowResourceURI, Name: "workflow", Title: "The workflow ralph-gate enforces",
		Description: "States, transitions, intents, commands, pipeline order and gates, as describe_workflow returns them.",
		MIMEType:    "application/json",
	}, s.workflowResource)
	return srv
}

// normalizer is every tool input.
type normalizer interface{ Normalize() error }

// addTool registers a typed tool: the input is normalized first (a problem is a tool error),
// and errors are sorted into tool errors (refusals, their Recovery in the tool's own argument
// names) and protocol errors (infrastructure).
func addTool[In any, Out any](srv *mcp.Server, s *server, sp toolspec.Spec, h func(*server, context.Context, string, In) (Out, error)) {
	destructive := sp.Destructive
	openWorld := false
	tool := &mcp.Tool{
		Name: sp.Name, Title: sp.Title, Description: sp.Description,
		Annotations: &mcp.ToolAnnotations{Title: sp.Title, ReadOnlyHint: sp.ReadOnly, DestructiveHint: &destructive,
			IdempotentHint: sp.Idempotent, OpenWorldHint: &openWorld},
	}
	mcp.AddTool(srv, tool, func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		var zero Out
		if n, ok := any(&in).(normalizer); ok {
			if err := n.Normalize(); err != nil {
				return nil, zero, ruled(spell(err, sp.Name), policy.RuleArguments)
			}
		}
		agent := s.callerOf(req)
		if agent == "" {
			return nil, zero, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "no authenticated agent"}
		}
		ctx = zerolog.Ctx(ctx).With().Str("tool", sp.Name).Str("agent", agent).Logger().WithContext(ctx)
		out, err := h(s.as(agent), ctx, agent, in)
		if err == nil {
			return nil, out, nil
		}
		var refusal *policy.Refusal
		if errors.As(err, &refusal) {
			return nil, zero, refusal.Spell(spelling(sp.Name))
		}
		return nil, zero, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "ralph-gate could not complete " + sp.Name + ": " + err.Error()}
	})
}

// spell renders a refusal's Recovery in tool's argument names; other errors pass as they are.
func spell(err error, tool string) error {
	var refusal *policy.Refusal
	if errors.As(err, &refusal) {
		return refusal.Spell(spelling(tool))
	}
	return err
}

// ruled gives a refusal without a rule the rule given; other errors pass as they are.
func ruled(err error, rule policy.Rule) error {
	var refusal *policy.Refusal
	if errors.As(err, &refusal) && refusal.Rule == "" {
		refusal.Rule = rule
	}
	return err
}

// callerOf is the agent making a request: the configured local agent (stdio), or the agent
// the bearer token authenticated (HTTP).
func (s *server) callerOf(req mcp.Request) string {
	if s.opts.Agent != "" {
		return s.opts.Agent
	}
	if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
		return ex.TokenInfo.UserID
	}
	return ""
}

func (s *server) agent(name string) Agent {
	a := Agent{Name: name}
	for _, c := range s.opts.Agents {
		if strings.EqualFold(c.Name, name) {
			a = c
			break
		}
	}
	roles := s.opts.Facade.Machine().Roles()
	if a.Role == "" {
		a.Role = roles.Of(a.Name)
	}
	if len(a.Commands) == 0 && a.Role != "" {
		a.Commands = roles.Commands(a.Role)
	}
	return a
}

// handoffBy is the part of a handoff that says who makes it.
func (s *server) handoffBy(name string) enforce.Handoff {
	a := s.agent(name)
	return enforce.Handoff{Agent: name, Role: a.Role, Commands: a.Commands}
}

// owners lists the organizations of the enforced projects.
func (s *server) owners() []string {
	var out []string
	for _, p := range s.opts.Projects {
		if !slices.ContainsFunc(out, func(o string) bool { return strings.EqualFold(o, p.Owner) }) {
			out = append(out, p.Owner)
		}
	}
	return out
}

// resolveOwner applies the default organization and refuses one that has no enforced project.
func (s *server) resolveOwner(owner string) (string, error) {
	owners := s.owners()
	if owner == "" {
		if len(owners) == 1 {
			return owners[0], nil
		}
		return "", policy.NewRetryRefusal("No owner was given", "ralph-gate enforces projects of several organizations: "+strings.Join(owners, ", "),
			policy.Retry{With: []policy.Suggestion{{Arg: "owner", Kind: policy.Text, Values: owners}}}).Because(policy.RuleArguments)
	}
	for _, o := range owners {
		if strings.EqualFold(o, owner) {
			return o, nil
		}
	}
	tried := fmt.Sprintf("Organization %q has no project ralph-gate enforces", owner)
	if len(owners) == 0 {
		return "", &policy.Refusal{Tried: tried, Why: "no project is configured", Options: []string{}, Rule: policy.RuleNotFound,
			Recovery: "ask a human to list the organization's projects under projects in the config"}
	}
	return "", policy.NewRetryRefusal(tried, "the façade acts only on the configured projects",
		policy.Retry{With: []policy.Suggestion{{Arg: "owner", Kind: policy.Text, Values: owners, Optional: len(owners) == 1}}}).Because(policy.RuleNotFound)
}

// locate finds the issue's board and item.
func (s *server) locate(ctx context.Context, in toolspec.Issue) (enforce.Board, enforce.Item, error) {
	owner, repo := in.Owner, in.Repo
	if repo == "" {
		def := s.opts.DefaultRepo
		if o, name, ok := strings.Cut(def, "/"); ok {
			if owner == "" {
				owner = o
			}
			def = name
		}
		if def == "" {
			return nil, enforce.Item{}, policy.NewRetryRefusal(fmt.Sprintf("No repo was given for issue #%d", in.Number),
				"ralph-gate has no default repository (config mcp.default_repo)",
				policy.Retry{With: []policy.Suggestion{{Arg: "repo", Kind: policy.Text, Hint: "the issue's repository name"}}}).Because(policy.RuleArguments)
		}
		repo = def
	}
	owner, err := s.resolveOwner(owner)
	if err != nil {
		return nil, enforce.Item{}, err
	}
	b, err := s.board(ctx, owner)
	if err != nil {
		return nil, enforce.Item{}, err
	}
	it, err := s.opts.Facade.Locate(ctx, b, enforce.IssueRef{Owner: owner, Repo: repo, Number: in.Number}, in.Project)
	if errors.Is(err, enforce.ErrNotFound) {
		// No such issue: a tool error the agent can act on, not a protocol error.
		return nil, enforce.Item{}, &policy.Refusal{Tried: fmt.Sprintf("Issue %s/%s#%d was not found", owner, repo, in.Number),
			Why: "GitHub has no such issue, or the App cannot see the repository", Recovery: "check owner, repo and number, then retry", Options: []string{},
			Rule: policy.RuleNotFound}
	}
	return b, it, err
}

func (s *server) handoff(ctx context.Context, agent string, in toolspec.HandoffInput) (toolspec.HandoffOutput, error) {
	b, it, err := s.locate(ctx, in.Issue)
	if err != nil {
		return toolspec.HandoffOutput{}, err
	}
	h := s.handoffBy(agent)
	h.Command, h.Intent, h.ToState, h.Reason, h.TakeOver = in.Command, in.Intent, in.ToState, in.Reason, in.TakeOver
	res, err := s.opts.Facade.Handoff(ctx, b, it, h)
	if err != nil {
		return toolspec.HandoffOutput{}, err
	}
	return handoffOutput(res), nil
}

func handoffOutput(res enforce.HandoffResult) toolspec.HandoffOutput {
	return toolspec.HandoffOutput{Number: res.Item.Number, Repo: res.Item.Repo, Title: res.Item.Title, Command: res.Command,
		PreviousState: res.PreviousState, NewState: res.NewState, Changed: res.Changed, Reason: res.Reason,
		Guidance: guidance(res.Guidance), Warnings: res.Warnings, TookOverFrom: res.TookOverFrom}
}

func guidance(g enforce.Guidance) toolspec.Guidance {
	return toolspec.Guidance{State: g.State, AllowedNext: g.AllowedNext, CommandsExpecting: g.CommandsExpecting, IsLock: g.IsLock,
		IsTerminal: g.IsTerminal, IsHumanGate: g.IsHumanGate, NeedsHuman: g.NeedsHuman, LockHolder: g.LockHolder}
}

func summary(r enforce.Relative) toolspec.IssueSummary {
	return toolspec.IssueSummary{Number: r.Number, Title: r.Title, Repo: r.Repo, State: r.State, Open: r.Open}
}

// maxListed bounds the sub-issues and alternatives a tool lists.
const (
	maxChildren     = 50
	maxAlternatives = 10
)

func (s *server) state(ctx context.Context, _ string, in toolspec.StateInput) (toolspec.StateOutput, error) {
	b, it, err := s.locate(ctx, in.Issue)
	if err != nil {
		return toolspec.StateOutput{}, err
	}
	ws, err := s.opts.Facade.State(ctx, b, it)
	if err != nil {
		return toolspec.StateOutput{}, err
	}
	out := toolspec.StateOutput{Number: ws.Item.Number, Repo: ws.Item.Repo, Title: ws.Item.Title, Project: ws.Item.ProjectNumber,
		Open: ws.Item.Open, State: ws.Item.State, LastLegalState: ws.LastLegalState, LockHolder: ws.LockHolder,
		Guidance: guidance(ws.Guidance), OpenBlockers: []toolspec.IssueSummary{},
		Children: toolspec.Children{Total: len(ws.Children), ByState: map[string]int{}, Issues: []toolspec.IssueSummary{}}}
	if !ws.LockSince.IsZero() {
		out.LockSince = ws.LockSince.UTC().Format("2006-01-02T15:04:05Z07:00")
	}
	if ws.Parent != nil {
		p := summary(*ws.Parent)
		out.Parent = &p
	}
	for _, c := range ws.Children {
		out.Children.ByState[c.State]++
		if len(out.Children.Issues) < maxChildren {
			out.Children.Issues = append(out.Children.Issues, summary(c))
		}
	}
	for _, bl := range ws.OpenBlockers {
		out.OpenBlockers = append(out.OpenBlockers, summary(bl))
	}
	return out, nil
}

func (s *server) pipeline(ctx context.Context, _ string, in toolspec.PipelineInput) (toolspec.PipelineOutput, error) {
	b, it, err := s.locate(ctx, in.Issue)
	if err != nil {
		return toolspec.PipelineOutput{}, err
	}
	pos, err := s.opts.Facade.Position(ctx, b, it, policy.PipelineOptions{AutoMode: in.AutoMode, StreamCount: in.StreamCount})
	if err != nil {
		return toolspec.PipelineOutput{}, err
	}
	r := pos.Result
	out := toolspec.PipelineOutput{Phase: r.Phase.String(), Reason: r.Reason, RemainingPhases: r.RemainingPhases, Convergence: r.Convergence,
		IsGroup: r.IsGroup, GroupPrimary: r.GroupPrimary, SuggestedRoster: r.SuggestedRoster, Issues: []toolspec.PipelineIssue{}}
	if pos.Group.Parent != nil {
		out.GroupParent = pos.Group.Parent.Number
	}
	machine := s.opts.Facade.Machine()
	for _, m := range pos.Group.Members {
		out.Issues = append(out.Issues, toolspec.PipelineIssue{Number: m.Number, Title: m.Title, WorkflowState: m.State,
			Estimate: m.Estimate, SubIssueCount: m.SubIssues, BlockedBy: m.BlockedBy, NextRequires: nextRequires(machine, m.Relative)})
	}
	return out, nil
}

// nextRequires says what r lacks, of an agent, to enter the state after its own on the
// pipeline ("" nothing, or no next state).
func nextRequires(m *policy.Machine, r enforce.Relative) string {
	i := m.PipelineIndex(r.State)
	if i < 0 || i+1 >= len(m.Pipeline()) {
		return ""
	}
	return m.Lacks(m.Pipeline()[i+1], policy.Member{Fields: r.Fields, MergedPR: r.MergedPR}, policy.ActorAgent)
}

func (s *server) convergence(ctx context.Context, _ string, in toolspec.ConvergenceInput) (toolspec.ConvergenceOutput, error) {
	b, it, err := s.locate(ctx, in.Issue)
	if err != nil {
		return toolspec.ConvergenceOutput{}, err
	}
	res, g, err := s.opts.Facade.Convergence(ctx, b, it, in.TargetState)
	if err != nil {
		return toolspec.ConvergenceOutput{}, err
	}
	out := toolspec.ConvergenceOutput{Converged: res.Converged, TargetState: res.TargetState, Total: res.Total, Ready: res.Ready,
		Blocking: res.Blocking, Recommendation: res.Recommendation.String(), Group: []int{}}
	for _, m := range g.Members {
		out.Group = append(out.Group, m.Number)
	}
	return out, nil
}

func (s *server) advance(ctx context.Context, agent string, in toolspec.AdvanceInput) (toolspec.AdvanceOutput, error) {
	b, it, err := s.locate(ctx, in.Issue)
	if err != nil {
		return toolspec.AdvanceOutput{}, err
	}
	res, err := s.opts.Facade.AdvanceChildren(ctx, b, it, in.TargetState, s.handoffBy(agent))
	if err != nil {
		return toolspec.AdvanceOutput{}, err
	}
	out := toolspec.AdvanceOutput{Parent: res.Parent.Number, ParentState: res.Parent.State, TargetState: in.TargetState,
		Advanced: []toolspec.AdvancedChild{}, Skipped: []toolspec.SkippedChild{}, Errors: []toolspec.ChildError{}}
	for _, mv := range res.Advanced {
		out.Advanced = append(out.Advanced, toolspec.AdvancedChild{Number: mv.Number, FromState: mv.From, ToState: mv.To})
	}
	for _, sk := range res.Skipped {
		out.Skipped = append(out.Skipped, toolspec.SkippedChild{Number: sk.Number, CurrentState: sk.State, Reason: sk.Reason})
	}
	for _, e := range res.Errors {
		out.Errors = append(out.Errors, toolspec.ChildError{Number: e.Number, Error: e.Error})
	}
	return out, nil
}

func picked(p enforce.Pick) toolspec.PickedIssue {
	return toolspec.PickedIssue{Number: p.Item.Number, Title: p.Item.Title, Repo: p.Item.Repo, Project: p.Item.ProjectNumber,
		WorkflowState: p.Item.State, Estimate: p.Item.Estimate, Priority: p.Item.Priority, IsLocked: p.Locked}
}

func (s *server) pick(ctx context.Context, agent string, in toolspec.PickInput) (toolspec.PickOutput, error) {
	owner, err := s.resolveOwner(in.Owner)
	if err != nil {
		return toolspec.PickOutput{}, err
	}
	var projects []enforce.ProjectRef
	var numbers []string
	for _, p := range s.opts.Projects {
		if strings.EqualFold(p.Owner, owner) {
			numbers = append(numbers, fmt.Sprint(p.Number))
			if in.Project == 0 || in.Project == p.Number {
				projects = append(projects, p)
			}
		}
	}
	if len(projects) == 0 {
		return toolspec.PickOutput{}, policy.NewRetryRefusal(fmt.Sprintf("Project %s/%d is not enforced", owner, in.Project),
			"the façade acts only on the configured projects",
			policy.Retry{With: []policy.Suggestion{{Arg: enforce.ArgProject, Kind: policy.Literal, Values: numbers, Optional: true}}}).Because(policy.RuleNotFound)
	}
	b, err := s.board(ctx, owner)
	if err != nil {
		return toolspec.PickOutput{}, err
	}
	h := s.handoffBy(agent)
	h.Command, h.Reason = in.Command, in.Reason
	res, err := s.opts.Facade.Pick(ctx, b, enforce.PickRequest{Projects: projects, State: in.WorkflowState, MaxEstimate: in.MaxEstimate,
		Claim: in.Claim, Handoff: h})
	if err != nil {
		return toolspec.PickOutput{}, err
	}
	out := toolspec.PickOutput{Alternatives: len(res.Alternatives), AlternativeIssues: []toolspec.PickedIssue{}, Passed: []toolspec.PassedIssue{}}
	for _, a := range res.Alternatives {
		if len(out.AlternativeIssues) == maxAlternatives {
			break
		}
		out.AlternativeIssues = append(out.AlternativeIssues, picked(a))
	}
	for _, p := range res.Passed {
		out.Passed = append(out.Passed, toolspec.PassedIssue{Number: p.Item.Number, Reason: p.Reason})
	}
	switch {
	case res.Best != nil:
		best := picked(*res.Best)
		out.Found, out.Issue = true, &best
		out.Message = fmt.Sprintf("#%d %q is the best actionable issue in %s", best.Number, best.Title, in.WorkflowState)
		if res.Claimed != nil {
			h := handoffOutput(*res.Claimed)
			out.Claimed, out.Handoff = true, &h
			// The issue as the claim left it, next to the handoff that moved it.
			best.WorkflowState, best.IsLocked = h.NewState, true
			out.Message = fmt.Sprintf("claimed #%d %q for %s: it is now in %s", best.Number, best.Title, agent, h.NewState)
		}
	case in.Claim && len(res.Passed) > 0:
		out.Message = fmt.Sprintf("nothing actionable left in %s: every candidate was claimed by someone else first, refused, or lacks what its next state requires (passed says why); try another state or stop", in.WorkflowState)
	case len(res.Passed) > 0:
		out.Message = fmt.Sprintf("nothing actionable in %s: the candidates lack what their next state requires (passed says why); set it, or try another state", in.WorkflowState)
	default:
		out.Message = fmt.Sprintf("nothing actionable in %s (open, unlocked, unblocked, estimate at most %s); try another state or stop", in.WorkflowState, orDefault(in.MaxEstimate, "S"))
	}
	return out, nil
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func (s *server) describe(_ context.Context, agent string, _ toolspec.DescribeInput) (toolspec.DescribeOutput, error) {
	return Describe(s.opts.Facade.Machine(), s.agent(agent)), nil
}

func (s *server) workflowResource(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	agent := s.callerOf(req)
	s = s.as(agent)
	data, err := json.MarshalIndent(Describe(s.opts.Facade.Machine(), s.agent(agent)), "", "  ")
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: toolspec.WorkflowResourceURI, MIMEType: "application/json", Text: string(data)}}}, nil
}

// requirements describes what entering a state needs (nil when nothing).
func requirements(rs []policy.Requirement) []toolspec.Requirement {
	var out []toolspec.Requirement
	for _, r := range rs {
		bound := r.For
		if len(bound) == 0 {
			bound = []string{"agent"}
		}
		out = append(out, toolspec.Requirement{Fields: r.Fields, PullRequest: r.PullRequest, For: bound})
	}
	return out
}

// Describe renders the machine for agents (describe_workflow and the workflow resource).
func Describe(m *policy.Machine, agent Agent) toolspec.DescribeOutput {
	spec := m.Spec()
	out := toolspec.DescribeOutput{Field: m.Field(), Pipeline: m.Pipeline(), Agent: agent.Name, YourCommands: m.Commands(), YourRole: agent.Role,
		States: []toolspec.StateDescription{}, Transitions: []toolspec.TransitionDescription{},
		Intents: []toolspec.IntentDescription{}, Commands: []toolspec.CommandDescription{}}
	if len(agent.Commands) > 0 {
		out.YourCommands = []string{}
		for _, c := range agent.Commands {
			n := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(c)), "ralph_")
			if i := slices.IndexFunc(m.Commands(), func(x string) bool { return strings.EqualFold(x, n) }); i >= 0 {
				out.YourCommands = append(out.YourCommands, m.Commands()[i])
			}
		}
	}
	initial, gates := m.Initial(), m.ParentGates()
	for _, name := range m.States() {
		info, _ := m.State(name)
		out.States = append(out.States, toolspec.StateDescription{Name: name, Kind: info.Kind.String(), Description: info.Description,
			PipelineIndex: info.PipelineIndex, HumansOnly: info.HumansOnly, AgentNext: m.AllowedNext(name, policy.ActorAgent),
			HumanNext: m.AllowedNext(name, policy.ActorHuman), ExpectedBy: m.CommandsExpecting(name),
			IsInitial: slices.Contains(initial, name), IsParentGateOf: slices.Contains(gates, name), Owners: m.Roles().Owners(name),
			Requirements: requirements(m.Requirements(name))})
	}
	if roles := m.Roles(); roles != nil {
		out.ReviewMode = m.ReviewMode()
		for _, name := range roles.Names() {
			out.Roles = append(out.Roles, toolspec.RoleDescription{Name: name, Agents: roles.Agents(name), Owns: roles.Owns(name),
				Commands: roles.Commands(name), Serialize: roles.Serialize(name)})
		}
	}
	for _, t := range m.Transitions() {
		out.Transitions = append(out.Transitions, toolspec.TransitionDescription{From: t.From, To: t.To, HumansOnly: t.HumansOnly, Anywhere: t.Anywhere})
	}
	for _, it := range spec.Intents {
		targets := map[string]string{}
		for k, v := range it.Targets {
			targets[k] = v
		}
		amb := it.Ambiguous
		if amb == nil {
			amb = []string{}
		}
		out.Intents = append(out.Intents, toolspec.IntentDescription{Name: it.Name, Description: it.Description, Targets: targets, Ambiguous: amb})
	}
	for _, c := range spec.Commands {
		direct, _ := m.DirectStates(c.Name)
		var intents []string
		for _, it := range m.Intents() {
			if st, err := m.ResolveIntent(c.Name, it); err == nil {
				intents = append(intents, it+" (→ "+st+")")
			}
		}
		out.Commands = append(out.Commands, toolspec.CommandDescription{Name: c.Name, Description: c.Description, Inputs: c.Inputs,
			Outputs: c.Outputs, Lock: c.Lock, DirectStates: direct, Intents: intents})
	}
	g := m.Gates()
	out.Gates = toolspec.Gates{LockOwnership: g.LockOwnership, Blockers: g.Blockers, Convergence: g.Convergence, WIPLimits: map[string]int{}}
	for k, v := range g.WIPLimits {
		out.Gates.WIPLimits[k] = v
	}
	if ttl := m.LockTTL(); ttl > 0 {
		out.Gates.LockTTL = ttl.String()
	}
	return out
}
