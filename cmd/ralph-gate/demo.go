package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/policy"
	"github.com/ralph-gate/ralph-gate/sandbox"
	"github.com/ralph-gate/ralph-gate/store"
)

// demo narrates ralph-gate at work on the built-in GitHub simulator: no GitHub account needed.
type demo struct {
	ctx  context.Context
	sb   *sandbox.Sandbox
	out  io.Writer
	err  error
	run  runners
	keep bool
	// before holds every issue's Workflow State before the latest change the demo made, and
	// moved/movedTo that change, so the narration says what happened to each issue.
	before  map[int]string
	moved   int
	movedTo string
	waited  bool // the pause after a move was explained once
}

func runDemo(ctx context.Context, args []string, s streams) int {
	fs := newFlags("demo", s)
	keep := fs.Bool("keep", false, "leave the simulator and the app running for exploration (Ctrl-C stops)")
	listen := fs.String("listen", "", "where ralph-gate listens, a loopback host:port (default: a free port on 127.0.0.1)")
	simListen := fs.String("sim-listen", "", "where the GitHub simulator listens, a loopback host:port (default: a free port on 127.0.0.1)")
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
	sb, err := sandbox.Start(startCtx, sandbox.Options{Version: version, SimAddr: *simListen, AppAddr: *listen, Configure: func(c *config.Config) {
		c.Logging.Level = level
		c.MCP = config.MCP{DefaultRepo: "app", Agents: []config.MCPAgent{{Name: "planner-1", Token: demoMCPToken, Commands: []string{"plan"}}}}
		c.Actors.Roles = demoRoles()
	}})
	cancel()
	if err != nil {
		hint := "run it again with --verbose to see the app's logs"
		if strings.Contains(err.Error(), "listen") || strings.Contains(err.Error(), "loopback") {
			hint = "choose another loopback address with --listen or --sim-listen, or leave them out for free ports"
		}
		return fail(s, "demo", exitError, "could not start: "+err.Error(), hint)
	}
	defer sb.Close()
	wd, _ := os.Getwd()
	d := &demo{ctx: ctx, sb: sb, out: s.out, run: demoRunners(os.Args[0], wd), keep: *keep}
	d.script()
	if d.err != nil {
		return fail(s, "demo", exitError, d.err.Error(), "run it again with --verbose to see the app's logs")
	}
	if *keep {
		d.explore()
		<-ctx.Done()
		fmt.Fprintln(s.out, "\nstopping.")
		return exitOK
	}
	fmt.Fprintf(s.out, "\nDone. Run `%s demo --keep` to explore the simulator and the app yourself.\n", d.run.ralphGate)
	return exitOK
}

// runners are how the person who started the demo runs ralph-gate and ghsim, for the
// commands the demo prints: they must work as printed, pasted into a shell in the same
// directory.
type runners struct {
	ralphGate string
	ghsim     string
	// ghsimNote says how to get ghsim when the demo cannot run it from the source.
	ghsimNote string
}

// demoRunners chooses them from how this program was invoked (arg0) and the directory it
// runs in: "go run ./cmd/…" under go run (or go test) in a checkout of the repository, else
// the program as invoked ("./ralph-gate", a full path, or ralph-gate from the PATH) and ghsim,
// which `go install` provides.
func demoRunners(arg0, dir string) runners {
	isFile := func(p string) bool {
		fi, err := os.Stat(filepath.Join(dir, p))
		return err == nil && fi.Mode().IsRegular()
	}
	checkout := isFile(filepath.Join("cmd", "ralph-gate", "main.go")) && isFile(filepath.Join("cmd", "ghsim", "main.go"))
	built := strings.Contains(filepath.ToSlash(arg0), "/go-build") || strings.HasSuffix(arg0, ".test") ||
		within(arg0, os.Getenv("GOCACHE"))
	r := runners{ralphGate: "ralph-gate", ghsim: "ghsim"}
	switch {
	case built && checkout:
		r.ralphGate = "go run ./cmd/ralph-gate"
	case !built && strings.ContainsRune(arg0, os.PathSeparator):
		r.ralphGate = shellWord(arg0)
	}
	if checkout {
		r.ghsim = "go run ./cmd/ghsim"
	} else {
		at := "latest"
		if strings.HasPrefix(version, "v") {
			at = version
		}
		r.ghsimNote = "ghsim is the simulator's own command: go install github.com/ralph-gate/ralph-gate/cmd/ghsim@" + at
	}
	return r
}

// within reports whether path is inside dir (a build cache: `go run` runs its binary from
// there, whatever GOCACHE is).
func within(path, dir string) bool {
	if dir == "" || !filepath.IsAbs(path) {
		return false
	}
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != "." && !strings.HasPrefix(rel, "..")
}

