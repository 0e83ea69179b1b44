package enforce

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

const (
	cursorA1  = cursorReconcilePrefix + "acme/1"
	budgetKey = cursorReconcileBudget
)

var project1 = ProjectRef{Owner: "acme", Number: 1}

func (h *harness) reconcile(opts ReconcileOptions) (ReconcileReport, error) {
	return h.reconcileOn(context.Background(), h.board, h.st, opts)
}

func (h *harness) reconcileOn(ctx context.Context, b Board, st ReconcileStore, opts ReconcileOptions) (ReconcileReport, error) {
	return h.svc.Reconciler.Reconcile(ctx, b, st, project1, opts)
}

// mustReconcile reconciles and fails the test on an error.
func (h *harness) mustReconcile(opts ReconcileOptions) ReconcileReport {
	h.t.Helper()
	rep, err := h.reconcile(opts)
	if err != nil {
		h.t.Fatalf("reconcile: %v (report %+v)", err, rep)
	}
	return rep
}

// totalCalls is every counted call the fake board received.
func (b *fakeBoard) totalCalls() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, c := range b.calls {
		n += c
	}
	return n
}

// budgetCursor is the stored budget window as the reconciler writes it.
func budgetCursor(reset time.Time, spent int) string {
	return fmt.Sprintf("%d %d", reset.Unix(), spent)
}

func TestReconcileAdoptsUnseenItemsThenFindsThemInSync(t *testing.T) {
	archived := issueN("D", "Backlog", 4)
	archived.Archived = true
	h := newHarness(t, issueN("A", "Backlog", 1), issueN("B", "In Progress", 2), issueN("C", "", 3), archived)

	rep := h.mustReconcile(ReconcileOptions{})
	want := ReconcileReport{Owner: "acme", Number: 1, Pages: 2, Items: 4, Adopted: 3, Archived: 1, Requests: 2, Budget: 1000, Complete: true}
	rep.Duration = 0
	if rep != want {
		t.Fatalf("first pass:\n got %+v\nwant %+v", rep, want)
	}
	for id, state := range map[string]string{"A": "Backlog", "B": "In Progress", "C": ""} {
		rec := h.record(id)
		if rec.LastLegalState != state || rec.ObservedState != state || rec.ProjectID != "PVT_1" || rec.Repo != "acme/app" || rec.LegalAt != h.now {
			t.Errorf("%s: record %+v, want %q adopted now", id, rec, state)
		}
		es := h.audit(id)
		if len(es) != 1 || es[0].Verdict != VerdictAdopted || es[0].Rule != "reconcile" || es[0].Actor != DriftActor || es[0].ToState != state {
			t.Errorf("%s: audit %s", id, verdicts(es))
		}
	}
	if h.hasRecord("D") {
		t.Errorf("an archived item was adopted")
	}
	if len(h.board.sets) != 0 || h.board.adds != 0 {
		t.Fatalf("adoption wrote to the board: %v, %d comments", h.board.sets, h.board.adds)
	}
	window := h.now.Truncate(time.Hour).Add(time.Hour)
	if c := h.st.cursors[cursorA1]; c != "" {
		t.Errorf("a complete pass left cursor %q", c)
	}
	if c := h.st.cursors[budgetKey]; c != budgetCursor(window, 2) {
		t.Errorf("budget %q, want %q", c, budgetCursor(window, 2))
	}

	// The next pass finds everything as recorded, and adds its spend to the window's.
	h.now = h.now.Add(time.Minute)
	rep = h.mustReconcile(ReconcileOptions{})
	if rep.InSync != 3 || rep.Archived != 1 || rep.Adopted != 0 || rep.Drifted != 0 || !rep.Complete {
		t.Fatalf("second pass: %+v", rep)
	}
	if es, _ := h.st.entries(""); len(es) != 3 {
		t.Fatalf("an in-sync pass audited: %s", verdicts(es))
	}
	if c := h.st.cursors[budgetKey]; c != budgetCursor(window, 4) {
		t.Errorf("budget %q, want %q", c, budgetCursor(window, 4))
	}

	// In the next rate-limit window, what was spent before no longer counts.
	h.now = h.now.Add(time.Hour)
	h.mustReconcile(ReconcileOptions{})
	if c := h.st.cursors[budgetKey]; c != budgetCursor(window.Add(time.Hour), 2) {
		t.Errorf("budget in a new window %q, want %q", c, budgetCursor(window.Add(time.Hour), 2))
	}
}

