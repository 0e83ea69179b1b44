package main

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/health"
	"github.com/ralph-gate/ralph-gate/store"
)

// facadeStore is a store holding the counts of calls, and a configuration file naming it and
// no project.
func facadeStore(t *testing.T, calls []enforce.ToolCall) (dsn, cfgFile string) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	dsn = filepath.Join(dir, "ralph-gate.db")
	st, err := store.Open(ctx, store.DriverSQLite, dsn)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range calls {
		if err := st.RecordToolCall(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	cfgFile = filepath.Join(dir, "ralph-gate.yml")
	if err := os.WriteFile(cfgFile, []byte("store: {driver: sqlite, dsn: "+dsn+"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dsn, cfgFile
}

// facadeCalls are the tool calls of the tests: 11 in the last hour, 7 more earlier in the day,
// and one older than a day, which neither window counts.
func facadeCalls(now time.Time) []enforce.ToolCall {
	var out []enforce.ToolCall
	add := func(n int, c enforce.ToolCall) {
		for range n {
			out = append(out, c)
		}
	}
	recent, earlier := now.Add(-10*time.Minute), now.Add(-3*time.Hour)
	add(3, enforce.ToolCall{At: recent, Tool: "handoff_ticket", Agent: "agent-1", Outcome: enforce.OutcomeRefused, Rule: "transition", Duration: 20 * time.Millisecond, Requests: 2})
	add(1, enforce.ToolCall{At: recent, Tool: "handoff_ticket", Agent: "agent-1", Outcome: enforce.OutcomeRefused, Rule: "arguments", Duration: 20 * time.Millisecond})
	add(4, enforce.ToolCall{At: recent, Tool: "handoff_ticket", Agent: "agent-1", Outcome: enforce.OutcomeOK, Duration: 8 * time.Millisecond, Requests: 1})
	add(1, enforce.ToolCall{At: recent, Tool: "claim_ticket", Agent: "agent-2", Outcome: enforce.OutcomeRateLimited, Rule: "rate", Duration: 3 * time.Millisecond})
	add(2, enforce.ToolCall{At: recent, Tool: "claim_ticket", Agent: "agent-2", Outcome: enforce.OutcomeError, Duration: 2 * time.Minute, Requests: 1})
	add(5, enforce.ToolCall{At: earlier, Tool: "list_tickets", Agent: "agent-3", Outcome: enforce.OutcomeOK, Duration: 90 * time.Millisecond, Requests: 1})
	add(2, enforce.ToolCall{At: earlier, Tool: "handoff_ticket", Agent: "agent-1", Outcome: enforce.OutcomeRefused, Rule: "transition", Duration: 20 * time.Millisecond})
	add(1, enforce.ToolCall{At: now.Add(-30 * time.Hour), Tool: "ancient_tool", Agent: "agent-9", Outcome: enforce.OutcomeOK})
	return out
}

// textWindow is one window of `report --facade`'s text: its heading's parts and its tables,
// each row split into its columns.
type textWindow struct {
	Name   string
	Since  time.Time
	Calls  int
	Tables [][][]string // header row first
	Lines  []string     // the lines under the heading that are no table
}

var (
	facadeHeading = regexp.MustCompile(`^Façade, (last hour|last day) \(since (\S+)\): (\d+) tool calls$`)
	columnGap     = regexp.MustCompile(`\s{2,}`)
)

// readFacadeText reads the text of `report --facade`.
func readFacadeText(t *testing.T, out string) []textWindow {
	t.Helper()
	var ws []textWindow
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if m := facadeHeading.FindStringSubmatch(line); m != nil {
			since, err := time.Parse(time.RFC3339, m[2])
			if err != nil {
				t.Fatalf("since in %q: %v", line, err)
			}
			n, _ := strconv.Atoi(m[3])
			ws = append(ws, textWindow{Name: m[1], Since: since, Calls: n})
			continue
		}
		if line == "" {
			continue
		}
		if len(ws) == 0 {
			t.Fatalf("a line before the first window's heading: %q\n%s", line, out)
		}
		w := &ws[len(ws)-1]
		cells := columnGap.Split(strings.TrimSpace(line), -1)
		switch {
		case cells[0] == "TOOL" || cells[0] == "AGENT":
			w.Tables = append(w.Tables, [][]string{cells})
		case len(w.Tables) > 0:
			w.Tables[len(w.Tables)-1] = append(w.Tables[len(w.Tables)-1], cells)
		default:
			w.Lines = append(w.Lines, strings.TrimSpace(line))
		}
	}
	return ws
}

func facadeHeader(by string) []string {
	return []string{by, "CALLS", "OK", "REFUSED", "ERRORS", "RATE LIMITED", "GITHUB", "P50", "P99", "REFUSED BY RULE"}
}

// `ralph-gate report --facade` prints, for the last hour and the last day, a table of the
// calls per tool and one per agent, from the store alone; the configuration needs no project.
func TestReportFacadeText(t *testing.T) {
	now := time.Now()
	dsn, cfgFile := facadeStore(t, facadeCalls(now))
	hour := [][]string{
		{"handoff_ticket", "8", "4", "4", "0", "0", "10", "≤ 10 ms", "≤ 25 ms", "transition 3, arguments 1"},
		{"claim_ticket", "3", "0", "0", "2", "1", "2", "> 1 min", "> 1 min", "rate 1"},
	}
	hourAgents := [][]string{
		{"agent-1", "8", "4", "4", "0", "0", "10", "≤ 10 ms", "≤ 25 ms", "transition 3, arguments 1"},
		{"agent-2", "3", "0", "0", "2", "1", "2", "> 1 min", "> 1 min", "rate 1"},
	}
	day := [][]string{
		{"handoff_ticket", "10", "4", "6", "0", "0", "10", "≤ 25 ms", "≤ 25 ms", "transition 5, arguments 1"},
		{"list_tickets", "5", "5", "0", "0", "0", "5", "≤ 100 ms", "≤ 100 ms", "-"},
		{"claim_ticket", "3", "0", "0", "2", "1", "2", "> 1 min", "> 1 min", "rate 1"},
	}
	dayAgents := [][]string{
		{"agent-1", "10", "4", "6", "0", "0", "10", "≤ 25 ms", "≤ 25 ms", "transition 5, arguments 1"},
		{"agent-3", "5", "5", "0", "0", "0", "5", "≤ 100 ms", "≤ 100 ms", "-"},
		{"agent-2", "3", "0", "0", "2", "1", "2", "> 1 min", "> 1 min", "rate 1"},
	}
	want := []textWindow{
		{Name: "last hour", Calls: 11, Tables: [][][]string{
			append([][]string{facadeHeader("TOOL")}, hour...), append([][]string{facadeHeader("AGENT")}, hourAgents...)}},
		{Name: "last day", Calls: 18, Tables: [][][]string{
			append([][]string{facadeHeader("TOOL")}, day...), append([][]string{facadeHeader("AGENT")}, dayAgents...)}},
	}
	for _, args := range [][]string{
		{"--config", cfgFile}, // a configuration naming the store and no project
		{"--dsn", dsn},        // the embedded configuration, which names no project
	} {
		t.Run(strings.Join(args[:1], ""), func(t *testing.T) {
			code, out, errOut := runCLI(t, "", append([]string{"report", "--facade"}, args...)...)
			if code != exitOK || errOut != "" {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
			got := readFacadeText(t, out)
			if len(got) != 2 {
				t.Fatalf("want the last hour and the last day:\n%s", out)
			}
			for i, span := range []time.Duration{time.Hour, 24 * time.Hour} {
				if d := now.Add(-span).Sub(got[i].Since); d < 0 || d > 2*time.Minute {
					t.Errorf("%s: since %s, want the minute of %s", got[i].Name, got[i].Since, now.Add(-span))
				}
				got[i].Since = time.Time{}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("report --facade reads\n%+v\nwant\n%+v\n%s", got, want, out)
			}
			if strings.Contains(out, "ancient_tool") || strings.Contains(out, "agent-9") {
				t.Errorf("a call older than a day is counted:\n%s", out)
			}
		})
	}
	// The plain report still wants a project.
	if code, _, errOut := runCLI(t, "", "report", "--config", cfgFile); code != exitError || !strings.Contains(errOut, "names no project") {
		t.Errorf("report without --facade and no project: exit %d: %s", code, errOut)
	}
}

// `report --facade --json` prints the report's façade part, the same counts.
func TestReportFacadeJSON(t *testing.T) {
	now := time.Now()
	_, cfgFile := facadeStore(t, facadeCalls(now))
	code, out, errOut := runCLI(t, "", "report", "--facade", "--json", "--config", cfgFile)
	if code != exitOK || errOut != "" {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &keys); err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(maps.Keys(keys)); !reflect.DeepEqual(got, []string{"day", "hour"}) {
		t.Errorf("the JSON's keys are %v, want the façade's hour and day alone", got)
	}
	var f health.Facade
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	none := map[string]int{}
	handoffHour := health.Usage{Calls: 8, OK: 4, Refused: 4, RefusedBy: map[string]int{"transition": 3, "arguments": 1}, GitHubRequests: 10, P50Ms: 10, P99Ms: 25}
	claim := health.Usage{Calls: 3, Errors: 2, RateLimited: 1, RefusedBy: map[string]int{"rate": 1}, GitHubRequests: 2, P50Ms: -1, P99Ms: -1}
	handoffDay := health.Usage{Calls: 10, OK: 4, Refused: 6, RefusedBy: map[string]int{"transition": 5, "arguments": 1}, GitHubRequests: 10, P50Ms: 25, P99Ms: 25}
	list := health.Usage{Calls: 5, OK: 5, RefusedBy: none, GitHubRequests: 5, P50Ms: 100, P99Ms: 100}
	named := func(name string, u health.Usage) health.Usage { u.Name = name; return u }
	want := health.Facade{
		Hour: health.FacadeWindow{Since: f.Hour.Since, Calls: 11,
			Tools:  []health.Usage{named("handoff_ticket", handoffHour), named("claim_ticket", claim)},
			Agents: []health.Usage{named("agent-1", handoffHour), named("agent-2", claim)}},
		Day: health.FacadeWindow{Since: f.Day.Since, Calls: 18,
			Tools:  []health.Usage{named("handoff_ticket", handoffDay), named("list_tickets", list), named("claim_ticket", claim)},
			Agents: []health.Usage{named("agent-1", handoffDay), named("agent-3", list), named("agent-2", claim)}},
	}
	if !reflect.DeepEqual(f, want) {
		a, _ := json.MarshalIndent(f, "", "  ")
		b, _ := json.MarshalIndent(want, "", "  ")
		t.Errorf("report --facade --json:\n%s\nwant\n%s", a, b)
	}
	if d := now.Add(-time.Hour).Sub(f.Hour.Since); d < 0 || d > 2*time.Minute {
		t.Errorf("the hour since %s, want the minute of %s", f.Hour.Since, now.Add(-time.Hour))
	}
	if d := now.Add(-24 * time.Hour).Sub(f.Day.Since); d < 0 || d > 2*time.Minute {
		t.Errorf("the day since %s, want the minute of %s", f.Day.Since, now.Add(-24*time.Hour))
	}
}

// With no call recorded, each window says no agent called a tool, and the JSON's lists are
// empty, not null.
func TestReportFacadeNoCalls(t *testing.T) {
	_, cfgFile := facadeStore(t, nil)
	code, out, errOut := runCLI(t, "", "report", "--facade", "--config", cfgFile)
	if code != exitOK || errOut != "" {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	got := readFacadeText(t, out)
	for i := range got {
		got[i].Since = time.Time{}
	}
	want := []textWindow{
		{Name: "last hour", Lines: []string{"no agent called a tool"}},
		{Name: "last day", Lines: []string{"no agent called a tool"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("report --facade reads\n%+v\nwant\n%+v\n%s", got, want, out)
	}
	code, out, errOut = runCLI(t, "", "report", "--facade", "--json", "--config", cfgFile)
	if code != exitOK || errOut != "" {
		t.Fatalf("--json: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if strings.Contains(out, "null") || strings.Count(out, `"tools": []`) != 2 || strings.Count(out, `"agents": []`) != 2 {
		t.Errorf("--json with no call:\n%s", out)
	}
}

// --facade covers every agent's calls, so --project with it is a usage error naming both.
func TestReportFacadeWithProject(t *testing.T) {
	dsn, _ := facadeStore(t, nil)
	cfgFile := filepath.Join(t.TempDir(), "ralph-gate.yml")
	if err := os.WriteFile(cfgFile, []byte("projects: [{owner: acme, number: 1}]\nstore: {driver: sqlite, dsn: "+dsn+"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--config", cfgFile, "--facade", "--project", "acme/1"},
		{"--facade", "--json", "--project", "acme/1", "--dsn", dsn},
	} {
		code, out, errOut := runCLI(t, "", append([]string{"report"}, args...)...)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args, code, exitUsage, out, errOut)
		}
		if out != "" || strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "ralph-gate report: ") ||
			!strings.Contains(errOut, "--facade") || !strings.Contains(errOut, "--project") {
			t.Errorf("%v: want one line on stderr naming --facade and --project:\nstdout: %q\nstderr: %q", args, out, errOut)
		}
	}
}

func TestReportFacadeHelpers(t *testing.T) {
	for _, tt := range []struct {
		ms   float64
		want string
	}{
		{5, "≤ 5 ms"},
		{25, "≤ 25 ms"},
		{2500, "≤ 2500 ms"},
		{60000, "≤ 60000 ms"},
		{-1, "> 1 min"},
		{0, "–"},
	} {
		if got := health.QuantileText(tt.ms); got != tt.want {
			t.Errorf("quantileText(%v) = %q, want %q", tt.ms, got, tt.want)
		}
	}
	for _, tt := range []struct {
		m    map[string]int
		want string
	}{
		{nil, "-"},
		{map[string]int{"rate": 1}, "rate 1"},
		{map[string]int{"arguments": 1, "transition": 3}, "transition 3, arguments 1"},
		{map[string]int{"budget": 2, "arguments": 2, "transition": 5}, "transition 5, arguments 2, budget 2"},
	} {
		if got := byRule(tt.m); got != tt.want {
			t.Errorf("byRule(%v) = %q, want %q", tt.m, got, tt.want)
		}
	}
}
