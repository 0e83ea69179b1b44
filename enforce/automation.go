package enforce

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
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
	// walkSoon walks an item whose owed move its chain did not write (the Enforcer's).
	walkSoon func(ctx context.Context, b Board, it Item)
}

// chain is one run of automation set off by one move: the board, the item that moved, the
// items moved so far (none is moved twice) and what set it off.
type chain struct {
	board   Board
	base    Item
	visited map[string]bool
	cause                   // every move of the chain is dated at its cause's time
	m       *policy.Machine // the workflow of the base item's organization
}

// cause is what set a chain of automation off: the move's time (zero: now) and words, and
// whether an earlier run of the same chain failed part-way (the item's record still owes it:
// what that run recorded is followed, not made again).
type cause struct {
	at    time.Time
	why   string
	again bool
}

// run runs the automation a legal move of it (into it.State) sets off: its children follow it
// down the pipeline, and its ancestors converge. Depth never exceeds max_cascade_depth. Each
// move is recorded at the time of its cause: in the item's history it follows the move that
// caused it at once.
func (a *Automation) run(ctx context.Context, b Board, it Item, c cause) error {
	if it.ContentType != ContentIssue || it.ContentID == "" {
		return nil
	}
	m := a.machineAt(it.Owner, c.at)
	auto := m.Automation()
	ch := &chain{board: b, base: it, visited: map[string]bool{it.ID: true}, cause: c, m: m}
	if auto.CascadeChildren && it.SubIssues > 0 && m.PipelineIndex(it.State) >= 0 {
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
		ItemID: it.ID, Archived: it.Archived, State: it.State, SubIssues: it.SubIssues, IssueEvents: it.IssueEvents}
}

// relativeItem is a related issue's item on the same project as base.
func relativeItem(base Item, r Relative) Item {
	return Item{ID: r.ItemID, ProjectID: base.ProjectID, ProjectNumber: base.ProjectNumber, Owner: base.Owner,
		ContentType: ContentIssue, ContentID: r.IssueID, Number: r.Number, Repo: r.Repo, Title: r.Title,
		Open: r.Open, Archived: r.Archived, State: r.State, StateUpdatedAt: r.StateUpdatedAt, SubIssues: r.SubIssues, IssueEvents: r.IssueEvents}
}

