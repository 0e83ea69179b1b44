package enforce

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/marker"
	"github.com/ralph-gate/ralph-gate/policy"
	"github.com/ralph-gate/ralph-gate/store"
)

// The write use cases of the MCP façade: an agent hands an issue off (handoff_ticket), claims
// the best actionable issue (pick_actionable_issue with claim), or advances a parent's children
// (advance_children). The app writes; the audit and the comment name the agent. Every verdict
// comes from policy, through the same gates webhooks go through.

// lockIntent is the intent a claim uses: the caller's command's lock state.
const lockIntent = "lock"

// Handoff is an agent's request to move an item with a command, by intent or by state.
type Handoff struct {
	Agent string
	// Commands are the commands the agent may use (config mcp.agents[].commands); empty = all.
	Commands []string
	Command  string
	Intent   string // exactly one of Intent and ToState
	ToState  string
	Reason   string
}

// HandoffResult is what a handoff did.
type HandoffResult struct {
	Item          Item
	Command       string
	PreviousState string
	NewState      string
	// Changed is false when the item already was in the requested state (nothing written).
	Changed bool
	Rule    string
	Reason  string
	// Guidance is what agents may do from the new state.
	Guidance Guidance
	// Warnings are problems after the move took effect (the comment or the automation failed);
	// the move stands.
	Warnings []string
}

// errClaimLost: another caller holds the item (or it moved) — try the next candidate.
var errClaimLost = errors.New("claimed by someone else first")

// lockClaimer is the part of the store that claims locks atomically (store.Store has it).
type lockClaimer interface {
	ClaimLock(ctx context.Context, itemID, holder string, now time.Time) (bool, error)
	ReleaseLock(ctx context.Context, itemID, holder string, now time.Time) (bool, error)
}

// permit checks that the agent may use the command at all (config mcp.agents[].commands).
func (s *Service) permit(h Handoff) error {
	cmd, ok := s.CanonicalCommand(h.Command)
	if !ok {
		// Unknown: policy's resolution explains the valid commands.
		_, err := s.machine.ResolveIntent(h.Command, lockIntent)
		return err
	}
	if len(h.Commands) == 0 || slices.ContainsFunc(h.Commands, func(c string) bool {
		got, _ := s.CanonicalCommand(c)
		return got == cmd
	}) {
		return nil
	}
	allowed := make([]string, 0, len(h.Commands))
	for _, c := range h.Commands {
		if got, ok := s.CanonicalCommand(c); ok {
			allowed = append(allowed, got)
		}
	}
	return &policy.Refusal{
		Tried:    fmt.Sprintf("Agent %s used command %s", h.Agent, cmd),
		Why:      fmt.Sprintf("%s may only use the commands %s (config mcp.agents)", h.Agent, strings.Join(allowed, ", ")),
		Recovery: "retry with command set to one of: " + strings.Join(allowed, ", ") + ", or leave this issue to an agent that runs " + cmd,
		Options:  allowed,
	}
}

// target resolves the handoff's intent or state for its command.
func (s *Service) target(h Handoff) (string, error) {
	hasIntent, hasState := strings.TrimSpace(h.Intent) != "", strings.TrimSpace(h.ToState) != ""
	if hasIntent == hasState {
		what := "Neither intent nor to_state was given"
		if hasIntent {
			what = "Both intent and to_state were given"
		}
		var intents []string
		for _, it := range s.machine.Intents() {
			if st, err := s.machine.ResolveIntent(h.Command, it); err == nil {
				intents = append(intents, it+" (→ "+st+")")
			}
		}
		direct, _ := s.machine.DirectStates(h.Command)
		return "", &policy.Refusal{
			Tried:    what,
			Why:      "a handoff names exactly one: a semantic intent, or a direct state",
			Recovery: fmt.Sprintf("retry with only intent (for %s: %s) or only to_state (%s)", h.Command, strings.Join(intents, ", "), strings.Join(direct, ", ")),
			Options:  append(s.machine.Intents(), direct...),
		}
	}
	if hasIntent {
		return s.machine.ResolveIntent(h.Command, h.Intent)
	}
	return s.machine.ResolveState(h.Command, h.ToState)
}

