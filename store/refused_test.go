package store

import (
	"context"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
)

// UnexplainedBy lists one actor's refused, unexplained steps on every item, oldest judged
// first, with their issues; explained ones, other actors' and allowed ones are left out.
func TestUnexplainedBy(t *testing.T) {
	forEachDriver(t, func(t *testing.T, tg target) {
		s := tg.open(t)
		ctx := context.Background()
		base := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
		for i, it := range []struct {
			id, repo string
			n        int
		}{{"PVTI_a", "acme/app", 1}, {"PVTI_b", "acme/app", 2}} {
			if ok, err := s.CompareAndSetItem(ctx, enforce.Record{ProjectID: "PVT_1", ItemID: it.id, Repo: it.repo, IssueNumber: it.n,
				LastLegalState: "Backlog", LegalAt: base, Version: 0}, 0); err != nil || !ok {
				t.Fatalf("item %d: %v %v", i, ok, err)
			}
		}
		add := func(d, item, actor string, v enforce.Verdict, judged time.Time, explained bool) {
			t.Helper()
			o := enforce.Observation{DeliveryID: d, ItemID: item, From: "Backlog", To: "Done", Actor: actor, At: judged, ReceivedAt: judged}
			if _, err := s.RecordObservation(ctx, o); err != nil {
				t.Fatal(err)
			}
			if _, err := s.exec(ctx, `UPDATE observations SET status = ?, verdict = ?, judged_at = ?, explained = ? WHERE delivery_id = ?`,
				string(enforce.ObservationJudged), string(v), s.t(judged), explained, d); err != nil {
				t.Fatal(err)
			}
		}
		add("d3", "PVTI_b", "bob", enforce.VerdictReverted, base.Add(3*time.Second), false)
		add("d1", "PVTI_a", "bob", enforce.VerdictReverted, base.Add(1*time.Second), false)
		add("d2", "PVTI_a", "bob", enforce.VerdictReverted, base.Add(2*time.Second), true)
		add("d4", "PVTI_a", "eve", enforce.VerdictReverted, base.Add(4*time.Second), false)
		add("d5", "PVTI_b", "bob", enforce.VerdictAllowed, base.Add(5*time.Second), false)
		// A refused close is undone and explained on its own: never in a summary.
		add("d6#PVTI_b", "PVTI_b", "bob", enforce.VerdictReverted, base.Add(6*time.Second), false)
		if _, err := s.exec(ctx, `UPDATE observations SET lifecycle = ? WHERE delivery_id = ?`, enforce.LifecycleIssueClosed, "d6#PVTI_b"); err != nil {
			t.Fatal(err)
		}
		// Another organization's project: its item's refused steps are another storm.
		if ok, err := s.CompareAndSetItem(ctx, enforce.Record{ProjectID: "PVT_9", ItemID: "PVTI_z", Repo: "globex/web", IssueNumber: 9,
			LastLegalState: "Backlog", LegalAt: base, Version: 0}, 0); err != nil || !ok {
			t.Fatalf("item z: %v %v", ok, err)
		}
		add("d7", "PVTI_z", "bob", enforce.VerdictReverted, base.Add(3500*time.Millisecond), false)
		if got, err := s.UnexplainedBy(ctx, "bob", "PVT_9", 0); err != nil || len(got) != 1 || got[0].DeliveryID != "d7" || got[0].Repo != "globex/web" {
			t.Fatalf("UnexplainedBy(bob, PVT_9) = %+v, %v; want d7 only", got, err)
		}
		if got, err := s.UnexplainedBy(ctx, "bob", "", 0); err != nil || len(got) != 3 {
			t.Fatalf("UnexplainedBy(bob, every project) = %+v, %v; want d1, d3, d7", got, err)
		}
		got, err := s.UnexplainedBy(ctx, "bob", "PVT_1", 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].DeliveryID != "d1" || got[1].DeliveryID != "d3" ||
			got[0].IssueNumber != 1 || got[1].IssueNumber != 2 || got[1].Repo != "acme/app" || got[0].LegalNow != "Backlog" {
			t.Fatalf("UnexplainedBy(bob) = %+v, want d1 (#1) then d3 (#2)", got)
		}
		if got, err := s.UnexplainedBy(ctx, "bob", "PVT_1", 1); err != nil || len(got) != 1 || got[0].DeliveryID != "d1" {
			t.Fatalf("with limit 1: %+v %v", got, err)
		}
		// Counting a storm: every refused step of the actor since a time, explained or not.
		for since, want := range map[time.Duration]int{0: 4, 2 * time.Second: 3, 4 * time.Second: 1, 7 * time.Second: 0} {
			if n, err := s.CountRefusedBy(ctx, "bob", "PVT_1", base.Add(since)); err != nil || n != want {
				t.Errorf("CountRefusedBy(bob, PVT_1, +%s) = %d, %v; want %d", since, n, err, want)
			}
		}
		if n, err := s.CountRefusedBy(ctx, "bob", "", base); err != nil || n != 5 {
			t.Errorf("CountRefusedBy(bob, every project) = %d, %v; want 5", n, err)
		}
	})
}
