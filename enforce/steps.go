package enforce

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/policy"
)

// apply carries out one action of the sequencer that moves the walk forward.
func (e *Enforcer) apply(ctx context.Context, w *walk, a policy.Action) error {
	switch a.Kind {
	case policy.ActAdopt:
		return e.adopt(ctx, w, a)
	case policy.ActJudge:
		o := w.take(a.Obs.Delivery)
		if o.Field != "" {
			return e.recordField(ctx, w, o)
		}
		if o.Lifecycle != "" {
			return e.judgeEvent(ctx, w, o)
		}
		kind := e.classify(w.org(), o.Actor, o.At)
		if o.Actor == "" {
			// A payload without a sender: an unknown actor, judged with the least privilege
			// (policy.Actors.Classify), and named so in the audit and the comment.
			o.Actor = NoSender
		}
		_, err := e.judge(ctx, w, o, kind)
		return err
	case policy.ActJudgeUnobserved:
		o := Observation{DeliveryID: unobservedPrefix + w.rec.ItemID + ":" + strconv.FormatInt(a.At.UnixNano(), 36) + ":" + a.To,
			ItemID: w.rec.ItemID, FromKnown: true, From: a.From, To: a.To, Actor: DriftActor, At: a.At, ReceivedAt: e.now()}
		o, err := e.judge(ctx, w, o, driftKind)
		if err != nil {
			return err
		}
		// No job logs a decision for it: this line is its decision.
		moveLine{Issue: w.it.Number, From: o.LegalFrom, To: o.To, Actor: o.Actor, Verdict: o.Verdict}.on(zerolog.Ctx(ctx).Info()).
			Str("rule", o.Rule).Str("why", a.Why).Msg("judged a change no webhook reported")
		return nil
	case policy.ActIgnore:
		return e.ignore(ctx, w, a)
	case policy.ActRevert:
		return e.revert(ctx, w, a)
	case policy.ActSync:
		if a.Provisional {
			return e.syncProvisional(ctx, w, a)
		}
		return e.sync(ctx, w, a)
	case policy.ActRaced:
		return e.raced(ctx, w, a)
	}
	return fmt.Errorf("sequencer action %s is not handled", a.Kind)
}

// recordField takes a required field's edit into the item's history: the moves made after it
// are checked against its value (withHistory). An edit older than one the history holds for the
// field changes nothing (its report came late, after a hold gave up on it).
func (e *Enforcer) recordField(ctx context.Context, w *walk, o Observation) error {
	rec := w.rec
	cur, known := rec.Fields[o.Field]
	o.Status, o.JudgedAt, o.Verdict, o.ActorKind = ObservationJudged, e.now(), VerdictRecorded, e.classify(w.org(), o.Actor, o.At).String()
	o.LegalFrom = rec.LastLegalState // (it moves nothing: the legal state before it is the one after)
	o.Reason = fmt.Sprintf("%s set to %s", o.Field, strconv.Quote(o.To))
	if known && o.At.Before(cur.At) {
		o.Reason = fmt.Sprintf("%s: older than the value the history holds (%s)", o.Field, strconv.Quote(cur.Value))
	} else {
		rec.Fields = maps.Clone(rec.Fields)
		if rec.Fields == nil {
			rec.Fields = map[string]FieldValue{}
		}
		rec.Fields[o.Field] = FieldValue{Value: o.To, At: o.At}
	}
	if err := e.commit(ctx, w, Step{Record: rec, Observation: &o}); err != nil {
		return err
	}
	w.settle(o, Result{Verdict: VerdictRecorded, Reason: o.Reason})
	return nil
}