// Handoff moves an item for an agent: it checks the command, resolves the intent or state,
// decides with policy (table, lock ownership, gates) from the item's last legal state, writes
// through the app, records the new legal state (and the agent as lock holder when it enters a
// lock), audits, comments and runs the automation a legal move triggers. A refusal is a
// *policy.Refusal; other errors are infrastructure failures.
func (s *Service) Handoff(ctx context.Context, b Board, it Item, h Handoff) (HandoffResult, error) {
	if err := s.permit(h); err != nil {
		return HandoffResult{}, err
	}
	to, err := s.target(h)
	if err != nil {
		return HandoffResult{}, err
	}
	unlock, err := s.lockItem(ctx, it.ID)
	if err != nil {
		return HandoffResult{}, err
	}
	defer unlock()
	cur, err := b.Item(ctx, it.ID)
	if err != nil {
		return HandoffResult{}, fmt.Errorf("read item %s: %w", it.ID, err)
	}
	return s.handoffLocked(ctx, b, cur, h, to)
}

// claim locks an item for h.Agent (store.ClaimLock, so one claimer wins across replicas) and
// hands it off to the lock state; a lost race is errClaimLost, a refused handoff releases the
// claim and returns the refusal.
func (s *Service) claim(ctx context.Context, b Board, it Item, h Handoff, lockState string) (HandoffResult, error) {
	claimer, ok := s.store.(lockClaimer)
	if !ok {
		return HandoffResult{}, errors.New("the store cannot claim locks")
	}
	unlock, err := s.lockItem(ctx, it.ID)
	if err != nil {
		return HandoffResult{}, err
	}
	defer unlock()
	cur, err := b.Item(ctx, it.ID)
	if err != nil {
		return HandoffResult{}, fmt.Errorf("read item %s: %w", it.ID, err)
	}
	if cur.State != it.State {
		return HandoffResult{}, fmt.Errorf("#%d moved to %s meanwhile: %w", cur.Number, cur.State, errClaimLost)
	}
	// The record must exist with a baseline before the claim, or the claim would create one
	// whose last legal state is "unset".
	if _, err := s.baseline(ctx, cur); err != nil {
		return HandoffResult{}, err
	}
	won, err := claimer.ClaimLock(ctx, cur.ID, h.Agent, s.now())
	if err != nil {
		return HandoffResult{}, err
	}
	if !won {
		return HandoffResult{}, fmt.Errorf("#%d: %w", cur.Number, errClaimLost)
	}
	h.Intent, h.ToState = lockIntent, ""
	res, err := s.handoffLocked(ctx, b, cur, h, lockState)
	if err != nil {
		if _, rerr := claimer.ReleaseLock(ctx, cur.ID, h.Agent, s.now()); rerr != nil {
			zerolog.Ctx(ctx).Error().Err(rerr).Int("issue", cur.Number).Msg("could not release a failed claim")
		}
	}
	return res, err
}

// baseline returns the item's record, creating it from the board's current value when the
// store has never seen the item (its current value is adopted as legal, as on first sight).
func (s *Service) baseline(ctx context.Context, cur Item) (store.Item, error) {
	for attempt := 0; attempt < 5; attempt++ {
		rec, err := s.store.GetItem(ctx, cur.ID)
		switch {
		case err == nil && (rec.LastLegalState != "" || !rec.LegalAt.IsZero() || cur.State == ""):
			return rec, nil
		case err == nil:
			// Known only by a claim: adopt the board's value.
			rec.LastLegalState, rec.ObservedState = cur.State, cur.State
		case errors.Is(err, store.ErrNotFound):
			rec = store.Item{ItemID: cur.ID, LastLegalState: cur.State, ObservedState: cur.State}
		default:
			return store.Item{}, fmt.Errorf("load item %s: %w", cur.ID, err)
		}
		rec.ProjectID, rec.IssueNumber, rec.Repo = cur.ProjectID, cur.Number, cur.Repo
		err = s.save(ctx, rec)
		if errors.Is(err, ErrConcurrentUpdate) {
			continue
		}
		if err != nil {
			return store.Item{}, err
		}
	}
	return store.Item{}, fmt.Errorf("record item %s: %w", cur.ID, ErrConcurrentUpdate)
}

