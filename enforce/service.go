package enforce

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/policy"
	"github.com/ralph-gate/ralph-gate/store"
)

// Options tune enforcement timing.
type Options struct {
	// ReorderWindow is how long a change whose predecessor has not been seen yet waits for it
	// (webhooks may arrive out of order) before it is judged on its own.
	ReorderWindow time.Duration
	// CoalesceWindow is how long one violation comment keeps absorbing new violations.
	CoalesceWindow time.Duration
	// AppLogin is the app's own "<slug>[bot]" login: its changes are never checked.
	AppLogin string
	// Enforced says whether an organization project is enforced (lifecycle sync looks at every
	// project an issue is on). Nil means all.
	Enforced func(owner string, number int) bool
	// States names the states lifecycle sync uses.
	States LifecycleStates
	// Observer, when set, is told about automation moves (metrics).
	Observer Observer
}

// LifecycleStates names the states lifecycle sync moves items to.
type LifecycleStates struct {
	Done, Canceled, Reopened, InProgress, InReview string
}

// DefaultLifecycleStates are the default workflow's names.
func DefaultLifecycleStates() LifecycleStates {
	return LifecycleStates{Done: "Done", Canceled: "Canceled", Reopened: "Backlog", InProgress: "In Progress", InReview: "In Review"}
}

// DefaultOptions are the defaults config applies.
func DefaultOptions() Options {
	return Options{ReorderWindow: 5 * time.Second, CoalesceWindow: 10 * time.Minute}
}

// Service enforces the workflow. It is safe for concurrent use; changes of one item are
// serialized.
type Service struct {
	machine *policy.Machine
	actors  policy.Actors
	store   Store
	now     Clock
	opts    Options
	items   *keyedMutex
	started time.Time // a change queued before a restart waits afresh for its predecessor
}

// New builds a Service.
func New(m *policy.Machine, actors policy.Actors, st Store, now Clock, opts Options) *Service {
	if now == nil {
		now = time.Now
	}
	actors.App = opts.AppLogin
	if opts.States == (LifecycleStates{}) {
		opts.States = DefaultLifecycleStates()
	}
	return &Service{machine: m, actors: actors, store: st, now: now, opts: opts, items: newKeyedMutex(), started: now()}
}

// Machine returns the workflow machine the service enforces.
func (s *Service) Machine() *policy.Machine { return s.machine }

