package enforce

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/policy"
)

// Automation moves items by itself: a parent's children follow it down the pipeline
// (cascade), a parent follows once all its children have (convergence), and issue and pull
// request lifecycles move their items (lifecycle.go). Every move is the app's: recorded as a
// legal step of the item's history, audited and, when configured, commented.
type Automation struct {
	*core
}

// chain is one run of automation set off by one move: the board, the item that moved, the
// items moved so far (none is moved twice) and what set it off.
type chain struct {
	board   Board
	base    Item
	visited map[string]bool
	why     string
	at      time.Time // when the move that set it off was made: every move of the chain is dated then
}

// run runs the automation a legal move of it (into it.State) made at `at` sets off: its
// children follow it down the pipeline, and its ancestors converge. Depth never exceeds
// max_cascade_depth. Each move is recorded at the time of its cause (zero: now): in the
// item's history it follows the move that caused it at once.
func (a *Automation) run(ctx context.Context, b Board, it Item, at time.Time, why string) error {
	if it.ContentType != ContentIssue || it.ContentID == "" {
		return nil
	}
	auto := a.machine.Automation()
	ch := &chain{board: b, base: it, visited: map[string]bool{it.ID: true}, why: why, at: at}
	if auto.CascadeChildren && it.SubIssues > 0 && a.machine.PipelineIndex(it.State) >= 0 {
		if err := a.cascade(ctx, ch, relativeOf(it), 1); err != nil {
			return fmt.Errorf("cascade to children of #%d: %w", it.Number, err)
		}
	}
	if auto.ConvergeParents && it.ParentID != "" {
		if err := a.convergeUp(ctx, ch, it.ParentID); err != nil {
			return fmt.Errorf("converge parents of #%d: %w", it.Number, err)
		}
	}
	return nil
}

// relativeOf is an item as a relative (its issue and state).
func relativeOf(it Item) Relative {
	return Relative{IssueID: it.ContentID, Number: it.Number, Title: it.Title, Repo: it.Repo, Open: it.Open,
		ItemID: it.ID, Archived: it.Archived, State: it.State, SubIssues: it.SubIssues}
}

// relativeItem is a related issue's item on the same project as base.
func relativeItem(base Item, r Relative) Item {
	return Item{ID: r.ItemID, ProjectID: base.ProjectID, ProjectNumber: base.ProjectNumber, Owner: base.Owner,
		ContentType: ContentIssue, ContentID: r.IssueID, Number: r.Number, Repo: r.Repo, Title: r.Title,
		Open: r.Open, Archived: r.Archived, State: r.State, SubIssues: r.SubIssues}
}