// handoffLocked is a handoff of cur (freshly read) to `to`, under the item's locks.
func (s *Service) handoffLocked(ctx context.Context, b Board, cur Item, h Handoff, to string) (HandoffResult, error) {
	cmd, _ := s.CanonicalCommand(h.Command)
	rec, err := s.baseline(ctx, cur)
	if err != nil {
		return HandoffResult{}, err
	}
	from := rec.LastLegalState
	if from != cur.State {
		return HandoffResult{}, &policy.Refusal{
			Tried: fmt.Sprintf("Handing off #%d", cur.Number),
			Why: fmt.Sprintf("the board shows %s but the last state ralph-gate accepted is %s: a change is still being processed",
				displayState(cur.State), displayState(from)),
			Recovery: "wait a few seconds and retry (get_workflow_state shows the settled state)",
			Options:  []string{},
		}
	}
	res := HandoffResult{Item: cur, Command: cmd, PreviousState: from, NewState: to, Warnings: []string{}}
	pc := policy.Change{From: from, To: to, Actor: h.Agent, ActorKind: policy.ActorAgent, LockHolder: rec.LockHolder}
	if from == to {
		// Nothing to move. Re-entering a lock somebody else holds is still refused.
		if s.machine.IsLock(to) && rec.LockHolder != "" && !strings.EqualFold(rec.LockHolder, h.Agent) {
			return HandoffResult{}, &policy.Refusal{
				Tried:    fmt.Sprintf("%s asked to take #%d in %s", h.Agent, cur.Number, to),
				Why:      fmt.Sprintf("%s is locked by %s", to, rec.LockHolder),
				Recovery: fmt.Sprintf("pick another issue (pick_actionable_issue), or ask %s to hand it off", rec.LockHolder),
				Options:  []string{rec.LockHolder},
			}
		}
		res.Rule, res.Reason = string(policy.RuleLegal), to+" is unchanged"
		res.Guidance = s.Guide(to, rec.LockHolder)
		return res, nil
	}
	dec := s.machine.Decide(pc)
	if dec.Verdict == policy.Allow {
		if pc, err = s.gateInputs(ctx, b, cur, pc, time.Time{}); err != nil {
			return HandoffResult{}, err
		}
		dec = s.machine.Decide(pc)
	}
	if dec.Verdict != policy.Allow {
		refusal := s.machine.HandoffRefusal(cmd, pc, dec)
		s.auditHandoff(ctx, cur, h, cmd, from, to, store.VerdictIgnored, dec, "refused handoff: "+refusal.Error())
		return HandoffResult{}, refusal
	}
	if err := b.SetState(ctx, cur, to); err != nil {
		return HandoffResult{}, fmt.Errorf("set state of #%d to %q: %w", cur.Number, to, err)
	}
	if err := s.recordHandoff(ctx, cur, h.Agent, from, to); err != nil {
		return HandoffResult{}, err
	}
	res.Changed, res.Rule, res.Reason = true, string(dec.Rule), dec.Reason
	holder := ""
	if s.machine.IsLock(to) {
		holder = h.Agent
	}
	res.Guidance = s.Guide(to, holder)
	s.auditHandoff(ctx, cur, h, cmd, from, to, store.VerdictHandoff, dec, handoffReason(h, cmd, dec))
	zerolog.Ctx(ctx).Info().Int("issue", cur.Number).Str("from", from).Str("to", to).Str("agent", h.Agent).Str("command", cmd).Msg("handoff")
	if _, err := b.AddComment(ctx, cur.ContentID, s.handoffComment(cur, h, cmd, from, to, res.Guidance)); err != nil {
		zerolog.Ctx(ctx).Error().Err(err).Msg("could not comment on the handoff")
		res.Warnings = append(res.Warnings, "the audit comment could not be posted: "+err.Error())
	}
	moved := cur
	moved.State = to
	if err := s.automate(ctx, b, moved, to, fmt.Sprintf("#%d handed off by %s", cur.Number, h.Agent)); err != nil {
		zerolog.Ctx(ctx).Error().Err(err).Msg("automation after a handoff failed")
		res.Warnings = append(res.Warnings, "automation after the move failed (the move stands): "+err.Error())
	}
	return res, nil
}

