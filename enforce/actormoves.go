package enforce

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/policy"
)

// A move the app makes for an agent through the façade (handoff_ticket, a claim,
// advance_children; docs/ENFORCEMENT.md "Moves the app makes for an agent") is a step of its
// item's history like a reported one:
//   - it is judged at once, when the history before it is: no report of the item or of a
//     relative made before it is still waiting, neither its card nor a relative's shows a value
//     no report has told of yet, no issue of theirs is open or closed otherwise than its history
//     left it, and no write or automation of the item is still owed (unsettledBefore); until then
//     it is refused as busy;
//   - it is recorded before it is written, journaled as a revert is, with its automation owed
//     in the record (makeStep): a crash after the record leaves the write and the automation to
//     the item's walk, and the move stands.

// errUnsettled: the history before a move the app is to make for its actor is still being
// judged.
type errUnsettled struct{ why string }

func (e errUnsettled) Error() string { return e.why }

// unsettledBefore returns an errUnsettled when the item's history, or a relative's, before `at`
// (whole seconds; reports of that second count) is still being judged, or the item still owes
// a write or automation; walkSoon is asked to finish what the item owes.
func (a *Automation) unsettledBefore(ctx context.Context, b Board, it Item, rec Record, at time.Time) error {
	if why, err := a.itemUnsettled(ctx, b, it, rec, at); err != nil || why != "" {
		if err == nil {
			err = errUnsettled{why: fmt.Sprintf("#%d: %s", it.Number, why)}
		}
		return err
	}
	var member groupUnsettled
	// (Reports from the move's own second count: the move is made after them.)
	if err := a.issueEventBefore(ctx, it, at.Add(time.Second)); errors.As(err, &member) {
		return errUnsettled{why: fmt.Sprintf("#%d: a close or reopen of it is still being judged", it.Number)}
	} else if err != nil {
		return err
	}
	if err := a.relativesUnsettled(ctx, b, it, at.Add(time.Second)); errors.As(err, &member) {
		return errUnsettled{why: fmt.Sprintf("#%d: a change of #%d, a relative, made before is still being judged", it.Number, member.number)}
	} else if err != nil {
		return err
	}
	if it.ContentType != ContentIssue || (it.ParentID == "" && it.SubIssues == 0) {
		return nil
	}
	// A relative showing a change its history has not reached (or a write of ours still on
	// its way), whose automation may reach this item.
	if err := a.eachRelative(ctx, b, it, func(r Relative, _ bool) (bool, error) {
		rec, found, err := a.items.load(ctx, r.ItemID)
		if err != nil {
			return false, err
		}
		if !found || !rec.known() {
			// Never judged: its card's value is its legal state (first sight), and its issue
			// still tells of a close or reopen not taken in.
			why, _, err := a.issueUnjudged(ctx, issueSeen{owner: it.Owner, itemID: r.ItemID, open: r.Open, events: r.IssueEvents}, r.State)
			return why != "", err
		}
		if r.State != rec.ObservedState || rec.RevertPending != "" || rec.AutomateState != "" ||
			(!rec.ObservedAt.IsZero() && r.StateUpdatedAt.After(rec.ObservedAt)) {
			return true, nil
		}
		why, _, err := a.issueUnjudged(ctx, issueSeen{owner: it.Owner, itemID: r.ItemID, open: r.Open, events: r.IssueEvents}, rec.LastLegalState)
		return why != "", err
	}); errors.As(err, &member) {
		return errUnsettled{why: fmt.Sprintf("#%d: #%d, a relative, shows a change not judged yet", it.Number, member.number)}
	} else if err != nil {
		return err
	}
	return nil
}

