package store

import (
	"strings"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
)

func TestObservations(t *testing.T) {
	forEachDriver(t, func(t *testing.T, tg target) {
		ctx := t.Context()
		s := tg.open(t)
		obs := func(id, to string, at time.Time) enforce.Observation {
			return enforce.Observation{DeliveryID: id, ItemID: "PVTI_1", FromKnown: true, From: "Backlog", To: to, Actor: "agent-1", At: at, ReceivedAt: at}
		}
		// One record per delivery, however often it arrives.
		for i, o := range []enforce.Observation{obs("d-1", "In Progress", at(0)), obs("d-1", "In Progress", at(time.Second)), obs("d-2", "Research Needed", at(2*time.Second))} {
			first, err := s.RecordObservation(ctx, o)
			if err != nil || first != (i != 1) {
				t.Fatalf("record %d: %v, %v", i, first, err)
			}
		}
		if _, err := s.RecordObservation(ctx, enforce.Observation{ItemID: "PVTI_1"}); err == nil {
			t.Error("an observation without a delivery id was recorded")
		}
		pending, err := s.PendingObservations(ctx, "PVTI_1")
		if err != nil || len(pending) != 2 || pending[0].DeliveryID != "d-1" || !pending[0].FromKnown || pending[0].Status != enforce.ObservationPending {
			t.Fatalf("pending %+v, %v", pending, err)
		}
		// A step: the item, the judged report and its audit entry, at once, or not at all.
		item := enforce.Record{ItemID: "PVTI_1", ProjectID: "PVT_1", LastLegalState: "Backlog", ObservedState: "In Progress", ObservedAt: at(0), RevertPending: "Backlog"}
		judged := pending[0]
		judged.Status, judged.JudgedAt, judged.Verdict, judged.LegalFrom, judged.Rule, judged.Reason, judged.Recovery =
			enforce.ObservationJudged, at(3*time.Second), enforce.VerdictReverted, "Backlog", "transition", "not a transition", "move it to Research Needed"
		audit := enforce.AuditEntry{At: at(3 * time.Second), DeliveryID: "d-1", ItemID: "PVTI_1", Verdict: enforce.VerdictReverted}
		if ok, err := s.CommitStep(ctx, enforce.Step{Record: item, Observation: &judged, Audit: &audit}); !ok || err != nil {
			t.Fatalf("first step: %v, %v", ok, err)
		}
		if ok, err := s.CommitStep(ctx, enforce.Step{Record: item, ExpectedVersion: 7, Observation: &judged, Audit: &audit}); ok || err != nil {
			t.Fatalf("a step on a stale version: %v, %v; want refused", ok, err)
		}
		rec, err := s.GetItem(ctx, "PVTI_1")
		if err != nil || rec.Version != 1 || rec.ObservedState != "In Progress" || rec.RevertPending != "Backlog" || !rec.ObservedAt.Equal(at(0)) {
			t.Fatalf("item %+v, %v", rec, err)
		}
		entries, _ := s.QueryAudit(ctx, AuditFilter{ItemID: "PVTI_1"})
		if len(entries) != 1 {
			t.Fatalf("%d audit entries, want the one of the committed step", len(entries))
		}
		un, err := s.Unexplained(ctx, "PVTI_1")
		if err != nil || len(un) != 1 || un[0].Recovery != "move it to Research Needed" || un[0].LegalFrom != "Backlog" {
			t.Fatalf("unexplained %+v, %v", un, err)
		}
		if err := s.MarkExplained(ctx, "d-1"); err != nil {
			t.Fatal(err)
		}
		if un, _ := s.Unexplained(ctx, "PVTI_1"); len(un) != 0 {
			t.Fatalf("still unexplained: %+v", un)
		}
		if pending, _ := s.PendingObservations(ctx, "PVTI_1"); len(pending) != 1 || pending[0].DeliveryID != "d-2" {
			t.Fatalf("pending after the step: %+v", pending)
		}
		// A step nobody reported is recorded under its own id.
		unobserved := enforce.Observation{DeliveryID: "unobserved:PVTI_1:x", ItemID: "PVTI_1", FromKnown: true, To: "Done", Actor: "(unknown)",
			At: at(4 * time.Second), ReceivedAt: at(4 * time.Second), Verdict: enforce.VerdictAllowed}
		item.Version = 1
		if ok, err := s.CommitStep(ctx, enforce.Step{Record: item, ExpectedVersion: 1, Observation: &unobserved}); !ok || err != nil {
			t.Fatalf("unobserved step: %v, %v", ok, err)
		}
		if got, err := s.GetObservation(ctx, "unobserved:PVTI_1:x"); err != nil || got.Status != enforce.ObservationJudged {
			t.Fatalf("unobserved %+v, %v", got, err)
		}
		// Pruning keeps what is pending.
		n, err := s.PruneObservations(ctx, at(time.Hour))
		if err != nil || n != 2 {
			t.Fatalf("pruned %d, %v; want the two judged ones", n, err)
		}
		if pending, _ := s.PendingObservations(ctx, "PVTI_1"); len(pending) != 1 {
			t.Fatalf("pruning removed a pending report: %+v", pending)
		}
	})
}