// A value no webhook reported is judged as the unknown actor's, with an agent's rights: what an
// agent may not do is set back (with an explanation), what it may do stands.
func TestReconcileJudgesDriftWithAgentRights(t *testing.T) {
	tests := []struct {
		id, from, to string
		verdict      Verdict
		final        string
	}{
		{"A", "Backlog", "In Progress", VerdictReverted, "Backlog"},
		{"B", "Human Needed", "Backlog", VerdictReverted, "Human Needed"}, // a human could; the unknown author may not
		{"C", "Research Needed", "Research in Progress", VerdictAllowed, "Research in Progress"},
	}
	var items []Item
	for i, tt := range tests {
		items = append(items, issueN(tt.id, tt.from, i+1))
	}
	h := newHarness(t, items...)
	h.mustReconcile(ReconcileOptions{})
	h.now = h.now.Add(time.Minute)
	for _, tt := range tests {
		driftTo(h.board, tt.id, tt.to, time.Time{})
	}
	before := h.board.totalCalls()

	rep := h.mustReconcile(ReconcileOptions{})
	if rep.Items != 3 || rep.Drifted != 3 || rep.Reverted != 2 || rep.Accepted != 1 || rep.InSync != 0 || !rep.Complete {
		t.Fatalf("report %+v", rep)
	}
	if got := h.board.totalCalls() - before; rep.Requests != got {
		t.Errorf("report counts %d requests, the board got %d", rep.Requests, got)
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			if got := h.state(tt.id); got != tt.final {
				t.Errorf("board %q, want %q", got, tt.final)
			}
			rec := h.record(tt.id)
			if rec.LastLegalState != tt.final || rec.ObservedState != tt.final || rec.LockHolder != "" {
				t.Errorf("record %+v", rec)
			}
			es := h.audit(tt.id)
			if len(es) != 2 {
				t.Fatalf("audit %s, want the adoption and the drift", verdicts(es))
			}
			d := es[1]
			if d.Actor != DriftActor || d.ActorKind != "agent" || d.FromState != tt.from || d.ToState != tt.to || d.Verdict != tt.verdict ||
				!strings.HasPrefix(d.DeliveryID, "unobserved:"+tt.id+":") {
				t.Errorf("drift audited as %+v", d)
			}
		})
	}
	// One explanation per reverted item, none for the legal drift.
	if h.board.adds != 2 || len(h.board.sets) != 2 {
		t.Fatalf("%d comments, writes %v", h.board.adds, h.board.sets)
	}
	for _, body := range h.commentBodies() {
		if !strings.Contains(body, "A change no webhook reported") {
			t.Errorf("the comment does not say the author is unknown:\n%s", body)
		}
	}
	// Set back, everything is in sync.
	if rep := h.mustReconcile(ReconcileOptions{}); rep.InSync != 3 || rep.Drifted != 0 {
		t.Fatalf("after the reverts: %+v", rep)
	}
}

func TestReconcileLeavesRecentChangesToTheirWebhooks(t *testing.T) {
	h := newHarness(t, issueN("A", "Backlog", 1), issueN("B", "Backlog", 2))
	h.adoptAll("B")
	recent := h.now.Add(-10 * time.Second)
	driftTo(h.board, "A", "Research Needed", recent) // never seen, changed just now
	driftTo(h.board, "B", "In Progress", recent)     // seen, and changed just now
	opts := ReconcileOptions{Settle: time.Minute}

	rep := h.mustReconcile(opts)
	if rep.Deferred != 2 || rep.Adopted != 0 || rep.Drifted != 0 || !rep.Complete {
		t.Fatalf("report %+v", rep)
	}
	if h.hasRecord("A") || h.state("B") != "In Progress" || len(h.board.sets) != 0 {
		t.Fatalf("a settling item was handled: A recorded %v, writes %v", h.hasRecord("A"), h.board.sets)
	}

	h.now = h.now.Add(2 * time.Minute)
	rep = h.mustReconcile(opts)
	if rep.Deferred != 0 || rep.Adopted != 1 || rep.Drifted != 1 || rep.Reverted != 1 {
		t.Fatalf("once settled: %+v", rep)
	}
	if rec := h.record("A"); rec.LastLegalState != "Research Needed" || !rec.LegalAt.Equal(recent) {
		t.Errorf("adopted %+v, want its value dated when it changed", rec)
	}
	if h.state("B") != "Backlog" {
		t.Errorf("B is %q, want the drift set back", h.state("B"))
	}
}

