package sandbox

import (
	"context"
	"fmt"
	"github.com/ralph-gate/ralph-gate/enforce"
	"net/http"
	"strings"
	"testing"

	"github.com/ralph-gate/ralph-gate/app/config"
)

// automationSeed builds a board with hierarchies for every automation rule.
func automationSeed() []byte {
	var b strings.Builder
	b.WriteString(`org: acme
app: {id: 1001, slug: ralph-gate, installation_id: 2002, webhook_secret: sandbox-c4f5601eebadb3454e70cbd7}
users:
  - {login: alice, token: alice-token}
  - {login: agent-1, token: agent-1-token}
  - {login: agent-2, token: agent-2-token}
  - {login: owner, token: owner-token}
repos: [app]
projects:
  - number: 1
    title: Ralph
    fields:
      Workflow State: [Backlog, Research Needed, Research in Progress, Ready for Plan, Plan in Progress,
                       Plan in Review, In Progress, In Review, Done, Canceled, Human Needed]
      Estimate: [XS, S, M, L, XL]
issues:
`)
	issue := func(n int, title, state string, parent int, extra string) {
		fmt.Fprintf(&b, "  - {repo: app, number: %d, title: %q, project: 1", n, title)
		if parent > 0 {
			fmt.Fprintf(&b, ", parent: %d", parent)
		}
		if extra != "" {
			b.WriteString(", " + extra)
		}
		if state != "" {
			fmt.Fprintf(&b, ", fields: {Workflow State: %s}", state)
		}
		b.WriteString("}\n")
	}
	// Cascade: an epic and children in every kind of state.
	issue(1, "Epic", "Plan in Progress", 0, "")
	issue(2, "Child in Backlog", "Backlog", 1, "")
	issue(3, "Child ready", "Ready for Plan", 1, "")
	issue(4, "Child done", "Done", 1, "")
	issue(5, "Child canceled", "Canceled", 1, "")
	issue(6, "Child escalated", "Human Needed", 1, "")
	// Convergence over two levels, a Canceled sibling that must not block.
	issue(10, "Grandparent", "Research Needed", 0, "")
	issue(11, "Parent A", "Research Needed", 10, "")
	issue(12, "Parent B", "Ready for Plan", 10, "")
	issue(13, "Canceled sibling", "Canceled", 10, "")
	issue(21, "A1", "Research Needed", 11, "")
	issue(22, "A2", "Research Needed", 11, "")
	issue(23, "A3", "Research Needed", 11, "")
	// A Human Needed child blocks convergence.
	issue(30, "Parent with an escalated child", "Research Needed", 0, "")
	issue(31, "Ready soon", "Research Needed", 30, "")
	issue(32, "Escalated", "Human Needed", 30, "")
	// Convergence gate: a sibling still in research.
	issue(40, "Group", "Research Needed", 0, "")
	issue(41, "Ready member", "Ready for Plan", 40, "")
	issue(42, "Researching member", "Research Needed", 40, "")
	// Blocker gate.
	issue(50, "Blocked", "Research Needed", 0, "blocked_by: [51]")
	issue(51, "Blocker", "Research Needed", 0, "")
	// Lock ownership.
	issue(60, "Lockable", "Research Needed", 0, "")
	// Lifecycle.
	issue(70, "Being implemented", "In Progress", 0, "")
	issue(71, "Will be closed", "Research Needed", 0, "")
	// 120 sub-issues: a cascade and a convergence each.
	issue(100, "Big epic", "Plan in Progress", 0, "")
	for n := 101; n <= 220; n++ {
		issue(n, fmt.Sprintf("Big child %d", n), "Ready for Plan", 100, "")
	}
	issue(300, "Big parent", "Research Needed", 0, "")
	for n := 301; n <= 420; n++ {
		issue(n, fmt.Sprintf("Converging child %d", n), "Research Needed", 300, "")
	}
	b.WriteString("pull_requests:\n  - {repo: app, number: 80, title: Implement it, closes: [70]}\n")
	return []byte(b.String())
}