// raced takes in that a write of ours landed over a change made after its guard read the card
// (its report leaves from another value than the one written over): the history goes back to
// before the write (a provisional revert's journal is dropped: the step it set back is judged
// as any), and its report waits for its place among the changes it landed over (Raced),
// a change of the card by the app that moves no legal state. Once every change is judged, the
// walk writes the legal value back, explaining nothing: nobody moved the card there.
func (e *Enforcer) raced(ctx context.Context, w *walk, a policy.Action) error {
	rec := w.rec
	// (A write's At is a time it was not made before: a report dated earlier is not its.)
	raced := []policy.Write{{Over: a.Obs.From, To: a.Obs.To, At: rec.ObservedAt}}
	switch {
	case rec.Provisional != "":
		raced[0].At = rec.ProvisionalAt
		rec.forgetProvisional()
	case rec.RevertPending != "" && a.Obs.Own && a.Obs.To == rec.RevertPending:
		rec.RevertPending = "" // (made: its report is the raced one)
	case a.Write >= 0 && a.Write < len(rec.Writes):
		// Back to before that write: it and the writes of ours after it change the card only.
		wr := rec.Writes[a.Write]
		rec.ObservedState, rec.ObservedAt = wr.Over, wr.At
		raced = slices.Clone(rec.Writes[a.Write:])
		switch {
		case a.Obs.Own:
			raced[0].Over = a.Obs.From // (its report, which waits)
		case a.Obs.To == wr.To:
			raced = raced[1:] // (it changed nothing: GitHub reports nothing of it)
		default:
			raced[0].Over = "" // (over whatever the changes before it left)
		}
	}
	rec.Writes, rec.Raced = nil, append(slices.Clone(rec.Raced), raced...)
	zerolog.Ctx(ctx).Info().Str("report", a.Obs.Delivery).Str("from", a.Obs.From).Str("to", a.Obs.To).
		Msg("our write landed over a change made after its guard read the card; the change is judged first")
	return e.commit(ctx, w, Step{Record: rec})
}

// adopt takes the board's value as the item's legal state (first sight).
func (e *Enforcer) adopt(ctx context.Context, w *walk, a policy.Action) error {
	rec := w.rec
	rec.LastLegalState, rec.ObservedState, rec.ObservedAt, rec.LegalAt = a.To, a.To, a.At, a.At
	rec.Writes = nil
	if w.read && len(w.it.Fields) > 0 {
		// The required fields' values as read: the history's from here on (its edits are
		// reports of their own).
		rec.Fields = map[string]FieldValue{}
		for k, v := range w.it.Fields {
			// (As read now: an edit made before, whose report comes late, is older.)
			rec.Fields[k] = FieldValue{Value: v, At: e.now()}
		}
	}
	st := Step{Record: rec}
	fromBoard := len(w.pending) == 0 || !w.pending[0].FromKnown
	if len(w.pending) == 0 {
		// Nothing to judge against: the current value is adopted as legal (first install).
		e := e.rec.adoption(rec, "", a.Why)
		st.Audit = &e
	}
	if err := e.commit(ctx, w, st); err != nil {
		return err
	}
	if fromBoard {
		w.adoptedAt = a.At
	}
	return nil
}

// ignore drops a report that is no step of the history (a duplicate, a stale report, our own
// write the record already holds), or one that is part of an adoption.
func (e *Enforcer) ignore(ctx context.Context, w *walk, a policy.Action) error {
	o := w.take(a.Obs.Delivery)
	o.Status, o.JudgedAt, o.Verdict, o.Reason = ObservationIgnored, e.now(), VerdictIgnored, a.Why
	res := Result{Verdict: VerdictIgnored, Reason: a.Why}
	if !w.adoptedAt.IsZero() && !o.FromKnown && !o.At.After(w.adoptedAt) {
		// Reported without a previous value on first sight: its value is what was adopted.
		o.Verdict, o.Reason = VerdictAdopted, "first sight without a previous value: current value adopted as legal"
		res = Result{Verdict: VerdictAllowed, Reason: "adopted"}
	}
	o.ActorKind = e.classify(w.org(), o.Actor, o.At).String()
	rec := w.rec
	rec.GapSince = a.GapSince
	if o.Actor == e.opts.AppLogin {
		// The report of a write of ours, leaving from the value it wrote over: as written.
		rec.Writes = slices.Clone(rec.Writes)
		if i := slices.IndexFunc(rec.Writes, func(wr policy.Write) bool { return !wr.Reported && wr.Over == o.From && wr.To == o.To }); i >= 0 {
			rec.Writes[i].Reported = true
		}
	}
	if o.Actor == e.opts.AppLogin && o.To == rec.ObservedState && o.At.After(rec.ObservedAt) {
		// The report of our write the record holds says when GitHub made it: the board's
		// value has been ours since.
		rec.ObservedAt = o.At
	}
	audit := e.rec.step(rec, o, o.From)
	if err := e.commit(ctx, w, Step{Record: rec, Observation: &o, Audit: &audit}); err != nil {
		return err
	}
	if o.DeliveryID == w.delivery {
		w.res, w.decided = res, true
	}
	return nil
}

