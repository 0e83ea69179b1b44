package health_test

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/health"
)

// The façade section sums the calls of the last hour and of the last day from the store's
// per-minute counts, per tool and per agent, most calls first, with refusals by rule and the
// bucket bounds of p50 and p99.
func TestFacadeSection(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	call := func(ago time.Duration, tool, agent, outcome, rule string, took time.Duration, reqs int) {
		t.Helper()
		if err := st.RecordToolCall(ctx, enforce.ToolCall{At: now.Add(-ago), Tool: tool, Agent: agent, Outcome: outcome, Rule: rule, Duration: took, Requests: reqs}); err != nil {
			t.Fatal(err)
		}
	}
	for range 8 {
		call(5*time.Minute, "get_workflow_state", "agent-1", enforce.OutcomeOK, "", 20*time.Millisecond, 1)
	}
	call(5*time.Minute, "get_workflow_state", "agent-1", enforce.OutcomeOK, "", 2*time.Minute, 1) // past every bucket
	call(10*time.Minute, "handoff_ticket", "agent-2", enforce.OutcomeRefused, "transition", 40*time.Millisecond, 2)
	call(10*time.Minute, "handoff_ticket", "agent-2", enforce.OutcomeRefused, "transition", 40*time.Millisecond, 2)
	call(20*time.Minute, "handoff_ticket", "agent-1", enforce.OutcomeRateLimited, "rate", time.Millisecond, 0)
	call(30*time.Minute, "board_health", "agent-2", enforce.OutcomeError, "", 300*time.Millisecond, 0)
	call(3*time.Hour, "handoff_ticket", "agent-2", enforce.OutcomeOK, "", 900*time.Millisecond, 3) // the day only
	call(25*time.Hour, "handoff_ticket", "agent-2", enforce.OutcomeOK, "", time.Second, 3)         // neither
	rep, err := health.New(source{Store: st}, options).Report(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	hour, day := rep.Facade.Hour, rep.Facade.Day
	if hour.Calls != 13 || day.Calls != 14 || !hour.Since.Equal(now.Add(-time.Hour)) || !day.Since.Equal(now.Add(-24*time.Hour)) {
		t.Fatalf("hour %d calls since %v, day %d since %v; want 13 and 14 since an hour and a day before", hour.Calls, hour.Since, day.Calls, day.Since)
	}
	for _, tc := range []struct {
		name string
		rows []health.Usage
		want []health.Usage
	}{
		{"hour by tool", hour.Tools, []health.Usage{
			{Name: "get_workflow_state", Calls: 9, OK: 9, RefusedBy: map[string]int{}, GitHubRequests: 9, P50Ms: 25, P99Ms: -1},
			{Name: "handoff_ticket", Calls: 3, Refused: 2, RateLimited: 1, RefusedBy: map[string]int{"transition": 2, "rate": 1}, GitHubRequests: 4, P50Ms: 50, P99Ms: 50},
			{Name: "board_health", Calls: 1, Errors: 1, RefusedBy: map[string]int{}, P50Ms: 500, P99Ms: 500},
		}},
		{"hour by agent", hour.Agents, []health.Usage{
			{Name: "agent-1", Calls: 10, OK: 9, RateLimited: 1, RefusedBy: map[string]int{"rate": 1}, GitHubRequests: 9, P50Ms: 25, P99Ms: -1},
			{Name: "agent-2", Calls: 3, Refused: 2, Errors: 1, RefusedBy: map[string]int{"transition": 2}, GitHubRequests: 4, P50Ms: 50, P99Ms: 500},
		}},
		{"day by tool", day.Tools, []health.Usage{
			{Name: "get_workflow_state", Calls: 9, OK: 9, RefusedBy: map[string]int{}, GitHubRequests: 9, P50Ms: 25, P99Ms: -1},
			{Name: "handoff_ticket", Calls: 4, OK: 1, Refused: 2, RateLimited: 1, RefusedBy: map[string]int{"transition": 2, "rate": 1}, GitHubRequests: 7, P50Ms: 50, P99Ms: 1000},
			{Name: "board_health", Calls: 1, Errors: 1, RefusedBy: map[string]int{}, P50Ms: 500, P99Ms: 500},
		}},
	} {
		if len(tc.rows) != len(tc.want) {
			t.Errorf("%s: %d rows %+v, want %d", tc.name, len(tc.rows), tc.rows, len(tc.want))
			continue
		}
		for i, w := range tc.want {
			g := tc.rows[i]
			if g.Name != w.Name || g.Calls != w.Calls || g.OK != w.OK || g.Refused != w.Refused || g.Errors != w.Errors ||
				g.RateLimited != w.RateLimited || g.GitHubRequests != w.GitHubRequests || g.P50Ms != w.P50Ms || g.P99Ms != w.P99Ms ||
				!maps.Equal(g.RefusedBy, w.RefusedBy) {
				t.Errorf("%s row %d:\n got %+v\nwant %+v", tc.name, i, g, w)
			}
		}
	}
}

// Quantiles are bucket bounds: the bound of the bucket holding the call of that rank.
func TestFacadeQuantiles(t *testing.T) {
	counts := func(buckets ...int) []enforce.ToolCallCount {
		var out []enforce.ToolCallCount
		for b, n := range buckets {
			if n > 0 {
				out = append(out, enforce.ToolCallCount{Tool: "t", Agent: "a", Outcome: enforce.OutcomeOK, Bucket: b, Calls: n})
			}
		}
		return out
	}
	last := len(enforce.DurationBounds())
	over := make([]int, last+1)
	over[last] = 1
	for _, tc := range []struct {
		name     string
		counts   []enforce.ToolCallCount
		p50, p99 float64
	}{
		{"no call", nil, 0, 0},
		{"one call in the first bucket", counts(1), 5, 5},
		{"half fast, half slow", counts(50, 0, 0, 0, 0, 0, 0, 50), 5, 1000},
		{"one slow call in a hundred", counts(99, 0, 0, 0, 0, 0, 0, 1), 5, 5},
		{"two slow calls in a hundred", counts(98, 0, 0, 0, 0, 0, 0, 2), 5, 1000},
		{"past the largest bound", counts(over...), -1, -1},
	} {
		w := health.Window(now, tc.counts)
		var p50, p99 float64
		if len(w.Tools) > 0 {
			p50, p99 = w.Tools[0].P50Ms, w.Tools[0].P99Ms
		}
		if p50 != tc.p50 || p99 != tc.p99 {
			t.Errorf("%s: p50 %v p99 %v, want %v and %v", tc.name, p50, p99, tc.p50, tc.p99)
		}
	}
}

func TestFacadeText(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		ms   float64
		want string
	}{
		{0, "–"}, // no call
		{5, "≤ 5 ms"},
		{25, "≤ 25 ms"},
		{2500, "≤ 2500 ms"},
		{60000, "≤ 60000 ms"},
		{-1, "> 1 min"},
	} {
		if got := health.QuantileText(tt.ms); got != tt.want {
			t.Errorf("health.QuantileText(%v) = %q, want %q", tt.ms, got, tt.want)
		}
	}
	for _, tt := range []struct {
		name string
		m    map[string]int
		want string
	}{
		{"none", nil, ""},
		{"empty", map[string]int{}, ""},
		{"one", map[string]int{"rate": 1}, "rate 1"},
		{"most first", map[string]int{"arguments": 1, "transition": 3}, "transition 3, arguments 1"},
		{"ties by name", map[string]int{"budget": 2, "arguments": 2, "transition": 5}, "transition 5, arguments 2, budget 2"},
	} {
		if got := health.ByCount(tt.m); got != tt.want {
			t.Errorf("%s: ByCount(%v) = %q, want %q", tt.name, tt.m, got, tt.want)
		}
	}
}
