package enforce

import (
	"context"
	"fmt"
	"time"

	"github.com/ralph-gate/ralph-gate/policy"
)

// A step of an item's history is judged after its relatives' steps made before it: the
// cascade of an ancestor's earlier move onto the item, and the convergence a child's earlier
// move brings, come before it in the true history (docs/AUTOMATION.md). So before a step made
// at t is judged, the walk asks the store which other items still have reports from before t
// waiting, or owe the automation of a step made by t (one query; usually none). Only when some have does it read the item's relatives —
// its ancestors and its descendants, as far as automation reaches — and, when one of them is
// among those items, it waits for that one's walk (wake.go). GitHub dates changes to the
// second: a step waits for its descendants' changes of its own second too, never for its
// ancestors' (stepSpan).

// awaitRelativesOf is awaitRelatives for a step the sequencer hands out to judge.
func (e *Enforcer) awaitRelativesOf(ctx context.Context, w *walk, a policy.Action) error {
	switch a.Kind {
	case policy.ActJudge:
		if a.Obs.Field != "" {
			return nil // a field's edit is taken in whatever its relatives' histories hold
		}
		if a.Obs.Event {
			// Closes and reopens of one second are ordered among themselves (by the issue's
			// state now): one of its second not recorded for the item yet comes in first.
			if err := e.issueEventBefore(ctx, w.it, a.Obs.At.Add(time.Second)); err != nil {
				return err
			}
		}
		return e.awaitRelatives(ctx, w, a.Obs.At)
	case policy.ActJudgeUnobserved:
		return e.awaitRelatives(ctx, w, a.At)
	}
	return nil
}

// awaitRelatives returns a groupUnsettled naming a relative whose history before `at` is still
// being judged, or the item's issue while a close or reopen of it made before `at` is not
// recorded for its items yet (ObserveEvent; the event's job walks the item once it is), or nil.
func (e *Enforcer) awaitRelatives(ctx context.Context, w *walk, at time.Time) error {
	if err := e.issueEventBefore(ctx, w.it, at); err != nil {
		return err
	}
	return e.relativesUnsettledBut(ctx, w.board, w.it, stepSpan(at), nil)
}

// issueEventBefore returns a groupUnsettled naming the item's issue while a close or reopen of
// it made before `at` waits for its job to record it for the issue's items. (Nothing wakes a
// wait on it: the event's job walks the item itself once it has recorded the event; the wait
// only backs off.)
func (c *core) issueEventBefore(ctx context.Context, it Item, at time.Time) error {
	if at.IsZero() || it.ContentType != ContentIssue || it.Repo == "" {
		return nil
	}
	events, err := c.store().PendingObservations(ctx, issueKey(it.Repo, it.Number))
	if err != nil {
		return fmt.Errorf("load the events of #%d waiting: %w", it.Number, err)
	}
	for _, o := range events {
		if o.At.Before(at) {
			return groupUnsettled{member: issueKey(it.Repo, it.Number), number: it.Number}
		}
	}
	return nil
}

// relativesUnsettled returns a groupUnsettled naming a relative of it whose history before `at`
// is still being judged, or nil.
func (c *core) relativesUnsettled(ctx context.Context, b Board, it Item, at time.Time) error {
	return c.relativesUnsettledBut(ctx, b, it, waitSpan{above: at, below: at}, nil)
}

// waitSpan is how far back relatives' waiting reports are waited for: an ancestor's made before
// above, a descendant's made before below.
type waitSpan struct{ above, below time.Time }

// stepSpan is the span a step made at `at` waits for: its ancestors' reports made before it, and
// its descendants' of its own second too. GitHub dates changes to the second, so a step cannot
// be ordered among its relatives' changes of that second by time; a descendant's change of that
// second was made on a card the step's cascade had not written yet (its report leaves from the
// value before it), so it comes first. Only descendants wait for their ancestors' steps of an
// earlier second, so no two walks wait for each other.
func stepSpan(at time.Time) waitSpan {
	return waitSpan{above: at, below: at.Truncate(time.Second).Add(time.Second)}
}

