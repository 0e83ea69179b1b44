package enforce

import (
	"context"
	"errors"
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
func (a *Automation) lifecycleTarget(ev Lifecycle, cur string) (string, bool) {
	var to string
	switch ev.Kind {
	case LifecycleIssueClosed:
		to = a.opts.States.Canceled
		if ev.StateReason == "" || strings.EqualFold(ev.StateReason, "completed") {
			to = a.opts.States.Done
		}
	case LifecycleIssueReopened:
		to = a.opts.States.Reopened
	case LifecyclePRMerged:
		switch cur {
		case a.opts.States.InProgress:
			to = a.opts.States.InReview
		case a.opts.States.InReview:
			to = a.opts.States.Done
		}
	}
	return to, to != "" && to != cur && a.machine.IsState(to)
}

// ProcessLifecycle keeps the Workflow State in step with issue and pull request lifecycles.
func (a *Automation) ProcessLifecycle(ctx context.Context, b Board, ev Lifecycle) (Result, error) {
	if !a.machine.Automation().LifecycleSync {
		return Result{Verdict: VerdictIgnored, Reason: "lifecycle sync is off"}, nil
	}
	issues := []IssueRef{{Owner: ev.Owner, Repo: ev.Repo, Number: ev.Number}}
	if ev.Kind == LifecyclePRMerged {
		var err error
		issues, err = b.ClosingIssues(ctx, ev.Owner, ev.Repo, ev.Number)
		if errors.Is(err, ErrNotFound) {
			return a.gone(ctx, ev, fmt.Sprintf("pull request %s/%s#%d", ev.Owner, ev.Repo, ev.Number)), nil
		} else if err != nil {
			return Result{}, err
		}
	}
	moved, archived := 0, 0
	for _, ref := range issues {
		items, err := b.IssueItems(ctx, ref.Owner, ref.Repo, ref.Number)
		if errors.Is(err, ErrNotFound) {
			a.gone(ctx, ev, fmt.Sprintf("issue %s/%s#%d", ref.Owner, ref.Repo, ref.Number))
			continue
		} else if err != nil {
			return Result{}, err
		}
		for _, it := range items {
			if !a.enforced(it) {
				continue
			}
			if it.Archived {
				// An archived card stays as it was archived: the app never moves one.
				archived++
				zerolog.Ctx(ctx).Info().Str("item", it.ID).Int("issue", it.Number).Str("kind", ev.Kind).Msg("lifecycle sync skips an archived item")
				continue
			}
			ok, err := a.syncItem(ctx, b, ev, it)
			if errors.Is(err, ErrNotFound) {
				a.gone(ctx, ev, fmt.Sprintf("item %s of issue %s/%s#%d", it.ID, ref.Owner, ref.Repo, ref.Number))
				continue
			}
			if err != nil {
				return Result{}, err
			}
			if ok {
				moved++
			}
		}
	}
	if moved == 0 {
		if archived > 0 {
			return Result{Verdict: VerdictIgnored, Reason: fmt.Sprintf("nothing to move (%d archived item(s) left as they are)", archived)}, nil
		}
		return Result{Verdict: VerdictIgnored, Reason: "nothing to move"}, nil
	}
	return Result{Verdict: VerdictAllowed, Reason: fmt.Sprintf("%d item(s) moved", moved)}, nil
}

// gone audits a lifecycle event whose issue, pull request or item no longer exists on GitHub:
// nothing to move, ever, so the job ends rather than being retried.
func (a *Automation) gone(ctx context.Context, ev Lifecycle, what string) Result {
	why := what + " no longer exists on GitHub"
	zerolog.Ctx(ctx).Warn().Str("kind", ev.Kind).Str("actor", ev.Actor).Str("why", why).Msg("lifecycle event dropped")
	a.audit(ctx, AuditEntry{At: a.now(), DeliveryID: ev.DeliveryID, Repo: ev.Owner + "/" + ev.Repo, IssueNumber: ev.Number,
		Actor: ev.Actor, Verdict: VerdictIgnored, Rule: "lifecycle", Reason: why, Cause: ev.Kind})
	return Result{Verdict: VerdictIgnored, Reason: why}
}

// syncItem moves one item under its lock, re-reading it first: a merge sync that runs after the
// issue was closed finds it Done and leaves it there, and an item archived since it was listed
// is left as it is.
func (a *Automation) syncItem(ctx context.Context, b Board, ev Lifecycle, it Item) (bool, error) {
	unlock, err := a.items.lock(ctx, it.ID)
	if err != nil {
		return false, err
	}
	defer unlock()
	cur, err := b.Item(ctx, it.ID)
	if err != nil {
		return false, fmt.Errorf("read item %s: %w", it.ID, err)
	}
	if cur.Archived {
		zerolog.Ctx(ctx).Info().Str("item", cur.ID).Int("issue", cur.Number).Str("kind", ev.Kind).Msg("lifecycle sync skips an archived item")
		return false, nil
	}
	to, ok := a.lifecycleTarget(ev, cur.State)
	if !ok {
		return false, nil
	}
	if refused, err := a.judgeLifecycle(ctx, b, ev, cur, to); err != nil || refused {
		return false, err
	}
	if err := b.SetState(ctx, cur, to); err != nil {
		return false, fmt.Errorf("move #%d to %s: %w", cur.Number, to, err)
	}
	why := fmt.Sprintf("%s by %s", strings.ReplaceAll(ev.Kind, "_", " "), ev.Actor)
	if ev.Kind == LifecyclePRMerged {
		why = fmt.Sprintf("pull request %s/%s#%d merged by %s", ev.Owner, ev.Repo, ev.Number, ev.Actor)
	} else if ev.StateReason != "" {
		why += " (" + ev.StateReason + ")"
	}
	mv := appMove{Item: cur, From: cur.State, To: to, Kind: CauseLifecycle, Why: why}
	if err := a.record(ctx, mv); err != nil {
		return false, err
	}
	a.comment(ctx, b, mv)
	// The move's decision line is record's ("automation moved an item").
	zerolog.Ctx(ctx).Debug().Str("moved_item", cur.ID).Int("issue", cur.Number).Str("to", to).Msg("lifecycle sync")
	moved := cur
	moved.State = to
	if err := a.run(ctx, b, moved, cause{why: why}); err != nil {
		return true, err
	}
	return true, nil
}
