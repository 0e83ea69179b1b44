package enforce

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/policy"
)

// Judging the items a proof released, together. Every reported change waits for a redelivery
// sweep's proof before it is judged (docs/ENFORCEMENT.md, "Ordering"), so under a burst
// hundreds of items become judgeable at the moment one sweep completes. Left to their jobs,
// each would be read on its own (as many at once as there are workers) and each revert would
// wait for its own write turn. Instead the items waiting for a proof are remembered here, and
// when a sweep completes (JudgeWaiting) those it covers are read together — one nodes(ids:)
// request per 100 items — and walked concurrently, so that their guarded reverts share write
// turns. Each item is still walked under its own lock, in its history's order, exactly as its
// job would walk it; the jobs stay the durable record of the work and, coming back, find
// their reports judged and finish without a request. A process that restarts forgets the
// list: the jobs then judge their items one by one, as before.

// maxPrefetch is how many items one batched read carries (GitHub's limit for nodes(ids:)).
const maxPrefetch = 100

// chunksAtOnce is how many chunks of released items are judged at once.
const chunksAtOnce = 2

// DefaultBatchWalkers is how many items JudgeWaiting walks at once when Options.BatchWalkers
// is not set.
const DefaultBatchWalkers = 100

// maxDefer is how long past its due an item's job leaves it to JudgeWaiting; then (no proof
// came, or this process is behind) the job walks the item itself.
const maxDefer = 10 * time.Second

// proofRecheck is how long a job whose item waits for a proof (a sweep has been asked for)
// stays away when its item is on the waiting list: the sweep's completion judges it; the job
// coming back is the fallback when no proof came.
const proofRecheck = 2 * time.Second

// ItemsReader is a Board that reads several items in one request. JudgeWaiting uses it when
// the Board offers it; otherwise it reads them concurrently with Item.
type ItemsReader interface {
	// Items reads items by id: each gets its item or its own error (ErrNotFound for one gone).
	Items(ctx context.Context, ids []string) ([]Item, []error)
}

// waitingItem is an item whose reports wait for a proof reaching due, on the board of its
// change's installation (nil until a job walked it: Options.Boards finds it).
type waitingItem struct {
	installation int64
	owner        string
	board        Board
	due          time.Time
	taken        bool // JudgeWaiting is walking it
}

func (w waitingItem) group() string { return fmt.Sprintf("%d/%s", w.installation, w.owner) }

// proofWaiters is the list of items waiting for a proof, in this process. An item stays on it
// while JudgeWaiting walks it, so that its job keeps away meanwhile (deferring).
type proofWaiters struct {
	mu       sync.Mutex
	items    map[string]waitingItem
	forsaken map[string]time.Time // walks together failed: left to the jobs (forsake)
}

// add remembers an item; a later due replaces an earlier one (and the item waits again), a
// known board stays.
func (p *proofWaiters) add(itemID string, w waitingItem) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.items == nil {
		p.items = map[string]waitingItem{}
	}
	if at, ok := p.forsaken[itemID]; ok && !w.due.After(at.Add(maxDefer)) {
		return
	}
	if cur, ok := p.items[itemID]; ok {
		if !w.due.After(cur.due) {
			w.due, w.taken = cur.due, cur.taken
		}
		if w.board == nil {
			w.board = cur.board
		}
	}
	p.items[itemID] = w
}

// take marks the items whose due a proof reaching until covers as being walked, and returns
// them by group.
func (p *proofWaiters) take(until time.Time) map[string][]waitingItemID {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string][]waitingItemID{}
	for id, w := range p.items {
		if w.taken || w.due.After(until) {
			continue
		}
		w.taken = true
		p.items[id] = w
		out[w.group()] = append(out[w.group()], waitingItemID{id: id, waitingItem: w})
	}
	for _, items := range out {
		// In a stable order (a simulated world replays a seed exactly).
		slices.SortFunc(items, func(a, b waitingItemID) int { return strings.Compare(a.id, b.id) })
	}
	return out
}

// forsake forgets an item whose walk together failed, and keeps it off the list for maxDefer:
// its jobs walk it themselves.
func (p *proofWaiters) forsake(itemID string, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.items, itemID)
	if p.forsaken == nil {
		p.forsaken = map[string]time.Time{}
	}
	for id, at := range p.forsaken {
		if now.Sub(at) > maxDefer {
			delete(p.forsaken, id)
		}
	}
	p.forsaken[itemID] = now
}

