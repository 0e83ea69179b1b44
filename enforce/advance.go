package enforce

import (
	"context"
	"fmt"

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
// target (policy.PlanCascade), for an agent. target may not be later than the parent's own
// state (policy.CheckAdvance). Each child is written and recorded on its own, so one failure
// does not stop the others; grandchildren follow as in the automatic cascade. An archived
// child is skipped: the app never moves an archived item.
func (f *Facade) AdvanceChildren(ctx context.Context, b Board, parent Item, target, agent string) (Advance, error) {
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
		byNumber[c.Number] = c
		members = append(members, policy.Member{Number: c.Number, Title: c.Title, State: c.State})
	}
	moves, skipped := f.machine.PlanCascade(target, members)
	res.Skipped = append(res.Skipped, skipped...)
	why := fmt.Sprintf("cascade: advance_children by %s: parent #%d is in %s", agent, cur.Number, cur.State)
	ch := &chain{board: b, base: cur, visited: map[string]bool{cur.ID: true}, cause: cause{why: why}}
	for _, mv := range moves {
		child := relativeItem(cur, byNumber[mv.Number])
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
