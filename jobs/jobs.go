// Package jobs makes webhook work durable with River: the intake inserts a job and answers
// GitHub at once; workers process jobs with retries, honouring GitHub's retry-after. SQLite
// (one replica) and PostgreSQL (several replicas) sit behind one Queue.
//
// It knows nothing about GitHub or the workflow: a Processor does the work.
package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/enforce"
)

// KindChange is the job kind of one observed Workflow State change.
const KindChange = "workflow_change"

// ChangeArgs is one observed change; the delivery id makes it unique, so a redelivered or
// duplicated webhook inserts nothing.
type ChangeArgs struct {
	DeliveryID string         `json:"delivery_id" river:"unique"`
	Change     enforce.Change `json:"change"`
}

// Kind implements river.JobArgs.
func (ChangeArgs) Kind() string { return KindChange }

// KindLifecycle is the job kind of an issue closed/reopened or a pull request merged.
const KindLifecycle = "workflow_lifecycle"

// LifecycleArgs is one lifecycle event, unique by delivery.
type LifecycleArgs struct {
	DeliveryID string            `json:"delivery_id" river:"unique"`
	Event      enforce.Lifecycle `json:"event"`
}

// Kind implements river.JobArgs.
func (LifecycleArgs) Kind() string { return KindLifecycle }

// KindPolicyPush is the job kind of a push that may change an organization's policy file.
const KindPolicyPush = "policy_push"

// QueuePolicy is the queue of policy pushes: its own workers, so that validating one
// organization's file never holds a worker the changes of the boards need.
const QueuePolicy = "policy"

// policyWorkers is how many policy pushes are taken in at once (each organization's one at a
// time: the processor serializes them).
const policyWorkers = 2

// PolicyPushArgs is one push, unique by delivery; Push is the processor's own encoding of it.
type PolicyPushArgs struct {
	DeliveryID string          `json:"delivery_id" river:"unique"`
	Push       json.RawMessage `json:"push"`
}

// Kind implements river.JobArgs.
func (PolicyPushArgs) Kind() string { return KindPolicyPush }

// Processor does the work of one change. A Wait outcome is retried after Result.RetryAfter.
type Processor interface {
	ProcessChange(ctx context.Context, ch enforce.Change) (enforce.Result, error)
	ProcessLifecycle(ctx context.Context, ev enforce.Lifecycle) (enforce.Result, error)
	ProcessPolicyPush(ctx context.Context, push json.RawMessage) error
}

// RetryAfterError lets a processor say exactly when to try again (e.g. GitHub's retry-after).
type RetryAfterError interface {
	error
	RetryAfterDuration() time.Duration
}

// Options tune the queue.
type Options struct {
	Workers      int
	MaxAttempts  int
	PollInterval time.Duration
	Logger       *slog.Logger
	// Retention of finished jobs; a redelivery within it is recognised as a duplicate.
	// GitHub lets deliveries be redelivered for 3 days.
	Retention time.Duration
	// Periodic is maintenance work the elected leader schedules (see periodic.go).
	Periodic []Periodic
	// Count, when set, counts the unfinished jobs with one query (the store's COUNT over River's
	// table). Without it Depth lists them, decoding every row: under a burst of thousands of
	// jobs that listing, polled, costs more than the work it measures.
	Count func(ctx context.Context) (int, error)
}

