package enforce

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/policy"
	"github.com/ralph-gate/ralph-gate/store"
)

// Redeliveries is what enforcement needs of the redelivery sweeper: to ask for the failed
// deliveries at once when an item's history has a gap, and to learn what the newest complete
// sweep proves (policy.SweepProof).
type Redeliveries interface {
	// RequestSweep asks for a sweep of failed deliveries, soon; requests arriving while one
	// is under way are coalesced into the next.
	RequestSweep(ctx context.Context)
	// SweepProof reports the newest complete sweep.
	SweepProof(ctx context.Context) (policy.SweepProof, error)
}

// maxStepsPerRun bounds one walk over an item's history (a flood of reports is finished by
// the job's next run).
const maxStepsPerRun = 200

// ProcessChange enforces one reported change: it records the report, then walks the item's
// history (processItem). Errors are infrastructure failures (retry); an illegal move is a
// Result, not an error.
func (s *Service) ProcessChange(ctx context.Context, b Board, ch Change) (Result, error) {
	kind := s.actorKind(ch)
	if kind == policy.ActorApp {
		return Result{Outcome: OutcomeIgnored, Reason: "our own write"}, nil
	}
	if !ch.Drift {
		if err := s.Observe(ctx, ch); err != nil {
			return Result{}, err
		}
	}
	return s.processItem(ctx, b, ch.ItemID, ch.DeliveryID)
}

// Observe records a reported change of an item before GitHub is answered, so that a
// delivery GitHub shows as successful is always known to the item's history (a sweep relies
// on it to prove that nothing is missing). Recording the same delivery twice is harmless.
//
// The app's own writes are recorded too (no job runs for them): a write the app made but did
// not record, because it was interrupted, is then known as the app's when its item is next
// walked, rather than taken for an unknown author's drift.
func (s *Service) Observe(ctx context.Context, ch Change) error {
	if ch.Drift || ch.ItemID == "" || ch.DeliveryID == "" {
		return nil
	}
	received := ch.ReceivedAt
	if received.IsZero() {
		received = s.now()
	}
	at := ch.At
	if at.IsZero() {
		at = received
	}
	if _, err := s.store.RecordObservation(ctx, store.Observation{DeliveryID: ch.DeliveryID, ItemID: ch.ItemID,
		FromKnown: ch.FromKnown, From: ch.From, To: ch.To, Actor: ch.Actor, At: at, ReceivedAt: received}); err != nil {
		return fmt.Errorf("record change %s: %w", ch.DeliveryID, err)
	}
	return nil
}

// walk is one run over an item's history: the record, the board as read, and what the run
// did, so the caller can say what became of the change it was asked about.
type walk struct {
	rec      store.Item
	found    bool
	it       Item
	pending  []store.Observation
	delivery string // the report the run was started for ("" for the reconciler)
	res      Result // what became of it
	decided  bool
	reverted bool
	// adoptedAt is set when this run adopted the board's value: reports without a previous
	// value up to then are part of the adoption.
	adoptedAt time.Time
}

