package app

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/policy"
	"github.com/ralph-gate/ralph-gate/store"
)

// A backtest shows what an organization's proposed policy would have decided differently
// before it is put in force (docs/CONFIGURATION.md "Backtesting a change"): the moves recorded
// on the organization's projects in a window are replayed under it and compared with what
// was decided.
//
// What a move's audit entry holds — its actor, the legal state it left, the state it entered,
// its project — is re-decided by policy (policy.Machine.Decide, as the enforcer asks it):
// whether the proposed policy enforces the project at all, in which mode, the actor's kind
// under its actors, the transition table and the worker roles; for a façade handoff, also
// whether the proposed policy names the agent and lets it use the command. The gates (lock
// ownership, blockers, convergence, WIP limits, serialized work) and the requirements depend
// on other items and on fields as they were, which the entry does not hold: their recorded
// outcome is kept, and counted as kept as recorded. Closes, reopens and merges are kept as
// recorded but for the project's enforcement and mode.

// Backtest bounds.
const (
	// MaxBacktestMoves is the most moves one backtest replays: the newest; the result says
	// when older ones were left out.
	MaxBacktestMoves = 50000
	// DefaultBacktestDays is the window a backtest replays by default.
	DefaultBacktestDays = 7
	// backtestPage is how many decisions one store query reads.
	backtestPage = 500
	// backtestNewest is how many of the newest differences a result lists.
	backtestNewest = 10
	// backtestRows bounds the rows of each table Markdown and Text render.
	backtestRows = 20
)

// BacktestOutcome is what became, or would become, of a move: the audit log's verdicts of
// moves, and what happens to a move on a project that is not enforced.
type BacktestOutcome string

// Backtest outcomes.
const (
	OutcomeAllowed        BacktestOutcome = "allowed"
	OutcomeReverted       BacktestOutcome = "reverted"
	OutcomeWouldRevert    BacktestOutcome = "would_revert" // refused, left standing (warn, evaluate)
	OutcomeAutomated      BacktestOutcome = "automated"    // the app's move, or an allowed close, reopen or merge it followed
	OutcomeHandoff        BacktestOutcome = "handoff"
	OutcomeRefusedHandoff BacktestOutcome = "refused_handoff"
	OutcomeNotEnforced    BacktestOutcome = "not_enforced"  // the project is not enforced: nothing is judged or written
	OutcomeNotAutomated   BacktestOutcome = "not_automated" // warn, evaluate: the app's automation does not run
)

// refused reports whether o refuses the move.
func (o BacktestOutcome) refused() bool {
	return o == OutcomeReverted || o == OutcomeWouldRevert || o == OutcomeRefusedHandoff
}

// words is the outcome as a sentence says it.
func (o BacktestOutcome) words() string {
	switch o {
	case OutcomeWouldRevert:
		return "refused but left standing"
	case OutcomeRefusedHandoff:
		return "refused handoff"
	case OutcomeNotEnforced:
		return "not enforced"
	case OutcomeNotAutomated:
		return "not automated"
	}
	return string(o)
}

// BacktestResult is what a proposed policy would have decided differently in a window.
type BacktestResult struct {
	Owner string `json:"owner"`
	// Since and Until are the window: decisions recorded at or after Since, before Until.
	Since time.Time `json:"since"`
	Until time.Time `json:"until"`
	// Decisions is how many recorded decisions were read; Moves how many of them were moves
	// replayed (an actor's move judged, a handoff, the app's automation, a close, reopen or
	// merge); NotMoves how many were no move (a value adopted on first sight, the app's own
	// reports, a provisional revert withdrawn); Unidentified how many were on issues of the
	// organization's repositories on a project the store cannot name (no reconciler pass
	// recorded its node id): not replayed.
	Decisions    int `json:"decisions"`
	Moves        int `json:"moves"`
	NotMoves     int `json:"not_moves"`
	Unidentified int `json:"unidentified"`
	// Different is how many moves would be decided differently: another outcome, or a
	// refusal by another rule.
	Different int `json:"different"`
	// NoLongerEnforced is how many moves were on projects the proposed policy does not
	// enforce.
	NoLongerEnforced int `json:"no_longer_enforced"`
	// KeptAsRecorded is how many refusals by a gate or a requirement were kept as recorded
	// (the move passes the proposed table, kinds and roles; the gate's inputs are not in the
	// audit log); GateNotChecked how many of them the proposed policy would not check that
	// gate or requirement for (they might be allowed).
	KeptAsRecorded int `json:"kept_as_recorded"`
	GateNotChecked int `json:"gate_not_checked"`
	// Unchecked is how many moves the proposed policy allows by its table, kinds and roles
	// but would hold to a gate or a requirement the recorded decision did not check: counted
	// as allowed, they might be refused.
	Unchecked int `json:"unchecked"`
	// Lifecycle is how many closes, reopens and merges were kept as recorded but for their
	// project's enforcement and mode.
	Lifecycle int `json:"lifecycle"`
	// Capped: more than MaxBacktestMoves moves were recorded; only the newest were replayed,
	// back to CappedFrom.
	Capped     bool      `json:"capped"`
	CappedFrom time.Time `json:"capped_from,omitzero"`
	// Changes groups the differences by recorded and proposed outcome and rule, the most
	// frequent first.
	Changes []BacktestChange `json:"changes"`
	// Actors are the actors of the differences, the most frequent first.
	Actors []BacktestActor `json:"actors"`
	// Newest are the newest differences, newest first.
	Newest []BacktestDifference `json:"newest"`
	// Projects are the organization's projects under either policy, or with moves recorded.
	Projects []BacktestProject `json:"projects"`
}

