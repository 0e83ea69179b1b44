package enforce

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/marker"
	"github.com/ralph-gate/ralph-gate/policy"
)

// fakeBoard is an in-memory board that records every write. Any method can be made to fail
// (breakOn), so that every failure path of enforcement is tested; family holds the relatives
// Family returns per issue (default: the issue alone).
type fakeBoard struct {
	mu       sync.Mutex
	items    map[string]Item
	sets     []string // "item=state"
	comments map[string]string
	adds     int
	updates  int
	family   map[string]Family // issue node id -> its family
	broken   map[string]error  // method name -> the error it returns
	rate     *RateLimit
	calls    map[string]int
	issues   []string // "issue=open" or "issue=closed:reason", in order
}

func newFakeBoard(items ...Item) *fakeBoard {
	b := &fakeBoard{items: map[string]Item{}, comments: map[string]string{}, family: map[string]Family{},
		broken: map[string]error{}, calls: map[string]int{}}
	for _, it := range items {
		b.items[it.ID] = it
	}
	return b
}

// breakOn makes every call of the named methods fail with err (nil: work again).
func (b *fakeBoard) breakOn(err error, methods ...string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range methods {
		b.broken[m] = err
	}
}

// call counts a call and fails it when the method is broken. It is called with b.mu held.
func (b *fakeBoard) call(method string) error {
	b.calls[method]++
	if err := b.broken[method]; err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	return nil
}

func (b *fakeBoard) Item(_ context.Context, id string) (Item, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("Item"); err != nil {
		return Item{}, err
	}
	it, ok := b.items[id]
	if !ok {
		return Item{}, fmt.Errorf("item %s: %w", id, ErrNotFound)
	}
	return it, nil
}

func (b *fakeBoard) RateLimit() (RateLimit, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rate == nil {
		return RateLimit{}, false
	}
	return *b.rate, true
}

func (b *fakeBoard) FindComment(_ context.Context, _, contains string) (Comment, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("FindComment"); err != nil {
		return Comment{}, false, err
	}
	for id, body := range b.comments {
		if strings.Contains(body, contains) {
			return Comment{ID: id}, true, nil
		}
	}
	return Comment{}, false, nil
}

func (b *fakeBoard) SetState(_ context.Context, it Item, state string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("SetState"); err != nil {
		return err
	}
	cur := b.items[it.ID]
	cur.State = state
	b.items[it.ID] = cur
	b.sets = append(b.sets, it.ID+"="+state)
	return nil
}

// SetStatesIf makes one guarded write after another (an item it does not hold is written).
func (b *fakeBoard) SetStatesIf(ctx context.Context, ws []StateWrite) []error {
	errs := make([]error, len(ws))
	for i, w := range ws {
		b.mu.Lock()
		cur, ok := b.items[w.Item.ID]
		b.mu.Unlock()
		if ok {
			if errs[i] = w.Guard(ctx, cur); errs[i] != nil {
				continue
			}
		}
		errs[i] = b.SetState(ctx, w.Item, w.State)
	}
	return errs
}

func (b *fakeBoard) AddComment(_ context.Context, subject, body string) (Comment, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("AddComment"); err != nil {
		return Comment{}, err
	}
	b.adds++
	id := "IC_" + subject + "_" + string(rune('0'+b.adds))
	b.comments[id] = body
	return Comment{ID: id, DatabaseID: int64(b.adds)}, nil
}

func (b *fakeBoard) UpdateComment(_ context.Context, id, body string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("UpdateComment"); err != nil {
		return err
	}
	b.updates++
	b.comments[id] = body
	return nil
}

func (b *fakeBoard) Family(_ context.Context, issueID, _ string) (Family, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("Family"); err != nil {
		return Family{}, err
	}
	if f, ok := b.family[issueID]; ok {
		return b.current(f), nil
	}
	for _, it := range b.items {
		if it.ContentID == issueID {
			return Family{Self: Relative{IssueID: it.ContentID, Number: it.Number, ItemID: it.ID, State: it.State, Open: true}}, nil
		}
	}
	return Family{}, nil
}