func TestChildrenCascade(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, driver string) {
		e := start(t, driver, automationSeed(), nil)
		e.move("alice", 1, "In Progress")
		e.settle()
		e.wantState(1, "In Progress")
		e.wantState(2, "In Progress")
		e.wantState(3, "In Progress")
		e.wantState(4, "Done")
		e.wantState(5, "Canceled")
		e.wantState(6, "Human Needed")
		automated := 0
		for _, n := range []int{2, 3} {
			for _, a := range e.audit(n) {
				if a.Verdict == enforce.VerdictAutomated && strings.Contains(a.Cause, "#1") {
					automated++
				}
			}
		}
		if automated != 2 {
			t.Errorf("want 2 automated moves audited with their cause, got %d", automated)
		}
	})
}

func TestParentConvergence(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, driver string) {
		e := start(t, driver, automationSeed(), nil)
		e.move("agent-1", 21, "Ready for Plan")
		e.move("agent-1", 22, "Ready for Plan")
		e.settle()
		e.wantState(11, "Research Needed") // not yet: A3 is still researching
		e.move("agent-2", 23, "Ready for Plan")
		e.settle()
		e.wantState(11, "Ready for Plan") // every child is there
		e.wantState(10, "Ready for Plan") // and the grandparent follows (its Canceled child does not block)

		e.move("agent-1", 31, "Ready for Plan")
		e.settle()
		e.wantState(30, "Research Needed") // a Human Needed child blocks
	})
}

func TestGates(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, driver string) {
		e := start(t, driver, automationSeed(), nil)

		// Planning a group member while a sibling is still in research.
		e.move("agent-1", 41, "Plan in Progress")
		e.settle()
		e.wantState(41, "Ready for Plan")
		cs := e.comments(41)
		if len(cs) != 1 || !strings.Contains(cs[0].Body, "#42") || !strings.Contains(cs[0].Body, "Research Needed") {
			t.Fatalf("the refusal must name the sibling and its state: %v", cs)
		}

		// Claiming an issue blocked by an open issue.
		e.move("agent-1", 50, "Research in Progress")
		e.settle()
		e.wantState(50, "Research Needed")
		if cs := e.comments(50); len(cs) != 1 || !strings.Contains(cs[0].Body, "#51") {
			t.Fatalf("the refusal must name the blocker: %v", cs)
		}

		// Another agent may not take a locked item; a person may.
		e.move("agent-1", 60, "Research in Progress")
		e.settle()
		e.move("agent-2", 60, "Ready for Plan")
		e.settle()
		e.wantState(60, "Research in Progress")
		e.move("alice", 60, "Ready for Plan")
		e.settle()
		e.wantState(60, "Ready for Plan")
	})
}

func TestGatesCanBeSwitchedOff(t *testing.T) {
	t.Parallel()
	e := start(t, "sqlite", automationSeed(), func(c *config.Config) {
		c.Workflow.Gates.Convergence = false
		c.Workflow.Gates.Blockers = false
		c.Workflow.Automation.CascadeChildren = false
	})
	e.move("agent-1", 41, "Plan in Progress")
	e.move("agent-1", 50, "Research in Progress")
	e.move("alice", 1, "In Progress")
	e.settle()
	e.wantState(41, "Plan in Progress")
	e.wantState(50, "Research in Progress")
	e.wantState(2, "Backlog")
}

func TestAutomationComments(t *testing.T) {
	t.Parallel()
	e := start(t, "sqlite", automationSeed(), func(c *config.Config) {
		c.Workflow.Automation.CommentAutomation = true
	})
	e.move("alice", 1, "In Progress")
	e.settle()
	cs := e.comments(2)
	if len(cs) != 1 || !strings.Contains(cs[0].Body, "ralph-transition") || !strings.Contains(cs[0].Body, "cascade") {
		t.Fatalf("want one automation comment on #2, got %v", cs)
	}
	if cs := e.comments(4); len(cs) != 0 {
		t.Fatalf("an untouched child got comments: %v", cs)
	}
}

func TestWIPLimit(t *testing.T) {
	t.Parallel()
	e := start(t, "sqlite", automationSeed(), func(c *config.Config) {
		c.Workflow.Gates.WIPLimits = map[string]int{"Research in Progress": 1}
	})
	e.move("agent-1", 60, "Research in Progress")
	e.settle()
	e.move("agent-2", 71, "Research in Progress")
	e.settle()
	e.wantState(60, "Research in Progress")
	e.wantState(71, "Research Needed")
}