// BacktestChange is one kind of difference and how many moves it concerns.
type BacktestChange struct {
	Recorded     BacktestOutcome `json:"recorded"`
	RecordedRule string          `json:"recorded_rule,omitempty"`
	Proposed     BacktestOutcome `json:"proposed"`
	ProposedRule string          `json:"proposed_rule,omitempty"`
	Moves        int             `json:"moves"`
}

// BacktestActor is an actor whose moves would be decided differently.
type BacktestActor struct {
	Actor string `json:"actor"`
	// RecordedKind is the kind its newest move was recorded with; ProposedKind its kind under
	// the proposed policy's actors.
	RecordedKind string `json:"recorded_kind"`
	ProposedKind string `json:"proposed_kind"`
	Different    int    `json:"different"`
}

// BacktestDifference is one move that would be decided differently.
type BacktestDifference struct {
	At      time.Time `json:"at"`
	Project int       `json:"project"`
	Repo    string    `json:"repo,omitempty"`
	Issue   int       `json:"issue,omitempty"`
	// Title is the issue's title as the reconciler's newest pass read it ("" unknown).
	Title        string          `json:"title,omitempty"`
	Actor        string          `json:"actor"`
	RecordedKind string          `json:"recorded_kind"`
	ProposedKind string          `json:"proposed_kind"`
	From         string          `json:"from"`
	To           string          `json:"to"`
	Recorded     BacktestOutcome `json:"recorded"`
	RecordedRule string          `json:"recorded_rule,omitempty"`
	Proposed     BacktestOutcome `json:"proposed"`
	ProposedRule string          `json:"proposed_rule,omitempty"`
	// Note says what the replay could not recompute for it.
	Note string `json:"note,omitempty"`
}

// BacktestProject is one project of the organization under the policy in force and the
// proposed one: its mode under each ("" not enforced), and its moves in the window.
type BacktestProject struct {
	Number    int    `json:"number"`
	Current   string `json:"current"`
	Proposed  string `json:"proposed"`
	Moves     int    `json:"moves"`
	Different int    `json:"different"`
}

// Starts reports whether the proposed policy starts enforcing the project.
func (p BacktestProject) Starts() bool { return p.Current == "" && p.Proposed != "" }

// Stops reports whether the proposed policy stops enforcing the project.
func (p BacktestProject) Stops() bool { return p.Current != "" && p.Proposed == "" }

// ModeChanges reports whether the project stays enforced in another mode.
func (p BacktestProject) ModeChanges() bool {
	return p.Current != "" && p.Proposed != "" && p.Current != p.Proposed
}

// Backtest replays the moves recorded on owner's projects (owner compared case-insensitively)
// in [since, until) under the proposed policy and compares them with what was decided.
// current and proposed are the organization's configurations (config.Config.ForOrganization:
// the policy in force, the zero Config when none is, and the proposed file); appLogin is the
// app's own login ("" unknown: a move recorded as the app's stays the app's).
func Backtest(ctx context.Context, st *store.Store, owner string, current, proposed config.Config, appLogin string, since, until time.Time) (BacktestResult, error) {
	return backtest(ctx, st, owner, current, proposed, appLogin, since, until, MaxBacktestMoves)
}

// backtest is Backtest with its bound on the moves replayed.
func backtest(ctx context.Context, st *store.Store, owner string, current, proposed config.Config, appLogin string, since, until time.Time, maxMoves int) (BacktestResult, error) {
	res := BacktestResult{Owner: owner, Since: since.UTC(), Until: until.UTC(), Changes: []BacktestChange{}, Actors: []BacktestActor{},
		Newest: []BacktestDifference{}, Projects: []BacktestProject{}}
	switch {
	case strings.TrimSpace(owner) == "":
		return res, errors.New("backtest: no organization")
	case !since.Before(until):
		return res, fmt.Errorf("backtest: the window from %s to %s is empty", since.Format(time.RFC3339), until.Format(time.RFC3339))
	}
	cur, err := newBacktestPolicy(current, owner, appLogin)
	if err != nil {
		return res, fmt.Errorf("backtest: the policy in force: %w", err)
	}
	prop, err := newBacktestPolicy(proposed, owner, appLogin)
	if err != nil {
		return res, fmt.Errorf("backtest: the proposed policy: %w", err)
	}
	numbers, err := projectNumbers(ctx, st, owner)
	if err != nil {
		return res, fmt.Errorf("backtest: %w", err)
	}
	bt := backtester{owner: owner, cur: cur, prop: prop, res: &res, changes: map[BacktestChange]int{},
		actors: map[string]*BacktestActor{}, projects: map[int]*BacktestProject{}}
	for _, n := range slices.Concat(cur.numbers, prop.numbers) {
		bt.project(n)
	}
	q := store.OrgAuditQuery{ProjectIDs: slices.Sorted(maps.Keys(numbers)), Owner: owner, Since: since, Until: until, Limit: backtestPage}
	oldest := time.Time{}
pages:
	for {
		page, err := st.OrgAudit(ctx, q)
		if err != nil {
			return res, fmt.Errorf("backtest: read the audit log: %w", err)
		}
		for _, e := range page {
			if res.Moves == maxMoves {
				res.Capped, res.CappedFrom = true, oldest
				break pages
			}
			res.Decisions++
			n, ok := numbers[e.ProjectID]
			switch {
			case !ok && movesOf(e) != moveNone:
				res.Unidentified++
			case !ok:
				res.NotMoves++
			case bt.replay(e, n):
				oldest = e.At
			}
		}
		if len(page) < q.Limit {
			break
		}
		c := store.CursorOf(page[len(page)-1])
		q.Before = &c
	}
	bt.finish()
	if err := bt.titles(ctx, st); err != nil {
		return res, fmt.Errorf("backtest: %w", err)
	}
	zerolog.Ctx(ctx).Debug().Str("org", owner).Int("decisions", res.Decisions).Int("moves", res.Moves).
		Int("different", res.Different).Int("kept_as_recorded", res.KeptAsRecorded).Bool("capped", res.Capped).Msg("backtest replayed")
	return res, nil
}

