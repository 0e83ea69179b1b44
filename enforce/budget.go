package enforce

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// The reconciler's budget: the share of GitHub's rate limit it may spend in one rate-limit
// window, kept in the store so that a restart or another leader does not start from zero.

const cursorReconcileBudget = "reconcile/budget"

type budgetWindow struct {
	reset     time.Time
	spent     int
	allowance int
}

func (r *Reconciler) loadBudget(ctx context.Context, p *pass) (budgetWindow, error) {
	limit, reset := p.opts.DefaultLimit, r.now().Truncate(time.Hour).Add(time.Hour)
	if rl, ok := p.board.RateLimit(); ok && rl.Limit > 0 {
		limit = rl.Limit
		if !rl.Reset.IsZero() {
			reset = rl.Reset
		}
	}
	w := budgetWindow{reset: reset, allowance: max(int(float64(limit)*p.opts.BudgetShare), 1)}
	v, err := p.st.GetCursor(ctx, cursorReconcileBudget)
	switch {
	case errors.Is(err, ErrNotFound):
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
	if rl, ok := b.RateLimit(); ok && rl.Limit > 0 {
		w.allowance = max(int(float64(rl.Limit)*opts.BudgetShare), 1)
	}
}

// saveBudget adds the pass's requests to the window's spend and stores it.
func (r *Reconciler) saveBudget(ctx context.Context, p *pass) error {
	p.budget.spent += p.rep.Requests
	if rl, ok := p.board.RateLimit(); ok && !rl.Reset.IsZero() && !rl.Reset.Equal(p.budget.reset) {
		// The window GitHub reports now: what was spent before it no longer counts.
		p.budget.reset, p.budget.spent = rl.Reset, p.rep.Requests
	}
	if err := p.st.PutCursor(ctx, cursorReconcileBudget, fmt.Sprintf("%d %d", p.budget.reset.Unix(), p.budget.spent)); err != nil {
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

func (c *countingBoard) SetStatesIf(ctx context.Context, writes []StateWrite) []error {
	c.n.Add(1)
	return c.Board.SetStatesIf(ctx, writes)
}

func (c *countingBoard) AddComment(ctx context.Context, subject, body string) (Comment, error) {
	c.n.Add(1)
	return c.Board.AddComment(ctx, subject, body)
}

func (c *countingBoard) UpdateComment(ctx context.Context, id, body string) error {
	c.n.Add(1)
	return c.Board.UpdateComment(ctx, id, body)
}

func (c *countingBoard) FindComment(ctx context.Context, subjectID, contains string) (Comment, bool, error) {
	c.n.Add(1)
	return c.Board.FindComment(ctx, subjectID, contains)
}

func (c *countingBoard) Family(ctx context.Context, issueID, projectID string) (Family, error) {
	c.n.Add(1)
	return c.Board.Family(ctx, issueID, projectID)
}

func (c *countingBoard) IssueItems(ctx context.Context, owner, repo string, number int) ([]Item, error) {
	c.n.Add(1)
	return c.Board.IssueItems(ctx, owner, repo, number)
}

func (c *countingBoard) ProjectItems(ctx context.Context, owner string, number int, after string) (ItemsPage, error) {
	c.n.Add(1)
	return c.Board.ProjectItems(ctx, owner, number, after)
}

func (c *countingBoard) SetIssueOpen(ctx context.Context, issueID string, open bool, reason string) error {
	c.n.Add(1)
	return c.Board.SetIssueOpen(ctx, issueID, open, reason)
}

func (c *countingBoard) ClosingIssues(ctx context.Context, owner, repo string, number int) ([]IssueRef, error) {
	c.n.Add(1)
	return c.Board.ClosingIssues(ctx, owner, repo, number)
}