// processItem walks an item's reported changes in the order of its history (policy.Sequence
// decides each step) and carries each step out: judge, write a revert, explain, automate.
func (s *Service) processItem(ctx context.Context, b Board, itemID, delivery string) (Result, error) {
	unlock, err := s.lockItem(ctx, itemID)
	if err != nil {
		return Result{}, err
	}
	defer unlock()
	w := &walk{delivery: delivery}
	w.rec, err = s.store.GetItem(ctx, itemID)
	w.found = err == nil
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return Result{}, fmt.Errorf("load item %s: %w", itemID, err)
	}
	if !w.found {
		w.rec = store.Item{ItemID: itemID}
	}
	if w.pending, err = s.store.PendingObservations(ctx, itemID); err != nil {
		return Result{}, fmt.Errorf("load reports of item %s: %w", itemID, err)
	}
	proof := policy.SweepProof{}
	if s.opts.Redeliveries != nil {
		if proof, err = s.opts.Redeliveries.SweepProof(ctx); err != nil {
			return Result{}, fmt.Errorf("read the redelivery sweep's proof: %w", err)
		}
	}
	read := false // the board is read when a step needs it
	for step := 0; step < maxStepsPerRun; step++ {
		board := policy.BoardValue{Unknown: !read, State: w.it.State, UpdatedAt: w.it.StateUpdatedAt}
		a := policy.Sequence(policy.SequenceInput{
			History: s.history(w), Pending: s.toPolicy(w.pending), Board: board,
			Sweep: proof, Now: s.now(), Window: s.opts.ReorderWindow, Hold: s.opts.GapHold,
		})
		if board.Unknown && (a.Kind == policy.ActRead || a.Kind == policy.ActJudge || a.Kind == policy.ActJudgeUnobserved) {
			// Judging reads the gates' inputs from the item; the rest compares with the board.
			if w.it, err = b.Item(ctx, itemID); err != nil {
				return Result{}, fmt.Errorf("read item %s: %w", itemID, err)
			}
			w.rec.IssueNumber, w.rec.Repo, w.rec.ProjectID = w.it.Number, w.it.Repo, w.it.ProjectID
			read = true
			if a.Kind == policy.ActRead {
				continue
			}
		}
		switch a.Kind {
		case policy.ActWait:
			return s.hold(ctx, w, a)
		case policy.ActDone:
			return s.finish(ctx, b, w)
		}
		if err := s.apply(ctx, b, w, a); errors.Is(err, errGroupUnsettled) {
			// The gate needs a group member's state at the time of the move: its history up
			// to then is judged by its own job in a moment.
			return s.hold(ctx, w, policy.Action{Kind: policy.ActWait, Until: s.now().Add(250 * time.Millisecond),
				Why: err.Error(), GapSince: w.rec.GapSince})
		} else if err != nil {
			return Result{}, err
		}
	}
	return Result{Outcome: OutcomeWait, Reason: "a long history: continued in the next run", RetryAfter: 10 * time.Millisecond}, nil
}

func (s *Service) history(w *walk) policy.History {
	return policy.History{Known: w.found, Legal: w.rec.LastLegalState, Observed: w.rec.ObservedState,
		ObservedAt: w.rec.ObservedAt, GapSince: w.rec.GapSince, RevertPending: w.rec.RevertPending}
}

func (s *Service) toPolicy(os []store.Observation) []policy.Observation {
	out := make([]policy.Observation, len(os))
	for i, o := range os {
		out[i] = policy.Observation{Delivery: o.DeliveryID, FromKnown: o.FromKnown, From: o.From, To: o.To,
			Actor: o.Actor, At: o.At, Received: o.ReceivedAt, Own: o.Actor == s.opts.AppLogin && o.Actor != ""}
	}
	return out
}