// projectNumbers are the organization's projects the reconciler recorded, by node id (the
// audit log's project id), from its passes' status.
func projectNumbers(ctx context.Context, st *store.Store, owner string) (map[string]int, error) {
	// The status cursors of the organization's projects differ in the number after their last
	// slash only.
	name := enforce.PassStatusCursor(enforce.ProjectRef{Owner: owner})
	prefix := name[:strings.LastIndexByte(name, '/')+1]
	cursors, _, err := st.CursorsByPrefix(ctx, prefix)
	if err != nil {
		return nil, fmt.Errorf("read the projects' node ids: %w", err)
	}
	out := map[string]int{}
	for name, v := range cursors {
		i := strings.LastIndexByte(name, '/')
		n, err := strconv.Atoi(name[i+1:])
		if err != nil || n <= 0 || len(out) == store.MaxOrgAuditProjects {
			continue
		}
		var ps enforce.PassStatus
		if json.Unmarshal([]byte(v), &ps) != nil || ps.ProjectID == "" {
			continue
		}
		out[ps.ProjectID] = n
	}
	return out, nil
}

// backtestPolicy is one side of the comparison: an organization's configuration, compiled.
type backtestPolicy struct {
	cfg     config.Config
	m       *policy.Machine // nil: it enforces none of the organization's projects
	actors  policy.Actors
	numbers []int // the organization's projects it enforces
}

func newBacktestPolicy(cfg config.Config, owner, appLogin string) (backtestPolicy, error) {
	p := backtestPolicy{cfg: cfg}
	for _, pr := range cfg.Projects {
		if strings.EqualFold(pr.Owner, owner) && !slices.Contains(p.numbers, pr.Number) {
			p.numbers = append(p.numbers, pr.Number)
		}
	}
	if len(p.numbers) == 0 {
		return p, nil
	}
	m, err := cfg.Machine()
	if err != nil {
		return p, err
	}
	p.m, p.actors = m, cfg.PolicyActors(appLogin)
	return p, nil
}

// mode is a project's mode under the policy; false when it does not enforce the project.
func (p backtestPolicy) mode(owner string, number int) (enforce.Mode, bool) {
	if p.m == nil || !p.cfg.Enforces(owner, number) {
		return "", false
	}
	return enforce.ModeIn(func(string, int) enforce.Mode { return enforce.Mode(p.cfg.ModeOf(owner, number)) }, owner, number), true
}

// kind is the kind of an entry's actor under the policy's actors, as the enforcer classifies
// it: the app's own moves stay the app's, an unknown author is judged as an agent, and the
// façade's handoffs are an agent's.
func (p backtestPolicy) kind(e enforce.AuditEntry, mv moveKind) policy.ActorKind {
	switch {
	case e.ActorKind == policy.ActorApp.String():
		return policy.ActorApp
	case mv == moveHandoff, e.Actor == "", e.Actor == enforce.DriftActor, e.Actor == enforce.NoSender:
		return policy.ActorAgent
	}
	return p.actors.Classify(e.Actor)
}

// moveKind is how a recorded decision is replayed.
type moveKind int

const (
	moveNone      moveKind = iota // no move: not replayed
	moveJudged                    // a reported change judged as its actor's move
	moveHandoff                   // an agent's handoff through the façade, done or refused
	moveAutomated                 // the app's automation
	moveLifecycle                 // a close, a reopen or a merge judged as its actor's move
)

// movesOf says how an entry is replayed, and recordedOutcome what it recorded.
func movesOf(e enforce.AuditEntry) moveKind {
	mcp := strings.HasPrefix(e.Cause, "mcp ")
	switch {
	case e.Verdict == enforce.VerdictHandoff || (e.Verdict == enforce.VerdictIgnored && mcp):
		return moveHandoff
	case e.Verdict == enforce.VerdictAutomated && (e.Rule == "automation" || e.ActorKind == policy.ActorApp.String()):
		return moveAutomated // (a cascade, a convergence, or a write of the app's taken into the history)
	case e.Verdict == enforce.VerdictAutomated || (e.Cause != "" && !mcp && (e.Verdict == enforce.VerdictAllowed || e.Verdict.Refused())):
		return moveLifecycle // (an allowed one is audited automated, or allowed under warn and evaluate)
	case e.Verdict == enforce.VerdictAllowed || e.Verdict.Refused():
		return moveJudged
	}
	return moveNone
}