// A lifecycle event is a report of its item's history: its kind and what it was are kept
// until it is judged, and its judged state (a merge's is decided then) replaces the one given.
func TestLifecycleObservations(t *testing.T) {
	forEachDriver(t, func(t *testing.T, tg target) {
		ctx := t.Context()
		s := tg.open(t)
		ev := enforce.Observation{DeliveryID: "d-9#PVTI_1", ItemID: "PVTI_1", To: "", Actor: "alice", At: at(0), ReceivedAt: at(0),
			Lifecycle: enforce.LifecyclePRMerged, Reason: "pull request acme/app#80 merged by alice"}
		if _, err := s.RecordObservation(ctx, ev); err != nil {
			t.Fatal(err)
		}
		pending, err := s.PendingObservations(ctx, "PVTI_1")
		if err != nil || len(pending) != 1 || pending[0].Lifecycle != enforce.LifecyclePRMerged || pending[0].Reason != ev.Reason || pending[0].FromKnown {
			t.Fatalf("pending %+v, %v", pending, err)
		}
		judged := pending[0]
		judged.Status, judged.To, judged.Verdict, judged.LegalFrom = enforce.ObservationJudged, "In Review", enforce.VerdictAutomated, "In Progress"
		rec := enforce.Record{ItemID: "PVTI_1", ProjectID: "PVT_1", LastLegalState: "In Review", ObservedState: "In Progress"}
		if ok, err := s.CommitStep(ctx, enforce.Step{Record: rec, Observation: &judged}); !ok || err != nil {
			t.Fatalf("commit: %v, %v", ok, err)
		}
		got, err := s.GetObservation(ctx, "d-9#PVTI_1")
		if err != nil || got.To != "In Review" || got.Lifecycle != enforce.LifecyclePRMerged || got.Status != enforce.ObservationJudged {
			t.Fatalf("judged %+v, %v", got, err)
		}
		// Later events after the judged merge: a card's report is none; a judged event of the
		// same second judged before it is none; one judged after it, or one waiting of that
		// second, or one of a later second, is.
		card := enforce.Observation{DeliveryID: "d-10", ItemID: "PVTI_1", FromKnown: true, From: "In Review", To: "Done", Actor: "bob", At: at(time.Second), ReceivedAt: at(time.Second)}
		if _, err := s.RecordObservation(ctx, card); err != nil {
			t.Fatal(err)
		}
		event := func(id string, sec time.Duration) enforce.Observation {
			return enforce.Observation{DeliveryID: id, ItemID: "PVTI_1", To: "Backlog", Actor: "bob", At: at(sec), ReceivedAt: at(sec),
				Lifecycle: enforce.LifecycleIssueReopened}
		}
		later := func(want bool) {
			t.Helper()
			if got, err := s.LaterEvent(ctx, judged); err != nil || got != want {
				t.Fatalf("later event %v, %v; want %v", got, err, want)
			}
		}
		judged.JudgedAt = at(3 * time.Second)
		later(false)
		before := event("d-11#PVTI_1", 0)
		before.Status, before.JudgedAt = enforce.ObservationJudged, at(2*time.Second)
		rec.Version = 1
		if ok, err := s.CommitStep(ctx, enforce.Step{Record: rec, ExpectedVersion: 1, Observation: &before}); !ok || err != nil {
			t.Fatalf("commit: %v, %v", ok, err)
		}
		later(false)
		if _, err := s.RecordObservation(ctx, event("d-12#PVTI_1", 0)); err != nil {
			t.Fatal(err)
		}
		later(true) // waiting, of the same second
		judged.At = at(-time.Second)
		later(true) // of a later second
		// The last close or reopen taken into the history: the judged reopen (the one waiting
		// and the merge are not).
		if last, found, err := s.LastEvent(ctx, "PVTI_1"); err != nil || !found || last.DeliveryID != "d-11#PVTI_1" {
			t.Fatalf("last event %+v %v, %v; want d-11#PVTI_1", last, found, err)
		}
		if _, found, err := s.LastEvent(ctx, "PVTI_9"); err != nil || found {
			t.Fatalf("an item without events has a last one: %v, %v", found, err)
		}
	})
}

