package app

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/ghboard"
	"github.com/ralph-gate/ralph-gate/jobs"
	"github.com/ralph-gate/ralph-gate/redeliver"
	"github.com/ralph-gate/ralph-gate/store"
)

// maintenance is the work that keeps the promise when webhooks do not: the reconciler and the
// redelivery sweeper, run as periodic jobs on River's elected leader.
type maintenance struct {
	a       *App
	gate    *ghboard.Gate
	sweeper *redeliver.Sweeper
	gaps    *sweeps // sweeps asked for by gaps in an item's history

	mu       sync.Mutex
	draining chan struct{}
	stopped  bool
}

func newMaintenance(a *App, gate *ghboard.Gate) *maintenance {
	m := &maintenance{a: a, gate: gate, draining: make(chan struct{})}
	m.sweeper = redeliver.New(func(context.Context) (redeliver.Hooks, error) {
		client, err := a.github.NewAppClient()
		if err != nil {
			return nil, err
		}
		return client.Apps, nil
	}, a.store, redeliver.Options{
		MaxAge:      a.cfg.Redelivery.MaxAge,
		MaxPerSweep: a.cfg.Redelivery.MaxPerSweep,
		MaxAttempts: a.cfg.Redelivery.MaxAttempts,
		Ingest:      a.ingestDelivery,
		Suspects:    heldDeliveries{a.store},
	}, nil)
	m.gaps = newSweeps(m.sweeper)
	return m
}

func (m *maintenance) periodic() []jobs.Periodic {
	return []jobs.Periodic{
		{Name: "prune", Interval: time.Hour, Run: func(ctx context.Context) error {
			_, err := m.a.PruneNow(ctx)
			return err
		}},
		{Name: "redeliver", Interval: m.a.cfg.Redelivery.Interval, Run: func(ctx context.Context) error {
			ctx, cancel := m.bound(ctx)
			defer cancel()
			_, err := m.a.SweepNow(ctx)
			return err
		}},
		{Name: "reconcile", Interval: m.a.cfg.Reconcile.Interval, Run: func(ctx context.Context) error {
			ctx, cancel := m.bound(ctx)
			defer cancel()
			// Redelivered webhooks know who made a change; the reconciler does not. Let them
			// land before judging drift, or a human's move whose webhook was lost would be
			// judged as an agent's.
			if rep, err := m.a.SweepNow(ctx); err == nil && rep.Redelivered+rep.Waiting > 0 {
				wait := m.a.cfg.Enforcement.ReorderWindow + 10*time.Second
				return &redeliver.RetryAfterError{Wait: wait, Err: fmt.Errorf("%d webhooks redelivered: reconciling after they land", rep.Redelivered+rep.Waiting)}
			}
			_, err := m.a.ReconcileNow(ctx)
			return err
		}},
	}
}

// bound ends ctx when the app starts draining, so a long pass stops at its next page.
func (m *maintenance) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-m.draining:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

func (m *maintenance) stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.stopped {
		m.stopped = true
		close(m.draining)
	}
}

// ReconcileNow runs one reconciliation pass over every enforced project and returns what each
// did. Errors of one project do not stop the others; the first is returned (a RateLimitError
// snoozes the periodic job).
func (a *App) ReconcileNow(ctx context.Context) ([]enforce.ReconcileReport, error) {
	return a.reconcileProjects(ctx, a.projects())
}

// reconcileProjects reconciles projects one after another; the first error is returned once
// every one was tried.
func (a *App) reconcileProjects(ctx context.Context, projects []config.Project) ([]enforce.ReconcileReport, error) {
	var reports []enforce.ReconcileReport
	var first error
	opts := enforce.ReconcileOptions{BudgetShare: a.cfg.Reconcile.BudgetShare, Settle: a.cfg.Reconcile.Settle}
	for _, p := range projects {
		b, err := a.boards.get(ctx, 0, p.Owner)
		if err == nil {
			var rep enforce.ReconcileReport
			rep, err = a.service.Reconciler.Reconcile(ctx, b, a.store, enforce.ProjectRef{Owner: p.Owner, Number: p.Number}, opts)
			reports = append(reports, rep)
			reconciled(a.metrics, rep)
		}
		if err != nil {
			zerolog.Ctx(ctx).Warn().Err(err).Str("project", fmt.Sprintf("%s/%d", p.Owner, p.Number)).Msg("reconciliation failed")
			if first == nil {
				first = err
			}
		}
	}
	return reports, first
}

// toolCallsKept is how long the façade's statistics (its tool calls, counted per minute) are
// kept: a week.
const toolCallsKept = 7 * 24 * time.Hour

// PruneNow forgets the judged changes older than GitHub keeps deliveries (plus a day): a
// redelivery of one of them could no longer come. It returns how many. It also forgets the
// façade's tool call counts older than toolCallsKept.
func (a *App) PruneNow(ctx context.Context) (int64, error) {
	cutoff := time.Now().Add(-a.cfg.Redelivery.MaxAge - 24*time.Hour)
	n, err := a.store.PruneObservations(ctx, cutoff)
	if err != nil {
		return n, err
	}
	if n > 0 {
		zerolog.Ctx(ctx).Info().Int64("changes", n).Msg("pruned old history")
	}
	if _, err := a.store.PruneDeliveryBodies(ctx, cutoff); err != nil {
		return n, err
	}
	sessions, err := a.store.PruneRevokedSessions(ctx, time.Now())
	if err != nil {
		return n, err
	}
	if sessions > 0 {
		zerolog.Ctx(ctx).Debug().Int64("sessions", sessions).Msg("forgot signed-out sessions past their expiry")
	}
	// Rows, not minutes: a minute has a row per tool, agent, outcome, rule and bucket.
	rows, err := a.store.PruneToolCalls(ctx, time.Now().Add(-toolCallsKept))
	if err != nil {
		return n, err
	}
	if rows > 0 {
		zerolog.Ctx(ctx).Debug().Int64("rows", rows).Msg("forgot the façade's per-minute tool call counts older than a week")
	}
	return n, nil
}

// SweepNow runs one redelivery sweep.
func (a *App) SweepNow(ctx context.Context) (redeliver.Report, error) {
	return a.maint.sweeper.Sweep(ctx)
}

// recoverInterrupted makes jobs a killed process left running available again (SQLite only:
// one process owns that queue; on Postgres River's rescuer does it).
func (a *App) recoverInterrupted(ctx context.Context) error {
	if a.store.Driver() != store.DriverSQLite {
		return nil
	}
	n, err := jobs.RecoverSQLite(ctx, a.store.DB())
	if err != nil {
		return err
	}
	if n > 0 {
		zerolog.Ctx(ctx).Warn().Int64("jobs", n).Msg("recovered jobs interrupted by a crash; they run again")
	}
	return nil
}

// GitHubWaits lists the waits GitHub asked the app for (retry-after, spent budgets) and when
// the app learnt each: tests check that no request was retried inside one.
func (a *App) GitHubWaits() []ghboard.Wait { return a.maint.gate.Waits() }
