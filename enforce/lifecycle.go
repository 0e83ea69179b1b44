package enforce

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/policy"
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

// eventTarget is the state a lifecycle event moves an item to: for a close or a reopen it is
// known when the event comes; a merge's depends on the item's legal state when it is judged
// (In Progress → In Review, In Review → Done), "" before.
func (a *Automation) eventTarget(kind, stateReason string) string {
	switch kind {
	case LifecycleIssueClosed:
		if stateReason == "" || strings.EqualFold(stateReason, "completed") {
			return a.opts.States.Done
		}
		return a.opts.States.Canceled
	case LifecycleIssueReopened:
		return a.opts.States.Reopened
	}
	return ""
}

// lifecycleTarget is where an item whose legal state is legal goes for the event (to: its
// eventTarget); ok false means it stays.
func (a *Automation) lifecycleTarget(m *policy.Machine, kind, to, legal string) (string, bool) {
	if kind == LifecyclePRMerged {
		switch legal {
		case a.opts.States.InProgress:
			to = a.opts.States.InReview
		case a.opts.States.InReview:
			to = a.opts.States.Done
		}
	}
	return to, to != "" && to != legal && m.IsState(to)
}

// ProcessLifecycle takes a lifecycle event into the history of each item of the issues it
// concerns, as a report of its actor's move at its time (lifecyclemoves.go), and walks them:
// the event is judged in its place among the card's changes. The reports are recorded all at
// once, the first time; a retry of the job (it waits for their proof) finds them in the store
// and asks GitHub nothing more.
func (e *Enforcer) ProcessLifecycle(ctx context.Context, b Board, ev Lifecycle) (Result, error) {
	a := e.auto
	if !a.machineAt(ev.Owner, ev.At).Automation().LifecycleSync {
		return Result{Verdict: VerdictIgnored, Reason: "lifecycle sync is off"}, nil
	}
	var reports []Observation
	if ev.DeliveryID != "" {
		var err error
		if reports, err = e.store().EventReports(ctx, ev.DeliveryID); err != nil {
			return Result{}, fmt.Errorf("load the reports of event %s: %w", ev.DeliveryID, err)
		}
	}
	archived := 0
	if len(reports) == 0 {
		var gone Result
		var err error
		reports, archived, gone, err = e.eventReports(ctx, b, ev)
		if err != nil || gone.Verdict != "" {
			return gone, err
		}
		if err := e.store().RecordEvent(ctx, ev.DeliveryID, reports); err != nil {
			return Result{}, fmt.Errorf("record event %s: %w", ev.DeliveryID, err)
		}
	}
	var results []Result
	for _, o := range reports {
		ch := Change{DeliveryID: o.DeliveryID, InstallationID: ev.InstallationID, ItemID: o.ItemID, Owner: ev.Owner,
			ContentType: ContentIssue, To: o.To, Actor: o.Actor, At: o.At, Lifecycle: o.Lifecycle, Cause: o.Reason}
		ictx := zerolog.Ctx(ctx).With().Str("item", o.ItemID).Logger().WithContext(ctx)
		if _, err := e.Observe(ictx, ch); err != nil { // on the proof's waiting list
			return Result{}, err
		}
		res, err := e.ProcessChange(ictx, b, ch)
		if err != nil {
			return Result{}, err
		}
		results = append(results, res)
	}
	return lifecycleResult(results, archived), nil
}