func recordedOutcome(e enforce.AuditEntry, mv moveKind) BacktestOutcome {
	if mv == moveHandoff && e.Verdict == enforce.VerdictIgnored {
		return OutcomeRefusedHandoff
	}
	return BacktestOutcome(e.Verdict)
}

// gateRules are the rules that depend on other items and fields as they were: what the audit
// log does not hold.
var gateRules = []policy.Rule{policy.RuleLockOwnership, policy.RuleSerialized, policy.RuleBlockers, policy.RuleConvergence,
	policy.RuleWIP, policy.RuleRequirement}

// passing is c with the inputs of every gate and requirement such that they pass: the
// decision on it is the table's, the actor's kind's and its role's alone.
func passing(m *policy.Machine, c policy.Change) policy.Change {
	c.LockHolder, c.LockTakenFrom, c.OpenBlockers, c.Group, c.WIPCount, c.Integrating = "", "", nil, nil, 0, nil
	c.Fields, c.MergedPR = map[string]string{}, true
	for _, f := range m.RequiredFields() {
		c.Fields[f] = "set"
	}
	return c
}

// checks reports whether m would check gate for the move c (c passing): policy refuses it
// when only that gate's input is made to fail.
func checks(m *policy.Machine, c policy.Change, gate policy.Rule) bool {
	switch gate {
	case policy.RuleLockOwnership:
		c.LockHolder = "\x00another actor" // (no login is this)
	case policy.RuleSerialized:
		c.Integrating = &policy.Integration{}
	case policy.RuleBlockers:
		c.OpenBlockers = []policy.Member{{State: "open"}}
	case policy.RuleConvergence:
		c.Group = []policy.Member{{}} // (a member with no state is not ready)
	case policy.RuleWIP:
		c.WIPCount = math.MaxInt32
	case policy.RuleRequirement:
		c.Fields, c.MergedPR = nil, false
	default:
		return false
	}
	d := m.Decide(c)
	return d.Verdict == policy.Revert && d.Rule == gate
}

// backtester replays one backtest's moves.
type backtester struct {
	owner     string
	cur, prop backtestPolicy
	res       *BacktestResult
	changes   map[BacktestChange]int
	actors    map[string]*BacktestActor // by lower-case login
	projects  map[int]*BacktestProject
	newestIDs []string // the item ids of res.Newest
}

func (bt *backtester) project(n int) *BacktestProject {
	p, ok := bt.projects[n]
	if !ok {
		p = &BacktestProject{Number: n}
		if m, ok := bt.cur.mode(bt.owner, n); ok {
			p.Current = string(m)
		}
		if m, ok := bt.prop.mode(bt.owner, n); ok {
			p.Proposed = string(m)
		}
		bt.projects[n] = p
	}
	return p
}

// replay replays one recorded decision of project n, newest first; false when it is no move.
func (bt *backtester) replay(e enforce.AuditEntry, n int) bool {
	mv := movesOf(e)
	if mv == moveNone {
		bt.res.NotMoves++
		return false
	}
	bt.res.Moves++
	p := bt.project(n)
	p.Moves++
	d := BacktestDifference{At: e.At, Project: n, Repo: e.Repo, Issue: e.IssueNumber, Actor: e.Actor, RecordedKind: e.ActorKind,
		From: e.FromState, To: e.ToState, Recorded: recordedOutcome(e, mv), RecordedRule: e.Rule}
	kind := bt.prop.kind(e, mv)
	d.ProposedKind = kind.String()
	mode, enforced := bt.prop.mode(bt.owner, n)
	switch {
	case !enforced:
		d.Proposed, d.ProposedKind = OutcomeNotEnforced, ""
		bt.res.NoLongerEnforced++
	case mv == moveAutomated:
		d.Proposed, d.ProposedRule = OutcomeAutomated, e.Rule
		if !mode.Writes() {
			d.Proposed = OutcomeNotAutomated
		}
	case mv == moveLifecycle:
		bt.lifecycle(&d, mode)
	default:
		bt.decide(&d, e, mv, kind, mode)
	}
	if !differs(d) {
		return true
	}
	bt.res.Different++
	p.Different++
	bt.changes[BacktestChange{Recorded: d.Recorded, RecordedRule: d.RecordedRule, Proposed: d.Proposed, ProposedRule: d.ProposedRule}]++
	key := strings.ToLower(d.Actor)
	a, ok := bt.actors[key]
	if !ok {
		a = &BacktestActor{Actor: d.Actor, RecordedKind: d.RecordedKind, ProposedKind: kind.String()}
		bt.actors[key] = a
	}
	a.Different++
	if len(bt.res.Newest) < backtestNewest {
		bt.res.Newest = append(bt.res.Newest, d)
		bt.newestIDs = append(bt.newestIDs, e.ItemID)
	}
	return true
}

// differs reports whether a replayed move is decided differently: another outcome, or a
// refusal by another rule.
func differs(d BacktestDifference) bool {
	return d.Recorded != d.Proposed || (d.Proposed.refused() && d.RecordedRule != d.ProposedRule)
}

