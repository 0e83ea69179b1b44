package enforce

import (
	"context"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/marker"
	"github.com/ralph-gate/ralph-gate/policy"
	"github.com/ralph-gate/ralph-gate/store"
)

// CommentFinder is implemented by a Board that can look for a comment the app wrote on an issue
// or pull request (by node id) whose body contains a text. Enforcement uses it only to settle a
// comment whose posting was interrupted, so that a crash never leads to a second comment.
type CommentFinder interface {
	FindComment(ctx context.Context, subjectID, contains string) (c Comment, found bool, err error)
}

// journal is the audit log read back: a decision's entry is the proof that it was taken.
type journal interface {
	QueryAudit(ctx context.Context, f store.AuditFilter) ([]store.AuditEntry, error)
}

// journaled reports whether the store can tell a retried job what was already decided.
func (s *Service) journaled() bool {
	_, ok := s.store.(journal)
	return ok
}

// resume looks for the decision a previous attempt of this very delivery recorded (the job is
// retried after a crash, a failed GitHub call or a lost River completion). When there is one,
// the change is not decided again: a revert is completed (the value is set back only if the
// board still shows the refused value) and explained (explain is idempotent per violation), an
// allowed move re-runs its automation (idempotent: it compares before writing). done is false
// when no attempt decided anything yet.
func (s *Service) resume(ctx context.Context, b Board, rec store.Item, ch Change, kind policy.ActorKind) (Result, bool, error) {
	j, ok := s.store.(journal)
	if !ok || ch.DeliveryID == "" {
		return Result{}, false, nil
	}
	entries, err := j.QueryAudit(ctx, store.AuditFilter{ItemID: ch.ItemID, Limit: 50})
	if err != nil {
		return Result{}, true, fmt.Errorf("read the decisions of item %s: %w", ch.ItemID, err)
	}
	var e *store.AuditEntry
	for i := range entries {
		if entries[i].DeliveryID == ch.DeliveryID && entries[i].Cause == "" {
			e = &entries[i]
		}
	}
	if e == nil {
		return Result{}, false, nil
	}
	log := zerolog.Ctx(ctx)
	switch e.Verdict {
	case store.VerdictReverted:
		it, err := b.Item(ctx, ch.ItemID)
		if err != nil {
			return Result{}, true, fmt.Errorf("read item %s: %w", ch.ItemID, err)
		}
		if it.State == e.ToState && rec.LastLegalState == e.FromState && rec.RejectedState == e.ToState {
			if err := b.SetState(ctx, it, e.FromState); err != nil {
				return Result{}, true, fmt.Errorf("revert item %s to %q: %w", it.ID, e.FromState, err)
			}
			log.Info().Str("from", e.FromState).Str("to", e.ToState).Msg("completed an interrupted revert")
		}
		if !it.IsDraft() {
			pc := policy.Change{From: e.FromState, To: e.ToState, Actor: ch.Actor, ActorKind: kind, LockHolder: rec.LockHolder}
			dec := s.machine.Decide(pc)
			dec.Verdict, dec.Rule, dec.Reason = policy.Revert, policy.Rule(e.Rule), e.Reason
			if err := s.explain(ctx, b, it, ch, kind, e.FromState, dec, pc); err != nil {
				return Result{}, true, fmt.Errorf("explain the revert of item %s: %w", it.ID, err)
			}
		}
		return Result{Outcome: OutcomeReverted, Reason: e.Reason, RevertedTo: e.FromState}, true, nil
	case store.VerdictAllowed:
		it, err := b.Item(ctx, ch.ItemID)
		if err != nil {
			return Result{}, true, fmt.Errorf("read item %s: %w", ch.ItemID, err)
		}
		if it.State == ch.To && rec.LastLegalState == ch.To {
			if err := s.automate(ctx, b, it, ch.To, fmt.Sprintf("#%d moved by %s", it.Number, ch.Actor)); err != nil {
				return Result{}, true, err
			}
		}
		return Result{Outcome: OutcomeAllowed, Reason: e.Reason}, true, nil
	}
	return Result{Outcome: OutcomeIgnored, Reason: "already decided: " + e.Reason}, true, nil
}

// settlePending resolves a violation comment recorded as about to be posted (NodeID ""): when
// GitHub has it, the record gets its ids; when not, the record stays pending and the caller
// posts it.
func (s *Service) settlePending(ctx context.Context, b Board, it Item, prev store.ViolationComment) (store.ViolationComment, error) {
	f, ok := b.(CommentFinder)
	if !ok {
		return prev, nil
	}
	markers, _ := marker.ParseTransitions(prev.Body)
	if len(markers) == 0 {
		return prev, nil
	}
	// The newest marker identifies the comment: it is unique to one refused move.
	needle := markers[len(markers)-1].String()
	c, found, err := f.FindComment(ctx, it.ContentID, needle)
	if err != nil {
		return prev, fmt.Errorf("look for an interrupted violation comment: %w", err)
	}
	if !found {
		return prev, nil
	}
	prev.NodeID, prev.CommentID = c.ID, c.DatabaseID
	if err := s.store.PutViolationComment(ctx, it.Repo, it.Number, prev); err != nil {
		return prev, fmt.Errorf("record the violation comment: %w", err)
	}
	zerolog.Ctx(ctx).Info().Str("comment", c.ID).Msg("found an interrupted violation comment on GitHub")
	return prev, nil
}

// waitingSince is when a change started waiting for a predecessor that has not arrived: when
// it was received, or when this process started if that was later. After a crash the queued
// changes of one item are recovered together and may run in any order; each gets the full
// reorder window again, so the earlier one is not judged out of order.
func (s *Service) waitingSince(ch Change) time.Time {
	if ch.ReceivedAt.After(s.started) {
		return ch.ReceivedAt
	}
	return s.started
}
