package enforce

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// logBuffer collects JSON log lines from any goroutine.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines parses every line; a line that is not a JSON object, or that repeats a key, fails t.
func (b *logBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b.buf.Bytes()))
	for sc.Scan() {
		if dups, err := duplicateKeys(sc.Bytes()); err != nil || len(dups) > 0 {
			t.Errorf("log line with repeated keys %v (%v): %s", dups, err, sc.Text())
		}
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("not JSON: %s", sc.Text())
		}
		out = append(out, line)
	}
	return out
}

// duplicateKeys lists the keys a JSON object repeats, at any depth (encoding/json keeps the
// last of them silently; zerolog writes a key once per With and once per event).
func duplicateKeys(line []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	var dups []string
	var walk func(path string) error
	walk = func(path string) error {
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
				if err := walk(path + key + "."); err != nil {
					return err
				}
			}
			_, err = dec.Token() // '}'
			return err
		case json.Delim('['):
			for dec.More() {
				if err := walk(path); err != nil {
					return err
				}
			}
			_, err = dec.Token() // ']'
			return err
		}
		return nil
	}
	if err := walk(""); err != nil && err != io.EOF {
		return dups, err
	}
	return dups, nil
}

// decisionMessages are the lines that tell a decision: each names the issue, the item (the
// context's `item`, or `moved_item`), the move, its actor and the verdict.
var decisionMessages = map[string]bool{
	"decision": true, "reverted an illegal move": true, "judged a change no webhook reported": true,
	"drift": true, "automation moved an item": true, "judged a lifecycle move": true, "wrote a lifecycle move": true,
}

// jobContext is the logger a change's job gives enforce: the worker's delivery, item and
// attempt, the app's org and project (jobs.changeWorker, app.observed).
func jobContext(buf io.Writer, ch Change) context.Context {
	return zerolog.New(buf).Level(zerolog.DebugLevel).With().Str("delivery", ch.DeliveryID).Str("item", ch.ItemID).
		Int("attempt", 1).Str("org", "acme").Int("project", 1).Logger().WithContext(context.Background())
}