// lifecycle replays a close, a reopen or a merge: its decision is kept (the merge path and the
// issue's state are not in the audit log), its outcome follows the proposed mode.
func (bt *backtester) lifecycle(d *BacktestDifference, mode enforce.Mode) {
	bt.res.Lifecycle++
	d.ProposedRule, d.Note = d.RecordedRule, "a close, reopen or merge: kept as recorded but for the project's mode"
	switch {
	case d.Recorded.refused() && mode.Writes():
		d.Proposed = OutcomeReverted
	case d.Recorded.refused():
		d.Proposed = OutcomeWouldRevert
	case mode.Writes():
		d.Proposed = OutcomeAutomated
	default:
		d.Proposed = OutcomeAllowed
	}
}

// decide re-decides an actor's move or a handoff under the proposed policy.
func (bt *backtester) decide(d *BacktestDifference, e enforce.AuditEntry, mv moveKind, kind policy.ActorKind, mode enforce.Mode) {
	m := bt.prop.m
	allowed, refused := OutcomeAllowed, OutcomeReverted
	switch {
	case mv == moveHandoff:
		allowed, refused = OutcomeHandoff, OutcomeRefusedHandoff
	case !mode.Writes():
		refused = OutcomeWouldRevert
	}
	c := policy.Change{From: e.FromState, To: e.ToState, Actor: e.Actor, ActorKind: kind}
	if mv == moveHandoff {
		role, rule, why := bt.handoffBy(e)
		if rule != "" {
			d.Proposed, d.ProposedRule, d.Note = refused, rule, why
			return
		}
		c.Role = role
	}
	c = passing(m, c)
	dec := m.Decide(c)
	recRule := policy.Rule(e.Rule)
	switch {
	case dec.Verdict == policy.Revert:
		// The table, the kind or the role refuses it, whatever the gates say.
		d.Proposed, d.ProposedRule = refused, string(dec.Rule)
	case kind == policy.ActorApp || kind == policy.ActorBypass:
		d.Proposed, d.ProposedRule = allowed, string(dec.Rule) // (never held to a gate)
	case d.Recorded.refused() && slices.Contains(gateRules, recRule):
		bt.res.KeptAsRecorded++
		d.Proposed, d.ProposedRule, d.Note = refused, e.Rule, "kept as recorded: "+e.Rule+" depends on other items and fields at the time"
		if !checks(m, c, recRule) {
			bt.res.GateNotChecked++
			d.Note = "kept as recorded, though the proposed policy does not check " + e.Rule + " for this move"
		}
	default:
		d.Proposed, d.ProposedRule = allowed, string(dec.Rule)
		if gates := bt.unchecked(e, mv, c, d.Recorded); len(gates) > 0 {
			bt.res.Unchecked++
			d.Note = "allowed by the table and roles; the proposed policy also checks " + strings.Join(gates, ", ") +
				", which the recorded decision did not"
		}
	}
}

// unchecked lists the gates the proposed policy checks for move c that the recorded decision
// did not: none after a refusal by the table, kind or role, or for a bypass actor or the app;
// else those the policy in force does not check for the move.
func (bt *backtester) unchecked(e enforce.AuditEntry, mv moveKind, c policy.Change, recorded BacktestOutcome) []string {
	var cur *policy.Change
	if r := policy.Rule(e.Rule); !recorded.refused() && r != policy.RuleBypass && r != policy.RuleApp && bt.cur.m != nil {
		cc := passing(bt.cur.m, policy.Change{From: e.FromState, To: e.ToState, Actor: e.Actor, ActorKind: bt.cur.kind(e, mv), Role: c.Role})
		cur = &cc
	}
	var out []string
	for _, g := range gateRules {
		if checks(bt.prop.m, c, g) && (cur == nil || !checks(bt.cur.m, *cur, g)) {
			out = append(out, string(g))
		}
	}
	return out
}

// handoffBy is the role a handoff's agent acts in under the proposed policy, as the façade
// gives it (its mcp.agents role, else the one its name matches); or, when the proposed policy
// would refuse the handoff before judging the move, the rule and why: the agent is not
// among the organization's agents, or may not use the command.
func (bt *backtester) handoffBy(e enforce.AuditEntry) (role, rule, why string) {
	m := bt.prop.m
	agent, ok := bt.prop.cfg.MCPAgentNamed(e.Actor)
	if !ok {
		return "", "agent", "the proposed policy does not name this agent under mcp.agents: its façade calls would not reach the organization"
	}
	role = cmp.Or(agent.Role, m.Roles().Of(agent.Name))
	commands := agent.Commands
	if len(commands) == 0 && role != "" {
		commands = m.Roles().Commands(role)
	}
	cmd := strings.TrimPrefix(e.Cause, "mcp ")
	if cmd == "advance_children" || cmd == "take_over" {
		return role, "", "" // (the façade's own operations, not workflow commands)
	}
	canon, known := canonicalCommand(m, cmd)
	switch {
	case !known:
		return "", string(policy.RuleCommand), "the proposed workflow has no command " + strconv.Quote(cmd)
	case len(commands) > 0 && !slices.ContainsFunc(commands, func(c string) bool { got, _ := canonicalCommand(m, c); return got == canon }):
		return "", string(policy.RuleCommand), "the proposed policy does not let the agent use " + canon
	}
	return role, "", ""
}