// recordHandoff makes `to` the item's last legal state, with the agent as lock holder when it
// enters a lock. The app's own webhook for the write is ignored (its sender is our bot), so
// this is the only record of the move.
func (s *Service) recordHandoff(ctx context.Context, cur Item, agent, from, to string) error {
	now := s.now()
	for attempt := 0; attempt < 5; attempt++ {
		rec, err := s.store.GetItem(ctx, cur.ID)
		if errors.Is(err, store.ErrNotFound) {
			rec, err = store.Item{ItemID: cur.ID}, nil
		}
		if err != nil {
			return fmt.Errorf("load item %s: %w", cur.ID, err)
		}
		rec.ProjectID, rec.IssueNumber, rec.Repo = cur.ProjectID, cur.Number, cur.Repo
		// LegalAt stays: it orders changes by GitHub's clock, and ours may be ahead of it (as for
		// automation moves).
		legalBefore := rec.LastLegalState
		rec.LastLegalState, rec.ObservedState, rec.RejectedState = to, to, ""
		switch {
		case s.machine.IsLock(to) && (from != to || rec.LockHolder == ""):
			since := now
			if strings.EqualFold(rec.LockHolder, agent) && !rec.LockSince.IsZero() {
				since = rec.LockSince // a claim just before keeps its time
			}
			rec.LockHolder, rec.LockSince = agent, since
		case !s.machine.IsLock(to):
			rec.LockHolder, rec.LockSince = "", time.Time{}
		}
		o := appStep(cur.ID, from, to, legalBefore, "handoff by "+agent, now)
		o.Actor = agent
		ok, err := s.store.CommitStep(ctx, store.Step{Item: rec, ExpectedVersion: rec.Version, Observation: &o})
		if err == nil && !ok {
			err = ErrConcurrentUpdate
		}
		if errors.Is(err, ErrConcurrentUpdate) {
			continue
		}
		return err
	}
	return fmt.Errorf("record handoff of %s: %w", cur.ID, ErrConcurrentUpdate)
}

func handoffReason(h Handoff, cmd string, dec policy.Decision) string {
	how := "to_state " + h.ToState
	if h.Intent != "" {
		how = "intent " + h.Intent
	}
	r := fmt.Sprintf("handoff_ticket by %s (command %s, %s): %s", h.Agent, cmd, how, dec.Reason)
	if strings.TrimSpace(h.Reason) != "" {
		r += "; agent's reason: " + strings.TrimSpace(h.Reason)
	}
	return r
}

func (s *Service) auditHandoff(ctx context.Context, cur Item, h Handoff, cmd, from, to string, v store.Verdict, dec policy.Decision, reason string) {
	_, err := s.store.AppendAudit(ctx, store.AuditEntry{
		At: s.now(), ProjectID: cur.ProjectID, ItemID: cur.ID, IssueNumber: cur.Number, Repo: cur.Repo,
		Actor: h.Agent, ActorKind: policy.ActorAgent.String(), FromState: from, ToState: to,
		Verdict: v, Rule: string(dec.Rule), Reason: reason, Cause: "mcp " + cmd,
	})
	if err != nil {
		zerolog.Ctx(ctx).Error().Err(err).Msg("could not record the audit entry")
	}
}

// handoffComment is the audit comment: a hidden transition marker, who moved what with which
// command and why, and what comes next.
func (s *Service) handoffComment(cur Item, h Handoff, cmd, from, to string, g Guidance) string {
	c := cmd
	tm := marker.Transition{From: from, To: to, Command: &c, At: s.now().UTC().Format(time.RFC3339), Actor: h.Agent,
		Verdict: string(store.VerdictHandoff), Reason: strings.TrimSpace(h.Reason)}
	var b strings.Builder
	b.WriteString(tm.String() + "\n")
	how := "to_state `" + h.ToState + "`"
	if h.Intent != "" {
		how = "intent `" + h.Intent + "`"
	}
	fmt.Fprintf(&b, "**`%s` handed this off with `%s` (%s): %s → %s.**\n\n", h.Agent, cmd, how, displayState(from), to)
	if r := strings.TrimSpace(h.Reason); r != "" {
		for _, line := range strings.Split(r, "\n") {
			b.WriteString("> " + line + "\n")
		}
		b.WriteString("\n")
	}
	switch {
	case g.IsLock:
		fmt.Fprintf(&b, "Locked by `%s`. ", h.Agent)
	case g.NeedsHuman:
		b.WriteString("Waiting for a human. ")
	}
	if len(g.CommandsExpecting) > 0 {
		fmt.Fprintf(&b, "Next: %s.", strings.Join(g.CommandsExpecting, ", "))
	} else if len(g.AllowedNext) > 0 {
		fmt.Fprintf(&b, "Agents may move it to %s.", strings.Join(g.AllowedNext, ", "))
	}
	b.WriteString("\n")
	return b.String()
}

