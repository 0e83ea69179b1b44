package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	_ "github.com/jackc/pgx/v5/stdlib" // "pgx" driver for the test's admin connection

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/store"
)

func TestDemo(t *testing.T) {
	t.Parallel()
	code, out, errOut := runCLI(t, "", "demo")
	if code != exitOK {
		t.Fatalf("demo exited %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{
		`#5 "Fix the login page" is now in "Ready for Plan"`,                                    // a legal move stays
		`#3 "Store last legal states" is back in "Backlog": ralph-gate reverted the move`,       // an illegal move reverted
		"reverted at once; the explanation follows once no earlier change can be missing",       // before its proof
		"ralph-gate[bot] commented on #3",                                                       // and explained
		"(and, hidden from readers, markers for tools: ralph-gate:violation, ralph-transition)", // without showing the markers
		`#6 "Upgrade dependencies" is now in "Human Needed"`,                                    // escalation
		"reverted  #6  agent-2",                                                        // humans-only exit refused
		"ralph-gate[bot] commented on #6",                                              // and explained, in step 4 too
		"planner-1 is an agent that works through the",                                 // introduced before step 8
		"   … judging: ralph-gate decides once no earlier change can still be missing", // the pause said once, at length
		"   … judging\n",                                                               // then briefly
		`#2 "Research the webhook payloads" is now in "Ready for Plan" (was "Research Needed")`, // cascade
		`#4 "Explain reverts in comments" is still in "Ready for Plan"`,                         // already there
		// convergence: the parent stays while a child is behind, then follows
		`#9 "Epic - reporting" is still in "Research Needed"; its sub-issues: #10 "Ready for Plan", #11 "Research Needed"`,
		`#9 "Epic - reporting" is now in "Ready for Plan" (was "Research Needed")`,
		`#14 "Rank the results" is in Research Needed`, // the premature planning names the sibling
		"Recovery: wait until #14 reaches Ready for Plan",
		`handed off #8: "Ready for Plan" → "Plan in Progress"`,           // an MCP handoff
		"Recovery: from Ready for Plan, plan may retry with intent lock", // a refused one, with its retries
		"handoff   #8  planner-1", // audited under the agent's name
		// a worker role refused out of a state another role owns, then the owner's move
		"builder-1 (builder) may not move an item out of Research Needed: the analyst role owns it",
		"Recovery: leave it to an agent of the analyst role, or escalate to Human Needed",
		`#14 "Rank the results" is now in "Research in Progress"`,
		"which `ralph-gate audit` prints; this demo's store is removed when the demo ends",
		"Done. Run `ralph-gate demo --keep` to explore",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	for _, no := range []string{
		"<!--", // hidden markers are not shown
		`#9 "Epic - reporting" is now in "Research Needed"`, // a parent that did not move
		"ralph-gate-sandbox-", "--dsn",                      // the store, removed when the demo ended
		"http://127.0.0.1", // the servers, stopped
	} {
		if strings.Contains(out, no) {
			t.Errorf("demo output has %q:\n%s", no, out)
		}
	}
}

// lockedBuffer collects a running command's output for a test reading it meanwhile.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// goTool finds the go command, to build ghsim as a person would install it.
func goTool(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	if p := filepath.Join(runtime.GOROOT(), "bin", "go"); runtime.GOROOT() != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skip("the go command is not available to build ghsim")
	return ""
}

// demo --keep listens where it is told and prints commands that work as printed: the
// illegal move, pasted into a shell with ghsim installed, is made and reverted, and the audit
// command shows the decision, read from the running demo's store; stopping removes the store.
func TestDemoKeep(t *testing.T) {
	t.Parallel()
	bin := t.TempDir()
	build := exec.Command(goTool(t), "build", "-o", filepath.Join(bin, "ghsim"), "./cmd/ghsim")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/ghsim: %v\n%s", err, out)
	}
	appAddr, simAddr := freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out, errOut lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"demo", "--keep", "--listen", appAddr, "--sim-listen", simAddr}, streams{in: strings.NewReader(""), out: &out, err: &errOut})
	}()
	for deadline := time.Now().Add(3 * time.Minute); !strings.Contains(out.String(), "/_sim/state\n"); {
		select {
		case code := <-done:
			t.Fatalf("demo --keep exited %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("demo --keep printed no exploration commands:\n%s", out.String())
		}
	}
	text := out.String()
	for _, want := range []string{"ralph-gate:        http://" + appAddr, "GitHub simulator:  http://" + simAddr} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	line := func(prefix string) string {
		for _, l := range strings.Split(text, "\n") {
			if strings.HasPrefix(l, "  "+prefix) {
				return strings.TrimSpace(l)
			}
		}
		t.Fatalf("no line starting with %q:\n%s", prefix, text)
		return ""
	}
	move, audit := line("ghsim move "), line("ralph-gate audit ")
	m := regexp.MustCompile(`mark #(\d+) "[^"]+" \(in "([^"]+)"\) Done`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no illegal move proposed:\n%s", text)
	}
	number, was := m[1], m[2]

	sh := exec.CommandContext(ctx, "sh", "-c", move)
	sh.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	moved, err := sh.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", move, err, moved)
	}
	for _, want := range []string{"agent-1 moved acme/app#" + number, `back in "` + was + `" — the move was reverted`, "ralph-gate[bot] commented:", "Recovery:"} {
		if !strings.Contains(string(moved), want) {
			t.Errorf("%s printed no %q:\n%s", move, want, moved)
		}
	}
	if strings.Contains(string(moved), "<!--") {
		t.Errorf("ghsim move shows hidden markers:\n%s", moved)
	}
	// The board, read independently, has the issue back where it was.
	resp, err := http.Get("http://" + simAddr + "/_sim/state")
	if err != nil {
		t.Fatal(err)
	}
	var world struct {
		Issues []struct {
			Number int
			Fields map[string]string
		}
	}
	err = json.NewDecoder(resp.Body).Decode(&world)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, is := range world.Issues {
		if strconv.Itoa(is.Number) == number && is.Fields["Workflow State"] != was {
			t.Errorf("#%s is in %q after the revert, want %q", number, is.Fields["Workflow State"], was)
		}
	}

	args := strings.Fields(audit)
	code, auditOut, auditErr := runCLI(t, "", args[1:]...)
	if code != exitOK || !strings.Contains(auditOut, "reverted") || !strings.Contains(auditOut, "agent-1 (agent)") || !strings.Contains(auditOut, "Done") {
		t.Errorf("%s: exit %d\n%s%s", audit, code, auditOut, auditErr)
	}
	dsn := args[slices.Index(args, "--dsn")+1]

	cancel()
	select {
	case code := <-done:
		if code != exitOK || !strings.HasSuffix(out.String(), "stopping.\n") {
			t.Errorf("demo --keep stopped with exit %d:\n%s", code, out.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("demo --keep did not stop")
	}
	if _, err := os.Stat(dsn); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the demo's store %s remains after it stopped (%v)", dsn, err)
	}
}

