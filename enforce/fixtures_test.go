package enforce

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/policy"
)

// Fixtures shared by the reconciler, façade, automation and failure tests: a harness over a
// modified workflow or options, numbered issues, an observer, and boards that fail one item
// or one call at a time.

// newHarnessWith is newHarness over the default workflow changed by edit, with options changed
// by tweak (either may be nil).
func newHarnessWith(t *testing.T, edit func(*policy.Spec), tweak func(h *harness, o *Options), items ...Item) *harness {
	t.Helper()
	h := newHarness(t, items...)
	spec := policy.DefaultSpec()
	if edit != nil {
		edit(&spec)
	}
	m, problems := policy.Compile(spec)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	opts := Options{ReorderWindow: 5 * time.Second, CoalesceWindow: 10 * time.Minute, AppLogin: "ralph-gate[bot]", Redeliveries: h}
	if tweak != nil {
		tweak(h, &opts)
	}
	actors := policy.Actors{Agents: []string{"agent-*"}, Bypass: []string{"owner"}}
	h.svc = New(m, actors, h.st, func() time.Time { return h.now }, opts)
	return h
}

// useStore rebuilds the harness's service (default workflow and options) over st.
func (h *harness) useStore(st Store) {
	m, _ := policy.Compile(policy.DefaultSpec())
	h.svc = New(m, policy.Actors{Agents: []string{"agent-*"}, Bypass: []string{"owner"}}, st, func() time.Time { return h.now },
		Options{ReorderWindow: 5 * time.Second, CoalesceWindow: 10 * time.Minute, AppLogin: "ralph-gate[bot]", Redeliveries: h})
}

// issueN is issue with its own number, so that items do not share a violation comment.
func issueN(id, state string, number int) Item {
	it := issue(id, state)
	it.Number, it.Title = number, "Issue "+id
	return it
}

// child is issueN with a parent issue.
func child(id, state string, number int, parent Item) Item {
	it := issueN(id, state, number)
	it.ParentID, it.ParentNumber = parent.ContentID, parent.Number
	return it
}

// rel is an item as the relative Family returns.
func rel(it Item) Relative {
	return Relative{IssueID: it.ContentID, Number: it.Number, Title: it.Title, Repo: it.Repo, Open: it.Open,
		ItemID: it.ID, State: it.State, StateUpdatedAt: it.StateUpdatedAt, SubIssues: it.SubIssues}
}

// offProject is an issue that is not on the project (no item).
func offProject(number int) Relative {
	return Relative{IssueID: fmt.Sprintf("I_off%d", number), Number: number, Title: "elsewhere", Repo: "acme/app", Open: true}
}

// setFamily makes parent's Family list children (parent's summary counts them) and each child's
// name parent.
func setFamily(b *fakeBoard, parent Item, children ...Item) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.items[parent.ID]
	p.SubIssues = len(children)
	b.items[p.ID] = p
	fam := Family{Self: rel(p)}
	if f, ok := b.family[p.ContentID]; ok {
		fam.Parent, fam.OpenBlockers = f.Parent, f.OpenBlockers
	}
	for _, c := range children {
		cur := b.items[c.ID]
		cur.ParentID, cur.ParentNumber = p.ContentID, p.Number
		b.items[c.ID] = cur
		fam.Children = append(fam.Children, rel(cur))
		cf, ok := b.family[cur.ContentID]
		if !ok {
			cf = Family{Self: rel(cur)}
		}
		pr := rel(p)
		cf.Parent = &pr
		b.family[cur.ContentID] = cf
	}
	b.family[p.ContentID] = fam
}

// driftTo changes an item's value on the board without any webhook (a lost delivery).
func driftTo(b *fakeBoard, id, state string, at time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	it := b.items[id]
	it.State, it.StateUpdatedAt = state, at
	b.items[id] = it
}

// boardItem reads an item as the board has it now.
func (h *harness) boardItem(id string) Item {
	h.t.Helper()
	it, err := h.board.Item(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return it
}

// record is the item's stored record (fatal when there is none).
func (h *harness) record(id string) Record {
	h.t.Helper()
	rec, err := h.st.GetItem(context.Background(), id)
	if err != nil {
		h.t.Fatalf("record of %s: %v", id, err)
	}
	return rec
}

// hasRecord reports whether the store knows the item.
func (h *harness) hasRecord(id string) bool {
	_, err := h.st.GetItem(context.Background(), id)
	return err == nil
}

// audit is the item's audit entries.
func (h *harness) audit(id string) []AuditEntry {
	es, _ := h.st.entries(id)
	return es
}

// handoffs are the item's audit entries of handoffs made.
func (h *harness) handoffs(id string) []AuditEntry {
	return slices.DeleteFunc(h.audit(id), func(e AuditEntry) bool { return e.Verdict != VerdictHandoff })
}

// unfail lets an item's writes through again.
func (b *hookBoard) unfail(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.failSet, id)
}

// put stores a record as a webhook's judged history would have left it.
func (h *harness) put(rec Record) {
	h.t.Helper()
	if rec.ProjectID == "" {
		rec.ProjectID = "PVT_1"
	}
	if rec.ObservedState == "" {
		rec.ObservedState = rec.LastLegalState
	}
	if rec.LegalAt.IsZero() {
		rec.LegalAt, rec.ObservedAt = h.now.Add(-time.Hour), h.now.Add(-time.Hour)
	}
	if ok, err := h.st.CompareAndSetItem(context.Background(), rec, 0); err != nil || !ok {
		h.t.Fatalf("put %+v: %v %v", rec, ok, err)
	}
}

