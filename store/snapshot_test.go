package store

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
)

// snapshotItems reads the snapshot of a project through HealthItems, by item id.
func snapshotItems(t *testing.T, s *Store, projectID string) ([]enforce.Item, error) {
	t.Helper()
	var out []enforce.Item
	err := s.HealthItems(t.Context(), projectID, func(_ *enforce.Record, snap *enforce.Item) {
		if snap != nil {
			out = append(out, *snap)
		}
	})
	slices.SortFunc(out, func(a, b enforce.Item) int { return strings.Compare(a.ID, b.ID) })
	return out, err
}

func TestSnapshot(t *testing.T) {
	forEachDriver(t, func(t *testing.T, tg target) {
		ctx := t.Context()
		s := tg.open(t)
		a := enforce.Item{ID: "I_a", Repo: "acme/app", Number: 1, Title: "First", URL: "https://github.com/acme/app/issues/1",
			Open: true, State: "Backlog", OpenBlockers: 1, Blockers: 2}
		b := enforce.Item{ID: "I_b", Repo: "acme/app", Number: 2, Title: "Second", State: "Done"}
		other := enforce.Item{ID: "I_o", Repo: "acme/web", Number: 9, Title: "Elsewhere", Open: true}
		if err := s.PutSnapshot(ctx, "P1", []enforce.Item{a, b}, at(0)); err != nil {
			t.Fatal(err)
		}
		if err := s.PutSnapshot(ctx, "P2", []enforce.Item{other}, at(0)); err != nil {
			t.Fatal(err)
		}
		if err := s.PutSnapshot(ctx, "P1", nil, at(0)); err != nil {
			t.Errorf("an empty page: %v", err)
		}
		if err := s.PutSnapshot(ctx, "", []enforce.Item{a}, at(0)); err == nil {
			t.Errorf("a snapshot without a project id was stored")
		}
		got, err := snapshotItems(t, s, "P1")
		want := []enforce.Item{a, b}
		for i := range want {
			want[i].ProjectID = "P1"
		}
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("snapshot of P1 = %+v, %v\nwant %+v", got, err, want)
		}

		// A newer read replaces the item's row; pruning before it forgets the items not read again.
		a.Title, a.Open, a.OpenBlockers, a.State = "First, renamed", false, 0, "Done"
		if err := s.PutSnapshot(ctx, "P1", []enforce.Item{a}, at(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := s.PruneSnapshot(ctx, "P1", at(time.Minute)); err != nil {
			t.Fatal(err)
		}
		a.ProjectID = "P1"
		if got, err := snapshotItems(t, s, "P1"); err != nil || !reflect.DeepEqual(got, []enforce.Item{a}) {
			t.Fatalf("after the second read and the prune: %+v, %v", got, err)
		}
		if got, err := snapshotItems(t, s, "P2"); err != nil || len(got) != 1 || got[0].ID != "I_o" {
			t.Errorf("another project's snapshot was touched: %+v, %v", got, err)
		}
		if got, err := snapshotItems(t, s, "P3"); err != nil || len(got) != 0 {
			t.Errorf("unknown project: %+v, %v", got, err)
		}
	})
}

// A page of 100 items is one statement, on both drivers.
func TestSnapshotFullPage(t *testing.T) {
	forEachDriver(t, func(t *testing.T, tg target) {
		ctx := t.Context()
		s := tg.open(t)
		page := make([]enforce.Item, 100)
		for i := range page {
			page[i] = enforce.Item{ID: fmt.Sprintf("I_%03d", i), Number: i + 1, Title: fmt.Sprintf("Issue %d", i+1), Open: true}
		}
		if err := s.PutSnapshot(ctx, "P", page, at(0)); err != nil {
			t.Fatal(err)
		}
		if got, err := snapshotItems(t, s, "P"); err != nil || len(got) != 100 || got[99].Title != "Issue 100" {
			t.Fatalf("%d items, %v", len(got), err)
		}
	})
}

// HealthItems pairs each record of a project with its snapshot: a record the snapshot lacks,
// a snapshot item without a record, and a claimed lock that has no project yet.
func TestHealthItems(t *testing.T) {
	forEachDriver(t, func(t *testing.T, tg target) {
		ctx := t.Context()
		s := tg.open(t)
		both := enforce.Record{ItemID: "I_both", ProjectID: "P", Repo: "acme/app", IssueNumber: 1, LastLegalState: "In Review",
			ObservedState: "In Review", LegalAt: at(0)}
		recOnly := enforce.Record{ItemID: "I_rec", ProjectID: "P", Repo: "acme/app", IssueNumber: 2, LastLegalState: "Backlog",
			ObservedState: "Backlog", LegalAt: at(time.Second), LockHolder: "agent-1", LockSince: at(time.Minute)}
		elsewhere := enforce.Record{ItemID: "I_other", ProjectID: "Q", LastLegalState: "Backlog", ObservedState: "Backlog"}
		for _, r := range []enforce.Record{both, recOnly, elsewhere} {
			seed(t, s, r)
		}
		if ok, err := s.ClaimLock(ctx, "I_claim", "agent-2", at(2*time.Minute)); err != nil || !ok {
			t.Fatalf("claim: %v %v", ok, err)
		}
		page := []enforce.Item{
			{ID: "I_both", Repo: "acme/app", Number: 1, Title: "Both", Open: true, State: "Backlog", Blockers: 1},
			{ID: "I_snap", Repo: "acme/app", Number: 3, Title: "Snapshot only", Archived: true},
			{ID: "I_claim", Repo: "acme/app", Number: 4, Title: "Claimed", Open: true, State: "Research in Progress"},
		}
		if err := s.PutSnapshot(ctx, "P", page, at(0)); err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		err := s.HealthItems(ctx, "P", func(rec *enforce.Record, snap *enforce.Item) {
			var id, line string
			if rec != nil {
				id = rec.ItemID
				line = fmt.Sprintf("rec %s %s#%d %s legal %s lock %s %s;", rec.ProjectID, rec.Repo, rec.IssueNumber, rec.LastLegalState,
					rec.LegalAt.Format(time.TimeOnly), rec.LockHolder, rec.LockSince.Format(time.TimeOnly))
			}
			if snap != nil {
				id = snap.ID
				line += fmt.Sprintf(" snap %s %s#%d %q open %v archived %v %s blockers %d/%d", snap.ProjectID, snap.Repo, snap.Number, snap.Title,
					snap.Open, snap.Archived, snap.State, snap.OpenBlockers, snap.Blockers)
			}
			if _, dup := got[id]; dup {
				t.Errorf("%s listed twice", id)
			}
			got[id] = line
		})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{
			"I_both":  `rec P acme/app#1 In Review legal 15:09:26 lock  00:00:00; snap P acme/app#1 "Both" open true archived false Backlog blockers 0/1`,
			"I_rec":   `rec P acme/app#2 Backlog legal 15:09:27 lock agent-1 15:10:26;`,
			"I_snap":  ` snap P acme/app#3 "Snapshot only" open false archived true  blockers 0/0`,
			"I_claim": `rec  #0  legal 00:00:00 lock agent-2 15:11:26; snap P acme/app#4 "Claimed" open true archived false Research in Progress blockers 0/0`,
		}
		for id, w := range want {
			if got[id] != w {
				t.Errorf("%s:\n got %s\nwant %s", id, got[id], w)
			}
		}
		if len(got) != len(want) {
			t.Errorf("listed %d items, want %d: %v", len(got), len(want), got)
		}
	})
}
