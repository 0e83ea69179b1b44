package enforce

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/policy"
)

// Facade serves the MCP tools: it reads an item's state, group, pipeline position and
// convergence (query.go), ranks actionable issues and claims one (pick.go), hands an issue off
// and advances a parent's children for an agent. Every verdict comes from policy, through the
// same gates webhooks go through.
type Facade struct {
	*core
	auto *Automation
	// org is the organization whose policy the calls are held to (In); "": the deployment's.
	// m is its workflow as In found it (nil: looked up at each use).
	org string
	m   *policy.Machine
}

// In is the façade held to an organization's policy (Options.Policies) as it stands now: the
// workflow its calls describe, resolve and judge, one for the whole of a call even if a push
// lands meanwhile.
func (f *Facade) In(owner string) *Facade {
	g := *f
	g.org = owner
	g.m = f.machineAt(owner, time.Time{})
	return &g
}

// Machine returns the workflow of the façade's organization.
func (f *Facade) Machine() *policy.Machine {
	if f.m != nil {
		return f.m
	}
	return f.machineAt(f.org, time.Time{})
}

// The write use cases of the MCP façade: an agent hands an issue off (handoff_ticket), claims
// the best actionable issue (pick_actionable_issue with claim), or advances a parent's children
// (advance_children). The app writes; the audit and the comment name the agent. Every verdict
// comes from policy, through the same gates webhooks go through.

// lockIntent is the intent a claim uses: the caller's command's lock state.
const lockIntent = "lock"

// Handoff is an agent's request to move an item with a command, by intent or by state.
type Handoff struct {
	Agent string
	// Role is the worker role the agent acts in (mcp.agents[].role, or the one its name
	// matches); empty: none. policy holds it to the states its role owns.
	Role string
	// Commands are the commands the agent may use (config mcp.agents[].commands, else its
	// role's); empty = all.
	Commands []string
	Command  string
	Intent   string // exactly one of Intent and ToState
	ToState  string
	Reason   string
	// TakeOver: take over the item's expired lock first (workflow.locks.ttl; takeover.go).
	TakeOver bool
}

// HandoffResult is what a handoff did.
type HandoffResult struct {
	Item          Item
	Command       string
	PreviousState string
	NewState      string
	// Changed is false when the item already was in the requested state (nothing written).
	Changed bool
	// TookOverFrom is whom the agent took the item's expired lock over from ("" none).
	TookOverFrom string
	Rule         string
	Reason       string
	// Guidance is what agents may do from the new state.
	Guidance Guidance
	// Warnings are problems after the move took effect (the comment or the automation failed);
	// the move stands.
	Warnings []string
}

// errClaimLost: another caller holds the item (or it moved) — try the next candidate.
var errClaimLost = errors.New("claimed by someone else first")

// permit checks that the agent may use the command at all (config mcp.agents[].commands).
func (f *Facade) permit(h Handoff) error {
	cmd, ok := f.CanonicalCommand(h.Command)
	if !ok {
		// Unknown: policy names the commands the agent may use.
		return f.Machine().CheckCommand(h.Command, h.Commands)
	}
	if len(h.Commands) == 0 || slices.ContainsFunc(h.Commands, func(c string) bool {
		got, _ := f.CanonicalCommand(c)
		return got == cmd
	}) {
		return nil
	}
	allowed := make([]string, 0, len(h.Commands))
	for _, c := range h.Commands {
		if got, ok := f.CanonicalCommand(c); ok {
			allowed = append(allowed, got)
		}
	}
	return policy.NewRetryRefusal(fmt.Sprintf("Agent %s used command %s", h.Agent, cmd),
		fmt.Sprintf("the agent %s may only use the commands %s (config mcp.agents)", h.Agent, strings.Join(allowed, ", ")),
		policy.Retry{With: []policy.Suggestion{{Arg: policy.ArgCommand, Kind: policy.Word, Values: allowed}},
			Tail: ", or leave this issue to an agent that runs " + cmd}).Because(policy.RuleCommand)
}