// apply carries out one action that moves the walk forward.
func (s *Service) apply(ctx context.Context, b Board, w *walk, a policy.Action) error {
	log := zerolog.Ctx(ctx)
	switch a.Kind {
	case policy.ActAdopt:
		rec := w.rec
		rec.LastLegalState, rec.ObservedState, rec.ObservedAt, rec.LegalAt = a.To, a.To, a.At, a.At
		st := store.Step{Item: rec}
		fromBoard := len(w.pending) == 0 || !w.pending[0].FromKnown
		if len(w.pending) == 0 {
			// Nothing to judge against: the current value is adopted as legal (first install).
			e := s.auditEntry(rec, store.Observation{To: a.To, Actor: DriftActor}, "unknown", "", store.VerdictAdopted, "", a.Why)
			st.Audit = &e
		}
		if err := s.commit(ctx, w, st); err != nil {
			return err
		}
		if fromBoard {
			w.adoptedAt = a.At
		}
		return nil
	case policy.ActJudge:
		o := w.take(a.Obs.Delivery)
		return s.judge(ctx, b, w, o, s.actorKind(Change{Actor: o.Actor}))
	case policy.ActJudgeUnobserved:
		o := store.Observation{DeliveryID: "unobserved:" + w.rec.ItemID + ":" + strconv.FormatInt(a.At.UnixNano(), 36) + ":" + a.To,
			ItemID: w.rec.ItemID, FromKnown: true, From: a.From, To: a.To, Actor: DriftActor, At: a.At, ReceivedAt: s.now()}
		log.Info().Str("from", a.From).Str("to", a.To).Str("why", a.Why).Msg("judging a change no webhook reported")
		return s.judge(ctx, b, w, o, driftKind)
	case policy.ActIgnore:
		o := w.take(a.Obs.Delivery)
		verdict, why, outcome := store.VerdictIgnored, a.Why, OutcomeIgnored
		if !w.adoptedAt.IsZero() && !o.FromKnown && !o.At.After(w.adoptedAt) {
			// Reported without a previous value on first sight: its value is what was adopted.
			verdict, why, outcome = store.VerdictAdopted, "first sight without a previous value: current value adopted as legal", OutcomeAllowed
		}
		o.Status, o.JudgedAt, o.Verdict, o.Reason = store.ObservationIgnored, s.now(), verdict, why
		rec := w.rec
		rec.GapSince = a.GapSince
		e := s.auditEntry(rec, o, s.actors.Classify(o.Actor).String(), o.From, verdict, "", why)
		if err := s.commit(ctx, w, store.Step{Item: rec, Observation: &o, Audit: &e}); err != nil {
			return err
		}
		if o.DeliveryID == w.delivery {
			w.res, w.decided = Result{Outcome: outcome, Reason: why}, true
			if outcome == OutcomeAllowed {
				w.res.Reason = "adopted"
			}
		}
		return nil
	case policy.ActRevert:
		if w.rec.RevertPending != a.To {
			// Recorded before it is written: afterwards the board showing a.To is our write.
			rec := w.rec
			rec.RevertPending = a.To
			if err := s.commit(ctx, w, store.Step{Item: rec}); err != nil {
				return err
			}
		}
		if err := b.SetState(ctx, w.it, a.To); err != nil {
			return fmt.Errorf("revert item %s to %q: %w", w.it.ID, a.To, err)
		}
		log.Info().Str("from", w.it.State).Str("to", a.To).Msg("reverted an illegal move")
		w.it.State, w.reverted = a.To, true
		rec := w.rec
		rec.ObservedState, rec.RejectedState, rec.RevertPending = a.To, "", ""
		return s.commit(ctx, w, store.Step{Item: rec})
	case policy.ActSync:
		rec := w.rec
		legalBefore := rec.LastLegalState
		if rec.LastLegalState != a.To {
			// An automated move the app made but did not record: legal, by the app (the lock
			// holder goes as when automation is recorded directly).
			if !s.machine.IsLock(a.To) {
				rec.LockHolder, rec.LockSince = "", time.Time{}
			}
			rec.LastLegalState = a.To
		}
		rec.ObservedState, rec.RejectedState, rec.RevertPending = a.To, "", ""
		if a.Obs.At.After(rec.ObservedAt) {
			rec.ObservedAt = a.Obs.At
		}
		st := store.Step{Item: rec}
		if a.Obs.Delivery != "" {
			o := w.take(a.Obs.Delivery)
			o.Status, o.JudgedAt, o.Verdict, o.Reason = store.ObservationJudged, s.now(), store.VerdictAutomated, a.Why
			o.LegalFrom, o.ActorKind = legalBefore, policy.ActorApp.String()
			e := s.auditEntry(rec, o, policy.ActorApp.String(), o.From, store.VerdictAutomated, "", a.Why)
			st.Observation, st.Audit = &o, &e
		}
		return s.commit(ctx, w, st)
	}
	return fmt.Errorf("sequencer action %s is not handled", a.Kind)
}

