package jobs

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river/riverdriver/riversqlite"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/ralph-gate/ralph-gate/enforce"
)

// runTimes records when each change's job ran.
type runTimes struct {
	mu  sync.Mutex
	ran map[string]time.Time
	got chan string
}

func (p *runTimes) ProcessChange(_ context.Context, ch enforce.Change) (enforce.Result, error) {
	p.mu.Lock()
	p.ran[ch.DeliveryID] = time.Now()
	p.mu.Unlock()
	p.got <- ch.DeliveryID
	return enforce.Result{Verdict: enforce.VerdictAllowed}, nil
}

func (p *runTimes) ProcessLifecycle(context.Context, enforce.Lifecycle) (enforce.Result, error) {
	return enforce.Result{Verdict: enforce.VerdictIgnored}, nil
}

func (p *runTimes) ProcessPolicyPush(_ context.Context, push json.RawMessage) error {
	p.got <- "push " + string(push)
	return nil
}

// blocked holds every change's job until released: the workers of the changes are all busy.
type blocked struct {
	runTimes
	release chan struct{}
}

func (p *blocked) ProcessChange(ctx context.Context, ch enforce.Change) (enforce.Result, error) {
	p.got <- ch.DeliveryID
	select {
	case <-p.release:
	case <-ctx.Done():
	}
	return enforce.Result{Verdict: enforce.VerdictAllowed}, nil
}

// A policy push is taken in on its own queue: while every worker of the changes is busy, it
// runs all the same (docs/CONFIGURATION.md "Who may change an organization's policy").
func TestPolicyPushesHaveWorkersOfTheirOwn(t *testing.T) {
	ctx := t.Context()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "q.db")+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = db.Close() })
	p := &blocked{runTimes: runTimes{got: make(chan string, 8)}, release: make(chan struct{})}
	q, err := New(ctx, riversqlite.New(db), p, Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { close(p.release); _ = q.Stop(context.Background()) })
	deadline := time.After(30 * time.Second) // a hang, not a speed
	if err := q.EnqueueChange(ctx, enforce.Change{DeliveryID: "busy", ItemID: "I1"}); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-p.got:
		if got != "busy" {
			t.Fatalf("ran %q first", got)
		}
	case <-deadline:
		t.Fatal("the change did not start")
	}
	if err := q.EnqueueChange(ctx, enforce.Change{DeliveryID: "waiting", ItemID: "I2"}); err != nil {
		t.Fatal(err)
	}
	if err := q.EnqueuePolicyPush(ctx, "push-1", json.RawMessage(`{"after":"abc"}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-p.got:
		if got != `push {"after":"abc"}` {
			t.Fatalf("ran %q while the only change worker is busy, want the policy push", got)
		}
	case <-deadline:
		t.Fatal("the policy push waited behind the busy change worker")
	}
}

// A change queued to run later is inserted available with its time (not scheduled, which
// would wait for River's scheduler), and its job does not run before that time; one without a
// time runs at once.
func TestChangeRunsNotBeforeItsTime(t *testing.T) {
	ctx := t.Context()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "q.db")+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = db.Close() })
	p := &runTimes{ran: map[string]time.Time{}, got: make(chan string, 4)}
	q, err := New(ctx, riversqlite.New(db), p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(700 * time.Millisecond)
	if err := q.EnqueueChange(ctx, enforce.Change{DeliveryID: "later", ItemID: "I1", NotBefore: later}); err != nil {
		t.Fatal(err)
	}
	var state string
	var scheduledAt time.Time
	if err := db.QueryRowContext(ctx, `SELECT state, scheduled_at FROM river_job WHERE json_extract(args, '$.delivery_id') = 'later'`).Scan(&state, &scheduledAt); err != nil {
		t.Fatal(err)
	}
	if state != "available" || scheduledAt.Before(later.Add(-time.Millisecond)) {
		t.Errorf("queued as %s for %v, want available for %v", state, scheduledAt, later)
	}
	if err := q.EnqueueChange(ctx, enforce.Change{DeliveryID: "now", ItemID: "I2"}); err != nil {
		t.Fatal(err)
	}
	if err := q.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Stop(context.Background()) })
	deadline := time.After(30 * time.Second) // a hang, not a speed: the job is due in 0.7 s
	for range 2 {
		select {
		case <-p.got:
		case <-deadline:
			t.Fatal("the jobs did not run")
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if ran := p.ran["later"]; ran.Before(later) {
		t.Errorf("the job ran at %v, before its time %v", ran, later)
	}
	if p.ran["now"].After(p.ran["later"]) {
		t.Error("the job queued without a time ran after the one queued for later")
	}
}