// The reconciler spends its share of the rate limit and no more: it stops at a page boundary,
// saves its place, and the next pass in a new window resumes there.
func TestReconcileBudgetPausesAndResumes(t *testing.T) {
	var items []Item
	for i := 1; i <= 7; i++ {
		items = append(items, issueN(fmt.Sprintf("I%d", i), "Backlog", i))
	}
	h := newHarness(t, items...)
	reset := h.now.Add(30 * time.Minute)
	h.board.rate = &RateLimit{Limit: 10, Remaining: 10, Reset: reset} // a fifth of 10: 2 requests

	rep := h.mustReconcile(ReconcileOptions{})
	if rep.Pages != 2 || rep.Items != 6 || rep.Adopted != 6 || rep.Complete || rep.Requests != 2 || rep.Budget != 2 ||
		!strings.HasPrefix(rep.Paused, "budget: 2 of 2 requests spent") {
		t.Fatalf("first pass %+v", rep)
	}
	if c := h.st.cursors[cursorA1]; c != "I6" {
		t.Fatalf("cursor %q, want the second page's end", c)
	}
	if c := h.st.cursors[budgetKey]; c != budgetCursor(reset, 2) {
		t.Fatalf("budget %q", c)
	}

	// Same window: nothing left to spend, nothing read.
	rep = h.mustReconcile(ReconcileOptions{})
	if rep.Pages != 0 || rep.Requests != 0 || rep.Complete || !strings.HasPrefix(rep.Paused, "budget:") {
		t.Fatalf("spent window %+v", rep)
	}
	if h.board.calls["ProjectItems"] != 2 {
		t.Fatalf("%d page reads", h.board.calls["ProjectItems"])
	}

	// A new window: the pass resumes after the saved cursor and finishes.
	h.board.rate = &RateLimit{Limit: 10, Remaining: 10, Reset: reset.Add(time.Hour)}
	rep = h.mustReconcile(ReconcileOptions{})
	if rep.Pages != 1 || rep.Items != 1 || rep.Adopted != 1 || !rep.Complete || rep.Paused != "" {
		t.Fatalf("resumed pass %+v", rep)
	}
	if c := h.st.cursors[cursorA1]; c != "" {
		t.Errorf("cursor %q after the last page", c)
	}
	if c := h.st.cursors[budgetKey]; c != budgetCursor(reset.Add(time.Hour), 1) {
		t.Errorf("budget %q", c)
	}
	if es, _ := h.st.entries(""); len(es) != 7 {
		t.Errorf("want each item adopted once: %s", verdicts(es))
	}
}

// A drift costs up to driftCost requests: with less left, the pass stops before it.
func TestReconcileStopsBeforeADriftItCannotAfford(t *testing.T) {
	h := newHarness(t, issueN("A", "Backlog", 1))
	h.mustReconcile(ReconcileOptions{})
	driftTo(h.board, "A", "In Progress", time.Time{})
	h.now = h.now.Add(time.Minute)
	h.board.rate = &RateLimit{Limit: 15, Reset: h.now.Add(time.Hour)} // 3 requests

	rep := h.mustReconcile(ReconcileOptions{})
	if rep.Pages != 1 || rep.Items != 0 || rep.Drifted != 0 || rep.Complete || !strings.Contains(rep.Paused, "1 of 3 requests") {
		t.Fatalf("report %+v", rep)
	}
	if h.state("A") != "In Progress" || len(h.board.sets) != 0 {
		t.Fatalf("the drift was handled without budget: writes %v", h.board.sets)
	}

	h.board.rate = &RateLimit{Limit: 100, Reset: h.now.Add(2 * time.Hour)}
	if rep := h.mustReconcile(ReconcileOptions{}); rep.Reverted != 1 || !rep.Complete {
		t.Fatalf("with budget: %+v", rep)
	}
}