// judge decides one step of the item's history with policy, from the last legal state and
// with the step's own actor, and commits it with its report.
func (s *Service) judge(ctx context.Context, b Board, w *walk, o store.Observation, kind policy.ActorKind) error {
	rec := w.rec
	pc := policy.Change{From: rec.LastLegalState, To: o.To, Actor: o.Actor, ActorKind: kind, LockHolder: rec.LockHolder}
	var dec policy.Decision
	if o.To == rec.LastLegalState {
		dec = policy.Decision{Verdict: policy.Allow, Rule: policy.RuleLegal, Reason: "back to the last legal state"}
	} else {
		dec = s.machine.Decide(pc)
		if dec.Verdict == policy.Allow && dec.Rule != policy.RuleBypass {
			// The table allows it: now the gates, with the inputs they need read only now.
			full, err := s.gateInputs(ctx, b, w.it, pc, o.At)
			if err != nil {
				return err
			}
			dec = s.machine.Decide(full)
			pc = full
		}
	}
	o.Status, o.JudgedAt, o.ActorKind, o.LegalFrom = store.ObservationJudged, s.now(), kind.String(), rec.LastLegalState
	o.Rule, o.Reason = string(dec.Rule), dec.Reason
	rec.ObservedState, rec.GapSince, rec.RevertPending = o.To, time.Time{}, ""
	if o.At.After(rec.ObservedAt) {
		rec.ObservedAt = o.At
	}
	verdict := store.VerdictAllowed
	if dec.Verdict == policy.Allow {
		from := rec.LastLegalState
		rec.LastLegalState, rec.RejectedState = o.To, ""
		if o.At.After(rec.LegalAt) {
			rec.LegalAt = o.At
		}
		switch {
		case s.machine.IsLock(o.To) && from != o.To && o.Actor != DriftActor:
			// The holder is whoever took the lock, wherever the report of it came in the order.
			rec.LockHolder, rec.LockSince = o.Actor, o.At
		case s.machine.IsLock(o.To) && from != o.To:
			rec.LockHolder, rec.LockSince = "", time.Time{} // taken by an unknown actor
		case !s.machine.IsLock(o.To):
			rec.LockHolder, rec.LockSince = "", time.Time{}
		}
		if o.To != from {
			rec.AutomateState = o.To
		}
	} else {
		verdict = store.VerdictReverted
		rec.RejectedState = o.To
		o.Recovery = "ask a human"
		if r := s.machine.RefusalFor(pc, dec); r != nil && r.Recovery != "" {
			o.Recovery = r.Recovery
		}
		// A draft cannot be commented on: its revert is silent.
		o.Explained = w.it.IsDraft()
	}
	o.Verdict = verdict
	e := s.auditEntry(rec, o, kind.String(), o.LegalFrom, verdict, dec.Rule, dec.Reason)
	if err := s.commit(ctx, w, store.Step{Item: rec, Observation: &o, Audit: &e}); err != nil {
		return err
	}
	zerolog.Ctx(ctx).Debug().Str("from", o.LegalFrom).Str("to", o.To).Str("actor", o.Actor).Str("verdict", string(verdict)).
		Str("rule", string(dec.Rule)).Msg("judged a step")
	if o.DeliveryID == w.delivery || (w.delivery == "" && o.Actor == DriftActor) {
		// The report this run is for; for the reconciler, the drift it found.
		w.res, w.decided = Result{Outcome: OutcomeAllowed, Reason: dec.Reason}, true
		if verdict == store.VerdictReverted {
			w.res = Result{Outcome: OutcomeReverted, Reason: dec.Reason, RevertedTo: rec.LastLegalState}
		}
	}
	return nil
}

// hold keeps the item's reports until a.Until, asking for a sweep when the sequencer says so.
func (s *Service) hold(ctx context.Context, w *walk, a policy.Action) (Result, error) {
	if w.found && !w.rec.GapSince.Equal(a.GapSince) {
		rec := w.rec
		rec.GapSince = a.GapSince
		if err := s.commit(ctx, w, store.Step{Item: rec}); err != nil {
			return Result{}, err
		}
	}
	if a.Sweep && s.opts.Redeliveries != nil {
		s.opts.Redeliveries.RequestSweep(ctx)
	}
	zerolog.Ctx(ctx).Debug().Str("why", a.Why).Time("until", a.Until).Bool("sweep", a.Sweep).Msg("holding the item's reports")
	// The job waits even when its own report is judged: what is left (a revert, an
	// explanation, a report of our own write) may have no other job to finish it.
	wait := max(a.Until.Sub(s.now()), 10*time.Millisecond)
	return Result{Outcome: OutcomeWait, Reason: a.Why, RetryAfter: wait}, nil
}

