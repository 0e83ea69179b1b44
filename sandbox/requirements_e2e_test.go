package sandbox

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/ghboard"
	"github.com/ralph-gate/ralph-gate/policy"
)

const requirementsSeed = `org: acme
app: {id: 1001, slug: ralph-gate, installation_id: 2002, webhook_secret: sandbox-c4f5601eebadb3454e70cbd7}
users:
  - {login: alice, token: alice-token}
  - {login: agent-1, token: agent-1-token}
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
  - {repo: app, number: 1, title: No estimate, project: 1, fields: {Workflow State: Research Needed}}
  - {repo: app, number: 2, title: Estimated, project: 1, fields: {Workflow State: Research Needed, Estimate: S}}
  - {repo: app, number: 3, title: Reviewed without a pull request, project: 1, fields: {Workflow State: In Review}}
  - {repo: app, number: 4, title: Reviewed with a pull request, project: 1, fields: {Workflow State: In Review}}
  - {repo: app, number: 5, title: A person's, project: 1, fields: {Workflow State: Research Needed}}
  - {repo: app, number: 6, title: Epic, project: 1, fields: {Workflow State: Research Needed, Estimate: L}}
  - {repo: app, number: 7, title: Estimated child, project: 1, parent: 6, fields: {Workflow State: Backlog, Estimate: S}}
  - {repo: app, number: 8, title: Child without an estimate, project: 1, parent: 6, fields: {Workflow State: Backlog}}
  - {repo: app, number: 9, title: Estimated too late, project: 1, fields: {Workflow State: Research Needed}}
  - {repo: app, number: 10, title: Merged before its plan was reviewed, project: 1, fields: {Workflow State: Plan in Review, Estimate: M}}
pull_requests:
  - {repo: app, number: 40, title: Implement 4, closes: [4]}
  - {repo: app, number: 41, title: Implement 10, closes: [10]}
`

