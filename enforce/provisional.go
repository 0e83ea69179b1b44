package enforce

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/policy"
)

// A refused move is reverted provisionally, at once, when its refusal cannot depend on what
// the proof may still bring (docs/ENFORCEMENT.md "Provisional reverts"): it is the item's only
// waiting report, it left the value the item's judged history ends in (its legal state), the
// card still shows it and no later change, and policy refuses it for a settled rule
// (policy.Rule.Settled: the table, the actor's kind or role, the lock holder of the judged
// history). Nothing is told yet: the proof judges the report as always, and the revert's own
// report (or the board showing it) is then taken in as the board's value only. When the
// history agrees (refused, back to the same value) the revert is the revert; when not, it is
// withdrawn and the walk brings the board to the true outcome.

// errNotAtOnce is a provisional revert whose card, read when the write's turn came, no longer
// lets it be written at once (policy.Provisional): the move waits for its proof.
var errNotAtOnce = errors.New("the card no longer lets the move be reverted at once")

// atOnceWrite is what a provisional revert's check left once it let the write go: the item as
// its turn read it, and the record with the revert journaled.
type atOnceWrite struct {
	it  Item
	rec Record
}

// provisionalRevert writes the provisional revert of the walk's only waiting report when it
// qualifies; otherwise (or when GitHub refuses the write) the report waits for the proof.
// The caller holds the item's lock.
func (e *Enforcer) provisionalRevert(ctx context.Context, w *walk) {
	it := w.it
	if !w.read {
		// The guarded write reads the card when its turn comes, and the check is made on
		// that read: the record tells which item to write.
		it = Item{ID: w.rec.ItemID, ProjectID: w.rec.ProjectID, Owner: w.org(), Number: w.rec.IssueNumber, Repo: w.rec.Repo}
	}
	if wr, ok := e.provisionalPrepare(w, it, true); ok {
		e.provisionalWritten(ctx, w, wr, setStateIf(ctx, w.board, wr))
	}
}

// provisionalPrepare returns the provisional revert of the walk's only waiting report when the
// record and the reports let it: guarded (only over the refused value), and checked on the
// card as read when the write's turn comes, which has the last word. Only then, right before
// the mutation, is the revert journaled (its check commits the record, as loaded: a walk that
// recorded anything since makes the commit, and so the write, fail), so a revert the card did
// not let go leaves no journal behind. locked says the caller holds the item's lock for the
// whole write; otherwise the check takes this process's lock of the item if nobody holds it
// (a walk under way: the move is its, and waits for its proof).
func (e *Enforcer) provisionalPrepare(w *walk, it Item, locked bool) (StateWrite, bool) {
	if !w.found {
		return StateWrite{}, false
	}
	o, _, ok := e.revertsAtOnce(it.Owner, w.rec, w.pending)
	if !ok || !e.modeAt(it.Owner, it.ProjectNumber, o.At).Writes() {
		return StateWrite{}, false
	}
	in := policy.SequenceInput{History: w.history(), Pending: e.toPolicy(w.pending)}
	rec := w.rec
	rec.Provisional, rec.ProvisionalOver, rec.ProvisionalFor, rec.ProvisionalAt = rec.LastLegalState, o.To, o.DeliveryID, o.At
	done := &w.atOnce
	check := func(ctx context.Context, cur Item) error {
		if err := e.provisionalHolds(ctx, in, o, cur); err != nil {
			return err
		}
		if !locked {
			unlock, ok := e.items.local.tryLock(rec.ItemID)
			if !ok {
				return errNotAtOnce
			}
			defer unlock()
		}
		journaled, err := e.items.commit(ctx, Step{Record: rec})
		if err != nil {
			return fmt.Errorf("journal the revert at once: %w", err)
		}
		done.Store(&atOnceWrite{it: cur, rec: journaled})
		return nil
	}
	return StateWrite{Item: it, From: o.To, State: rec.LastLegalState, Check: check}, true
}

