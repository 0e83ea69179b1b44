package enforce

import (
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/rs/zerolog"
)

// With BatchJudge, a change that may be reverted at once (provisional.go) is not walked by its
// job, which waits for the proof with the others: the intake puts its item on a list that
// RevertAtOnce takes every tick, reading its items 100 per request and writing their reverts
// together (guarded writes of one board share their turns), as JudgeWaiting does for what a
// proof releases. A burst of refused moves then costs a few reads and writes, not a read and a
// write each.

// atOnceItems are the items whose only waiting report may be reverted at once, by group.
type atOnceItems struct {
	mu    sync.Mutex
	items map[string]waitingItem
}

func (a *atOnceItems) add(itemID string, w waitingItem) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.items == nil {
		a.items = map[string]waitingItem{}
	}
	a.items[itemID] = w
}

// take empties the list and returns its items by group.
func (a *atOnceItems) take() map[string][]waitingItemID {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string][]waitingItemID{}
	for id, w := range a.items {
		out[w.group()] = append(out[w.group()], waitingItemID{id: id, waitingItem: w})
	}
	clear(a.items)
	return out
}

// RevertAtOnce reverts provisionally the refused moves the intake listed since the last call
// (each only when it still qualifies once its item is read); it returns how many items it
// looked at. Call it every tick. A failure leaves the move to wait for its proof.
func (e *Enforcer) RevertAtOnce(ctx context.Context) int {
	listed := e.atOnce.take()
	n := 0
	for _, group := range slices.Sorted(maps.Keys(listed)) {
		items := listed[group]
		n += len(items)
		board, err := e.boardOf(ctx, items)
		if err != nil {
			zerolog.Ctx(ctx).Debug().Err(err).Int("items", len(items)).Msg("no board to revert at once on; the moves wait for their proof")
			continue
		}
		ids := make([]string, len(items))
		for i, it := range items {
			ids[i] = it.id
		}
		slices.Sort(ids)
		for len(ids) > 0 {
			k := min(len(ids), maxPrefetch)
			e.revertTogether(ctx, board, ids[:k])
			ids = ids[k:]
		}
	}
	return n
}

// revertTogether reads items in one request, journals each one's provisional revert under its
// lock, writes them together and records what became of each write.
func (e *Enforcer) revertTogether(ctx context.Context, b Board, ids []string) {
	read, errs := readItems(ctx, b, ids)
	e.provisionalRequests.Add(1)
	type prepared struct {
		w  *walk
		wr StateWrite
	}
	var ready []prepared
	for i, id := range ids {
		if errs[i] != nil {
			continue // its job, or the proof's walk, reads it again
		}
		w := &walk{board: b, it: read[i], read: true}
		// The keys a job's lines carry (as judgeTogether's).
		lctx := itemLogger(ctx, read[i]).WithContext(ctx)
		unlock, err := e.items.lock(lctx, id)
		if err != nil {
			continue
		}
		wr, ok, err := e.preparedAtOnce(lctx, w, id)
		unlock()
		if err != nil {
			zerolog.Ctx(lctx).Debug().Err(err).Msg("could not revert at once; the move waits for its proof")
		} else if ok {
			ready = append(ready, prepared{w, wr})
		}
	}
	if len(ready) == 0 {
		return
	}
	writes := make([]StateWrite, len(ready))
	for i, p := range ready {
		writes[i] = p.wr
	}
	for i, err := range b.SetStatesIf(ctx, writes) {
		p := ready[i]
		l := itemLogger(ctx, p.wr.Item).With().Str("delivery", p.w.pending[0].DeliveryID).Logger()
		lctx := l.WithContext(ctx)
		unlock, lerr := e.items.lock(lctx, p.wr.Item.ID)
		if lerr != nil {
			continue
		}
		if rec, found, lerr := e.items.load(lctx, p.wr.Item.ID); lerr == nil && found && rec.ProvisionalFor == p.w.rec.ProvisionalFor {
			p.w.rec = rec
			if werr := e.provisionalWritten(lctx, p.w, p.wr, err); werr != nil {
				zerolog.Ctx(lctx).Debug().Err(werr).Msg("could not record a provisional revert's write")
			}
		}
		unlock()
	}
}

// preparedAtOnce loads an item's record and reports, under its lock, and journals its
// provisional revert when it still qualifies.
func (e *Enforcer) preparedAtOnce(ctx context.Context, w *walk, id string) (StateWrite, bool, error) {
	var err error
	if w.rec, w.found, err = e.items.load(ctx, id); err != nil || !w.found {
		return StateWrite{}, false, err
	}
	if w.pending, err = e.store().PendingObservations(ctx, id); err != nil {
		return StateWrite{}, false, err
	}
	return e.provisionalPrepare(ctx, w)
}

// itemLogger is the context's logger with the keys a job's lines carry for an item read.
func itemLogger(ctx context.Context, it Item) zerolog.Logger {
	return zerolog.Ctx(ctx).With().Str("item", it.ID).Str("org", it.Owner).Int("project", it.ProjectNumber).Logger()
}
