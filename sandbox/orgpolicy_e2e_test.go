package sandbox

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/app"
	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/ghsim"
	"github.com/ralph-gate/ralph-gate/health"
	"github.com/ralph-gate/ralph-gate/store"
)

// The organization's policy files of the end-to-end tests (docs/CONFIGURATION.md "Policy in
// the organization's repository").
const (
	policyEnforce  = "projects:\n  - number: 1\n"
	policyEvaluate = "projects:\n  - number: 1\n    mode: evaluate\n"
	policyInvalid  = "projects:\n  - number: 1\n    mode: evaluat\n"
)

// orgPolicySeed is the demo seed with the organization's .github repository holding policy.
func orgPolicySeed(policy string) []byte {
	return []byte(strings.Replace(string(DemoSeed()), "repos: [app]",
		fmt.Sprintf("repos:\n  - app\n  - {name: .github, files: {ralph-gate.yml: %q}}", policy), 1))
}

// startOrgs starts a sandbox whose config.yml lists no projects: the organization's policy is
// read from its repository.
func startOrgs(t *testing.T, driver string, seed []byte, configure func(*config.Config)) *env {
	t.Helper()
	return start(t, driver, seed, func(c *config.Config) {
		c.Projects = nil
		if configure != nil {
			configure(c)
		}
	})
}

