package enforce

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/rs/zerolog"
)

// Reconciler pages through each enforced project and compares every item with its last legal
// state: an item never seen is adopted, a value no report explains goes through the item's
// history like a webhook (the Enforcer), so a lost webhook is caught within one pass.
type Reconciler struct {
	*core
	enf *Enforcer
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

const cursorReconcilePrefix = "reconcile/cursor/"

// driftCost is what handling one drift may cost at most: re-read, revert, comment (and the
// lookup of an interrupted comment).
const driftCost = 4

// pass is one reconciliation of one project: everything it reads, spends and counts.
type pass struct {
	board  *countingBoard
	st     ReconcileStore
	opts   ReconcileOptions
	rep    ReconcileReport
	budget budgetWindow
	known  map[string]Record // the project's records, read at the first page
	cursor string            // the cursor's name
	status PassStatus        // what the walks over the project recorded (health report)
}

// errPaused stops a pass early; rep.Paused says why.
var errPaused = errors.New("paused")

// Reconcile pages through one enforced project (one GraphQL read per 100 items), compares every
// item with its last legal state and handles drift like a webhook. An item never seen is
// adopted as legal without a revert (first install on an existing board). The pass spends at
// most its share of the rate limit per window; when the share is spent, or GitHub asks to
// wait, it saves its place and stops, and the next pass resumes there.
//
// A rate-limit error is returned (after saving the place) so a job can be snoozed past it.
func (r *Reconciler) Reconcile(ctx context.Context, b Board, st ReconcileStore, project ProjectRef, opts ReconcileOptions) (ReconcileReport, error) {
	start := r.now()
	if opts.DefaultLimit <= 0 {
		opts.DefaultLimit = 5000
	}
	if opts.PageAttempts <= 0 {
		opts.PageAttempts = 3
	}
	if opts.BudgetShare <= 0 || opts.BudgetShare > 1 {
		opts.BudgetShare = 0.2
	}
	log := zerolog.Ctx(ctx).With().Str("reconcile", project.Owner+"/"+strconv.Itoa(project.Number)).Logger()
	ctx = log.WithContext(ctx)
	p := &pass{board: &countingBoard{Board: b}, st: st, opts: opts,
		rep:    ReconcileReport{Owner: project.Owner, Number: project.Number},
		cursor: cursorReconcilePrefix + project.Owner + "/" + strconv.Itoa(project.Number)}
	var err error
	if p.budget, err = r.loadBudget(ctx, p); err != nil {
		return p.rep, err
	}
	p.rep.Budget = p.budget.allowance
	err = r.pages(ctx, p)
	if errors.Is(err, errPaused) {
		err = nil
	}
	if err != nil && ctx.Err() != nil {
		p.rep.Paused, err = "stopping", nil // the page under way is read again next time
	}
	var rl interface{ RetryAfterDuration() time.Duration }
	if errors.As(err, &rl) {
		p.rep.Paused = "github asked to wait " + rl.RetryAfterDuration().String()
	}
	p.rep.Requests = p.board.calls()
	if serr := r.saveBudget(context.WithoutCancel(ctx), p); serr != nil && err == nil {
		err = serr
	}
	p.rep.Duration = r.now().Sub(start)
	rep := p.rep
	// A pass that found everything in sync logs at debug: an idle board costs no info line
	// (the metrics count every pass).
	ev := log.Debug()
	switch {
	case rep.Paused != "":
		ev = log.Warn().Str("paused", rep.Paused)
	case rep.Adopted+rep.Drifted > 0:
		ev = log.Info()
	}
	ev.Int("pages", rep.Pages).Int("items", rep.Items).Int("in_sync", rep.InSync).Int("adopted", rep.Adopted).
		Int("drifted", rep.Drifted).Int("reverted", rep.Reverted).Int("deferred", rep.Deferred).
		Int("requests", rep.Requests).Int("budget_spent", p.budget.spent).Int("budget", p.budget.allowance).
		Bool("complete", rep.Complete).Int64("took_ms", rep.Duration.Milliseconds()).Msg("reconciliation")
	return rep, err
}

// pages reads the project page by page from the saved cursor, and handles each item.
func (r *Reconciler) pages(ctx context.Context, p *pass) error {
	after, err := p.st.GetCursor(ctx, p.cursor)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("load reconcile cursor: %w", err)
	}
	if p.status, err = LoadPassStatus(ctx, p.st, ProjectRef{Owner: p.rep.Owner, Number: p.rep.Number}); err != nil {
		return err
	}
	for {
		if ctx.Err() != nil {
			p.rep.Paused = "stopping"
			return errPaused
		}
		p.budget.refresh(p.board, p.opts)
		p.rep.Budget = p.budget.allowance
		if !p.affords(1) {
			return errPaused
		}
		readAt := r.now()
		page, err := r.readPage(ctx, p, after)
		if err != nil {
			return err
		}
		p.rep.Pages++
		if err := r.snapshot(ctx, p, page, after == "", readAt); err != nil {
			return err
		}
		if p.rep.Pages%20 == 0 {
			zerolog.Ctx(ctx).Debug().Int("pages", p.rep.Pages).Int("items", p.rep.Items).Int("of", page.Total).
				Int("drifted", p.rep.Drifted).Int("requests", p.board.calls()).Msg("reconciling")
		}
		if p.known == nil && len(page.Items) > 0 {
			if p.known, err = r.knownItems(ctx, p, page.Items[0].ProjectID); err != nil {
				return err
			}
		}
		for _, it := range page.Items {
			if rec, seen := p.known[it.ID]; seen && rec.LastLegalState != it.State && !it.Archived && !p.affords(driftCost) {
				// Not enough left to handle a drift: stop at this page's start (items already
				// handled are in sync next time).
				return errPaused
			}
			if err := r.item(ctx, p, it); err != nil {
				return fmt.Errorf("reconcile item %s: %w", it.ID, err)
			}
		}
		after = ""
		if page.HasNext {
			after = page.EndCursor
		}
		if err := p.st.PutCursor(ctx, p.cursor, after); err != nil {
			return fmt.Errorf("save reconcile cursor: %w", err)
		}
		if !page.HasNext {
			p.rep.Complete = true
		}
		if err := r.saveStatus(ctx, p); err != nil {
			return err
		}
		if p.rep.Complete {
			return nil
		}
	}
}