// done forgets an item JudgeWaiting walked, unless a newer report made it wait again.
func (p *proofWaiters) done(itemID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w, ok := p.items[itemID]; ok && w.taken {
		delete(p.items, itemID)
	}
}

// deferring reports whether an item's job should keep away: the item waits for a proof (or is
// being walked with others) and is not yet maxDefer past its due.
func (p *proofWaiters) deferring(itemID string, now time.Time) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w, ok := p.items[itemID]
	if !ok || now.After(w.due.Add(maxDefer)) {
		return time.Time{}, false
	}
	return w.due, true
}

// due reports whether an item waits past its due: a sweep begun now would release it.
func (p *proofWaiters) due(now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, w := range p.items {
		if !w.taken && !w.due.After(now) {
			return true
		}
	}
	return false
}

type waitingItemID struct {
	id string
	waitingItem
}

// deferToBatch says how long a job should stay away because its item is left to JudgeWaiting.
func (e *Enforcer) deferToBatch(itemID string) (time.Duration, bool) {
	if !e.opts.BatchJudge {
		return 0, false
	}
	now := e.now()
	due, ok := e.waiters.deferring(itemID, now)
	if !ok {
		return 0, false
	}
	return max(due.Sub(now), 0) + proofRecheck, true
}

// SweepDue reports whether an item waiting for a proof is past its due, so that a sweep
// begun now would release it. The caller asks for a sweep then: the jobs of waiting items
// stay away until the proof has had time to come (proofRecheck).
func (e *Enforcer) SweepDue() bool { return e.waiters.due(e.now()) }

// awaitProof remembers an item whose reports wait for a proof reaching due (at intake, or
// when a walk holds it).
func (e *Enforcer) awaitProof(itemID string, w waitingItem) bool {
	if !e.opts.BatchJudge || w.due.IsZero() || (w.board == nil && e.opts.Boards == nil) {
		return false
	}
	e.waiters.add(itemID, w)
	return true
}

// Waiting is how many items wait for a proof in this process (tests, diagnostics).
func (e *Enforcer) Waiting() int {
	e.waiters.mu.Lock()
	defer e.waiters.mu.Unlock()
	return len(e.waiters.items)
}

// JudgeWaiting walks every item waiting for a proof that the newest sweep's proof covers,
// reading them together; it returns how many it walked. Call it when a sweep completes.
// Errors of one item are left to its job (logged at debug); it returns an error only when the
// proof cannot be read.
func (e *Enforcer) JudgeWaiting(ctx context.Context) (int, error) {
	if e.opts.Redeliveries == nil {
		return 0, nil
	}
	proof, err := e.opts.Redeliveries.SweepProof(ctx)
	if err != nil {
		return 0, err
	}
	if proof.Until.IsZero() {
		return 0, nil
	}
	// Chunks of up to 100 items, each read in one request; two at a time, so that the next
	// chunk is read while the walks of one wait for their write turns, and every walk holds
	// one of BatchWalkers.
	type chunk = judgeChunk
	// Each group's (installation's) chunks take turns, so that one installation's storm of
	// released items never holds another's behind all of its own.
	var byGroup [][]chunk
	released := e.waiters.take(proof.Until)
	for _, group := range slices.Sorted(maps.Keys(released)) {
		items := released[group]
		board, err := e.boardOf(ctx, items)
		if err != nil {
			zerolog.Ctx(ctx).Warn().Err(err).Int("items", len(items)).Msg("no board to judge released items on; their jobs go on")
			for _, it := range items {
				e.waiters.done(it.id)
			}
			continue
		}
		ids := make([]string, len(items))
		for i, it := range items {
			ids[i] = it.id
		}
		var own []chunk
		for len(ids) > 0 {
			n := min(len(ids), maxPrefetch)
			own = append(own, chunk{board: board, ids: ids[:n], owner: items[0].owner})
			ids = ids[n:]
		}
		byGroup = append(byGroup, own)
	}
	chunks := takeTurns(byGroup)
	walkers := make(chan struct{}, e.opts.BatchWalkers)
	reading := make(chan struct{}, min(chunksAtOnce, e.opts.BatchWalkers))
	var wg sync.WaitGroup
	walked := 0
	for _, c := range chunks {
		walked += len(c.ids)
		reading <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-reading }()
			e.judgeTogether(ctx, c, proof, walkers)
		}()
	}
	wg.Wait()
	return walked, nil
}

