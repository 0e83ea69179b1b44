package enforce

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/policy"
	"github.com/ralph-gate/ralph-gate/store"
)

// DriftActor names the unknown author of a change only the reconciler saw.
const DriftActor = "(unknown)"

// Drift (a value on the board that differs from the item's last legal state, with no webhook
// to say who set it) is judged as an agent's move: the author is unknown, so the change gets no
// privilege beyond the strictest reverting actor kind. Bypass and human-only moves whose
// webhooks were lost are normally recovered first by the redelivery sweeper, which replays
// them with their real sender.
const driftKind = policy.ActorAgent

// RateLimit is GitHub's primary budget as last reported (x-ratelimit-* headers).
type RateLimit struct {
	Limit, Remaining, Used int
	Reset                  time.Time
}

// RateReporter is implemented by a Board that knows GitHub's rate-limit headers.
type RateReporter interface {
	RateLimit() (RateLimit, bool)
}

// ReconcileStore is what the reconciler needs of the store besides Store.
type ReconcileStore interface {
	ListItems(ctx context.Context, projectID string) ([]store.Item, error)
	GetCursor(ctx context.Context, name string) (string, error)
	PutCursor(ctx context.Context, name, value string) error
}

// ReconcileOptions bound one reconciliation.
type ReconcileOptions struct {
	// BudgetShare is the share of the hourly rate limit the reconciler may spend in one
	// rate-limit window (0.2: a fifth); the rest stays for webhooks.
	BudgetShare float64
	// Settle leaves items whose Workflow State changed more recently than this to their
	// webhooks (one may be in flight) until the next pass.
	Settle time.Duration
	// DefaultLimit is the hourly limit assumed before GitHub has reported one (5000).
	DefaultLimit int
	// PageAttempts bounds how often one page read is tried on a transient failure (3).
	PageAttempts int
}

// ReconcileReport is what one reconciliation of one project did and cost.
type ReconcileReport struct {
	Owner    string
	Number   int
	Pages    int // GraphQL page reads (at most one per 100 items)
	Items    int // items looked at
	InSync   int // board value equals the last legal state
	Adopted  int // first sight: current value taken as legal
	Drifted  int // board value differed: handled like a webhook
	Reverted int // drifts that were illegal and set back
	Accepted int // drifts that were legal
	Deferred int // changed too recently: left to their webhooks
	Archived int
	Requests int // GitHub requests spent, page reads included
	Budget   int // requests the reconciler may spend in this rate-limit window
	Complete bool
	// Paused says why the pass stopped before the last page ("" when it did not); the next
	// pass resumes where it stopped.
	Paused   string
	Duration time.Duration
}

// ReconcileObserver hears about each project's reconciliation (metrics). It must be fast.
type ReconcileObserver interface {
	Reconciled(r ReconcileReport)
}

const (
	cursorReconcilePrefix = "reconcile/cursor/"
	cursorReconcileBudget = "reconcile/budget"
)

// driftCost is what handling one drift may cost at most: re-read, revert, comment (and the
// lookup of an interrupted comment).
const driftCost = 4

var passSeq atomic.Int64

