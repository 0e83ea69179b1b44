package enforce

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ralph-gate/ralph-gate/store"
)

// memStore is an in-memory Store for the history suites: the same contract as store.Store
// (compare-and-set, a step committed at once or not at all), thousands of times faster. fail,
// when set, is asked before each write whether to fail it (a crash between two effects).
type memStore struct {
	mu       sync.Mutex
	items    map[string]store.Item
	obs      map[string]store.Observation
	order    []string // observation delivery ids in arrival order
	audit    []store.AuditEntry
	comments map[string]store.ViolationComment
	fail     func(op string) error
}

func newMemStore() *memStore {
	return &memStore{items: map[string]store.Item{}, obs: map[string]store.Observation{}, comments: map[string]store.ViolationComment{}}
}

var errInjected = errors.New("injected failure")

func (m *memStore) failing(op string) error {
	if m.fail != nil {
		return m.fail(op)
	}
	return nil
}

func (m *memStore) LockItem(context.Context, string) (func(), error) { return func() {}, nil }

func (m *memStore) GetItem(_ context.Context, id string) (store.Item, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	it, ok := m.items[id]
	if !ok {
		return store.Item{}, fmt.Errorf("item %q: %w", id, store.ErrNotFound)
	}
	return it, nil
}

func (m *memStore) PutItem(_ context.Context, it store.Item) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	it.Version = m.items[it.ItemID].Version + 1
	m.items[it.ItemID] = it
	return nil
}

func (m *memStore) CompareAndSetItem(_ context.Context, it store.Item, expected int64) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.casLocked(it, expected), nil
}

func (m *memStore) casLocked(it store.Item, expected int64) bool {
	cur, ok := m.items[it.ItemID]
	if (expected == 0 && ok) || (expected != 0 && (!ok || cur.Version != expected)) {
		return false
	}
	it.Version = expected + 1
	m.items[it.ItemID] = it
	return true
}

func (m *memStore) AppendAudit(_ context.Context, e store.AuditEntry) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.audit = append(m.audit, e)
	return int64(len(m.audit)), nil
}

func (m *memStore) CountInState(_ context.Context, projectID, state string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, it := range m.items {
		if it.ProjectID == projectID && it.LastLegalState == state {
			n++
		}
	}
	return n, nil
}

func (m *memStore) GetViolationComment(_ context.Context, repo string, number int) (store.ViolationComment, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.comments[fmt.Sprintf("%s#%d", repo, number)]
	if !ok {
		return store.ViolationComment{}, store.ErrNotFound
	}
	return c, nil
}

func (m *memStore) PutViolationComment(_ context.Context, repo string, number int, c store.ViolationComment) error {
	if err := m.failing("put-comment"); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.comments[fmt.Sprintf("%s#%d", repo, number)] = c
	return nil
}

func (m *memStore) RecordObservation(_ context.Context, o store.Observation) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.obs[o.DeliveryID]; ok {
		return false, nil
	}
	o.Status = store.ObservationPending
	m.obs[o.DeliveryID] = o
	m.order = append(m.order, o.DeliveryID)
	return true, nil
}

func (m *memStore) PendingObservations(_ context.Context, itemID string) ([]store.Observation, error) {
	return m.list(func(o store.Observation) bool { return o.ItemID == itemID && o.Status == store.ObservationPending }), nil
}

func (m *memStore) Unexplained(_ context.Context, itemID string) ([]store.Observation, error) {
	out := m.list(func(o store.Observation) bool {
		return o.ItemID == itemID && o.Status == store.ObservationJudged && o.Verdict == store.VerdictReverted && !o.Explained
	})
	slices.SortStableFunc(out, func(a, b store.Observation) int { return a.At.Compare(b.At) })
	return out, nil
}

func (m *memStore) list(keep func(store.Observation) bool) []store.Observation {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []store.Observation
	for _, id := range m.order {
		if o := m.obs[id]; keep(o) {
			out = append(out, o)
		}
	}
	return out
}

func (m *memStore) GetObservation(_ context.Context, id string) (store.Observation, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.obs[id]
	if !ok {
		return store.Observation{}, store.ErrNotFound
	}
	return o, nil
}

func (m *memStore) MarkExplained(_ context.Context, id string) error {
	if err := m.failing("mark-explained"); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	o := m.obs[id]
	o.Explained = true
	m.obs[id] = o
	return nil
}

func (m *memStore) CommitStep(_ context.Context, st store.Step) (bool, error) {
	if err := m.failing("commit"); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.casLocked(st.Item, st.ExpectedVersion) {
		return false, nil
	}
	if o := st.Observation; o != nil {
		if o.Status == "" {
			o.Status = store.ObservationJudged
		}
		if _, ok := m.obs[o.DeliveryID]; !ok {
			m.order = append(m.order, o.DeliveryID)
		}
		m.obs[o.DeliveryID] = *o
	}
	if st.Audit != nil {
		m.audit = append(m.audit, *st.Audit)
	}
	return true, nil
}

func (m *memStore) LegalStateAt(_ context.Context, id string, t time.Time) (string, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var first *store.Observation
	for _, oid := range m.order {
		o := m.obs[oid]
		if o.ItemID != id {
			continue
		}
		if o.Status == store.ObservationPending && o.At.Before(t) {
			return "", false, nil
		}
		if o.Status == store.ObservationJudged && !o.At.Before(t) && (first == nil || o.At.Before(first.At)) {
			first = &o
		}
	}
	if first != nil {
		return first.LegalFrom, true, nil
	}
	it, ok := m.items[id]
	return it.LastLegalState, ok, nil
}
