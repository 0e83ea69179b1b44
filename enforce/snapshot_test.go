package enforce

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// snapshotIDs lists the items of the memStore's snapshot.
func (m *memStore) snapshotIDs() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ids []string
	for id := range m.snapshot {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// A pass records every page it reads (the health report's titles, open and blockers), and
// once a walk has read the whole project it forgets the items no page listed; its status
// says when and carries GitHub's budget as last reported.
func TestReconcileRecordsSnapshotAndStatus(t *testing.T) {
	blocked := issueN("B", "Backlog", 2)
	blocked.OpenBlockers, blocked.Blockers, blocked.URL = 1, 2, "https://github.com/acme/app/issues/2"
	h := newHarness(t, issueN("A", "Backlog", 1), blocked, issueN("C", "Ready for Plan", 3), issueN("D", "Backlog", 4))
	reset := h.now.Add(time.Hour)
	h.board.rate = &RateLimit{Limit: 5000, Remaining: 4990, Used: 10, Reset: reset}

	if st, err := LoadPassStatus(context.Background(), h.st, project1); err != nil || st != (PassStatus{}) {
		t.Fatalf("status before any pass = %+v, %v; want zero", st, err)
	}
	first := h.now
	h.mustReconcile(ReconcileOptions{})
	if got := h.st.snapshotIDs(); !slices.Equal(got, []string{"A", "B", "C", "D"}) {
		t.Fatalf("snapshot after the first walk = %v", got)
	}
	if row := h.st.snapshot["B"]; row.Blockers != 2 || row.OpenBlockers != 1 || row.URL == "" || row.Title != "Issue B" || row.projectID != "PVT_1" {
		t.Errorf("snapshot of B = %+v", row)
	}
	st, err := LoadPassStatus(context.Background(), h.st, project1)
	if err != nil || st.ProjectID != "PVT_1" || !st.Started.Equal(first) || !st.Completed.Equal(first) ||
		st.RateLimit == nil || st.RateLimit.Remaining != 4990 || !st.RateLimit.Reset.Equal(reset) {
		t.Fatalf("status after the first walk = %+v, %v", st, err)
	}

	// D leaves the project: the next complete walk forgets it.
	h.board.mu.Lock()
	delete(h.board.items, "D")
	h.board.mu.Unlock()
	h.now = h.now.Add(10 * time.Minute)
	h.mustReconcile(ReconcileOptions{})
	if got := h.st.snapshotIDs(); !slices.Equal(got, []string{"A", "B", "C"}) {
		t.Fatalf("snapshot after D left = %v", got)
	}
	if st, _ := LoadPassStatus(context.Background(), h.st, project1); !st.Completed.Equal(h.now) || !st.Started.Equal(h.now) {
		t.Errorf("status after the second walk = %+v, want started and completed at %s", st, h.now)
	}
}

// A walk paused by its budget keeps what it read and prunes nothing: the items of the pages it
// has not read yet are still on the project.
func TestReconcilePausedWalkPrunesNothing(t *testing.T) {
	h := newHarness(t, issueN("A", "Backlog", 1), issueN("B", "Backlog", 2), issueN("C", "Backlog", 3), issueN("D", "Backlog", 4))
	h.mustReconcile(ReconcileOptions{})
	h.now = h.now.Add(time.Hour)
	// One request of budget: the first page only.
	rep := h.mustReconcile(ReconcileOptions{BudgetShare: 1, DefaultLimit: 1})
	if rep.Complete {
		t.Fatalf("the walk completed on a budget of one request: %+v", rep)
	}
	if got := h.st.snapshotIDs(); !slices.Equal(got, []string{"A", "B", "C", "D"}) {
		t.Fatalf("snapshot after a paused walk = %v", got)
	}
	if st, _ := LoadPassStatus(context.Background(), h.st, project1); !st.Started.Equal(h.now) || st.Completed.Equal(h.now) {
		t.Errorf("status of a paused walk = %+v: started now, completed before", st)
	}
}

func TestReconcileSnapshotFailuresAreReturned(t *testing.T) {
	for _, method := range []string{"PutSnapshot", "PruneSnapshot"} {
		t.Run(method, func(t *testing.T) {
			h := newHarness(t, issueN("A", "Backlog", 1))
			h.st.breakOn(errInjected, method)
			_, err := h.reconcile(ReconcileOptions{})
			if !errors.Is(err, errInjected) || !strings.Contains(err.Error(), "snapshot") {
				t.Fatalf("error %v, want the snapshot's", err)
			}
		})
	}
}