func TestLifecycleSync(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, driver string) {
		e := start(t, driver, automationSeed(), nil)
		// The known race: merging closes the issue while the merge sync runs; it ends Done.
		if err := e.sb.Sim.Merge("app", 80, "alice"); err != nil {
			t.Fatal(err)
		}
		e.settle()
		e.wantState(70, "Done")

		e.patchIssue("alice", 71, `{"state":"closed","state_reason":"not_planned"}`)
		e.settle()
		e.wantState(71, "Canceled")
		e.patchIssue("alice", 71, `{"state":"open"}`)
		e.settle()
		e.wantState(71, "Backlog")
		found := false
		for _, a := range e.audit(71) {
			if a.Verdict == enforce.VerdictAutomated && strings.Contains(a.Cause, "alice") {
				found = true
			}
		}
		if !found {
			t.Errorf("lifecycle moves must be audited with sender and trigger: %+v", e.audit(71))
		}
	})
}

// Not parallel: it computes more than it waits. Each of the 120 children's moves has the
// parent's convergence check every child's record in the store (modernc SQLite under the race
// detector: a CPU for its whole 40 s), and beside seven other sandboxes it took minutes.
func TestLargeFamilies(t *testing.T) {
	e := start(t, "sqlite", automationSeed(), nil)
	before := e.sb.Sim.Requests()
	e.move("alice", 100, "In Progress")
	e.settle()
	for n := 101; n <= 220; n++ {
		e.wantState(n, "In Progress")
	}
	after := e.sb.Sim.Requests()
	writes := after.Counts["graphql:updateProjectV2ItemFieldValue"] - before.Counts["graphql:updateProjectV2ItemFieldValue"]
	appRequests := appRequestsBetween(e, before.Total)
	t.Logf("cascade of 120 children: %d app requests, %d field writes (user move included in writes)", appRequests, writes)
	// item read + 2 sub-issue pages + ⌈120/50⌉ guarded turns (a read of their cards and a
	// batched write each), + the project's field lookup (made once per process, then cached).
	if appRequests > 1+2+3*2+1 {
		t.Errorf("cascade of 120 used %d app requests", appRequests)
	}

	for n := 301; n <= 420; n++ {
		e.move("agent-1", n, "Ready for Plan")
	}
	e.settle()
	e.wantState(300, "Ready for Plan")
}

// appRequestsBetween counts requests made with the installation token since seq.
func appRequestsBetween(e *env, since int) int {
	n := 0
	for _, r := range e.sb.Sim.Requests().Entries {
		if r.Seq > since && r.TokenKind == "installation" {
			n++
		}
	}
	return n
}

func (e *env) patchIssue(login string, number int, body string) {
	e.t.Helper()
	token, err := e.sb.Token(login)
	if err != nil {
		e.t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPatch,
		fmt.Sprintf("%s/api/v3/repos/%s/app/issues/%d", e.sb.SimURL, e.sb.Org(), number), strings.NewReader(body))
	req.Header.Set("Authorization", "bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("PATCH issue #%d: %d", number, resp.StatusCode)
	}
}

func TestProjectItemsPagination(t *testing.T) {
	t.Parallel()
	e := start(t, "sqlite", automationSeed(), nil)
	b, err := e.sb.UserBoard("alice")
	if err != nil {
		t.Fatal(err)
	}
	seen, pages, after := map[int]bool{}, 0, ""
	for {
		page, err := b.ProjectItems(context.Background(), "acme", 1, after)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, it := range page.Items {
			if seen[it.Number] {
				t.Fatalf("#%d twice", it.Number)
			}
			seen[it.Number] = true
			if it.Number == 50 && it.OpenBlockers != 1 {
				t.Errorf("#50 blockers = %d", it.OpenBlockers)
			}
			if it.Number == 21 && (it.ParentNumber != 11 || it.State != "Research Needed") {
				t.Errorf("#21 = %+v", it)
			}
		}
		if !page.HasNext {
			if len(seen) != page.Total {
				t.Fatalf("saw %d items, total %d", len(seen), page.Total)
			}
			break
		}
		after = page.EndCursor
	}
	if pages != 3 {
		t.Errorf("%d pages for %d items", pages, len(seen))
	}
}
