package handlers

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/go-github/v89/github"
	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/enforce"
)

// Issues takes in issue closes and reopens (lifecycle sync).
type Issues struct {
	Scope Scope
	Queue Enqueuer
}

// Handles implements githubapp.EventHandler.
func (h *Issues) Handles() []string { return []string{EventIssues} }

// Handle implements githubapp.EventHandler.
func (h *Issues) Handle(ctx context.Context, _, deliveryID string, payload []byte) error {
	var ev github.IssuesEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	logger := zerolog.Ctx(ctx).With().Str(LogKeyDelivery, deliveryID).Str(LogKeyOrg, ev.GetRepo().GetOwner().GetLogin()).
		Str(LogKeyActor, ev.GetSender().GetLogin()).Int("issue", ev.GetIssue().GetNumber()).Logger()
	var kind string
	switch ev.GetAction() {
	case "closed":
		kind = enforce.LifecycleIssueClosed
	case "reopened":
		kind = enforce.LifecycleIssueReopened
	default:
		logger.Debug().Str("action", ev.GetAction()).Msg("ignored: only closes and reopens move the workflow")
		return nil
	}
	if ev.GetIssue() == nil || ev.GetRepo() == nil {
		return fmt.Errorf("%w: no issue or repository", ErrMalformed)
	}
	if ev.GetSender().GetLogin() == h.Scope.AppLogin {
		logger.Debug().Msg("ignored: our own write")
		return nil
	}
	lc := enforce.Lifecycle{
		DeliveryID: deliveryID, InstallationID: ev.GetInstallation().GetID(), Kind: kind,
		Owner: ev.GetRepo().GetOwner().GetLogin(), Repo: ev.GetRepo().GetName(), Number: ev.GetIssue().GetNumber(),
		StateReason: ev.GetIssue().GetStateReason(), Actor: ev.GetSender().GetLogin(),
		At: ev.GetIssue().GetUpdatedAt().Time,
	}
	if err := h.Queue.EnqueueLifecycle(logger.WithContext(ctx), lc); err != nil {
		return fmt.Errorf("enqueue lifecycle: %w", err)
	}
	logger.Debug().Str("kind", kind).Msg("lifecycle queued")
	return nil
}
