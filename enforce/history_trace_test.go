package enforce

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Trace tests: a scenario written as a text script — the board, the moves with their faults —
// and the effects it must have: each card's final value and every audit entry, in order. The
// script runs as a random history does (newSimWorld), so it must also agree with the oracle.
// RALPH_GATE_UPDATE_TRACES=1 rewrites each file's effects from what the app did (read the diff).
//
// A script, one line each ("#" starts a comment):
//
//	items: Backlog, In Progress          the items' first states (PVTI_0, PVTI_1, …)
//	parents: -, 0                        each item's parent (an index), "-" for none
//	estimates: S, -                      the Estimate of each item ("-": unset); requirements on
//	seed: 7 · crash: 0.1 · races: 0.2 · together: true · mode: warn
//	push: 5s wide mode=evaluate          a push of the organization's policy file
//	+1s move 0 alice Research Needed     after the previous line: a card move of item 0 by alice
//	+0s move 0 agent-1 Done drop dup late=2s nofrom
//	+1s handoff 0 agent-2 review Ready for Plan    (command, then to_state)
//	+1s claim - agent-1 research Research Needed   (the state it claims in)
//	+1s advance 0 agent-1 Plan in Review · close 0 bob · reopen 0 bob · merge 0 bob
//	+1s edit 1 alice M                   (the item's Estimate; "-" clears it)
//	----
//	board PVTI_0 Research Needed         the effects
//	audit PVTI_0 d00 Backlog→Research Needed allowed alice

const tracesDir = "testdata/traces"

func TestTraces(t *testing.T) {
	m, actors := simMachine(t)
	files, err := filepath.Glob(filepath.Join(tracesDir, "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no trace in %s: %v", tracesDir, err)
	}
	update := os.Getenv("RALPH_GATE_UPDATE_TRACES") != ""
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			script, want, _ := strings.Cut(string(data), "\n----\n")
			h, err := parseTrace(script)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			w := newSimWorld(m, actors, h)
			if problems := w.run(); len(problems) > 0 {
				t.Errorf("diverges from the oracle:\n%s", strings.Join(problems, "\n"))
			}
			got := traceEffects(t, w)
			if update {
				if err := os.WriteFile(f, []byte(strings.TrimRight(script, "\n")+"\n----\n"+got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if got != want {
				t.Errorf("effects differ (RALPH_GATE_UPDATE_TRACES=1 rewrites them):\n--- got\n%s--- want\n%s", got, want)
			}
		})
	}
}