// canonicalCommand is a command's name as the workflow spells it, as the façade reads one
// (bare or ralph_ prefixed, any case); false when the workflow has none of that name.
func canonicalCommand(m *policy.Machine, cmd string) (string, bool) {
	if m.CheckCommand(cmd, nil) != nil {
		return "", false
	}
	n := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(cmd)), "ralph_")
	i := slices.IndexFunc(m.Commands(), func(c string) bool { return strings.EqualFold(c, n) })
	if i < 0 {
		return "", false
	}
	return m.Commands()[i], true
}

// finish sorts the groupings into the result.
func (bt *backtester) finish() {
	for c, n := range bt.changes {
		c.Moves = n
		bt.res.Changes = append(bt.res.Changes, c)
	}
	slices.SortFunc(bt.res.Changes, func(a, b BacktestChange) int {
		return cmp.Or(cmp.Compare(b.Moves, a.Moves), strings.Compare(string(a.Recorded), string(b.Recorded)),
			strings.Compare(a.RecordedRule, b.RecordedRule), strings.Compare(string(a.Proposed), string(b.Proposed)),
			strings.Compare(a.ProposedRule, b.ProposedRule))
	})
	for _, a := range bt.actors {
		bt.res.Actors = append(bt.res.Actors, *a)
	}
	slices.SortFunc(bt.res.Actors, func(a, b BacktestActor) int {
		return cmp.Or(cmp.Compare(b.Different, a.Different), strings.Compare(strings.ToLower(a.Actor), strings.ToLower(b.Actor)))
	})
	for _, n := range slices.Sorted(maps.Keys(bt.projects)) {
		bt.res.Projects = append(bt.res.Projects, *bt.projects[n])
	}
}

// titles gives the newest differences their issues' titles, as the reconciler read them.
func (bt *backtester) titles(ctx context.Context, st *store.Store) error {
	var ids []string
	for _, id := range bt.newestIDs {
		if id != "" && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	titles, err := st.ItemTitles(ctx, ids)
	if err != nil {
		return err
	}
	for i := range bt.res.Newest {
		bt.res.Newest[i].Title = titles[bt.newestIDs[i]]
	}
	return nil
}

// Summary says in a sentence or two what the proposed policy would decide differently.
func (r BacktestResult) Summary() string {
	if r.Moves == 0 {
		return fmt.Sprintf("No move was recorded on the organization's projects %s: there is nothing to replay.", r.window())
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Of %s %s recorded %s, %s would be decided differently", count(r.Moves), plural(r.Moves, "move", "moves"), r.window(),
		count(r.Different))
	if len(r.Changes) > 0 {
		var parts []string
		for i, c := range r.Changes {
			if i == 3 {
				parts = append(parts, fmt.Sprintf("%s more", count(r.Different-partsMoves(r.Changes[:3]))))
				break
			}
			parts = append(parts, fmt.Sprintf("%s %s", count(c.Moves), c.phrase()))
		}
		b.WriteString(": " + strings.Join(parts, "; "))
	}
	b.WriteString(".")
	if kept := r.KeptAsRecorded + r.Lifecycle; kept > 0 {
		fmt.Fprintf(&b, " %s %s on gates, requirements or the issue's state %s kept as recorded.", count(kept), plural(kept, "decision", "decisions"),
			plural(kept, "was", "were"))
	}
	if r.Capped {
		fmt.Fprintf(&b, " Only the newest %s moves were replayed.", count(r.Moves))
	}
	return b.String()
}

func partsMoves(cs []BacktestChange) int {
	n := 0
	for _, c := range cs {
		n += c.Moves
	}
	return n
}

// phrase is a change in words: "reverted (transition) → allowed (bypass)".
func (c BacktestChange) phrase() string {
	side := func(o BacktestOutcome, rule string) string {
		if rule == "" || o == OutcomeNotEnforced || o == OutcomeNotAutomated {
			return o.words()
		}
		return o.words() + " (" + rule + ")"
	}
	return side(c.Recorded, c.RecordedRule) + " → " + side(c.Proposed, c.ProposedRule)
}

// window says when the moves were recorded: "in the last 7 days", or between two times.
func (r BacktestResult) window() string {
	d := r.Until.Sub(r.Since)
	if d > 0 && d%(24*time.Hour) == 0 {
		days := int(d / (24 * time.Hour))
		if days == 1 {
			return "in the last day"
		}
		return fmt.Sprintf("in the last %d days", days)
	}
	return fmt.Sprintf("from %s to %s", r.Since.Format(time.RFC3339), r.Until.Format(time.RFC3339))
}

// Markdown renders the result for a GitHub check run's text. Every string that comes from
// outside — the organization, a login, a repository, a state's name, an issue's title — is
// shown as written in a code span, where it can make no markup, link, HTML or mention
// (mdCode).
func (r BacktestResult) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "### Backtest of the proposed policy of %s\n\n%s\n\n", mdCode(r.Owner, false), r.Summary())
	fmt.Fprintf(&b, "Decisions recorded from %s to %s: %s read, %s %s replayed", r.Since.Format(time.RFC3339), r.Until.Format(time.RFC3339),
		count(r.Decisions), count(r.Moves), plural(r.Moves, "move", "moves"))
	if r.NotMoves > 0 {
		fmt.Fprintf(&b, ", %s no move of an actor (values adopted on first sight, the app's own reports, reverts withdrawn)", count(r.NotMoves))
	}
	if r.Unidentified > 0 {
		fmt.Fprintf(&b, ", %s on issues of the organization's repositories on projects the store cannot name (not replayed)", count(r.Unidentified))
	}
	b.WriteString(".\n")
	if r.Capped {
		fmt.Fprintf(&b, "\n**Capped:** only the newest %s moves were replayed, back to %s; older ones were left out.\n", count(r.Moves),
			r.CappedFrom.Format(time.RFC3339))
	}
	if len(r.Projects) > 0 {
		b.WriteString("\n#### Projects\n\n| project | in force | proposed | moves | decided differently |\n|---|---|---|--:|--:|\n")
		projects := r.projectsShown()
		for i, p := range projects {
			if i == backtestRows {
				fmt.Fprintf(&b, "| … %s more projects | | | | |\n", count(len(projects)-i))
				break
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", mdCode(fmt.Sprintf("%s/%d", r.Owner, p.Number), true), modeWords(p.Current),
				projectChange(p, "**"), count(p.Moves), count(p.Different))
		}
	}
	if len(r.Changes) > 0 {
		b.WriteString("\n#### What would change\n\n| recorded | proposed | moves |\n|---|---|--:|\n")
		for i, c := range r.Changes {
			if i == backtestRows {
				fmt.Fprintf(&b, "| … %s more kinds | | |\n", count(len(r.Changes)-i))
				break
			}
			fmt.Fprintf(&b, "| %s | %s | %s |\n", outcomeRule(c.Recorded, c.RecordedRule), outcomeRule(c.Proposed, c.ProposedRule), count(c.Moves))
		}
	}
	if len(r.Actors) > 0 {
		b.WriteString("\n#### By actor\n\n| actor | kind recorded | kind proposed | decided differently |\n|---|---|---|--:|\n")
		for i, a := range r.Actors {
			if i == backtestRows {
				fmt.Fprintf(&b, "| … %s more actors | | | |\n", count(len(r.Actors)-i))
				break
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", mdCode(a.Actor, true), mdCode(a.RecordedKind, true), mdCode(a.ProposedKind, true), count(a.Different))
		}
	}
	if len(r.Newest) > 0 {
		b.WriteString("\n#### Newest differences\n\n| time | issue | actor | move | recorded | proposed |\n|---|---|---|---|---|---|\n")
		for _, d := range r.Newest {
			issue := mdCode(fmt.Sprintf("%s#%d", d.Repo, d.Issue), true)
			if d.Title != "" {
				issue += " " + mdCode(d.Title, true)
			}
			proposed := outcomeRule(d.Proposed, d.ProposedRule)
			if d.Note != "" {
				proposed += " — " + d.Note
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s → %s | %s | %s |\n", d.At.UTC().Format(time.RFC3339), issue, mdCode(d.Actor, true),
				mdCode(orNoState(d.From), true), mdCode(orNoState(d.To), true), outcomeRule(d.Recorded, d.RecordedRule), proposed)
		}
	}
	b.WriteString("\n" + r.notRecomputed() + "\n")
	return b.String()
}