// An item's automated moves are found by their state and their cause's time, with their causes:
// a person's move, a refused one or a report still waiting is none.
func TestAutomatedCauses(t *testing.T) {
	forEachDriver(t, func(t *testing.T, tg target) {
		ctx := t.Context()
		s := tg.open(t)
		version := int64(0)
		commit := func(id string, v enforce.Verdict, to, reason string, sec time.Duration) {
			t.Helper()
			o := enforce.Observation{DeliveryID: id, ItemID: "PVTI_1", FromKnown: true, From: "Backlog", To: to, Actor: "bob",
				At: at(sec), ReceivedAt: at(sec), Status: enforce.ObservationJudged, JudgedAt: at(sec), Verdict: v, Reason: reason}
			rec := enforce.Record{ItemID: "PVTI_1", ProjectID: "PVT_1", LastLegalState: to, Version: version}
			if ok, err := s.CommitStep(ctx, enforce.Step{Record: rec, ExpectedVersion: version, Observation: &o}); !ok || err != nil {
				t.Fatalf("commit %s: %v, %v", id, ok, err)
			}
			version++
		}
		causes := func(item, to string, sec time.Duration, want ...string) {
			t.Helper()
			got, err := s.AutomatedCauses(ctx, item, to, at(sec))
			if err != nil || strings.Join(got, "|") != strings.Join(want, "|") {
				t.Fatalf("causes of %s's automated moves into %s at %v: %q, %v; want %q", item, to, sec, got, err, want)
			}
		}
		commit("d-1", enforce.VerdictAllowed, "Ready for Plan", "allowed", time.Second)
		commit("d-2", enforce.VerdictReverted, "Done", "refused", time.Second)
		if _, err := s.RecordObservation(ctx, enforce.Observation{DeliveryID: "d-3", ItemID: "PVTI_1", To: "Research Needed",
			Actor: "bob", At: at(time.Second), ReceivedAt: at(time.Second)}); err != nil {
			t.Fatal(err)
		}
		causes("PVTI_1", "Ready for Plan", time.Second)
		causes("PVTI_1", "Done", time.Second)
		causes("PVTI_1", "Research Needed", time.Second)
		commit("app:1", enforce.VerdictAutomated, "Plan in Progress", "cascade: parent #3 moved to Plan in Progress", time.Second)
		causes("PVTI_1", "Plan in Progress", time.Second, "cascade: parent #3 moved to Plan in Progress")
		causes("PVTI_1", "Plan in Progress", 2*time.Second)
		causes("PVTI_9", "Plan in Progress", time.Second)
	})
}