// shellWord is w as a word for a POSIX shell: as is when that is safe, else single-quoted.
func shellWord(w string) string {
	if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:@#=+-,%") == "" {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

func (d *demo) say(format string, args ...any) {
	fmt.Fprintf(d.out, format+"\n", args...)
}

func (d *demo) step(title string) {
	d.say("\n== %s", title)
}

// snapshot records every issue's state before a change, for show.
func (d *demo) snapshot(moved int, to string) {
	d.before, d.moved, d.movedTo = map[int]string{}, moved, to
	for _, is := range d.sb.Sim.State().Issues {
		d.before[is.Number] = is.Fields[d.sb.Config.Workflow.Field]
	}
}

// move makes a change as a seeded user and waits until ralph-gate has dealt with it.
func (d *demo) move(login string, number int, to string) {
	if d.err != nil {
		return
	}
	d.snapshot(number, to)
	d.say("%s moves #%d from %q to %q", login, number, d.before[number], to)
	if d.err = d.sb.Move(d.ctx, login, "app", number, to); d.err != nil {
		return
	}
	d.judging()
	d.err = d.sb.Settle(d.ctx)
}

// judging says what the pause after a move is, the first time at length.
func (d *demo) judging() {
	if d.waited {
		d.say("   … judging")
		return
	}
	d.waited = true
	d.say("   … judging: ralph-gate decides once no earlier change can still be missing (enforcement.reorder_window + 1 s + a redelivery sweep, about 5 s here)")
}

// moveRefused makes a move the workflow refuses, says how soon the card was back (a
// provisional revert: at once), then waits until ralph-gate has dealt with it (explained it).
func (d *demo) moveRefused(login string, number int, to string) {
	if d.err != nil {
		return
	}
	d.snapshot(number, to)
	d.say("%s moves #%d from %q to %q", login, number, d.before[number], to)
	start := time.Now()
	if d.err = d.sb.Move(d.ctx, login, "app", number, to); d.err != nil {
		return
	}
	// (The simulator is in this process: looking at its board costs no GitHub request.)
	for deadline := start.Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if is, err := d.sb.Issue("app", number); err == nil && is.Fields[d.sb.Config.Workflow.Field] == d.before[number] {
			d.say("   → back in %q after %d ms: reverted at once; the explanation follows once no earlier change can be missing (reorder_window + 1 s + a redelivery sweep)",
				d.before[number], time.Since(start).Milliseconds())
			break
		}
	}
	d.err = d.sb.Settle(d.ctx)
}

// show says what became of an issue since the snapshot, as the board has it now.
func (d *demo) show(number int) {
	if d.err != nil {
		return
	}
	is, err := d.sb.Issue("app", number)
	if err != nil {
		d.err = err
		return
	}
	field := d.sb.Config.Workflow.Field
	now, was := is.Fields[field], d.before[number]
	switch {
	case number == d.moved && now == d.movedTo:
		d.say("   → #%d %q is now in %q", number, is.Title, now)
	case number == d.moved && now == was:
		d.say("   → #%d %q is back in %q: ralph-gate reverted the move", number, is.Title, now)
	case now != was:
		d.say("   → #%d %q is now in %q (was %q)", number, is.Title, now, was)
	default:
		line := fmt.Sprintf("   → #%d %q is still in %q", number, is.Title, now)
		var subs []string
		for _, n := range is.SubIssues {
			if sub, err := d.sb.Issue("app", n); err == nil {
				subs = append(subs, fmt.Sprintf("#%d %q", n, sub.Fields[field]))
			}
		}
		if len(subs) > 0 {
			line += "; its sub-issues: " + strings.Join(subs, ", ")
		}
		d.say("%s", line)
	}
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
	text, hidden := visibleComment(c.Body)
	d.say("   %s commented on #%d:", c.Author, number)
	for _, line := range strings.Split(text, "\n") {
		d.say("%s", strings.TrimRight("   | "+line, " "))
	}
	if len(hidden) > 0 {
		d.say("   (and, hidden from readers, markers for tools: %s)", strings.Join(hidden, ", "))
	}
}

// visibleComment is a comment as GitHub shows it, without its hidden <!-- … --> markers, and
// the markers' names ("ralph-transition").
func visibleComment(body string) (text string, hidden []string) {
	re := regexp.MustCompile(`(?s)<!--(.*?)-->`)
	for _, m := range re.FindAllStringSubmatch(body, -1) {
		if f := strings.Fields(m[1]); len(f) > 0 {
			hidden = append(hidden, strings.TrimSuffix(f[0], ":"))
		}
	}
	return strings.Trim(re.ReplaceAllString(body, ""), "\n\r\t "), hidden
}

// demoRoles are two worker roles of the state ownership map, for step 9; the other agents
// match no role and keep the agent rules alone.
func demoRoles() map[string]policy.RoleSpec {
	return map[string]policy.RoleSpec{
		"analyst": {Agents: []string{"analyst-*"}, Owns: []string{"Backlog", "Research Needed", "Research in Progress"}},
		"builder": {Agents: []string{"builder-*"}, Owns: []string{"Ready for Plan", "Plan in Progress", "Plan in Review", "In Progress"}},
	}
}

