package enforce

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ralph-gate/ralph-gate/policy"
)

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
// target (policy.PlanCascade), for an agent: each child's move is the agent's own, judged from
// the child's legal state as a board move of that agent would be (the table, its role, locks,
// the gates) and within its commands (a command of the agent's must take the child's state);
// a child the agent may not move is skipped with the reason. target may not be later than the
// parent's own state (policy.CheckAdvance). Each child is recorded and written on its own, as a
// handoff is (makeStep), so one failure does not stop the others; its own automation follows
// (its children cascade, its parent converges). An archived child is skipped: the app never
// moves an archived item.
func (f *Facade) AdvanceChildren(ctx context.Context, b Board, parent Item, target string, by Handoff) (Advance, error) {
	b = withFamilies(b) // the children's checks, gates and automation share their reads until a write
	cur, err := b.Item(ctx, parent.ID)
	if err != nil {
		return Advance{}, fmt.Errorf("read item %s: %w", parent.ID, err)
	}
	if err := f.Machine().CheckAdvance(cur.State, target); err != nil {
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
		if c.Archived {
			res.Skipped = append(res.Skipped, policy.Skip{Number: c.Number, Reason: "archived on this project"})
			continue
		}
		legal, _, err := f.auto.legalRecord(ctx, c)
		if err != nil {
			return Advance{}, err
		}
		byNumber[c.Number] = c
		members = append(members, memberOf(c, legal, c.Fields, time.Time{})) // (made now: as read)
	}
	moves, skipped := f.Machine().PlanCascadeAs(target, members, policy.ActorAgent)
	res.Skipped = append(res.Skipped, skipped...)
	cause := fmt.Sprintf("advance_children by %s: parent #%d is in %s", by.Agent, cur.Number, cur.State)
	for _, mv := range moves {
		child := relativeItem(cur, byNumber[mv.Number])
		warning, why, err := f.advanceOne(ctx, b, advanceStep{child: child, mv: mv, by: by, cause: cause})
		switch {
		case err != nil:
			res.Errors = append(res.Errors, AdvanceError{Number: mv.Number,
				Error: fmt.Sprintf("Failed to move #%d to %s: %v. Recovery: retry advance_children, or hand this child off with handoff_ticket", mv.Number, mv.To, err)})
			continue
		case why != "":
			res.Skipped = append(res.Skipped, policy.Skip{Number: mv.Number, State: mv.From, Reason: why})
			continue
		case warning != "":
			res.Errors = append(res.Errors, AdvanceError{Number: mv.Number,
				Error: fmt.Sprintf("Moved #%d to %s, but %s. Recovery: none needed; get_workflow_state shows when it is done", mv.Number, mv.To, warning)})
		}
		res.Advanced = append(res.Advanced, mv)
	}
	return res, nil
}

// advanceStep is one child's move for advance_children: the child as listed, its move, the
// agent, and what the audit names as its cause.
type advanceStep struct {
	child Item
	mv    policy.Move
	by    Handoff
	cause string
}

// advanceOne moves one child as the agent, under the child's lock: judged from the child's
// legal state as the agent's own move (refuseAdvance), once the history before it is judged,
// then recorded and written as a handoff is (makeStep), its own automation following. why says
// why the agent may not move it ("" when it did); warning what failed after the move.
func (f *Facade) advanceOne(ctx context.Context, b Board, s advanceStep) (warning, why string, err error) {
	unlock, err := f.items.lock(ctx, s.child.ID)
	if err != nil {
		return "", "", err
	}
	defer unlock()
	cur, err := b.Item(ctx, s.child.ID)
	if err != nil {
		return "", "", fmt.Errorf("read item %s: %w", s.child.ID, err)
	}
	rec, err := f.baseline(ctx, cur)
	if err != nil {
		return "", "", err
	}
	if rec.LastLegalState != s.mv.From {
		return "", fmt.Sprintf("it moved to %s meanwhile", orNoState(rec.LastLegalState)), nil
	}
	at := moveTime(time.Time{}, f.now())
	var busy errUnsettled
	if err := f.auto.unsettledBefore(ctx, b, cur, rec, at); errors.As(err, &busy) {
		return "", busy.why + "; retry in a few seconds", nil
	} else if err != nil {
		return "", "", err
	}
	s.child = cur
	why, dec, err := f.refuseAdvance(ctx, b, s, rec)
	if err != nil || why != "" {
		return "", why, err
	}
	a := &handoffAttempt{cur: cur, h: s.by, from: s.mv.From, to: s.mv.To, rec: rec, dec: dec}
	step := actorStep{item: cur, from: s.mv.From, to: s.mv.To, at: at, actor: s.by.Agent, dec: dec,
		obs:   f.rec.appStep(appMove{Item: cur, From: cur.State, To: s.mv.To, Agent: s.by.Agent, At: at}, s.mv.From),
		audit: f.rec.handoffAudit(a, VerdictHandoff, s.cause+": "+dec.Reason),
		why:   fmt.Sprintf("#%d advanced by %s", cur.Number, s.by.Agent)}
	step.audit.Cause = "mcp advance_children"
	warning, err = f.auto.makeStep(ctx, b, step)
	return warning, "", err
}

// refuseAdvance judges one child's move as the agent's own: why it may not make it ("" when it
// may), with the decision.
func (f *Facade) refuseAdvance(ctx context.Context, b Board, s advanceStep, rec Record) (string, policy.Decision, error) {
	mv, by := s.mv, s.by
	if len(by.Commands) > 0 {
		takes := f.Machine().CommandsExpecting(mv.From)
		ok := slices.ContainsFunc(by.Commands, func(c string) bool {
			got, known := f.CanonicalCommand(c)
			return known && slices.Contains(takes, got)
		})
		if !ok {
			return fmt.Sprintf("%s may only use the commands %s (config mcp.agents), and none of them takes an item in %s",
				by.Agent, strings.Join(by.Commands, ", "), orNoState(mv.From)), policy.Decision{}, nil
		}
	}
	pc := f.withItem(policy.Change{From: mv.From, To: mv.To, Actor: by.Agent, ActorKind: policy.ActorAgent, LockHolder: rec.LockHolder, LockTakenFrom: rec.LockTakenFrom, Role: by.Role}, s.child)
	dec := f.Machine().Decide(pc)
	if dec.Verdict == policy.Allow {
		full, err := f.gateInputs(ctx, gateQuery{board: b, it: s.child, change: pc, m: f.Machine()})
		var member groupUnsettled
		if errors.As(err, &member) {
			return fmt.Sprintf("#%d, a member of its group, has a change still being judged; retry in a few seconds", member.number), dec, nil
		} else if err != nil {
			return "", dec, err
		}
		dec = f.Machine().Decide(full)
	}
	if dec.Verdict != policy.Allow {
		return dec.Reason, dec, nil
	}
	return "", dec, nil
}
