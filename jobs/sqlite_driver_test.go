package jobs

import (
	"context"
	"database/sql"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivertype"
)

// recordingExecutor records the batches it is asked to complete.
type recordingExecutor struct {
	riverdriver.Executor
	batches [][]int64
	states  [][]rivertype.JobState
}

func (e *recordingExecutor) JobSetStateIfRunningMany(_ context.Context, p *riverdriver.JobSetStateIfRunningManyParams) ([]*rivertype.JobRow, error) {
	e.batches = append(e.batches, slices.Clone(p.ID))
	e.states = append(e.states, slices.Clone(p.State))
	rows := make([]*rivertype.JobRow, len(p.ID))
	for i, id := range p.ID {
		rows[i] = &rivertype.JobRow{ID: id, State: p.State[i]}
	}
	return rows, nil
}

func TestSQLiteDriverIsTunedOthersAreNot(t *testing.T) {
	d := tuneSQLite[*sql.Tx](riversqlite.New(nil))
	if d.SupportsListener() || d.SupportsListenNotify() {
		t.Error("the SQLite driver still uses its polled notification table")
	}
	if _, ok := d.GetExecutor().(chunkedExecutor); !ok {
		t.Error("SQLite completions are not chunked")
	}
	pg := riverpgxv5.New(nil)
	if got := tuneSQLite[pgx.Tx](pg); got != riverdriver.Driver[pgx.Tx](pg) {
		t.Error("the PostgreSQL driver was wrapped")
	}
}

func TestCompletionsAreWrittenInSmallTransactions(t *testing.T) {
	rec := &recordingExecutor{}
	e := chunkedExecutor{Executor: rec}
	n := 2*completionChunk + 1
	p := &riverdriver.JobSetStateIfRunningManyParams{Schema: "main"}
	for i := range n {
		p.ID = append(p.ID, int64(i+1))
		p.State = append(p.State, rivertype.JobStateCompleted)
		p.Attempt = append(p.Attempt, nil)
		p.ErrData = append(p.ErrData, nil)
		p.FinalizedAt = append(p.FinalizedAt, nil)
		p.MetadataDoMerge = append(p.MetadataDoMerge, false)
		p.MetadataUpdates = append(p.MetadataUpdates, nil)
		p.ScheduledAt = append(p.ScheduledAt, nil)
	}
	rows, err := e.JobSetStateIfRunningMany(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != n {
		t.Fatalf("%d rows back for %d jobs", len(rows), n)
	}
	if len(rec.batches) != 3 || len(rec.batches[0]) != completionChunk || len(rec.batches[2]) != 1 {
		t.Fatalf("batches %v, want chunks of %d", rec.batches, completionChunk)
	}
	var all []int64
	for _, b := range rec.batches {
		all = append(all, b...)
	}
	if !slices.Equal(all, p.ID) {
		t.Fatalf("jobs %v, want %v in order", all, p.ID)
	}

	// A batch that fits is passed through whole.
	rec.batches = nil
	small := &riverdriver.JobSetStateIfRunningManyParams{ID: []int64{7}, State: []rivertype.JobState{rivertype.JobStateCompleted}}
	if _, err := e.JobSetStateIfRunningMany(context.Background(), small); err != nil {
		t.Fatal(err)
	}
	if len(rec.batches) != 1 {
		t.Fatalf("a small batch was split: %v", rec.batches)
	}
}
