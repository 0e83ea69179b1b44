package enforce

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/marker"
	"github.com/ralph-gate/ralph-gate/policy"
	"github.com/ralph-gate/ralph-gate/store"
)

// automate runs the automation a legal move of it into to triggers: its children follow it
// down the pipeline, and its ancestors converge. visited bounds the walk: no item is moved
// twice by one chain, and depth never exceeds max_cascade_depth.
func (s *Service) automate(ctx context.Context, b Board, it Item, to, cause string) error {
	if it.ContentType != ContentIssue || it.ContentID == "" {
		return nil
	}
	auto := s.machine.Automation()
	visited := map[string]bool{it.ID: true}
	if auto.CascadeChildren && it.SubIssues > 0 && s.machine.PipelineIndex(to) >= 0 {
		if err := s.cascade(ctx, b, it, it.ContentID, it.Number, to, 1, visited, cause); err != nil {
			return fmt.Errorf("cascade to children of #%d: %w", it.Number, err)
		}
	}
	if auto.ConvergeParents && it.ParentID != "" {
		if err := s.convergeUp(ctx, b, it, it.ParentID, visited); err != nil {
			return fmt.Errorf("converge parents of #%d: %w", it.Number, err)
		}
	}
	return nil
}

// relativeItem is a related issue's item on the same project as base.
func relativeItem(base Item, r Relative) Item {
	return Item{ID: r.ItemID, ProjectID: base.ProjectID, ProjectNumber: base.ProjectNumber, Owner: base.Owner,
		ContentType: ContentIssue, ContentID: r.IssueID, Number: r.Number, Repo: r.Repo, Title: r.Title,
		Open: r.Open, State: r.State, SubIssues: r.SubIssues}
}

func (s *Service) cascade(ctx context.Context, b Board, base Item, parentIssueID string, parentNumber int, to string, depth int, visited map[string]bool, cause string) error {
	fam, err := b.Family(ctx, parentIssueID, base.ProjectID)
	if err != nil {
		return err
	}
	byNumber := map[int]Relative{}
	var members []policy.Member
	for _, c := range fam.Children {
		if c.ItemID == "" || visited[c.ItemID] {
			continue
		}
		byNumber[c.Number] = c
		members = append(members, policy.Member{Number: c.Number, Title: c.Title, State: c.State})
	}
	moves, _ := s.machine.PlanCascade(to, members)
	if len(moves) == 0 {
		return nil
	}
	writes := make([]StateWrite, 0, len(moves))
	for _, mv := range moves {
		c := byNumber[mv.Number]
		visited[c.ItemID] = true
		writes = append(writes, StateWrite{Item: relativeItem(base, c), State: mv.To})
	}
	if err := b.SetStates(ctx, writes); err != nil {
		return err
	}
	why := fmt.Sprintf("cascade: parent #%d moved to %s", parentNumber, to)
	if cause != "" {
		why += " (" + cause + ")"
	}
	for _, w := range writes {
		if err := s.recordAutomation(ctx, w.Item, w.Item.State, w.State, why); err != nil {
			return err
		}
		s.commentAutomation(ctx, b, w.Item, w.Item.State, w.State, why)
	}
	if depth >= s.machine.Automation().MaxCascadeDepth {
		return nil
	}
	for _, w := range writes {
		if w.Item.SubIssues > 0 {
			if err := s.cascade(ctx, b, base, w.Item.ContentID, w.Item.Number, w.State, depth+1, visited, cause); err != nil {
				return err
			}
		}
	}
	return nil
}

// convergeUp advances each ancestor whose children have all reached a parent gate.
func (s *Service) convergeUp(ctx context.Context, b Board, base Item, parentIssueID string, visited map[string]bool) error {
	for depth := 0; parentIssueID != "" && depth < s.machine.Automation().MaxCascadeDepth; depth++ {
		fam, err := b.Family(ctx, parentIssueID, base.ProjectID)
		if err != nil {
			return err
		}
		parent := fam.Self
		if parent.ItemID == "" || visited[parent.ItemID] {
			return nil
		}
		var children []policy.Member
		for _, c := range fam.Children {
			if c.ItemID != "" {
				children = append(children, policy.Member{Number: c.Number, Title: c.Title, State: c.State})
			}
		}
		target, ok := s.machine.ConvergenceTarget(parent.State, children)
		if !ok {
			return nil
		}
		pit := relativeItem(base, parent)
		if err := b.SetState(ctx, pit, target); err != nil {
			return err
		}
		visited[parent.ItemID] = true
		why := fmt.Sprintf("convergence: every child of #%d is at %s or later", parent.Number, target)
		if err := s.recordAutomation(ctx, pit, parent.State, target, why); err != nil {
			return err
		}
		s.commentAutomation(ctx, b, pit, parent.State, target, why)
		parentIssueID = ""
		if fam.Parent != nil {
			parentIssueID = fam.Parent.IssueID
		}
	}
	return nil
}

