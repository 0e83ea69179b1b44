package enforce

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// memStore is an in-memory Store and ReconcileStore: the same contract as package store's
// (compare-and-set, a step committed at once or not at all, one claimer wins), thousands of
// times faster. fail, when set, is asked before each write whether to fail it (the history
// suites' crashes between two effects); broken fails every call of the named methods (the
// unit tests' failure paths).
type memStore struct {
	mu       sync.Mutex
	items    map[string]Record
	obs      map[string]Observation
	order    []string // observation delivery ids in arrival order
	audit    []AuditEntry
	comments map[string]ViolationComment
	cursors  map[string]string
	slots    map[string]Slot
	snapshot map[string]snapshotRow // the reconciler's snapshot, by item id
	fail     func(op string) error
	broken   map[string]error // method name -> the error it returns
	judged   map[string]int   // delivery id -> when its step was committed, in order
	seq      int
}

func newMemStore() *memStore {
	return &memStore{items: map[string]Record{}, obs: map[string]Observation{}, comments: map[string]ViolationComment{},
		cursors: map[string]string{}, slots: map[string]Slot{}, broken: map[string]error{}, judged: map[string]int{}}
}

func (m *memStore) ClaimSlot(_ context.Context, sl Slot) (Slot, bool, error) {
	if err := m.call("ClaimSlot"); err != nil {
		return Slot{}, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	held, ok := m.slots[sl.Key]
	if !ok {
		m.slots[sl.Key], held = sl, sl
	}
	return held, held.ItemID == sl.ItemID && held.Holder == sl.Holder, nil
}

func (m *memStore) GetSlot(_ context.Context, key string) (Slot, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	sl, ok := m.slots[key]
	return sl, ok, nil
}

func (m *memStore) ReleaseSlot(_ context.Context, key, itemID string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if sl, ok := m.slots[key]; ok && sl.ItemID == itemID {
		delete(m.slots, key)
		return true, nil
	}
	return false, nil
}

var errInjected = errors.New("injected failure")

// failing is asked by the writes the history suites crash.
func (m *memStore) failing(op string) error {
	if m.fail != nil {
		return m.fail(op)
	}
	return nil
}

// call fails a method the test broke.
func (m *memStore) call(method string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.broken[method]; err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	return nil
}

// breakOn makes every call of the named methods fail.
func (m *memStore) breakOn(err error, methods ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, name := range methods {
		m.broken[name] = err
	}
}

func (m *memStore) LockItem(context.Context, string) (func(), error) {
	if err := m.call("LockItem"); err != nil {
		return nil, err
	}
	return func() {}, nil
}

func (m *memStore) GetItem(_ context.Context, id string) (Record, error) {
	if err := m.call("GetItem"); err != nil {
		return Record{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	it, ok := m.items[id]
	if !ok {
		return Record{}, fmt.Errorf("item %q: %w", id, ErrNotFound)
	}
	return it, nil
}

func (m *memStore) ItemVersions(_ context.Context, ids []string) (map[string]int64, error) {
	if err := m.call("ItemVersions"); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]int64{}
	for _, id := range ids {
		if it, ok := m.items[id]; ok {
			out[id] = it.Version
		}
	}
	return out, nil
}

func (m *memStore) CompareAndSetItem(_ context.Context, it Record, expected int64) (bool, error) {
	if err := m.call("CompareAndSetItem"); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.casLocked(it, expected), nil
}

func (m *memStore) casLocked(it Record, expected int64) bool {
	cur, ok := m.items[it.ItemID]
	if (expected == 0 && ok) || (expected != 0 && (!ok || cur.Version != expected)) {
		return false
	}
	it.Version = expected + 1
	m.items[it.ItemID] = it
	return true
}

func (m *memStore) AppendAudit(_ context.Context, e AuditEntry) (int64, error) {
	if err := m.call("AppendAudit"); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.audit = append(m.audit, e)
	return int64(len(m.audit)), nil
}

func (m *memStore) CountInState(_ context.Context, projectID, state string) (int, error) {
	if err := m.call("CountInState"); err != nil {
		return 0, err
	}
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

// GetViolationComment is the issue's most recently updated violation comment, whoever's (the
// tests' view of "the" comment when one actor is involved).
func (m *memStore) GetViolationComment(_ context.Context, repo string, number int) (ViolationComment, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var newest ViolationComment
	found := false
	for k, c := range m.comments {
		if strings.HasPrefix(k, fmt.Sprintf("%s#%d#", repo, number)) && (!found || c.UpdatedAt.After(newest.UpdatedAt)) {
			newest, found = c, true
		}
	}
	if !found {
		return ViolationComment{}, ErrNotFound
	}
	return newest, nil
}

func (m *memStore) GetActorViolationComment(_ context.Context, repo string, number int, actor string) (ViolationComment, error) {
	if err := m.call("GetActorViolationComment"); err != nil {
		return ViolationComment{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.comments[fmt.Sprintf("%s#%d#%s", repo, number, actor)]
	if !ok {
		return ViolationComment{}, ErrNotFound
	}
	return c, nil
}

func (m *memStore) PutViolationComment(_ context.Context, repo string, number int, c ViolationComment) error {
	if err := m.call("PutViolationComment"); err != nil {
		return err
	}
	if err := m.failing("put-comment"); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.comments[fmt.Sprintf("%s#%d#%s", repo, number, c.Actor)] = c
	return nil
}

func (m *memStore) RecordObservation(_ context.Context, o Observation) (bool, error) {
	if err := m.call("RecordObservation"); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.obs[o.DeliveryID]; ok {
		return false, nil
	}
	o.Status = ObservationPending
	m.obs[o.DeliveryID] = o
	m.order = append(m.order, o.DeliveryID)
	return true, nil
}

func (m *memStore) RecordEvent(_ context.Context, delivery string, reports []Observation) error {
	if err := m.call("RecordEvent"); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if o, ok := m.obs[delivery]; ok && o.Status == ObservationPending {
		o.Status, o.Verdict, o.Reason = ObservationIgnored, VerdictIgnored, "recorded for its items"
		m.obs[delivery] = o
	}
	for _, o := range reports {
		if _, ok := m.obs[o.DeliveryID]; ok {
			continue
		}
		o.Status = ObservationPending
		m.obs[o.DeliveryID] = o
		m.order = append(m.order, o.DeliveryID)
	}
	return nil
}

func (m *memStore) EventReports(_ context.Context, delivery string) ([]Observation, error) {
	if err := m.call("EventReports"); err != nil {
		return nil, err
	}
	out := m.list(func(o Observation) bool { return strings.HasPrefix(o.DeliveryID, delivery+"#") })
	slices.SortFunc(out, func(a, b Observation) int { return strings.Compare(a.DeliveryID, b.DeliveryID) })
	return out, nil
}

func (m *memStore) PendingObservations(_ context.Context, itemID string) ([]Observation, error) {
	if err := m.call("PendingObservations"); err != nil {
		return nil, err
	}
	return m.list(func(o Observation) bool { return o.ItemID == itemID && o.Status == ObservationPending }), nil
}

func (m *memStore) Unexplained(_ context.Context, itemID string) ([]Observation, error) {
	if err := m.call("Unexplained"); err != nil {
		return nil, err
	}
	out := m.list(func(o Observation) bool {
		return o.ItemID == itemID && o.Status == ObservationJudged && o.Verdict.Refused() && !o.Explained
	})
	slices.SortStableFunc(out, func(a, b Observation) int { return a.At.Compare(b.At) })
	return out, nil
}

func (m *memStore) UnexplainedBy(_ context.Context, actor, projectID string, limit int) ([]RefusedStep, error) {
	if err := m.call("UnexplainedBy"); err != nil {
		return nil, err
	}
	obs := m.list(func(o Observation) bool {
		return o.Actor == actor && o.Status == ObservationJudged && o.Verdict.Refused() && !o.Explained && o.Lifecycle == "" &&
			m.onProject(o.ItemID, projectID)
	})
	slices.SortStableFunc(obs, func(a, b Observation) int { return a.JudgedAt.Compare(b.JudgedAt) })
	if limit > 0 && len(obs) > limit {
		obs = obs[:limit]
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]RefusedStep, len(obs))
	for i, o := range obs {
		rec := m.items[o.ItemID]
		out[i] = RefusedStep{Observation: o, Repo: rec.Repo, IssueNumber: rec.IssueNumber, LegalNow: rec.LastLegalState}
	}
	return out, nil
}

func (m *memStore) CountRefusedBy(_ context.Context, actor, projectID string, since time.Time) (int, error) {
	if err := m.call("CountRefusedBy"); err != nil {
		return 0, err
	}
	return len(m.list(func(o Observation) bool {
		return o.Actor == actor && o.Status == ObservationJudged && o.Verdict.Refused() && !o.JudgedAt.Before(since) &&
			m.onProject(o.ItemID, projectID)
	})), nil
}

// onProject reports whether an item's record is on a project ("": any); list's keep runs it
// under the store's lock.
func (m *memStore) onProject(itemID, projectID string) bool {
	return projectID == "" || m.items[itemID].ProjectID == projectID
}

func (m *memStore) list(keep func(Observation) bool) []Observation {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Observation
	for _, id := range m.order {
		if o := m.obs[id]; keep(o) {
			out = append(out, o)
		}
	}
	return out
}

func (m *memStore) GetObservation(_ context.Context, id string) (Observation, error) {
	if err := m.call("GetObservation"); err != nil {
		return Observation{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.obs[id]
	if !ok {
		return Observation{}, ErrNotFound
	}
	return o, nil
}

func (m *memStore) MarkExplained(_ context.Context, id string) error {
	if err := m.call("MarkExplained"); err != nil {
		return err
	}
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

func (m *memStore) CommitStep(_ context.Context, st Step) (bool, error) {
	if err := m.call("CommitStep"); err != nil {
		return false, err
	}
	if err := m.failing("commit"); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.casLocked(st.Record, st.ExpectedVersion) {
		return false, nil
	}
	if o := st.Observation; o != nil {
		if o.Status == "" {
			o.Status = ObservationJudged
		}
		if _, ok := m.obs[o.DeliveryID]; !ok {
			m.order = append(m.order, o.DeliveryID)
		}
		m.obs[o.DeliveryID] = *o
		m.seq++
		m.judged[o.DeliveryID] = m.seq // the order steps were judged in (judged_at, to the nanosecond)
	}
	if st.Audit != nil {
		m.audit = append(m.audit, *st.Audit)
	}
	return true, nil
}

func (m *memStore) LaterEvent(_ context.Context, ev Observation) (bool, error) {
	if err := m.call("LaterEvent"); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, o := range m.obs {
		if o.ItemID != ev.ItemID || (o.Lifecycle != LifecycleIssueClosed && o.Lifecycle != LifecycleIssueReopened) || o.DeliveryID == ev.DeliveryID {
			continue
		}
		// (Judged at one instant, as virtual time stands still: the later committed is later.)
		judgedAfter := o.JudgedAt.After(ev.JudgedAt) || (o.JudgedAt.Equal(ev.JudgedAt) && m.judged[o.DeliveryID] > m.judged[ev.DeliveryID])
		if (o.Status == ObservationPending && !o.At.Before(ev.At)) || o.At.After(ev.At) ||
			(o.Status != ObservationPending && o.At.Equal(ev.At) && judgedAfter) {
			return true, nil
		}
	}
	return false, nil
}

func (m *memStore) LastEvent(_ context.Context, id string) (Observation, bool, error) {
	if err := m.call("LastEvent"); err != nil {
		return Observation{}, false, err
	}
	var last Observation
	found := false
	for _, o := range m.list(func(o Observation) bool {
		return o.ItemID == id && o.Status != ObservationPending && (o.Lifecycle == LifecycleIssueClosed || o.Lifecycle == LifecycleIssueReopened)
	}) {
		later := o.At.Compare(last.At)
		if later == 0 {
			later = o.JudgedAt.Compare(last.JudgedAt)
		}
		if later == 0 {
			m.mu.Lock()
			later = m.judged[o.DeliveryID] - m.judged[last.DeliveryID] // committed after (virtual time stands still)
			m.mu.Unlock()
		}
		if !found || later > 0 {
			last, found = o, true
		}
	}
	return last, found, nil
}

func (m *memStore) AutomatedCauses(_ context.Context, id, to string, at time.Time) ([]string, error) {
	if err := m.call("AutomatedCauses"); err != nil {
		return nil, err
	}
	var causes []string
	for _, o := range m.list(func(o Observation) bool {
		return o.ItemID == id && o.Status == ObservationJudged && o.Verdict == VerdictAutomated && o.To == to && o.At.Equal(at)
	}) {
		causes = append(causes, o.Reason)
	}
	return causes, nil
}

func (m *memStore) FieldEdits(_ context.Context, id string, since time.Time) ([]Observation, error) {
	if err := m.call("FieldEdits"); err != nil {
		return nil, err
	}
	out := m.list(func(o Observation) bool {
		return o.ItemID == id && o.Field != "" && o.Status == ObservationJudged && !o.At.Before(since)
	})
	m.mu.Lock()
	defer m.mu.Unlock()
	slices.SortStableFunc(out, func(a, b Observation) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		return m.judged[a.DeliveryID] - m.judged[b.DeliveryID]
	})
	return out, nil
}

func (m *memStore) LegalStateAt(_ context.Context, id string, t time.Time) (string, bool, error) {
	if err := m.call("LegalStateAt"); err != nil {
		return "", false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var first *Observation
	for _, oid := range m.order {
		o := m.obs[oid]
		if o.ItemID != id {
			continue
		}
		if o.Status == ObservationPending && o.At.Before(t) && o.Field == "" {
			return "", false, nil
		}
		// The first in the item's history: by time, then in the order judged (as the store's
		// query orders them), then by arrival.
		if o.Status == ObservationJudged && !o.At.Before(t) && o.Field == "" &&
			(first == nil || o.At.Before(first.At) || (o.At.Equal(first.At) && m.judged[o.DeliveryID] < m.judged[first.DeliveryID])) {
			first = &o
		}
	}
	if first != nil {
		return first.LegalFrom, true, nil
	}
	it, ok := m.items[id]
	return it.LastLegalState, ok, nil
}

func (m *memStore) PendingItemsBefore(_ context.Context, t time.Time, except, exceptActor string) ([]string, error) {
	if err := m.call("PendingItemsBefore"); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, oid := range m.order {
		o := m.obs[oid]
		if o.Status == ObservationPending && o.At.Before(t) && o.ItemID != except && o.Actor != exceptActor && !seen[o.ItemID] {
			seen[o.ItemID] = true
			out = append(out, o.ItemID)
		}
	}
	for id, it := range m.items {
		if it.AutomateState != "" && !it.LegalAt.After(t) && id != except && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out, nil
}

func (m *memStore) ClaimLock(_ context.Context, id, holder string, now time.Time) (bool, error) {
	if err := m.call("ClaimLock"); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	it, ok := m.items[id]
	if !ok {
		it = Record{ItemID: id}
	}
	if it.LockHolder != "" && it.LockHolder != holder {
		return false, nil
	}
	if it.LockHolder != holder {
		it.LockSince = now
	}
	it.LockHolder = holder
	it.Version++
	m.items[id] = it
	return true, nil
}

func (m *memStore) ReleaseLock(_ context.Context, id, holder string, _ time.Time) (bool, error) {
	if err := m.call("ReleaseLock"); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	it, ok := m.items[id]
	if !ok || it.LockHolder == "" || (holder != "" && it.LockHolder != holder) {
		return false, nil
	}
	it.LockHolder, it.LockSince = "", time.Time{}
	it.Version++
	m.items[id] = it
	return true, nil
}

func (m *memStore) ListItems(_ context.Context, projectID string) ([]Record, error) {
	if err := m.call("ListItems"); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Record
	for _, it := range m.items {
		if projectID == "" || it.ProjectID == projectID {
			out = append(out, it)
		}
	}
	slices.SortFunc(out, func(a, b Record) int { return strings.Compare(a.ItemID, b.ItemID) })
	return out, nil
}

func (m *memStore) GetCursor(_ context.Context, name string) (string, error) {
	if err := m.call("GetCursor"); err != nil {
		return "", err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.cursors[name]
	if !ok {
		return "", fmt.Errorf("cursor %q: %w", name, ErrNotFound)
	}
	return v, nil
}

func (m *memStore) PutCursor(_ context.Context, name, value string) error {
	if err := m.call("PutCursor"); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cursors[name] = value
	return nil
}

func (m *memStore) PutSnapshot(_ context.Context, projectID string, items []Item, readAt time.Time) error {
	if err := m.call("PutSnapshot"); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.snapshot == nil {
		m.snapshot = map[string]snapshotRow{}
	}
	for _, it := range items {
		m.snapshot[it.ID] = snapshotRow{Item: it, projectID: projectID, readAt: readAt}
	}
	return nil
}

func (m *memStore) PruneSnapshot(_ context.Context, projectID string, before time.Time) error {
	if err := m.call("PruneSnapshot"); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, row := range m.snapshot {
		if row.projectID == projectID && row.readAt.Before(before) {
			delete(m.snapshot, id)
		}
	}
	return nil
}

// snapshotRow is one item of the reconciler's snapshot.
type snapshotRow struct {
	Item
	projectID string
	readAt    time.Time
}

var (
	_ Store          = (*memStore)(nil)
	_ ReconcileStore = (*memStore)(nil)
)

// entries are the audit entries of an item ("": all), oldest first.
func (m *memStore) entries(itemID string) ([]AuditEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []AuditEntry
	for _, e := range m.audit {
		if itemID == "" || e.ItemID == itemID {
			out = append(out, e)
		}
	}
	return out, nil
}
