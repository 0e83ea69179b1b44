package handlers

import (
	"context"
	"fmt"

	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/payload"
)

// Issues takes in issue closes and reopens (lifecycle sync).
type Issues struct {
	Scope Scope
	Queue Enqueuer
	// History records the event as a report of its issue before GitHub is answered
	// (enforce.Enforcer.ObserveEvent); nil: not recorded.
	History EventRecorder
}

// EventRecorder records a close or a reopen at intake (enforce.Enforcer.ObserveEvent).
type EventRecorder interface {
	ObserveEvent(ctx context.Context, ev enforce.Lifecycle) error
}

// Handles implements githubapp.EventHandler.
func (h *Issues) Handles() []string { return []string{EventIssues} }

// Handle implements githubapp.EventHandler.
func (h *Issues) Handle(ctx context.Context, _, deliveryID string, data []byte) error {
	ev, err := payload.Issues(data)
	if err != nil {
		return err
	}
	logger := zerolog.Ctx(ctx).With().Str(LogKeyDelivery, deliveryID).Str(LogKeyOrg, ev.Owner).
		Str(LogKeyActor, ev.Sender).Int("issue", ev.Number).Logger()
	var kind string
	switch ev.Action {
	case payload.ActionClosed:
		kind = enforce.LifecycleIssueClosed
	case payload.ActionReopened:
		kind = enforce.LifecycleIssueReopened
	default:
		logger.Debug().Str("action", ev.Action).Msg("ignored: only closes and reopens move the workflow")
		return nil
	}
	if ev.Sender == h.Scope.AppLogin {
		logger.Debug().Msg("ignored: our own write")
		return nil
	}
	lc := enforce.Lifecycle{
		DeliveryID: deliveryID, InstallationID: ev.InstallationID, Kind: kind,
		Owner: ev.Owner, Repo: ev.Repo, Number: ev.Number,
		StateReason: ev.StateReason, Actor: ev.Sender, At: ev.At,
	}
	if h.History != nil {
		if err := h.History.ObserveEvent(logger.WithContext(ctx), lc); err != nil {
			return fmt.Errorf("record lifecycle: %w", err)
		}
	}
	if err := h.Queue.EnqueueLifecycle(logger.WithContext(ctx), lc); err != nil {
		return fmt.Errorf("enqueue lifecycle: %w", err)
	}
	logger.Debug().Str("kind", kind).Msg("lifecycle queued")
	return nil
}