// recordAutomation makes an app move the item's last legal state and audits it. It does not
// take the item's lock (the moving chain may hold an ancestor's, and a child's worker may want
// that one: no lock order is safe), so it retries on a concurrent update instead.
func (s *Service) recordAutomation(ctx context.Context, it Item, from, to, cause string) error {
	now := s.now()
	for attempt := 0; attempt < 5; attempt++ {
		rec, err := s.store.GetItem(ctx, it.ID)
		if errors.Is(err, store.ErrNotFound) {
			rec, err = store.Item{ItemID: it.ID, ProjectID: it.ProjectID}, nil
		}
		if err != nil {
			return fmt.Errorf("load item %s: %w", it.ID, err)
		}
		if rec.Version > 0 {
			pending, err := s.store.PendingObservations(ctx, it.ID)
			if err != nil {
				return fmt.Errorf("load reports of item %s: %w", it.ID, err)
			}
			if len(pending) > 0 || rec.ObservedState != from {
				// The item's history is still being judged (the value moved from is not its
				// record's): our write takes its place in that history through its own report,
				// recorded at intake, when the item's walk reaches it.
				zerolog.Ctx(ctx).Info().Int("issue", it.Number).Str("from", from).Str("to", to).Str("cause", cause).
					Msg("automation moved an item whose history is being judged: recorded when its walk reaches it")
				s.observeAutomation(cause)
				return nil
			}
		}
		rec.IssueNumber, rec.Repo, rec.ProjectID = it.Number, it.Repo, it.ProjectID
		legalFrom := rec.LastLegalState
		// LegalAt stays: it orders changes by GitHub's clock, and ours may be ahead of it.
		rec.LastLegalState, rec.ObservedState, rec.RejectedState = to, to, ""
		if !s.machine.IsLock(to) {
			rec.LockHolder, rec.LockSince = "", time.Time{}
		}
		// The move is a step of the item's history too (what the item's legal state was when
		// is read back from it: historical gate inputs).
		o := appStep(it.ID, from, to, legalFrom, cause, now)
		e := store.AuditEntry{
			At: now, ProjectID: it.ProjectID, ItemID: it.ID, IssueNumber: it.Number, Repo: it.Repo,
			Actor: s.opts.AppLogin, ActorKind: policy.ActorApp.String(), FromState: from, ToState: to,
			Verdict: store.VerdictAutomated, Rule: "automation", Reason: cause, Cause: cause,
		}
		ok, err := s.store.CommitStep(ctx, store.Step{Item: rec, ExpectedVersion: rec.Version, Observation: &o, Audit: &e})
		if err != nil {
			return fmt.Errorf("save item %s: %w", it.ID, err)
		}
		if !ok {
			continue
		}
		zerolog.Ctx(ctx).Info().Int("issue", it.Number).Str("from", from).Str("to", to).Str("cause", cause).Msg("automation moved an item")
		s.observeAutomation(cause)
		return nil
	}
	return fmt.Errorf("record automation on %s: %w", it.ID, ErrConcurrentUpdate)
}

// commentAutomation explains an automated move on the issue when automation.comment_automation
// is on. A failed comment is logged: the move itself stands.
func (s *Service) commentAutomation(ctx context.Context, b Board, it Item, from, to, cause string) {
	if !s.machine.Automation().CommentAutomation || it.ContentID == "" {
		return
	}
	m := marker.Transition{From: from, To: to, At: s.now().UTC().Format(time.RFC3339), Actor: s.opts.AppLogin, Verdict: "automated", Cause: cause}
	body := fmt.Sprintf("%s\nralph-gate moved this from **%s** to **%s**: %s.\n", m.String(), orNoState(from), orNoState(to), cause)
	if _, err := b.AddComment(ctx, it.ContentID, body); err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Int("issue", it.Number).Msg("could not comment on an automated move")
	}
}

func orNoState(s string) string {
	if s == "" {
		return "(no state)"
	}
	return s
}

// appStep is a move the app made, as a judged step of the item's history.
func appStep(itemID, from, to, legalFrom, why string, at time.Time) store.Observation {
	return store.Observation{DeliveryID: fmt.Sprintf("app:%s:%d:%s", itemID, at.UnixNano(), to), ItemID: itemID,
		FromKnown: true, From: from, To: to, Actor: "", At: at, ReceivedAt: at, Status: store.ObservationJudged,
		JudgedAt: at, Verdict: store.VerdictAutomated, ActorKind: policy.ActorApp.String(), LegalFrom: legalFrom, Reason: why}
}
