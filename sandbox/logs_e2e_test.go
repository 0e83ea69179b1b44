package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/app"
	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/ghsim"
	"github.com/ralph-gate/ralph-gate/mcpserver/toolspec"
)

// startLogged starts a sandbox whose app logs JSON at debug level into the returned buffer;
// the context carries that logger (for the work a test runs by hand: ReconcileNow, SweepNow).
func startLogged(t *testing.T, opts Options) (*env, *lockedBuffer, context.Context) {
	t.Helper()
	logs := &lockedBuffer{}
	logged := zerolog.New(logs).Level(zerolog.DebugLevel).With().Timestamp().Logger().WithContext(context.Background())
	ctx, cancel := context.WithTimeout(logged, 30*time.Second)
	defer cancel()
	configure := opts.Configure
	opts.Configure = func(c *config.Config) {
		c.Logging.Level = "debug"
		if configure != nil {
			configure(c)
		}
	}
	sb, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("sandbox: %v", err)
	}
	t.Cleanup(func() { sb.Close() })
	return &env{t: t, sb: sb}, logs, logged
}

// logLine is one parsed line, with the keys it repeats.
type logLine struct {
	fields map[string]any
	raw    string
	dups   []string
}

func parseLogs(t *testing.T, logs string) []logLine {
	t.Helper()
	var out []logLine
	sc := bufio.NewScanner(strings.NewReader(logs))
	sc.Buffer(make([]byte, 0, 1<<20), 1<<20)
	for sc.Scan() {
		l := logLine{raw: sc.Text()}
		if err := json.Unmarshal(sc.Bytes(), &l.fields); err != nil {
			t.Fatalf("a log line is not JSON: %s", sc.Text())
		}
		var err error
		if l.dups, err = repeatedKeys(sc.Bytes()); err != nil {
			t.Fatalf("%v: %s", err, sc.Text())
		}
		out = append(out, l)
	}
	return out
}

// repeatedKeys lists the keys a JSON object repeats, at any depth: encoding/json would keep
// the last silently, and zerolog writes a key once for its context and once for the event.
func repeatedKeys(line []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	var dups []string
	var value func(path string) error
	value = func(path string) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				key := fmt.Sprint(k)
				if seen[key] {
					dups = append(dups, path+key)
				}
				seen[key] = true
				if err := value(path + key + "."); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		case json.Delim('['):
			for dec.More() {
				if err := value(path); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		}
		return nil
	}
	if err := value(""); err != nil && err != io.EOF {
		return dups, err
	}
	return dups, nil
}