// Reconcile pages through one enforced project (one GraphQL read per 100 items), compares every
// item with its last legal state and handles drift exactly like a webhook: ProcessChange with a
// synthetic change (judged as an agent's, see driftKind). An item never seen is adopted as
// legal without a revert (first install on an existing board). The pass spends at most its
// share of the rate limit per window; when the share is spent, or GitHub asks to wait, it
// saves its place and stops, and the next pass resumes there.
//
// A RateLimitError is returned (after saving the place) so a job can be snoozed past it.
func (s *Service) Reconcile(ctx context.Context, b Board, st ReconcileStore, owner string, number int, opts ReconcileOptions) (ReconcileReport, error) {
	start := s.now()
	if opts.DefaultLimit <= 0 {
		opts.DefaultLimit = 5000
	}
	if opts.PageAttempts <= 0 {
		opts.PageAttempts = 3
	}
	if opts.BudgetShare <= 0 || opts.BudgetShare > 1 {
		opts.BudgetShare = 0.2
	}
	rep := ReconcileReport{Owner: owner, Number: number}
	log := zerolog.Ctx(ctx).With().Str("reconcile", owner+"/"+strconv.Itoa(number)).Logger()
	ctx = log.WithContext(ctx)
	cb := &countingBoard{Board: b}
	budget, err := s.loadBudget(ctx, st, b, opts)
	if err != nil {
		return rep, err
	}
	rep.Budget = budget.allowance
	cursorKey := cursorReconcilePrefix + owner + "/" + strconv.Itoa(number)
	after, err := st.GetCursor(ctx, cursorKey)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return rep, fmt.Errorf("load reconcile cursor: %w", err)
	}
	pass := strconv.FormatInt(start.UnixNano(), 36) + "-" + strconv.FormatInt(passSeq.Add(1), 36)
	var known map[string]store.Item
	finish := func(err error) (ReconcileReport, error) {
		rep.Requests = cb.calls()
		budget.spent += rep.Requests
		if rr, ok := b.(RateReporter); ok {
			if rl, ok := rr.RateLimit(); ok && !rl.Reset.IsZero() && !rl.Reset.Equal(budget.reset) {
				// The window GitHub reports now: what was spent before it no longer counts.
				budget.reset, budget.spent = rl.Reset, rep.Requests
			}
		}
		if serr := s.saveBudget(context.WithoutCancel(ctx), st, budget); serr != nil && err == nil {
			err = serr
		}
		rep.Duration = s.now().Sub(start)
		ev := log.Info()
		if rep.Paused != "" {
			ev = log.Warn().Str("paused", rep.Paused)
		}
		ev.Int("pages", rep.Pages).Int("items", rep.Items).Int("in_sync", rep.InSync).Int("adopted", rep.Adopted).
			Int("drifted", rep.Drifted).Int("reverted", rep.Reverted).Int("deferred", rep.Deferred).
			Int("requests", rep.Requests).Int("budget_spent", budget.spent).Int("budget", budget.allowance).
			Bool("complete", rep.Complete).Dur("took", rep.Duration).Msg("reconciliation")
		return rep, err
	}
	for {
		if err := ctx.Err(); err != nil {
			rep.Paused = "stopping"
			return finish(nil)
		}
		budget.refresh(b, opts)
		rep.Budget = budget.allowance
		if budget.spent+cb.calls()+1 > budget.allowance {
			rep.Paused = fmt.Sprintf("budget: %d of %d requests spent in this rate-limit window (resets %s)",
				budget.spent+cb.calls(), budget.allowance, budget.reset.UTC().Format(time.RFC3339))
			return finish(nil)
		}
		page, err := s.readPage(ctx, cb, owner, number, after, opts.PageAttempts)
		if err != nil && ctx.Err() != nil {
			rep.Paused = "stopping"
			return finish(nil)
		}
		if err != nil {
			var rl interface{ RetryAfterDuration() time.Duration }
			if errors.As(err, &rl) {
				rep.Paused = "github asked to wait " + rl.RetryAfterDuration().String()
				return finish(err)
			}
			return finish(fmt.Errorf("reconcile %s/%d: %w", owner, number, err))
		}
		rep.Pages++
		if rep.Pages%20 == 0 {
			log.Info().Int("pages", rep.Pages).Int("items", rep.Items).Int("of", page.Total).
				Int("drifted", rep.Drifted).Int("requests", cb.calls()).Msg("reconciling")
		}
		if known == nil && len(page.Items) > 0 {
			known, err = s.knownItems(ctx, st, page.Items[0].ProjectID)
			if err != nil {
				return finish(err)
			}
		}
		for _, it := range page.Items {
			if rec, seen := known[it.ID]; seen && rec.LastLegalState != it.State && !it.Archived &&
				budget.spent+cb.calls()+driftCost > budget.allowance {
				// Not enough left to handle a drift: stop at this page's start (items already
				// handled are in sync next time).
				rep.Paused = fmt.Sprintf("budget: %d of %d requests spent in this rate-limit window (resets %s)",
					budget.spent+cb.calls(), budget.allowance, budget.reset.UTC().Format(time.RFC3339))
				return finish(nil)
			}
			if err := s.reconcileItem(ctx, cb, it, known, pass, opts, &rep); err != nil {
				if ctx.Err() != nil {
					rep.Paused = "stopping" // this page is read again next time
					return finish(nil)
				}
				var rl interface{ RetryAfterDuration() time.Duration }
				if errors.As(err, &rl) {
					// This page is not done: resume at its start.
					rep.Paused = "github asked to wait " + rl.RetryAfterDuration().String()
					return finish(err)
				}
				return finish(fmt.Errorf("reconcile item %s: %w", it.ID, err))
			}
		}
		if !page.HasNext {
			rep.Complete = true
			if err := st.PutCursor(ctx, cursorKey, ""); err != nil {
				return finish(fmt.Errorf("save reconcile cursor: %w", err))
			}
			return finish(nil)
		}
		after = page.EndCursor
		if err := st.PutCursor(ctx, cursorKey, after); err != nil {
			return finish(fmt.Errorf("save reconcile cursor: %w", err))
		}
	}
}

