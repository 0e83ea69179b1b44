package ghboard

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/ralph-gate/ralph-gate/enforce"
	meters "github.com/ralph-gate/ralph-gate/internal/spend"
)

// Guarded writes share their turn. Writes are paced (one mutation at a time, a pause between),
// so reverts queued during a storm would otherwise go out one per turn: 500 reverts at GitHub's
// one-second pause take over eight minutes. Instead, whoever holds the turn takes every guarded
// write waiting (up to batchSize), reads all their items in one request, and writes those that
// still show the refused value in one aliased mutation: 500 reverts take ten turns. Each write
// keeps its own guard and its own result.

// guardedWrite is one guarded write waiting for its turn.
type guardedWrite struct {
	w     enforce.StateWrite
	meter *meters.Meter // the caller's: a turn's requests are counted by its first write
	done  chan struct{}
	err   error
}

// guardBatcher queues one Board's guarded writes; one flusher at a time writes them.
type guardBatcher struct {
	mu       sync.Mutex
	queue    []*guardedWrite
	flushing bool
	turns    int64 // turns taken (tests, diagnostics)
	carried  int64 // writes they carried
}

// writeAll queues every write at once (so that they share as few turns as can be) and waits
// for each one's result.
func (g *guardBatcher) writeAll(ctx context.Context, b *Board, ws []guardedWrite) []error {
	if len(ws) == 0 {
		return nil
	}
	ps := make([]*guardedWrite, len(ws))
	g.mu.Lock()
	for i := range ws {
		p := &ws[i]
		p.done, p.meter = make(chan struct{}), meters.From(ctx)
		ps[i] = p
		g.queue = append(g.queue, p)
	}
	if !g.flushing {
		g.flushing = true
		go g.flush(context.WithoutCancel(ctx), b)
	}
	g.mu.Unlock()
	errs := make([]error, len(ps))
	for i, p := range ps {
		select {
		case <-p.done:
			errs[i] = p.err
		case <-ctx.Done():
			errs[i] = fmt.Errorf("write %s: %w", p.w.Item.ID, ctx.Err()) // it may still be written: the caller journaled it
		}
	}
	return errs
}

// flush takes the write turn while writes wait, each time for every write queued by then.
func (g *guardBatcher) flush(ctx context.Context, b *Board) {
	for {
		g.mu.Lock()
		if len(g.queue) == 0 {
			g.flushing = false
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
		var batch []*guardedWrite
		err := b.gql.WithWriteTurn(ctx, func(ctx context.Context) error {
			g.mu.Lock()
			n := min(len(g.queue), batchSize)
			batch = append(batch, g.queue[:n]...)
			g.queue = append(g.queue[:0], g.queue[n:]...)
			g.turns++
			g.carried += int64(n)
			g.mu.Unlock()
			b.writeGuarded(meters.With(ctx, batch[0].meter), batch)
			return nil
		})
		if err != nil { // the turn was never taken (the context cannot end: a safeguard)
			for _, w := range batch {
				w.err = err
				close(w.done)
			}
		}
	}
}

// GuardedTurns reports how many write turns the guarded writes took and how many writes they
// carried.
func (b *Board) GuardedTurns() (turns, carried int64) {
	b.guarded.mu.Lock()
	defer b.guarded.mu.Unlock()
	return b.guarded.turns, b.guarded.carried
}

// writeGuarded reads the batch's items in one request and writes, in one more, those whose
// guard lets them (enforce.StateWrite.Guard: the card still shows the refused value, and the
// write's own check holds); each write learns its own outcome. A write GitHub failed with a
// server error is tried again, up to the client's attempts, reading its card again first: a
// move made since the first read is never written over (the mutation itself is sent once, Do).
func (b *Board) writeGuarded(ctx context.Context, batch []*guardedWrite) {
	defer func() {
		for _, w := range batch {
			close(w.done)
		}
	}()
	pending := batch
	for attempt := 1; len(pending) > 0; attempt++ {
		failed := b.writeGuardedOnce(ctx, pending)
		if len(failed) == 0 || attempt >= b.gql.attempts || b.gql.sleep(ctx, b.gql.jitter(attempt)) != nil {
			return
		}
		pending = failed
	}
}

// writeGuardedOnce is one read and one write of the batch; it returns the writes GitHub failed
// with a server error (each keeps its error, should it not be tried again).
func (b *Board) writeGuardedOnce(ctx context.Context, batch []*guardedWrite) []*guardedWrite {
	ids := make([]string, len(batch))
	for i, w := range batch {
		ids[i] = w.w.Item.ID
	}
	cur, errs := b.readItems(ctx, ids)
	var writes []enforce.StateWrite
	var writing []*guardedWrite
	for i, w := range batch {
		if errs[i] != nil {
			w.err = fmt.Errorf("read %s before writing it: %w", w.w.Item.ID, errs[i])
		} else if w.err = w.w.Guard(ctx, cur[i]); w.err == nil {
			// The item as just read: whoever asked may know no more of it than its id.
			writes = append(writes, enforce.StateWrite{Item: cur[i], State: w.w.State})
			writing = append(writing, w)
		}
	}
	if len(writes) == 0 {
		return nil
	}
	var failed []*guardedWrite
	var se *ServerError
	if len(writes) == 1 {
		writing[0].err = b.SetState(ctx, writes[0].Item, writes[0].State)
		if errors.As(writing[0].err, &se) {
			failed = append(failed, writing[0])
		}
		return failed
	}
	res := &WritesError{}
	b.writeBatch(ctx, writes, res)
	byItem := map[string]FailedWrite{}
	for _, f := range res.Failed {
		byItem[f.Write.Item.ID] = f
	}
	for _, w := range writing {
		f, ok := byItem[w.w.Item.ID]
		if !ok {
			continue
		}
		one := &WritesError{Failed: []FailedWrite{f}, Err: res.Err}
		w.err = fmt.Errorf("revert %s to %q: %w", w.w.Item.ID, w.w.State, one)
		if errors.As(res.Err, &se) {
			failed = append(failed, w)
		}
	}
	return failed
}