// target resolves the handoff's intent or state for its command. A refusal's Recovery names
// only what the agent may ask for from the item's state (from; policy.ResolveHandoff): the
// intents and direct states its command may use there, for its kind and role, and what its
// other commands would do.
func (f *Facade) target(h Handoff, from string) (string, error) {
	ask := policy.HandoffAsk{Command: h.Command, Intent: h.Intent, State: h.ToState, From: from, Actor: h.Agent,
		Kind: policy.ActorAgent, Role: h.Role, Commands: h.Commands}
	hasIntent, hasState := strings.TrimSpace(h.Intent) != "", strings.TrimSpace(h.ToState) != ""
	if hasIntent == hasState {
		what := "Neither intent nor to_state was given"
		if hasIntent {
			what = "Both intent and to_state were given"
		}
		return "", f.Machine().HandoffRetryRefusal(ask, what, "a handoff names exactly one: a semantic intent, or a direct state")
	}
	return f.Machine().ResolveHandoff(ask)
}

// settledFrom is the state a handoff of it starts from: its last legal state once ralph-gate
// knows the item, else the board's.
func (f *Facade) settledFrom(ctx context.Context, it Item) (string, error) {
	rec, found, err := f.items.load(ctx, it.ID)
	if err != nil {
		return "", err
	}
	if found && rec.known() {
		return rec.LastLegalState, nil
	}
	return it.State, nil
}

// Handoff moves an item for an agent: it checks the command, resolves the intent or state,
// decides with policy (table, lock ownership, gates) from the item's last legal state, writes
// through the app, records the new legal state (and the agent as lock holder when it enters a
// lock), audits, comments and runs the automation a legal move triggers. A refusal is a
// *policy.Refusal; other errors are infrastructure failures.
func (f *Facade) Handoff(ctx context.Context, b Board, it Item, h Handoff) (HandoffResult, error) {
	if err := f.permit(h); err != nil {
		return HandoffResult{}, err
	}
	// While the item's history is not settled, the walks beside settle it: the handoff waits
	// for them (Options.HandoffWait, by the wall clock they run on), then answers busy. A try
	// reads GitHub, so the next comes only once the store shows the history moved on.
	deadline := time.Now().Add(f.opts.HandoffWait)
	mark, err := f.progress(ctx, it.ID)
	if err != nil {
		return HandoffResult{}, err
	}
	pause := 50 * time.Millisecond
	for {
		res, err := f.handoffOnce(ctx, b, it, h)
		var refusal *policy.Refusal
		if !errors.As(err, &refusal) || refusal.Rule != policy.RuleUnsettled {
			return res, err
		}
		for moved := false; !moved; pause = min(2*pause, time.Second) {
			if time.Now().Add(pause).After(deadline) {
				return res, err
			}
			select {
			case <-ctx.Done():
				return res, err
			case <-time.After(pause):
			}
			now, perr := f.progress(ctx, it.ID)
			if perr != nil {
				return res, err
			}
			moved, mark = now != mark, now
		}
	}
}

// progress is what of the item's history, and of the reports waiting anywhere, the store and
// the sweeps' proof tell now: it changes when a report is judged, a write of ours taken in, or
// a proof reaches past a write of ours not reported (what a busy handoff waits for), and reading
// it costs no GitHub request.
func (f *Facade) progress(ctx context.Context, itemID string) (string, error) {
	rec, _, err := f.items.load(ctx, itemID)
	if err != nil {
		return "", err
	}
	waiting, err := f.store().PendingItemsBefore(ctx, f.now().Add(time.Hour), "", "")
	if err != nil {
		return "", fmt.Errorf("list the items with reports waiting: %w", err)
	}
	unreported, err := f.auto.unreportedWrites(ctx, rec)
	if err != nil {
		return "", err
	}
	return fmt.Sprint(rec.Version, waiting, unreported), nil
}