func (o *Options) defaults() {
	if o.Workers <= 0 {
		o.Workers = 8
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 25
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 50 * time.Millisecond
	}
	if o.Retention <= 0 {
		o.Retention = 72 * time.Hour
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Queue is the durable queue, whatever the database.
type Queue interface {
	EnqueueChange(ctx context.Context, ch enforce.Change) error
	EnqueueLifecycle(ctx context.Context, ev enforce.Lifecycle) error
	// EnqueuePolicyPush inserts a push to be taken in on the policy queue.
	EnqueuePolicyPush(ctx context.Context, deliveryID string, push json.RawMessage) error
	Start(ctx context.Context) error
	// Stop stops fetching and waits for running jobs to finish (graceful shutdown).
	Stop(ctx context.Context) error
	// Depth counts jobs not yet finished.
	Depth(ctx context.Context) (int, error)
	// Stats reports the depth and the age of the oldest unfinished job (metrics).
	Stats(ctx context.Context) (Stats, error)
}

type riverQueue[TTx any] struct {
	client *river.Client[TTx]
	count  func(ctx context.Context) (int, error)
}

// New migrates River's tables and returns a queue whose workers call p.
func New[TTx any](ctx context.Context, driver riverdriver.Driver[TTx], p Processor, opts Options) (Queue, error) {
	opts.defaults()
	driver = tuneSQLite(driver) // see sqlite_driver.go
	migrator, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: opts.Logger})
	if err != nil {
		return nil, fmt.Errorf("river migrator: %w", err)
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return nil, fmt.Errorf("river migrations: %w", err)
	}
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &changeWorker{p: p}); err != nil {
		return nil, fmt.Errorf("register worker: %w", err)
	}
	if err := river.AddWorkerSafely(workers, &lifecycleWorker{p: p}); err != nil {
		return nil, fmt.Errorf("register worker: %w", err)
	}
	if err := river.AddWorkerSafely(workers, &policyPushWorker{p: p}); err != nil {
		return nil, fmt.Errorf("register worker: %w", err)
	}
	cfg := &river.Config{
		Queues: map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: opts.Workers},
			QueuePolicy: {MaxWorkers: policyWorkers}},
		Workers:                     workers,
		MaxAttempts:                 opts.MaxAttempts,
		FetchPollInterval:           opts.PollInterval,
		FetchCooldown:               opts.PollInterval / 5,
		RetryPolicy:                 retryPolicy{},
		CompletedJobRetentionPeriod: opts.Retention,
		JobTimeout:                  2 * time.Minute,
		// A job whose worker died (a crashed replica) is retried after this, not after River's
		// default hour. (SQLite recovers them at start-up: RecoverSQLite.)
		RescueStuckJobsAfter: 3 * time.Minute,
		Logger:               opts.Logger,
		JobInsertMiddleware:  []rivertype.JobInsertMiddleware{&runSoon{}},
	}
	if err := periodicConfig(workers, cfg, opts.Periodic); err != nil {
		return nil, err
	}
	client, err := river.NewClient(driver, cfg)
	if err != nil {
		return nil, fmt.Errorf("river client: %w", err)
	}
	return &riverQueue[TTx]{client: client, count: opts.Count}, nil
}

// EnqueueChange inserts the change's job, to run at ch.NotBefore when that is still to come.
func (q *riverQueue[TTx]) EnqueueChange(ctx context.Context, ch enforce.Change) error {
	opts := &river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true}}
	if ch.NotBefore.After(time.Now()) {
		opts.ScheduledAt = ch.NotBefore
	}
	_, err := q.client.Insert(ctx, ChangeArgs{DeliveryID: ch.DeliveryID, Change: ch}, opts)
	if err != nil {
		return fmt.Errorf("insert job: %w", err)
	}
	return nil
}

func (q *riverQueue[TTx]) EnqueueLifecycle(ctx context.Context, ev enforce.Lifecycle) error {
	_, err := q.client.Insert(ctx, LifecycleArgs{DeliveryID: ev.DeliveryID, Event: ev}, &river.InsertOpts{
		UniqueOpts: river.UniqueOpts{ByArgs: true},
	})
	if err != nil {
		return fmt.Errorf("insert job: %w", err)
	}
	return nil
}

func (q *riverQueue[TTx]) EnqueuePolicyPush(ctx context.Context, deliveryID string, push json.RawMessage) error {
	_, err := q.client.Insert(ctx, PolicyPushArgs{DeliveryID: deliveryID, Push: push}, &river.InsertOpts{
		Queue: QueuePolicy, UniqueOpts: river.UniqueOpts{ByArgs: true},
	})
	if err != nil {
		return fmt.Errorf("insert job: %w", err)
	}
	return nil
}

func (q *riverQueue[TTx]) Start(ctx context.Context) error { return q.client.Start(ctx) }

func (q *riverQueue[TTx]) Stop(ctx context.Context) error { return q.client.Stop(ctx) }

func (q *riverQueue[TTx]) Depth(ctx context.Context) (int, error) {
	if q.count != nil {
		n, err := q.count(ctx)
		if err != nil {
			return 0, fmt.Errorf("count jobs: %w", err)
		}
		return n, nil
	}
	res, err := q.client.JobList(ctx, river.NewJobListParams().States(unfinished()...).First(10000))
	if err != nil {
		return 0, fmt.Errorf("list jobs: %w", err)
	}
	return len(res.Jobs), nil
}

// schedulerInterval is how often River's scheduler makes jobs scheduled for later available
// (River's default, which the client does not let us change).
const schedulerInterval = 5 * time.Second

// runSoon inserts a job scheduled to run within the scheduler's interval as available, its
// time kept: River fetches only jobs whose time has come, so the job runs at its time, found
// by the next poll (Options.PollInterval), not when the scheduler next looks (up to 5 s
// late). River does the same for a job snoozed that briefly. A change whose item waits for a
// sweep's proof is queued like this (enforce.Change.NotBefore).
type runSoon struct {
	river.JobInsertMiddlewareDefaults
}