// boardOf is the board of a group's items: one a job walked them on, else Options.Boards'.
func (e *Enforcer) boardOf(ctx context.Context, items []waitingItemID) (Board, error) {
	for _, it := range items {
		if it.board != nil {
			return it.board, nil
		}
	}
	return e.boardFor(ctx, items[0].waitingItem)
}

// boardFor is the board of a waiting item's installation.
func (e *Enforcer) boardFor(ctx context.Context, w waitingItem) (Board, error) {
	if w.board != nil {
		return w.board, nil
	}
	if e.opts.Boards == nil {
		return nil, errors.New("no board is known for the installation")
	}
	return e.opts.Boards(ctx, w.installation, w.owner)
}

// judgeChunk is items of one installation and organization, read in one request.
type judgeChunk struct {
	board Board
	ids   []string
	owner string // the organization whose project they are on (their changes named it)
}

// judgeTogether reads items in one request and walks them concurrently.
func (e *Enforcer) judgeTogether(ctx context.Context, c judgeChunk, proof policy.SweepProof, walkers chan struct{}) {
	log := zerolog.Ctx(ctx)
	b, ids := c.board, c.ids
	// The records' versions before the read (one query): a walk uses the read only when nothing was
	// recorded for the item since (a revert of ours written meanwhile would make it stale in a
	// way the sequencer must not see). A move by someone else meanwhile is as if the read came
	// a moment earlier; the guarded revert reads again before it writes.
	versions, err := e.store().ItemVersions(ctx, ids)
	if err != nil {
		versions = nil // no read made before the lock is used: each walk reads its item
	}
	items, errs := readItems(ctx, b, ids)
	var wg sync.WaitGroup
	for i, id := range ids {
		w := &walk{board: b, together: true, proof: &proof, owner: c.owner}
		// The keys a job's lines carry (its worker adds the item, the app the project).
		lc := log.With().Str("item", id)
		if errs[i] == nil && e.enforced(items[i]) {
			// A read that failed, or of an item that is not enforced, is left to the walk,
			// which reads again and knows what to do with either.
			if versions != nil { // an item without a record has version 0
				w.pre, w.preVersion = &items[i], versions[id]
			}
			lc = lc.Str("org", items[i].Owner).Int("project", items[i].ProjectNumber)
		}
		ctx := lc.Logger().WithContext(ctx)
		walkers <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-walkers }()
			// A failure is retried at once, as a job's would be: what the walk left (a revert
			// recorded but not written) must not wait for the item's next proof. Past a few
			// attempts the item is left to its jobs, which no longer stay away from it.
			for attempt := 1; ; attempt++ {
				_, err := e.walkOn(ctx, w, id)
				if err == nil {
					if w.settledTogether() {
						e.settledJobs.add(e.now(), w.judged)
					}
					if w.refused.DeliveryID != "" {
						e.explainSoon(ctx, b, id)
					}
					e.waiters.done(id)
					break
				}
				if attempt == walkAttempts || ctx.Err() != nil {
					zerolog.Ctx(ctx).Warn().Err(err).Msg("judging a released item failed; its jobs go on")
					e.waiters.forsake(id, e.now())
					break
				}
				if !e.inline {
					select {
					case <-time.After(time.Duration(attempt) * 100 * time.Millisecond):
					case <-ctx.Done():
					}
				}
				w = &walk{board: b, together: true, proof: &proof, owner: c.owner}
			}
		}()
	}
	wg.Wait()
}

// walkAttempts is how often JudgeWaiting tries one item's walk before leaving it to its jobs.
const walkAttempts = 3

// maxExplainers bounds the explanations written beside the walks of JudgeWaiting.
const maxExplainers = 8

