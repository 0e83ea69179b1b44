package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/go-github/v89/github"
	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/enforce"
)

// ProjectsV2Item takes in projects_v2_item events.
type ProjectsV2Item struct {
	Scope Scope
	Queue Enqueuer
	Now   func() time.Time
}

// Handles implements githubapp.EventHandler.
func (h *ProjectsV2Item) Handles() []string { return []string{EventProjectsV2Item} }

// singleSelectValue is the from/to shape of a single-select field change.
type singleSelectValue struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// Handle implements githubapp.EventHandler.
func (h *ProjectsV2Item) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	var ev github.ProjectV2ItemEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	item := ev.GetProjectV2Item()
	if item == nil || item.GetNodeID() == "" {
		return fmt.Errorf("%w: no projects_v2_item.node_id", ErrMalformed)
	}
	logger := zerolog.Ctx(ctx).With().
		Str(LogKeyDelivery, deliveryID).
		Str(LogKeyOrg, ev.GetOrg().GetLogin()).
		Str(LogKeyItem, item.GetNodeID()).
		Str(LogKeyActor, ev.GetSender().GetLogin()).
		Logger()
	ctx = logger.WithContext(ctx)

	if ev.GetAction() != "edited" {
		logger.Debug().Str("action", ev.GetAction()).Msg("ignored: only edits change the workflow field")
		return nil
	}
	fv := ev.GetChanges().GetFieldValue()
	if fv == nil {
		logger.Debug().Msg("ignored: not a field value change")
		return nil
	}
	if fv.GetFieldName() != h.Scope.Field {
		logger.Debug().Str("field", fv.GetFieldName()).Msg("ignored: not the workflow field")
		return nil
	}
	owner, number := ev.GetOrg().GetLogin(), int(fv.GetProjectNumber())
	logger = logger.With().Int(LogKeyProject, number).Logger()
	ctx = logger.WithContext(ctx)
	if !h.Scope.enforced(owner, number) {
		logger.Debug().Msg("ignored: project is not enforced")
		return nil
	}
	if ev.GetSender().GetLogin() == h.Scope.AppLogin {
		logger.Debug().Msg("ignored: our own write")
		return nil
	}
	from, fromKnown, err := decodeOption(fv.From)
	if err != nil {
		return err
	}
	to, _, err := decodeOption(fv.To)
	if err != nil {
		return err
	}
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	ch := enforce.Change{
		DeliveryID:     deliveryID,
		InstallationID: ev.GetInstallation().GetID(),
		ItemID:         item.GetNodeID(),
		ProjectID:      item.GetProjectNodeID(),
		ProjectNumber:  number,
		Owner:          owner,
		ContentType:    contentType(item),
		FromKnown:      fromKnown,
		From:           from,
		To:             to,
		Actor:          ev.GetSender().GetLogin(),
		At:             item.GetUpdatedAt().Time,
		ReceivedAt:     now(),
	}
	if ch.At.IsZero() {
		ch.At = ch.ReceivedAt
	}
	if err := h.Queue.EnqueueChange(ctx, ch); err != nil {
		return fmt.Errorf("enqueue change: %w", err)
	}
	logger.Debug().Str("from", from).Str("to", to).Msg("change queued")
	return nil
}

// decodeOption reads a from/to value: absent means unknown, null means no value.
func decodeOption(raw json.RawMessage) (name string, known bool, err error) {
	if len(raw) == 0 {
		return "", false, nil
	}
	if string(raw) == "null" {
		return "", true, nil
	}
	var v singleSelectValue
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", false, fmt.Errorf("%w: field value: %v", ErrMalformed, err)
	}
	return v.Name, true, nil
}

func contentType(item *github.ProjectV2Item) string {
	if ct := item.GetContentType(); ct != nil {
		return string(*ct)
	}
	return ""
}