// The printed commands name ralph-gate and ghsim the way this process was started.
func TestDemoRunners(t *testing.T) {
	checkout := t.TempDir()
	for _, f := range []string{"cmd/ralph-gate/main.go", "cmd/ghsim/main.go"} {
		p := filepath.Join(checkout, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("package main\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	elsewhere := t.TempDir()
	goRun := filepath.Join(os.TempDir(), "go-build123", "b001", "exe", "ralph-gate")
	cache := t.TempDir() // a build cache that is not the default (GOCACHE): go run's binary is in it
	t.Setenv("GOCACHE", cache)
	goRunCached := filepath.Join(cache, "3f", "3f2a-d", "ralph-gate")
	install := "ghsim is the simulator's own command: go install github.com/ralph-gate/ralph-gate/cmd/ghsim@latest"
	tests := []struct {
		name, arg0, dir string
		want            runners
	}{
		{"go run in a checkout", goRun, checkout, runners{ralphGate: "go run ./cmd/ralph-gate", ghsim: "go run ./cmd/ghsim"}},
		{"go test in a checkout", filepath.Join(os.TempDir(), "TestX", "ralph-gate.test"), checkout, runners{ralphGate: "go run ./cmd/ralph-gate", ghsim: "go run ./cmd/ghsim"}},
		{"from the PATH", "ralph-gate", elsewhere, runners{ralphGate: "ralph-gate", ghsim: "ghsim", ghsimNote: install}},
		{"a binary here", "./ralph-gate", checkout, runners{ralphGate: "./ralph-gate", ghsim: "go run ./cmd/ghsim"}},
		{"a path with a space", "/opt/my tools/ralph-gate", elsewhere, runners{ralphGate: "'/opt/my tools/ralph-gate'", ghsim: "ghsim", ghsimNote: install}},
		{"go run elsewhere", goRun, elsewhere, runners{ralphGate: "ralph-gate", ghsim: "ghsim", ghsimNote: install}},
		{"go run with GOCACHE elsewhere", goRunCached, checkout, runners{ralphGate: "go run ./cmd/ralph-gate", ghsim: "go run ./cmd/ghsim"}},
	}
	for _, tt := range tests {
		if got := demoRunners(tt.arg0, tt.dir); got != tt.want {
			t.Errorf("%s: demoRunners(%q) = %+v, want %+v", tt.name, tt.arg0, got, tt.want)
		}
	}
}

// Every error of the commands this file covers is one line, "ralph-gate CMD: what; what to
// do", on stderr with nothing on stdout.
func TestErrorForm(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"frobnicate"}, exitUsage, `ralph-gate: unknown command "frobnicate"; run 'ralph-gate help'`},
		{[]string{"audit", "--since", "yesterday"}, exitUsage, `ralph-gate audit: --since: "yesterday" is neither an RFC 3339 time nor a duration; give a duration such as --since 1h`},
		{[]string{"audit", "--limit", "-1"}, exitUsage, "ralph-gate audit: --limit -1 is negative; give 0 for every decision"},
		{[]string{"audit", "--dsn", filepath.Join(dir, "none.db")}, exitError, "ralph-gate audit: no ralph-gate store at " + filepath.Join(dir, "none.db") + ": the file does not exist; check --dsn"},
		{[]string{"audit", "--config", filepath.Join(dir, "none.yml")}, exitError, "ralph-gate audit: cannot read the configuration: read config: open " + filepath.Join(dir, "none.yml")},
		{[]string{"bench", "--rtt", "-1s"}, exitUsage, "ralph-gate bench: --rtt -1s is negative; give the latency"},
		{[]string{"bench", "--reconcile", "10,x"}, exitUsage, `ralph-gate bench: --reconcile: "x" is not a positive number of items; give board sizes`},
		{[]string{"completion", "tcsh"}, exitUsage, `ralph-gate completion: no completion for shell "tcsh"; choose bash, zsh or fish`},
		{[]string{"demo", "--listen", "0.0.0.0:0"}, exitError, `ralph-gate demo: could not start: the sandbox listens on loopback addresses only, not "0.0.0.0:0"; choose another loopback address with --listen`},
		{[]string{"demo", "--sim-listen", "192.0.2.1:80"}, exitError, "ralph-gate demo: could not start: start simulator: ghsim listens on loopback addresses only"},
		{[]string{"version", "extra"}, exitUsage, `ralph-gate version: unexpected argument "extra"`},
		{[]string{"mcp"}, exitUsage, "ralph-gate mcp: give --stdio"},
		{[]string{"mcp", "--stdio", "--config", filepath.Join(dir, "none.yml")}, exitError, "ralph-gate mcp: read config: open " + filepath.Join(dir, "none.yml")},
		{[]string{"serve", "--config", filepath.Join(dir, "none.yml")}, exitError, "ralph-gate serve: read config: open " + filepath.Join(dir, "none.yml")},
		{[]string{"register"}, exitUsage, "ralph-gate register: --org must name the GitHub organization"},
		{[]string{"validate", "--for", "x"}, exitUsage, `ralph-gate validate: --for: unknown mode "x"`},
		{[]string{"policy", "check", "--config", filepath.Join(dir, "none.yml"), "--to", "Done"}, exitError, "ralph-gate policy: read config: open " + filepath.Join(dir, "none.yml")},
	}
	for _, tt := range tests {
		code, out, errOut := runCLI(t, "", tt.args...)
		if code != tt.code || !strings.HasPrefix(errOut, tt.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d (want %d), stderr %q, want one line starting %q", tt.args, code, tt.code, errOut, tt.want)
		}
		if strings.HasPrefix(tt.args[0], "demo") {
			continue // demo announces itself on stdout before it starts
		}
		if out != "" {
			t.Errorf("%v: stdout %q", tt.args, out)
		}
	}
}

