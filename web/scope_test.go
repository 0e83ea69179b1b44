package web

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/health"
)

// twoOrgsReport is boardReport's acme/1 and globex/1, whose items, agents and policy are
// globex's own.
func twoOrgsReport() health.Report {
	rep := boardReport()
	g := rep.Projects[0]
	g.ID, g.Owner, g.Number = "PVT_G1", "globex", 1
	g.Locks = []health.Lock{{Item: health.ItemRef{ItemID: "PVTI_G1", Repo: "globex/erp", Number: 1, Title: "Globex secret plan", State: "In Progress"},
		Holder: "agent-globex", Since: t0.Add(-time.Hour), Age: time.Hour}}
	rep.Projects = append(rep.Projects, g)
	rep.Orgs = []health.Org{{Owner: "acme", Commit: "aaaaaaaaaaaa", Since: t0}, {Owner: "globex", Commit: "bbbbbbbbbbbb", Since: t0}}
	hour, _ := facadeCounts()
	globex := enforce.ToolCallCount{Tool: "claim_ticket", Agent: "agent-globex", Outcome: enforce.OutcomeOK, Bucket: 1, Calls: 9}
	all := append(slices.Clone(hour), globex)
	rep.Facade = health.Facade{Hour: health.Window(t0.Add(-time.Hour), all), Day: health.Window(t0.Add(-24*time.Hour), all)}
	return rep
}

