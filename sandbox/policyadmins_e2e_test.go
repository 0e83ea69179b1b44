package sandbox

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/app"
	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/ghsim"
	"github.com/ralph-gate/ralph-gate/store"
)

// pushAs commits files to acme's .github repository as a user and returns the commit.
func (e *env) pushAs(login, message string, files map[string]string) string {
	e.t.Helper()
	in := map[string]*string{}
	for path, text := range files {
		in[path] = &text
	}
	res, err := e.sb.Sim.Push(ghsim.Push{Repo: ".github", Files: in, By: login, Message: message})
	if err != nil {
		e.t.Fatal(err)
	}
	return res.SHA
}

// firstPolicy puts acme's first policy in force by a push of alice's, a policy admin's (with
// policy admins named the file at the head is never taken in by itself), and returns it.
func (e *env) firstPolicy(text string) store.OrgPolicy {
	e.t.Helper()
	e.sb.Sim.WaitIdle(context.Background())
	if got := e.sb.App.PolicyCommit("acme"); got != "" {
		e.t.Fatalf("with policy admins named, the file at the head (%s) was taken in by itself", got)
	}
	sha := e.pushAs("alice", "ralph-gate: the policy", map[string]string{"ralph-gate.yml": text + "# in force\n"})
	return e.policyUntil("alice's first policy", func(p store.OrgPolicy) bool { return p.SHA == sha })
}

// policyChange waits for the recorded outcome of a commit's policy push (a bound on a hang,
// not a speed: the push is taken in by a job).
func (e *env) policyChange(sha string) store.PolicyChange {
	e.t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		changes, err := e.sb.App.Store().PolicyChanges(context.Background(), store.PolicyChangeFilter{Owner: e.sb.Org()})
		if err != nil {
			e.t.Fatal(err)
		}
		for _, c := range changes {
			if c.SHA == sha {
				return c
			}
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("no policy change recorded for %s: %+v", sha, changes)
		}
	}
}

// Only a policy admin changes the rules (organizations[].policy_admins): an agent's push of a
// bypass for itself gets a failing check run saying who may change the policy, is audited
// with its pusher and what it would have changed, and the agent's illegal move right after is
// reverted. A policy admin's change followed at once by an agent's unrelated push is in force
// within seconds, and its check run says what it would decide differently over the recorded
// moves.
func TestOnlyPolicyAdminsChangeThePolicy(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, driver string) {
		e := startOrgs(t, driver, orgPolicySeed(policyEnforce), func(c *config.Config) {
			c.Organizations = []config.Organization{{Login: "acme", PolicyAdmins: []string{"alice"}}}
		})
		first := e.firstPolicy(policyEnforce)
		ctx := context.Background()
		time.Sleep(time.Until(enforce.InForceFrom(first.LoadedAt)))
		if _, err := e.sb.App.ReconcileNow(ctx); err != nil {
			t.Fatal(err)
		}
		// A recorded refused move of agent-1: the backtest below replays it.
		e.move("agent-1", 3, "In Progress")
		e.settle()
		e.wantState(3, "Backlog")

		// agent-1 makes itself a bypass: refused, audited, counted; its next illegal move is reverted.
		bypass := e.pushAs("agent-1", "chore: tidy config", map[string]string{"ralph-gate.yml": policyEnforce + "actors:\n  agents: [\"agent-*\"]\n  bypass: [agent-1]\n"})
		cr := e.policyCheck(bypass)
		if cr.Conclusion != "failure" || !strings.Contains(cr.Output.Title, "policy admin") || !strings.Contains(cr.Output.Summary, "alice") ||
			!strings.Contains(cr.Output.Text, "+ actors.bypass: agent-1") {
			t.Errorf("the agent's push's check run: %+v", cr)
		}
		ch := e.policyChange(bypass)
		if ch.Outcome != store.PolicyRefused || ch.Pusher != "agent-1" || !strings.Contains(ch.Reason, "not a policy admin") ||
			!strings.Contains(ch.Summary, "+ actors.bypass: agent-1") {
			t.Errorf("the agent's push is recorded as %+v", ch)
		}
		if p := e.policyUntil("after the agent's push", func(p store.OrgPolicy) bool { return p.RefusedSHA == bypass }); p.SHA != first.SHA {
			t.Errorf("the policy in force is %s after the agent's push, want %s", p.SHA, first.SHA)
		}
		e.move("agent-1", 5, "In Progress") // Backlog → In Progress: not a transition
		e.settle()
		e.wantState(5, "Backlog")
		e.wantVerdict(5, "agent-1", enforce.VerdictReverted)

		// alice's change, then at once agent-1's push of a README: alice's is in force.
		evaluate := e.pushAs("alice", "rollout: evaluate", map[string]string{"ralph-gate.yml": policyEvaluate})
		e.pushAs("agent-1", "docs: typo", map[string]string{"README.md": "# .github\n"})
		inForce := e.policyUntil("alice's change", func(p store.OrgPolicy) bool { return p.SHA == evaluate })
		if inForce.Pusher != "alice" {
			t.Errorf("the policy in force was pushed by %q, want alice", inForce.Pusher)
		}
		time.Sleep(time.Until(enforce.InForceFrom(inForce.LoadedAt)))
		cr = e.policyCheck(evaluate)
		if cr.Conclusion != "success" || !strings.Contains(cr.Output.Text, "~ project acme/1 mode: enforce → evaluate") ||
			!strings.Contains(cr.Output.Text, "would be decided differently") {
			t.Errorf("alice's check run: %+v", cr)
		}
		e.move("agent-1", 8, "Done") // Ready for Plan → Done: stands under evaluate
		e.settle()
		e.wantState(8, "Done")
		e.wantVerdict(8, "agent-1", enforce.VerdictWouldRevert)
	})
}

