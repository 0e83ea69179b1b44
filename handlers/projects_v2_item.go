package handlers

import (
	"context"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/payload"
)

// ProjectsV2Item takes in projects_v2_item events.
type ProjectsV2Item struct {
	Scope Scope
	Queue Enqueuer
	// History records the change in its item's history before GitHub is answered, so that a
	// delivery GitHub lists as successful is known to enforcement (nil: the job records it).
	History Recorder
	Now     func() time.Time
}

// Recorder records a reported change (enforce.Enforcer.Observe).
type Recorder interface {
	Observe(ctx context.Context, ch enforce.Change) error
}

// Handles implements githubapp.EventHandler.
func (h *ProjectsV2Item) Handles() []string { return []string{EventProjectsV2Item} }

// Handle implements githubapp.EventHandler.
func (h *ProjectsV2Item) Handle(ctx context.Context, eventType, deliveryID string, data []byte) error {
	fc, err := payload.ProjectsV2Item(data)
	if err != nil {
		return err
	}
	logger := zerolog.Ctx(ctx).With().
		Str(LogKeyDelivery, deliveryID).
		Str(LogKeyOrg, fc.Owner).
		Str(LogKeyItem, fc.ItemID).
		Str(LogKeyActor, fc.Sender).
		Logger()
	ctx = logger.WithContext(ctx)

	if fc.Ignore != "" {
		logger.Debug().Str("action", fc.Action).Msg("ignored: " + fc.Ignore)
		return nil
	}
	if fc.Field != h.Scope.Field {
		logger.Debug().Str("field", fc.Field).Msg("ignored: not the workflow field")
		return nil
	}
	logger = logger.With().Int(LogKeyProject, fc.ProjectNumber).Logger()
	ctx = logger.WithContext(ctx)
	if !h.Scope.enforced(fc.Owner, fc.ProjectNumber) {
		logger.Debug().Msg("ignored: project is not enforced")
		return nil
	}
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	ch := enforce.Change{
		DeliveryID:     deliveryID,
		InstallationID: fc.InstallationID,
		ItemID:         fc.ItemID,
		ProjectID:      fc.ProjectID,
		ProjectNumber:  fc.ProjectNumber,
		Owner:          fc.Owner,
		ContentType:    fc.ContentType,
		FromKnown:      fc.FromKnown,
		From:           fc.From,
		To:             fc.To,
		Actor:          fc.Sender,
		At:             fc.At,
		ReceivedAt:     now(),
	}
	if ch.At.IsZero() {
		ch.At = ch.ReceivedAt
	}
	if h.History != nil {
		if err := h.History.Observe(ctx, ch); err != nil {
			return fmt.Errorf("record change: %w", err)
		}
	}
	if fc.Sender == h.Scope.AppLogin {
		// Our own write: recorded in the item's history (an interrupted write is known as ours),
		// nothing to enforce.
		logger.Debug().Msg("ignored: our own write")
		return nil
	}
	if err := h.Queue.EnqueueChange(ctx, ch); err != nil {
		return fmt.Errorf("enqueue change: %w", err)
	}
	logger.Debug().Str("from", fc.From).Str("to", fc.To).Msg("change queued")
	return nil
}