// When GitHub moves to a new rate-limit window during a pass, only the pass's own requests count
// in it.
func TestReconcileBudgetFollowsTheWindowGitHubReports(t *testing.T) {
	h := newHarness(t, issueN("A", "Backlog", 1))
	old := h.now.Add(10 * time.Minute)
	h.board.rate = &RateLimit{Limit: 5000, Reset: old}
	h.st.cursors[budgetKey] = budgetCursor(old, 900)
	hb := newHookBoard(h.board)
	next := old.Add(time.Hour)
	hb.beforePage = func() { h.board.rate = &RateLimit{Limit: 5000, Reset: next} }

	rep, err := h.reconcileOn(context.Background(), hb, h.st, ReconcileOptions{})
	if err != nil || !rep.Complete || rep.Requests != 1 {
		t.Fatalf("%+v %v", rep, err)
	}
	if c := h.st.cursors[budgetKey]; c != budgetCursor(next, 1) {
		t.Fatalf("budget %q, want only this pass's request in the new window", c)
	}
}

func TestReconcileRateLimitPausesAndIsReturned(t *testing.T) {
	h := newHarness(t, issueN("A", "Backlog", 1))
	h.board.breakOn(&rateLimited{wait: time.Minute}, "ProjectItems")
	rep, err := h.reconcile(ReconcileOptions{PageAttempts: 5})
	var rl *rateLimited
	if !errors.As(err, &rl) || rl.wait != time.Minute {
		t.Fatalf("error %v, want the rate limit", err)
	}
	if rep.Paused != "github asked to wait 1m0s" || rep.Complete || rep.Requests != 1 {
		t.Fatalf("report %+v", rep)
	}
	if h.board.calls["ProjectItems"] != 1 {
		t.Fatalf("a rate limit was retried: %d reads", h.board.calls["ProjectItems"])
	}
	window := h.now.Truncate(time.Hour).Add(time.Hour)
	if c := h.st.cursors[budgetKey]; c != budgetCursor(window, 1) {
		t.Errorf("the spend was not saved: %q", c)
	}
	if h.hasRecord("A") {
		t.Error("an item was adopted without a page")
	}
}

func TestReconcileRetriesTransientPageFailures(t *testing.T) {
	t.Run("recovers", func(t *testing.T) {
		h := newHarness(t, issueN("A", "Backlog", 1))
		hb := newHookBoard(h.board)
		hb.pageFails, hb.pageErr = 1, errInjected
		rep, err := h.reconcileOn(context.Background(), hb, h.st, ReconcileOptions{})
		if err != nil || !rep.Complete || rep.Pages != 1 || rep.Adopted != 1 || rep.Requests != 2 {
			t.Fatalf("%+v %v", rep, err)
		}
	})
	t.Run("gives up", func(t *testing.T) {
		h := newHarness(t, issueN("A", "Backlog", 1))
		h.board.breakOn(errInjected, "ProjectItems")
		rep, err := h.reconcile(ReconcileOptions{PageAttempts: 2})
		if !errors.Is(err, errInjected) || !strings.Contains(err.Error(), "reconcile acme/1") {
			t.Fatalf("error %v", err)
		}
		if h.board.calls["ProjectItems"] != 2 || rep.Complete || rep.Paused != "" || rep.Requests != 2 {
			t.Fatalf("%d reads, report %+v", h.board.calls["ProjectItems"], rep)
		}
	})
}

func TestReconcileStopsWhenCancelled(t *testing.T) {
	t.Run("before the first page", func(t *testing.T) {
		h := newHarness(t, issueN("A", "Backlog", 1))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		rep, err := h.reconcileOn(ctx, h.board, h.st, ReconcileOptions{})
		if err != nil || rep.Paused != "stopping" || rep.Pages != 0 || h.board.calls["ProjectItems"] != 0 {
			t.Fatalf("%+v %v", rep, err)
		}
		if _, ok := h.st.cursors[budgetKey]; !ok {
			t.Error("the budget was not saved on the way out")
		}
	})
	t.Run("during a page read", func(t *testing.T) {
		h := newHarness(t, issueN("A", "Backlog", 1))
		ctx, cancel := context.WithCancel(context.Background())
		hb := newHookBoard(h.board)
		hb.pageFails, hb.pageErr = 1, context.Canceled
		hb.beforePage = cancel
		rep, err := h.reconcileOn(ctx, hb, h.st, ReconcileOptions{})
		if err != nil || rep.Paused != "stopping" || rep.Pages != 0 || h.hasRecord("A") {
			t.Fatalf("%+v %v", rep, err)
		}
	})
	t.Run("while waiting to retry", func(t *testing.T) {
		h := newHarness(t, issueN("A", "Backlog", 1))
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		h.board.breakOn(errInjected, "ProjectItems")
		rep, err := h.reconcileOn(ctx, h.board, h.st, ReconcileOptions{PageAttempts: 3})
		if err != nil || rep.Paused != "stopping" || h.board.calls["ProjectItems"] != 1 {
			t.Fatalf("%+v %v (%d reads)", rep, err, h.board.calls["ProjectItems"])
		}
	})
}

