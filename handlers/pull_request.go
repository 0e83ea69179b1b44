package handlers

import (
	"context"
	"fmt"

	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/payload"
)

// PullRequest takes in merged pull requests (lifecycle sync of the issues they close).
type PullRequest struct {
	Scope Scope
	Queue Enqueuer
}

// Handles implements githubapp.EventHandler.
func (h *PullRequest) Handles() []string { return []string{EventPullRequest} }

// Handle implements githubapp.EventHandler.
func (h *PullRequest) Handle(ctx context.Context, _, deliveryID string, data []byte) error {
	ev, err := payload.PullRequest(data)
	if err != nil {
		return err
	}
	logger := zerolog.Ctx(ctx).With().Str(LogKeyDelivery, deliveryID).Str(LogKeyOrg, ev.Owner).
		Str(LogKeyActor, ev.Sender).Int("pull_request", ev.Number).Logger()
	if ev.Action != payload.ActionClosed || !ev.Merged {
		logger.Debug().Str("action", ev.Action).Msg("ignored: only merges move the workflow")
		return nil
	}
	lc := enforce.Lifecycle{
		DeliveryID: deliveryID, InstallationID: ev.InstallationID, Kind: enforce.LifecyclePRMerged,
		Owner: ev.Owner, Repo: ev.Repo, Number: ev.Number, Actor: ev.Sender, At: ev.MergedAt,
	}
	if err := h.Queue.EnqueueLifecycle(logger.WithContext(ctx), lc); err != nil {
		return fmt.Errorf("enqueue lifecycle: %w", err)
	}
	logger.Debug().Msg("merge sync queued")
	return nil
}