// policyUntil waits until the store's record of the organization's policy satisfies ok (a
// bound on a hang, not a speed: the read is asynchronous).
func (e *env) policyUntil(what string, ok func(store.OrgPolicy) bool) store.OrgPolicy {
	e.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		p, _, err := e.sb.App.Store().GetOrgPolicy(context.Background(), e.sb.Org())
		if err != nil {
			e.t.Fatal(err)
		}
		if ok(p) {
			return p
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: the policy record is %+v", what, p)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// push commits the policy file and returns the commit.
func (e *env) pushPolicy(text string) string {
	e.t.Helper()
	res, err := e.sb.Sim.Push(ghsim.Push{Repo: ".github", Files: map[string]*string{"ralph-gate.yml": &text}, By: "alice"})
	if err != nil {
		e.t.Fatal(err)
	}
	return res.SHA
}

// policyCheck is the check run of a commit of the policy repository, once there is one (it is
// created after the outcome is stored: a bound on a hang, not a speed).
func (e *env) policyCheck(sha string) ghsim.CheckRunState {
	e.t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		var found []ghsim.CheckRunState
		for _, cr := range e.sb.Sim.State().CheckRuns {
			if cr.HeadSHA == sha && cr.Name == app.PolicyCheckName {
				found = append(found, cr)
			}
		}
		if len(found) > 1 {
			e.t.Fatalf("%d check runs %q on %s, want one: %+v", len(found), app.PolicyCheckName, sha, found)
		}
		if len(found) == 1 {
			return found[0]
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("no check run %q on %s: %+v", app.PolicyCheckName, sha, e.sb.Sim.State().CheckRuns)
		}
	}
}

// wantVerdict asserts the verdict on an actor's newest move of an issue.
func (e *env) wantVerdict(number int, actor string, want enforce.Verdict) {
	e.t.Helper()
	es := e.audit(number)
	for i := len(es) - 1; i >= 0; i-- {
		if es[i].Actor == actor {
			if es[i].Verdict != want {
				e.t.Fatalf("audit of #%d: %+v, want %s's last move %s", number, es, actor, want)
			}
			return
		}
	}
	e.t.Fatalf("audit of #%d: %+v, no move of %s", number, es, actor)
}

// With no projects in config.yml, the organization's .github/ralph-gate.yml is its policy:
// its projects are enforced; a pushed change is in force at once, with a passing check run on
// its commit; an invalid push gets a failing check run naming the bad key and its line, and
// the previous policy stays in force, across a restart.
func TestOrgPolicyEndToEnd(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, driver string) {
		e := startOrgs(t, driver, orgPolicySeed(policyEnforce), nil)
		first := e.policyUntil("read at start", func(p store.OrgPolicy) bool { return p.SHA != "" })
		ctx := context.Background()
		if _, err := e.sb.App.ReconcileNow(ctx); err != nil { // first sight: adopted
			t.Fatal(err)
		}
		e.move("agent-1", 3, "In Progress") // Backlog → In Progress: not a transition
		e.settle()
		e.wantState(3, "Backlog")
		e.wantVerdict(3, "agent-1", enforce.VerdictReverted)

		// A valid push is in force for the next change, and its check run passes.
		pushSeq := e.sb.Sim.Requests().Total
		evaluate := e.pushPolicy(policyEvaluate)
		inForce := e.policyUntil("the valid push", func(p store.OrgPolicy) bool { return p.SHA == evaluate })
		// In force for the changes made from the next second on (enforce.InForceFrom).
		time.Sleep(time.Until(enforce.InForceFrom(inForce.LoadedAt)))
		if cr := e.policyCheck(evaluate); cr.Conclusion != "success" || cr.Status != "completed" {
			t.Errorf("the valid push's check run: %+v", cr)
		}
		// A push costs the installation's token, the file, the comparison of its commit with the
		// policy in force's, and the check run.
		var pushRequests []string
		for _, r := range e.sb.Sim.Requests().Entries {
			if r.Seq > pushSeq {
				pushRequests = append(pushRequests, r.Method+" "+r.Path)
			}
		}
		if len(pushRequests) != 4 {
			t.Errorf("the push cost %d GitHub requests, want 4 (a token, the file, the comparison, the check run): %q", len(pushRequests), pushRequests)
		}
		e.move("agent-1", 3, "In Progress")
		e.settle()
		e.wantState(3, "In Progress")
		e.wantVerdict(3, "agent-1", enforce.VerdictWouldRevert)

		// An invalid push: a failing check run naming the key and its line; evaluate stays.
		invalid := e.pushPolicy(policyInvalid)
		p := e.policyUntil("the invalid push", func(p store.OrgPolicy) bool { return p.RefusedSHA == invalid })
		if p.SHA != evaluate || !strings.Contains(p.RefusedWhy, "projects[0].mode") {
			t.Errorf("after the invalid push: %+v", p)
		}
		cr := e.policyCheck(invalid)
		if cr.Conclusion != "failure" || !strings.Contains(cr.Output.Text, "projects[0].mode") || len(cr.Output.Annotations) == 0 ||
			cr.Output.Annotations[0].StartLine != 3 || cr.Output.Annotations[0].Path != "ralph-gate.yml" {
			t.Errorf("the invalid push's check run: %+v", cr)
		}
		e.move("agent-1", 5, "In Progress")
		e.settle()
		e.wantState(5, "In Progress")
		e.wantVerdict(5, "agent-1", enforce.VerdictWouldRevert)
		// The health report (board_health, the board page) says which commit is in force.
		rep, err := app.HealthReader(e.sb.Config, e.sb.App.Store()).Report(ctx, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Orgs) != 1 || rep.Orgs[0].Commit != evaluate || rep.Orgs[0].Refused != invalid ||
			len(rep.Projects) != 1 || rep.Projects[0].Owner != "acme" || rep.Projects[0].Mode != "evaluate" {
			t.Errorf("the health report's organizations %+v, projects %+v", rep.Orgs, rep.Projects)
		}
		if first.SHA == evaluate {
			t.Fatal("the first policy's commit is the pushed one")
		}

		// Across a restart, with the invalid file at the head: the kept policy is in force at
		// once, and the file at the head is not taken in by itself (only a push changes the
		// policy, docs/SECURITY.md "Who may change an organization's policy").
		seq := e.sb.Sim.Requests().Total
		if err := e.sb.RestartApp(ctx); err != nil {
			t.Fatal(err)
		}
		if got := e.sb.App.PolicyCommit("acme"); got != evaluate {
			t.Errorf("after the restart %q is in force, want %s (evaluate)", got, evaluate)
		}
		for _, r := range e.sb.Sim.Requests().Entries {
			if r.Seq > seq && strings.Contains(r.Path, "/contents/") {
				t.Errorf("the policy file was read again after the restart: %s", r.Path)
			}
		}
		if p2 := e.policyUntil("after the restart", func(store.OrgPolicy) bool { return true }); p2.SHA != evaluate || p2.RefusedSHA != invalid {
			t.Errorf("after the restart: %+v, want %s (evaluate) in force, %s refused", p2, evaluate, invalid)
		}
		e.move("agent-1", 8, "Done") // Ready for Plan → Done: refused, stands under evaluate
		e.settle()
		e.wantState(8, "Done")
		e.wantVerdict(8, "agent-1", enforce.VerdictWouldRevert)
	})
}

// twoOrgsSeed is the demo seed (acme, whose policy file enforces its project and gives the
// façade agent-1) with a second organization, beta, with its own installation, board and
// policy: agent-2 bypasses there, and is its façade agent.
func twoOrgsSeed(n int) []byte {
	var b strings.Builder
	b.WriteString(string(orgPolicySeed(policyEnforce + "mcp:\n  agents:\n    - {name: agent-1}\n")))
	b.WriteString(`orgs:
  - login: beta
    installation_id: 3003
    repos:
      - web
      - {name: .github, files: {ralph-gate.yml: "projects:\n  - number: 1\nactors:\n  agents: [\"agent-*\"]\n  bypass: [agent-2]\nmcp:\n  agents:\n    - {name: agent-2}\n"}}
    projects:
      - number: 1
        title: Beta
        fields:
          Workflow State: [Backlog, Research Needed, Research in Progress, Ready for Plan, Plan in Progress,
                           Plan in Review, In Progress, In Review, Done, Canceled, Human Needed]
    issues:
`)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "      - {repo: web, number: %d, title: Beta %d, project: 1, fields: {Workflow State: Backlog}}\n", i, i)
	}
	return []byte(b.String())
}