// readPage reads one page, retrying transient failures with backoff (never rate limits).
func (s *Service) readPage(ctx context.Context, b Board, owner string, number int, after string, attempts int) (ItemsPage, error) {
	for attempt := 1; ; attempt++ {
		page, err := b.ProjectItems(ctx, owner, number, after)
		if err == nil {
			return page, nil
		}
		var rl interface{ RetryAfterDuration() time.Duration }
		if errors.As(err, &rl) || attempt >= attempts || ctx.Err() != nil {
			return ItemsPage{}, err
		}
		select {
		case <-ctx.Done():
			return ItemsPage{}, ctx.Err()
		case <-time.After(time.Duration(attempt) * 250 * time.Millisecond):
		}
	}
}

func (s *Service) knownItems(ctx context.Context, st ReconcileStore, projectID string) (map[string]store.Item, error) {
	recs, err := st.ListItems(ctx, projectID)
	if err != nil {
		return nil, fmt.Errorf("list known items: %w", err)
	}
	known := make(map[string]store.Item, len(recs))
	for _, r := range recs {
		known[r.ItemID] = r
	}
	return known, nil
}

func (s *Service) reconcileItem(ctx context.Context, b Board, it Item, known map[string]store.Item, pass string, opts ReconcileOptions, rep *ReconcileReport) error {
	rep.Items++
	if it.Archived {
		rep.Archived++
		return nil
	}
	rec, seen := known[it.ID]
	if seen && rec.LastLegalState == it.State {
		rep.InSync++
		return nil
	}
	now := s.now()
	if !it.StateUpdatedAt.IsZero() && now.Sub(it.StateUpdatedAt) < opts.Settle {
		rep.Deferred++
		return nil
	}
	if !seen {
		adopted, err := s.adopt(ctx, it)
		if err != nil {
			return err
		}
		if adopted {
			rep.Adopted++
			return nil
		}
		// A webhook recorded it meanwhile: judge the value against that record.
	}
	if seen {
		// The list was read at the start of the page walk; a webhook may have caught up since.
		if cur, err := s.store.GetItem(ctx, it.ID); err == nil && cur.LastLegalState == it.State {
			rep.InSync++
			return nil
		} else if err == nil {
			rec = cur
		}
	}
	rep.Drifted++
	// The board shows a value no report explains: the item's history decides (a missing
	// webhook is asked for first; see policy.Sequence).
	res, err := s.processItem(ctx, b, it.ID, "")
	if err != nil {
		return err
	}
	switch res.Outcome {
	case OutcomeReverted:
		rep.Reverted++
	case OutcomeAllowed:
		rep.Accepted++
	case OutcomeWait:
		// Its webhook may have failed: ask for it now (the gap's proof needs a sweep anyway).
		rep.Deferred++
		if s.opts.Redeliveries != nil {
			s.opts.Redeliveries.RequestSweep(ctx)
		}
	}
	zerolog.Ctx(ctx).Info().Str("item", it.ID).Int("issue", it.Number).Str("board", it.State).
		Str("last_legal", rec.LastLegalState).Str("outcome", res.Outcome.String()).Msg("drift")
	return nil
}

// adopt records an item never seen as legal in its current state, under the item's locks.
// It reports false when someone else recorded the item first.
func (s *Service) adopt(ctx context.Context, it Item) (bool, error) {
	unlock, err := s.lockItem(ctx, it.ID)
	if err != nil {
		return false, err
	}
	defer unlock()
	at := it.StateUpdatedAt
	if at.IsZero() {
		at = s.now()
	}
	rec := store.Item{ItemID: it.ID, ProjectID: it.ProjectID, IssueNumber: it.Number, Repo: it.Repo,
		LastLegalState: it.State, ObservedState: it.State, ObservedAt: at, LegalAt: at}
	ok, err := s.store.CompareAndSetItem(ctx, rec, 0)
	if err != nil {
		return false, fmt.Errorf("adopt item %s: %w", it.ID, err)
	}
	if !ok {
		return false, nil
	}
	_, err = s.store.AppendAudit(ctx, store.AuditEntry{
		At: s.now(), ProjectID: it.ProjectID, ItemID: it.ID, IssueNumber: it.Number, Repo: it.Repo,
		Actor: DriftActor, ActorKind: "unknown", ToState: it.State, Verdict: store.VerdictAdopted,
		Rule: "reconcile", Reason: "first sight: the current value is taken as legal",
	})
	if err != nil {
		zerolog.Ctx(ctx).Error().Err(err).Msg("could not record the audit entry")
	}
	return true, nil
}

