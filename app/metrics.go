package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/handlers"
	"github.com/ralph-gate/ralph-gate/jobs"
	"github.com/ralph-gate/ralph-gate/metrics"
)

// MetricsRoute serves the Prometheus metrics. Expose it to the cluster only: the chart's
// Ingress routes nothing but the webhook.
const MetricsRoute = "/metrics"

// newMetrics builds the registry. The queue and waiting (the items held for a sweep's proof)
// are looked up at scrape time: both are built after the GitHub client, which already needs
// the metrics middleware.
func newMetrics(version string, queue func() jobs.Queue, waiting func() int) *metrics.Metrics {
	return metrics.New(version, func(ctx context.Context) (metrics.QueueStats, error) {
		q := queue()
		if q == nil {
			return metrics.QueueStats{}, errors.New("queue not ready")
		}
		s, err := q.Stats(ctx)
		return metrics.QueueStats{Depth: s.Depth, OldestAge: s.OldestAge, ProofWaiting: waiting()}, err
	})
}

// Metrics exposes the registry (tests gather from it).
func (a *App) Metrics() *metrics.Metrics { return a.metrics }

// observed wraps the processor: every processed change is counted and timed. Its logger adds
// org and project to the worker's delivery and item, for enforce's lines; enforce writes each
// change's decision line (with the issue, the move, its actor and the verdict). The logger
// carries no `actor`: each decision line names the actor of its own move, which need not be
// the sender of the webhook the job is for (a walk judges every report it finds pending).
type observed struct {
	next    jobs.Processor
	metrics *metrics.Metrics
}

// automationCounter tells the metrics about enforcement's automated moves.
type automationCounter struct{ metrics *metrics.Metrics }

var _ enforce.Observer = automationCounter{}

func (c automationCounter) AutomationMoved(cause enforce.Cause) {
	c.metrics.AutomationMoved(string(cause))
}

func (c automationCounter) ProvisionalReverted(confirmed bool) {
	c.metrics.ProvisionalReverted(confirmed)
}

func (p observed) ProcessChange(ctx context.Context, ch enforce.Change) (enforce.Result, error) {
	start := time.Now()
	logger := zerolog.Ctx(ctx).With().
		Str(handlers.LogKeyOrg, ch.Owner).
		Int(handlers.LogKeyProject, ch.ProjectNumber).
		Logger()
	res, err := p.next.ProcessChange(logger.WithContext(ctx), ch)
	if err != nil {
		p.metrics.ProcessingFailed()
		return res, err
	}
	p.metrics.Decided(string(res.Verdict), time.Since(start))
	return res, nil
}

func (p observed) ProcessPolicyPush(ctx context.Context, push json.RawMessage) error {
	err := p.next.ProcessPolicyPush(ctx, push)
	if ra := (jobs.RetryAfterError)(nil); err != nil && !errors.As(err, &ra) {
		p.metrics.ProcessingFailed()
	}
	return err
}

func (p observed) ProcessLifecycle(ctx context.Context, ev enforce.Lifecycle) (enforce.Result, error) {
	logger := zerolog.Ctx(ctx).With().
		Str(handlers.LogKeyOrg, ev.Owner).
		Logger()
	res, err := p.next.ProcessLifecycle(logger.WithContext(ctx), ev)
	if err != nil {
		p.metrics.ProcessingFailed()
	}
	return res, err
}

// reconciled reports a reconciliation pass to the metrics.
func reconciled(m *metrics.Metrics, r enforce.ReconcileReport) {
	m.ReconcilePassDone(metrics.ReconcilePass{
		Project: fmt.Sprintf("%s/%d", r.Owner, r.Number),
		InSync:  r.InSync, Adopted: r.Adopted, Drifted: r.Drifted, Reverted: r.Reverted,
		Accepted: r.Accepted, Deferred: r.Deferred, Archived: r.Archived,
		Requests: r.Requests, Complete: r.Complete, Duration: r.Duration,
	})
}
