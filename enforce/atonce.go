package enforce

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"
)

// With BatchJudge, a change that may be reverted at once (provisional.go) is not walked by its
// job, which waits for the proof with the others: the intake puts its item on a list and wakes
// RevertAtOnce, which takes the whole list and writes the reverts together (guarded writes of
// one board share their turns, and the check each needs is made, and the revert journaled, on
// the read its turn makes).
// A revert at once then costs the write's read and mutation, no read of its own, and a burst
// of refused moves costs a few of each, not two requests a move.

// atOnceItems are the items whose only waiting report may be reverted at once.
type atOnceItems struct {
	mu    sync.Mutex
	items map[string]atOnceItem
	wake  chan struct{} // one buffered: something was listed since the last take
	// prepare bounds the writers preparing their reverts from the store at once.
	prepare chan struct{}
	// writing are the groups (installations) whose reverts a call of RevertAtOnce is writing:
	// their items listed since are that call's to take (takeGroup), so that each installation
	// has one writer, and one installation's long write never holds another's back.
	writing map[string]bool
}

// atOnceItem is a listed item as its report named it (the write reads it again).
type atOnceItem struct {
	waitingItem
	it Item
}

func newAtOnceItems(preparers int) atOnceItems {
	return atOnceItems{items: map[string]atOnceItem{}, wake: make(chan struct{}, 1), writing: map[string]bool{},
		prepare: make(chan struct{}, max(preparers, 1))}
}

func (a *atOnceItems) add(w waitingItem, it Item) {
	a.mu.Lock()
	a.items[it.ID] = atOnceItem{waitingItem: w, it: it}
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// takeIdle takes the listed items of the groups nobody is writing, by group, and marks those
// groups written (the caller writes them: writeGroup).
func (a *atOnceItems) takeIdle() map[string][]atOnceItem {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string][]atOnceItem{}
	for id, it := range a.items {
		g := it.group()
		if a.writing[g] {
			continue // its writer takes it
		}
		out[g] = append(out[g], it)
		delete(a.items, id)
	}
	for g := range out {
		a.writing[g] = true
	}
	return out
}

// takeGroup takes a group's items listed since its writer's last take; none ends the writer.
func (a *atOnceItems) takeGroup(group string) []atOnceItem {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []atOnceItem
	for id, it := range a.items {
		if it.group() == group {
			out = append(out, it)
			delete(a.items, id)
		}
	}
	if len(out) == 0 {
		delete(a.writing, group)
	}
	return out
}

// AtOnceListed is told (one buffered signal) when a move that may be reverted at once was
// listed: whoever runs RevertAtOnce waits on it rather than polling.
func (e *Enforcer) AtOnceListed() <-chan struct{} { return e.atOnce.wake }

// RevertAtOnce reverts provisionally the refused moves the intake listed since the last call
// (each only when it still qualifies once its card is read); it returns how many items it
// looked at. Call it whenever AtOnceListed tells; calls may overlap. Each installation's
// reverts are written by one call at a time, beside the others': a call writing one
// installation's storm takes that installation's moves listed meanwhile too, and leaves
// another installation's to the next call, which writes them at once. A failure leaves the
// move to wait for its proof.
func (e *Enforcer) RevertAtOnce(ctx context.Context) int {
	listed := e.atOnce.takeIdle()
	var n atomic.Int64
	var wg sync.WaitGroup
	for _, group := range slices.Sorted(maps.Keys(listed)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.Add(int64(e.writeGroup(ctx, group, listed[group])))
		}()
	}
	wg.Wait()
	return int(n.Load())
}

// writeGroup writes one group's (installation's) reverts at once, then those listed for it
// meanwhile, until none is left; it returns how many items it looked at.
func (e *Enforcer) writeGroup(ctx context.Context, group string, items []atOnceItem) int {
	n := 0
	for ; len(items) > 0; items = e.atOnce.takeGroup(group) {
		n += len(items)
		board, err := e.boardFor(ctx, items[0].waitingItem)
		if err != nil {
			zerolog.Ctx(ctx).Debug().Err(err).Int("items", len(items)).Msg("no board to revert at once on; the moves wait for their proof")
			continue
		}
		slices.SortFunc(items, func(a, b atOnceItem) int { return strings.Compare(a.it.ID, b.it.ID) })
		for len(items) > 0 {
			k := min(len(items), maxPrefetch)
			e.revertTogether(ctx, board, items[:k])
			items = items[k:]
		}
	}
	return n
}

// revertTogether prepares each item's provisional revert from its record, under its lock,
// and writes them together: each is checked, and journaled, on the card its turn reads.
func (e *Enforcer) revertTogether(ctx context.Context, b Board, items []atOnceItem) {
	type prepared struct {
		w    *walk
		wr   StateWrite
		lctx context.Context
	}
	var ready []prepared
	// The store's connections are bounded: one installation's writer prepares at a time per
	// walker of the budget (BatchWalkers); the GitHub writes that follow need none.
	e.atOnce.prepare <- struct{}{}
	for _, it := range items {
		// The keys a job's lines carry (as judgeTogether's).
		lctx := itemLogger(ctx, it.it).WithContext(ctx)
		w := &walk{board: b, it: it.it}
		unlock, err := e.items.lock(lctx, it.it.ID)
		if err != nil {
			continue
		}
		wr, ok, err := e.preparedAtOnce(lctx, w)
		unlock()
		if err != nil {
			zerolog.Ctx(lctx).Debug().Err(err).Msg("could not revert at once; the move waits for its proof")
		} else if ok {
			ready = append(ready, prepared{w, wr, lctx})
		}
	}
	<-e.atOnce.prepare
	if len(ready) == 0 {
		return
	}
	writes := make([]StateWrite, len(ready))
	for i, p := range ready {
		writes[i] = p.wr
	}
	for i, err := range b.SetStatesIf(ctx, writes) {
		p := ready[i]
		l := zerolog.Ctx(p.lctx).With().Str("delivery", p.w.pending[0].DeliveryID).Logger()
		e.provisionalWritten(l.WithContext(ctx), p.w, p.wr, err)
	}
}

// preparedAtOnce loads an item's record and reports, under its lock, and prepares its
// provisional revert when they let it.
func (e *Enforcer) preparedAtOnce(ctx context.Context, w *walk) (StateWrite, bool, error) {
	var err error
	if w.rec, w.found, err = e.items.load(ctx, w.it.ID); err != nil || !w.found {
		return StateWrite{}, false, err
	}
	if w.pending, err = e.store().PendingObservations(ctx, w.it.ID); err != nil {
		return StateWrite{}, false, err
	}
	w.it.Number, w.it.Repo = w.rec.IssueNumber, w.rec.Repo
	wr, ok := e.provisionalPrepare(w, w.it, false)
	return wr, ok, nil
}

// itemLogger is the context's logger with the keys a job's lines carry for an item read.
func itemLogger(ctx context.Context, it Item) zerolog.Logger {
	return zerolog.Ctx(ctx).With().Str("item", it.ID).Str("org", it.Owner).Int("project", it.ProjectNumber).Logger()
}