// With organizations listed, another organization that installs the App is not served: its
// policy is never read (not at start, not on a push), its file naming acme's agent takes
// nothing from acme, and acme's agent works for acme as before.
func TestStrangerOrganizationIsNotServed(t *testing.T) {
	t.Parallel()
	seed := strings.Replace(string(twoOrgsSeed(1)), `mcp:\n  agents:\n    - {name: agent-2}\n`, `mcp:\n  agents:\n    - {name: agent-1}\n`, 1)
	if !strings.Contains(seed, `bypass: [agent-2]\nmcp:\n  agents:\n    - {name: agent-1}`) {
		t.Fatal("the stranger's file does not name acme's agent")
	}
	each(t, func(t *testing.T, driver string) {
		e := startOrgs(t, driver, []byte(seed), func(c *config.Config) {
			c.Organizations = []config.Organization{{Login: "acme"}}
			c.MCP.Agents = []config.MCPAgent{{Name: "agent-1", Token: agent1Token}}
		})
		e.policyUntil("acme's policy read at start", func(p store.OrgPolicy) bool { return p.SHA != "" })
		text := "projects:\n  - number: 1\nmcp:\n  agents:\n    - {name: agent-1}\n"
		if _, err := e.sb.Sim.Push(ghsim.Push{Org: "beta", Repo: ".github", Files: map[string]*string{"ralph-gate.yml": &text}, By: "alice"}); err != nil {
			t.Fatal(err)
		}
		e.sb.Sim.WaitIdle(context.Background())
		e.settle()
		if _, found, err := e.sb.App.Store().GetOrgPolicy(context.Background(), "beta"); err != nil || found {
			t.Errorf("the stranger's policy is kept: %v %v", found, err)
		}
		for _, r := range e.sb.Sim.Requests().Entries {
			if strings.Contains(r.Path, "/repos/beta/") {
				t.Errorf("the stranger's repository was read: %s %s", r.Method, r.Path)
			}
		}
		for _, cr := range e.sb.Sim.State().CheckRuns {
			t.Errorf("a check run was created: %+v", cr)
		}
		acme := e.agentClient(agent1Token)
		if got, refused := call[map[string]any](t, acme, "get_workflow_state", map[string]any{"owner": "acme", "repo": "app", "number": 3}); refused != "" {
			t.Errorf("acme's agent-1 is refused on acme's board: %s (%v)", refused, got)
		}
	})
}

// An organization with no policy file yet: nothing is enforced. An agent's first file is
// refused, and stays out of force across a restart (the file at the head is never taken in by
// itself once anything of the organization was recorded, nor ever with policy admins named);
// a policy admin's push puts the file in force, and the project it brings into force is
// reconciled at once (board_health knows its items without waiting for the periodic pass).
func TestFirstPolicyPushReconcilesItsProjects(t *testing.T) {
	t.Parallel()
	seed := strings.Replace(string(DemoSeed()), "repos: [app]", "repos:\n  - app\n  - {name: .github, files: {README.md: \"# .github\\n\"}}", 1)
	e := startOrgs(t, "sqlite", []byte(seed), func(c *config.Config) {
		c.Organizations = []config.Organization{{Login: "acme", PolicyAdmins: []string{"alice"}}}
	})
	ctx := context.Background()
	e.sb.Sim.WaitIdle(ctx)
	if _, found, err := e.sb.App.Store().GetOrgPolicy(ctx, "acme"); err != nil || found {
		t.Fatalf("with no file there is a policy record: %v %v", found, err)
	}
	bypass := e.pushAs("agent-1", "chore: add config", map[string]string{"ralph-gate.yml": policyEnforce + "actors:\n  agents: [\"agent-*\"]\n  bypass: [agent-1]\n"})
	if ch := e.policyChange(bypass); ch.Outcome != store.PolicyRefused || ch.Pusher != "agent-1" {
		t.Errorf("the agent's first file is recorded as %+v", ch)
	}
	if err := e.sb.RestartApp(ctx); err != nil {
		t.Fatal(err)
	}
	e.sb.Sim.WaitIdle(ctx)
	if got := e.sb.App.PolicyCommit("acme"); got != "" {
		t.Fatalf("after a restart the agent's file %s is in force", got)
	}
	sha := e.pushAs("alice", "ralph-gate: enforce the board", map[string]string{"ralph-gate.yml": policyEnforce})
	if ch := e.policyChange(sha); ch.Outcome != store.PolicyInForce || !strings.Contains(ch.Summary, "+ project acme/1 enforced (enforce)") {
		t.Errorf("the policy admin's push is recorded as %+v", ch)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		rep, err := app.HealthReader(e.sb.Config, e.sb.App.Store()).Report(ctx, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Projects) == 1 && rep.Projects[0].Items > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the project brought into force was not reconciled: %+v", rep.Projects)
		}
	}
}

