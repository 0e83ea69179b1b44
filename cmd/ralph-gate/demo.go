package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/sandbox"
	"github.com/ralph-gate/ralph-gate/store"
)

// demo narrates ralph-gate at work on the built-in GitHub simulator: no GitHub account needed.
type demo struct {
	ctx context.Context
	sb  *sandbox.Sandbox
	out io.Writer
	err error
}

func runDemo(ctx context.Context, args []string, s streams) int {
	fs := newFlags("demo", s)
	keep := fs.Bool("keep", false, "leave the simulator and the app running for exploration (Ctrl-C stops)")
	verbose := fs.Bool("verbose", false, "show the app's logs on stderr")
	if code, ok := parseFlags(fs, args, s); !ok {
		return code
	}
	level := "error"
	if *verbose {
		level = "debug"
	}
	logger := newLogger(s.err, config.Logging{Level: level, Format: "console"})
	ctx = logger.WithContext(ctx)

	fmt.Fprintln(s.out, "ralph-gate demo: the GitHub simulator, ralph-gate and an SQLite store, all in this process.")
	startCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	sb, err := sandbox.Start(startCtx, sandbox.Options{Version: version, Configure: func(c *config.Config) {
		c.Logging.Level = level
		c.MCP = config.MCP{DefaultRepo: "app", Agents: []config.MCPAgent{{Name: "planner-1", Token: demoMCPToken, Commands: []string{"plan"}}}}
	}})
	cancel()
	if err != nil {
		fmt.Fprintf(s.err, "demo: %v\n", err)
		return exitError
	}
	defer sb.Close()
	d := &demo{ctx: ctx, sb: sb, out: s.out}
	d.script()
	if d.err != nil {
		fmt.Fprintf(s.err, "demo: %v\n", d.err)
		return exitError
	}
	if *keep {
		d.explore()
		<-ctx.Done()
		fmt.Fprintln(s.out, "\nstopping.")
		return exitOK
	}
	fmt.Fprintln(s.out, "\nDone. Run `ralph-gate demo --keep` to explore the simulator and the app yourself.")
	return exitOK
}

func (d *demo) say(format string, args ...any) {
	fmt.Fprintf(d.out, format+"\n", args...)
}

func (d *demo) step(title string) {
	d.say("\n== %s", title)
}

// move makes a change as a seeded user and waits until ralph-gate has dealt with it.
func (d *demo) move(login string, number int, to string) {
	if d.err != nil {
		return
	}
	before, _ := d.sb.State("app", number)
	d.say("%s moves #%d from %q to %q", login, number, before, to)
	if d.err = d.sb.Move(d.ctx, login, "app", number, to); d.err != nil {
		return
	}
	d.err = d.sb.Settle(d.ctx)
}

func (d *demo) show(number int) {
	if d.err != nil {
		return
	}
	is, err := d.sb.Issue("app", number)
	if err != nil {
		d.err = err
		return
	}
	d.say("   → #%d %q is now in %q", number, is.Title, is.Fields["Workflow State"])
}

func (d *demo) lastComment(number int) {
	if d.err != nil {
		return
	}
	is, err := d.sb.Issue("app", number)
	if err != nil {
		d.err = err
		return
	}
	if len(is.Comments) == 0 {
		d.say("   (no comment)")
		return
	}
	c := is.Comments[len(is.Comments)-1]
	d.say("   %s commented on #%d:", c.Author, number)
	for _, line := range strings.Split(strings.TrimSpace(c.Body), "\n") {
		d.say("   | %s", line)
	}
}

func (d *demo) script() {
	d.say("Board %q of organization %q, enforced by the App %s.", "Ralph", d.sb.Org(), d.sb.App.AppLogin())
	d.say("alice is a person; agent-1 and agent-2 are agents (actors.agents: \"agent-*\").")

	d.step("1. A legal move stays")
	d.move("alice", 5, "Ready for Plan")
	d.show(5)

	d.step("2. An agent's illegal move is reverted and explained")
	d.move("agent-1", 3, "In Progress")
	d.show(3)
	d.lastComment(3)

	d.step("3. Escalation to Human Needed is allowed from anywhere, for anyone")
	d.move("agent-1", 6, "Human Needed")
	d.show(6)

	d.step("4. Only a person may take an item out of Human Needed")
	d.move("agent-2", 6, "In Progress")
	d.show(6)
	d.move("alice", 6, "In Progress")
	d.show(6)

	d.step("5. A parent's move carries its earlier children along (cascade)")
	d.move("alice", 1, "Ready for Plan")
	d.show(1)
	d.show(2)
	d.show(3)
	d.show(4)

	d.step("6. When every child reaches a gate, the parent follows (convergence)")
	d.move("agent-1", 10, "Ready for Plan")
	d.show(9)
	d.move("agent-2", 11, "Ready for Plan")
	d.show(9)

	d.step("7. Planning before the whole group is ready is refused (convergence gate)")
	d.move("agent-1", 13, "Plan in Progress")
	d.show(13)
	d.lastComment(13)

	d.step("8. An agent hands off through the MCP façade (handoff_ticket at /mcp)")
	d.mcpHandoff()

	d.step("9. Every decision is recorded")
	if d.err != nil {
		return
	}
	entries, err := d.sb.App.Store().QueryAudit(d.ctx, store.AuditFilter{})
	if err != nil {
		d.err = err
		return
	}
	for _, e := range entries {
		d.say("   %-9s #%-2d %-15s (%s) %q → %q: %s", e.Verdict, e.IssueNumber, e.Actor, e.ActorKind, e.FromState, e.ToState, e.Reason)
	}
	d.say("The audit log lives in the store; while the demo runs (--keep), print it with:")
	d.say("   ralph-gate audit --driver %s --dsn %s", d.sb.Config.Store.Driver, d.sb.Config.Store.DSN)
	req := d.sb.Sim.Requests()
	d.say("GitHub API requests the app and the users made: %d (the simulator's request log: %s/_sim/requests).", req.Total, d.sb.SimURL)
}

// explore prints what a person needs to poke at the running sandbox.
func (d *demo) explore() {
	d.step("Explore (Ctrl-C stops)")
	d.say("ralph-gate:        %s  (webhooks at /api/github/hook, /healthz, /readyz)", d.sb.AppURL)
	d.say("MCP façade:        %s/mcp  (agent planner-1, header \"Authorization: Bearer %s\")", d.sb.AppURL, demoMCPToken)
	d.say("GitHub simulator:  %s  (REST /api/v3/, GraphQL /api/graphql, state /_sim/state)", d.sb.SimURL)
	d.say("Store:             %s %s", d.sb.Config.Store.Driver, d.sb.Config.Store.DSN)
	for _, login := range []string{"alice", "agent-1", "agent-2", "owner"} {
		if tok, err := d.sb.Token(login); err == nil {
			d.say("token of %-8s %s", login+":", tok)
		}
	}
	tok, _ := d.sb.Token("agent-1")
	d.say("\nTry, as agent-1, an illegal move (find item ids in %s/_sim/state):", d.sb.SimURL)
	d.say(`  curl -s %s/_sim/state | head -c 600`, d.sb.SimURL)
	d.say(`  curl -s -H "Authorization: bearer %s" %s/api/graphql -d '{"query":"{ viewer { login } }"}'`, tok, d.sb.SimURL)
}