// Text renders the result for a terminal: the same as Markdown, in plain lines (text from
// outside with its control and invisible formatting characters dropped).
func (r BacktestResult) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Backtest of the proposed policy of %s\n%s\n", plainText(r.Owner), r.Summary())
	fmt.Fprintf(&b, "Window: %s to %s; %s decisions read, %s moves replayed, %s no move, %s on projects the store cannot name.\n",
		r.Since.Format(time.RFC3339), r.Until.Format(time.RFC3339), count(r.Decisions), count(r.Moves), count(r.NotMoves), count(r.Unidentified))
	if r.Capped {
		fmt.Fprintf(&b, "Capped: only the newest moves were replayed, back to %s.\n", r.CappedFrom.Format(time.RFC3339))
	}
	if len(r.Projects) > 0 {
		b.WriteString("\nProjects:\n")
		projects := r.projectsShown()
		for i, p := range projects {
			if i == backtestRows {
				fmt.Fprintf(&b, "  … %s more projects\n", count(len(projects)-i))
				break
			}
			fmt.Fprintf(&b, "  %s/%d: %s → %s; %s %s, %s decided differently\n", plainText(r.Owner), p.Number, modeWords(p.Current),
				projectChange(p, ""), count(p.Moves), plural(p.Moves, "move", "moves"), count(p.Different))
		}
	}
	if len(r.Changes) > 0 {
		b.WriteString("\nWhat would change:\n")
		for i, c := range r.Changes {
			if i == backtestRows {
				fmt.Fprintf(&b, "  … %s more kinds\n", count(len(r.Changes)-i))
				break
			}
			fmt.Fprintf(&b, "  %7s  %s\n", count(c.Moves), c.phrase())
		}
	}
	if len(r.Actors) > 0 {
		b.WriteString("\nBy actor:\n")
		for i, a := range r.Actors {
			if i == backtestRows {
				fmt.Fprintf(&b, "  … %s more actors\n", count(len(r.Actors)-i))
				break
			}
			fmt.Fprintf(&b, "  %7s  %s (%s, proposed: %s)\n", count(a.Different), plainText(a.Actor), plainText(a.RecordedKind), a.ProposedKind)
		}
	}
	if len(r.Newest) > 0 {
		b.WriteString("\nNewest differences:\n")
		for _, d := range r.Newest {
			title := ""
			if d.Title != "" {
				title = " " + strconv.Quote(plainText(d.Title))
			}
			fmt.Fprintf(&b, "  %s  %s#%d%s  %s: %s → %s  recorded %s, proposed %s", d.At.UTC().Format(time.RFC3339), plainText(d.Repo), d.Issue, title,
				plainText(d.Actor), plainText(orNoState(d.From)), plainText(orNoState(d.To)), plainOutcome(d.Recorded, d.RecordedRule),
				plainOutcome(d.Proposed, d.ProposedRule))
			if d.Note != "" {
				b.WriteString(" (" + d.Note + ")")
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("\n" + r.notRecomputed() + "\n")
	return b.String()
}

// notRecomputed says what the replay kept as recorded, and what it could not check.
func (r BacktestResult) notRecomputed() string {
	s := "Replayed from each move's audit entry: whether the project is enforced and in which mode, the actor's kind, " +
		"the transition table and the worker roles (for a handoff, also the agent and its command). " +
		"Gates (lock ownership, blockers, convergence, WIP limits, serialized work) and requirements depend on other items " +
		"and fields at the time, which the audit log does not hold"
	s += fmt.Sprintf(": %s %s by them %s kept as recorded", count(r.KeptAsRecorded), plural(r.KeptAsRecorded, "refusal", "refusals"),
		plural(r.KeptAsRecorded, "was", "were"))
	if r.GateNotChecked > 0 {
		s += fmt.Sprintf(" (%s of them by a gate or requirement the proposed policy does not check for that move: they might be allowed)", count(r.GateNotChecked))
	}
	s += "."
	if r.Unchecked > 0 {
		s += fmt.Sprintf(" %s %s allowed by the proposed table and roles would also be held to a gate or requirement the recorded decision did not check: they might be refused.",
			count(r.Unchecked), plural(r.Unchecked, "move", "moves"))
	}
	if r.Lifecycle > 0 {
		s += fmt.Sprintf(" %s of the moves %s, kept as recorded but for %s project's enforcement and mode.", count(r.Lifecycle),
			plural(r.Lifecycle, "was a close, a reopen or a merge", "were closes, reopens or merges"), plural(r.Lifecycle, "its", "their"))
	}
	return s
}

// projectsShown are the projects in the order a rendering lists them: those the proposed policy
// changes or decides differently on first, then the others, each by number.
func (r BacktestResult) projectsShown() []BacktestProject {
	out := slices.Clone(r.Projects)
	changed := func(p BacktestProject) bool { return p.Starts() || p.Stops() || p.ModeChanges() || p.Different > 0 }
	slices.SortStableFunc(out, func(a, b BacktestProject) int {
		switch {
		case changed(a) && !changed(b):
			return -1
		case changed(b) && !changed(a):
			return 1
		}
		return cmp.Compare(a.Number, b.Number)
	})
	return out
}

// projectChange says what becomes of a project under the proposed policy; strong wraps a
// change (Markdown's bold, or nothing).
func projectChange(p BacktestProject, strong string) string {
	switch {
	case p.Stops():
		return strong + "not enforced" + strong + " (stops being enforced)"
	case p.Starts():
		return strong + p.Proposed + strong + " (starts being enforced: no moves of it were recorded to replay)"
	case p.ModeChanges():
		return strong + p.Proposed + strong + " (mode changes)"
	}
	return modeWords(p.Proposed)
}

func modeWords(mode string) string {
	if mode == "" {
		return "not enforced"
	}
	return mode
}

// outcomeRule is an outcome with its rule, for a table cell (rules and outcomes are the app's
// own words).
func outcomeRule(o BacktestOutcome, rule string) string {
	if rule == "" || o == OutcomeNotEnforced || o == OutcomeNotAutomated {
		return o.words()
	}
	return o.words() + " (" + mdCode(rule, true) + ")"
}

func plainOutcome(o BacktestOutcome, rule string) string {
	if rule == "" || o == OutcomeNotEnforced || o == OutcomeNotAutomated {
		return o.words()
	}
	return o.words() + " (" + plainText(rule) + ")"
}

func orNoState(s string) string {
	if s == "" {
		return "(no state)"
	}
	return s
}

// maxShown bounds a string from outside as a result shows it.
const maxShown = 100

// plainText is a string from outside as a line shows it: control and invisible formatting
// characters (bidi overrides and isolates included) dropped as comments drop them
// (enforce.VisibleText), line breaks and tabs made spaces, bounded.
func plainText(s string) string {
	s = strings.NewReplacer("\n", " ", "\t", " ").Replace(enforce.VisibleText(s))
	s = strings.Map(func(r rune) rune {
		if r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, s)
	if utf8.RuneCountInString(s) > maxShown {
		s = string([]rune(s)[:maxShown]) + "…"
	}
	return s
}

// mdCode shows a string from outside in Markdown as written and as nothing else: a code span
// (no emphasis, link, image, HTML, hidden comment or mention is made in one), its text made
// plain (plainText) and without backticks (it cannot close the span); in a table cell, a
// pipe is escaped (GitHub splits cells before it reads code spans).
func mdCode(s string, cell bool) string {
	s = strings.TrimSpace(strings.ReplaceAll(plainText(s), "`", ""))
	if cell {
		s = strings.ReplaceAll(s, "|", `\|`)
	}
	if s == "" {
		return "(none)"
	}
	return "`" + s + "`"
}

// count writes n with thousands separated: 1,234.
func count(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
