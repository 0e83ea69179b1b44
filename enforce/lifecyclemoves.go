package enforce

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/policy"
)

// A close, a reopen or a merge is a move of the card by whoever made it (docs/AUTOMATION.md):
// closing an issue is the closer's move to Done (Canceled when not planned), reopening is the
// reopener's move to Backlog, a merged pull request is the merger's move of the issues it
// closes. Each is a report of its item's history (ProcessLifecycle records it), placed by its
// time among the card's changes and judged when the sequencer reaches it, as a board move of
// that actor from the item's legal state (the table, roles, locks, the gates); the close of an
// issue In Progress as the merge path too (mergePath). A refused one is undone where GitHub can
// undo it — the issue is reopened, or closed again — and explained on the issue with a
// Recovery; the card stays where the workflow left it. A merge cannot be undone: its refused
// move is not made, and explained.

// judgeEvent judges a lifecycle event of the item's history (the sequencer hands it out once
// every change made before it is judged) as its actor's move from the legal state. Allowed: the
// legal state becomes the event's state, its automation is owed, and the walk writes the card
// (the board shows the value the history ended in, not the legal one). Refused: the close or
// reopen is undone and explained on the issue, and the card stays.
func (e *Enforcer) judgeEvent(ctx context.Context, w *walk, o Observation) error {
	a, rec := e.auto, w.rec
	kind := a.classify(w.org(), o.Actor, o.At)
	why := o.Reason // what the event was, recorded with it
	if why == "" {
		why = fmt.Sprintf("%s by %s", strings.ReplaceAll(o.Lifecycle, "_", " "), o.Actor)
	}
	o.Status, o.JudgedAt, o.LegalFrom, o.ActorKind = ObservationJudged, e.now(), rec.LastLegalState, kind.String()
	to, ok := a.lifecycleTarget(a.machineAt(w.org(), o.At), o.Lifecycle, o.To, rec.LastLegalState)
	res := Result{Verdict: VerdictIgnored, Reason: "nothing to move"}
	if w.it.Archived {
		// An archived card stays as it was archived: the app never moves one.
		ok, res.Reason = false, "archived: left as it is"
	}
	if !ok {
		// Nothing happens to the item: the report takes its place, with nothing to audit.
		o.Status, o.Verdict, o.Reason = ObservationIgnored, VerdictIgnored, res.Reason+": "+orNoState(rec.LastLegalState)+" stays"
		if err := e.commit(ctx, w, Step{Record: rec, Observation: &o}); err != nil {
			return err
		}
		w.settle(o, res)
		return nil
	}
	o.To = to
	// A merge's own move is made by a merged pull request (workflow.requirements).
	pc := policy.Change{From: rec.LastLegalState, To: to, Actor: o.Actor, ActorKind: kind, LockHolder: rec.LockHolder, LockTakenFrom: rec.LockTakenFrom,
		MergedPR: o.Lifecycle == LifecyclePRMerged}
	dec, pc, err := e.decide(ctx, w, pc, o.At)
	if err != nil {
		return err
	}
	mode := e.modeAt(w.org(), w.it.ProjectNumber, o.At)
	allowed := dec.Verdict == policy.Allow || a.mergePath(a.machineAt(w.org(), o.At), o.Lifecycle, pc)
	switch {
	case !mode.Writes():
		// Warn, evaluate: judged and audited, nothing written — the card stays where it is,
		// and a refused close or reopen stands (explained under warn: modes.go).
		o.Verdict, o.Rule, o.Reason = VerdictAllowed, string(dec.Rule), why+": the card is not moved (project in "+string(mode)+" mode)"
		res = Result{Verdict: VerdictAllowed, Reason: why}
		if !allowed {
			o.Verdict, o.Reason, o.Recovery, o.Explained = VerdictWouldRevert, dec.Reason, "ask a human", mode == ModeEvaluate
			if r := a.machineAt(w.org(), o.At).RefusalFor(pc, dec); r != nil && r.Recovery != "" {
				o.Recovery = r.Recovery
			}
			res = Result{Verdict: VerdictWouldRevert, Reason: dec.Reason}
		}
	case allowed:
		accept(&rec, o, dec, true)
		o.Verdict, o.Rule, o.Reason = VerdictAutomated, string(dec.Rule), why
		w.cause, w.eventTo = why, to
		res = Result{Verdict: VerdictAllowed, Reason: why}
	default:
		// Refused: recorded first, then the close or reopen is undone and explained (undoEvent,
		// also the step's explanation: explainStep), so a crash in between leaves it to the
		// next walk, never judged twice.
		o.Verdict, o.Rule, o.Reason, o.Recovery = VerdictReverted, string(dec.Rule), dec.Reason, "ask a human"
		if r := a.machineAt(w.org(), o.At).RefusalFor(pc, dec); r != nil && r.Recovery != "" {
			o.Recovery = r.Recovery
		}
		res = Result{Verdict: VerdictReverted, Reason: dec.Reason, RevertedTo: rec.LastLegalState}
		w.reverted = true // undone on the issue; the card never left the legal state
	}
	audit := e.rec.step(rec, o, o.LegalFrom)
	audit.Cause = why
	if o.Verdict.Refused() {
		audit.Cause = o.Lifecycle
	}
	if err := e.commit(ctx, w, Step{Record: rec, Observation: &o, Audit: &audit}); err != nil {
		return err
	}
	moveLine{Issue: w.it.Number, From: o.LegalFrom, To: to, Actor: o.Actor, Verdict: o.Verdict}.on(zerolog.Ctx(ctx).Info()).
		Str("rule", o.Rule).Str("kind", o.Lifecycle).Msg("judged a lifecycle move")
	if o.Verdict == VerdictReverted {
		// Undone at once, while the events after it in the history are still to be judged (a
		// crash leaves it to the walk's explanations: explainStep).
		if err := e.undoEvent(ctx, w, o); err != nil {
			return err
		}
	}
	if o.Verdict == VerdictAutomated {
		e.observeAutomation(CauseLifecycle)
		a.comment(ctx, w.board, appMove{Item: w.it, From: o.LegalFrom, To: to, Kind: CauseLifecycle, Why: why})
	}
	w.settle(o, res)
	return nil
}