// revert writes the last legal state back; it is journaled first, so that afterwards the
// board showing it is known as our write.
func (e *Enforcer) revert(ctx context.Context, w *walk, a policy.Action) error {
	if w.rec.RevertPending != a.To || w.rec.Provisional != "" {
		rec := w.rec
		rec.RevertPending = a.To
		// A provisional revert the card does not show (it never landed, or was moved over)
		// is past: this write is the one its report would be mistaken for.
		rec.forgetProvisional()
		if err := e.commit(ctx, w, Step{Record: rec}); err != nil {
			return err
		}
	}
	// Guarded: a move made since the walk read the board (writes wait for their turn) is
	// newer than the refused one, and its report follows it in the history; it is judged
	// first, from a fresh read, instead of being overwritten.
	wroteOver := w.it.State
	if err := setStateIf(ctx, w.board, StateWrite{Item: w.it, From: w.it.State, State: a.To}); errors.Is(err, ErrBoardMoved) {
		zerolog.Ctx(ctx).Info().Int("issue", w.it.Number).Str("item", w.it.ID).Str("from", w.it.State).Str("to", a.To).
			Msg("revert not written: the card was moved since it was read; judging the newer move first")
		rec := w.rec
		rec.RevertPending = ""
		w.read = false
		if err := e.commit(ctx, w, Step{Record: rec}); err != nil {
			return err
		}
		// The newer move's report may have come in meanwhile (reports are recorded at intake).
		pending, err := e.store().PendingObservations(ctx, w.it.ID)
		if err != nil {
			return fmt.Errorf("load reports of item %s: %w", w.it.ID, err)
		}
		w.pending = pending
		return nil
	} else if err != nil {
		return fmt.Errorf("revert item %s to %q: %w", w.it.ID, a.To, err)
	}
	// The actor is the refused step's when this run judged it ("" after a crash between the
	// judgement and the revert: the earlier run's decision line named it).
	var refused Observation
	if w.refused.To == w.it.State {
		refused = w.refused
	}
	ev := zerolog.Ctx(ctx).Info()
	if w.together && refused.DeliveryID != "" {
		// A job's line carries its delivery already; a walk of many items names the move's.
		ev = ev.Str("delivery", refused.DeliveryID)
	}
	switch {
	case w.eventTo != "" && w.eventTo == a.To && refused.DeliveryID == "":
		// Not a revert: the card follows a lifecycle event judged legal (lifecyclemoves.go).
		moveLine{Issue: w.it.Number, From: w.it.State, To: a.To, Actor: e.opts.AppLogin, Verdict: VerdictAutomated}.
			on(ev).Msg("wrote a lifecycle move")
	case refused.DeliveryID == "" && w.rec.RejectedState == "":
		// Nobody's refused value: the legal one put back over a write of ours (raced) or a
		// value the history already judged.
		moveLine{Issue: w.it.Number, From: w.it.State, To: a.To, Actor: e.opts.AppLogin, Verdict: VerdictAutomated}.
			on(ev).Msg("restored the legal value")
	default:
		moveLine{Issue: w.it.Number, From: w.it.State, To: a.To, Actor: refused.Actor, Verdict: VerdictReverted}.
			on(ev).Str("rule", refused.Rule).Msg("reverted an illegal move")
	}
	w.it.State, w.reverted = a.To, true
	rec := w.rec
	rec.Writes = append(slices.Clone(rec.Writes), policy.Write{Over: wroteOver, To: a.To, At: rec.ObservedAt, Sent: e.now()})
	rec.Raced = slices.DeleteFunc(slices.Clone(rec.Raced), func(r policy.Write) bool { return r.To == a.To }) // (its report would be taken for theirs)
	rec.ObservedState, rec.RejectedState, rec.RevertPending = a.To, "", ""
	// GitHub dates our write to the second it was made (as an automated move's, wrote): a
	// report of ours from before it is older than the history.
	if at := e.now().Truncate(time.Second); at.After(rec.ObservedAt) {
		rec.ObservedAt = at
	}
	return e.commit(ctx, w, Step{Record: rec})
}

