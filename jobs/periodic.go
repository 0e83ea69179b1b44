package jobs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/rs/zerolog"
)

// KindPeriodic is the job kind of maintenance work (reconciliation, redelivery sweeps).
const KindPeriodic = "periodic"

// QueueMaintenance runs periodic work apart from webhook work, so a long reconciliation never
// holds up enforcement.
const QueueMaintenance = "maintenance"

// Periodic is maintenance work run every Interval. River schedules periodic jobs only on its
// elected leader, so across replicas each runs once per interval; a job is unique while it is
// pending or running, so a slow run is never joined by a second one.
type Periodic struct {
	Name     string
	Interval time.Duration
	// Run does one round. A RetryAfterError snoozes the job past GitHub's retry-after.
	Run func(ctx context.Context) error
}

// PeriodicArgs names the periodic work a job runs.
type PeriodicArgs struct {
	Name string `json:"name" river:"unique"`
}

// Kind implements river.JobArgs.
func (PeriodicArgs) Kind() string { return KindPeriodic }

// uniqueWhileUnfinished keeps one job per name until it finishes (completed jobs do not
// block the next run).
var uniqueWhileUnfinished = river.UniqueOpts{
	ByArgs: true,
	ByState: []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStatePending,
		rivertype.JobStateRunning, rivertype.JobStateRetryable, rivertype.JobStateScheduled},
}

type periodicWorker struct {
	river.WorkerDefaults[PeriodicArgs]
	runs map[string]func(ctx context.Context) error
}

func (w *periodicWorker) Work(ctx context.Context, job *river.Job[PeriodicArgs]) error {
	run, ok := w.runs[job.Args.Name]
	if !ok {
		return river.JobCancel(fmt.Errorf("no periodic work named %q", job.Args.Name))
	}
	logger := zerolog.Ctx(ctx).With().Str("periodic", job.Args.Name).Int("attempt", job.Attempt).Logger()
	err := run(logger.WithContext(ctx))
	var ra RetryAfterError
	if errors.As(err, &ra) {
		d := snoozeFor(ra.RetryAfterDuration())
		logger.Warn().Err(err).Int64("retry_after_ms", d.Milliseconds()).Msg("github asked us to wait")
		return river.JobSnooze(d)
	}
	if err != nil {
		logger.Error().Err(err).Msg("periodic work failed; the next round retries it")
	}
	return err
}

// Timeout lets a reconciliation of a large board run longer than a webhook job.
func (w *periodicWorker) Timeout(*river.Job[PeriodicArgs]) time.Duration { return 30 * time.Minute }

// periodicConfig registers the periodic work with River.
func periodicConfig(workers *river.Workers, cfg *river.Config, periodic []Periodic) error {
	if len(periodic) == 0 {
		return nil
	}
	w := &periodicWorker{runs: map[string]func(context.Context) error{}}
	for _, p := range periodic {
		if p.Name == "" || p.Interval <= 0 || p.Run == nil {
			return fmt.Errorf("periodic work %q needs a name, a positive interval and a function", p.Name)
		}
		if _, dup := w.runs[p.Name]; dup {
			return fmt.Errorf("periodic work %q is registered twice", p.Name)
		}
		w.runs[p.Name] = p.Run
		name := p.Name
		cfg.PeriodicJobs = append(cfg.PeriodicJobs, river.NewPeriodicJob(river.PeriodicInterval(p.Interval),
			func() (river.JobArgs, *river.InsertOpts) {
				return PeriodicArgs{Name: name}, &river.InsertOpts{Queue: QueueMaintenance, MaxAttempts: 5, UniqueOpts: uniqueWhileUnfinished}
			}, &river.PeriodicJobOpts{ID: name, RunOnStart: true}))
	}
	if err := river.AddWorkerSafely(workers, w); err != nil {
		return fmt.Errorf("register periodic worker: %w", err)
	}
	cfg.Queues[QueueMaintenance] = river.QueueConfig{MaxWorkers: len(periodic)}
	return nil
}

// snoozeFor adds up to a quarter (at most 5 s) of jitter to a retry-after, so jobs told to wait
// together do not all come back in the same instant (no retry storm). Never less than asked.
func snoozeFor(d time.Duration) time.Duration {
	if d <= 0 {
		return time.Second
	}
	j := min(d/4, 5*time.Second)
	return d + rand.N(j+1)
}

// RecoverSQLite makes jobs left "running" by a process that died (SIGKILL, power loss)
// available again. Call it before Start, only with SQLite: there the queue belongs to one
// process, so a running job found at start-up has no worker. (PostgreSQL, with several
// replicas, relies on River's rescuer instead.) It returns how many jobs it recovered.
func RecoverSQLite(ctx context.Context, db *sql.DB) (int64, error) {
	res, err := db.ExecContext(ctx, `UPDATE river_job SET state = 'available' WHERE state = 'running'`)
	if err != nil {
		return 0, fmt.Errorf("recover interrupted jobs: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("recover interrupted jobs: %w", err)
	}
	return n, nil
}
