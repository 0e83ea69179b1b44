package sandbox

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/ghsim"
	"github.com/ralph-gate/ralph-gate/store"
)

// drivers lists the stores the suite runs on: SQLite always, PostgreSQL when CI provides one.
func drivers(t *testing.T) []string {
	out := []string{"sqlite"}
	if os.Getenv("RALPH_GATE_TEST_POSTGRES_DSN") != "" {
		out = append(out, "postgres")
	}
	return out
}

// postgresDSN creates a fresh schema for one test and returns a DSN that uses it.
func postgresDSN(t *testing.T) string {
	t.Helper()
	base := os.Getenv("RALPH_GATE_TEST_POSTGRES_DSN")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("postgres: %v", err)
	}
	defer conn.Close(ctx)
	schema := fmt.Sprintf("e2e_%d_%d", time.Now().UnixNano(), rand.IntN(1<<20))
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), base)
		if err == nil {
			c.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
			c.Close(context.Background())
		}
	})
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return base + sep + "search_path=" + schema
}

type env struct {
	t  *testing.T
	sb *Sandbox
}

func start(t *testing.T, driver string, seed []byte, configure func(*config.Config)) *env {
	t.Helper()
	opts := Options{Seed: seed, Configure: func(c *config.Config) {
		c.Actors.Bypass = []string{"owner"}
		c.Logging.Level = "warn"
		if configure != nil {
			configure(c)
		}
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

func (e *env) move(login string, number int, state string) {
	e.t.Helper()
	if err := e.sb.Move(context.Background(), login, "app", number, state); err != nil {
		e.t.Fatalf("%s moves #%d to %s: %v", login, number, state, err)
	}
}

func (e *env) settle() {
	e.t.Helper()
	if err := e.sb.Settle(context.Background()); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) wantState(number int, want string) {
	e.t.Helper()
	got, err := e.sb.State("app", number)
	if err != nil {
		e.t.Fatal(err)
	}
	if got != want {
		e.t.Fatalf("#%d is in %q, want %q", number, got, want)
	}
}

func (e *env) comments(number int) []ghsim.CommentState {
	e.t.Helper()
	is, err := e.sb.Issue("app", number)
	if err != nil {
		e.t.Fatal(err)
	}
	return is.Comments
}

// appWrites counts field writes the app made.
func (e *env) appWrites() int {
	n := 0
	for _, r := range e.sb.Sim.Requests().Entries {
		if r.TokenKind == "installation" && r.Status == 200 {
			for _, op := range r.Operations {
				if op == "graphql:updateProjectV2ItemFieldValue" || op == "graphql:clearProjectV2ItemFieldValue" {
					n++
				}
			}
		}
	}
	return n
}

func (e *env) audit(number int) []enforce.AuditEntry {
	e.t.Helper()
	entries, err := e.sb.App.Store().QueryAudit(context.Background(), store.AuditFilter{IssueNumber: number})
	if err != nil {
		e.t.Fatal(err)
	}
	return entries
}

func each(t *testing.T, f func(t *testing.T, driver string)) {
	for _, d := range drivers(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			f(t, d)
		})
	}
}

func TestEnforcementEndToEnd(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, driver string) {
		e := start(t, driver, nil, nil)

		// A human's legal move stays.
		e.move("alice", 5, "Ready for Plan")
		e.settle()
		e.wantState(5, "Ready for Plan")

		// An agent's illegal move is reverted with exactly one explanatory comment.
		e.move("agent-1", 3, "In Progress")
		e.settle()
		e.wantState(3, "Backlog")
		cs := e.comments(3)
		if len(cs) != 1 {
			t.Fatalf("want one comment on #3, got %d", len(cs))
		}
		for _, want := range []string{enforce.ViolationMarker, "ralph-transition", "`agent-1`", "**In Progress**", "**Backlog**", "Research Needed"} {
			if !strings.Contains(cs[0].Body, want) {
				t.Errorf("comment lacks %q:\n%s", want, cs[0].Body)
			}
		}
		if cs[0].Author != "ralph-gate[bot]" {
			t.Errorf("comment author = %q", cs[0].Author)
		}

		// A second violation of the same actor within the coalescing window updates that comment.
		e.move("agent-1", 3, "In Review")
		e.settle()
		e.wantState(3, "Backlog")
		cs = e.comments(3)
		if len(cs) != 1 || !strings.Contains(cs[0].Body, "2 Workflow State changes") {
			t.Fatalf("the second violation did not update the comment: %d comments\n%v", len(cs), cs)
		}

		// Another actor's violation within the window gets a comment of its own: GitHub
		// notifies on a new comment, never on an edit.
		e.move("agent-2", 3, "In Review")
		e.settle()
		e.wantState(3, "Backlog")
		cs = e.comments(3)
		if len(cs) != 2 || !strings.Contains(cs[1].Body, "`agent-2`") || strings.Contains(cs[1].Body, "`agent-1`") ||
			strings.Contains(cs[0].Body, "`agent-2`") {
			t.Fatalf("another actor's violation did not get its own comment: %d comments\n%v", len(cs), cs)
		}

		// A bypass actor's illegal move stays and is audited.
		e.move("owner", 6, "Backlog")
		e.settle()
		e.wantState(6, "Backlog")
		found := false
		for _, a := range e.audit(6) {
			if a.ActorKind == "bypass" && a.ToState == "Backlog" && a.Verdict == enforce.VerdictAllowed {
				found = true
			}
		}
		if !found {
			t.Errorf("bypass move not audited: %+v", e.audit(6))
		}

		// Our own writes never loop: exactly the three reverts, nothing more.
		if n := e.appWrites(); n != 3 {
			t.Errorf("app made %d field writes, want 3 (three reverts)", n)
		}
	})
}