// explainSoon explains an item's refused steps once its walk together is over, beside the
// other walks (which it does not hold up): an explanation waits for its actor's other
// explanations and is paced with the comments of the installation. It gives up, leaving the
// explanations to the job, when the item is not settled then or a storm's summary is not due.
func (e *Enforcer) explainSoon(ctx context.Context, b Board, itemID string) {
	if e.inline {
		// A simulated world runs one event at a time.
		if err := e.explainSettled(ctx, b, itemID); err != nil {
			zerolog.Ctx(ctx).Debug().Err(err).Msg("explaining a released item failed; its job goes on")
		}
		return
	}
	e.explaining.Add()
	go func() {
		defer e.explaining.Done()
		select {
		case e.explainers <- struct{}{}:
		case <-ctx.Done():
			return
		}
		defer func() { <-e.explainers }()
		if err := e.explainSettled(ctx, b, itemID); err != nil {
			zerolog.Ctx(ctx).Debug().Err(err).Msg("explaining a released item failed; its job goes on")
		}
	}()
}

// Drain waits until the explanations written beside JudgeWaiting's walks are done, or ctx
// ends (shutdown).
func (e *Enforcer) Drain(ctx context.Context) error { return e.explaining.Wait(ctx) }

// explainSettled explains the refused steps of an item that has nothing else left, under its
// lock, with its issue as last read.
func (e *Enforcer) explainSettled(ctx context.Context, b Board, itemID string) error {
	unlock, err := e.items.lock(ctx, itemID)
	if err != nil {
		return err
	}
	defer unlock()
	w := &walk{board: b}
	if w.rec, w.found, err = e.items.load(ctx, itemID); err != nil || !w.found {
		return err
	}
	if w.pending, err = e.store().PendingObservations(ctx, itemID); err != nil {
		return fmt.Errorf("load reports of item %s: %w", itemID, err)
	}
	if err := e.ignoreEchoes(ctx, w); err != nil {
		return err
	}
	it, seen := e.seen.get(itemID)
	if !seen || len(w.pending) > 0 || !w.rec.settled() {
		return nil
	}
	w.it = it
	if err := e.explainAll(ctx, w); err != nil {
		if _, later := isExplainLater(err); !later {
			return err
		}
	}
	return nil
}

// ignoreEchoes drops the reports the sequencer ignores without looking at the board — the
// webhooks of the app's own writes, which the record holds already (a revert's comes back
// within moments) — and stops at anything else.
func (e *Enforcer) ignoreEchoes(ctx context.Context, w *walk) error {
	if len(w.pending) == 0 {
		return nil
	}
	proof := policy.SweepProof{}
	if e.opts.Redeliveries != nil {
		var err error
		if proof, err = e.opts.Redeliveries.SweepProof(ctx); err != nil {
			return fmt.Errorf("read the redelivery sweep's proof: %w", err)
		}
	}
	for len(w.pending) > 0 {
		a := policy.Sequence(policy.SequenceInput{History: w.history(), Pending: e.toPolicy(w.pending),
			Board: policy.BoardValue{Unknown: true}, Sweep: proof, Now: e.now(), Window: e.opts.ReorderWindow, Hold: e.opts.GapHold})
		if a.Kind != policy.ActIgnore || !a.Obs.Own {
			return nil
		}
		if err := e.ignore(ctx, w, a); err != nil {
			return err
		}
	}
	return nil
}

// readItems reads items with one request when the board can, else one request each, at once.
func readItems(ctx context.Context, b Board, ids []string) ([]Item, []error) {
	if r, ok := b.(ItemsReader); ok {
		return r.Items(ctx, ids)
	}
	items, errs := make([]Item, len(ids)), make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			items[i], errs[i] = b.Item(ctx, id)
		}()
	}
	wg.Wait()
	return items, errs
}

// maxSeen bounds the items remembered as last read; past it the memory starts afresh.
const maxSeen = 20000

// seenItems remembers each item as this process last read it. Only what does not change with
// the item's value is used from it (its issue: id, repository, number), to explain a refused
// step without reading the item again.
type seenItems struct {
	mu    sync.Mutex
	items map[string]Item
}

func (s *seenItems) put(it Item) {
	if it.ID == "" || it.ContentID == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.items == nil || len(s.items) >= maxSeen {
		s.items = map[string]Item{}
	}
	s.items[it.ID] = it
}

func (s *seenItems) get(id string) (Item, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it, ok := s.items[id]
	return it, ok
}

// takeTurns is every list's elements, the lists taking turns: the first of each, then the
// second of each, and so on.
func takeTurns[T any](lists [][]T) []T {
	var out []T
	for i := 0; ; i++ {
		more := false
		for _, l := range lists {
			if i < len(l) {
				out = append(out, l[i])
				more = true
			}
		}
		if !more {
			return out
		}
	}
}