// moveIn sets an issue's Workflow State in an organization, as login.
func (e *env) moveIn(org, login, repo string, number int, state string) {
	e.t.Helper()
	b, err := e.sb.UserBoard(login)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx := context.Background()
	items, err := b.IssueItems(ctx, org, repo, number)
	if err != nil || len(items) == 0 {
		e.t.Fatalf("%s/%s#%d: %v (%d items)", org, repo, number, err, len(items))
	}
	if err := b.SetState(ctx, items[0], state); err != nil {
		e.t.Fatalf("%s moves %s/%s#%d to %s: %v", login, org, repo, number, state, err)
	}
}

// stateIn is an issue's Workflow State in an organization.
func (e *env) stateIn(org, repo string, number int) string {
	e.t.Helper()
	st := e.sb.Sim.State()
	issues := st.Issues
	if os, ok := st.OrgState(org); ok {
		issues = os.Issues
	}
	for _, is := range issues {
		if is.Number == number && (is.Repo == repo || strings.HasSuffix(is.Repo, "/"+repo)) {
			return is.Fields["Workflow State"]
		}
	}
	e.t.Fatalf("no issue %s/%s#%d", org, repo, number)
	return ""
}

// One deployment, two organizations, each held to its own policy read from its own
// repository, each written with its own installation (ghsim refuses an installation's token
// on another organization): agent-2 bypasses in beta and is reverted in acme, and a storm of
// agent-1's refused moves in beta is reverted there while acme's one refused move is
// reverted too.
func TestTwoOrganizationsEndToEnd(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, driver string) {
		const storm = 12
		e := startOrgs(t, driver, twoOrgsSeed(storm+2), func(c *config.Config) {
			c.MCP.Agents = []config.MCPAgent{{Name: "agent-1", Token: agent1Token}, {Name: "agent-2", Token: agent2Token}}
		})
		for _, org := range []string{"acme", "beta"} {
			deadline := time.Now().Add(time.Minute)
			for {
				p, _, err := e.sb.App.Store().GetOrgPolicy(context.Background(), org)
				if err != nil {
					t.Fatal(err)
				}
				if p.SHA != "" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s's policy was not read: %+v", org, p)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		if _, err := e.sb.App.ReconcileNow(context.Background()); err != nil { // first sight: adopted
			t.Fatal(err)
		}
		for i := 1; i <= storm; i++ {
			e.moveIn("beta", "agent-1", "web", i, "In Progress")
		}
		e.move("agent-1", 3, "In Progress")
		e.moveIn("beta", "agent-2", "web", storm+1, "In Progress")
		e.move("agent-2", 5, "In Progress")
		e.settle()
		for i := 1; i <= storm; i++ {
			if got := e.stateIn("beta", "web", i); got != "Backlog" {
				t.Errorf("beta/web#%d is in %q, want Backlog (reverted)", i, got)
			}
		}
		e.wantState(3, "Backlog")
		e.wantState(5, "Backlog") // acme: agent-2 is an agent
		if got := e.stateIn("beta", "web", storm+1); got != "In Progress" {
			t.Errorf("beta/web#%d is in %q, want In Progress (agent-2 bypasses in beta)", storm+1, got)
		}
		// The façade: each agent works for the organization whose policy file gives it.
		beta := e.agentClient(agent2Token)
		if _, refused := call[map[string]any](t, beta, "handoff_ticket", map[string]any{"owner": "beta", "repo": "web", "number": storm + 2,
			"command": "triage", "to_state": "Research Needed", "reason": "ready for research"}); refused != "" {
			t.Fatalf("agent-2's handoff in beta was refused: %s", refused)
		}
		if got := e.stateIn("beta", "web", storm+2); got != "Research Needed" {
			t.Errorf("beta/web#%d is in %q after agent-2's handoff, want Research Needed", storm+2, got)
		}
		if _, refused := call[map[string]any](t, beta, "get_workflow_state", map[string]any{"owner": "acme", "repo": "app", "number": 3}); refused == "" {
			t.Error("agent-2, beta's agent, read acme's issue through the façade")
		}
		acme := e.agentClient(agent1Token)
		if _, refused := call[map[string]any](t, acme, "get_workflow_state", map[string]any{"owner": "beta", "repo": "web", "number": 1}); refused == "" {
			t.Error("agent-1, acme's agent, read beta's issue through the façade")
		}
		// board_health shows an agent its organization only.
		rep, refused := call[health.Report](t, beta, "board_health", map[string]any{})
		if refused != "" || len(rep.Projects) != 1 || rep.Projects[0].Owner != "beta" || len(rep.Orgs) != 1 || rep.Orgs[0].Owner != "beta" {
			t.Errorf("agent-2's board_health: %q, projects %+v, orgs %+v; want beta's only", refused, rep.Projects, rep.Orgs)
		}
		if len(rep.Facade.Hour.Agents) == 0 {
			t.Error("agent-2's board_health counts none of its calls")
		}
		for _, u := range rep.Facade.Hour.Agents {
			if u.Name != "agent-2" {
				t.Errorf("agent-2's board_health counts %s's calls", u.Name)
			}
		}
		e.settle()
		// Each organization's reads and writes went through its own installation.
		for _, r := range e.sb.Sim.Requests().Entries {
			if r.Status == 404 || r.Status == 403 {
				t.Errorf("a request was refused (another organization's installation?): %+v", r)
			}
		}
	})
}

