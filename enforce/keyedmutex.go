package enforce

import "sync"

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
