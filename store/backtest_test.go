package store

import (
	"slices"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
)

// OrgAudit selects the decisions of an organization's projects (by project id, or on its
// repositories, case-insensitively, LIKE's wildcards matching only themselves) in a window
// [since, until), newest first, one bounded page at a time.
func TestBacktestOrgAudit(t *testing.T) {
	forEachDriver(t, func(t *testing.T, tg target) {
		s := tg.open(t)
		entries := []enforce.AuditEntry{
			0: {At: at(0), ProjectID: "P1", Repo: "acme/web", IssueNumber: 1, Actor: "a", Verdict: enforce.VerdictAllowed},
			1: {At: at(time.Minute), ProjectID: "P1", Repo: "acme/web", IssueNumber: 2, Actor: "a", Verdict: enforce.VerdictReverted},
			2: {At: at(time.Minute), ProjectID: "P2", Repo: "other/web", IssueNumber: 3, Actor: "a", Verdict: enforce.VerdictAllowed},
			3: {At: at(2 * time.Minute), ProjectID: "P9", Repo: "ACME/api", IssueNumber: 4, Actor: "a", Verdict: enforce.VerdictAllowed},
			4: {At: at(3 * time.Minute), ProjectID: "P8", Repo: "acmex/web", IssueNumber: 5, Actor: "a", Verdict: enforce.VerdictAllowed},
			5: {At: at(4 * time.Minute), ProjectID: "P1", Repo: "acme/web", IssueNumber: 6, Actor: "a", Verdict: enforce.VerdictAllowed},
			6: {At: at(-time.Minute), ProjectID: "P1", Repo: "acme/web", IssueNumber: 7, Actor: "a", Verdict: enforce.VerdictAllowed},
			7: {At: at(time.Minute), ProjectID: "P7", Repo: "a_me/web", IssueNumber: 8, Actor: "a", Verdict: enforce.VerdictAllowed},
		}
		for i, e := range entries {
			id, err := s.AppendAudit(t.Context(), e)
			if err != nil {
				t.Fatal(err)
			}
			entries[i].ID = id
		}
		issues := func(es []enforce.AuditEntry) []int {
			out := []int{}
			for _, e := range es {
				out = append(out, e.IssueNumber)
			}
			return out
		}
		window := OrgAuditQuery{Since: at(0), Until: at(4 * time.Minute), Limit: 10}
		for _, tc := range []struct {
			name string
			q    func(q OrgAuditQuery) OrgAuditQuery
			want []int
		}{
			{"by project id", func(q OrgAuditQuery) OrgAuditQuery { q.ProjectIDs = []string{"P1"}; return q }, []int{2, 1}},
			{"by owner, any case, not a longer owner", func(q OrgAuditQuery) OrgAuditQuery { q.Owner = "Acme"; return q }, []int{4, 2, 1}},
			{"both", func(q OrgAuditQuery) OrgAuditQuery { q.ProjectIDs, q.Owner = []string{"P1", "P2"}, "acme"; return q }, []int{4, 3, 2, 1}},
			{"wildcards are literal", func(q OrgAuditQuery) OrgAuditQuery { q.Owner = "a_me"; return q }, []int{8}},
			{"nothing selects nothing", func(q OrgAuditQuery) OrgAuditQuery { return q }, []int{}},
			{"a page", func(q OrgAuditQuery) OrgAuditQuery { q.Owner, q.Limit = "acme", 2; return q }, []int{4, 2}},
			{"the next page", func(q OrgAuditQuery) OrgAuditQuery {
				c := CursorOf(entries[1])
				q.Owner, q.Limit, q.Before = "acme", 2, &c
				return q
			}, []int{1}},
		} {
			got, err := s.OrgAudit(t.Context(), tc.q(window))
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if !slices.Equal(issues(got), tc.want) {
				t.Errorf("%s: issues %v, want %v", tc.name, issues(got), tc.want)
			}
		}
		for _, bad := range []OrgAuditQuery{{Owner: "acme"}, {Owner: "acme", Limit: MaxOrgAuditPage + 1}, {ProjectIDs: make([]string, MaxOrgAuditProjects+1), Limit: 1}} {
			if _, err := s.OrgAudit(t.Context(), bad); err == nil {
				t.Errorf("OrgAudit(%+v) did not refuse", bad)
			}
		}
	})
}

// CursorsByPrefix finds cursors by the start of their names, case-insensitively; ItemTitles
// reads the titles of the reconciler's snapshot.
func TestBacktestCursorsAndTitles(t *testing.T) {
	forEachDriver(t, func(t *testing.T, tg target) {
		s := tg.open(t)
		for name, v := range map[string]string{"reconcile/status/Acme/1": "a", "reconcile/status/acme/2": "b",
			"reconcile/status/acmex/3": "c", "reconcile/status/a_me/4": "d", "other": "e"} {
			if err := s.PutCursor(t.Context(), name, v); err != nil {
				t.Fatal(err)
			}
		}
		got, more, err := s.CursorsByPrefix(t.Context(), "reconcile/status/ACME/")
		if err != nil || more || len(got) != 2 || got["reconcile/status/Acme/1"] != "a" || got["reconcile/status/acme/2"] != "b" {
			t.Errorf("CursorsByPrefix = %v, %v, %v", got, more, err)
		}
		if got, _, _ := s.CursorsByPrefix(t.Context(), "reconcile/status/a_me/"); len(got) != 1 {
			t.Errorf("a wildcard matched more than itself: %v", got)
		}
		if err := s.PutSnapshot(t.Context(), "P1", []enforce.Item{{ID: "I1", Number: 1, Repo: "acme/web", Title: "One"},
			{ID: "I2", Number: 2, Repo: "acme/web", Title: "Two"}}, at(0)); err != nil {
			t.Fatal(err)
		}
		titles, err := s.ItemTitles(t.Context(), []string{"I1", "I9"})
		if err != nil || len(titles) != 1 || titles["I1"] != "One" {
			t.Errorf("ItemTitles = %v, %v", titles, err)
		}
		if _, err := s.ItemTitles(t.Context(), make([]string, MaxItemTitles+1)); err == nil {
			t.Error("ItemTitles took more than its bound")
		}
	})
}
