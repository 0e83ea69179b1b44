package store

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
)

// auditFixture appends entries whose times are not in id order (one recorded late, two at
// the same time) and returns them with their ids.
func auditFixture(t *testing.T, s *Store) []enforce.AuditEntry {
	t.Helper()
	entries := []enforce.AuditEntry{
		0: {At: at(0), DeliveryID: "d1", ItemID: "I12", IssueNumber: 12, Repo: "acme/web", Actor: "alice",
			ActorKind: "human", ToState: "Backlog", Verdict: enforce.VerdictAllowed, Rule: "initial"},
		1: {At: at(time.Minute), DeliveryID: "d2", ItemID: "I12", IssueNumber: 12, Repo: "acme/web", Actor: "Agent-1",
			ActorKind: "agent", FromState: "Backlog", ToState: "Done", Verdict: enforce.VerdictReverted, Rule: "transition"},
		2: {At: at(2 * time.Minute), ItemID: "I13", IssueNumber: 13, Repo: "acme/web", Actor: "ralph-gate[bot]",
			ActorKind: "app", FromState: "Backlog", ToState: "Research Needed", Verdict: enforce.VerdictAutomated},
		3: {At: at(2 * time.Minute), ItemID: "I12b", IssueNumber: 12, Repo: "acme/api", Actor: "bob",
			ActorKind: "human", ToState: "Backlog", Verdict: enforce.VerdictAdopted},
		4: {At: at(-time.Minute), ItemID: "I13", IssueNumber: 13, Repo: "acme/web", Actor: "carol",
			ActorKind: "bypass", FromState: "Done", ToState: "Backlog", Verdict: enforce.VerdictAllowed, Rule: "bypass"},
		5: {At: at(3 * time.Minute), DeliveryID: "d6", ItemID: "I12", IssueNumber: 12, Repo: "acme/web", Actor: "agent-1",
			ActorKind: "agent", FromState: "Backlog", ToState: "In Progress", Verdict: enforce.VerdictReverted, Rule: "transition"},
	}
	for i, e := range entries {
		id, err := s.AppendAudit(t.Context(), e)
		if err != nil {
			t.Fatal(err)
		}
		entries[i].ID = id
	}
	return entries
}

func TestListAudit(t *testing.T) {
	forEachDriver(t, func(t *testing.T, tg target) {
		s := tg.open(t)
		entries := auditFixture(t, s)
		// Newest first: 5, then 3 and 2 (same time, higher id first), 1, 0, 4.
		cur := func(i int) *AuditCursor { c := CursorOf(entries[i]); return &c }
		tests := []struct {
			name         string
			q            AuditQuery
			want         []int
			older, newer bool
		}{
			{"all, newest first", AuditQuery{}, []int{5, 3, 2, 1, 0, 4}, false, false},
			{"actor, any case", AuditQuery{Actor: "AGENT-1"}, []int{5, 1}, false, false},
			{"verdict", AuditQuery{Verdict: enforce.VerdictAllowed}, []int{0, 4}, false, false},
			{"rule", AuditQuery{Rule: "transition"}, []int{5, 1}, false, false},
			{"issue number in any repo", AuditQuery{IssueNumber: 12}, []int{5, 3, 1, 0}, false, false},
			{"repo and issue", AuditQuery{Repo: "acme/web", IssueNumber: 12}, []int{5, 1, 0}, false, false},
			{"repo alone", AuditQuery{Repo: "acme/api"}, []int{3}, false, false},
			{"since inclusive, until exclusive", AuditQuery{Since: at(time.Minute), Until: at(3 * time.Minute)}, []int{3, 2, 1}, false, false},
			{"until in another zone", AuditQuery{Until: at(0).In(time.FixedZone("X", -5*3600))}, []int{4}, false, false},
			{"first page", AuditQuery{Limit: 2}, []int{5, 3}, true, false},
			{"second page", AuditQuery{Limit: 2, Before: cur(3)}, []int{2, 1}, true, true},
			{"last page", AuditQuery{Limit: 2, Before: cur(1)}, []int{0, 4}, false, true},
			{"back from the last page", AuditQuery{Limit: 2, After: cur(0)}, []int{2, 1}, true, true},
			{"back to the first page", AuditQuery{Limit: 2, After: cur(2)}, []int{5, 3}, true, false},
			{"after the newest", AuditQuery{After: cur(5)}, nil, true, false},
			{"before the oldest", AuditQuery{Before: cur(4)}, nil, false, true},
			{"filtered pages", AuditQuery{Limit: 1, IssueNumber: 12, Before: cur(3)}, []int{1}, true, true},
			{"no match", AuditQuery{Actor: "nobody"}, nil, false, false},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got, err := s.ListAudit(t.Context(), tt.q)
				if err != nil {
					t.Fatal(err)
				}
				var want []enforce.AuditEntry
				for _, i := range tt.want {
					want = append(want, entries[i])
				}
				if !slices.Equal(got.Entries, want) || got.Older != tt.older || got.Newer != tt.newer {
					t.Errorf("ListAudit(%+v) = %s older=%v newer=%v\nwant %s older=%v newer=%v",
						tt.q, ids(got.Entries), got.Older, got.Newer, ids(want), tt.older, tt.newer)
				}
			})
		}
		bad := []AuditQuery{
			{Limit: -1},
			{Limit: MaxAuditPage + 1},
			{Before: cur(0), After: cur(1)},
			{Verdict: "maybe"},
		}
		for _, q := range bad {
			if _, err := s.ListAudit(t.Context(), q); err == nil {
				t.Errorf("ListAudit(%+v) succeeded, want an error", q)
			}
		}
	})
}

