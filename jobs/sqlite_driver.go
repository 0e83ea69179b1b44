package jobs

import (
	"context"

	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertype"
)

// River's SQLite driver, tuned for ralph-gate's single SQLite connection (SQLite has one
// writer; the store and River share the connection). Two changes, both measured with
// `ralph-gate bench` (docs/BENCHMARKS.md):
//
//   - No listener. The driver emulates LISTEN/NOTIFY with a notification table that a listener
//     polls every 50 ms, and River notifies at most one insert per queue and interval that way;
//     a webhook's job therefore waited up to 50 ms before a worker fetched it. SQLite serves one
//     process, so without a listener River wakes its own producer as soon as an insert
//     commits (and polls no notification table on the shared connection).
//   - Completions in small transactions. River completes finished jobs in batches (every
//     250 ms, or as soon as 100 wait); the driver writes a batch as one UPDATE per job inside
//     one transaction, which at 100 webhooks/s held the connection 12–30 ms (and, once a
//     backlog passed 100, for seconds) while webhooks waited to be enqueued.
//
// PostgreSQL has real LISTEN/NOTIFY, one-statement batches and a pool: it is left alone.

// completionChunk bounds how many job completions go into one SQLite transaction.
const completionChunk = 4

// tuneSQLite wraps an SQLite driver as described above; other drivers are returned as they
// are. Every other call goes straight to River's driver.
func tuneSQLite[TTx any](d riverdriver.Driver[TTx]) riverdriver.Driver[TTx] {
	if d.DatabaseName() != "sqlite" {
		return d
	}
	return sqliteDriver[TTx]{Driver: d}
}

type sqliteDriver[TTx any] struct{ riverdriver.Driver[TTx] }

func (d sqliteDriver[TTx]) GetExecutor() riverdriver.Executor {
	return chunkedExecutor{Executor: d.Driver.GetExecutor()}
}

// SupportsListener is false: River then wakes its producer in process after each insert.
func (d sqliteDriver[TTx]) SupportsListener() bool { return false }

// SupportsListenNotify is false: no notification rows are written with each insert.
func (d sqliteDriver[TTx]) SupportsListenNotify() bool { return false }

type chunkedExecutor struct{ riverdriver.Executor }

func (e chunkedExecutor) JobSetStateIfRunningMany(ctx context.Context, p *riverdriver.JobSetStateIfRunningManyParams) ([]*rivertype.JobRow, error) {
	if len(p.ID) <= completionChunk {
		return e.Executor.JobSetStateIfRunningMany(ctx, p)
	}
	out := make([]*rivertype.JobRow, 0, len(p.ID))
	for i := 0; i < len(p.ID); i += completionChunk {
		j := min(i+completionChunk, len(p.ID))
		rows, err := e.Executor.JobSetStateIfRunningMany(ctx, &riverdriver.JobSetStateIfRunningManyParams{
			ID: p.ID[i:j], Attempt: part(p.Attempt, i, j), ErrData: part(p.ErrData, i, j),
			FinalizedAt: part(p.FinalizedAt, i, j), MetadataDoMerge: part(p.MetadataDoMerge, i, j),
			MetadataUpdates: part(p.MetadataUpdates, i, j), Now: p.Now, ScheduledAt: part(p.ScheduledAt, i, j),
			Schema: p.Schema, State: part(p.State, i, j),
		})
		out = append(out, rows...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// part is s[i:j], or nil when s does not reach that far (a parameter the caller left unset).
func part[T any](s []T, i, j int) []T {
	if len(s) < j {
		return nil
	}
	return s[i:j]
}