// affords reports whether n more requests fit the budget; when not, the pass says so.
func (p *pass) affords(n int) bool {
	spent := p.budget.spent + p.board.calls()
	if spent+n <= p.budget.allowance {
		return true
	}
	p.rep.Paused = fmt.Sprintf("budget: %d of %d requests spent in this rate-limit window (resets %s)",
		spent, p.budget.allowance, p.budget.reset.UTC().Format(time.RFC3339))
	return false
}

// readPage reads one page, retrying transient failures with backoff (never rate limits).
func (r *Reconciler) readPage(ctx context.Context, p *pass, after string) (ItemsPage, error) {
	for attempt := 1; ; attempt++ {
		page, err := p.board.ProjectItems(ctx, p.rep.Owner, p.rep.Number, after)
		if err == nil {
			return page, nil
		}
		var rl interface{ RetryAfterDuration() time.Duration }
		if errors.As(err, &rl) || attempt >= p.opts.PageAttempts || ctx.Err() != nil {
			return ItemsPage{}, fmt.Errorf("reconcile %s/%d: %w", p.rep.Owner, p.rep.Number, err)
		}
		select {
		case <-ctx.Done():
			return ItemsPage{}, ctx.Err()
		case <-time.After(time.Duration(attempt) * 250 * time.Millisecond):
		}
	}
}

func (r *Reconciler) knownItems(ctx context.Context, p *pass, projectID string) (map[string]Record, error) {
	recs, err := p.st.ListItems(ctx, projectID)
	if err != nil {
		return nil, fmt.Errorf("list known items: %w", err)
	}
	known := make(map[string]Record, len(recs))
	for _, rec := range recs {
		known[rec.ItemID] = rec
	}
	return known, nil
}

// item compares one item with its record and handles what differs.
func (r *Reconciler) item(ctx context.Context, p *pass, it Item) error {
	p.rep.Items++
	if it.Archived {
		p.rep.Archived++
		return nil
	}
	rec, seen := p.known[it.ID]
	if seen && rec.LastLegalState == it.State {
		p.rep.InSync++
		return nil
	}
	if !it.StateUpdatedAt.IsZero() && r.now().Sub(it.StateUpdatedAt) < p.opts.Settle {
		p.rep.Deferred++
		return nil
	}
	if !seen {
		adopted, err := r.adopt(ctx, it)
		if err != nil || adopted {
			if adopted {
				p.rep.Adopted++
			}
			return err
		}
		// A webhook recorded it meanwhile: judge the value against that record.
	} else {
		// The list was read at the start of the page walk; a webhook may have caught up since.
		cur, found, err := r.items.load(ctx, it.ID)
		if err != nil {
			return err
		}
		if found && cur.LastLegalState == it.State {
			p.rep.InSync++
			return nil
		}
		rec = cur
	}
	p.rep.Drifted++
	// The board shows a value no report explains: the item's history decides (a missing
	// webhook is asked for first; see policy.Sequence). Its lines name the item.
	ctx = zerolog.Ctx(ctx).With().Str("item", it.ID).Logger().WithContext(ctx)
	res, err := r.enf.walkOn(ctx, &walk{board: p.board, owner: it.Owner}, it.ID)
	if err != nil {
		return err
	}
	switch res.Verdict {
	case VerdictReverted:
		p.rep.Reverted++
	case VerdictAllowed:
		p.rep.Accepted++
	case VerdictWait:
		// Its webhook may have failed: ask for it now (the gap's proof needs a sweep anyway).
		p.rep.Deferred++
		if r.opts.Redeliveries != nil {
			r.opts.Redeliveries.RequestSweep(ctx)
		}
	}
	moveLine{Issue: it.Number, From: rec.LastLegalState, To: it.State, Actor: DriftActor, Verdict: res.Verdict}.
		on(zerolog.Ctx(ctx).Info()).Msg("drift")
	return nil
}