func (d *demo) script() {
	d.say("Board %q of organization %q, enforced by the App %s.", "Ralph", d.sb.Org(), d.sb.App.AppLogin())
	d.say("alice is a person; agent-1 and agent-2 are agents (actors.agents: \"agent-*\"); analyst-1 and builder-1 are")
	d.say("agents of the analyst and builder worker roles (actors.roles); planner-1 is an agent that works through the")
	d.say("MCP façade (mcp.agents: it asks ralph-gate to make its moves, step 8).")
	if d.err == nil {
		// As after installing: the reconciler's first pass adopts every item's value as legal.
		if _, d.err = d.sb.App.ReconcileNow(d.ctx); d.err == nil {
			d.say("ralph-gate's first reconciliation pass took every item's current value as its legal state.")
		}
	}

	d.step("1. A legal move stays")
	d.move("alice", 5, "Ready for Plan")
	d.show(5)

	d.step("2. An agent's illegal move is reverted and explained")
	d.moveRefused("agent-1", 3, "In Progress")
	d.show(3)
	d.lastComment(3)

	d.step("3. Escalation to Human Needed is allowed from anywhere, for anyone")
	d.move("agent-1", 6, "Human Needed")
	d.show(6)

	d.step("4. Only a person may take an item out of Human Needed")
	d.move("agent-2", 6, "In Progress")
	d.show(6)
	d.lastComment(6)
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

	d.step("9. A worker role moves items only out of the states it owns (actors.roles)")
	d.move("builder-1", 14, "Research in Progress")
	d.show(14)
	d.lastComment(14)
	d.move("analyst-1", 14, "Research in Progress")
	d.show(14)

	d.step("10. Every decision is recorded")
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
	if d.keep {
		d.say("The audit log lives in the store; the command that prints it follows, for as long as the demo runs.")
	} else {
		d.say("The audit log lives in the store, which `%s audit` prints; this demo's store is removed when the demo ends (with --keep it stays until you stop it).", d.run.ralphGate)
	}
	d.say("GitHub API requests the app and the users made: %d.", d.sb.Sim.Requests().Total)
}

// explore prints what a person needs to poke at the running sandbox, every command ready to
// paste in another terminal opened in the same directory.
func (d *demo) explore() {
	d.step("Explore (Ctrl-C stops)")
	d.say("ralph-gate:        %s  (webhooks at /api/github/hook, /healthz, /readyz)", d.sb.AppURL)
	d.say("MCP façade:        %s/mcp  (agent planner-1, header \"Authorization: Bearer %s\")", d.sb.AppURL, demoMCPToken)
	d.say("GitHub simulator:  %s  (REST /api/v3/, GraphQL /api/graphql, state /_sim/state, request log /_sim/requests)", d.sb.SimURL)
	d.say("Store:             %s %s  (removed when the demo stops)", d.sb.Config.Store.Driver, d.sb.Config.Store.DSN)
	for _, login := range []string{"alice", "agent-1", "agent-2", "owner"} {
		if tok, err := d.sb.Token(login); err == nil {
			d.say("token of %-8s %s", login+":", tok)
		}
	}
	number, state, title := d.illegalMove()
	tok, err := d.sb.Token("agent-1")
	if number > 0 && err == nil {
		d.say("\nMake an illegal move yourself: as agent-1, mark #%d %q (in %q) Done, and watch ralph-gate revert it:", number, title, state)
		if d.run.ghsimNote != "" {
			d.say("  (%s)", d.run.ghsimNote)
		}
		d.say("  %s move --sim %s --token %s --wait 30s %d Done", d.run.ghsim, d.sb.SimURL, shellWord(tok), number)
		d.say("Then read the decisions ralph-gate recorded about it:")
		d.say("  %s audit --driver %s --dsn %s --item %d", d.run.ralphGate, d.sb.Config.Store.Driver, shellWord(d.sb.Config.Store.DSN), number)
	}
	d.say("The simulator's whole state (issues, fields, comments):")
	d.say("  curl -s %s/_sim/state", d.sb.SimURL)
}

// illegalMove picks, from the board as the script left it, an issue without sub-issues that
// an agent may not mark Done from where it is.
func (d *demo) illegalMove() (number int, state, title string) {
	m, err := d.sb.Config.Machine()
	if err != nil {
		return 0, "", ""
	}
	issues := d.sb.Sim.State().Issues
	sort.Slice(issues, func(i, j int) bool { return issues[i].Number < issues[j].Number })
	for _, is := range issues {
		from := is.Fields[d.sb.Config.Workflow.Field]
		if is.ItemID == "" || is.State != "open" || len(is.SubIssues) > 0 || from == "" {
			continue
		}
		if !m.Check(from, "Done", policy.ActorAgent).Allowed {
			return is.Number, from, is.Title
		}
	}
	return 0, "", ""
}