// ProcessChange enforces one observed change: it decides with policy, reverts and explains
// an illegal move, and records the decision. Errors are infrastructure failures (retry);
// an illegal move is a Result, not an error.
func (s *Service) ProcessChange(ctx context.Context, b Board, ch Change) (Result, error) {
	unlock, err := s.lockItem(ctx, ch.ItemID)
	if err != nil {
		return Result{}, err
	}
	defer unlock()

	log := zerolog.Ctx(ctx)
	kind := s.actorKind(ch)
	if kind == policy.ActorApp {
		return Result{Outcome: OutcomeIgnored, Reason: "our own write"}, nil
	}

	rec, err := s.store.GetItem(ctx, ch.ItemID)
	firstSight := errors.Is(err, store.ErrNotFound)
	if err != nil && !firstSight {
		return Result{}, fmt.Errorf("load item %s: %w", ch.ItemID, err)
	}
	if firstSight {
		// Never seen: the value it had before this change is the best baseline we have.
		rec = store.Item{ItemID: ch.ItemID, ProjectID: ch.ProjectID, LastLegalState: ch.From}
	} else if res, done, err := s.resume(ctx, b, rec, ch, kind); done {
		// A previous attempt decided this change (then crashed or failed): finish its effects.
		return res, err
	}

	if !rec.LegalAt.IsZero() && ch.At.Before(rec.LegalAt) {
		return s.ignore(ctx, rec, ch, kind, "stale: an equally new or newer legal value is already recorded")
	}

	chained := !ch.FromKnown || firstSight || ch.From == rec.LastLegalState ||
		(rec.RejectedState != "" && ch.From == rec.RejectedState)
	if !chained && s.now().Sub(s.waitingSince(ch)) < s.opts.ReorderWindow {
		log.Debug().Str("from", ch.From).Str("last_legal", rec.LastLegalState).Msg("waiting for an earlier change")
		return Result{Outcome: OutcomeWait, Reason: "an earlier change has not arrived yet", RetryAfter: time.Second}, nil
	}

	it, err := b.Item(ctx, ch.ItemID)
	if err != nil {
		return Result{}, fmt.Errorf("read item %s: %w", ch.ItemID, err)
	}
	rec.IssueNumber, rec.Repo, rec.ProjectID = it.Number, it.Repo, it.ProjectID
	if firstSight && !ch.FromKnown {
		// Never seen and no previous value reported: nothing to judge against, so the current
		// value is adopted as legal (as on first install) rather than guessed at.
		rec.LastLegalState = it.State
		if err := s.save(ctx, rec); err != nil {
			return Result{}, err
		}
		s.auditMove(ctx, rec, ch, kind, "", store.VerdictAdopted, "", "first sight without a previous value: current value adopted as legal")
		return Result{Outcome: OutcomeAllowed, Reason: "adopted"}, nil
	}

	dec := s.decide(rec, ch, kind)
	if dec.Verdict == policy.Allow && dec.Rule != policy.RuleBypass && ch.To != rec.LastLegalState {
		// The table allows it: now the gates, with the inputs they need read only now.
		pc, err := s.gateInputs(ctx, b, it, s.change(rec, ch, kind))
		if err != nil {
			return Result{}, err
		}
		dec = s.machine.Decide(pc)
	}
	if it.State != ch.To {
		// The board moved on since this change. A legal step still advances the last legal
		// value (the next change starts from it); an illegal one is remembered so the change
		// that left it chains, but nothing is written over the newer value.
		if dec.Verdict == policy.Allow {
			return s.accept(ctx, rec, ch, kind, dec, "superseded legal step")
		}
		rec.RejectedState = ch.To
		if err := s.save(ctx, rec); err != nil {
			return Result{}, err
		}
		s.audit(ctx, rec, ch, kind, store.VerdictIgnored, dec.Rule, "superseded before enforcement: "+dec.Reason)
		return Result{Outcome: OutcomeSuperseded, Reason: dec.Reason}, nil
	}
	if dec.Verdict == policy.Allow {
		res, err := s.accept(ctx, rec, ch, kind, dec, "")
		if err != nil {
			return res, err
		}
		if err := s.automate(ctx, b, it, ch.To, fmt.Sprintf("#%d moved by %s", it.Number, ch.Actor)); err != nil {
			return res, err
		}
		return res, nil
	}
	return s.revert(ctx, b, rec, it, ch, kind, dec)
}

// decide asks policy about the move from the last legal value to the new one.
func (s *Service) decide(rec store.Item, ch Change, kind policy.ActorKind) policy.Decision {
	if ch.To == rec.LastLegalState {
		return policy.Decision{Verdict: policy.Allow, Rule: policy.RuleLegal, Reason: "back to the last legal state"}
	}
	return s.machine.Decide(s.change(rec, ch, kind))
}

func (s *Service) change(rec store.Item, ch Change, kind policy.ActorKind) policy.Change {
	return policy.Change{From: rec.LastLegalState, To: ch.To, Actor: ch.Actor, ActorKind: kind, LockHolder: rec.LockHolder}
}

func (s *Service) accept(ctx context.Context, rec store.Item, ch Change, kind policy.ActorKind, dec policy.Decision, note string) (Result, error) {
	from := rec.LastLegalState
	rec.LastLegalState, rec.RejectedState = ch.To, ""
	if ch.At.After(rec.LegalAt) {
		rec.LegalAt = ch.At
	}
	switch {
	case s.machine.IsLock(ch.To) && from != ch.To:
		rec.LockHolder, rec.LockSince = lockOf(ch)
	case s.machine.IsLock(ch.To) && rec.LockHolder == "" && !ch.Drift:
		// The reconciler adopted this lock without knowing who took it; the webhook says.
		rec.LockHolder, rec.LockSince = ch.Actor, ch.At
	case !s.machine.IsLock(ch.To):
		rec.LockHolder, rec.LockSince = "", time.Time{}
	}
	if err := s.save(ctx, rec); err != nil {
		return Result{}, err
	}
	verdict, reason := store.VerdictAllowed, dec.Reason
	if note != "" {
		reason = note + ": " + reason
	}
	s.auditMove(ctx, rec, ch, kind, from, verdict, dec.Rule, reason)
	return Result{Outcome: OutcomeAllowed, Reason: reason}, nil
}