// ProjectItems pages through the items in id order, pageSize a page.
func (b *fakeBoard) ProjectItems(_ context.Context, _ string, _ int, after string) (ItemsPage, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("ProjectItems"); err != nil {
		return ItemsPage{}, err
	}
	ids := make([]string, 0, len(b.items))
	for id := range b.items {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	start := 0
	if after != "" {
		start = slices.Index(ids, after) + 1
	}
	page := ItemsPage{Total: len(ids)}
	for i := start; i < len(ids) && len(page.Items) < fakePageSize; i++ {
		page.Items = append(page.Items, b.items[ids[i]])
		page.EndCursor = ids[i]
	}
	page.HasNext = start+len(page.Items) < len(ids)
	return page, nil
}

// fakePageSize is how many items one ProjectItems page holds.
const fakePageSize = 3

// current fills a family's states (and own item) from the board as it is now.
func (b *fakeBoard) current(f Family) Family {
	fill := func(r Relative) Relative {
		if it, ok := b.items[r.ItemID]; ok {
			r.State, r.StateUpdatedAt = it.State, it.StateUpdatedAt
		}
		return r
	}
	out := Family{Self: fill(f.Self)}
	if f.Parent != nil {
		p := fill(*f.Parent)
		out.Parent = &p
	}
	for _, c := range f.Children {
		out.Children = append(out.Children, fill(c))
	}
	for _, c := range f.OpenBlockers {
		out.OpenBlockers = append(out.OpenBlockers, fill(c))
	}
	return out
}

func (b *fakeBoard) IssueItems(_ context.Context, _, _ string, number int) ([]Item, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("IssueItems"); err != nil {
		return nil, err
	}
	var out []Item
	for _, it := range b.items {
		if it.Number == number {
			out = append(out, it)
		}
	}
	return out, nil
}

// closes maps a pull request number to the issue numbers it closes.
var fakeCloses = map[int][]int{80: {7}}

func (b *fakeBoard) SetIssueOpen(_ context.Context, issueID string, open bool, reason string) error {
	if err := b.call("SetIssueOpen"); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for id, it := range b.items {
		if it.ContentID == issueID {
			it.Open = open
			b.items[id] = it
		}
	}
	state := "open"
	if !open {
		state = "closed:" + reason
	}
	b.issues = append(b.issues, issueID+"="+state)
	return nil
}

func (b *fakeBoard) ClosingIssues(_ context.Context, owner, repo string, number int) ([]IssueRef, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("ClosingIssues"); err != nil {
		return nil, err
	}
	var out []IssueRef
	for _, n := range fakeCloses[number] {
		out = append(out, IssueRef{Owner: owner, Repo: repo, Number: n})
	}
	return out, nil
}

// move simulates a person or agent changing the value on the board and returns the change
// the webhook would report.
func (b *fakeBoard) move(id, actor, to string, at time.Time) Change {
	b.mu.Lock()
	defer b.mu.Unlock()
	it := b.items[id]
	from := it.State
	it.State = to
	b.items[id] = it
	return Change{DeliveryID: id + actor + to + at.String(), ItemID: id, ProjectID: it.ProjectID, FromKnown: true,
		From: from, To: to, Actor: actor, At: at, ReceivedAt: at, ContentType: it.ContentType}
}

type harness struct {
	t     *testing.T
	svc   *Service
	board *fakeBoard
	st    *memStore
	now   time.Time
	// proof is what the harness's sweeper has proven: by default, that no webhook was ever
	// lost (every change up to an hour from now is reported), so changes are judged at once.
	proof policy.SweepProof
}

// unproven makes the harness's sweeper prove nothing new: reports wait for their proof.
func (h *harness) unproven() {
	h.proof = policy.SweepProof{Available: true, Full: true, Until: h.now.Add(-time.Hour)}
}

// proven makes it prove everything again.
func (h *harness) proven() { h.proof = policy.SweepProof{Available: true} }

// RequestSweep implements Redeliveries.
func (h *harness) RequestSweep(context.Context) {}

// SweepProof implements Redeliveries.
func (h *harness) SweepProof(context.Context) (policy.SweepProof, error) {
	if h.proof.Available && h.proof.Until.IsZero() {
		return policy.SweepProof{Available: true, Full: true, Until: h.now.Add(time.Hour)}, nil
	}
	return h.proof, nil
}

func newHarness(t *testing.T, items ...Item) *harness {
	t.Helper()
	m, problems := policy.Compile(policy.DefaultSpec())
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	st := newMemStore()
	h := &harness{t: t, board: newFakeBoard(items...), st: st, now: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC),
		proof: policy.SweepProof{Available: true}}
	actors := policy.Actors{Agents: []string{"agent-*"}, Bypass: []string{"owner"}}
	h.svc = New(m, actors, st, func() time.Time { return h.now }, Options{
		ReorderWindow: 5 * time.Second, CoalesceWindow: 10 * time.Minute, AppLogin: "ralph-gate[bot]", Redeliveries: h,
	})
	return h
}