// faultyCursors fails reading or writing named cursors.
type faultyCursors struct {
	ReconcileStore
	get, put map[string]error
	list     func(projectID string) ([]Record, error)
}

func (s *faultyCursors) GetCursor(ctx context.Context, name string) (string, error) {
	if err := s.get[name]; err != nil {
		return "", err
	}
	return s.ReconcileStore.GetCursor(ctx, name)
}

func (s *faultyCursors) PutCursor(ctx context.Context, name, value string) error {
	if err := s.put[name]; err != nil {
		return err
	}
	return s.ReconcileStore.PutCursor(ctx, name, value)
}

func (s *faultyCursors) ListItems(ctx context.Context, projectID string) ([]Record, error) {
	if s.list != nil {
		return s.list(projectID)
	}
	return s.ReconcileStore.ListItems(ctx, projectID)
}

func TestReconcileStoreFailuresAreReturned(t *testing.T) {
	tests := []struct {
		name     string
		get, put map[string]error
		store    string // memStore method to break
		want     string
	}{
		{name: "budget read", get: map[string]error{budgetKey: errInjected}, want: "load reconcile budget"},
		{name: "cursor read", get: map[string]error{cursorA1: errInjected}, want: "load reconcile cursor"},
		{name: "cursor write", put: map[string]error{cursorA1: errInjected}, want: "save reconcile cursor"},
		{name: "budget write", put: map[string]error{budgetKey: errInjected}, want: "save reconcile budget"},
		{name: "known items", store: "ListItems", want: "list known items"},
		{name: "adoption", store: "CommitStep", want: "reconcile item A: adopt item A"},
		{name: "item lock", store: "LockItem", want: "reconcile item A: lock item A"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, issueN("A", "Backlog", 1))
			if tt.store != "" {
				h.st.breakOn(errInjected, tt.store)
			}
			st := &faultyCursors{ReconcileStore: h.st, get: tt.get, put: tt.put}
			rep, err := h.reconcileOn(context.Background(), h.board, st, ReconcileOptions{})
			if !errors.Is(err, errInjected) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
			if tt.name != "budget write" && rep.Complete {
				t.Errorf("a failed pass reports complete: %+v", rep)
			}
		})
	}
}

// The list of known items is read once per pass: an item a webhook recorded since is judged
// against its record as it is now, never adopted over it.
func TestReconcileMeetsWebhooksThatCaughtUp(t *testing.T) {
	t.Run("a recorded legal move is in sync", func(t *testing.T) {
		h := newHarness(t, issueN("A", "Backlog", 1))
		h.adoptAll("A")
		stale := h.record("A")
		h.now = h.now.Add(time.Second)
		h.process(h.board.move("A", "alice", "Research Needed", h.now))
		st := &faultyCursors{ReconcileStore: h.st, list: func(string) ([]Record, error) { return []Record{stale}, nil }}
		rep, err := h.reconcileOn(context.Background(), h.board, st, ReconcileOptions{})
		if err != nil || rep.InSync != 1 || rep.Drifted != 0 {
			t.Fatalf("%+v %v", rep, err)
		}
	})
	t.Run("an item recorded meanwhile is not adopted again", func(t *testing.T) {
		h := newHarness(t, issueN("A", "Backlog", 1))
		h.adoptAll("A")
		st := &faultyCursors{ReconcileStore: h.st, list: func(string) ([]Record, error) { return nil, nil }}
		rep, err := h.reconcileOn(context.Background(), h.board, st, ReconcileOptions{})
		if err != nil || rep.Adopted != 0 || rep.Drifted != 1 || rep.Reverted+rep.Accepted != 0 {
			t.Fatalf("%+v %v", rep, err)
		}
		if es := h.audit("A"); len(es) != 1 {
			t.Fatalf("audit %s", verdicts(es))
		}
	})
}