func (s *Service) revert(ctx context.Context, b Board, rec store.Item, it Item, ch Change, kind policy.ActorKind, dec policy.Decision) (Result, error) {
	target := rec.LastLegalState
	// The decision is recorded before it is carried out: if the process dies or GitHub fails
	// after this point, the retried job finds the audit entry and only completes the revert
	// and the comment (see resume), so nothing is decided, reverted or explained twice.
	rec.RejectedState = ch.To
	if err := s.save(ctx, rec); err != nil {
		return Result{}, err
	}
	if err := s.auditMove(ctx, rec, ch, kind, target, store.VerdictReverted, dec.Rule, dec.Reason); err != nil && s.journaled() {
		return Result{}, fmt.Errorf("record the revert of item %s: %w", it.ID, err)
	}
	if err := b.SetState(ctx, it, target); err != nil {
		return Result{}, fmt.Errorf("revert item %s to %q: %w", it.ID, target, err)
	}
	zerolog.Ctx(ctx).Info().Str("from", target).Str("to", ch.To).Str("rule", string(dec.Rule)).Msg("reverted an illegal move")
	if !it.IsDraft() {
		if err := s.explain(ctx, b, it, ch, kind, target, dec, s.change(rec, ch, kind)); err != nil {
			// The revert stands; the retried job explains it (resume) without reverting again.
			return Result{}, fmt.Errorf("explain the revert of item %s: %w", it.ID, err)
		}
	}
	return Result{Outcome: OutcomeReverted, Reason: dec.Reason, RevertedTo: target}, nil
}

func (s *Service) ignore(ctx context.Context, rec store.Item, ch Change, kind policy.ActorKind, reason string) (Result, error) {
	s.audit(ctx, rec, ch, kind, store.VerdictIgnored, "", reason)
	return Result{Outcome: OutcomeIgnored, Reason: reason}, nil
}

// save writes the record, refusing to overwrite a concurrent writer's newer version.
func (s *Service) save(ctx context.Context, rec store.Item) error {
	// Version 0 inserts only if absent, so two replicas meeting a new item cannot both win.
	ok, err := s.store.CompareAndSetItem(ctx, rec, rec.Version)
	if err != nil {
		return fmt.Errorf("save item %s: %w", rec.ItemID, err)
	}
	if !ok {
		return fmt.Errorf("save item %s: %w", rec.ItemID, ErrConcurrentUpdate)
	}
	return nil
}

// ErrConcurrentUpdate means another worker changed the item first; the change is retried.
var ErrConcurrentUpdate = errors.New("item changed concurrently")

func (s *Service) audit(ctx context.Context, rec store.Item, ch Change, kind policy.ActorKind, v store.Verdict, rule policy.Rule, reason string) {
	s.auditMove(ctx, rec, ch, kind, ch.From, v, rule, reason)
}

func (s *Service) auditMove(ctx context.Context, rec store.Item, ch Change, kind policy.ActorKind, from string, v store.Verdict, rule policy.Rule, reason string) error {
	_, err := s.store.AppendAudit(ctx, store.AuditEntry{
		At: s.now(), DeliveryID: ch.DeliveryID, ProjectID: rec.ProjectID, ItemID: rec.ItemID,
		IssueNumber: rec.IssueNumber, Repo: rec.Repo, Actor: ch.Actor, ActorKind: kind.String(),
		FromState: from, ToState: ch.To, Verdict: v, Rule: string(rule), Reason: reason,
	})
	if err != nil {
		// Logged loudly; the revert path also fails on it, since its audit line is its journal.
		zerolog.Ctx(ctx).Error().Err(err).Msg("could not record the audit entry")
	}
	return err
}
