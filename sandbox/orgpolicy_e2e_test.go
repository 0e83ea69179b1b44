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
func startOrgs(t *testing.T, driver string, seed []byte) *env {
	t.Helper()
	opts := Options{Seed: seed, Configure: func(c *config.Config) {
		c.Projects = nil
		c.Actors.Bypass = []string{"owner"}
		c.Logging.Level = "warn"
	}}
	if driver == "postgres" {
		opts.StoreDriver, opts.StoreDSN = "postgres", postgresDSN(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sb, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("sandbox: %v", err)
	}
	t.Cleanup(func() {
		if err := sb.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return &env{t: t, sb: sb}
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

// policyCheck is the check run of a commit of the policy repository.
func (e *env) policyCheck(sha string) ghsim.CheckRunState {
	e.t.Helper()
	var found []ghsim.CheckRunState
	for _, cr := range e.sb.Sim.State().CheckRuns {
		if cr.HeadSHA == sha && cr.Name == app.PolicyCheckName {
			found = append(found, cr)
		}
	}
	if len(found) != 1 {
		e.t.Fatalf("%d check runs %q on %s, want one: %+v", len(found), app.PolicyCheckName, sha, e.sb.Sim.State().CheckRuns)
	}
	return found[0]
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
		e := startOrgs(t, driver, orgPolicySeed(policyEnforce))
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
		evaluate := e.pushPolicy(policyEvaluate)
		e.policyUntil("the valid push", func(p store.OrgPolicy) bool { return p.SHA == evaluate })
		if cr := e.policyCheck(evaluate); cr.Conclusion != "success" || cr.Status != "completed" {
			t.Errorf("the valid push's check run: %+v", cr)
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
		if first.SHA == evaluate {
			t.Fatal("the first policy's commit is the pushed one")
		}

		// Across a restart, with the invalid file at the head: the kept policy is in force,
		// and the file read again is refused again.
		restarted := time.Now()
		if err := e.sb.RestartApp(ctx); err != nil {
			t.Fatal(err)
		}
		p = e.policyUntil("read after the restart", func(p store.OrgPolicy) bool { return p.RefusedAt.After(restarted) })
		if p.SHA != evaluate || p.RefusedSHA != invalid {
			t.Errorf("after the restart: %+v, want %s (evaluate) in force, %s refused", p, evaluate, invalid)
		}
		e.move("agent-1", 8, "Done") // Ready for Plan → Done: refused, stands under evaluate
		e.settle()
		e.wantState(8, "Done")
		e.wantVerdict(8, "agent-1", enforce.VerdictWouldRevert)
	})
}