// handoffOnce is one try of a handoff: refused as unsettled while the item's history is not.
func (f *Facade) handoffOnce(ctx context.Context, b Board, it Item, h Handoff) (HandoffResult, error) {
	from, err := f.settledFrom(ctx, it)
	if err != nil {
		return HandoffResult{}, err
	}
	to, err := f.target(h, from)
	if err != nil {
		return HandoffResult{}, err
	}
	unlock, err := f.items.lock(ctx, it.ID)
	if err != nil {
		return HandoffResult{}, err
	}
	defer unlock()
	cur, err := b.Item(ctx, it.ID)
	if err != nil {
		return HandoffResult{}, fmt.Errorf("read item %s: %w", it.ID, err)
	}
	return f.handoffLocked(ctx, b, &handoffAttempt{cur: cur, h: h, to: to})
}

// claim locks an item for h.Agent (store.ClaimLock, so one claimer wins across replicas) and
// hands it off to the lock state; a lost race is errClaimLost, a refused handoff releases the
// claim and returns the refusal.
func (f *Facade) claim(ctx context.Context, b Board, it Item, h Handoff, lockState string) (HandoffResult, error) {
	cur, unlock, err := f.lockForClaim(ctx, b, it)
	if err != nil {
		return HandoffResult{}, err
	}
	defer unlock()
	won, err := f.store().ClaimLock(ctx, cur.ID, h.Agent, f.now())
	if err != nil {
		return HandoffResult{}, fmt.Errorf("claim #%d: %w", cur.Number, err)
	}
	if !won {
		return HandoffResult{}, fmt.Errorf("#%d: %w", cur.Number, errClaimLost)
	}
	h.Intent, h.ToState = lockIntent, ""
	res, err := f.handoffLocked(ctx, b, &handoffAttempt{cur: cur, h: h, to: lockState})
	if err != nil {
		if _, rerr := f.store().ReleaseLock(ctx, cur.ID, h.Agent, f.now()); rerr != nil {
			zerolog.Ctx(ctx).Error().Err(rerr).Int("issue", cur.Number).Msg("could not release a failed claim")
		}
	}
	return res, err
}

// lockForClaim takes the item's lock for a claim and reads it again: errClaimLost when it moved
// since it was ranked. The record is baselined first, or the claim would create one whose last
// legal state is "unset". The caller unlocks.
func (f *Facade) lockForClaim(ctx context.Context, b Board, it Item) (Item, func(), error) {
	unlock, err := f.items.lock(ctx, it.ID)
	if err != nil {
		return Item{}, nil, err
	}
	cur, err := b.Item(ctx, it.ID)
	switch {
	case err != nil:
		err = fmt.Errorf("read item %s: %w", it.ID, err)
	case cur.State != it.State:
		err = fmt.Errorf("#%d moved to %s meanwhile: %w", cur.Number, cur.State, errClaimLost)
	default:
		_, err = f.baseline(ctx, cur)
	}
	if err != nil {
		unlock()
		return Item{}, nil, err
	}
	return cur, unlock, nil
}

// baseline returns the item's record, creating it from the board's current value when the
// store has never seen the item (its current value is adopted as legal, as on first sight).
func (f *Facade) baseline(ctx context.Context, cur Item) (Record, error) {
	return f.items.update(ctx, cur.ID, func(rec Record, found bool) (Step, bool, error) {
		if found && (rec.known() || cur.State == "") {
			return Step{}, false, nil
		}
		// Never seen, or known only by a claim: adopt the board's value (as of its change).
		rec.LastLegalState, rec.ObservedState, rec.ObservedAt = cur.State, cur.State, cur.StateUpdatedAt
		rec.ProjectID, rec.IssueNumber, rec.Repo = cur.ProjectID, cur.Number, cur.Repo
		return Step{Record: rec}, true, nil
	})
}

// handoffAttempt is one handoff as it goes: the item as read, the request, and what was
// decided for it.
type handoffAttempt struct {
	cur      Item
	h        Handoff
	cmd      string // the command, as the workflow spells it
	from, to string // the item's last legal state, and the state asked for
	rec      Record
	dec      policy.Decision
}