// A lifecycle event's reports are recorded all at once and found again by the event's delivery
// (a delivery id's LIKE wildcards match only themselves).
func TestEventReports(t *testing.T) {
	forEachDriver(t, func(t *testing.T, tg target) {
		ctx := t.Context()
		s := tg.open(t)
		report := func(delivery, item string) enforce.Observation {
			return enforce.Observation{DeliveryID: delivery + "#" + item, ItemID: item, To: "Done", Actor: "alice", At: at(0), ReceivedAt: at(0),
				Lifecycle: enforce.LifecycleIssueClosed, Reason: "issue closed by alice"}
		}
		// The event's report of its issue, recorded at intake, is settled with them.
		intake := enforce.Observation{DeliveryID: "d_1%", ItemID: "issue:acme/app#7", Actor: "alice", At: at(0), ReceivedAt: at(0),
			Lifecycle: enforce.LifecycleIssueClosed}
		if _, err := s.RecordObservation(ctx, intake); err != nil {
			t.Fatal(err)
		}
		if err := s.RecordEvent(ctx, "d_1%", []enforce.Observation{report("d_1%", "PVTI_2"), report("d_1%", "PVTI_1")}); err != nil {
			t.Fatal(err)
		}
		if err := s.RecordEvent(ctx, "dx1z", []enforce.Observation{report("dx1z", "PVTI_3"), report("d_1%", "PVTI_1")}); err != nil {
			t.Fatal(err) // a retry records nothing twice
		}
		if o, err := s.GetObservation(ctx, "d_1%"); err != nil || o.Status != enforce.ObservationIgnored {
			t.Fatalf("the intake's report %+v, %v; want settled", o, err)
		}
		got, err := s.EventReports(ctx, "d_1%")
		if err != nil || len(got) != 2 || got[0].ItemID != "PVTI_1" || got[1].ItemID != "PVTI_2" || got[0].Status != enforce.ObservationPending ||
			got[0].Lifecycle != enforce.LifecycleIssueClosed || got[0].Reason != "issue closed by alice" {
			t.Fatalf("reports %+v, %v", got, err)
		}
		if got, err := s.EventReports(ctx, "d_1"); err != nil || len(got) != 0 {
			t.Fatalf("a prefix matched: %+v, %v", got, err)
		}
		if got, err := s.EventReports(ctx, "d_"); err != nil || len(got) != 0 {
			t.Fatalf("a wildcard matched: %+v, %v", got, err)
		}
		if got, err := s.EventReports(ctx, "dx1z"); err != nil || len(got) != 1 {
			t.Fatalf("reports of dx1z %+v, %v", got, err)
		}
	})
}

func TestLegalStateAt(t *testing.T) {
	forEachDriver(t, func(t *testing.T, tg target) {
		ctx := t.Context()
		s := tg.open(t)
		item := enforce.Record{ItemID: "PVTI_1", LastLegalState: "Backlog", ObservedState: "Backlog"}
		if ok, err := s.CommitStep(ctx, enforce.Step{Record: item}); !ok || err != nil {
			t.Fatal(ok, err)
		}
		for i, st := range []struct{ from, to string }{{"Backlog", "Research Needed"}, {"Research Needed", "Ready for Plan"}} {
			o := enforce.Observation{DeliveryID: "d" + st.to, ItemID: "PVTI_1", FromKnown: true, From: st.from, To: st.to, At: at(time.Duration(10*(i+1)) * time.Second),
				ReceivedAt: at(0), Status: enforce.ObservationJudged, Verdict: enforce.VerdictAllowed, LegalFrom: st.from, JudgedAt: at(time.Minute)}
			item.LastLegalState, item.Version = st.to, int64(i+1)
			if ok, err := s.CommitStep(ctx, enforce.Step{Record: item, ExpectedVersion: int64(i + 1), Observation: &o}); !ok || err != nil {
				t.Fatal(ok, err)
			}
		}
		// A required field's edit judged in between, with a legal state that predates a step
		// recorded after it: no step of the card's history, it tells nothing.
		edit := enforce.Observation{DeliveryID: "e1", ItemID: "PVTI_1", Field: "Estimate", FromKnown: true, From: "S", To: "M", At: at(12 * time.Second),
			ReceivedAt: at(0), Status: enforce.ObservationJudged, Verdict: enforce.VerdictRecorded, LegalFrom: "Backlog", JudgedAt: at(time.Second)}
		if ok, err := s.CommitStep(ctx, enforce.Step{Record: item, ExpectedVersion: 3, Observation: &edit}); !ok || err != nil {
			t.Fatal(ok, err)
		}
		for _, c := range []struct {
			at    time.Duration
			want  string
			known bool
		}{{5 * time.Second, "Backlog", true}, {10 * time.Second, "Backlog", true}, {11 * time.Second, "Research Needed", true}, {15 * time.Second, "Research Needed", true}, {25 * time.Second, "Ready for Plan", true}} {
			got, known, err := s.LegalStateAt(ctx, "PVTI_1", at(c.at))
			if err != nil || got != c.want || known != c.known {
				t.Errorf("LegalStateAt(%s) = %q, %v, %v; want %q", c.at, got, known, err, c.want)
			}
		}
		if _, err := s.RecordObservation(ctx, enforce.Observation{DeliveryID: "late", ItemID: "PVTI_1", At: at(30 * time.Second), ReceivedAt: at(31 * time.Second)}); err != nil {
			t.Fatal(err)
		}
		if _, known, _ := s.LegalStateAt(ctx, "PVTI_1", at(35*time.Second)); known {
			t.Error("a report from before the time is still unjudged: the answer is not settled")
		}
		if _, known, _ := s.LegalStateAt(ctx, "PVTI_2", at(0)); known {
			t.Error("an item with no record has no known state")
		}
	})
}

