package enforce

import (
	"context"
	"fmt"
	"sync"
)

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

func newKeyedMutex() *keyedMutex { return &keyedMutex{locks: map[string]*keyedEntry{}} }

func (k *keyedMutex) lock(key string) (unlock func()) {
	k.mu.Lock()
	e := k.locks[key]
	if e == nil {
		e = &keyedEntry{}
		k.locks[key] = e
	}
	e.holders++
	k.mu.Unlock()

	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		k.mu.Lock()
		e.holders--
		if e.holders == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
}

// lockItem serializes all work on one item: in this process (keyed mutex) and across
// replicas (the store's lock, a no-op on SQLite). Every path that reads, decides and writes an
// item takes it.
func (s *Service) lockItem(ctx context.Context, itemID string) (unlock func(), err error) {
	unlockLocal := s.items.lock(itemID)
	unlockReplicas, err := s.store.LockItem(ctx, itemID)
	if err != nil {
		unlockLocal()
		return nil, fmt.Errorf("lock item %s: %w", itemID, err)
	}
	return func() {
		unlockReplicas()
		unlockLocal()
	}, nil
}