// A drift whose place in the history is not proven yet waits, and a sweep is asked for.
func TestReconcileDriftWaitingForProofAsksForASweep(t *testing.T) {
	var sw *sweeps
	h := newHarnessWith(t, nil, func(h *harness, o *Options) { sw = &sweeps{h: h}; o.Redeliveries = sw }, issueN("A", "Backlog", 1))
	h.mustReconcile(ReconcileOptions{})
	h.now = h.now.Add(time.Minute)
	driftTo(h.board, "A", "In Progress", time.Time{})
	h.unproven()
	rep := h.mustReconcile(ReconcileOptions{})
	if rep.Drifted != 1 || rep.Deferred != 1 || rep.Reverted != 0 || h.state("A") != "In Progress" {
		t.Fatalf("%+v", rep)
	}
	if sw.requests == 0 {
		t.Error("no sweep was asked for")
	}
	if rec := h.record("A"); !rec.GapSince.Equal(h.now) {
		t.Errorf("the gap was not noted: %+v", rec)
	}
	// Proven: the drift is judged.
	h.proven()
	if rep := h.mustReconcile(ReconcileOptions{}); rep.Reverted != 1 || h.state("A") != "Backlog" {
		t.Fatalf("once proven: %+v", rep)
	}
}

// Every GitHub request a drift costs counts against the budget: automation's reads and writes,
// comment updates.
func TestReconcileCountsEveryRequest(t *testing.T) {
	p := issueN("P", "Plan in Review", 10)
	c := issueN("C", "In Review", 11)
	r := issueN("R", "Backlog", 12)
	k := issueN("K", "Backlog", 13)
	h := newHarness(t, c, k, p, r)
	setFamily(h.board, p, c, k)
	h.mustReconcile(ReconcileOptions{})
	h.now = h.now.Add(time.Minute)
	driftTo(h.board, "R", "In Progress", time.Time{})
	h.mustReconcile(ReconcileOptions{}) // reverted, explained
	h.now = h.now.Add(time.Minute)
	driftTo(h.board, "P", "In Progress", time.Time{}) // legal: K follows
	driftTo(h.board, "R", "In Review", time.Time{})   // illegal again: the comment is updated
	before := h.board.totalCalls()
	rep := h.mustReconcile(ReconcileOptions{})
	got := h.board.totalCalls() - before
	if rep.Accepted != 1 || rep.Reverted != 1 || h.state("K") != "In Progress" || h.state("R") != "Backlog" || h.board.updates != 1 {
		t.Fatalf("report %+v, K=%s R=%s, %d updates", rep, h.state("K"), h.state("R"), h.board.updates)
	}
	// 2 pages; P: read, family, batched write; R: read, revert, comment update.
	if rep.Requests != 8 || got != 8 {
		t.Fatalf("report counts %d requests, the board got %d; want 8", rep.Requests, got)
	}
}

// A drift that cannot be handled fails the pass; the next pass reads that page again.
func TestReconcileDriftFailureIsRetriedFromItsPage(t *testing.T) {
	var items []Item
	for i := 1; i <= 4; i++ {
		items = append(items, issueN(fmt.Sprintf("I%d", i), "Backlog", i))
	}
	h := newHarness(t, items...)
	h.mustReconcile(ReconcileOptions{})
	h.now = h.now.Add(time.Minute)
	driftTo(h.board, "I4", "In Progress", time.Time{})
	h.board.breakOn(errInjected, "Item")
	_, err := h.reconcile(ReconcileOptions{})
	if !errors.Is(err, errInjected) || !strings.Contains(err.Error(), "reconcile item I4: read item I4") {
		t.Fatalf("%v", err)
	}
	if c := h.st.cursors[cursorA1]; c != "I3" {
		t.Fatalf("cursor %q, want the failed page's start", c)
	}
	h.board.breakOn(nil, "Item")
	rep := h.mustReconcile(ReconcileOptions{})
	if rep.Pages != 1 || rep.Items != 1 || rep.Reverted != 1 || !rep.Complete {
		t.Fatalf("%+v", rep)
	}
}
