package handlers

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/go-github/v89/github"
	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/enforce"
)

// PullRequest takes in merged pull requests (lifecycle sync of the issues they close).
type PullRequest struct {
	Scope Scope
	Queue Enqueuer
}

// Handles implements githubapp.EventHandler.
func (h *PullRequest) Handles() []string { return []string{EventPullRequest} }

// Handle implements githubapp.EventHandler.
func (h *PullRequest) Handle(ctx context.Context, _, deliveryID string, payload []byte) error {
	var ev github.PullRequestEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	logger := zerolog.Ctx(ctx).With().Str(LogKeyDelivery, deliveryID).Str(LogKeyOrg, ev.GetRepo().GetOwner().GetLogin()).
		Str(LogKeyActor, ev.GetSender().GetLogin()).Int("pull_request", ev.GetNumber()).Logger()
	if ev.GetAction() != "closed" || !ev.GetPullRequest().GetMerged() {
		logger.Debug().Str("action", ev.GetAction()).Msg("ignored: only merges move the workflow")
		return nil
	}
	if ev.GetRepo() == nil {
		return fmt.Errorf("%w: no repository", ErrMalformed)
	}
	number := ev.GetNumber()
	if number == 0 {
		number = ev.GetPullRequest().GetNumber()
	}
	lc := enforce.Lifecycle{
		DeliveryID: deliveryID, InstallationID: ev.GetInstallation().GetID(), Kind: enforce.LifecyclePRMerged,
		Owner: ev.GetRepo().GetOwner().GetLogin(), Repo: ev.GetRepo().GetName(), Number: number,
		Actor: ev.GetSender().GetLogin(), At: ev.GetPullRequest().GetMergedAt().Time,
	}
	if err := h.Queue.EnqueueLifecycle(logger.WithContext(ctx), lc); err != nil {
		return fmt.Errorf("enqueue lifecycle: %w", err)
	}
	logger.Debug().Msg("merge sync queued")
	return nil
}