// workflow.requirements end to end (docs/ENFORCEMENT.md "Requirements"), configured as the
// issue that asked for them: an agent's move into Ready for Plan without an Estimate is
// reverted and told to set it, with the options; setting it and retrying works; with one the
// move stands; a person is not bound. An agent's In Review → Done with no merged pull request
// is reverted; merging the pull request that closes the issue takes it to Done. A cascade
// leaves a child that fails the requirement where it is. A move is checked against the item
// as it was when it was made: an Estimate set a second later, before the move is judged, does
// not count; a pull request merged before the move does.
func TestRequirementsEndToEnd(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, driver string) {
		e := start(t, driver, []byte(requirementsSeed), func(c *config.Config) {
			c.Workflow.Requirements = []policy.Requirement{
				{Into: []string{"Ready for Plan"}, Fields: []string{"Estimate"}},
				{Into: []string{"Done"}, PullRequest: policy.PullRequestMerged, For: []string{"agent"}},
			}
			// Long enough that #9's Estimate, set a second after its move, lands before the
			// move is judged.
			c.Enforcement.ReorderWindow = 3 * time.Second
		})
		ctx := context.Background()
		if _, err := e.sb.App.ReconcileNow(ctx); err != nil { // first sight: adopted
			t.Fatal(err)
		}
		before := e.sb.Sim.Requests().Total

		e.move("agent-1", 1, "Ready for Plan")
		e.move("agent-1", 2, "Ready for Plan")
		e.move("alice", 5, "Ready for Plan")
		e.move("agent-1", 3, "Done")
		e.settle()
		e.wantState(1, "Research Needed")
		e.wantState(2, "Ready for Plan")
		e.wantState(5, "Ready for Plan")
		e.wantState(3, "In Review")
		wantExplained(t, e, 1, "Ready for Plan requires Estimate to have a value",
			"Recovery: set Estimate (XS, S, M, L, XL) on the item first, then retry Ready for Plan")
		wantExplained(t, e, 3, "Done requires a merged pull request that closes the issue",
			"Recovery: merge a pull request that closes #3 first, then retry Done")
		for _, n := range []int{1, 3} {
			if !hasAudit(e.audit(n), enforce.VerdictReverted, "requirement") {
				t.Errorf("#%d: no reverted decision with rule requirement: %+v", n, e.audit(n))
			}
		}
		// What the requirements check is read with the item: no request of their own. Four
		// moves, two refused: at most one read of each moved item and one of each refused
		// card before its revert (fewer when reads are combined), the workflow field's lookup
		// (once per process), two reverts and two comments — nothing else.
		reads, other := 0, map[string]int{}
		for _, r := range e.sb.Sim.Requests().Entries {
			if r.Seq <= before || r.TokenKind != "installation" {
				continue
			}
			for _, op := range r.Operations {
				switch op {
				case "graphql:request":
				case "graphql:node", "graphql:nodes":
					reads++
				default:
					other[op]++
				}
			}
		}
		if reads > 6 || other["graphql:organization"] > 1 || other["graphql:updateProjectV2ItemFieldValue"] != 2 || other["graphql:addComment"] != 2 ||
			len(other) > 3 {
			t.Errorf("four moves, two refused: %d item reads (want at most 6) and %v", reads, other)
		}

		// The Recovery, followed: set the Estimate, retry.
		e.setSingleSelect("agent-1", 1, "Estimate", "M")
		e.move("agent-1", 1, "Ready for Plan")
		e.settle()
		e.wantState(1, "Ready for Plan")

		// A cascade carries only the children that meet Ready for Plan's requirement: #8 has no
		// Estimate and stays (the requirement binds agents; the app forces it on no one).
		e.move("alice", 6, "Ready for Plan")
		e.settle()
		e.wantState(6, "Ready for Plan")
		e.wantState(7, "Ready for Plan")
		e.wantState(8, "Backlog")

		// The merge of the pull request that closes #4 takes it to Done, by the agent that merged.
		if err := e.sb.Sim.Merge("app", 40, "agent-1"); err != nil {
			t.Fatal(err)
		}
		e.settle()
		e.wantState(4, "Done")
		if hasAudit(e.audit(4), enforce.VerdictReverted, "requirement") {
			t.Errorf("#4's merge was refused: %+v", e.audit(4))
		}

		// As it was when it was made: the Estimate set a second after the move (while the move
		// waits for its place in the history) does not count.
		e.move("agent-1", 9, "Ready for Plan")
		time.Sleep(1100 * time.Millisecond)
		e.setSingleSelect("alice", 9, "Estimate", "S")
		e.settle()
		e.wantState(9, "Research Needed")
		if !hasAudit(e.audit(9), enforce.VerdictReverted, "requirement") {
			t.Errorf("#9: the move made before its Estimate was set stood: %+v", e.audit(9))
		}

		// A pull request merged apart from the move counts: merged by the agent while #10's
		// plan was in review (the merge moves nothing from there; its close is refused and
		// undone), the owner takes it to In Review, then the agent's In Review → Done.
		if err := e.sb.Sim.Merge("app", 41, "agent-1"); err != nil {
			t.Fatal(err)
		}
		e.settle()
		e.wantState(10, "Plan in Review")
		e.move("owner", 10, "In Review")
		e.settle()
		time.Sleep(1100 * time.Millisecond) // (a second later: GitHub dates changes to the second)
		e.move("agent-1", 10, "Done")
		e.settle()
		e.wantState(10, "Done")
		if hasAudit(e.audit(10), enforce.VerdictReverted, "requirement") {
			t.Errorf("#10: In Review → Done after its pull request was merged was refused: %+v", e.audit(10))
		}
	})
}

func wantExplained(t *testing.T, e *env, number int, wants ...string) {
	t.Helper()
	var bodies []string
	for _, c := range e.comments(number) {
		bodies = append(bodies, c.Body)
	}
	all := strings.Join(bodies, "\n---\n")
	for _, w := range wants {
		if !strings.Contains(all, w) {
			t.Errorf("#%d's comments lack %q:\n%s", number, w, all)
		}
	}
}

func hasAudit(entries []enforce.AuditEntry, verdict enforce.Verdict, rule string) bool {
	for _, a := range entries {
		if a.Verdict == verdict && a.Rule == rule {
			return true
		}
	}
	return false
}

// setSingleSelect sets a single-select field of an issue's item as login does on the board:
// ghboard writes any single-select field it is given the name of.
func (e *env) setSingleSelect(login string, number int, field, option string) {
	e.t.Helper()
	ctx := context.Background()
	token, err := e.sb.Token(login)
	if err != nil {
		e.t.Fatal(err)
	}
	b := ghboard.New(ghboard.NewClient(UserClient(token, nil), e.sb.SimURL+"/api/graphql", ghboard.Unpaced()), field, ghboard.NewFieldCache())
	its, err := b.IssueItems(ctx, e.sb.Org(), "app", number)
	if err != nil || len(its) != 1 {
		e.t.Fatalf("the item of #%d: %v", number, err)
	}
	if err := b.SetState(ctx, its[0], option); err != nil {
		e.t.Fatalf("%s sets %s to %s on #%d: %v", login, field, option, number, err)
	}
}