// version prints the -ldflags version when the build set one, else what the module's build
// information says, else dev.
func TestChooseVersion(t *testing.T) {
	info := func(v string, settings ...string) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) {
			bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/ralph-gate/ralph-gate", Version: v}}
			for i := 0; i+1 < len(settings); i += 2 {
				bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
			}
			return bi, true
		}
	}
	none := func() (*debug.BuildInfo, bool) { return nil, false }
	const rev = "0123456789abcdef0123456789abcdef01234567"
	tests := []struct {
		name, stamped string
		info          func() (*debug.BuildInfo, bool)
		want          string
	}{
		{"ldflags win", "1.4.0", info("v1.3.0"), "1.4.0"},
		{"ldflags v-prefixed", "v1.4.0", none, "v1.4.0"},
		{"go install @version", "dev", info("v1.3.0"), "v1.3.0"},
		{"go install of a pseudo-version", "dev", info("v0.0.0-20260301120000-0123456789ab"), "v0.0.0-20260301120000-0123456789ab"},
		{"local build, Go stamps the commit", "dev", info("v0.0.0-20260301120000-0123456789ab+dirty", "vcs.revision", rev, "vcs.modified", "true"), "v0.0.0-20260301120000-0123456789ab+dirty"},
		{"at a tag in a checkout", "dev", info("v1.3.0", "vcs.revision", rev, "vcs.modified", "false"), "v1.3.0+0123456789ab"},
		{"devel with a commit", "dev", info("(devel)", "vcs.revision", rev, "vcs.modified", "true"), "dev+0123456789ab.dirty"},
		{"devel, clean", "dev", info("(devel)", "vcs.revision", rev, "vcs.modified", "false"), "dev+0123456789ab"},
		{"devel without vcs (go run, go test)", "dev", info("(devel)"), "dev"},
		{"no build info", "dev", none, "dev"},
		{"empty stamp", "", info(""), "dev"},
	}
	for _, tt := range tests {
		if got := chooseVersion(tt.stamped, tt.info); got != tt.want {
			t.Errorf("%s: chooseVersion(%q) = %q, want %q", tt.name, tt.stamped, got, tt.want)
		}
	}
}