// actorKind classifies a change's actor; drift has no known actor (see driftKind).
func (s *Service) actorKind(ch Change) policy.ActorKind {
	if ch.Drift {
		return driftKind
	}
	return s.actors.Classify(ch.Actor)
}

// budgetWindow is the reconciler's spend in one rate-limit window, kept in the store so a
// restart or another leader does not start from zero.
type budgetWindow struct {
	reset     time.Time
	spent     int
	allowance int
}

func (s *Service) loadBudget(ctx context.Context, st ReconcileStore, b Board, opts ReconcileOptions) (budgetWindow, error) {
	limit, reset := opts.DefaultLimit, s.now().Truncate(time.Hour).Add(time.Hour)
	if rr, ok := b.(RateReporter); ok {
		if rl, ok := rr.RateLimit(); ok && rl.Limit > 0 {
			limit = rl.Limit
			if !rl.Reset.IsZero() {
				reset = rl.Reset
			}
		}
	}
	w := budgetWindow{reset: reset, allowance: max(int(float64(limit)*opts.BudgetShare), 1)}
	v, err := st.GetCursor(ctx, cursorReconcileBudget)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return w, nil
	case err != nil:
		return w, fmt.Errorf("load reconcile budget: %w", err)
	}
	var resetUnix int64
	var spent int
	if _, err := fmt.Sscanf(v, "%d %d", &resetUnix, &spent); err == nil && time.Unix(resetUnix, 0).Equal(reset.Truncate(time.Second)) {
		w.spent = spent
	}
	return w, nil
}

// refresh takes the limit GitHub reported last (it may have answered since the pass began).
func (w *budgetWindow) refresh(b Board, opts ReconcileOptions) {
	if rr, ok := b.(RateReporter); ok {
		if rl, ok := rr.RateLimit(); ok && rl.Limit > 0 {
			w.allowance = max(int(float64(rl.Limit)*opts.BudgetShare), 1)
		}
	}
}

func (s *Service) saveBudget(ctx context.Context, st ReconcileStore, w budgetWindow) error {
	if err := st.PutCursor(ctx, cursorReconcileBudget, fmt.Sprintf("%d %d", w.reset.Unix(), w.spent)); err != nil {
		return fmt.Errorf("save reconcile budget: %w", err)
	}
	return nil
}

// countingBoard counts the GitHub calls made through it (the reconciler's cost).
type countingBoard struct {
	Board
	n atomic.Int64
}

func (c *countingBoard) calls() int { return int(c.n.Load()) }

func (c *countingBoard) Item(ctx context.Context, id string) (Item, error) {
	c.n.Add(1)
	return c.Board.Item(ctx, id)
}

func (c *countingBoard) SetState(ctx context.Context, it Item, state string) error {
	c.n.Add(1)
	return c.Board.SetState(ctx, it, state)
}

func (c *countingBoard) AddComment(ctx context.Context, subject, body string) (Comment, error) {
	c.n.Add(1)
	return c.Board.AddComment(ctx, subject, body)
}

func (c *countingBoard) UpdateComment(ctx context.Context, id, body string) error {
	c.n.Add(1)
	return c.Board.UpdateComment(ctx, id, body)
}

func (c *countingBoard) Family(ctx context.Context, issueID, projectID string) (Family, error) {
	c.n.Add(1)
	return c.Board.Family(ctx, issueID, projectID)
}

func (c *countingBoard) SetStates(ctx context.Context, ws []StateWrite) error {
	c.n.Add(1)
	return c.Board.SetStates(ctx, ws)
}

func (c *countingBoard) IssueItems(ctx context.Context, owner, repo string, number int) ([]Item, error) {
	c.n.Add(1)
	return c.Board.IssueItems(ctx, owner, repo, number)
}

func (c *countingBoard) ProjectItems(ctx context.Context, owner string, number int, after string) (ItemsPage, error) {
	c.n.Add(1)
	return c.Board.ProjectItems(ctx, owner, number, after)
}

func (c *countingBoard) ClosingIssues(ctx context.Context, owner, repo string, number int) ([]IssueRef, error) {
	c.n.Add(1)
	return c.Board.ClosingIssues(ctx, owner, repo, number)
}

// FindComment passes through to a board that can find comments (see CommentFinder).
func (c *countingBoard) FindComment(ctx context.Context, subjectID, contains string) (Comment, bool, error) {
	f, ok := c.Board.(CommentFinder)
	if !ok {
		return Comment{}, false, nil
	}
	c.n.Add(1)
	return f.FindComment(ctx, subjectID, contains)
}