func TestListAuditDefaultPage(t *testing.T) {
	forEachDriver(t, func(t *testing.T, tg target) {
		s := tg.open(t)
		for i := range DefaultAuditPage + 1 {
			if _, err := s.AppendAudit(t.Context(), enforce.AuditEntry{At: at(time.Duration(i) * time.Second),
				Actor: "alice", Verdict: enforce.VerdictAllowed}); err != nil {
				t.Fatal(err)
			}
		}
		page, err := s.ListAudit(t.Context(), AuditQuery{})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Entries) != DefaultAuditPage || !page.Older || page.Newer {
			t.Errorf("default page: %d entries, older=%v newer=%v; want %d, true, false",
				len(page.Entries), page.Older, page.Newer, DefaultAuditPage)
		}
	})
}

func TestGetAudit(t *testing.T) {
	forEachDriver(t, func(t *testing.T, tg target) {
		s := tg.open(t)
		entries := auditFixture(t, s)
		for _, want := range entries {
			got, err := s.GetAudit(t.Context(), want.ID)
			if err != nil || got != want {
				t.Errorf("GetAudit(%d) = %+v, %v; want %+v", want.ID, got, err, want)
			}
		}
		if _, err := s.GetAudit(t.Context(), entries[len(entries)-1].ID+1); !errors.Is(err, enforce.ErrNotFound) {
			t.Errorf("GetAudit(unknown) error = %v, want ErrNotFound", err)
		}
	})
}

func TestAuditCursor(t *testing.T) {
	t.Parallel()
	c := AuditCursor{At: at(0), ID: 42}
	got, err := ParseAuditCursor(c.String())
	if err != nil || !got.At.Equal(normTime(c.At)) || got.ID != 42 {
		t.Errorf("ParseAuditCursor(%q) = %+v, %v; want %+v", c.String(), got, err, c)
	}
	for _, s := range []string{"", "1", "1.", ".1", "x.1", "1.x", "1.0", "1.-3", "-1.2", "1.2.3"} {
		if c, err := ParseAuditCursor(s); err == nil {
			t.Errorf("ParseAuditCursor(%q) = %+v, want an error", s, c)
		}
	}
}

func ids(es []enforce.AuditEntry) string {
	out := make([]int64, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return fmt.Sprint(out)
}