// cascade moves the children of parent (now in parent.State) that are earlier on the
// pipeline along with it (policy.PlanCascade), then theirs, down to max_cascade_depth. An
// archived child is never moved (nor, through it, its own children). Each child counts with
// its legal state (its record's), not the value its card shows: a refused value about to be
// set back, or a later move whose report is still to be judged, is no state to plan from.
func (a *Automation) cascade(ctx context.Context, ch *chain, parent Relative, depth int) error {
	fam, err := ch.board.Family(ctx, parent.IssueID, ch.base.ProjectID)
	if err != nil {
		return err
	}
	byNumber := map[int]Relative{}
	var members []policy.Member
	var again []appMove // moved by an earlier run of this chain, which failed after it
	for _, c := range fam.Children {
		if c.ItemID == "" || c.Archived || ch.visited[c.ItemID] {
			continue
		}
		if err := a.unreportedBefore(ctx, ch, c); err != nil {
			return err
		}
		legal, rec, err := a.legalRecord(ctx, c)
		if err != nil {
			return err
		}
		if ch.movedOnSince(rec) {
			continue // its later judged move stands: the cascade is not recorded over it
		}
		if owed, err := a.owedBefore(ctx, ch, rec, appMove{Item: Item{ID: c.ItemID}, To: parent.State, Why: cascadeWhy(parent)}); err != nil {
			return err
		} else if owed {
			ch.visited[c.ItemID] = true
			again = append(again, appMove{Item: relativeItem(ch.base, c), To: legal})
			if legal != c.State && a.walkSoon != nil {
				a.walkSoon(ctx, ch.board, relativeItem(ch.base, c)) // its write may not have been made
			}
			continue
		}
		fields, err := a.fieldsAt(ctx, ch.m, c, rec, ch.at)
		if err != nil {
			return err
		}
		byNumber[c.Number] = c
		members = append(members, memberOf(c, legal, fields, ch.at))
	}
	moves, skipped := ch.m.PlanCascade(parent.State, members)
	for _, s := range skipped {
		if s.Rule == policy.RuleRequirement {
			// Reported, not forced (docs/AUTOMATION.md): the child stays where it is.
			zerolog.Ctx(ctx).Info().Int("issue", s.Number).Int("parent", parent.Number).Str("state", parent.State).
				Str("reason", s.Reason).Msg("cascade left a child that fails a requirement")
		}
	}
	why := cascadeWhy(parent)
	if ch.why != "" {
		why += " (" + ch.why + ")"
	}
	var owed []appMove
	for _, m := range moves {
		c := byNumber[m.Number]
		ch.visited[c.ItemID] = true
		owed = append(owed, appMove{Item: relativeItem(ch.base, c), From: m.From, To: m.To, Kind: CauseCascade, Why: why, At: ch.at})
	}
	if err := a.carryOut(ctx, ch.board, owed); err != nil {
		return err
	}
	if depth >= ch.m.Automation().MaxCascadeDepth {
		return nil
	}
	for _, mv := range append(again, owed...) {
		if mv.Item.SubIssues > 0 {
			moved := relativeOf(mv.Item)
			moved.State = mv.To
			if err := a.cascade(ctx, ch, moved, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// movedOnSince reports whether an item's legal state was set by a step made after the cause of
// the chain (judged first: GitHub's one-second clock, or a relative's step that does not wait
// for it). Automation is never recorded over a later judged step of its item.
func (ch *chain) movedOnSince(rec Record) bool {
	return !ch.at.IsZero() && rec.known() && rec.LegalAt.After(ch.at)
}

// owedBefore reports whether an item's history shows it moved to mv.To by this chain in an
// earlier run (one that failed after recording it): the job's retry runs the whole chain again,
// and must follow that move as if it made it (one chain never moves an item twice, and goes on
// below and above it). The move must be the app's automated one at the cause's time, for the
// same reason (mv.Why: a cascade from this parent, a convergence of this parent): a person's
// move to the same state in the same second, or another chain's of that second, is no move of
// this chain's, and the chain does not go on through it.
func (a *Automation) owedBefore(ctx context.Context, ch *chain, rec Record, mv appMove) (bool, error) {
	if !ch.again || ch.at.IsZero() || !rec.known() || rec.LastLegalState != mv.To || !rec.LegalAt.Equal(ch.at) {
		return false, nil
	}
	causes, err := a.store().AutomatedCauses(ctx, mv.Item.ID, mv.To, ch.at)
	if err != nil {
		return false, fmt.Errorf("load the automated moves of item %s: %w", mv.Item.ID, err)
	}
	for _, c := range causes {
		if c == mv.Why || strings.HasPrefix(c, mv.Why+" (") {
			return true, nil
		}
	}
	return false, nil
}

// cascadeWhy is the cause of a cascade from parent (followed by the chain's own cause, in
// parentheses); convergenceWhy the cause of a convergence of parent to target.
func cascadeWhy(parent Relative) string {
	return fmt.Sprintf("cascade: parent #%d moved to %s", parent.Number, parent.State)
}

func convergenceWhy(parent Relative, target string) string {
	return fmt.Sprintf("convergence: every child of #%d is at %s or later", parent.Number, target)
}

// convergeUp advances each ancestor whose children have all reached a parent gate. An archived
// ancestor is never moved, and the ones above it stay too (their children did not move). An
// archived child still counts: its state is still where its work stands. Like the cascade,
// it goes by the legal states of the parent and its children.
func (a *Automation) convergeUp(ctx context.Context, ch *chain, parentIssueID string) error {
	for depth := 0; parentIssueID != "" && depth < ch.m.Automation().MaxCascadeDepth; depth++ {
		fam, err := ch.board.Family(ctx, parentIssueID, ch.base.ProjectID)
		if err != nil {
			return err
		}
		parent := fam.Self
		if parent.ItemID == "" || parent.Archived || ch.visited[parent.ItemID] {
			return nil
		}
		if !ch.at.IsZero() {
			// The children count as they were at the cause: a report from before it of any of
			// the parent's relatives (a child's, or below it: its automation may move a child)
			// still waiting is waited for (the walk holds until that one's walk moves on).
			pi := relativeItem(ch.base, parent)
			if fam.Parent != nil {
				pi.ParentID = fam.Parent.IssueID
			}
			// (Strictly before its second, automation owed too: relatives of one second do not
			// wait for each other.)
			before := ch.at.Truncate(time.Second).Add(-time.Nanosecond)
			if err := a.relativesUnsettledBut(ctx, ch.board, pi, waitSpan{above: before, below: before}, ch.visited); err != nil {
				return err
			}
		}
		var children []policy.Member
		for _, c := range fam.Children {
			if c.ItemID == "" {
				continue
			}
			if err := a.unreportedAtOrBelow(ctx, ch, c, ch.m.Automation().MaxCascadeDepth); err != nil {
				return err
			}
			legal, err := a.legalAtCause(ctx, ch, c)
			if err != nil {
				return err
			}
			children = append(children, policy.Member{Number: c.Number, Title: c.Title, State: legal})
		}
		from, rec, err := a.legalRecord(ctx, parent)
		if err != nil {
			return err
		}
		if ch.movedOnSince(rec) {
			return nil // the parent's later judged move stands
		}
		ch.visited[parent.ItemID] = true
		owed, err := a.owedBefore(ctx, ch, rec, appMove{Item: Item{ID: parent.ItemID}, To: from, Why: convergenceWhy(parent, from)})
		if err != nil {
			return err
		}
		target, ok := ch.m.ConvergenceTarget(from, children)
		fields, err := a.fieldsAt(ctx, ch.m, parent, rec, ch.at)
		if err != nil {
			return err
		}
		if why := ch.m.Unmet(target, memberOf(parent, from, fields, ch.at)); ok && why != "" {
			// Reported, not forced (docs/AUTOMATION.md): the parent stays where it is.
			zerolog.Ctx(ctx).Info().Int("issue", parent.Number).Str("state", from).Str("reason", why).
				Msg("convergence left a parent that fails a requirement")
			return nil
		}
		if ok {
			mv := appMove{Item: relativeItem(ch.base, parent), From: from, To: target, Kind: CauseConvergence, At: ch.at,
				Why: convergenceWhy(parent, target)}
			if err := a.carryOut(ctx, ch.board, []appMove{mv}); err != nil {
				return err
			}
		} else if !owed || !slices.Contains(ch.m.ParentGates(), from) {
			return nil
		} else if from != parent.State && a.walkSoon != nil {
			// Converged by an earlier run of this chain: go on above it.
			a.walkSoon(ctx, ch.board, relativeItem(ch.base, parent))
		}
		parentIssueID = ""
		if fam.Parent != nil {
			parentIssueID = fam.Parent.IssueID
		}
	}
	return nil
}

// unreportedBefore returns a groupUnsettled when a relative's card shows a change made before
// the chain's cause or in its second that its history has not judged and no report of it is
// waiting for, or its issue a close or reopen not taken in (made a second earlier at
// least, or undated): a change no webhook has told of yet, which comes before the cause in the
// true history. So does a relative whose waiting reports none follows its history from: a
// change before them went unreported, when is not known. The chain waits for the relative's walk (asked for here), which judges it once
// a proof covers it (a close or reopen, once the sweep redelivers it); the relative never waits
// for this chain (its change is the earlier).
func (a *Automation) unreportedBefore(ctx context.Context, ch *chain, r Relative) error {
	if ch.at.IsZero() || r.ItemID == "" || ch.visited[r.ItemID] {
		return nil
	}
	cause := ch.at.Truncate(time.Second)
	rec, found, err := a.items.load(ctx, r.ItemID)
	if err != nil {
		return err
	}
	known := found && rec.known()
	legal := r.State
	if known {
		legal = rec.LastLegalState
	}
	why, at, err := a.issueUnjudged(ctx, issueSeen{owner: ch.base.Owner, itemID: r.ItemID, open: r.Open, events: r.IssueEvents}, legal)
	if err != nil {
		return err
	}
	issue := why != "" && (at.IsZero() || at.Truncate(time.Second).Before(cause))
	// (A change of the cause's second too: the card shows only its newest change time, and an
	// earlier one may hide behind it until its report tells where it came from.)
	card := known && !r.StateUpdatedAt.IsZero() && r.StateUpdatedAt.Before(cause.Add(time.Second)) && rec.ObservedState != r.State && rec.RevertPending == ""
	gap := false
	if known && !issue {
		reports := 0
		if reports, gap, err = a.othersReports(ctx, r.ItemID, rec.ObservedState); err != nil {
			return err
		}
		if !gap && card && reports > 0 {
			return nil // a report tells of it: the relatives' wait orders it
		}
	}
	if !issue && !card && !gap {
		return nil
	}
	if a.walkSoon != nil {
		a.walkSoon(ctx, ch.board, relativeItem(ch.base, r))
	}
	return groupUnsettled{member: r.ItemID, number: r.Number}
}

// othersReports counts the reports of others' card changes waiting for an item; gap: none
// follows the history from observed (a change before them no report has told of, made when is
// unknown: its card shows only the newest change time).
func (a *Automation) othersReports(ctx context.Context, itemID, observed string) (reports int, gap bool, err error) {
	pending, err := a.store().PendingObservations(ctx, itemID)
	if err != nil {
		return 0, false, fmt.Errorf("load reports of item %s: %w", itemID, err)
	}
	follows := false
	for _, o := range pending {
		if o.Actor != a.rec.app && o.Lifecycle == "" && o.Field == "" {
			reports++
			follows = follows || !o.FromKnown || o.From == observed
		}
	}
	return reports, reports > 0 && !follows, nil
}

// unreportedAtOrBelow is unreportedBefore for a child of a parent the chain converges and, while
// a change made before the cause may still be reported (a move made for an agent: judged at
// once, before any proof), for its descendants `levels` deep (as far as convergence reaches up
// to the child): an unreported change of a grandchild may have converged the child before the
// cause.
func (a *Automation) unreportedAtOrBelow(ctx context.Context, ch *chain, c Relative, levels int) error {
	if err := a.unreportedBefore(ctx, ch, c); err != nil {
		return err
	}
	if c.SubIssues == 0 || ch.visited[c.ItemID] || levels <= 0 {
		return nil
	}
	if unreported, err := a.mayBeReported(ctx, ch.at); err != nil || !unreported {
		return err // a proof covers the cause: its reports are waiting, and the relatives' wait orders them
	}
	fam, err := ch.board.Family(ctx, c.IssueID, ch.base.ProjectID)
	if err != nil {
		return fmt.Errorf("read the children of #%d: %w", c.Number, err)
	}
	for _, g := range fam.Children {
		if g.ItemID != "" {
			if err := a.unreportedAtOrBelow(ctx, ch, g, levels-1); err != nil {
				return err
			}
		}
	}
	return nil
}

// legalAtCause is a child's legal state when the chain's cause was made: a step of a sibling
// made in a later second (judged first: it did not wait for the cause's item) is not counted;
// one of the cause's second is (GitHub cannot tell which of the two came first, and in either
// order the later one sees the other). The items the chain moved count with their new states.
func (a *Automation) legalAtCause(ctx context.Context, ch *chain, c Relative) (string, error) {
	if !ch.visited[c.ItemID] && !ch.at.IsZero() {
		legal, known, err := a.store().LegalStateAt(ctx, c.ItemID, ch.at.Truncate(time.Second).Add(time.Second))
		if err != nil {
			return "", fmt.Errorf("legal state of #%d: %w", c.Number, err)
		}
		if known {
			return legal, nil
		}
	}
	legal, _, err := a.legalRecord(ctx, c)
	return legal, err
}

// legalRecord is a relative's legal state, with its record: its record's, or its card's for
// an item never recorded.
func (a *Automation) legalRecord(ctx context.Context, r Relative) (string, Record, error) {
	rec, found, err := a.items.load(ctx, r.ItemID)
	if err != nil || !found || !rec.known() {
		return r.State, Record{}, err
	}
	return rec.LastLegalState, rec, nil
}

// carryOut makes automated moves, each first a step of its item's history (owe: journaled,
// as a revert is), then written, guarded as a revert is: only where the card still shows, when
// the write's turn comes, the value it showed when the move was owed (concurrent guarded writes
// share one read and one mutation per turn). The others are written by their items' own walks,
// once the reports of the values their cards show are judged (from the new legal state).
func (a *Automation) carryOut(ctx context.Context, b Board, moves []appMove) error {
	var written []appMove
	for _, mv := range moves {
		now, err := a.owe(ctx, mv)
		if err != nil {
			return err
		}
		if now {
			written = append(written, mv)
		} else if a.walkSoon != nil && mv.Item.State != mv.To {
			a.walkSoon(ctx, b, mv.Item)
		}
	}
	var failed error
	for i, err := range a.writeGuarded(ctx, b, written) {
		mv := written[i]
		switch {
		case err == nil:
			if err := a.wrote(ctx, mv); err != nil {
				// The write is on the board and journaled: the report of it, when its job
				// walks the item, takes it in.
				zerolog.Ctx(ctx).Debug().Err(err).Str("moved_item", mv.Item.ID).Msg("could not record an automated write as made")
			}
			a.comment(ctx, b, mv)
			continue
		case errors.Is(err, ErrBoardMoved):
			// Moved since it was owed: that move's report follows the value it left and is
			// judged from the new legal state; the item's walk writes what the board must show.
			zerolog.Ctx(ctx).Info().Str("moved_item", mv.Item.ID).Str("to", mv.To).
				Msg("automated write not made: the card was moved since; judging the newer move first")
			if err := a.notWritten(ctx, mv); err != nil {
				failed = cmp.Or(failed, err)
			}
		default:
			failed = cmp.Or(failed, err) // journaled: each item's walk writes what is left
		}
		if a.walkSoon != nil {
			a.walkSoon(ctx, b, mv.Item)
		}
	}
	return failed
}

// writeGuarded writes each move only over the value its card showed when it was owed, and
// returns each write's outcome (ErrBoardMoved: not written).
func (a *Automation) writeGuarded(ctx context.Context, b Board, moves []appMove) []error {
	errs := make([]error, len(moves))
	if len(moves) == 0 {
		return errs
	}
	writes := make([]StateWrite, len(moves))
	for i, mv := range moves {
		writes[i] = StateWrite{Item: mv.Item, State: mv.To, From: mv.Item.State}
	}
	return b.SetStatesIf(ctx, writes)
}

// notWritten clears the journal of an owed write that was not made (its card moved since).
func (a *Automation) notWritten(ctx context.Context, mv appMove) error {
	_, err := a.items.update(ctx, mv.Item.ID, func(rec Record, found bool) (Step, bool, error) {
		if !found || rec.RevertPending != mv.To {
			return Step{}, false, nil
		}
		rec.RevertPending = ""
		return Step{Record: rec}, true, nil
	})
	if err != nil {
		return fmt.Errorf("record automation on %s: %w", mv.Item.ID, err)
	}
	return nil
}

// owe records an automated move as a step of its item's history, dated at its cause: the
// item's legal state becomes mv.To (what the board must show), audited `automated` with its
// cause. now reports whether the chain may write it at once: the card shows the value the
// item's history ended in, nobody else's report of the item is waiting, and no close or reopen
// of its issue since may still be reported; then the write is
// journaled (RevertPending) in the same step, so a crash between the two is resolved as a
// revert's is. Otherwise the item's own walk judges those reports from the new legal state
// and writes what the board must show, guarded, as a revert.
func (a *Automation) owe(ctx context.Context, mv appMove) (now bool, err error) {
	it := mv.Item
	// A close or reopen of its issue since, not reported yet, may change what the board must
	// show: the item's walk writes it once that is judged (or proven never to come).
	issueChanged := false
	if at, err := a.issueEventAt(ctx, it); err != nil {
		return false, err
	} else if !at.IsZero() {
		if issueChanged, err = a.mayBeReported(ctx, at); err != nil {
			return false, err
		}
	}
	_, err = a.items.update(ctx, it.ID, func(rec Record, found bool) (Step, bool, error) {
		now = false
		observed := rec.ObservedState
		if !found || !rec.known() {
			// Never judged: its card's value is taken as legal, as on first sight.
			observed = it.State
			rec.ObservedState, rec.ObservedAt, rec.LastLegalState = it.State, time.Time{}, it.State
		}
		rec.IssueNumber, rec.Repo, rec.ProjectID = it.Number, it.Repo, it.ProjectID
		legalFrom := rec.LastLegalState
		if found && rec.known() && (legalFrom == mv.To || legalFrom != mv.From) {
			// Owed already (a chain run again after a failure), or the item's history moved
			// on since the move was planned from it (a step judged meanwhile stands).
			return Step{}, false, nil
		}
		pending, err := a.store().PendingObservations(ctx, it.ID)
		if err != nil {
			return Step{}, false, fmt.Errorf("load reports of item %s: %w", it.ID, err)
		}
		pending = slices.DeleteFunc(pending, func(o Observation) bool { return o.Actor == a.rec.app || o.Field != "" })
		rec.LastLegalState, rec.RejectedState = mv.To, ""
		if mv.At.After(rec.LegalAt) {
			rec.LegalAt = mv.At
		}
		if !a.machineAt(mv.Item.Owner, mv.At).IsLock(mv.To) {
			rec.LockHolder, rec.LockSince, rec.LockTakenFrom = "", time.Time{}, ""
		}
		// (A card changed since the history's last judged change shows the same value set
		// again: a round trip no report has told of yet, judged first by the item's walk.)
		changedSince := found && !rec.ObservedAt.IsZero() && it.StateUpdatedAt.After(rec.ObservedAt)
		if len(pending) == 0 && it.State == observed && !rec.writeInFlight() && !issueChanged && !changedSince {
			rec.RevertPending, now = mv.To, true
		}
		mv.From = legalFrom
		o, audit := a.rec.appStep(mv, legalFrom), a.rec.automation(mv)
		return Step{Record: rec, Observation: &o, Audit: &audit}, true, nil
	})
	if err != nil {
		return false, fmt.Errorf("record automation on %s: %w", it.ID, err)
	}
	a.logMove(zerolog.Ctx(ctx).Info(), mv).Msg("automation moved an item")
	a.observeAutomation(mv.Kind)
	return now, nil
}

// wrote records that an owed move is on the board.
func (a *Automation) wrote(ctx context.Context, mv appMove) error {
	_, err := a.items.update(ctx, mv.Item.ID, func(rec Record, found bool) (Step, bool, error) {
		if !found || rec.RevertPending != mv.To {
			return Step{}, false, nil // its report came back first, and was taken in
		}
		rec.Writes = append(slices.Clone(rec.Writes), policy.Write{Over: mv.Item.State, To: mv.To, At: rec.ObservedAt, Sent: a.now()}) // (its guard's From)
		rec.Raced = slices.DeleteFunc(slices.Clone(rec.Raced), func(r policy.Write) bool { return r.To == mv.To })
		rec.ObservedState, rec.RevertPending = mv.To, ""
		// GitHub dates our write to the second it was made: a report of an earlier write of
		// ours that comes back after it (late, or redelivered) is older than the history.
		if at := a.now().Truncate(time.Second); at.After(rec.ObservedAt) {
			rec.ObservedAt = at
		}
		return Step{Record: rec}, true, nil
	})
	if err != nil {
		return fmt.Errorf("record automation on %s: %w", mv.Item.ID, err)
	}
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
	if !a.machineAt(mv.Item.Owner, mv.At).Automation().CommentAutomation || mv.Item.ContentID == "" {
		return
	}
	if _, err := b.AddComment(ctx, mv.Item.ContentID, a.rec.automationComment(mv)); err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Int("issue", mv.Item.Number).Msg("could not comment on an automated move")
	}
}