// handoffLocked is a handoff of a.cur (freshly read) to a.to, under the item's locks.
func (f *Facade) handoffLocked(ctx context.Context, b Board, a *handoffAttempt) (HandoffResult, error) {
	b = withFamilies(b) // the relatives' check, the gates and the automation share their reads
	a.cmd, _ = f.CanonicalCommand(a.h.Command)
	var err error
	if a.rec, err = f.baseline(ctx, a.cur); err != nil {
		return HandoffResult{}, err
	}
	a.from = a.rec.LastLegalState
	cur, h := a.cur, a.h
	if a.from != cur.State {
		return HandoffResult{}, &policy.Refusal{
			Tried: fmt.Sprintf("Handing off #%d", cur.Number),
			Why: fmt.Sprintf("the board shows %s but the last state ralph-gate accepted is %s: a change is still being processed",
				orNoState(cur.State), orNoState(a.from)),
			Recovery: "wait a few seconds and retry (get_workflow_state shows the settled state)",
			Options:  []string{},
			Rule:     policy.RuleUnsettled,
		}
	}
	at := moveTime(time.Time{}, f.now())
	res := HandoffResult{Item: cur, Command: a.cmd, PreviousState: a.from, NewState: a.to, Warnings: []string{}}
	if a.from == a.to && !h.TakeOver {
		return f.unchanged(a, res)
	}
	// A move, and a take-over (takeover.go), come after everything the item's history holds
	// before them: the previous holder's last moves are judged as its own.
	if err := f.settledBefore(ctx, b, a, at); err != nil {
		return HandoffResult{}, err
	}
	if !h.TakeOver {
		return f.handoffMove(ctx, b, a, res, at)
	}
	if err := f.takeOver(ctx, a); err != nil {
		return HandoffResult{}, err
	}
	res.TookOverFrom = a.rec.LockTakenFrom
	if a.from == a.to {
		return f.unchanged(a, res)
	}
	out, err := f.handoffMove(ctx, b, a, res, at)
	var refusal *policy.Refusal
	if errors.As(err, &refusal) {
		// The take-over stands: say so, or the agent holds a lock it was never told of.
		refusal.Why += fmt.Sprintf(" (the lock on %s is yours now: you took it over from %s)", a.from, orNobody(res.TookOverFrom))
	}
	return out, err
}

// orNobody names a previous holder, "nobody" for none.
func orNobody(s string) string {
	if s == "" {
		return "nobody"
	}
	return s
}

// settledBefore refuses a handoff while a change of the item (or of one it depends on) made
// before at is still being judged.
func (f *Facade) settledBefore(ctx context.Context, b Board, a *handoffAttempt, at time.Time) error {
	var busy errUnsettled
	if err := f.auto.unsettledBefore(ctx, b, a.cur, a.rec, at); errors.As(err, &busy) {
		return &policy.Refusal{
			Tried:    fmt.Sprintf("Handing off #%d", a.cur.Number),
			Why:      busy.why,
			Recovery: "wait a few seconds and retry (get_workflow_state shows the settled state)",
			Options:  []string{},
			Rule:     policy.RuleUnsettled,
		}
	} else if err != nil {
		return err
	}
	return nil
}