// itemUnsettled says why the item's own history before `at` is not settled ("" when it is).
func (a *Automation) itemUnsettled(ctx context.Context, b Board, it Item, rec Record, at time.Time) (string, error) {
	if rec.RevertPending != "" || rec.AutomateState != "" {
		if a.walkSoon != nil {
			a.walkSoon(ctx, b, it)
		}
		return "a write or automation of its last step is still being made", nil
	}
	// A write of ours not reported back yet (nor proven to have changed nothing): only its
	// report, or the report of a change that landed between its read and the write, tells what
	// the card went through. A step decided before would be decided from a legal state such a
	// change may have come after (one unreported write at a time).
	if n, err := a.unreportedWrites(ctx, rec); err != nil || n > 0 {
		return "a write of ours is not reported back yet", err
	}
	if it.ContentType == ContentIssue && it.ContentID != "" {
		if why, _, err := a.issueUnjudged(ctx, issueSeen{owner: it.Owner, itemID: it.ID, open: it.Open, events: it.IssueEvents}, rec.LastLegalState); err != nil || why != "" {
			return why, err
		}
	}
	pending, err := a.store().PendingObservations(ctx, it.ID)
	if err != nil {
		return "", fmt.Errorf("load reports of item %s: %w", it.ID, err)
	}
	others := 0
	for _, o := range pending {
		if o.Actor == a.opts.AppLogin || o.Field != "" {
			continue // (a field's edit moves no card: the move is checked against the field as read now)
		}
		others++
		if !o.At.After(at) {
			return "a change made before is still being judged", nil
		}
	}
	// A change no report has told of yet (late, or lost: the sweep redelivers it): another
	// value, or the same one set again since (a round trip).
	if others == 0 && rec.known() && (it.State != rec.ObservedState ||
		(!rec.ObservedAt.IsZero() && it.StateUpdatedAt.After(rec.ObservedAt))) {
		if a.walkSoon != nil {
			a.walkSoon(ctx, b, it)
		}
		return fmt.Sprintf("it shows %s, a change not judged yet", orNoState(it.State)), nil
	}
	return "", nil
}

// issueUnjudged says why an item's issue shows a close or reopen its history has not taken in
// yet (its webhook late, or lost: the sweep redelivers it), and when it was made when its
// timeline dates it ("" when there is none). The timeline's newest close or reopen not made by
// the app, dated after the last its history holds (or with none held), is one while its report
// may still come (no proof covers its second yet) — a close and a reopen both unreported leave
// the issue as it was, but not its timeline; once a proof covers it, it never reached the app
// (before the item's history, or not the app's to judge) and counts for nothing. Otherwise the
// issue open or closed otherwise than its history's last close or reopen left it is one (unless
// that one was refused and the app still owes its undo); with
// neither in its history nor in its timeline, an issue closed short of where a close leaves it
// (Done, Canceled).
func (a *Automation) issueUnjudged(ctx context.Context, is issueSeen, legal string) (why string, at time.Time, err error) {
	itemID, open, events := is.itemID, is.open, is.events
	if !a.machineAt(is.owner, time.Time{}).Automation().LifecycleSync {
		return "", time.Time{}, nil // closes and reopens are no part of the history
	}
	h, err := a.issueHistory(ctx, itemID, events)
	if err != nil {
		return "", time.Time{}, err
	}
	st := a.opts.States
	switch {
	case h.later():
		if maybe, err := a.mayBeReported(ctx, h.ev.At); err != nil || !maybe {
			return "", time.Time{}, err
		}
		return fmt.Sprintf("it was %s at %s, and ralph-gate has not judged that change yet",
			map[bool]string{true: "closed", false: "reopened"}[h.ev.Closed], h.ev.At.UTC().Format(time.RFC3339)), h.ev.At, nil
	case h.found && eventLeftClosed(h.last) == open && !undoOwed(h.last), !h.found && !h.dated && !open && legal != st.Done && legal != st.Canceled:
		at := time.Time{}
		if h.found && h.dated && h.ev.Closed == !open && h.ev.Closed != eventLeftClosed(h.last) {
			// The timeline's newest is that change, of the held one's second (a later one
			// would be h.later): it is dated, and a chain caused earlier does not wait for it.
			at = h.ev.At
		}
		return map[bool]string{true: "it is open", false: "it is closed"}[open] + ", and ralph-gate has not judged that change yet", at, nil
	}
	return "", time.Time{}, nil
}

// issueSeen is an item's issue as read: open or closed, and its timeline's closes and reopens.
type issueSeen struct {
	owner, itemID string
	open          bool
	events        []IssueEvent
}