func (h *harness) process(ch Change) Result {
	h.t.Helper()
	res, err := h.svc.Enforcer.ProcessChange(context.Background(), h.board, ch)
	if err != nil {
		h.t.Fatalf("ProcessChange: %v", err)
	}
	return res
}

// processDone processes a change as its job would, coming back while it waits (a wait woken
// by another item's walk, which may end before this one waits), draining the walks beside it.
func (h *harness) processDone(ch Change) Result {
	h.t.Helper()
	for attempt := 0; ; attempt++ {
		res := h.process(ch)
		h.drain()
		if res.Verdict != VerdictWait || attempt == 10 {
			return res
		}
	}
}

// drain waits for the walks the enforcer started beside the caller (woken items, owed writes).
func (h *harness) drain() {
	h.t.Helper()
	if err := h.svc.Enforcer.Drain(context.Background()); err != nil {
		h.t.Fatal(err)
	}
}

func issue(id, state string) Item {
	return Item{ID: id, ProjectID: "PVT_1", ProjectNumber: 1, Owner: "acme", ContentType: ContentIssue,
		ContentID: "I_" + id, Number: 7, Repo: "acme/app", Title: "Thing", Open: true, State: state}
}

func (h *harness) state(id string) string {
	it, _ := h.board.Item(context.Background(), id)
	return it.State
}

func TestLegalMoveStays(t *testing.T) {
	h := newHarness(t, issue("A", "Backlog"))
	res := h.process(h.board.move("A", "alice", "Research Needed", h.now))
	if res.Verdict != VerdictAllowed || h.state("A") != "Research Needed" || len(h.board.sets) != 0 {
		t.Fatalf("legal move: %+v, state %q, writes %v", res, h.state("A"), h.board.sets)
	}
}

func TestIllegalAgentMoveRevertedWithOneComment(t *testing.T) {
	h := newHarness(t, issue("A", "Backlog"))
	res := h.process(h.board.move("A", "agent-1", "In Progress", h.now))
	if res.Verdict != VerdictReverted || h.state("A") != "Backlog" {
		t.Fatalf("want revert to Backlog, got %+v state %q", res, h.state("A"))
	}
	if h.board.adds != 1 {
		t.Fatalf("want exactly one comment, got %d", h.board.adds)
	}
	for _, body := range h.board.comments {
		for _, want := range []string{ViolationMarker, "<!-- ralph-transition: ", "`agent-1`", "**Backlog**", "**In Progress**", "Research Needed"} {
			if !strings.Contains(body, want) {
				t.Errorf("comment lacks %q:\n%s", want, body)
			}
		}
		markers, err := marker.ParseTransitions(body)
		if err != nil || len(markers) != 1 || markers[0].From != "Backlog" || markers[0].To != "In Progress" {
			t.Errorf("markers = %+v, %v", markers, err)
		}
	}
	// A second violation within the window updates the same comment.
	h.now = h.now.Add(time.Minute)
	h.process(h.board.move("A", "agent-1", "In Review", h.now))
	if h.board.adds != 1 || h.board.updates != 1 {
		t.Fatalf("second violation: adds %d updates %d, want 1 and 1", h.board.adds, h.board.updates)
	}
	for _, body := range h.board.comments {
		if !strings.Contains(body, "2 Workflow State changes") {
			t.Errorf("coalesced comment does not count both:\n%s", body)
		}
		if m, _ := marker.ParseTransitions(body); len(m) != 2 {
			t.Errorf("coalesced comment has %d markers, want 2", len(m))
		}
	}
	// After the window, a new comment.
	h.now = h.now.Add(time.Hour)
	h.process(h.board.move("A", "agent-1", "In Review", h.now))
	if h.board.adds != 2 {
		t.Fatalf("after the window: adds %d, want 2", h.board.adds)
	}
}

