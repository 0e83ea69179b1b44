package enforce

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// items is the one way every use case touches an item's record: under the item's lock,
// loaded (or a new record for an item never seen), written by compare-and-set.
type items struct {
	st    Store
	local *keyedMutex
	now   Clock
}

func newItems(st Store, now Clock) *items {
	return &items{st: st, local: &keyedMutex{locks: map[string]*keyedEntry{}}, now: now}
}

// lock serializes all work on one item: in this process (keyed mutex) and across replicas
// (the store's lock, a no-op on SQLite). Every path that reads, decides and writes an item
// takes it.
func (x *items) lock(ctx context.Context, itemID string) (unlock func(), err error) {
	unlockLocal := x.local.lock(itemID)
	unlockReplicas, err := x.st.LockItem(ctx, itemID)
	if err != nil {
		unlockLocal()
		return nil, fmt.Errorf("lock item %s: %w", itemID, err)
	}
	return func() {
		unlockReplicas()
		unlockLocal()
	}, nil
}

// load returns the item's record; found is false (and the record new, version 0) for an item
// never recorded.
func (x *items) load(ctx context.Context, itemID string) (rec Record, found bool, err error) {
	rec, err = x.st.GetItem(ctx, itemID)
	switch {
	case err == nil:
		return rec, true, nil
	case errors.Is(err, ErrNotFound):
		return Record{ItemID: itemID}, false, nil
	}
	return Record{}, false, fmt.Errorf("load item %s: %w", itemID, err)
}

// commit writes a step if the record is still at the version it was loaded at (a new record:
// only if none exists yet) and returns the record as stored. Another worker's newer write is
// ErrConcurrentUpdate.
func (x *items) commit(ctx context.Context, st Step) (Record, error) {
	st.ExpectedVersion = st.Record.Version
	ok, err := x.st.CommitStep(ctx, st)
	if err != nil {
		return Record{}, fmt.Errorf("save item %s: %w", st.Record.ItemID, err)
	}
	if !ok {
		return Record{}, fmt.Errorf("save item %s: %w", st.Record.ItemID, ErrConcurrentUpdate)
	}
	st.Record.Version++
	return st.Record, nil
}

// maxUpdateAttempts bounds how often update retries a concurrent update.
const maxUpdateAttempts = 5

// update loads the item's record, lets change build the step to write from it, and commits
// it, again from a fresh load when another worker wrote first; it returns the record as
// stored. change returns write false when there is nothing to write (the record is returned
// as loaded). It is for writers that cannot take the item's lock (see Automation.record) or
// that meet a claim's write.
func (x *items) update(ctx context.Context, itemID string, change func(rec Record, found bool) (st Step, write bool, err error)) (Record, error) {
	for attempt := 0; attempt < maxUpdateAttempts; attempt++ {
		rec, found, err := x.load(ctx, itemID)
		if err != nil {
			return Record{}, err
		}
		st, write, err := change(rec, found)
		if err != nil || !write {
			return rec, err
		}
		stored, err := x.commit(ctx, st)
		if !errors.Is(err, ErrConcurrentUpdate) {
			return stored, err
		}
	}
	return Record{}, fmt.Errorf("record item %s: %w", itemID, ErrConcurrentUpdate)
}

// keyedMutex serializes work per key (an item) inside one process, and forgets keys nobody
// holds so memory stays bounded on a large board.
type keyedMutex struct {
	mu    sync.Mutex
	locks map[string]*keyedEntry
}

type keyedEntry struct {
	mu      sync.Mutex
	holders int
}

func (k *keyedMutex) lock(key string) (unlock func()) {
	e := k.hold(key)
	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		k.release(key, e)
	}
}

// tryLock is lock when nobody holds the key, and false (holding nothing) when someone does.
func (k *keyedMutex) tryLock(key string) (unlock func(), ok bool) {
	e := k.hold(key)
	if !e.mu.TryLock() {
		k.release(key, e)
		return nil, false
	}
	return func() {
		e.mu.Unlock()
		k.release(key, e)
	}, true
}

// hold counts one more holder (or waiter) of the key's entry.
func (k *keyedMutex) hold(key string) *keyedEntry {
	k.mu.Lock()
	defer k.mu.Unlock()
	e := k.locks[key]
	if e == nil {
		e = &keyedEntry{}
		k.locks[key] = e
	}
	e.holders++
	return e
}

// release counts one holder less, forgetting the entry once nobody holds it.
func (k *keyedMutex) release(key string, e *keyedEntry) {
	k.mu.Lock()
	defer k.mu.Unlock()
	e.holders--
	if e.holders == 0 {
		delete(k.locks, key)
	}
}