// provisionalHolds says whether the card, as read when the write's turn came, still lets the
// report o be reverted at once (errNotAtOnce when not): its project is enforced, it shows o's
// value and no later change of the card or of its issue (policy.Provisional), and, for an item
// with a parent or sub-issues, no item has an earlier report waiting.
func (e *Enforcer) provisionalHolds(ctx context.Context, in policy.SequenceInput, o Observation, cur Item) error {
	if !e.enforced(cur) {
		return errNotAtOnce
	}
	in.Board = policy.BoardValue{State: cur.State, UpdatedAt: cur.StateUpdatedAt, Closed: !cur.Open}
	var err error
	if in.Board.IssueEventAt, err = e.auto.issueEventAt(ctx, cur); err != nil {
		return err
	}
	if _, ok := policy.Provisional(in); !ok {
		return errNotAtOnce
	}
	if cur.ParentID != "" || cur.SubIssues > 0 {
		// A relative's earlier report still waiting may move the item first (a cascade), and a
		// relative's provisional revert of the same second is not ordered with it by the
		// families' checks: while any item has an earlier report waiting, the move waits for
		// its proof (telling which are relatives would cost family reads).
		waiting, err := e.store().PendingItemsBefore(ctx, o.At.Add(time.Second), cur.ID, e.opts.AppLogin)
		if err != nil {
			return err
		}
		if len(waiting) > 0 {
			return errNotAtOnce
		}
	}
	return nil
}

// provisionalWritten takes in what became of a provisional revert's write: written (logged);
// not journaled because the card moved meanwhile or no longer lets it, or the journal could not
// be committed (nothing was written: the move waits for its proof); or journaled and the write
// failed (the journal stays: it may have landed, and the proof's walk tells from the board or
// the write's report).
func (e *Enforcer) provisionalWritten(ctx context.Context, w *walk, wr StateWrite, err error) {
	log := zerolog.Ctx(ctx)
	done := w.atOnce.Swap(nil)
	if done != nil {
		w.rec, w.found = done.rec, true
	}
	switch {
	case done == nil:
		if !errors.Is(err, ErrBoardMoved) && !errors.Is(err, errNotAtOnce) {
			log.Debug().Err(err).Int("issue", wr.Item.Number).Msg("could not revert at once; the move waits for its proof")
		}
		w.read = false
		return
	case err != nil:
		log.Warn().Err(err).Int("issue", wr.Item.Number).Msg("provisional revert failed; the move waits for the proof")
		w.read = false
		return
	}
	w.it, w.read = done.it, true
	w.it.State = wr.State
	o := w.pending[0]
	moveLine{Issue: w.it.Number, From: wr.From, To: wr.State, Actor: o.Actor, Verdict: VerdictReverted}.on(log.Info()).
		Msg("reverted an illegal move provisionally; it is explained once every earlier change is known")
}

// revertsAtOnce returns the item's only waiting report and policy's refusal of it when the
// record and the reports alone let it be reverted provisionally (the board, read next, has the
// last word: policy.Provisional).
func (e *Enforcer) revertsAtOnce(owner string, rec Record, pending []Observation) (Observation, policy.Decision, bool) {
	if !rec.known() || len(pending) != 1 || rec.Provisional != "" || rec.AutomateState != "" || rec.writeInFlight() ||
		rec.ObservedState != rec.LastLegalState {
		return Observation{}, policy.Decision{}, false
	}
	o := pending[0]
	if o.Lifecycle != "" || o.Field != "" || o.Actor == "" || o.Actor == e.opts.AppLogin || !o.FromKnown || o.From != rec.LastLegalState {
		return Observation{}, policy.Decision{}, false
	}
	dec := e.machineAt(owner, o.At).Decide(policy.Change{From: rec.LastLegalState, To: o.To, Actor: o.Actor, ActorKind: e.classify(owner, o.Actor, o.At),
		LockHolder: rec.LockHolder, LockTakenFrom: rec.LockTakenFrom})
	return o, dec, dec.Verdict != policy.Allow && dec.Rule.Settled()
}