func TestBypassActorAllowedAndAudited(t *testing.T) {
	h := newHarness(t, issue("A", "Backlog"))
	res := h.process(h.board.move("A", "owner", "In Review", h.now))
	if res.Verdict != VerdictAllowed || h.state("A") != "In Review" {
		t.Fatalf("bypass: %+v", res)
	}
	entries, err := h.st.entries("")
	if err != nil || len(entries) != 1 || entries[0].ActorKind != "bypass" || entries[0].Verdict != VerdictAllowed {
		t.Fatalf("audit = %+v, %v", entries, err)
	}
}

func TestOwnWritesIgnored(t *testing.T) {
	h := newHarness(t, issue("A", "Backlog"))
	res := h.process(h.board.move("A", "ralph-gate[bot]", "Done", h.now))
	if res.Verdict != VerdictIgnored || len(h.board.sets) != 0 {
		t.Fatalf("own write: %+v writes %v", res, h.board.sets)
	}
}

func TestReverseOrderLegalStepsNeverRevert(t *testing.T) {
	h := newHarness(t, issue("A", "Backlog"))
	// Establish a baseline.
	h.process(h.board.move("A", "alice", "Research Needed", h.now))
	t1, t2 := h.now.Add(time.Second), h.now.Add(2*time.Second)
	first := h.board.move("A", "agent-1", "Research in Progress", t1)
	second := h.board.move("A", "agent-1", "Ready for Plan", t2)
	h.now = t2
	h.unproven() // the earlier webhook may still be on its way
	if res := h.process(second); res.Verdict != VerdictWait {
		t.Fatalf("the later change must wait until nothing before it can be missing, got %+v", res)
	}
	if res := h.process(first); res.Verdict != VerdictWait {
		t.Fatalf("earlier change before the proof: %+v", res)
	}
	h.proven()
	if res := h.process(second); res.Verdict != VerdictAllowed {
		t.Fatalf("later change once proven: %+v", res)
	}
	if res := h.process(first); res.Verdict != VerdictAllowed {
		t.Fatalf("earlier change, judged in the same walk: %+v", res)
	}
	if len(h.board.sets) != 0 || h.state("A") != "Ready for Plan" {
		t.Fatalf("writes %v, state %q", h.board.sets, h.state("A"))
	}
}

func TestReverseOrderSameSecond(t *testing.T) {
	h := newHarness(t, issue("A", "Research Needed"))
	h.process(h.board.move("A", "alice", "Ready for Plan", h.now))
	first := h.board.move("A", "agent-1", "Plan in Progress", h.now)
	second := h.board.move("A", "agent-1", "Plan in Review", h.now)
	h.unproven()
	h.process(second)
	h.process(first)
	h.proven()
	h.process(second)
	if len(h.board.sets) != 0 || h.state("A") != "Plan in Review" {
		t.Fatalf("writes %v, state %q", h.board.sets, h.state("A"))
	}
}