func TestServeRefusesIncompleteConfig(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.yml")
	if err := os.WriteFile(file, []byte("github:\n  app:\n    webhook_secret: very-secret-value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GITHUB_APP_PRIVATE_KEY", "")
	code, out, errOut := runCLI(t, "", "serve", "--config", file)
	if code != exitError {
		t.Fatalf("exit %d, want %d", code, exitError)
	}
	for _, want := range []string{"github.app.integration_id", "github.app.private_key", "2 problem(s)"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %s:\n%s", want, errOut)
		}
	}
	// No project is not one of them: serve reads each organization's policy file.
	if strings.Contains(errOut, "projects") {
		t.Errorf("serve asks for projects:\n%s", errOut)
	}
	if strings.Contains(out+errOut, "very-secret-value") {
		t.Error("a secret was printed")
	}
}

// hostileReason is a reason as a hostile agent would write it: a forged audit row on a line of
// its own, a carriage return, terminal escapes (clear screen, BEL), NUL and a right-to-left
// override.
const hostileReason = "handoff\n2026-11-01T12:00:00Z  allowed  acme/app#9  alice (human)  Backlog  Done  ok\r\x1b[2J\a\x00\u202eevil"

func TestAudit(t *testing.T) {
	dsn := filepath.Join(t.TempDir(), "a.db")
	ctx := context.Background()
	st, err := store.Open(ctx, "sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	for i, e := range []enforce.AuditEntry{
		{At: at, IssueNumber: 3, Repo: "acme/app", Actor: "agent-1", ActorKind: "agent", FromState: "Backlog", ToState: "In Progress", Verdict: enforce.VerdictReverted, Reason: "not a transition"},
		{At: at.Add(time.Hour), IssueNumber: 5, Repo: "acme/app", Actor: "alice", ActorKind: "human", FromState: "Backlog", ToState: "Ready for Plan", Verdict: enforce.VerdictAllowed, Reason: "allowed"},
		// An agent's handoff reason, written to forge a row and to drive the terminal.
		{At: at.Add(2 * time.Hour), IssueNumber: 7, Repo: "acme/app", Actor: "agent-9", ActorKind: "agent", FromState: "Plan in Progress", ToState: "Plan in Review",
			Verdict: enforce.VerdictAllowed, Reason: hostileReason},
	} {
		e.ItemID = "PVTI_" + string(rune('a'+i))
		if _, err := st.AppendAudit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	before, err := os.ReadFile(dsn)
	if err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(t.TempDir(), "old.db")
	st, err = store.Open(ctx, "sqlite", old)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.DB().ExecContext(ctx, `DELETE FROM schema_migrations WHERE version = ?`, store.SchemaVersion()); err != nil {
		t.Fatal(err)
	}
	st.Close()
	missingDir := filepath.Join(t.TempDir(), "typo")
	tests := []struct {
		name     string
		args     []string
		code     int
		contains []string // in stdout
		absent   []string // in stdout
		stderr   []string // in stderr
	}{
		{"all", []string{"audit", "--dsn", dsn}, exitOK, []string{"reverted", "acme/app#3", "agent-1 (agent)", "allowed"}, nil, nil},
		{"by item", []string{"audit", "--dsn", dsn, "--item", "5"}, exitOK, []string{"alice"}, []string{"agent-1"}, nil},
		{"since", []string{"audit", "--dsn", dsn, "--since", "2026-11-01T12:30:00Z"}, exitOK, []string{"alice"}, []string{"agent-1"}, nil},
		{"json", []string{"audit", "--dsn", dsn, "--json"}, exitOK, []string{`"verdict":"reverted"`, `"issue":5`}, nil, nil},
		{"bad since", []string{"audit", "--dsn", dsn, "--since", "yesterday"}, exitUsage, nil, nil, nil},
		// A mistyped store is an error, and nothing is created (it once made the directory and
		// an empty database, and printed "no decisions recorded").
		{"missing directory", []string{"audit", "--dsn", filepath.Join(missingDir, "x.db")}, exitError, nil, []string{"no decisions recorded"},
			[]string{"ralph-gate audit: no ralph-gate store at " + filepath.Join(missingDir, "x.db"), "neither the file nor its directory " + missingDir + " exists", "check --dsn", "'ralph-gate serve' creates"}},
		{"missing file, relative", []string{"audit", "--dsn", "no-such-store.db"}, exitError, nil, []string{"no decisions recorded"},
			[]string{"no ralph-gate store at no-such-store.db: the file does not exist", "the relative path no-such-store.db is taken from the current directory"}},
		{"missing default store", []string{"audit"}, exitError, nil, nil,
			[]string{"no ralph-gate store at ralph-gate.db", "check store.dsn in the configuration (--config) or RALPH_GATE_STORE_DSN"}},
		{"older schema", []string{"audit", "--dsn", old}, exitOK, []string{"no decisions recorded"}, nil,
			[]string{fmt.Sprintf("ralph-gate audit: warning: the store's schema is at version %d, older than this ralph-gate's %d", store.SchemaVersion()-1, store.SchemaVersion())}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d: %s", code, tt.code, errOut)
			}
			for _, w := range tt.contains {
				if !strings.Contains(out, w) {
					t.Errorf("lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tt.absent {
				if strings.Contains(out, w) {
					t.Errorf("has %q:\n%s", w, out)
				}
			}
			for _, w := range tt.stderr {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
		})
	}
	t.Run("hostile text", func(t *testing.T) {
		code, out, errOut := runCLI(t, "", "audit", "--dsn", dsn, "--item", "7")
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != 2 {
			t.Errorf("%d lines, want the header and one row:\n%s", len(lines), out)
		}
		for _, l := range lines[1:] {
			if !strings.HasPrefix(l, at.Add(2*time.Hour).Format(time.RFC3339)) {
				t.Errorf("a line the row did not start: %q", l)
			}
		}
		for _, r := range strings.TrimSuffix(out, "\n") {
			if r != '\n' && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r)) {
				t.Errorf("the output carries %U:\n%q", r, out)
			}
		}
		for _, w := range []string{`handoff\n2026-11-01T12:00:00Z`, `\x1b[2J`, `\a`, `\x00`, `\u202e`, `\r`} {
			if !strings.Contains(out, w) {
				t.Errorf("lacks the escaped %s:\n%s", w, out)
			}
		}
	})
	for _, p := range []string{missingDir, "no-such-store.db", "ralph-gate.db"} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("audit created %s", p)
		}
	}
	// Reading never writes: the store's files are as they were.
	if after, err := os.ReadFile(dsn); err != nil || !bytes.Equal(after, before) {
		t.Errorf("audit changed the store (%v)", err)
	}
}