func TestReverseOrderDeliveryCausesNoRevert(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, driver string) {
		e := start(t, driver, nil, nil)
		if err := e.sb.Sim.SetFaults(ghsim.Faults{Webhook: ghsim.WebhookFaults{Reorder: true, DelayMS: 200}}); err != nil {
			t.Fatal(err)
		}
		e.move("agent-1", 2, "Research in Progress")
		e.move("agent-1", 2, "Ready for Plan")
		e.settle()
		e.wantState(2, "Ready for Plan")
		if n := e.appWrites(); n != 0 {
			t.Fatalf("reverse-order legal steps caused %d app writes", n)
		}
		if cs := e.comments(2); len(cs) != 0 {
			t.Fatalf("comments: %v", cs)
		}
	})
}

func TestDuplicateDeliveriesActOnce(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, driver string) {
		e := start(t, driver, nil, nil)
		if err := e.sb.Sim.SetFaults(ghsim.Faults{Webhook: ghsim.WebhookFaults{DuplicateRate: 1}}); err != nil {
			t.Fatal(err)
		}
		e.move("agent-1", 5, "In Review")
		e.settle()
		e.wantState(5, "Backlog")
		if n := e.appWrites(); n != 1 {
			t.Fatalf("app made %d writes for one duplicated violation", n)
		}
		if cs := e.comments(5); len(cs) != 1 || strings.Contains(cs[0].Body, "2 Workflow State changes") {
			t.Fatalf("comments: %v", cs)
		}
	})
}

func TestLegalNewerValueNeverOverwritten(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, driver string) {
		e := start(t, driver, nil, nil)
		if err := e.sb.Sim.SetFaults(ghsim.Faults{Webhook: ghsim.WebhookFaults{DelayMS: 300}}); err != nil {
			t.Fatal(err)
		}
		// An agent's illegal move, then a person's legal fix, both before any webhook arrives.
		e.move("agent-1", 8, "Done")
		e.move("alice", 8, "Plan in Progress")
		e.settle()
		e.wantState(8, "Plan in Progress")
		if n := e.appWrites(); n != 0 {
			t.Fatalf("a late revert overwrote a newer legal value (%d app writes)", n)
		}
	})
}

func TestScopeRules(t *testing.T) {
	t.Parallel()
	seed := strings.Replace(string(DemoSeed()), "Plan in Review, In Progress, In Review, Done, Canceled, Human Needed]",
		"Plan in Review, In Progress, In Review, Done, Canceled, Human Needed, Someday]", 1)
	seed = strings.Replace(seed, "issues:\n", `  - number: 2
    title: Not enforced
    fields:
      Workflow State: [Backlog, In Progress]
issues:
  - {repo: app, number: 20, title: Elsewhere, project: 2, fields: {Workflow State: Backlog}}
`, 1)
	each(t, func(t *testing.T, driver string) {
		e := start(t, driver, []byte(seed), func(c *config.Config) { c.Projects = c.Projects[:1] })

		// An option the machine does not know is reverted.
		e.move("alice", 5, "Someday")
		// A move from "unset" into a non-initial state is reverted to unset.
		e.move("agent-1", 7, "In Progress")
		// A move from "unset" into an initial state stays.
		// (issue 7 is back to unset after the revert)
		// Items of other projects and other fields are not ours.
		e.move("agent-1", 20, "In Progress")
		e.settle()
		e.wantState(5, "Backlog")
		e.wantState(7, "")
		e.wantState(20, "In Progress")
		if cs := e.comments(20); len(cs) != 0 {
			t.Errorf("an unenforced project's item got comments: %v", cs)
		}
		e.move("agent-1", 7, "Research Needed")
		e.settle()
		e.wantState(7, "Research Needed")

		b, err := e.sb.UserBoard("agent-1")
		if err != nil {
			t.Fatal(err)
		}
		_ = b
	})
}
