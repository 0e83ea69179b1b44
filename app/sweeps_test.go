package app

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/redeliver"
)

// nullCursors is a store of nothing.
type nullCursors struct{}

func (nullCursors) GetCursor(context.Context, string) (string, error) { return "", nil }
func (nullCursors) PutCursor(context.Context, string, string) error   { return nil }

// Gap sweeps that fail (a store that cannot write, a GitHub that fails) back off, doubling from
// two seconds, while items keep asking for one every tick: a full disk once made 428 list
// calls in six minutes.
func TestFailingGapSweepsBackOff(t *testing.T) {
	var tries atomic.Int64
	sw := redeliver.New(func(context.Context) (redeliver.Hooks, error) {
		tries.Add(1)
		return nil, errors.New("database or disk is full")
	}, nullCursors{}, redeliver.Options{}, nil)
	s := newSweeps(sw)
	ctx, cancel := context.WithTimeout(context.Background(), 3500*time.Millisecond)
	defer cancel()
	go s.run(ctx)
	tick := time.NewTicker(dueTick)
	defer tick.Stop()
	for ctx.Err() == nil {
		s.RequestSweep(ctx) // an item past its due asks every tick
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
	// At 0 s, then 2 s later (not at 1, 2 and 3 s).
	if n := tries.Load(); n < 1 || n > 2 {
		t.Errorf("%d sweeps in 3.5 s, want the first and one more after 2 s", n)
	}
}