// sync takes a write of the app's own into the history: one journaled whose completion was not
// recorded (the write is done), or, with a.Raced, one that changes the card only (it landed
// over a newer change, or the history does not hold it: the legal state stays).
func (e *Enforcer) sync(ctx context.Context, w *walk, a policy.Action) error {
	rec := w.rec
	if a.Raced {
		// Our write that landed over a newer change: the board's value, no step.
		rec.ObservedState, rec.RejectedState = a.To, ""
		from := a.Obs.From
		if a.Obs.Delivery == "" {
			from = a.From // (one whose report was taken in before)
		}
		if i := slices.IndexFunc(rec.Raced, func(wr policy.Write) bool { return wr.To == a.To && (wr.Over == "" || wr.Over == from) }); i >= 0 {
			rec.Raced = slices.Delete(slices.Clone(rec.Raced), i, i+1)
		}
		if a.Obs.At.After(rec.ObservedAt) {
			rec.ObservedAt = a.Obs.At
		}
		if a.Obs.Delivery == "" {
			return e.commit(ctx, w, Step{Record: rec})
		}
		o := w.take(a.Obs.Delivery)
		o.Status, o.JudgedAt, o.Verdict, o.Reason = ObservationIgnored, e.now(), VerdictIgnored, a.Why
		o.ActorKind = policy.ActorApp.String()
		audit := e.rec.step(rec, o, o.From)
		return e.commit(ctx, w, Step{Record: rec, Observation: &o, Audit: &audit})
	}
	if a.Obs.Delivery != "" && rec.RevertPending == a.To && a.Obs.FromKnown && a.Obs.From == rec.ObservedState {
		// The report of a write that was journaled before it was made (a revert, or an
		// automated move): the write is done; the legal state is the record's already (a
		// later step may have moved it on since: the walk writes that next).
		rec.ObservedState, rec.RejectedState, rec.RevertPending = a.To, "", ""
		if a.Obs.At.After(rec.ObservedAt) {
			rec.ObservedAt = a.Obs.At
		}
		o := w.take(a.Obs.Delivery)
		o.Status, o.JudgedAt, o.Verdict, o.Reason = ObservationIgnored, e.now(), VerdictIgnored, a.Why
		o.ActorKind = policy.ActorApp.String()
		audit := e.rec.step(rec, o, o.From)
		return e.commit(ctx, w, Step{Record: rec, Observation: &o, Audit: &audit})
	}
	legalBefore := rec.LastLegalState
	if rec.LastLegalState != a.To {
		// The lock holder goes as when automation is recorded directly.
		if !e.machineAt(w.org(), a.Obs.At).IsLock(a.To) {
			rec.LockHolder, rec.LockSince, rec.LockTakenFrom = "", time.Time{}, ""
		}
		rec.LastLegalState = a.To
	}
	rec.ObservedState, rec.RejectedState, rec.RevertPending = a.To, "", ""
	if a.Obs.At.After(rec.ObservedAt) {
		rec.ObservedAt = a.Obs.At
	}
	st := Step{Record: rec}
	if a.Obs.Delivery != "" {
		o := w.take(a.Obs.Delivery)
		o.Status, o.JudgedAt, o.Verdict, o.Reason = ObservationJudged, e.now(), VerdictAutomated, a.Why
		o.LegalFrom, o.ActorKind = legalBefore, policy.ActorApp.String()
		audit := e.rec.step(rec, o, o.From)
		st.Observation, st.Audit = &o, &audit
	}
	return e.commit(ctx, w, st)
}