// With no sweeper to ask, a change that never arrives is waited for one window; then the
// unreported step is judged as an unknown actor's, and the reported one from the state it left.
func TestMissingEarlierChangeJudgedAfterWindow(t *testing.T) {
	h := newHarness(t, issue("A", "Backlog"))
	h.proof = policy.SweepProof{} // no sweeper: only waiting out the window
	h.process(h.board.move("A", "alice", "Research Needed", h.now))
	h.board.move("A", "agent-1", "Research in Progress", h.now.Add(time.Second)) // webhook lost
	late := h.board.move("A", "agent-1", "Done", h.now.Add(2*time.Second))
	h.now = h.now.Add(3 * time.Second)
	if res := h.process(late); res.Verdict != VerdictWait {
		t.Fatalf("inside the window: %+v, want a wait for the missing change", res)
	}
	h.now = h.now.Add(10 * time.Second) // past the reorder window
	res := h.process(late)
	if res.Verdict != VerdictReverted || h.state("A") != "Research in Progress" {
		t.Fatalf("want Research in Progress → Done judged and reverted, got %+v state %q", res, h.state("A"))
	}
	rec, _ := h.st.GetItem(context.Background(), "A")
	if rec.LockHolder != "" {
		t.Errorf("a lock taken by an unreported change has holder %q; nobody known holds it", rec.LockHolder)
	}
	entries, _ := h.st.entries("A")
	var unknown int
	for _, e := range entries {
		if e.Actor == DriftActor && e.ToState == "Research in Progress" && e.Verdict == VerdictAllowed {
			unknown++
		}
		if e.Actor == "agent-1" && e.ToState == "Research in Progress" {
			t.Errorf("an unreported step was attributed to a known actor: %+v", e)
		}
	}
	if unknown != 1 {
		t.Errorf("want the unreported step audited once as the unknown actor's, got %d (%+v)", unknown, entries)
	}
}

func TestLegalNewerValueNeverOverwritten(t *testing.T) {
	h := newHarness(t, issue("A", "Backlog"))
	h.process(h.board.move("A", "alice", "Research Needed", h.now))
	illegal := h.board.move("A", "agent-1", "In Review", h.now.Add(time.Second))
	fix := h.board.move("A", "alice", "Ready for Plan", h.now.Add(2*time.Second))
	h.now = h.now.Add(3 * time.Second)
	// The illegal change's webhook is late: the board already shows a newer value, whose
	// webhook has arrived (its job has not run yet).
	if _, err := h.svc.Enforcer.Observe(context.Background(), fix); err != nil {
		t.Fatal(err)
	}
	if res := h.process(illegal); res.Verdict != VerdictSuperseded {
		t.Fatalf("late illegal change: %+v", res)
	}
	if res := h.process(fix); res.Verdict != VerdictAllowed {
		t.Fatalf("the human's fix: %+v", res)
	}
	if len(h.board.sets) != 0 || h.state("A") != "Ready for Plan" {
		t.Fatalf("a newer legal value was overwritten: writes %v state %q", h.board.sets, h.state("A"))
	}
}

func TestStaleChangeIgnored(t *testing.T) {
	h := newHarness(t, issue("A", "Backlog"))
	old := h.board.move("A", "alice", "Research Needed", h.now)
	newer := h.board.move("A", "alice", "Ready for Plan", h.now.Add(time.Second))
	h.process(old)
	h.process(newer)
	old.DeliveryID = "redelivered-later"
	if res := h.process(old); res.Verdict != VerdictIgnored && res.Verdict != VerdictWait {
		t.Fatalf("stale change: %+v", res)
	}
	if len(h.board.sets) != 0 {
		t.Fatalf("writes %v", h.board.sets)
	}
}

func TestDuplicateProcessingActsOnce(t *testing.T) {
	h := newHarness(t, issue("A", "Backlog"))
	ch := h.board.move("A", "agent-1", "In Progress", h.now)
	h.process(ch)
	h.process(ch)
	if len(h.board.sets) != 1 || h.board.adds != 1 || h.board.updates != 0 {
		t.Fatalf("duplicate: writes %v adds %d updates %d", h.board.sets, h.board.adds, h.board.updates)
	}
}