// traceEffects lists each item's final value and every audit entry, one a line.
func traceEffects(t *testing.T, w *simWorld) string {
	t.Helper()
	var b strings.Builder
	for i := range w.h.Items {
		id := simItemID(i)
		it, err := w.board.item(id)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "board %s %s\n", id, orNoState(it.State))
	}
	es, err := w.st.entries("")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		fmt.Fprintf(&b, "audit %s %s %s→%s %s %s\n", e.ItemID, orDash(e.DeliveryID), orNoState(e.FromState), orNoState(e.ToState), e.Verdict, e.Actor)
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// parseTrace reads a trace script into a history; every problem names its line.
func parseTrace(script string) (simHistory, error) {
	h := simHistory{Seed: 1}
	for n, line := range strings.Split(script, "\n") {
		line = strings.TrimSpace(line)
		if i := strings.Index(line, "#"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		if line == "" {
			continue
		}
		var err error
		if strings.HasPrefix(line, "+") {
			err = h.parseMove(line)
		} else {
			err = h.parseHeader(line)
		}
		if err != nil {
			return h, fmt.Errorf("line %d: %q: %w", n+1, line, err)
		}
	}
	if len(h.Items) == 0 {
		return h, fmt.Errorf(`no "items:" line`)
	}
	return h, nil
}

func (h *simHistory) parseHeader(line string) error {
	key, val, ok := strings.Cut(line, ":")
	if !ok {
		return fmt.Errorf("want key: value, or a move starting with +")
	}
	val = strings.TrimSpace(val)
	list := func() []string {
		var out []string
		for _, f := range strings.Split(val, ",") {
			out = append(out, strings.TrimSpace(f))
		}
		return out
	}
	var err error
	switch key {
	case "items":
		h.Items = list()
	case "parents":
		for _, p := range list() {
			n := -1
			if p != "-" {
				if n, err = strconv.Atoi(p); err != nil {
					return fmt.Errorf("parent %q is not an index", p)
				}
			}
			h.Parents = append(h.Parents, n)
		}
	case "estimates":
		for _, e := range list() {
			h.Estimates = append(h.Estimates, strings.TrimPrefix(e, "-"))
		}
	case "seed":
		h.Seed, err = strconv.ParseUint(val, 10, 64)
	case "crash":
		h.Crash, err = strconv.ParseFloat(val, 64)
	case "races":
		h.Races, err = strconv.ParseFloat(val, 64)
	case "together":
		h.Together, err = strconv.ParseBool(val)
	case "mode":
		h.Mode = Mode(val)
	case "push":
		return h.parsePush(strings.Fields(val))
	default:
		return fmt.Errorf("unknown key %q (items, parents, estimates, seed, crash, races, together, mode, push)", key)
	}
	return err
}

func (h *simHistory) parsePush(fs []string) error {
	if len(fs) == 0 {
		return fmt.Errorf("push: want a time")
	}
	at, err := time.ParseDuration(fs[0])
	if err != nil {
		return err
	}
	p := simPush{At: at}
	for _, f := range fs[1:] {
		switch {
		case f == "wide":
			p.Wide = true
		case strings.HasPrefix(f, "mode="):
			p.Mode = Mode(strings.TrimPrefix(f, "mode="))
		default:
			return fmt.Errorf("push: unknown %q (wide, mode=…)", f)
		}
	}
	h.Pushes = append(h.Pushes, p)
	return nil
}

// traceKinds maps a script's verbs to simMove kinds, and says whether a command precedes the
// target and whether there is a target.
var traceKinds = map[string]struct {
	kind            string
	command, target bool
}{
	"move": {"", false, true}, "close": {simClose, false, false}, "reopen": {simReopen, false, false},
	"merge": {simMerge, false, false}, "handoff": {simHandoff, true, true}, "claim": {simClaim, true, true},
	"advance": {simAdvance, false, true}, "edit": {simEdit, false, true},
}

func (h *simHistory) parseMove(line string) error {
	fs := strings.Fields(line)
	if len(fs) < 4 {
		return fmt.Errorf("want +after kind item actor …")
	}
	after, err := time.ParseDuration(fs[0][1:])
	if err != nil {
		return err
	}
	k, ok := traceKinds[fs[1]]
	if !ok {
		return fmt.Errorf("unknown kind %q", fs[1])
	}
	mv := simMove{After: after, Kind: k.kind, Actor: fs[3], Latency: 10 * time.Millisecond}
	if fs[2] != "-" {
		if mv.Item, err = strconv.Atoi(fs[2]); err != nil || mv.Item < 0 || mv.Item >= len(h.Items) {
			return fmt.Errorf("item %q is not an index of items", fs[2])
		}
	}
	rest, err := mv.takeFaults(fs[4:])
	if err != nil {
		return err
	}
	if k.command {
		if len(rest) == 0 {
			return fmt.Errorf("%s: want a command", fs[1])
		}
		mv.Command, rest = rest[0], rest[1:]
	}
	if k.target {
		mv.To = strings.Join(rest, " ")
		if mv.To == "" {
			return fmt.Errorf("%s: want a target", fs[1])
		}
		if k.kind == simEdit && mv.To == "-" {
			mv.To = ""
		}
	} else if len(rest) > 0 {
		return fmt.Errorf("%s takes no target: %q", fs[1], strings.Join(rest, " "))
	}
	h.Moves = append(h.Moves, mv)
	return nil
}

// takeFaults sets the faults written at the end of a move's line and returns the words before
// them.
func (mv *simMove) takeFaults(words []string) ([]string, error) {
	for ; len(words) > 0; words = words[:len(words)-1] {
		switch f := words[len(words)-1]; {
		case f == "drop":
			mv.Drop = true
		case f == "dup":
			mv.Dup = true
		case f == "nofrom":
			mv.NoFrom = true
		case strings.HasPrefix(f, "late="):
			d, err := time.ParseDuration(strings.TrimPrefix(f, "late="))
			if err != nil {
				return nil, err
			}
			mv.Latency = d
		default:
			return words, nil
		}
	}
	return words, nil
}

// TestParseTraceRefusesBadLines: a script's mistakes are named with their line.
func TestParseTraceRefusesBadLines(t *testing.T) {
	for _, tt := range []struct{ script, want string }{
		{"# nothing", `no "items:" line`},
		{"+1s move 0 alice Done", `item "0" is not an index of items`},
		{"items: Backlog\n+1s fly 0 alice Done", `line 2: "+1s fly 0 alice Done": unknown kind "fly"`},
		{"items: Backlog\n+1s move 3 alice Done", "item \"3\" is not an index of items"},
		{"items: Backlog\n+1s close 0 bob Done", "close takes no target"},
		{"items: Backlog\n+1s handoff 0 agent-1", "handoff: want a command"},
		{"items: Backlog\n+1s move 0", "want +after kind item actor"},
		{"items: Backlog\n+1s handoff 0 agent-1 review", "handoff: want a target"},
		{"items: Backlog\ncolour: red", `unknown key "colour"`},
		{"items: Backlog\n+1s move 0 alice Done late=soon", "late=soon"},
	} {
		if _, err := parseTrace(tt.script); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("parseTrace(%q) = %v, want an error with %q", tt.script, err, tt.want)
		}
	}
}