// issueEventAt is when the item's issue was last closed or reopened by someone other than the
// app (its timeline, read with the item), when that is later than the last close or reopen its
// history holds; zero when not (policy.BoardValue.IssueEventAt).
func (a *Automation) issueEventAt(ctx context.Context, it Item) (time.Time, error) {
	if _, dated := a.lastIssueEvent(it.IssueEvents); !dated || it.ContentType != ContentIssue || !a.machineAt(it.Owner, time.Time{}).Automation().LifecycleSync {
		return time.Time{}, nil // (no store read: most issues were never closed)
	}
	h, err := a.issueHistory(ctx, it.ID, it.IssueEvents)
	if err != nil || !h.later() {
		return time.Time{}, err
	}
	return h.ev.At.Truncate(time.Second), nil
}

// issueEvents is what an item's history and its issue's timeline say of the issue's closes and
// reopens: the last its history holds (found), and the timeline's newest not made by the app
// (dated).
type issueEvents struct {
	last  Observation
	found bool
	ev    IssueEvent
	dated bool
}

// later reports whether the timeline's newest is later than the history's last (or the history
// holds none).
func (h issueEvents) later() bool {
	return h.dated && (!h.found || h.ev.At.Truncate(time.Second).After(h.last.At))
}

// issueHistory reads them.
func (a *Automation) issueHistory(ctx context.Context, itemID string, events []IssueEvent) (issueEvents, error) {
	var h issueEvents
	h.ev, h.dated = a.lastIssueEvent(events)
	var err error
	if h.last, h.found, err = a.store().LastEvent(ctx, itemID); err != nil {
		return issueEvents{}, fmt.Errorf("load the last close or reopen of item %s: %w", itemID, err)
	}
	return h, nil
}

// lastIssueEvent is the newest of an issue's closes and reopens made by someone other than the
// app (its own undo is no one's move). GraphQL names a bot by its slug, without the "[bot]"
// webhooks add, so both forms are the app.
func (a *Automation) lastIssueEvent(events []IssueEvent) (IssueEvent, bool) {
	app := strings.TrimSuffix(a.opts.AppLogin, "[bot]")
	for i := len(events) - 1; i >= 0; i-- {
		if ev := events[i]; app == "" || !strings.EqualFold(strings.TrimSuffix(ev.Actor, "[bot]"), app) {
			return ev, true
		}
	}
	return IssueEvent{}, false
}

// unreportedWrites counts the item's writes of ours whose report has not come back and may
// still come.
func (a *Automation) unreportedWrites(ctx context.Context, rec Record) (int, error) {
	n := 0
	for _, wr := range rec.Writes {
		if wr.Reported || wr.Sent.IsZero() {
			continue
		}
		may, err := a.mayBeReported(ctx, wr.Sent)
		if err != nil {
			return 0, err
		}
		if may {
			n++
		}
	}
	return n, nil
}

// mayBeReported reports whether a change made at `at` may still be reported: no redelivery
// sweep's proof reaches reorder_window past its second yet (with no sweeper, it is not that
// old yet), and it is not gap_hold old (a report waits no longer).
func (a *Automation) mayBeReported(ctx context.Context, at time.Time) (bool, error) {
	in := policy.SequenceInput{Now: a.now(), Window: a.opts.ReorderWindow, Hold: a.opts.GapHold}
	if a.opts.Redeliveries != nil {
		proof, err := a.opts.Redeliveries.SweepProof(ctx)
		if err != nil {
			return false, fmt.Errorf("read the redelivery sweep's proof: %w", err)
		}
		in.Sweep = proof
	}
	return !in.Covers(at.Truncate(time.Second), at), nil // (no longer than gap_hold past it)
}

// undoOwed reports whether a close or reopen taken into an item's history was refused and its
// undo (with its explanation) is not made yet: the issue shows what the app still owes, not a
// change of someone's.
func undoOwed(o Observation) bool { return o.Verdict == VerdictReverted && !o.Explained }

// eventLeftClosed reports whether a close or reopen taken into an item's history left its issue
// closed: a close that stood (allowed, or nothing to move), or a reopen that was refused (the
// issue closed again).
func eventLeftClosed(o Observation) bool {
	refused := o.Verdict == VerdictReverted
	return (o.Lifecycle == LifecycleIssueClosed) != refused
}