// judge decides one step of the item's history with policy, from the last legal state and
// with the step's own actor, and commits it with its report; it returns the step as judged.
func (e *Enforcer) judge(ctx context.Context, w *walk, o Observation, kind policy.ActorKind) (Observation, error) {
	rec := w.rec
	pc := policy.Change{From: rec.LastLegalState, To: o.To, Actor: o.Actor, ActorKind: kind, LockHolder: rec.LockHolder, LockTakenFrom: rec.LockTakenFrom}
	dec, pc, err := e.decide(ctx, w, pc, o.At)
	if err != nil {
		return o, err
	}
	o.Status, o.JudgedAt, o.LegalFrom, o.ActorKind = ObservationJudged, e.now(), rec.LastLegalState, kind.String()
	o.Verdict, o.Rule, o.Reason = verdictOf(dec), string(dec.Rule), dec.Reason
	rec.ObservedState, rec.GapSince, rec.RevertPending, rec.Writes = o.To, time.Time{}, "", nil
	if o.At.After(rec.ObservedAt) {
		rec.ObservedAt = o.At
	}
	mode := e.modeAt(w.org(), w.it.ProjectNumber, o.At)
	if o.Verdict == VerdictAllowed {
		accept(&rec, o, dec, mode.Writes())
	} else {
		rec.RejectedState = o.To
		o.Recovery = "ask a human"
		if r := e.machineAt(w.org(), o.At).RefusalFor(pc, dec); r != nil && r.Recovery != "" {
			o.Recovery = r.Recovery
		}
		// A draft cannot be commented on: its revert is silent.
		o.Explained = w.it.IsDraft()
		if !mode.Writes() {
			// Warn, evaluate: the move stands (explained under warn only).
			o.Verdict, o.Explained = VerdictWouldRevert, o.Explained || mode == ModeEvaluate
			stand(&rec, o, e.machineAt(w.org(), o.At).IsLock(o.To))
		}
	}
	audit := e.rec.step(rec, o, o.LegalFrom)
	if err := e.commit(ctx, w, Step{Record: rec, Observation: &o, Audit: &audit}); err != nil {
		return o, err
	}
	moveLine{Issue: w.it.Number, From: o.LegalFrom, To: o.To, Actor: o.Actor, Verdict: o.Verdict}.on(zerolog.Ctx(ctx).Debug()).
		Str("rule", o.Rule).Str("report", o.DeliveryID).Msg("judged a step")
	res := Result{Verdict: VerdictAllowed, Reason: dec.Reason}
	if o.Verdict == VerdictWouldRevert {
		res = Result{Verdict: VerdictWouldRevert, Reason: dec.Reason}
	}
	if o.Verdict == VerdictReverted {
		res = Result{Verdict: VerdictReverted, Reason: dec.Reason, RevertedTo: rec.LastLegalState}
		w.refused = o
	}
	w.settle(o, res)
	w.noteJudged(o, res)
	return o, nil
}

// decide is policy's decision on a step, with the gates' inputs read only when the table
// allows the move (and as they were when it was made).
func (e *Enforcer) decide(ctx context.Context, w *walk, pc policy.Change, at time.Time) (policy.Decision, policy.Change, error) {
	if pc.To == pc.From {
		return policy.Decision{Verdict: policy.Allow, Rule: policy.RuleLegal, Reason: "back to the last legal state"}, pc, nil
	}
	pc = e.withHistory(pc, w, at)
	m := e.machineAt(w.org(), at)
	dec := m.Decide(pc)
	if dec.Verdict != policy.Allow || dec.Rule == policy.RuleBypass {
		return dec, pc, nil
	}
	full, err := e.gateInputs(ctx, gateQuery{board: w.board, it: w.it, change: pc, at: at, m: m})
	if err != nil {
		return dec, pc, err
	}
	return m.Decide(full), full, nil
}

// accept makes an allowed step the item's legal state; the lock follows the decision: whoever
// took it holds it (wherever the report of it came in the order), one who left it releases it.
// automate owes the step's automation (not under warn or evaluate: modes.go).
func accept(rec *Record, o Observation, dec policy.Decision, automate bool) {
	from := rec.LastLegalState
	rec.LastLegalState, rec.RejectedState = o.To, ""
	if o.At.After(rec.LegalAt) {
		rec.LegalAt = o.At
	}
	switch {
	case dec.TakesLock && !unknownAuthor(o.Actor):
		rec.LockHolder, rec.LockSince, rec.LockTakenFrom = o.Actor, o.At, ""
	case dec.TakesLock || dec.ReleasesLock:
		rec.LockHolder, rec.LockSince, rec.LockTakenFrom = "", time.Time{}, "" // taken by an unknown actor, or left
	}
	if o.To != from && automate {
		rec.AutomateState = o.To
	}
}

// unknownAuthor reports whether a step's author is unknown: nobody can hold a lock for it.
func unknownAuthor(actor string) bool { return actor == DriftActor || actor == NoSender }