// adoptAll walks each item once with no report: its board value is adopted.
func (h *harness) adoptAll(ids ...string) {
	h.t.Helper()
	for _, id := range ids {
		if _, err := h.svc.Enforcer.walk(context.Background(), h.board, id, ""); err != nil {
			h.t.Fatalf("adopt %s: %v", id, err)
		}
	}
}

// comments are the bodies of every comment on the board, sorted.
func (h *harness) commentBodies() []string {
	h.board.mu.Lock()
	defer h.board.mu.Unlock()
	var out []string
	for _, b := range h.board.comments {
		out = append(out, b)
	}
	slices.Sort(out)
	return out
}

// verdicts lists the audit entries' verdicts, for messages.
func verdicts(es []AuditEntry) string {
	var b strings.Builder
	for _, e := range es {
		fmt.Fprintf(&b, "[%s %s→%s %s by %s] ", e.ItemID, e.FromState, e.ToState, e.Verdict, e.Actor)
	}
	return b.String()
}

// observer records the causes of automated moves and what became of provisional reverts.
type observer struct {
	mu          sync.Mutex
	causes      []Cause
	provisional map[bool]int
}

func (o *observer) ProvisionalReverted(confirmed bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.provisional == nil {
		o.provisional = map[bool]int{}
	}
	o.provisional[confirmed]++
}

func (o *observer) AutomationMoved(c Cause) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.causes = append(o.causes, c)
}

func (o *observer) count(c Cause) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, x := range o.causes {
		if x == c {
			n++
		}
	}
	return n
}

// sweeps counts the redelivery sweeps asked for and can fail the proof.
type sweeps struct {
	h        *harness
	mu       sync.Mutex
	requests int
	err      error
}

func (s *sweeps) RequestSweep(context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests++
}

func (s *sweeps) SweepProof(ctx context.Context) (policy.SweepProof, error) {
	s.mu.Lock()
	err := s.err
	s.mu.Unlock()
	if err != nil {
		return policy.SweepProof{}, fmt.Errorf("sweep proof: %w", err)
	}
	return s.h.SweepProof(ctx)
}

// rateLimited is GitHub asking to wait (the shape ghboard's rate-limit errors have).
type rateLimited struct{ wait time.Duration }

func (e *rateLimited) Error() string                     { return "rate limited for " + e.wait.String() }
func (e *rateLimited) RetryAfterDuration() time.Duration { return e.wait }

// hookBoard is a fakeBoard whose calls can be intercepted: failing one item or one issue, or
// acting (another claimer, a cancellation) just before a call.
type hookBoard struct {
	*fakeBoard
	mu         sync.Mutex
	failSet    map[string]error // item id -> SetState fails
	failFamily map[string]error // issue id -> Family fails
	pageFails  int              // ProjectItems fails this many more times
	pageErr    error
	beforeItem func(id string)
	beforeSet  func(id string)
	beforePage func()
}

func newHookBoard(b *fakeBoard) *hookBoard {
	return &hookBoard{fakeBoard: b, failSet: map[string]error{}, failFamily: map[string]error{}}
}

func (b *hookBoard) Item(ctx context.Context, id string) (Item, error) {
	b.mu.Lock()
	hook := b.beforeItem
	b.mu.Unlock()
	if hook != nil {
		hook(id)
	}
	return b.fakeBoard.Item(ctx, id)
}

func (b *hookBoard) SetState(ctx context.Context, it Item, state string) error {
	b.mu.Lock()
	err := b.failSet[it.ID]
	b.mu.Unlock()
	if err != nil {
		return fmt.Errorf("set %s: %w", it.ID, err)
	}
	return b.fakeBoard.SetState(ctx, it, state)
}

// SetStatesIf runs beforeSet for each write (a move made while the write waited for its
// turn), then guards it.
func (b *hookBoard) SetStatesIf(ctx context.Context, ws []StateWrite) []error {
	errs := make([]error, len(ws))
	for i, w := range ws {
		b.mu.Lock()
		hook := b.beforeSet
		b.mu.Unlock()
		if hook != nil {
			hook(w.Item.ID)
		}
		b.mu.Lock()
		err := b.failSet[w.Item.ID]
		b.mu.Unlock()
		if err != nil {
			errs[i] = fmt.Errorf("set %s: %w", w.Item.ID, err)
			continue
		}
		errs[i] = b.fakeBoard.SetStatesIf(ctx, []StateWrite{w})[0]
	}
	return errs
}

func (b *hookBoard) Family(ctx context.Context, issueID, projectID string) (Family, error) {
	b.mu.Lock()
	err := b.failFamily[issueID]
	b.mu.Unlock()
	if err != nil {
		return Family{}, fmt.Errorf("family of %s: %w", issueID, err)
	}
	return b.fakeBoard.Family(ctx, issueID, projectID)
}

func (b *hookBoard) ProjectItems(ctx context.Context, owner string, number int, after string) (ItemsPage, error) {
	b.mu.Lock()
	hook := b.beforePage
	var err error
	if b.pageFails > 0 {
		b.pageFails--
		err = b.pageErr
	}
	b.mu.Unlock()
	if hook != nil {
		hook()
	}
	if err != nil {
		b.fakeBoard.mu.Lock()
		b.fakeBoard.calls["ProjectItems"]++
		b.fakeBoard.mu.Unlock()
		return ItemsPage{}, fmt.Errorf("page: %w", err)
	}
	return b.fakeBoard.ProjectItems(ctx, owner, number, after)
}