// Replicas on one PostgreSQL store hold the same policy: GitHub delivers a push to one replica,
// which reads the file; another puts it in force when the store notifies it (woken, it asks
// GitHub nothing), from the same time.
func TestOrgPolicyReplicas(t *testing.T) {
	t.Parallel()
	if os.Getenv("RALPH_GATE_TEST_POSTGRES_DSN") == "" {
		t.Skip("replicas share a PostgreSQL store: RALPH_GATE_TEST_POSTGRES_DSN is not set")
	}
	e := startOrgs(t, "postgres", orgPolicySeed(policyEnforce), nil)
	first := e.policyUntil("read at start", func(p store.OrgPolicy) bool { return p.SHA != "" })
	ctx, cancel := context.WithCancel(context.Background())
	b, err := app.New(ctx, e.sb.Config, app.Options{NoPeriodic: true, GitHubWriteGap: WriteGap})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- b.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("the second replica: %v", err)
		}
	})
	commitUntil := func(what, want string) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); b.PolicyCommit("acme") != want; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the second replica has %q in force, want %q", what, b.PolicyCommit("acme"), want)
			}
		}
	}
	commitUntil("at its start", first.SHA)
	contentReads := func(after int) int {
		n := 0
		for _, r := range e.sb.Sim.Requests().Entries {
			if r.Seq > after && strings.Contains(r.Path, "/contents/") {
				n++
			}
		}
		return n
	}
	if reads := contentReads(0); reads != 1 {
		t.Errorf("the policy file was read %d times, want once: the second replica starts with the kept policy", reads)
	}
	seq := e.sb.Sim.Requests().Total
	evaluate := e.pushPolicy(policyEvaluate)
	e.policyUntil("the push", func(p store.OrgPolicy) bool { return p.SHA == evaluate })
	commitUntil("after the push", evaluate)
	if reads := contentReads(seq); reads != 1 {
		t.Errorf("the policy file was read %d times after the push, want once (by the replica the push reached)", reads)
	}
}

// A push delivered late (its first delivery failed, and the redelivery sweeper delivers it
// after a newer push was taken in) is checked and reported, never put in force over the newer
// commit's policy.
func TestOrgPolicyLatePushNeverReplacesANewer(t *testing.T) {
	t.Parallel()
	e := startOrgs(t, "sqlite", orgPolicySeed(policyEnforce), nil)
	e.policyUntil("read at start", func(p store.OrgPolicy) bool { return p.SHA != "" })
	if err := e.sb.Sim.SetFaults(ghsim.Faults{Webhook: ghsim.WebhookFaults{DropRate: 1}}); err != nil {
		t.Fatal(err)
	}
	late := e.pushPolicy(policyEvaluate)
	e.sb.Sim.WaitIdle(context.Background())
	if err := e.sb.Sim.SetFaults(ghsim.Faults{}); err != nil {
		t.Fatal(err)
	}
	newer := e.pushPolicy("projects:\n  - {number: 1, mode: warn}\n")
	e.policyUntil("the newer push", func(p store.OrgPolicy) bool { return p.SHA == newer })
	if _, err := e.sb.App.SweepNow(context.Background()); err != nil { // redelivers the failed one
		t.Fatal(err)
	}
	cr := e.policyCheck(late)
	if cr.Conclusion != "success" || !strings.Contains(cr.Output.Summary, "not put in force") {
		t.Errorf("the late push's check run: %+v", cr)
	}
	if p := e.policyUntil("after the late push", func(store.OrgPolicy) bool { return true }); p.SHA != newer {
		t.Errorf("the policy in force is %s after the late push, want the newer %s", p.SHA, newer)
	}
	if got := e.sb.App.PolicyCommit("acme"); got != newer {
		t.Errorf("the app holds %s in force, want the newer %s", got, newer)
	}
}
