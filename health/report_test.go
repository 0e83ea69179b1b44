package health_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/health"
	"github.com/ralph-gate/ralph-gate/policy"
	"github.com/ralph-gate/ralph-gate/store"
)

// source is the store with the sweeper's record, as the service wires it.
type source struct {
	*store.Store
	sweep time.Time
}

func (s source) LastSweep(context.Context) (time.Time, error) { return s.sweep, nil }

var (
	now     = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	acme3   = enforce.ProjectRef{Owner: "acme", Number: 3}
	options = health.Options{Projects: []enforce.ProjectRef{acme3}, Spec: spec(), StaleLockAfter: 4 * time.Hour, HumanWaitAfter: 24 * time.Hour}
)

// spec is the default workflow with a WIP limit of 1 on In Progress.
func spec() policy.Spec {
	s := policy.DefaultSpec()
	s.Gates.WIPLimits = map[string]int{"In Progress": 1}
	s.Locks.TTL = 2 * time.Hour
	return s
}

// board is what a test puts in the store: records, the snapshot and the reconciler's status.
type board struct {
	records  []enforce.Record
	snapshot []enforce.Item
	status   *enforce.PassStatus
}

func openStore(t testing.TB) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), store.DriverSQLite, filepath.Join(t.TempDir(), "ralph-gate.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func (b board) write(t testing.TB, st *store.Store) {
	t.Helper()
	ctx := context.Background()
	for _, rec := range b.records {
		if ok, err := st.CompareAndSetItem(ctx, rec, 0); err != nil || !ok {
			t.Fatalf("seed %s: %v %v", rec.ItemID, ok, err)
		}
	}
	for i := 0; i < len(b.snapshot); i += 100 {
		if err := st.PutSnapshot(ctx, "PVT_3", b.snapshot[i:min(i+100, len(b.snapshot))], now.Add(-time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if b.status != nil {
		data, err := json.Marshal(b.status)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.PutCursor(ctx, enforce.PassStatusCursor(acme3), string(data)); err != nil {
			t.Fatal(err)
		}
	}
}

func rec(id string, number int, state string, legalAt time.Time) enforce.Record {
	return enforce.Record{ItemID: id, ProjectID: "PVT_3", IssueNumber: number, Repo: "acme/app", LastLegalState: state,
		ObservedState: state, LegalAt: legalAt, UpdatedAt: now.Add(-2 * time.Hour)}
}

func snap(id string, number int, state string, open bool) enforce.Item {
	return enforce.Item{ID: id, ProjectID: "PVT_3", Repo: "acme/app", Number: number, Title: fmt.Sprintf("Issue %d", number),
		URL: fmt.Sprintf("https://github.com/acme/app/issues/%d", number), Open: open, State: state}
}

func locked(r enforce.Record, holder string, since time.Time) enforce.Record {
	r.LockHolder, r.LockSince = holder, since
	return r
}

func blocked(it enforce.Item, open, all int) enforce.Item {
	it.OpenBlockers, it.Blockers = open, all
	return it
}

var passed = &enforce.PassStatus{ProjectID: "PVT_3", Started: now.Add(-time.Hour), Completed: now.Add(-50 * time.Minute),
	CompletedFrom: now.Add(-time.Hour), RateLimit: &enforce.RateLimit{Limit: 5000, Remaining: 4321, Reset: now.Add(30 * time.Minute)}}

// findings is a report's hygiene as "kind item-or-state", in order.
func findings(p health.Project) []string {
	var out []string
	for _, f := range p.Hygiene {
		what := f.State
		if f.Item != nil {
			what = f.Item.ItemID
		}
		out = append(out, f.Kind+" "+what)
	}
	return out
}

func counts(p health.Project) map[string]int {
	out := map[string]int{}
	for _, s := range p.States {
		if s.Count > 0 {
			out[s.Name] = s.Count
		}
	}
	return out
}

func ids[T any](xs []T, id func(T) string) []string {
	out := []string{}
	for _, x := range xs {
		out = append(out, id(x))
	}
	return out
}

func TestReport(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		board board
		check func(t *testing.T, p health.Project)
	}{
		{
			name: "no pass yet: every state at zero, nothing listed",
			check: func(t *testing.T, p health.Project) {
				if p.ID != "" || p.Items != 0 || !p.SnapshotAt.IsZero() || len(p.States) != len(spec().States) || len(counts(p)) != 0 {
					t.Errorf("project %+v", p)
				}
				if p.Unset == nil || p.Locks == nil || p.HumanNeeded == nil || p.Unblocked == nil || p.Hygiene == nil {
					t.Errorf("a list is nil (JSON null): %+v", p)
				}
				if p.Runtime.QueueDepth != -1 || p.Runtime.RateLimitKnown || !p.Runtime.LastReconcile.IsZero() {
					t.Errorf("runtime %+v", p.Runtime)
				}
			},
		},
		{
			name: "a board with something of everything",
			board: board{
				records: []enforce.Record{
					rec("I1", 1, "Backlog", now.Add(-48*time.Hour)),
					locked(rec("I2", 2, "In Progress", now.Add(-5*time.Hour)), "agent-1", now.Add(-5*time.Hour)),
					locked(rec("I3", 3, "In Progress", now.Add(-time.Hour)), "agent-2", now.Add(-time.Hour)),
					rec("I4", 4, "Human Needed", now.Add(-30*time.Hour)),
					rec("I5", 5, "In Review", now.Add(-2*time.Hour)),
					rec("I6", 6, "Ready for Plan", now.Add(-3*time.Hour)),
					rec("I7", 7, "Ready for Plan", now.Add(-3*time.Hour)),
					rec("I8", 8, "", time.Time{}),
					rec("I9", 9, "Human Needed", now.Add(-72*time.Hour)),
				},
				snapshot: []enforce.Item{
					snap("I1", 1, "Backlog", true),
					snap("I2", 2, "In Progress", true),
					snap("I3", 3, "In Progress", true),
					snap("I4", 4, "Human Needed", true),
					snap("I5", 5, "In Review", true),
					blocked(snap("I6", 6, "Ready for Plan", true), 0, 2),
					blocked(snap("I7", 7, "Ready for Plan", true), 1, 2),
					snap("I8", 8, "", true),
					snap("I9", 9, "Human Needed", false),
				},
				status: passed,
			},
			check: func(t *testing.T, p health.Project) {
				want := map[string]int{"Backlog": 1, "In Progress": 2, "Human Needed": 2, "In Review": 1, "Ready for Plan": 2}
				if got := counts(p); fmt.Sprint(got) != fmt.Sprint(want) || p.Items != 9 || p.ID != "PVT_3" {
					t.Errorf("counts %v (items %d), want %v", got, p.Items, want)
				}
				for _, s := range p.States {
					if s.Name == "In Progress" && (s.Limit != 1 || !s.Over || s.Kind != "lock") {
						t.Errorf("In Progress: %+v", s)
					}
				}
				// Stale past 4h; expired past workflow.locks.ttl (2h).
				if got := ids(p.Locks, func(l health.Lock) string {
					return fmt.Sprintf("%s %v %v %v", l.Item.ItemID, l.Stale, l.Age, l.Expired)
				}); !slices.Equal(got, []string{"I2 true 5h0m0s true", "I3 false 1h0m0s false"}) {
					t.Errorf("locks %v", got)
				}
				// I9 waits longest, but it is closed.
				if got := ids(p.HumanNeeded, func(w health.Waiting) string { return fmt.Sprintf("%s %v", w.Item.ItemID, w.Long) }); !slices.Equal(got, []string{"I4 true", "I5 false"}) {
					t.Errorf("waiting %v", got)
				}
				if got := ids(p.Unblocked, func(r health.ItemRef) string { return r.ItemID }); !slices.Equal(got, []string{"I6"}) {
					t.Errorf("unblocked %v", got)
				}
				if got := ids(p.Unset, func(r health.ItemRef) string { return r.ItemID }); !slices.Equal(got, []string{"I8"}) {
					t.Errorf("unset %v", got)
				}
				wantF := []string{"stale_lock I2", "wip_over_limit In Progress", "long_human_wait I4", "unblocked_waiting I6", "unset_state I8"}
				if got := findings(p); !slices.Equal(got, wantF) {
					t.Errorf("hygiene %v\nwant %v", got, wantF)
				}
				if l := p.Locks[0]; l.Item.Title != "Issue 2" || l.Item.URL == "" || l.Item.Repo != "acme/app" || l.Item.Number != 2 || l.Holder != "agent-1" {
					t.Errorf("lock %+v", l)
				}
				rt := p.Runtime
				if !rt.RateLimitKnown || rt.RateRemaining != 4321 || rt.RateLimit != 5000 || !rt.LastReconcile.Equal(passed.Completed) ||
					!p.SnapshotAt.Equal(passed.Completed) || rt.QueueDepth != -1 || !rt.LastSweep.Equal(now.Add(-time.Minute)) {
					t.Errorf("runtime %+v, snapshot at %s", rt, p.SnapshotAt)
				}
				for _, f := range p.Hygiene {
					if f.Detail == "" {
						t.Errorf("finding without a detail: %+v", f)
					}
				}
			},
		},
		{
			name: "records follow webhooks: an item added since the walk counts, one that left does not",
			board: board{
				records: []enforce.Record{
					rec("I1", 1, "In Review", now.Add(-30*time.Minute)),
					func() enforce.Record {
						r := rec("Inew", 10, "Backlog", now)
						r.UpdatedAt = now.Add(-10 * time.Minute)
						return r
					}(),
					rec("Igone", 11, "Backlog", now.Add(-48*time.Hour)),
				},
				snapshot: []enforce.Item{snap("I1", 1, "Backlog", true)},
				status:   passed,
			},
			check: func(t *testing.T, p health.Project) {
				if got := counts(p); fmt.Sprint(got) != fmt.Sprint(map[string]int{"In Review": 1, "Backlog": 1}) || p.Items != 2 {
					t.Errorf("counts %v, items %d", got, p.Items)
				}
				if len(p.HumanNeeded) != 1 || p.HumanNeeded[0].Item.Title != "Issue 1" || p.HumanNeeded[0].Age != 30*time.Minute {
					t.Errorf("waiting %+v", p.HumanNeeded)
				}
			},
		},
		{
			name: "a lock claimed before any record: the snapshot's state",
			board: board{
				records:  []enforce.Record{{ItemID: "I1", ProjectID: "PVT_3", LockHolder: "agent-1", LockSince: now.Add(-time.Minute), UpdatedAt: now}},
				snapshot: []enforce.Item{snap("I1", 1, "Research in Progress", true)},
				status:   passed,
			},
			check: func(t *testing.T, p health.Project) {
				if got := counts(p); got["Research in Progress"] != 1 || len(p.Locks) != 1 || p.Locks[0].Stale || len(p.Hygiene) != 0 {
					t.Errorf("counts %v, locks %+v, hygiene %v", got, p.Locks, findings(p))
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := openStore(t)
			tt.board.write(t, st)
			rep, err := health.New(source{Store: st, sweep: now.Add(-time.Minute)}, options).Report(context.Background(), now)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Projects) != 1 || !rep.GeneratedAt.Equal(now) {
				t.Fatalf("report %+v", rep)
			}
			tt.check(t, rep.Projects[0])
		})
	}
}

// The same store gives the same report, byte for byte.
func TestReportIsDeterministic(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	var b board
	for i := 1; i <= 200; i++ {
		state := policy.DefaultSpec().States[i%11].Name
		r := rec(fmt.Sprintf("I%03d", i), i, state, now.Add(-time.Duration(i%7)*time.Hour))
		if i%5 == 0 {
			r = locked(r, "agent-1", now.Add(-time.Duration(i%9)*time.Hour))
		}
		b.records = append(b.records, r)
		b.snapshot = append(b.snapshot, blocked(snap(r.ItemID, i, state, i%3 != 0), i%2, i%4))
	}
	b.status = passed
	b.write(t, st)
	r := health.New(source{Store: st}, options)
	var first []byte
	for range 3 {
		rep, err := r.Report(context.Background(), now)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := json.Marshal(rep)
		if first == nil {
			first = data
		} else if string(data) != string(first) {
			t.Fatalf("two reports of one store differ")
		}
	}
}

func TestOnlyAndParseProject(t *testing.T) {
	t.Parallel()
	r := health.New(nil, health.Options{Projects: []enforce.ProjectRef{acme3, {Owner: "acme", Number: 4}}})
	tests := []struct {
		in   string
		ok   bool
		want string
	}{
		{"acme/3", true, "acme/3"},
		{"ACME/4", true, "acme/4"},
		{"acme/5", false, ""},
		{"acme", false, ""},
		{"acme/x", false, ""},
		{"/3", false, ""},
	}
	for _, tt := range tests {
		p, err := health.ParseProject(tt.in)
		if err != nil {
			if tt.ok {
				t.Errorf("ParseProject(%q): %v", tt.in, err)
			}
			continue
		}
		only, ok := r.Only(p)
		if ok != tt.ok || (ok && fmt.Sprint(only.Projects()) != "["+tt.want+"]") {
			t.Errorf("Only(%q) = %v, %v; want %q", tt.in, only, ok, tt.want)
		}
	}
}

func TestAge(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		30 * time.Second: "under a minute", 45 * time.Minute: "45m", 5*time.Hour + 10*time.Minute: "5h10m",
		4 * time.Hour: "4h", 76 * time.Hour: "3d4h", 48 * time.Hour: "2d",
	} {
		if got := health.Age(d); got != want {
			t.Errorf("Age(%s) = %q, want %q", d, got, want)
		}
	}
}