// finish explains every refused step not explained yet, then runs the automation of a legal
// state that has not had it.
func (s *Service) finish(ctx context.Context, b Board, w *walk) (Result, error) {
	if w.found {
		unexplained, err := s.store.Unexplained(ctx, w.rec.ItemID)
		if err != nil {
			return Result{}, fmt.Errorf("load refused steps of item %s: %w", w.rec.ItemID, err)
		}
		for _, o := range unexplained {
			if err := s.explain(ctx, b, w.it, o, w.rec.LastLegalState); err != nil {
				return Result{}, fmt.Errorf("explain the revert of item %s: %w", w.it.ID, err)
			}
			if err := s.store.MarkExplained(ctx, o.DeliveryID); err != nil {
				return Result{}, err
			}
		}
		if auto := w.rec.AutomateState; auto != "" {
			if auto == w.rec.LastLegalState && w.it.State == auto {
				if err := s.automate(ctx, b, w.it, auto, fmt.Sprintf("#%d moved to %s", w.it.Number, auto)); err != nil {
					return Result{}, err
				}
			}
			rec := w.rec
			rec.AutomateState = ""
			if err := s.commit(ctx, w, store.Step{Item: rec}); err != nil {
				return Result{}, err
			}
		}
	}
	if w.decided {
		if w.res.Outcome == OutcomeReverted && !w.reverted {
			// Refused, but a later legal change moved the item on: nothing to set back.
			w.res = Result{Outcome: OutcomeSuperseded, Reason: w.res.Reason}
		}
		return w.res, nil
	}
	if w.delivery != "" {
		// Judged by an earlier run (a duplicate delivery, or a retry after a crash).
		if o, err := s.store.GetObservation(ctx, w.delivery); err == nil && o.Status != store.ObservationPending {
			switch o.Verdict {
			case store.VerdictReverted:
				return Result{Outcome: OutcomeReverted, Reason: o.Reason, RevertedTo: o.LegalFrom}, nil
			case store.VerdictAllowed:
				return Result{Outcome: OutcomeAllowed, Reason: o.Reason}, nil
			}
			return Result{Outcome: OutcomeIgnored, Reason: "already decided: " + o.Reason}, nil
		}
	}
	return Result{Outcome: OutcomeIgnored, Reason: "in sync"}, nil
}

// commit writes one step and keeps the walk's record current.
func (s *Service) commit(ctx context.Context, w *walk, st store.Step) error {
	st.ExpectedVersion = w.rec.Version
	if !w.found {
		st.ExpectedVersion = 0
	}
	ok, err := s.store.CommitStep(ctx, st)
	if err != nil {
		return fmt.Errorf("save item %s: %w", st.Item.ItemID, err)
	}
	if !ok {
		return fmt.Errorf("save item %s: %w", st.Item.ItemID, ErrConcurrentUpdate)
	}
	st.Item.Version = st.ExpectedVersion + 1
	w.rec, w.found = st.Item, true
	return nil
}

// take removes a report from the walk's pending list and returns it.
func (w *walk) take(delivery string) store.Observation {
	for i, o := range w.pending {
		if o.DeliveryID == delivery {
			w.pending = append(w.pending[:i], w.pending[i+1:]...)
			return o
		}
	}
	return store.Observation{DeliveryID: delivery}
}

func (s *Service) auditEntry(rec store.Item, o store.Observation, kind, from string, v store.Verdict, rule policy.Rule, reason string) store.AuditEntry {
	delivery := o.DeliveryID
	return store.AuditEntry{
		At: s.now(), DeliveryID: delivery, ProjectID: rec.ProjectID, ItemID: rec.ItemID,
		IssueNumber: rec.IssueNumber, Repo: rec.Repo, Actor: o.Actor, ActorKind: kind,
		FromState: from, ToState: o.To, Verdict: v, Rule: string(rule), Reason: reason,
	}
}