func displayState(s string) string {
	if s == "" {
		return "(no state)"
	}
	return s
}

// Advance is advance_children's result: partial success is normal.
type Advance struct {
	Parent   Item
	Advanced []policy.Move
	Skipped  []policy.Skip
	Errors   []AdvanceError
}

// AdvanceError is a child that could not be moved.
type AdvanceError struct {
	Number int
	Error  string
}

// AdvanceChildren moves every child of parent that is earlier on the pipeline than target to
// target (policy.PlanCascade), for an agent. target may not be later than the parent's own
// state (policy.CheckAdvance). Each child is written and recorded on its own, so one failure
// does not stop the others; grandchildren follow as in the automatic cascade.
func (s *Service) AdvanceChildren(ctx context.Context, b Board, parent Item, target, agent string) (Advance, error) {
	cur, err := b.Item(ctx, parent.ID)
	if err != nil {
		return Advance{}, fmt.Errorf("read item %s: %w", parent.ID, err)
	}
	if err := s.machine.CheckAdvance(cur.State, target); err != nil {
		return Advance{}, err
	}
	res := Advance{Parent: cur, Advanced: []policy.Move{}, Skipped: []policy.Skip{}, Errors: []AdvanceError{}}
	if cur.ContentType != ContentIssue || cur.ContentID == "" {
		return res, nil
	}
	fam, err := b.Family(ctx, cur.ContentID, cur.ProjectID)
	if err != nil {
		return Advance{}, fmt.Errorf("read children of #%d: %w", cur.Number, err)
	}
	byNumber := map[int]Relative{}
	var members []policy.Member
	for _, c := range fam.Children {
		if c.ItemID == "" {
			res.Skipped = append(res.Skipped, policy.Skip{Number: c.Number, Reason: "not on this project"})
			continue
		}
		byNumber[c.Number] = c
		members = append(members, policy.Member{Number: c.Number, Title: c.Title, State: c.State})
	}
	moves, skipped := s.machine.PlanCascade(target, members)
	res.Skipped = append(res.Skipped, skipped...)
	cause := fmt.Sprintf("cascade: advance_children by %s: parent #%d is in %s", agent, cur.Number, cur.State)
	visited := map[string]bool{cur.ID: true}
	for _, mv := range moves {
		child := relativeItem(cur, byNumber[mv.Number])
		visited[child.ID] = true
		if err := s.advanceOne(ctx, b, child, mv, cause); err != nil {
			res.Errors = append(res.Errors, AdvanceError{Number: mv.Number,
				Error: fmt.Sprintf("Failed to move #%d to %s: %v. Recovery: retry advance_children, or hand this child off with handoff_ticket", mv.Number, mv.To, err)})
			continue
		}
		res.Advanced = append(res.Advanced, mv)
	}
	for _, mv := range res.Advanced {
		child := relativeItem(cur, byNumber[mv.Number])
		if child.SubIssues == 0 {
			continue
		}
		if err := s.cascade(ctx, b, cur, child.ContentID, child.Number, mv.To, 2, visited, cause); err != nil {
			res.Errors = append(res.Errors, AdvanceError{Number: mv.Number,
				Error: fmt.Sprintf("Moved #%d, but its own children could not follow: %v. Recovery: retry advance_children on #%d", mv.Number, err, mv.Number)})
		}
	}
	return res, nil
}

func (s *Service) advanceOne(ctx context.Context, b Board, child Item, mv policy.Move, cause string) error {
	unlock, err := s.lockItem(ctx, child.ID)
	if err != nil {
		return err
	}
	defer unlock()
	if err := b.SetState(ctx, child, mv.To); err != nil {
		return err
	}
	return s.recordAutomation(ctx, child, mv.From, mv.To, cause)
}