func TestDraftRevertedWithoutComment(t *testing.T) {
	d := issue("D", "Backlog")
	d.ContentType, d.Number, d.Repo = ContentDraftIssue, 0, ""
	h := newHarness(t, d)
	res := h.process(h.board.move("D", "agent-1", "In Review", h.now))
	if res.Verdict != VerdictReverted || h.board.adds != 0 {
		t.Fatalf("draft: %+v adds %d", res, h.board.adds)
	}
}

func TestUnknownOptionAndUnsetRules(t *testing.T) {
	tests := []struct {
		name    string
		start   string
		actor   string
		to      string
		outcome Verdict
		final   string
	}{
		{"unknown option reverted", "Backlog", "alice", "Someday", VerdictReverted, "Backlog"},
		{"unset to initial allowed", "", "agent-1", "Research Needed", VerdictAllowed, "Research Needed"},
		{"unset to non-initial reverted to unset", "", "agent-1", "In Progress", VerdictReverted, ""},
		{"human leaves Human Needed", "Human Needed", "alice", "Backlog", VerdictAllowed, "Backlog"},
		{"agent may not leave Human Needed", "Human Needed", "agent-1", "Backlog", VerdictReverted, "Human Needed"},
		{"agent escalates", "In Progress", "agent-1", "Human Needed", VerdictAllowed, "Human Needed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, issue("A", tt.start))
			res := h.process(h.board.move("A", tt.actor, tt.to, h.now))
			if res.Verdict != tt.outcome || h.state("A") != tt.final {
				t.Fatalf("got %v (%s), state %q; want %v, %q", res.Verdict, res.Reason, h.state("A"), tt.outcome, tt.final)
			}
		})
	}
}

func TestLockRecordedAndReleased(t *testing.T) {
	h := newHarness(t, issue("A", "Research Needed"))
	h.process(h.board.move("A", "agent-1", "Research in Progress", h.now))
	rec, err := h.st.GetItem(context.Background(), "A")
	if err != nil || rec.LockHolder != "agent-1" {
		t.Fatalf("lock holder = %q, %v", rec.LockHolder, err)
	}
	h.now = h.now.Add(time.Second)
	// Another agent may not take the item out of agent-1's lock.
	if res := h.process(h.board.move("A", "agent-2", "Ready for Plan", h.now)); res.Verdict != VerdictReverted {
		t.Fatalf("foreign agent: %+v", res)
	}
	h.now = h.now.Add(time.Second)
	if res := h.process(h.board.move("A", "agent-1", "Ready for Plan", h.now)); res.Verdict != VerdictAllowed {
		t.Fatalf("holder: %+v", res)
	}
	rec, _ = h.st.GetItem(context.Background(), "A")
	if rec.LockHolder != "" {
		t.Fatalf("lock not released: %+v", rec)
	}
}

func TestConcurrentChangesOfOneItemSerialize(t *testing.T) {
	h := newHarness(t, issue("A", "Backlog"))
	ch := h.board.move("A", "agent-1", "In Progress", h.now)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := h.svc.Enforcer.ProcessChange(context.Background(), h.board, ch); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if len(h.board.sets) != 1 || h.board.adds != 1 {
		t.Fatalf("writes %v adds %d", h.board.sets, h.board.adds)
	}
}