// With PostgreSQL (RALPH_GATE_TEST_POSTGRES_DSN), audit reads an existing store and refuses a
// database without one, creating no table.
func TestAuditPostgres(t *testing.T) {
	base := os.Getenv("RALPH_GATE_TEST_POSTGRES_DSN")
	if base == "" {
		t.Skip("set RALPH_GATE_TEST_POSTGRES_DSN (eval \"$(bash .ci/postgres.sh start)\") to run against PostgreSQL")
	}
	ctx := t.Context()
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	schemaDSN := func(name string) string {
		if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+name); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = admin.ExecContext(context.Background(), "DROP SCHEMA "+name+" CASCADE") })
		u, err := url.Parse(base)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Set("search_path", name)
		u.RawQuery = q.Encode()
		return u.String()
	}
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	full, empty := schemaDSN("audit_full_"+suffix), schemaDSN("audit_empty_"+suffix)
	st, err := store.Open(ctx, "postgres", full)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.AppendAudit(ctx, enforce.AuditEntry{At: time.Now(), ItemID: "PVTI_a", IssueNumber: 3, Repo: "acme/app", Actor: "agent-1",
		ActorKind: "agent", Verdict: enforce.VerdictReverted, Reason: "not a transition"}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	code, out, errOut := runCLI(t, "", "audit", "--dsn", full)
	if code != exitOK || !strings.Contains(out, "agent-1 (agent)") {
		t.Errorf("audit of a PostgreSQL store: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "", "audit", "--dsn", empty)
	if code != exitError || !strings.Contains(errOut, "ralph-gate audit: no ralph-gate store in the PostgreSQL database") || out != "" {
		t.Errorf("audit of an empty PostgreSQL schema: exit %d\n%s%s", code, out, errOut)
	}
	var tables int
	if err := admin.QueryRowContext(ctx, "SELECT count(*) FROM information_schema.tables WHERE table_schema = $1", "audit_empty_"+suffix).Scan(&tables); err != nil || tables != 0 {
		t.Errorf("audit created %d table(s) in the empty schema (%v)", tables, err)
	}
}