// actorStep is a move the app makes for its actor, judged allowed: it becomes a step of the
// item's history at `at`.
type actorStep struct {
	item     Item   // as read under the item's lock
	from, to string // the item's legal state, and the state it enters
	at       time.Time
	actor    string
	dec      policy.Decision
	obs      Observation // the step as the item's history keeps it
	audit    AuditEntry
	why      string // the cause its automation names
}

// makeStep records s as the item's step (its legal state, lock and owed automation, as a
// judged report's: accept), journaled when the card shows the value the history ended in, then
// writes it (guarded: only over the value read) and runs its automation. The move stands once
// recorded: a failure after that is returned as a warning, and the item's walk finishes what is
// left. The caller holds the item's lock.
func (a *Automation) makeStep(ctx context.Context, b Board, s actorStep) (warning string, err error) {
	it := s.item
	write := false
	automate := a.modeAt(it.Owner, it.ProjectNumber, time.Time{}).Writes() // (made now)
	_, err = a.items.update(ctx, it.ID, func(rec Record, found bool) (Step, bool, error) {
		write = false
		if !found || !rec.known() {
			rec.LastLegalState, rec.ObservedState = it.State, it.State // adopted, as on first sight
		}
		if rec.LastLegalState != s.from {
			return Step{}, false, errUnsettled{why: fmt.Sprintf("#%d moved to %s meanwhile", it.Number, orNoState(rec.LastLegalState))}
		}
		rec.ProjectID, rec.IssueNumber, rec.Repo = it.ProjectID, it.Number, it.Repo
		holder, since := rec.LockHolder, rec.LockSince
		accept(&rec, Observation{To: s.to, At: s.at, Actor: s.actor}, s.dec, automate)
		if s.dec.TakesLock && strings.EqualFold(holder, s.actor) && !since.IsZero() {
			rec.LockSince = since // a claim just before keeps its time
		}
		if it.State == rec.ObservedState && rec.RevertPending == "" {
			rec.RevertPending, write = s.to, true
		}
		o, audit := s.obs, s.audit
		return Step{Record: rec, Observation: &o, Audit: &audit}, true, nil
	})
	if err != nil {
		return "", fmt.Errorf("record the move of #%d to %s: %w", it.Number, s.to, err)
	}
	var warnings []string
	finish := func(what string, err error) {
		zerolog.Ctx(ctx).Warn().Err(err).Int("issue", it.Number).Msg(what + " failed; the item's walk finishes it")
		warnings = append(warnings, what+" failed (the move stands; it is finished shortly): "+err.Error())
		if a.walkSoon != nil {
			a.walkSoon(ctx, b, it)
		}
	}
	mv := appMove{Item: it, From: it.State, To: s.to}
	if write {
		if err := setStateIf(ctx, b, StateWrite{Item: it, From: it.State, State: s.to}); err != nil {
			finish("writing the move", err)
		} else if err := a.wrote(ctx, mv); err != nil {
			zerolog.Ctx(ctx).Debug().Err(err).Int("issue", it.Number).Msg("could not record a move as written")
		}
	} else if a.walkSoon != nil {
		a.walkSoon(ctx, b, it) // reports of the card's values are judged first, then it is written
	}
	moved := it
	moved.State = s.to
	if !automate {
		// Warn, evaluate: the agent's own move is made, no automation after it (modes.go).
	} else if err := a.run(ctx, b, moved, cause{at: s.at, why: s.why}); err != nil {
		finish("the automation after the move", err)
	} else if err := a.automated(ctx, it.ID, s.to); err != nil {
		finish("recording the automation as run", err)
	}
	return strings.Join(warnings, "; "), nil
}

// automated records that the automation a step into `to` owes has run.
func (a *Automation) automated(ctx context.Context, itemID, to string) error {
	_, err := a.items.update(ctx, itemID, func(rec Record, _ bool) (Step, bool, error) {
		if rec.AutomateState != to || rec.LastLegalState != to {
			return Step{}, false, nil
		}
		rec.AutomateState = ""
		return Step{Record: rec}, true, nil
	})
	return err
}

// moveTime is when a move the app makes for its actor was made, as GitHub dates changes:
// whole seconds.
func moveTime(at, now time.Time) time.Time {
	if at.IsZero() || at.After(now) {
		at = now
	}
	return at.Truncate(time.Second)
}