func TestLifecycleTargets(t *testing.T) {
	tests := []struct {
		name, start string
		ev          Lifecycle
		want        string
	}{
		{"merge moves In Progress to In Review", "In Progress", Lifecycle{Kind: LifecyclePRMerged, Number: 80}, "In Review"},
		{"merge moves In Review to Done", "In Review", Lifecycle{Kind: LifecyclePRMerged, Number: 80}, "Done"},
		{"merge leaves Done alone (the issue was closed first)", "Done", Lifecycle{Kind: LifecyclePRMerged, Number: 80}, "Done"},
		{"merge leaves other states alone", "Plan in Review", Lifecycle{Kind: LifecyclePRMerged, Number: 80}, "Plan in Review"},
		{"closed as completed", "In Progress", Lifecycle{Kind: LifecycleIssueClosed, Number: 7, StateReason: "completed"}, "Done"},
		{"closed as not planned", "Backlog", Lifecycle{Kind: LifecycleIssueClosed, Number: 7, StateReason: "not_planned"}, "Canceled"},
		{"closed without a reason", "Backlog", Lifecycle{Kind: LifecycleIssueClosed, Number: 7}, "Done"},
		{"reopened", "Done", Lifecycle{Kind: LifecycleIssueReopened, Number: 7}, "Backlog"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, issue("A", tt.start))
			// A bypass login: its lifecycle moves are never refused (lifecyclemoves.go).
			tt.ev.Owner, tt.ev.Repo, tt.ev.Actor = "acme", "app", "owner"
			if _, err := h.svc.Enforcer.ProcessLifecycle(context.Background(), h.board, tt.ev); err != nil {
				t.Fatal(err)
			}
			if got := h.state("A"); got != tt.want {
				t.Fatalf("state %q, want %q", got, tt.want)
			}
			rec, err := h.st.GetItem(context.Background(), "A")
			if tt.want != tt.start && (err != nil || rec.LastLegalState != tt.want) {
				t.Fatalf("last legal state not recorded: %+v %v", rec, err)
			}
		})
	}
}

func TestFirstSightWithoutFromAdoptsCurrentValue(t *testing.T) {
	h := newHarness(t, issue("A", "In Review"))
	ch := h.board.move("A", "agent-1", "In Review", h.now)
	ch.FromKnown, ch.From = false, ""
	res := h.process(ch)
	if res.Verdict != VerdictAllowed || len(h.board.sets) != 0 {
		t.Fatalf("%+v writes %v", res, h.board.sets)
	}
	rec, err := h.st.GetItem(context.Background(), "A")
	if err != nil || rec.LastLegalState != "In Review" {
		t.Fatalf("%+v %v", rec, err)
	}
}

// A write of the app's that its history does not hold (every write is journaled before it is
// made, so one is a write that landed after changes its history judged first: GitHub has no
// conditional write) is known from the app's own webhook as the app's change of the card, no
// step: the legal state stays, the card is put back to it once, and nobody is blamed.
func TestAnUnheldWriteOfTheAppsChangesTheCardOnly(t *testing.T) {
	h := newHarness(t, issue("A", "Ready for Plan"))
	if _, err := h.svc.Enforcer.walk(context.Background(), h.board, "A", ""); err != nil { // first sight: adopted
		t.Fatal(err)
	}
	// The app's cascade write lands; its record does not.
	own := h.board.move("A", "ralph-gate[bot]", "In Progress", h.now.Add(time.Second))
	if _, err := h.svc.Enforcer.Observe(context.Background(), own); err != nil {
		t.Fatal(err)
	}
	h.now = h.now.Add(time.Minute)
	if _, err := h.svc.Enforcer.walk(context.Background(), h.board, "A", ""); err != nil {
		t.Fatal(err)
	}
	if len(h.board.sets) != 1 || h.board.adds != 0 || h.state("A") != "Ready for Plan" {
		t.Fatalf("want the legal value put back once, silently: writes %v, %d comments, state %q", h.board.sets, h.board.adds, h.state("A"))
	}
	rec, _ := h.st.GetItem(context.Background(), "A")
	if rec.LastLegalState != "Ready for Plan" || rec.ObservedState != "Ready for Plan" {
		t.Fatalf("record %+v: want the legal state kept", rec)
	}
	entries, _ := h.st.entries("A")
	for _, e := range entries {
		if e.Actor == DriftActor && e.Verdict != VerdictAdopted {
			t.Errorf("the app's own write was blamed on an unknown author: %+v", e)
		}
	}
}