// eventReports reads the items of the issues an event concerns and makes its report of each
// enforced one; gone is the result when there is nothing to report, ever (a pull request that
// no longer exists).
func (e *Enforcer) eventReports(ctx context.Context, b Board, ev Lifecycle) (reports []Observation, archived int, gone Result, err error) {
	a := e.auto
	issues := []IssueRef{{Owner: ev.Owner, Repo: ev.Repo, Number: ev.Number}}
	if ev.Kind == LifecyclePRMerged {
		issues, err = b.ClosingIssues(ctx, ev.Owner, ev.Repo, ev.Number)
		if errors.Is(err, ErrNotFound) {
			r := a.gone(ctx, ev, fmt.Sprintf("pull request %s/%s#%d", ev.Owner, ev.Repo, ev.Number))
			return nil, 0, r, e.store().RecordEvent(ctx, ev.DeliveryID, nil)
		} else if err != nil {
			return nil, 0, Result{}, err
		}
	}
	now := e.now()
	for _, ref := range issues {
		items, err := b.IssueItems(ctx, ref.Owner, ref.Repo, ref.Number)
		if errors.Is(err, ErrNotFound) {
			a.gone(ctx, ev, fmt.Sprintf("issue %s/%s#%d", ref.Owner, ref.Repo, ref.Number))
			continue
		} else if err != nil {
			return nil, 0, Result{}, err
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
			at := ev.At
			if at.IsZero() {
				at = now
			}
			reports = append(reports, Observation{DeliveryID: eventDelivery(ev.DeliveryID, it.ID), ItemID: it.ID,
				To: a.eventTarget(ev.Kind, ev.StateReason), Actor: ev.Actor, At: at, ReceivedAt: now, Lifecycle: ev.Kind,
				Reason: ev.cause()})
		}
	}
	return reports, archived, Result{}, nil
}

// cause says what the event was, in words (the audit's cause of the move it makes).
func (ev Lifecycle) cause() string {
	if ev.Kind == LifecyclePRMerged {
		return fmt.Sprintf("pull request %s/%s#%d merged by %s", ev.Owner, ev.Repo, ev.Number, ev.Actor)
	}
	why := fmt.Sprintf("%s by %s", strings.ReplaceAll(ev.Kind, "_", " "), ev.Actor)
	if ev.StateReason != "" {
		why += " (" + ev.StateReason + ")"
	}
	return why
}

// ObserveEvent records a close or a reopen at intake, before GitHub is answered, as a report of
// its issue (issueKey) waiting until the event's job has recorded it for each of the issue's
// items: a step of one of them made after it waits for it (a redelivery sweep's proof says the
// event arrived, not that its job has read the items yet). A merge's issues are known only from
// GitHub: its job records them, and the close GitHub makes of each issue is recorded here.
func (e *Enforcer) ObserveEvent(ctx context.Context, ev Lifecycle) error {
	if ev.Kind == LifecyclePRMerged || ev.DeliveryID == "" {
		return nil
	}
	now := e.now()
	at := ev.At
	if at.IsZero() {
		at = now
	}
	_, err := e.store().RecordObservation(ctx, Observation{DeliveryID: ev.DeliveryID, ItemID: issueKey(ev.Owner+"/"+ev.Repo, ev.Number),
		Actor: ev.Actor, At: at, ReceivedAt: now, Lifecycle: ev.Kind, Reason: ev.cause()})
	if err != nil {
		return fmt.Errorf("record event %s: %w", ev.DeliveryID, err)
	}
	return nil
}

// issueKey names an issue (repo: owner/name) where the store keeps items: the reports of an
// event not yet recorded for the issue's items are kept under it.
func issueKey(repo string, number int) string { return fmt.Sprintf("issue:%s#%d", repo, number) }

// eventDelivery names a lifecycle event's report of one item (an issue may be on several
// projects, a merge close several issues); eventOf takes the event's delivery back.
func eventDelivery(delivery, itemID string) string { return delivery + "#" + itemID }

func eventOf(reportID string) string {
	d, _, _ := strings.Cut(reportID, "#")
	return d
}

// lifecycleResult is what a lifecycle event did to its items: it waits while one waits.
func lifecycleResult(results []Result, archived int) Result {
	moved, wait := 0, Result{}
	for _, r := range results {
		switch {
		case r.Verdict == VerdictWait && (wait.Verdict == "" || r.RetryAfter < wait.RetryAfter):
			wait = r
		case r.Verdict == VerdictAllowed:
			moved++
		}
	}
	switch {
	case wait.Verdict != "":
		return wait
	case moved > 0:
		return Result{Verdict: VerdictAllowed, Reason: fmt.Sprintf("%d item(s) moved", moved)}
	case archived > 0:
		return Result{Verdict: VerdictIgnored, Reason: fmt.Sprintf("nothing to move (%d archived item(s) left as they are)", archived)}
	case len(results) > 0:
		return results[0]
	}
	return Result{Verdict: VerdictIgnored, Reason: "nothing to move"}
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
