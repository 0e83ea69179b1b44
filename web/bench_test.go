package web

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/health"
	"github.com/ralph-gate/ralph-gate/policy"
)

// bigReport is one project of n items spread over the default workflow, with long lists:
// 3% locked, 8% waiting for a person, 15% without a state, 20% unblocked and waiting, and a
// hygiene finding for each of them.
func bigReport(n int) health.Report {
	m := policy.DefaultMachine()
	p := health.Project{ID: "PVT_big", Owner: "acme", Number: 1, SnapshotAt: t0.Add(-time.Minute), Items: n,
		Runtime: health.Runtime{QueueDepth: 12, LastReconcile: t0.Add(-time.Minute), LastSweep: t0.Add(-10 * time.Second),
			RateLimitKnown: true, RateRemaining: 4000, RateLimit: 5000, RateReset: t0.Add(30 * time.Minute)}}
	states := m.States()
	for i, s := range states {
		info, _ := m.State(s)
		p.States = append(p.States, health.StateCount{Name: s, Kind: info.Kind.String(), Count: n / len(states), Limit: 50 * (i % 2), Over: i%2 == 1})
	}
	ref := func(i int, state string) health.ItemRef {
		return health.ItemRef{ItemID: fmt.Sprintf("PVTI_%d", i), Repo: "acme/web", Number: i,
			Title: fmt.Sprintf("Item %d: make the <thing> work & ship it", i), State: state}
	}
	for i := range n {
		switch {
		case i%100 < 3:
			it := ref(i, "In Progress")
			p.Locks = append(p.Locks, health.Lock{Item: it, Holder: "agent-impl-1", Since: t0.Add(-time.Duration(i) * time.Minute),
				Age: time.Duration(i) * time.Minute, Stale: i%2 == 0})
			p.Hygiene = append(p.Hygiene, health.Finding{Kind: health.FindingStaleLock, Item: &it, Detail: "release it or ask its holder"})
		case i%100 < 11:
			it := ref(i, "Human Needed")
			p.HumanNeeded = append(p.HumanNeeded, health.Waiting{Item: it, Since: t0.Add(-time.Duration(i) * time.Minute),
				Age: time.Duration(i) * time.Minute, Long: i%3 == 0})
			p.Hygiene = append(p.Hygiene, health.Finding{Kind: health.FindingLongHumanWait, Item: &it, Detail: "a person should look at it"})
		case i%100 < 26:
			it := ref(i, "")
			p.Unset = append(p.Unset, it)
			p.Hygiene = append(p.Hygiene, health.Finding{Kind: health.FindingUnsetState, Item: &it, Detail: "give it a Workflow State"})
		case i%100 < 46:
			it := ref(i, "Ready for Plan")
			p.Unblocked = append(p.Unblocked, it)
			p.Hygiene = append(p.Hygiene, health.Finding{Kind: health.FindingUnblockedWaiting, Item: &it, Detail: "pick it up"})
		}
	}
	return health.Report{GeneratedAt: t0, Projects: []health.Project{p}}
}

func serveBench(b *testing.B, h http.Handler, path string) {
	b.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	b.ReportAllocs()
	var size int
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("GET %s: %d\n%s", path, rec.Code, rec.Body.String())
		}
		size = rec.Body.Len()
	}
	b.ReportMetric(float64(size)/1024, "KiB/page")
}

// BenchmarkBoardPage renders the board page of a 10,000-item project (goal: ≤ 50 ms), with
// its lists cut at the default 200 rows and in full (?all=1).
func BenchmarkBoardPage(b *testing.B) {
	e := newEnv(b, bigReport(10_000), Options{})
	b.Run("10000 items", func(b *testing.B) { serveBench(b, e.h, "/projects/acme/1") })
	b.Run("10000 items, every row", func(b *testing.B) { serveBench(b, e.h, "/projects/acme/1?all=1") })
}

// BenchmarkDecisionsPage renders a page of 50 decisions out of 5,000 in SQLite, unfiltered
// and filtered, and one decision.
func BenchmarkDecisionsPage(b *testing.B) {
	e := newEnv(b, bigReport(10), Options{})
	ctx := context.Background()
	verdicts := enforce.AuditVerdicts()
	for i := range 5_000 {
		_, err := e.st.AppendAudit(ctx, enforce.AuditEntry{At: t0.Add(-time.Duration(i) * time.Minute), DeliveryID: fmt.Sprintf("b-%d", i),
			ItemID: fmt.Sprintf("PVTI_%d", i%300), IssueNumber: i % 300, Repo: "acme/web", Actor: fmt.Sprintf("agent-%d", i%7),
			ActorKind: "agent", FromState: "Backlog", ToState: "In Progress", Verdict: verdicts[i%len(verdicts)], Rule: "transition",
			Reason: "Backlog → In Progress is not a transition of the workflow"})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.Run("newest 50", func(b *testing.B) { serveBench(b, e.h, "/decisions") })
	b.Run("filtered", func(b *testing.B) {
		serveBench(b, e.h, "/decisions?actor=agent-3&verdict=reverted&since=2026-03-11&until=2026-03-14")
	})
	b.Run("one decision", func(b *testing.B) { serveBench(b, e.h, "/decisions/"+itoa(e.ids[1])) })
}