// adopt records an item never seen as legal in its current state, under the item's locks.
// It reports false when someone else recorded the item first.
func (r *Reconciler) adopt(ctx context.Context, it Item) (bool, error) {
	unlock, err := r.items.lock(ctx, it.ID)
	if err != nil {
		return false, err
	}
	defer unlock()
	at := it.StateUpdatedAt
	if at.IsZero() {
		at = r.now()
	}
	rec := Record{ItemID: it.ID, ProjectID: it.ProjectID, IssueNumber: it.Number, Repo: it.Repo,
		LastLegalState: it.State, ObservedState: it.State, ObservedAt: at, LegalAt: at}
	audit := r.rec.adoption(rec, "reconcile", "first sight: the current value is taken as legal")
	_, err = r.items.commit(ctx, Step{Record: rec, Audit: &audit})
	switch {
	case errors.Is(err, ErrConcurrentUpdate):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("adopt item %s: %w", it.ID, err)
	}
	return true, nil
}

// PassStatus is what the reconciler records of its walks over one project, for readers in
// other processes (the health report): the project's node id, when the walk under way began
// and when the newest complete one ended, and GitHub's primary budget as last reported.
type PassStatus struct {
	ProjectID string `json:"projectId,omitempty"`
	// Started is when the newest walk read its first page (a walk may span several passes
	// when the budget pauses it); Completed is when the newest complete walk read its last,
	// and CompletedFrom when that walk read its first: an item changed since may be missing
	// from the snapshot.
	Started       time.Time `json:"started,omitzero"`
	Completed     time.Time `json:"completed,omitzero"`
	CompletedFrom time.Time `json:"completedFrom,omitzero"`
	// RateLimit is GitHub's primary budget as last reported to a pass (nil before any).
	RateLimit *RateLimit `json:"rateLimit,omitempty"`
}

const cursorPassStatusPrefix = "reconcile/status/"

// PassStatusCursor is the cursor a project's PassStatus is kept under.
func PassStatusCursor(project ProjectRef) string {
	return cursorPassStatusPrefix + project.Owner + "/" + strconv.Itoa(project.Number)
}

// LoadPassStatus reads what the reconciler recorded of a project (zero before any pass).
func LoadPassStatus(ctx context.Context, st interface {
	GetCursor(ctx context.Context, name string) (string, error)
}, project ProjectRef) (PassStatus, error) {
	v, err := st.GetCursor(ctx, PassStatusCursor(project))
	switch {
	case errors.Is(err, ErrNotFound):
		return PassStatus{}, nil
	case err != nil:
		return PassStatus{}, fmt.Errorf("load reconcile status: %w", err)
	}
	var ps PassStatus
	if json.Unmarshal([]byte(v), &ps) != nil {
		return PassStatus{}, nil // unreadable: what the next page writes replaces it
	}
	return ps, nil
}

// snapshot records a page as read (the health report's titles, open and blockers); first
// says it is a walk's first page.
func (r *Reconciler) snapshot(ctx context.Context, p *pass, page ItemsPage, first bool, readAt time.Time) error {
	if first {
		p.status.Started = readAt
	}
	if len(page.Items) == 0 {
		return nil
	}
	p.status.ProjectID = page.Items[0].ProjectID
	if err := p.st.PutSnapshot(ctx, p.status.ProjectID, page.Items, readAt); err != nil {
		return fmt.Errorf("save reconcile snapshot: %w", err)
	}
	return nil
}

// saveStatus records the walk's progress after a page: the rate limit, and at the end of a
// walk its completion (the items no page listed are no longer on the project).
func (r *Reconciler) saveStatus(ctx context.Context, p *pass) error {
	if rl, ok := p.board.RateLimit(); ok {
		p.status.RateLimit = &rl
	}
	if p.rep.Complete {
		p.status.Completed, p.status.CompletedFrom = r.now(), p.status.Started
		if p.status.ProjectID != "" && !p.status.Started.IsZero() {
			if err := p.st.PruneSnapshot(ctx, p.status.ProjectID, p.status.Started); err != nil {
				return fmt.Errorf("prune reconcile snapshot: %w", err)
			}
		}
	}
	data, err := json.Marshal(p.status)
	if err != nil {
		return fmt.Errorf("encode reconcile status: %w", err)
	}
	if err := p.st.PutCursor(ctx, PassStatusCursor(ProjectRef{Owner: p.rep.Owner, Number: p.rep.Number}), string(data)); err != nil {
		return fmt.Errorf("save reconcile status: %w", err)
	}
	return nil
}