// cascade moves the children of parent (now in parent.State) that are earlier on the
// pipeline along with it (policy.PlanCascade), then theirs, down to max_cascade_depth. An
// archived child is never moved (nor, through it, its own children).
func (a *Automation) cascade(ctx context.Context, ch *chain, parent Relative, depth int) error {
	fam, err := ch.board.Family(ctx, parent.IssueID, ch.base.ProjectID)
	if err != nil {
		return err
	}
	byNumber := map[int]Relative{}
	var members []policy.Member
	for _, c := range fam.Children {
		if c.ItemID == "" || c.Archived || ch.visited[c.ItemID] {
			continue
		}
		byNumber[c.Number] = c
		members = append(members, policy.Member{Number: c.Number, Title: c.Title, State: c.State})
	}
	moves, _ := a.machine.PlanCascade(parent.State, members)
	if len(moves) == 0 {
		return nil
	}
	writes := make([]StateWrite, 0, len(moves))
	for _, mv := range moves {
		c := byNumber[mv.Number]
		ch.visited[c.ItemID] = true
		writes = append(writes, StateWrite{Item: relativeItem(ch.base, c), State: mv.To})
	}
	if err := ch.board.SetStates(ctx, writes); err != nil {
		return err
	}
	why := fmt.Sprintf("cascade: parent #%d moved to %s", parent.Number, parent.State)
	if ch.why != "" {
		why += " (" + ch.why + ")"
	}
	for _, w := range writes {
		mv := appMove{Item: w.Item, From: w.Item.State, To: w.State, Kind: CauseCascade, Why: why, At: ch.at}
		if err := a.record(ctx, mv); err != nil {
			return err
		}
		a.comment(ctx, ch.board, mv)
	}
	if depth >= a.machine.Automation().MaxCascadeDepth {
		return nil
	}
	for _, w := range writes {
		if w.Item.SubIssues > 0 {
			moved := relativeOf(w.Item)
			moved.State = w.State
			if err := a.cascade(ctx, ch, moved, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// convergeUp advances each ancestor whose children have all reached a parent gate. An archived
// ancestor is never moved, and the ones above it stay too (their children did not move). An
// archived child still counts: its state is still where its work stands.
func (a *Automation) convergeUp(ctx context.Context, ch *chain, parentIssueID string) error {
	for depth := 0; parentIssueID != "" && depth < a.machine.Automation().MaxCascadeDepth; depth++ {
		fam, err := ch.board.Family(ctx, parentIssueID, ch.base.ProjectID)
		if err != nil {
			return err
		}
		parent := fam.Self
		if parent.ItemID == "" || parent.Archived || ch.visited[parent.ItemID] {
			return nil
		}
		var children []policy.Member
		for _, c := range fam.Children {
			if c.ItemID != "" {
				children = append(children, policy.Member{Number: c.Number, Title: c.Title, State: c.State})
			}
		}
		target, ok := a.machine.ConvergenceTarget(parent.State, children)
		if !ok {
			return nil
		}
		pit := relativeItem(ch.base, parent)
		if err := ch.board.SetState(ctx, pit, target); err != nil {
			return err
		}
		ch.visited[parent.ItemID] = true
		mv := appMove{Item: pit, From: parent.State, To: target, Kind: CauseConvergence, At: ch.at,
			Why: fmt.Sprintf("convergence: every child of #%d is at %s or later", parent.Number, target)}
		if err := a.record(ctx, mv); err != nil {
			return err
		}
		a.comment(ctx, ch.board, mv)
		parentIssueID = ""
		if fam.Parent != nil {
			parentIssueID = fam.Parent.IssueID
		}
	}
	return nil
}

// record makes an automated move the item's last legal state and audits it. It does not take
// the item's lock (the moving chain may hold an ancestor's, and a child's worker may want that
// one: no lock order is safe), so it retries on a concurrent update instead.
func (a *Automation) record(ctx context.Context, mv appMove) error {
	it := mv.Item
	_, err := a.items.update(ctx, it.ID, func(rec Record, found bool) (Step, bool, error) {
		if found {
			pending, err := a.store().PendingObservations(ctx, it.ID)
			if err != nil {
				return Step{}, false, fmt.Errorf("load reports of item %s: %w", it.ID, err)
			}
			// Reports of our own writes are no change of anyone else's: they take their
			// place after this record (their jobs find it holds them).
			pending = slices.DeleteFunc(pending, func(o Observation) bool { return o.Actor == a.rec.app })
			if len(pending) > 0 || rec.ObservedState != mv.From {
				// The item's history is still being judged (the value moved from is not its
				// record's): our write takes its place in that history through its own
				// report, recorded at intake, when the item's walk reaches it.
				// (The move's decision line follows, as for any automated move.)
				a.logMove(zerolog.Ctx(ctx).Debug(), mv).Msg("automation moved an item whose history is being judged: recorded when its walk reaches it")
				return Step{}, false, nil
			}
		}
		rec.IssueNumber, rec.Repo, rec.ProjectID = it.Number, it.Repo, it.ProjectID
		legalFrom := rec.LastLegalState
		// LegalAt stays: it orders changes by GitHub's clock, and ours may be ahead of it.
		rec.LastLegalState, rec.ObservedState, rec.RejectedState = mv.To, mv.To, ""
		if !a.machine.IsLock(mv.To) {
			rec.LockHolder, rec.LockSince = "", time.Time{}
		}
		o, audit := a.rec.appStep(mv, legalFrom), a.rec.automation(mv)
		return Step{Record: rec, Observation: &o, Audit: &audit}, true, nil
	})
	if err != nil {
		return fmt.Errorf("record automation on %s: %w", it.ID, err)
	}
	a.logMove(zerolog.Ctx(ctx).Info(), mv).Msg("automation moved an item")
	a.observeAutomation(mv.Kind)
	return nil
}

// logMove adds an automated move's fields to ev. The item moved is `moved_item`: the caller's
// logger may carry the item whose move set the automation off as `item`.
func (a *Automation) logMove(ev *zerolog.Event, mv appMove) *zerolog.Event {
	return moveLine{Issue: mv.Item.Number, From: mv.From, To: mv.To, Actor: a.rec.app, Verdict: VerdictAutomated}.
		on(ev).Str("moved_item", mv.Item.ID).Str("cause", mv.Why)
}

// comment explains an automated move on the issue when automation.comment_automation is on.
// A failed comment is logged: the move itself stands.
func (a *Automation) comment(ctx context.Context, b Board, mv appMove) {
	if !a.machine.Automation().CommentAutomation || mv.Item.ContentID == "" {
		return
	}
	if _, err := b.AddComment(ctx, mv.Item.ContentID, a.rec.automationComment(mv)); err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Int("issue", mv.Item.Number).Msg("could not comment on an automated move")
	}
}