// A delivery that arrives twice at once (GitHub's retry racing a redelivery) is recorded once.
func TestRecordObservationConcurrentDuplicates(t *testing.T) {
	forEachDriver(t, func(t *testing.T, tg target) {
		s := tg.open(t)
		at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
		o := enforce.Observation{DeliveryID: "d-race", ItemID: "PVTI_1", FromKnown: true, From: "Backlog", To: "Research Needed",
			Actor: "agent-1", At: at, ReceivedAt: at}
		wins, _ := race(t, 10, func(int) (bool, error) { return s.RecordObservation(t.Context(), o) })
		if wins != 1 {
			t.Fatalf("%d concurrent recordings of one delivery were first, want exactly 1", wins)
		}
		pending, err := s.PendingObservations(t.Context(), "PVTI_1")
		if err != nil || len(pending) != 1 {
			t.Fatalf("pending = %d, %v; want 1", len(pending), err)
		}
	})
}

// A required field's edit is a report of its item's history: stored with its field, listed by
// FieldEdits once judged (from a time on, in the order taken in), and no reason for a legal
// state to be unknown while it waits.
func TestFieldEdits(t *testing.T) {
	forEachDriver(t, func(t *testing.T, tg target) {
		ctx := t.Context()
		s := tg.open(t)
		edit := func(id, from, to string, sec int) enforce.Observation {
			return enforce.Observation{DeliveryID: id, ItemID: "PVTI_9", FromKnown: true, From: from, To: to, Actor: "bob",
				At: at(time.Duration(sec) * time.Second), ReceivedAt: at(time.Duration(sec) * time.Second), Field: "Estimate"}
		}
		for _, o := range []enforce.Observation{edit("e-1", "", "S", 1), edit("e-2", "S", "M", 3), edit("e-3", "M", "", 5)} {
			if _, err := s.RecordObservation(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
		rec := enforce.Record{ItemID: "PVTI_9", ProjectID: "PVT_1", LastLegalState: "Backlog", ObservedState: "Backlog"}
		if ok, err := s.CompareAndSetItem(ctx, rec, 0); !ok || err != nil {
			t.Fatal(ok, err)
		}
		if legal, known, err := s.LegalStateAt(ctx, "PVTI_9", at(10*time.Second)); err != nil || !known || legal != "Backlog" {
			t.Fatalf("legal state with field edits waiting = %q, %v, %v; want Backlog, known", legal, known, err)
		}
		pending, err := s.PendingObservations(ctx, "PVTI_9")
		if err != nil || len(pending) != 3 || pending[0].Field != "Estimate" {
			t.Fatalf("pending %+v, %v", pending, err)
		}
		version := int64(1)
		for i, o := range pending[:2] {
			o.Status, o.JudgedAt, o.Verdict, o.LegalFrom = enforce.ObservationJudged, at(time.Duration(20+i)*time.Second), enforce.VerdictRecorded, "Backlog"
			r, _ := s.GetItem(ctx, "PVTI_9")
			r.Fields = map[string]enforce.FieldValue{"Estimate": {Value: o.To, At: o.At}}
			if ok, err := s.CommitStep(ctx, enforce.Step{Record: r, ExpectedVersion: version, Observation: &o}); !ok || err != nil {
				t.Fatalf("take in %s: %v, %v", o.DeliveryID, ok, err)
			}
			version++
		}
		got, err := s.FieldEdits(ctx, "PVTI_9", at(2*time.Second))
		if err != nil || len(got) != 1 || got[0].DeliveryID != "e-2" || got[0].From != "S" || got[0].Field != "Estimate" {
			t.Fatalf("edits from 2s = %+v, %v; want e-2 (judged; e-3 waits)", got, err)
		}
		if all, _ := s.FieldEdits(ctx, "PVTI_9", at(0)); len(all) != 2 || all[0].DeliveryID != "e-1" {
			t.Fatalf("edits from 0s = %+v", all)
		}
		if r, _ := s.GetItem(ctx, "PVTI_9"); r.Fields["Estimate"].Value != "M" {
			t.Fatalf("record fields %+v", r.Fields)
		}
	})
}