// globexDecisions are decisions on globex/1, appended after the fixture's (acme/1's).
func globexDecisions(t *testing.T, e *env) []int64 {
	t.Helper()
	var ids []int64
	for i, d := range []string{"g-1", "g-2"} {
		id, err := e.st.AppendAudit(context.Background(), enforce.AuditEntry{At: t0.Add(-time.Duration(90-i) * time.Minute), DeliveryID: d,
			ProjectID: "PVT_G1", ItemID: "PVTI_G1", IssueNumber: 1, Repo: "globex/erp", Actor: "agent-globex", ActorKind: "agent",
			FromState: "Backlog", ToState: "In Progress", Verdict: enforce.VerdictReverted, Rule: "transition", Reason: "Globex secret reason"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// A viewer who belongs to one of two organizations served sees that one's board, decisions
// and agents only: the other's board, a decision on it and the link of its violation comment
// answer 404, as what does not exist; its projects, policy, agents and decisions are in no
// page; the service's queue, every organization's together, is not shown. A viewer of both
// sees everything, and one of none nothing.
func TestAViewerSeesTheirOrganizationsOnly(t *testing.T) {
	t.Parallel()
	var facadeAsked [][]string
	scope := Scope{Orgs: []string{"ACME"}}
	e := newEnv(t, twoOrgsReport(), Options{
		Scope: func(*http.Request) Scope { return scope },
		Facade: func(_ context.Context, now time.Time, orgs []string) (health.Facade, error) {
			facadeAsked = append(facadeAsked, orgs)
			hour, _ := facadeCounts() // acme's agents' calls
			return health.Facade{Hour: health.Window(now.Add(-time.Hour), hour), Day: health.Window(now.Add(-24*time.Hour), hour)}, nil
		},
	})
	gids := globexDecisions(t, e)
	secret := []string{"globex", "Globex secret", "agent-globex", "bbbbbbb"}
	lacks := func(t *testing.T, path string, res response) {
		t.Helper()
		for _, s := range secret {
			if strings.Contains(res.body, s) {
				t.Errorf("GET %s shows %q:\n%s", path, s, res.body)
			}
		}
	}

	t.Run("one organization", func(t *testing.T) {
		if res := e.get(t, "/ui/"); res.status != http.StatusSeeOther || res.header.Get("Location") != "/ui/projects/acme/1" {
			t.Errorf("/ui/: %d to %q, want acme/1, the only project seen", res.status, res.header.Get("Location"))
		}
		res := e.get(t, "/ui/projects/acme/1")
		if res.status != http.StatusOK || !strings.Contains(res.body, "not shown: the queue holds every organization's changes together") ||
			strings.Contains(res.body, "3 jobs waiting") || !strings.Contains(res.body, "the calls of the agents that work for your organizations") ||
			!strings.Contains(res.body, "agent-1") {
			t.Errorf("acme/1: %d\n%s", res.status, res.body)
		}
		lacks(t, "/ui/projects/acme/1", res)
		if len(facadeAsked) == 0 || !slices.Equal(facadeAsked[len(facadeAsked)-1], []string{"ACME"}) {
			t.Errorf("the façade was asked for %v, want the viewer's organizations", facadeAsked)
		}
		for _, path := range []string{"/ui/projects/globex/1", "/ui/projects/GLOBEX/1", "/ui/decisions/" + itoa(gids[0]), "/ui/decisions/by-delivery/g-1"} {
			res := e.get(t, path)
			if res.status != http.StatusNotFound || strings.Contains(res.body, "Globex secret") || strings.Contains(res.body, "agent-globex") {
				t.Errorf("GET %s: %d, want 404 and nothing of globex's\n%s", path, res.status, res.body)
			}
		}
		// Another organization's board is told apart from none in no way.
		other, none := e.get(t, "/ui/projects/globex/1"), e.get(t, "/ui/projects/initech/1")
		if strings.ReplaceAll(other.body, "globex", "initech") != none.body || !strings.Contains(none.body, "initech/1 is not an enforced project of your organizations.") {
			t.Errorf("another organization's board and none differ:\n%s\n%s", other.body, none.body)
		}
		res = e.get(t, "/ui/decisions")
		if got := listedIDs(t, res.body); res.status != http.StatusOK || !slices.Equal(got, reversed(e.ids)) {
			t.Errorf("decisions: %d %v, want acme's %v", res.status, got, reversed(e.ids))
		}
		lacks(t, "/ui/decisions", res)
		for q, want := range map[string][]int64{"?issue=globex/erp%231": nil, "?actor=agent-globex": nil, "?verdict=reverted&limit=1": {e.ids[1]}} {
			res := e.get(t, "/ui/decisions"+q)
			if got := listedIDs(t, res.body); !slices.Equal(got, want) || strings.Contains(res.body, "Globex secret") {
				t.Errorf("%s: %v, want %v\n%s", q, got, want, res.body)
			}
		}
	})

	t.Run("both organizations", func(t *testing.T) {
		scope = Scope{All: true}
		if res := e.get(t, "/ui/"); res.status != http.StatusOK || !strings.Contains(res.body, `href="/ui/projects/globex/1"`) {
			t.Errorf("/ui/: %d\n%s", res.status, res.body)
		}
		res := e.get(t, "/ui/projects/globex/1")
		if res.status != http.StatusOK || !strings.Contains(res.body, "Globex secret plan") || !strings.Contains(res.body, "3 jobs waiting") ||
			!strings.Contains(res.body, "agent-globex") {
			t.Errorf("globex/1 for a viewer of both: %d\n%s", res.status, res.body)
		}
		if res := e.get(t, "/ui/decisions/"+itoa(gids[1])); res.status != http.StatusOK {
			t.Errorf("globex's decision for a viewer of both: %d", res.status)
		}
		if got := listedIDs(t, e.get(t, "/ui/decisions").body); len(got) != len(e.ids)+len(gids) {
			t.Errorf("decisions for a viewer of both: %v", got)
		}
	})

	t.Run("no organization", func(t *testing.T) {
		scope = Scope{}
		res := e.get(t, "/ui/")
		if res.status != http.StatusOK || strings.Contains(res.body, "/ui/projects/") {
			t.Errorf("/ui/ for a viewer of none: %d\n%s", res.status, res.body)
		}
		lacks(t, "/ui/", res)
		if got := listedIDs(t, e.get(t, "/ui/decisions").body); len(got) != 0 {
			t.Errorf("decisions for a viewer of none: %v", got)
		}
		for _, path := range []string{"/ui/projects/acme/1", "/ui/decisions/" + itoa(e.ids[0])} {
			if res := e.get(t, path); res.status != http.StatusNotFound {
				t.Errorf("GET %s for a viewer of none: %d", path, res.status)
			}
		}
	})
}

func reversed(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Reverse(out)
	return out
}

// A viewer's decisions page through the audit log as everybody's do, their organization's
// entries only, however few among the others' and however small the budget of one page's
// reading: following Older from the newest page lists every one of theirs once, newest first,
// and Newer back again.
func TestAViewersDecisionsPage(t *testing.T) {
	t.Parallel()
	for _, bounds := range []scanBounds{{read: 500, budget: maxScanned}, {read: 3, budget: 3}, {read: 2, budget: 6}} {
		t.Run(fmt.Sprintf("read %d, budget %d", bounds.read, bounds.budget), func(t *testing.T) {
			e := newEnv(t, twoOrgsReport(), Options{Scope: func(*http.Request) Scope { return Scope{Orgs: []string{"acme"}} }})
			e.h.(*handler).scan = bounds
			want := reversed(e.ids)
			// Globex's decisions around, between and after acme's.
			for i := range 12 {
				at := t0.Add(-6*time.Hour + time.Duration(i)*37*time.Minute)
				if _, err := e.st.AppendAudit(context.Background(), enforce.AuditEntry{At: at, ProjectID: "PVT_G1", ItemID: "PVTI_G1",
					IssueNumber: 1, Repo: "globex/erp", Actor: "agent-globex", ActorKind: "agent", Verdict: enforce.VerdictAllowed, Rule: "legal"}); err != nil {
					t.Fatal(err)
				}
			}
			var got []int64
			path, pages := "/ui/decisions?limit=2", 0
			for ; path != "" && pages < 50; pages++ {
				res := e.get(t, path)
				if res.status != http.StatusOK {
					t.Fatalf("GET %s: %d", path, res.status)
				}
				got = append(got, listedIDs(t, res.body)...)
				path = link(res.body, "Older ›")
			}
			if !slices.Equal(got, want) {
				t.Fatalf("paged older: %v, want %v (%d pages)", got, want, pages)
			}
			// Back from the oldest: a page after the oldest entry, then Newer.
			var back []int64
			res := e.get(t, "/ui/decisions?limit=2")
			for path = link(res.body, "Older ›"); path != ""; path = link(res.body, "Older ›") {
				res = e.get(t, path)
			}
			back = append(back, reversed(listedIDs(t, res.body))...)
			for path, pages = link(res.body, "‹ Newer"), 0; path != "" && pages < 50; pages++ {
				res = e.get(t, path)
				back = append(back, reversed(listedIDs(t, res.body))...)
				path = link(res.body, "‹ Newer")
			}
			if !slices.Equal(back, e.ids) {
				t.Fatalf("paged newer: %v, want %v", back, e.ids)
			}
		})
	}
}