func (*runSoon) InsertMany(ctx context.Context, params []*rivertype.JobInsertParams, doInner func(context.Context) ([]*rivertype.JobInsertResult, error)) ([]*rivertype.JobInsertResult, error) {
	now := time.Now()
	for _, p := range params {
		if p.State == rivertype.JobStateScheduled && p.ScheduledAt != nil && p.ScheduledAt.Sub(now) <= schedulerInterval {
			p.State = rivertype.JobStateAvailable
		}
	}
	return doInner(ctx)
}

// unfinished are the states of a job not yet done.
func unfinished() []rivertype.JobState {
	return []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStateRetryable, rivertype.JobStateRunning, rivertype.JobStateScheduled}
}

// Stats is the queue's state at one moment.
type Stats struct {
	Depth     int           // jobs not yet finished
	OldestAge time.Duration // how long the oldest of them has existed; 0 when there is none
}

func (q *riverQueue[TTx]) Stats(ctx context.Context) (Stats, error) {
	if q.count != nil {
		n, err := q.Depth(ctx)
		if err != nil {
			return Stats{}, err
		}
		st := Stats{Depth: n}
		if n > 0 {
			// The lowest id is the oldest job still to finish (ids grow with insertion).
			res, err := q.client.JobList(ctx, river.NewJobListParams().States(unfinished()...).First(1))
			if err != nil {
				return Stats{}, fmt.Errorf("list jobs: %w", err)
			}
			for _, j := range res.Jobs {
				st.OldestAge = time.Since(j.CreatedAt)
			}
		}
		return st, nil
	}
	res, err := q.client.JobList(ctx, river.NewJobListParams().States(unfinished()...).First(10000))
	if err != nil {
		return Stats{}, fmt.Errorf("list jobs: %w", err)
	}
	st := Stats{Depth: len(res.Jobs)}
	for _, j := range res.Jobs {
		st.OldestAge = max(st.OldestAge, time.Since(j.CreatedAt))
	}
	return st, nil
}

type changeWorker struct {
	river.WorkerDefaults[ChangeArgs]
	p Processor
}

func (w *changeWorker) Work(ctx context.Context, job *river.Job[ChangeArgs]) error {
	logger := zerolog.Ctx(ctx).With().Str("delivery", job.Args.DeliveryID).Str("item", job.Args.Change.ItemID).Int("attempt", job.Attempt).Logger()
	ctx = logger.WithContext(ctx)
	res, err := w.p.ProcessChange(ctx, job.Args.Change)
	return outcome(logger, res, err)
}

type lifecycleWorker struct {
	river.WorkerDefaults[LifecycleArgs]
	p Processor
}

func (w *lifecycleWorker) Work(ctx context.Context, job *river.Job[LifecycleArgs]) error {
	logger := zerolog.Ctx(ctx).With().Str("delivery", job.Args.DeliveryID).Str("lifecycle", job.Args.Event.Kind).Int("attempt", job.Attempt).Logger()
	ctx = logger.WithContext(ctx)
	res, err := w.p.ProcessLifecycle(ctx, job.Args.Event)
	return outcome(logger, res, err)
}

type policyPushWorker struct {
	river.WorkerDefaults[PolicyPushArgs]
	p Processor
}

func (w *policyPushWorker) Work(ctx context.Context, job *river.Job[PolicyPushArgs]) error {
	logger := zerolog.Ctx(ctx).With().Str("delivery", job.Args.DeliveryID).Int("attempt", job.Attempt).Logger()
	ctx = logger.WithContext(ctx)
	return outcome(logger, enforce.Result{}, w.p.ProcessPolicyPush(ctx, job.Args.Push))
}

// outcome turns a processing result into River's language: snooze for "wait" and for GitHub's
// retry-after, an error (retried with backoff) for failures.
func outcome(logger zerolog.Logger, res enforce.Result, err error) error {
	if err != nil {
		var ra RetryAfterError
		if errors.As(err, &ra) {
			d := snoozeFor(ra.RetryAfterDuration())
			logger.Warn().Err(err).Int64("retry_after_ms", d.Milliseconds()).Msg("github asked us to wait")
			return river.JobSnooze(d)
		}
		logger.Error().Err(err).Msg("processing failed; will retry")
		return err
	}
	if res.Verdict == enforce.VerdictWait {
		return river.JobSnooze(res.RetryAfter)
	}
	return nil
}

// retryPolicy backs off exponentially with jitter (100 ms doubling, at most 5 min), so a
// GitHub outage does not turn into a retry storm.
type retryPolicy struct{}

func (retryPolicy) NextRetry(job *rivertype.JobRow) time.Time {
	n := min(len(job.Errors), 12)
	d := min(100*time.Millisecond<<n, 5*time.Minute)
	jitter := time.Duration(rand.Int64N(int64(d)/2 + 1))
	return time.Now().Add(d/2 + jitter)
}