// relativesUnsettledBut is relativesUnsettled over a span, not counting the items in but (a
// chain of automation's own: the item whose step it runs, the items it moved).
func (c *core) relativesUnsettledBut(ctx context.Context, b Board, it Item, span waitSpan, but map[string]bool) error {
	if span.above.IsZero() || it.ContentType != ContentIssue || (it.ParentID == "" && it.SubIssues == 0) {
		return nil
	}
	pending, err := c.store().PendingItemsBefore(ctx, later(span.above, span.below), it.ID, c.opts.AppLogin)
	if err != nil {
		return fmt.Errorf("load the items with reports waiting: %w", err)
	}
	waiting := make(map[string]bool, len(pending))
	for _, id := range pending {
		if !but[id] {
			waiting[id] = true
		}
	}
	if len(waiting) == 0 {
		return nil
	}
	if span.above.Before(span.below) {
		// (The ancestors wait for less: their reports are asked for again, up to above.)
		return c.unsettledAcross(ctx, b, it, span, waiting)
	}
	return c.eachRelative(ctx, b, it, func(r Relative, _ bool) (bool, error) {
		return waiting[r.ItemID] || waiting[issueKey(r.Repo, r.Number)], nil // (an event of its issue not recorded yet)
	})
}

// unsettledAcross is relativesUnsettledBut for a span whose descendants reach further back than
// its ancestors: waiting holds the items with reports before below.
func (c *core) unsettledAcross(ctx context.Context, b Board, it Item, span waitSpan, waiting map[string]bool) error {
	strict, err := c.store().PendingItemsBefore(ctx, span.above, it.ID, c.opts.AppLogin)
	if err != nil {
		return fmt.Errorf("load the items with reports waiting: %w", err)
	}
	above := make(map[string]bool, len(strict))
	for _, id := range strict {
		above[id] = waiting[id]
	}
	return c.eachRelative(ctx, b, it, func(r Relative, below bool) (bool, error) {
		in := above
		if below {
			in = waiting
		}
		return in[r.ItemID] || in[issueKey(r.Repo, r.Number)], nil // (an event of its issue not recorded yet)
	})
}

// later is the later of two times.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// eachRelative visits the item's relatives as far as automation reaches — its ancestors, then
// its descendants level by level — and returns a groupUnsettled naming the first one stop
// stops at.
func (c *core) eachRelative(ctx context.Context, b Board, it Item, stop func(r Relative, below bool) (bool, error)) error {
	depth := c.machineAt(it.Owner, time.Time{}).Automation().MaxCascadeDepth
	visit := func(r Relative, below bool) error {
		if r.ItemID == "" {
			return nil
		}
		if ok, err := stop(r, below); err != nil {
			return err
		} else if ok {
			return groupUnsettled{member: r.ItemID, number: r.Number}
		}
		return nil
	}
	for d, parent := 0, it.ParentID; parent != "" && d < depth; d++ {
		fam, err := b.Family(ctx, parent, it.ProjectID)
		if err != nil {
			return fmt.Errorf("read the item's ancestors: %w", err)
		}
		if err := visit(fam.Self, false); err != nil {
			return err
		}
		parent = ""
		if fam.Parent != nil {
			parent = fam.Parent.IssueID
		}
	}
	level := []string{}
	if it.SubIssues > 0 {
		level = append(level, it.ContentID)
	}
	for d := 0; len(level) > 0 && d < depth; d++ {
		var next []string
		for _, issue := range level {
			fam, err := b.Family(ctx, issue, it.ProjectID)
			if err != nil {
				return fmt.Errorf("read the item's descendants: %w", err)
			}
			for _, r := range fam.Children {
				if err := visit(r, true); err != nil {
					return err
				}
				if r.ItemID != "" && r.SubIssues > 0 {
					next = append(next, r.IssueID)
				}
			}
		}
		level = next
	}
	return nil
}

// familyBoard is the board as one walk sees it: a family is read once, until the walk writes
// (the gates, the relatives' check and the automation of a step share its reads).
type familyBoard struct {
	Board
	fams map[string]Family
}

func withFamilies(b Board) Board {
	if _, ok := b.(*familyBoard); ok {
		return b
	}
	return &familyBoard{Board: b, fams: map[string]Family{}}
}

// plainBoard is the board under a walk's.
func plainBoard(b Board) Board {
	if fb, ok := b.(*familyBoard); ok {
		return fb.Board
	}
	return b
}

func (b *familyBoard) Family(ctx context.Context, issueID, projectID string) (Family, error) {
	if f, ok := b.fams[issueID]; ok {
		return f, nil
	}
	f, err := b.Board.Family(ctx, issueID, projectID)
	if err == nil {
		b.fams[issueID] = f
	}
	return f, err
}

func (b *familyBoard) SetState(ctx context.Context, it Item, state string) error {
	clear(b.fams)
	return b.Board.SetState(ctx, it, state)
}

func (b *familyBoard) SetStatesIf(ctx context.Context, writes []StateWrite) []error {
	clear(b.fams)
	return b.Board.SetStatesIf(ctx, writes)
}