// An idle app (nothing moves) logs nothing at info once its first passes are done: the
// redelivery sweep and the reconciliation run every period (here every second, as the
// minute and ten minutes they are by default) and log at debug.
func TestIdleAppLogsNothingAtInfo(t *testing.T) {
	t.Parallel()
	_, logs, _ := startLogged(t, Options{Periodic: true, Configure: func(c *config.Config) {
		c.Reconcile.Interval, c.Redelivery.Interval = time.Second, time.Second
	}})
	count := func(lines []logLine, msg string) int {
		n := 0
		for _, l := range lines {
			if l.fields["message"] == msg {
				n++
			}
		}
		return n
	}
	waitFor := func(what string, ok func([]logLine) bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !ok(parseLogs(t, logs.String())) {
			if time.Now().After(deadline) {
				t.Fatalf("no %s within 30s:\n%s", what, logs.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	// The first pass adopts the board (info: it did something).
	waitFor("first reconciliation", func(ls []logLine) bool { return count(ls, "reconciliation") >= 1 })
	mark := len(parseLogs(t, logs.String()))
	waitFor("three idle periods", func(ls []logLine) bool {
		idle := ls[mark:]
		return count(idle, "reconciliation") >= 3 && count(idle, "redelivery sweep") >= 3
	})

	lines := parseLogs(t, logs.String())
	for _, l := range lines[mark:] {
		if l.fields["level"] != "debug" {
			t.Errorf("an idle app logged above debug: %s", l.raw)
		}
	}
	if n := count(lines[:mark], "ralph-gate is serving"); n != 1 {
		t.Errorf("%d startup lines before the idle periods, want 1", n)
	}
}

// The startup line says what runs, at info, and carries no secret.
func TestStartupLineNamesWhatRuns(t *testing.T) {
	t.Parallel()
	e, logs, _ := startLogged(t, Options{Seed: []byte(mcpSeed), Configure: configureMCP})
	var startup *logLine
	for _, l := range parseLogs(t, logs.String()) {
		if l.fields["message"] == "ralph-gate is serving" {
			startup = &l
		}
	}
	if startup == nil {
		t.Fatalf("no startup line:\n%s", logs.String())
	}
	want := map[string]any{
		"level": "info", "address": strings.TrimPrefix(e.sb.AppURL, "http://"), "app": "ralph-gate[bot]",
		"projects": []any{"acme/1"}, "store": "sqlite", "mcp": true, "agents": 3.0,
		"agent_names": []any{"agent-1", "agent-2", "researcher"},
	}
	for k, v := range want {
		if fmt.Sprint(startup.fields[k]) != fmt.Sprint(v) {
			t.Errorf("startup %s = %v, want %v (%s)", k, startup.fields[k], v, startup.raw)
		}
	}
	if _, ok := startup.fields["version"]; !ok {
		t.Errorf("startup line without version: %s", startup.raw)
	}
	for _, secret := range []string{agent1Token, researcherToken, e.sb.Config.MCP.Agents[1].TokenSHA256,
		e.sb.Config.GitHub.App.WebhookSecret, e.sb.Config.Store.DSN, "PRIVATE KEY"} {
		if strings.Contains(startup.raw, secret) {
			t.Errorf("the startup line carries a secret (%.12s…): %s", secret, startup.raw)
		}
	}
}

// A representative run — legal and illegal moves by several actors, a cascade, a lifecycle
// sync, a lost webhook found by the reconciler, a bad signature — logs JSON lines none of
// which repeats a key, and every decision line names the issue, item, move, actor and verdict.
func TestLogLinesHaveNoRepeatedKeys(t *testing.T) {
	t.Parallel()
	e, logs, ctx := startLogged(t, Options{Configure: reconcileSettled})
	if _, err := e.sb.App.ReconcileNow(ctx); err != nil { // first sight: adopted
		t.Fatal(err)
	}
	e.move("alice", 5, "Ready for Plan") // legal
	e.move("agent-1", 3, "In Progress")  // illegal: reverted, explained
	e.move("agent-2", 3, "In Review")    // illegal: another actor's comment
	e.settle()
	e.move("alice", 1, "Ready for Plan") // the epic: its children follow (cascade)
	e.settle()
	e.closeIssue("alice", 5) // lifecycle sync
	e.settle()
	e.faults(ghsim.Faults{Webhook: ghsim.WebhookFaults{DropRate: 1, Unrecorded: true}})
	e.move("agent-1", 6, "Done") // never reported: the reconciler finds it
	e.delivered()
	e.faults(ghsim.Faults{})
	time.Sleep(1500 * time.Millisecond) // past the delivery window: a sweep proves the gap
	if rep, err := e.sb.App.SweepNow(ctx); err != nil || !rep.Complete {
		t.Fatalf("sweep %+v %v: want a complete one", rep, err)
	}
	if reps, err := e.sb.App.ReconcileNow(ctx); err != nil || len(reps) != 1 || reps[0].Reverted != 1 {
		t.Fatalf("reconciliation %+v %v: want the lost move found and reverted", reps, err)
	}
	e.settle()
	e.postUnsigned()

	lines := parseLogs(t, logs.String())
	seen := map[string]int{}
	for _, l := range lines {
		if len(l.dups) > 0 {
			t.Errorf("repeated keys %v: %s", l.dups, l.raw)
		}
		msg, _ := l.fields["message"].(string)
		seen[msg]++
		if l.fields["level"] == "debug" || !decisionLine[msg] {
			continue
		}
		for _, key := range []string{"issue", "from", "to", "actor", "verdict"} {
			if _, ok := l.fields[key]; !ok {
				t.Errorf("decision line without %q: %s", key, l.raw)
			}
		}
		if l.fields["item"] == nil && l.fields["moved_item"] == nil {
			t.Errorf("decision line without an item: %s", l.raw)
		}
	}
	for _, msg := range []string{"decision", "reverted an illegal move", "automation moved an item", "drift",
		"judged a change no webhook reported", "refused a webhook with a bad signature"} {
		if seen[msg] == 0 {
			t.Errorf("the run logged no %q line: it is not representative", msg)
		}
	}
}

// A handoff through the MCP façade logs the agent once.
func TestHandoffLogLineHasNoRepeatedKeys(t *testing.T) {
	t.Parallel()
	e, logs, _ := startLogged(t, Options{Seed: []byte(mcpSeed), Configure: configureMCP})
	cs := e.agentClient(agent1Token)
	mustCall[toolspec.HandoffOutput](t, cs, toolspec.HandoffTicket, map[string]any{
		"number": 1, "command": "research", "intent": "lock", "reason": "start"})
	e.settle()
	handoffs := 0
	for _, l := range parseLogs(t, logs.String()) {
		if l.fields["message"] == "handoff" {
			handoffs++
		}
		if len(l.dups) > 0 {
			t.Errorf("repeated keys %v: %s", l.dups, l.raw)
		}
	}
	if handoffs == 0 {
		t.Fatalf("no handoff line:\n%s", logs.String())
	}
}

// decisionLine are the messages of the lines that tell a decision.
var decisionLine = map[string]bool{
	"decision": true, "reverted an illegal move": true, "judged a change no webhook reported": true,
	"drift": true, "automation moved an item": true, "judged a lifecycle move": true, "wrote a lifecycle move": true,
}

// postUnsigned posts a webhook with a wrong signature: refused, and logged as a refusal.
func (e *env) postUnsigned() {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.sb.AppURL+app.WebhookRoute, strings.NewReader(`{}`))
	req.Header.Set("X-GitHub-Event", "projects_v2_item")
	req.Header.Set("X-GitHub-Delivery", "unsigned-1")
	req.Header.Set("X-Hub-Signature-256", "sha256="+strings.Repeat("0", 64))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
}