// Two changes pushed one right after the other are put in force in the order of their
// commits, whichever job runs first: a change and its quick revert leave the revert in force
// (the first one's job, taken in second, finds it older).
func TestPolicyChangesInTheOrderOfTheirCommits(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, driver string) {
		e := startOrgs(t, driver, orgPolicySeed(policyEnforce), func(c *config.Config) {
			c.Organizations = []config.Organization{{Login: "acme", PolicyAdmins: []string{"alice"}}}
		})
		e.firstPolicy(policyEnforce)
		for range 3 {
			a := e.pushAs("alice", "rollout: evaluate", map[string]string{"ralph-gate.yml": policyEvaluate})
			b := e.pushAs("alice", "revert: enforce", map[string]string{"ralph-gate.yml": policyEnforce})
			first, second := e.policyChange(a), e.policyChange(b)
			p := e.policyUntil("both taken in", func(store.OrgPolicy) bool { return true })
			// The store's record is written before the job puts the policy in force in
			// memory: the replica's is read once both jobs are finished.
			if err := e.sb.Settle(context.Background()); err != nil {
				t.Fatal(err)
			}
			if p.SHA != b || e.sb.App.PolicyCommit("acme") != b {
				t.Fatalf("after %s (%s) and %s (%s): %s in force in the store, %s in memory; want the newer %s",
					a, first.Outcome, b, second.Outcome, p.SHA, e.sb.App.PolicyCommit("acme"), b)
			}
			rep, err := app.HealthReader(e.sb.Config, e.sb.App.Store()).Report(context.Background(), time.Now())
			if err != nil || len(rep.Projects) != 1 || rep.Projects[0].Mode != "enforce" {
				t.Fatalf("the health report: %v %+v, want project 1 in enforce", err, rep.Projects)
			}
		}
	})
}

// bigPolicy is a policy file of about size bytes that names thousands of states that do not
// exist (fewer than the file may name: docs/CONFIGURATION.md), the worst shape for validation
// before it was made linear.
func bigPolicy(size int) string {
	var b strings.Builder
	b.WriteString("projects:\n  - number: 1\nworkflow:\n  states:\n    - name: Backlog\n      next:\n")
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "        - A state that the workflow does not have, number %06d\n", i)
	}
	return b.String()
}

// A 600 KB policy file is checked off the webhook path, in its own queue, in bounded time: its
// check run comes, and another organization's illegal move made while it is checked is
// reverted as usual. The times are printed (a measurement, not an assertion:
// docs/BENCHMARKS.md).
func TestLargePolicyFileDoesNotHoldAnotherOrganization(t *testing.T) {
	t.Parallel()
	e := startOrgs(t, "sqlite", twoOrgsSeed(2), func(c *config.Config) {
		c.MCP.Agents = []config.MCPAgent{{Name: "agent-1", Token: agent1Token}, {Name: "agent-2", Token: agent2Token}}
	})
	e.policyUntil("acme's policy read at start", func(p store.OrgPolicy) bool { return p.SHA != "" })
	ctx := context.Background()
	if _, err := e.sb.App.ReconcileNow(ctx); err != nil {
		t.Fatal(err)
	}
	reverted := func(number int) time.Duration {
		t.Helper()
		start := time.Now()
		e.move("agent-1", number, "In Progress") // Backlog → In Progress: not a transition
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
			if st, err := e.sb.State("app", number); err == nil && st == "Backlog" {
				return time.Since(start)
			}
			if time.Now().After(deadline) {
				t.Fatalf("acme/app#%d was not reverted", number)
			}
		}
	}
	idle := reverted(3)
	big := bigPolicy(600 << 10)
	res, err := e.sb.Sim.Push(ghsim.Push{Org: "beta", Repo: ".github", Files: map[string]*string{"ralph-gate.yml": &big}, By: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	pushed := time.Now()
	checkRun := make(chan ghsim.CheckRunState, 1)
	go func() {
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			beta, _ := e.sb.Sim.State().OrgState("beta")
			for _, c := range beta.CheckRuns {
				if c.HeadSHA == res.SHA {
					checkRun <- c
					return
				}
			}
		}
		close(checkRun)
	}()
	during := reverted(5)
	cr, ok := <-checkRun
	checked := time.Since(pushed)
	if !ok {
		t.Fatal("the large file got no check run")
	}
	if cr.Conclusion != "failure" {
		t.Errorf("the large file's check run: %s %q", cr.Conclusion, cr.Output.Title)
	}
	t.Logf("a %d KB policy file checked (%s) within %v; acme's revert took %v idle, %v while it was checked", len(big)>>10, cr.Output.Title, checked, idle, during)
}
