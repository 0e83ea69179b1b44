package enforce

import (
	"context"
	"fmt"
	"slices"
	"strings"

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
// parent's own state (policy.CheckAdvance). Each child is written and recorded on its own, so
// one failure does not stop the others; grandchildren follow as in the automatic cascade. An
// archived child is skipped: the app never moves an archived item.
func (f *Facade) AdvanceChildren(ctx context.Context, b Board, parent Item, target string, by Handoff) (Advance, error) {
	agent := by.Agent
	cur, err := b.Item(ctx, parent.ID)
	if err != nil {
		return Advance{}, fmt.Errorf("read item %s: %w", parent.ID, err)
	}
	if err := f.machine.CheckAdvance(cur.State, target); err != nil {
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
		members = append(members, policy.Member{Number: c.Number, Title: c.Title, State: legal})
	}
	moves, skipped := f.machine.PlanCascade(target, members)
	res.Skipped = append(res.Skipped, skipped...)
	why := fmt.Sprintf("cascade: advance_children by %s: parent #%d is in %s", agent, cur.Number, cur.State)
	ch := &chain{board: b, base: cur, visited: map[string]bool{cur.ID: true}, cause: cause{why: why}}
	for _, mv := range moves {
		child := relativeItem(cur, byNumber[mv.Number])
		if why, err := f.refuseAdvance(ctx, b, child, mv, by); err != nil {
			res.Errors = append(res.Errors, AdvanceError{Number: mv.Number,
				Error: fmt.Sprintf("Could not judge the move of #%d to %s: %v. Recovery: retry advance_children", mv.Number, mv.To, err)})
			continue
		} else if why != "" {
			res.Skipped = append(res.Skipped, policy.Skip{Number: mv.Number, State: mv.From, Reason: why})
			continue
		}
		ch.visited[child.ID] = true
		if err := f.advanceOne(ctx, b, appMove{Item: child, From: mv.From, To: mv.To, Kind: CauseCascade, Why: why}); err != nil {
			res.Errors = append(res.Errors, AdvanceError{Number: mv.Number,
				Error: fmt.Sprintf("Failed to move #%d to %s: %v. Recovery: retry advance_children, or hand this child off with handoff_ticket", mv.Number, mv.To, err)})
			continue
		}
		res.Advanced = append(res.Advanced, mv)
	}
	for _, mv := range res.Advanced {
		child := byNumber[mv.Number]
		if child.SubIssues == 0 {
			continue
		}
		child.State = mv.To
		if err := f.auto.cascade(ctx, ch, child, 2); err != nil {
			res.Errors = append(res.Errors, AdvanceError{Number: mv.Number,
				Error: fmt.Sprintf("Moved #%d, but its own children could not follow: %v. Recovery: retry advance_children with number %d", mv.Number, err, mv.Number)})
		}
	}
	return res, nil
}

// refuseAdvance judges one child's move as the agent's own: why it may not make it ("" when it
// may).
func (f *Facade) refuseAdvance(ctx context.Context, b Board, child Item, mv policy.Move, by Handoff) (string, error) {
	if len(by.Commands) > 0 {
		takes := f.machine.CommandsExpecting(mv.From)
		ok := slices.ContainsFunc(by.Commands, func(c string) bool {
			got, known := f.CanonicalCommand(c)
			return known && slices.Contains(takes, got)
		})
		if !ok {
			return fmt.Sprintf("%s may only use the commands %s (config mcp.agents), and none of them takes an item in %s",
				by.Agent, strings.Join(by.Commands, ", "), orNoState(mv.From)), nil
		}
	}
	rec, _, err := f.items.load(ctx, child.ID)
	if err != nil {
		return "", err
	}
	pc := policy.Change{From: mv.From, To: mv.To, Actor: by.Agent, ActorKind: policy.ActorAgent, LockHolder: rec.LockHolder, Role: by.Role}
	dec := f.machine.Decide(pc)
	if dec.Verdict == policy.Allow {
		full, err := f.gateInputs(ctx, gateQuery{board: b, it: child, change: pc})
		if err != nil {
			return "", err
		}
		dec = f.machine.Decide(full)
	}
	if dec.Verdict != policy.Allow {
		return dec.Reason, nil
	}
	return "", nil
}

// advanceOne moves one child under its lock and records the move as the app's.
func (f *Facade) advanceOne(ctx context.Context, b Board, mv appMove) error {
	unlock, err := f.items.lock(ctx, mv.Item.ID)
	if err != nil {
		return err
	}
	defer unlock()
	if err := b.SetState(ctx, mv.Item, mv.To); err != nil {
		return err
	}
	return f.auto.record(ctx, mv)
}
