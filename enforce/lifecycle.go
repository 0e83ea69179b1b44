package enforce

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// Lifecycle event kinds.
const (
	LifecycleIssueClosed   = "issue_closed"
	LifecycleIssueReopened = "issue_reopened"
	LifecyclePRMerged      = "pull_request_merged"
)

// Lifecycle is an issue closed or reopened, or a pull request merged: the Workflow State of
// the issues concerned follows (this replaces the GitHub Actions the earlier tooling used).
type Lifecycle struct {
	DeliveryID     string
	InstallationID int64
	Kind           string
	Owner, Repo    string // the repository of the issue or pull request
	Number         int
	StateReason    string // for closed issues: completed, not_planned, …
	Actor          string
	At             time.Time
}

// lifecycleTarget is where an item in state cur goes for the event; ok false means stay.
func (s *Service) lifecycleTarget(ev Lifecycle, cur string) (string, bool) {
	var to string
	switch ev.Kind {
	case LifecycleIssueClosed:
		to = s.opts.States.Canceled
		if ev.StateReason == "" || strings.EqualFold(ev.StateReason, "completed") {
			to = s.opts.States.Done
		}
	case LifecycleIssueReopened:
		to = s.opts.States.Reopened
	case LifecyclePRMerged:
		switch cur {
		case s.opts.States.InProgress:
			to = s.opts.States.InReview
		case s.opts.States.InReview:
			to = s.opts.States.Done
		}
	}
	return to, to != "" && to != cur && s.machine.IsState(to)
}

// ProcessLifecycle keeps the Workflow State in step with issue and pull request lifecycles.
func (s *Service) ProcessLifecycle(ctx context.Context, b Board, ev Lifecycle) (Result, error) {
	if !s.machine.Automation().LifecycleSync {
		return Result{Outcome: OutcomeIgnored, Reason: "lifecycle sync is off"}, nil
	}
	issues := []IssueRef{{Owner: ev.Owner, Repo: ev.Repo, Number: ev.Number}}
	if ev.Kind == LifecyclePRMerged {
		var err error
		if issues, err = b.ClosingIssues(ctx, ev.Owner, ev.Repo, ev.Number); err != nil {
			return Result{}, err
		}
	}
	moved := 0
	for _, ref := range issues {
		items, err := b.IssueItems(ctx, ref.Owner, ref.Repo, ref.Number)
		if err != nil {
			return Result{}, err
		}
		for _, it := range items {
			if s.opts.Enforced != nil && !s.opts.Enforced(it.Owner, it.ProjectNumber) {
				continue
			}
			ok, err := s.syncItem(ctx, b, ev, it)
			if err != nil {
				return Result{}, err
			}
			if ok {
				moved++
			}
		}
	}
	if moved == 0 {
		return Result{Outcome: OutcomeIgnored, Reason: "nothing to move"}, nil
	}
	return Result{Outcome: OutcomeAllowed, Reason: fmt.Sprintf("%d item(s) moved", moved)}, nil
}

// syncItem moves one item under its lock, re-reading it first: a merge sync that runs after the
// issue was closed finds it Done and leaves it there.
func (s *Service) syncItem(ctx context.Context, b Board, ev Lifecycle, it Item) (bool, error) {
	unlock, err := s.lockItem(ctx, it.ID)
	if err != nil {
		return false, err
	}
	defer unlock()
	cur, err := b.Item(ctx, it.ID)
	if err != nil {
		return false, err
	}
	to, ok := s.lifecycleTarget(ev, cur.State)
	if !ok {
		return false, nil
	}
	if err := b.SetState(ctx, cur, to); err != nil {
		return false, err
	}
	cause := fmt.Sprintf("%s by %s", strings.ReplaceAll(ev.Kind, "_", " "), ev.Actor)
	if ev.Kind == LifecyclePRMerged {
		cause = fmt.Sprintf("pull request %s/%s#%d merged by %s", ev.Owner, ev.Repo, ev.Number, ev.Actor)
	} else if ev.StateReason != "" {
		cause += " (" + ev.StateReason + ")"
	}
	if err := s.recordAutomation(ctx, cur, cur.State, to, cause); err != nil {
		return false, err
	}
	s.commentAutomation(ctx, b, cur, cur.State, to, cause)
	zerolog.Ctx(ctx).Info().Int("issue", cur.Number).Str("to", to).Msg("lifecycle sync")
	if err := s.automate(ctx, b, cur, to, cause); err != nil {
		return true, err
	}
	return true, nil
}