// Every decision line carries the issue, the item, from, to, the actor and the verdict, with
// the values of the move it tells; no line repeats a key.
func TestDecisionLinesNameTheMove(t *testing.T) {
	type want map[string]any // message plus the fields expected (numbers as JSON has them)
	tests := []struct {
		name string
		run  func(t *testing.T, buf *logBuffer) *harness
		want []want
	}{
		{
			name: "a legal move",
			run: func(t *testing.T, buf *logBuffer) *harness {
				h := newHarness(t, issueN("A", "Backlog", 1))
				ch := h.board.move("A", "alice", "Research Needed", h.now)
				mustProcess(t, h, jobContext(buf, ch), ch)
				return h
			},
			want: []want{{"message": "decision", "level": "info", "issue": 1.0, "item": "A", "from": "Backlog", "to": "Research Needed",
				"actor": "alice", "verdict": "allowed"}},
		},
		{
			name: "an illegal move",
			run: func(t *testing.T, buf *logBuffer) *harness {
				h := newHarness(t, issueN("A", "Backlog", 1))
				ch := h.board.move("A", "agent-1", "In Progress", h.now)
				mustProcess(t, h, jobContext(buf, ch), ch)
				return h
			},
			want: []want{
				{"message": "reverted an illegal move", "level": "info", "issue": 1.0, "item": "A", "from": "In Progress", "to": "Backlog",
					"actor": "agent-1", "verdict": "reverted", "rule": "transition"},
				{"message": "decision", "level": "info", "issue": 1.0, "item": "A", "from": "Backlog", "to": "In Progress",
					"actor": "agent-1", "verdict": "reverted"},
			},
		},
		{
			name: "a move whose webhook named no sender",
			run: func(t *testing.T, buf *logBuffer) *harness {
				h := newHarness(t, issueN("A", "Backlog", 1))
				ch := h.board.move("A", "", "In Progress", h.now)
				mustProcess(t, h, jobContext(buf, ch), ch)
				return h
			},
			want: []want{
				{"message": "reverted an illegal move", "issue": 1.0, "item": "A", "actor": NoSender, "verdict": "reverted"},
				{"message": "decision", "issue": 1.0, "item": "A", "actor": NoSender, "verdict": "reverted"},
			},
		},
		{
			name: "a cascade",
			run: func(t *testing.T, buf *logBuffer) *harness {
				h := newHarness(t, issueN("P", "Plan in Review", 10), issueN("C", "Backlog", 11))
				setFamily(h.board, h.boardItem("P"), h.boardItem("C"))
				h.adoptAll("P")
				h.now = h.now.Add(time.Second)
				ch := h.board.move("P", "alice", "In Progress", h.now)
				mustProcess(t, h, jobContext(buf, ch), ch)
				return h
			},
			want: []want{
				{"message": "automation moved an item", "level": "info", "issue": 11.0, "item": "P", "moved_item": "C", "from": "Backlog",
					"to": "In Progress", "actor": "ralph-gate[bot]", "verdict": "automated"},
				{"message": "decision", "issue": 10.0, "item": "P", "from": "Plan in Review", "to": "In Progress", "actor": "alice", "verdict": "allowed"},
			},
		},
		{
			name: "a drift the reconciler finds",
			run: func(t *testing.T, buf *logBuffer) *harness {
				h := newHarness(t, issueN("A", "Backlog", 1))
				h.adoptAll("A")
				driftTo(h.board, "A", "In Progress", time.Time{})
				ctx := zerolog.New(buf).Level(zerolog.DebugLevel).With().Str("periodic", "reconcile").Logger().WithContext(context.Background())
				if _, err := h.reconcileOn(ctx, h.board, h.st, ReconcileOptions{}); err != nil {
					t.Fatal(err)
				}
				return h
			},
			want: []want{
				{"message": "judged a change no webhook reported", "level": "info", "issue": 1.0, "item": "A", "from": "Backlog",
					"to": "In Progress", "actor": DriftActor, "verdict": "reverted"},
				{"message": "reverted an illegal move", "issue": 1.0, "item": "A", "from": "In Progress", "to": "Backlog",
					"actor": DriftActor, "verdict": "reverted"},
				{"message": "drift", "level": "info", "issue": 1.0, "item": "A", "from": "Backlog", "to": "In Progress",
					"actor": DriftActor, "verdict": "reverted"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			buf := &logBuffer{}
			tt.run(t, buf)
			lines := buf.lines(t)
			for _, l := range lines {
				msg, _ := l["message"].(string)
				if !decisionMessages[msg] || l["level"] == "debug" {
					continue
				}
				for _, key := range []string{"issue", "from", "to", "actor", "verdict"} {
					if _, ok := l[key]; !ok {
						t.Errorf("decision line lacks %q: %v", key, l)
					}
				}
				if l["item"] == nil && l["moved_item"] == nil {
					t.Errorf("decision line names no item: %v", l)
				}
			}
			for _, w := range tt.want {
				if !hasLine(lines, w) {
					t.Errorf("no line %v among\n%s", w, describeLines(lines))
				}
			}
		})
	}
}

func mustProcess(t *testing.T, h *harness, ctx context.Context, ch Change) Result {
	t.Helper()
	res, err := h.svc.Enforcer.ProcessChange(ctx, h.board, ch)
	if err != nil {
		t.Fatalf("ProcessChange: %v", err)
	}
	return res
}

func hasLine(lines []map[string]any, want map[string]any) bool {
	for _, l := range lines {
		match := true
		for k, v := range want {
			if l[k] != v {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

func describeLines(lines []map[string]any) string {
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "  %v\n", l)
	}
	return b.String()
}

// A reconciliation that finds every item in sync logs at debug: an idle board adds no info
// line (every ten minutes, for every project). One that adopts or finds a drift says so at
// info, with its duration in milliseconds.
func TestReconciliationLogsAtInfoOnlyWhenItActs(t *testing.T) {
	h := newHarness(t, issueN("A", "Backlog", 1), issueN("B", "In Progress", 2))
	tests := []struct {
		name  string
		setup func()
		level string
	}{
		{"first sight: adopted", func() {}, "info"},
		{"in sync", func() {}, "debug"},
		{"in sync again", func() {}, "debug"},
		{"a drift", func() { driftTo(h.board, "A", "Done", time.Time{}) }, "info"},
		{"in sync after the drift", func() {}, "debug"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.setup()
			h.now = h.now.Add(10 * time.Minute)
			buf := &logBuffer{}
			ctx := zerolog.New(buf).Level(zerolog.DebugLevel).WithContext(context.Background())
			if _, err := h.reconcileOn(ctx, h.board, h.st, ReconcileOptions{}); err != nil {
				t.Fatal(err)
			}
			var pass map[string]any
			for _, l := range buf.lines(t) {
				if l["message"] == "reconciliation" {
					pass = l
				}
				if tt.level == "debug" && l["level"] != "debug" {
					t.Errorf("an idle pass logged above debug: %v", l)
				}
			}
			if pass == nil || pass["level"] != tt.level {
				t.Fatalf("reconciliation line %v, want it at %s", pass, tt.level)
			}
			if _, ok := pass["took_ms"].(float64); !ok || pass["took"] != nil {
				t.Errorf("the pass's duration is not took_ms: %v", pass)
			}
		})
	}
}