// handoffMove judges and makes the handoff's move (a.from → a.to), its lock and comment.
func (f *Facade) handoffMove(ctx context.Context, b Board, a *handoffAttempt, res HandoffResult, at time.Time) (HandoffResult, error) {
	cur, h := a.cur, a.h
	var err error
	pc := f.withItem(policy.Change{From: a.from, To: a.to, Actor: h.Agent, ActorKind: policy.ActorAgent, LockHolder: a.rec.LockHolder, LockTakenFrom: a.rec.LockTakenFrom, Role: h.Role}, cur)
	a.dec = f.Machine().Decide(pc)
	if a.dec.Verdict == policy.Allow {
		var member groupUnsettled
		if pc, err = f.gateInputs(ctx, gateQuery{board: b, it: cur, change: pc, m: f.Machine()}); errors.As(err, &member) {
			return HandoffResult{}, &policy.Refusal{
				Tried:    fmt.Sprintf("Handing off #%d", cur.Number),
				Why:      fmt.Sprintf("#%d, a member of its group, has a change still being judged", member.number),
				Recovery: "wait a few seconds and retry (get_workflow_state shows the settled state)",
				Options:  []string{},
				Rule:     policy.RuleUnsettled,
			}
		} else if err != nil {
			return HandoffResult{}, err
		}
		a.dec = f.Machine().Decide(pc)
	}
	if a.dec.Verdict != policy.Allow {
		refusal := f.Machine().HandoffRefusal(a.cmd, h.Commands, pc, a.dec)
		f.audit(ctx, f.rec.handoffAudit(a, VerdictIgnored, "refused handoff: "+refusal.Error()))
		return HandoffResult{}, refusal
	}
	step := actorStep{item: cur, from: a.from, to: a.to, at: at, actor: h.Agent, dec: a.dec,
		obs:   f.rec.appStep(appMove{Item: cur, From: cur.State, To: a.to, Agent: h.Agent, At: at}, a.from),
		audit: f.rec.handoffAudit(a, VerdictHandoff, handoffReason(a)),
		why:   fmt.Sprintf("#%d handed off by %s", cur.Number, h.Agent)}
	warning, err := f.auto.makeStep(ctx, b, step)
	if err != nil {
		return HandoffResult{}, err
	}
	if warning != "" {
		res.Warnings = append(res.Warnings, warning)
	}
	res.Changed, res.Rule, res.Reason = true, string(a.dec.Rule), a.dec.Reason
	holder := ""
	if f.Machine().IsLock(a.to) {
		holder = h.Agent
	}
	res.Guidance = f.Guide(a.to, holder)
	moveLine{Issue: cur.Number, From: a.from, To: a.to, Actor: h.Agent, Verdict: VerdictHandoff}.on(zerolog.Ctx(ctx).Info()).
		Str("item", cur.ID).Str("command", a.cmd).Msg("handoff")
	if _, err := b.AddComment(ctx, cur.ContentID, f.rec.handoffComment(a, res.Guidance)); err != nil {
		zerolog.Ctx(ctx).Error().Err(err).Msg("could not comment on the handoff")
		res.Warnings = append(res.Warnings, "the audit comment could not be posted: "+err.Error())
	}
	return res, nil
}

// unchanged answers a handoff to the state the item is in: nothing to move, but re-entering a
// lock somebody else holds is still refused.
func (f *Facade) unchanged(a *handoffAttempt, res HandoffResult) (HandoffResult, error) {
	holder := a.rec.LockHolder
	if f.Machine().IsLock(a.to) && holder != "" && !strings.EqualFold(holder, a.h.Agent) {
		return HandoffResult{}, &policy.Refusal{
			Tried:    fmt.Sprintf("%s asked to take #%d in %s", a.h.Agent, a.cur.Number, a.to),
			Why:      fmt.Sprintf("%s is locked by %s", a.to, holder),
			Recovery: fmt.Sprintf("pick another issue (pick_actionable_issue), or ask %s to hand it off", holder),
			Options:  []string{holder},
			Rule:     policy.RuleLockOwnership,
		}
	}
	res.Rule, res.Reason = string(policy.RuleLegal), a.to+" is unchanged"
	if res.TookOverFrom != "" {
		res.Reason = fmt.Sprintf("%s took over the lock on %s from %s (it had expired)", a.h.Agent, a.to, res.TookOverFrom)
	}
	res.Guidance = f.Guide(a.to, holder)
	return res, nil
}

// audit appends an audit entry; a failure is logged (the move it tells of stands).
func (c *core) audit(ctx context.Context, e AuditEntry) {
	if _, err := c.store().AppendAudit(ctx, e); err != nil {
		zerolog.Ctx(ctx).Error().Err(err).Msg("could not record the audit entry")
	}
}

func handoffReason(a *handoffAttempt) string {
	how := "to_state " + a.h.ToState
	if a.h.Intent != "" {
		how = "intent " + a.h.Intent
	}
	r := fmt.Sprintf("handoff_ticket by %s (command %s, %s): %s", a.h.Agent, a.cmd, how, a.dec.Reason)
	if reason := strings.TrimSpace(a.h.Reason); reason != "" {
		r += "; agent's reason: " + reason
	}
	return r
}