// mergePath reports whether a close of an issue In Progress is what merging its pull request
// does — In Progress → In Review → Done, both moves open to the closer: a merge closes the issues
// its pull request closes, and the issue's close may be handled before the merge's move.
func (a *Automation) mergePath(m *policy.Machine, kind string, pc policy.Change) bool {
	st := a.opts.States
	if kind != LifecycleIssueClosed || pc.From != st.InProgress || pc.To != st.Done {
		return false
	}
	first, second := pc, pc
	first.To = st.InReview
	second.From = st.InReview
	return m.Decide(first).Verdict == policy.Allow && m.Decide(second).Verdict == policy.Allow
}

// undoEvent undoes a refused lifecycle event of the item (unless the issue is back as it was
// already: a retry, or someone undid it) and explains it on the issue, once: the explanation of
// its refused step (explainStep).
func (e *Enforcer) undoEvent(ctx context.Context, w *walk, o Observation) error {
	a, cur := e.auto, w.it
	ev := Lifecycle{DeliveryID: eventOf(o.DeliveryID), Kind: o.Lifecycle, Actor: o.Actor}
	undone := undoneBy(o.Lifecycle)
	later, err := e.store().LaterEvent(ctx, o)
	if err != nil {
		return err
	}
	if !later {
		// A close or reopen made after this one by someone else shows on the issue's timeline
		// before any report of it comes: the undo must not undo that one — a retry after a
		// crash, whose walk read the item before it, least of all (family-seed-15029180). The
		// item is read again for it.
		fresh, err := w.board.Item(ctx, cur.ID)
		if err != nil {
			return fmt.Errorf("read #%d before undoing its %s: %w", cur.Number, o.Lifecycle, err)
		}
		cur = fresh
		if last, ok := a.lastIssueEvent(cur.IssueEvents); ok {
			later = last.At.Truncate(time.Second).After(o.At.Truncate(time.Second))
		}
	}
	kind := o.Lifecycle
	if later {
		// Closed or reopened again since: the issue is as that left it, not as this did.
		kind, undone = "", "left the issue as a later close or reopen left it"
	}
	switch kind {
	case LifecycleIssueClosed:
		if !cur.Open {
			if err := w.board.SetIssueOpen(ctx, cur.ContentID, true, ""); err != nil {
				return fmt.Errorf("reopen #%d: %w", cur.Number, err)
			}
		}
	case LifecycleIssueReopened:
		if cur.Open {
			reason := "completed"
			if o.LegalFrom == a.opts.States.Canceled {
				reason = "not_planned"
			}
			if err := w.board.SetIssueOpen(ctx, cur.ContentID, false, reason); err != nil {
				return fmt.Errorf("close #%d again: %w", cur.Number, err)
			}
		}
	}
	err = a.explainLifecycle(ctx, w.board, ev, cur, lifecycleRefusal{from: o.LegalFrom, to: o.To, kind: a.classify(w.org(), o.Actor, o.At),
		reason: o.Reason, recovery: o.Recovery, undone: undone})
	if err != nil {
		return err
	}
	return e.store().MarkExplained(ctx, o.DeliveryID)
}

// undoneBy says how a refused lifecycle event of the kind is undone.
func undoneBy(kind string) string {
	switch kind {
	case LifecycleIssueClosed:
		return "reopened the issue"
	case LifecycleIssueReopened:
		return "closed the issue again"
	}
	return "did not move the card"
}

// lifecycleRefusal is what the explanation of a refused lifecycle move says.
type lifecycleRefusal struct {
	from, to         string
	kind             policy.ActorKind
	reason, recovery string
	undone           string
}

// lifecycleMarker opens the explanation of a refused lifecycle move, once per delivery.
const lifecycleMarker = "<!-- ralph-gate:lifecycle "

// explainLifecycle comments on the issue, once per event: a retry finds the comment by its
// marker before posting.
func (a *Automation) explainLifecycle(ctx context.Context, b Board, ev Lifecycle, cur Item, r lifecycleRefusal) error {
	if cur.ContentID == "" {
		return nil
	}
	mark := lifecycleMarker + ev.DeliveryID + " -->"
	if _, found, err := b.FindComment(ctx, cur.ContentID, mark); err != nil {
		return fmt.Errorf("look for the explanation on #%d: %w", cur.Number, err)
	} else if found {
		return nil
	}
	what := map[string]string{LifecycleIssueClosed: "closed this issue", LifecycleIssueReopened: "reopened this issue",
		LifecyclePRMerged: "merged a pull request that closes this issue"}[ev.Kind]
	var body strings.Builder
	fmt.Fprintf(&body, "%s\n**ralph-gate %s.** `%s` (%s) %s, which moves it from **%s** to **%s**: %s. It stays in **%s**.\n\nRecovery: %s\n",
		mark, r.undone, inlineCode(cmp.Or(ev.Actor, NoSender)), r.kind, what, orNoState(r.from), orNoState(r.to), r.reason, orNoState(r.from), r.recovery)
	if _, err := b.AddComment(ctx, cur.ContentID, body.String()); err != nil {
		return fmt.Errorf("explain on #%d: %w", cur.Number, err)
	}
	return nil
}