// revertsAtOnceAtIntake reports whether a change just recorded may be reverted provisionally
// (store reads only): RevertAtOnce's list takes it (atonce.go).
func (e *Enforcer) revertsAtOnceAtIntake(ctx context.Context, ch Change) (bool, error) {
	if !e.modeAt(ch.Owner, ch.ProjectNumber, ch.At).Writes() {
		return false, nil // warn, evaluate: nothing is reverted
	}
	rec, found, err := e.items.load(ctx, ch.ItemID)
	if err != nil || !found {
		return false, err
	}
	pending, err := e.store().PendingObservations(ctx, ch.ItemID)
	if err != nil {
		return false, fmt.Errorf("load reports of item %s: %w", ch.ItemID, err)
	}
	_, _, ok := e.revertsAtOnce(ch.Owner, rec, pending)
	return ok, nil
}

// syncProvisional takes the provisional revert in as the board's value, once the report it
// set back is judged: confirmed when that step was refused and the legal state is the value
// written, withdrawn otherwise (audited, with why; the walk then writes the true outcome
// over it, guarded as a revert is).
func (e *Enforcer) syncProvisional(ctx context.Context, w *walk, a policy.Action) error {
	rec := w.rec
	// Confirmed when the step it set back was refused, from the value it wrote (later steps
	// may have moved the item on since: they are theirs to tell).
	step, err := e.store().GetObservation(ctx, rec.ProvisionalFor)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("load report %s: %w", rec.ProvisionalFor, err)
	}
	confirmed := err == nil && step.Verdict == VerdictReverted && step.LegalFrom == rec.Provisional
	over := rec.ProvisionalOver
	rec.ObservedState, rec.RejectedState, rec.RevertPending = a.To, "", ""
	report := rec.ProvisionalFor
	rec.forgetProvisional()
	if a.Obs.At.After(rec.ObservedAt) {
		rec.ObservedAt = a.Obs.At
	}
	st := Step{Record: rec}
	var audit AuditEntry
	if a.Obs.Delivery != "" {
		o := w.take(a.Obs.Delivery)
		o.Status, o.JudgedAt, o.Verdict, o.Reason = ObservationIgnored, e.now(), VerdictIgnored, a.Why
		o.ActorKind = policy.ActorApp.String()
		audit = e.rec.step(rec, o, o.From)
		st.Observation, st.Audit = &o, &audit
	}
	if !confirmed {
		why := fmt.Sprintf("once every earlier change was known, %s was allowed", orNoState(over))
		if step.Verdict == VerdictReverted {
			why = fmt.Sprintf("once every earlier change was known, the item's legal state before the move was %s", orNoState(step.LegalFrom))
		}
		withdrawn := AuditEntry{DeliveryID: report, ProjectID: rec.ProjectID, ItemID: rec.ItemID, IssueNumber: rec.IssueNumber, Repo: rec.Repo,
			Actor: e.opts.AppLogin, ActorKind: policy.ActorApp.String(), FromState: over, ToState: a.To,
			Verdict: VerdictWithdrawn, Rule: "provisional", Reason: "provisional revert withdrawn: " + why}
		st.Audit = &withdrawn // (the write's own report is no step: the withdrawal is what is told)
		zerolog.Ctx(ctx).Info().Int("issue", w.it.Number).Str("over", over).Str("wrote", a.To).Str("why", why).
			Msg("withdrew a provisional revert; the board is brought to the true outcome")
	} else {
		w.reverted = w.reverted || w.refused.To == over
	}
	if err := e.commit(ctx, w, st); err != nil {
		return err
	}
	e.observeProvisional(confirmed)
	return nil
}

// provisionalJudged reports whether the report a provisional revert set back is no longer
// waiting (judged, or ignored).
func (w *walk) provisionalJudged(rec Record) bool {
	return !slices.ContainsFunc(w.pending, func(o Observation) bool { return o.DeliveryID == rec.ProvisionalFor })
}

// provisionalNeverLanded clears the journal of a provisional revert the board never showed:
// the report it was for is judged, everything is, and the board shows the history's value.
func (e *Enforcer) provisionalNeverLanded(ctx context.Context, w *walk) error {
	if w.rec.Provisional == "" || !w.provisionalJudged(w.rec) {
		return nil
	}
	rec := w.rec
	rec.forgetProvisional()
	return e.commit(ctx, w, Step{Record: rec})
}
