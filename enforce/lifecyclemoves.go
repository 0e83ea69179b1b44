package enforce

import (
	"context"
	"fmt"
	"strings"

	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/policy"
)

// A close, a reopen or a merge is a move of the card by whoever made it (docs/AUTOMATION.md):
// closing an issue is the closer's move to Done (Canceled when not planned), reopening is the
// reopener's move to Backlog, a merged pull request is the merger's move of the issues it
// closes. Each is judged as a board move of that actor from the item's legal state (the table,
// roles, locks, the gates); the close of an issue In Progress as the merge path too (mergePath). A refused one is undone where GitHub can undo it — the issue is
// reopened, or closed again — and explained on the issue with a Recovery; the card stays where
// the workflow left it. A merge cannot be undone: its refused move is not made, and explained.

// judgeLifecycle decides the lifecycle event's move of cur to `to` as its actor's; refused
// reports that it was refused (then undone, explained and audited here).
func (a *Automation) judgeLifecycle(ctx context.Context, b Board, ev Lifecycle, cur Item, to string) (refused bool, err error) {
	kind := a.actors.Classify(ev.Actor)
	rec, found, err := a.items.load(ctx, cur.ID)
	if err != nil {
		return false, err
	}
	from := cur.State
	if found && rec.known() {
		from = rec.LastLegalState
	}
	pc := policy.Change{From: from, To: to, Actor: ev.Actor, ActorKind: kind, LockHolder: rec.LockHolder}
	dec := a.machine.Decide(pc)
	if dec.Verdict == policy.Allow && dec.Rule != policy.RuleBypass && to != from {
		full, err := a.gateInputs(ctx, gateQuery{board: b, it: cur, change: pc})
		if err != nil {
			return false, err
		}
		pc, dec = full, a.machine.Decide(full)
	}
	if dec.Verdict == policy.Allow || a.mergePath(ev, pc) {
		return false, nil
	}
	recovery := "ask a human"
	if r := a.machine.RefusalFor(pc, dec); r != nil && r.Recovery != "" {
		recovery = r.Recovery
	}
	undone, err := a.undoLifecycle(ctx, b, ev, cur, from)
	if err != nil {
		return true, err
	}
	if err := a.explainLifecycle(ctx, b, ev, cur, lifecycleRefusal{from: from, to: to, kind: kind, reason: dec.Reason, recovery: recovery, undone: undone}); err != nil {
		return true, err
	}
	a.audit(ctx, AuditEntry{At: a.now(), DeliveryID: ev.DeliveryID, ProjectID: cur.ProjectID, ItemID: cur.ID, IssueNumber: cur.Number,
		Repo: cur.Repo, Actor: ev.Actor, ActorKind: kind.String(), FromState: from, ToState: to, Verdict: VerdictReverted,
		Rule: string(dec.Rule), Reason: dec.Reason + " (ralph-gate " + undone + ")", Cause: ev.Kind})
	moveLine{Issue: cur.Number, From: from, To: to, Actor: ev.Actor, Verdict: VerdictReverted}.on(zerolog.Ctx(ctx).Info()).
		Str("rule", string(dec.Rule)).Str("kind", ev.Kind).Msg("refused a lifecycle move")
	return true, nil
}

// mergePath reports whether a close of an issue In Progress is what merging its pull request
// does — In Progress → In Review → Done, both moves open to the closer: a merge closes the issues
// its pull request closes, and the issue's close may be handled before the merge's move.
func (a *Automation) mergePath(ev Lifecycle, pc policy.Change) bool {
	st := a.opts.States
	if ev.Kind != LifecycleIssueClosed || pc.From != st.InProgress || pc.To != st.Done {
		return false
	}
	first, second := pc, pc
	first.To = st.InReview
	second.From = st.InReview
	return a.machine.Decide(first).Verdict == policy.Allow && a.machine.Decide(second).Verdict == policy.Allow
}

// undoLifecycle undoes a refused close or reopen (unless the issue is back as it was already:
// a retry, or someone undid it), and says what it did.
func (a *Automation) undoLifecycle(ctx context.Context, b Board, ev Lifecycle, cur Item, from string) (string, error) {
	switch ev.Kind {
	case LifecycleIssueClosed:
		if !cur.Open {
			if err := b.SetIssueOpen(ctx, cur.ContentID, true, ""); err != nil {
				return "", fmt.Errorf("reopen #%d: %w", cur.Number, err)
			}
		}
		return "reopened the issue", nil
	case LifecycleIssueReopened:
		if cur.Open {
			reason := "completed"
			if from == a.opts.States.Canceled {
				reason = "not_planned"
			}
			if err := b.SetIssueOpen(ctx, cur.ContentID, false, reason); err != nil {
				return "", fmt.Errorf("close #%d again: %w", cur.Number, err)
			}
		}
		return "closed the issue again", nil
	}
	return "did not move the card", nil
}

// lifecycleRefusal is what the explanation of a refused lifecycle move says.
type lifecycleRefusal struct {
	from, to         string
	kind             policy.ActorKind
	reason, recovery string
	undone           string
}

// lifecycleMarker opens the explanation of a refused lifecycle move, once per delivery.
const lifecycleMarker = "<!-- ralph-gate:lifecycle "

// explainLifecycle comments on the issue, once per event: a retry finds the comment by its
// marker before posting.
func (a *Automation) explainLifecycle(ctx context.Context, b Board, ev Lifecycle, cur Item, r lifecycleRefusal) error {
	if cur.ContentID == "" {
		return nil
	}
	mark := lifecycleMarker + ev.DeliveryID + " -->"
	if _, found, err := b.FindComment(ctx, cur.ContentID, mark); err != nil {
		return fmt.Errorf("look for the explanation on #%d: %w", cur.Number, err)
	} else if found {
		return nil
	}
	what := map[string]string{LifecycleIssueClosed: "closed this issue", LifecycleIssueReopened: "reopened this issue",
		LifecyclePRMerged: "merged a pull request that closes this issue"}[ev.Kind]
	var body strings.Builder
	fmt.Fprintf(&body, "%s\n**ralph-gate %s.** `%s` (%s) %s, which moves it from **%s** to **%s**: %s. It stays in **%s**.\n\nRecovery: %s\n",
		mark, r.undone, inlineCode(ev.Actor), r.kind, what, orNoState(r.from), orNoState(r.to), r.reason, orNoState(r.from), r.recovery)
	if _, err := b.AddComment(ctx, cur.ContentID, body.String()); err != nil {
		return fmt.Errorf("explain on #%d: %w", cur.Number, err)
	}
	return nil
}
