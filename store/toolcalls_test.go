package store

import (
	"slices"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
)

// toolCallsAt is the start of a minute the tool call tests count in.
var toolCallsAt = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

// toolCall is a call of tool by agent-1 that answered, at toolCallsAt plus d, lasting took.
func toolCall(tool string, d, took time.Duration, requests int) enforce.ToolCall {
	return enforce.ToolCall{At: toolCallsAt.Add(d), Tool: tool, Agent: "agent-1", Outcome: enforce.OutcomeOK,
		Duration: took, Requests: requests}
}

// Calls of one minute, tool, agent, outcome, rule and bucket add up; any of those differing
// keeps them apart; since counts from the start of its minute; the counts read through a
// read-only store are those written.
func TestToolCallCounts(t *testing.T) {
	refused := func(c enforce.ToolCall, outcome, rule string) enforce.ToolCall {
		c.Outcome, c.Rule = outcome, rule
		return c
	}
	tests := []struct {
		name  string
		calls []enforce.ToolCall
		since time.Time
		want  []enforce.ToolCallCount
	}{
		{
			name:  "no calls",
			since: toolCallsAt,
		},
		{
			name:  "two calls of the same minute, tool, agent, outcome, rule and bucket add up",
			calls: []enforce.ToolCall{toolCall("get_item", 5*time.Second, 3*time.Millisecond, 2), toolCall("get_item", 40*time.Second, 4*time.Millisecond, 3)},
			since: toolCallsAt,
			want:  []enforce.ToolCallCount{{Tool: "get_item", Agent: "agent-1", Outcome: enforce.OutcomeOK, Bucket: 0, Calls: 2, Requests: 5}},
		},
		{
			name:  "different buckets stay apart",
			calls: []enforce.ToolCall{toolCall("get_item", 0, 3*time.Millisecond, 1), toolCall("get_item", 0, 300*time.Millisecond, 4), toolCall("get_item", 0, 2*time.Minute, 0)},
			since: toolCallsAt,
			want: []enforce.ToolCallCount{
				{Tool: "get_item", Agent: "agent-1", Outcome: enforce.OutcomeOK, Bucket: 0, Calls: 1, Requests: 1},
				{Tool: "get_item", Agent: "agent-1", Outcome: enforce.OutcomeOK, Bucket: 6, Calls: 1, Requests: 4},
				{Tool: "get_item", Agent: "agent-1", Outcome: enforce.OutcomeOK, Bucket: len(enforce.DurationBounds()), Calls: 1},
			},
		},
		{
			name: "different tools, agents, outcomes and rules stay apart, in order",
			calls: []enforce.ToolCall{
				refused(toolCall("move_item", 0, time.Millisecond, 1), enforce.OutcomeRefused, "not-a-transition"),
				refused(toolCall("move_item", 0, time.Millisecond, 1), enforce.OutcomeRefused, "blocked"),
				refused(toolCall("move_item", 0, time.Millisecond, 0), enforce.OutcomeRateLimited, "requests"),
				toolCall("move_item", 0, time.Millisecond, 2),
				{At: toolCallsAt, Tool: "get_item", Agent: "agent-2", Outcome: enforce.OutcomeError, Duration: time.Millisecond},
				toolCall("get_item", 0, time.Millisecond, 1),
			},
			since: toolCallsAt,
			want: []enforce.ToolCallCount{
				{Tool: "get_item", Agent: "agent-1", Outcome: enforce.OutcomeOK, Calls: 1, Requests: 1},
				{Tool: "get_item", Agent: "agent-2", Outcome: enforce.OutcomeError, Calls: 1},
				{Tool: "move_item", Agent: "agent-1", Outcome: enforce.OutcomeOK, Calls: 1, Requests: 2},
				{Tool: "move_item", Agent: "agent-1", Outcome: enforce.OutcomeRateLimited, Rule: "requests", Calls: 1},
				{Tool: "move_item", Agent: "agent-1", Outcome: enforce.OutcomeRefused, Rule: "blocked", Calls: 1, Requests: 1},
				{Tool: "move_item", Agent: "agent-1", Outcome: enforce.OutcomeRefused, Rule: "not-a-transition", Calls: 1, Requests: 1},
			},
		},
		{
			name: "since excludes older minutes and counts the whole of its own",
			calls: []enforce.ToolCall{
				toolCall("get_item", -2*time.Minute, time.Millisecond, 7),
				toolCall("get_item", -time.Second, time.Millisecond, 5),
				toolCall("get_item", 10*time.Second, time.Millisecond, 1),
				toolCall("get_item", 3*time.Minute, time.Millisecond, 2),
			},
			since: toolCallsAt.Add(30 * time.Second),
			want:  []enforce.ToolCallCount{{Tool: "get_item", Agent: "agent-1", Outcome: enforce.OutcomeOK, Calls: 2, Requests: 3}},
		},
		{
			name: "a zero since counts every minute",
			calls: []enforce.ToolCall{
				toolCall("get_item", -24*time.Hour, time.Millisecond, 7),
				toolCall("get_item", 0, time.Millisecond, 1),
			},
			want: []enforce.ToolCallCount{{Tool: "get_item", Agent: "agent-1", Outcome: enforce.OutcomeOK, Calls: 2, Requests: 8}},
		},
		{
			name:  "times are counted in UTC minutes",
			calls: []enforce.ToolCall{toolCall("get_item", 0, time.Millisecond, 1), {At: toolCallsAt.Add(20 * time.Second).In(time.FixedZone("X", 5*3600+30*60)), Tool: "get_item", Agent: "agent-1", Outcome: enforce.OutcomeOK, Duration: time.Millisecond, Requests: 1}},
			since: toolCallsAt.In(time.FixedZone("Y", -7*3600)),
			want:  []enforce.ToolCallCount{{Tool: "get_item", Agent: "agent-1", Outcome: enforce.OutcomeOK, Calls: 2, Requests: 2}},
		},
	}
	forEachDriver(t, func(t *testing.T, tg target) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				ctx := t.Context()
				tg := newTarget(t, tg.driver)
				s := tg.open(t)
				for _, c := range tt.calls {
					if err := s.RecordToolCall(ctx, c); err != nil {
						t.Fatalf("RecordToolCall(%+v): %v", c, err)
					}
				}
				got, err := s.ToolCallCounts(ctx, tt.since)
				if err != nil || !slices.Equal(got, tt.want) {
					t.Errorf("ToolCallCounts = %+v, %v; want %+v", got, err, tt.want)
				}
				ro, err := OpenReadOnly(ctx, tg.driver, tg.dsn)
				if err != nil {
					t.Fatalf("OpenReadOnly: %v", err)
				}
				defer ro.Close()
				got, err = ro.ToolCallCounts(ctx, tt.since)
				if err != nil || !slices.Equal(got, tt.want) {
					t.Errorf("ToolCallCounts through a read-only store = %+v, %v; want %+v", got, err, tt.want)
				}
				if err := ro.RecordToolCall(ctx, toolCall("get_item", 0, 0, 0)); err == nil {
					t.Error("RecordToolCall through a read-only store succeeded")
				}
			})
		}
	})
}

// Pruning forgets the minutes before the one of its time, and only those.
func TestPruneToolCalls(t *testing.T) {
	minutes := []time.Duration{-10 * time.Minute, -time.Minute, 0, time.Minute}
	tests := []struct {
		name   string
		before time.Time
		wantN  int64
		kept   int // calls left, of one a minute
	}{
		{"before every minute", toolCallsAt.Add(-time.Hour), 0, 4},
		{"at the start of a minute", toolCallsAt, 2, 2},
		{"within a minute keeps it", toolCallsAt.Add(59 * time.Second), 2, 2},
		{"after every minute", toolCallsAt.Add(time.Hour), 4, 0},
		{"a zero time", time.Time{}, 0, 4},
	}
	forEachDriver(t, func(t *testing.T, tg target) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				ctx := t.Context()
				s := newTarget(t, tg.driver).open(t)
				for _, d := range minutes {
					if err := s.RecordToolCall(ctx, toolCall("get_item", d+30*time.Second, time.Millisecond, 1)); err != nil {
						t.Fatal(err)
					}
				}
				if n, err := s.PruneToolCalls(ctx, tt.before); err != nil || n != tt.wantN {
					t.Fatalf("PruneToolCalls = %d, %v; want %d", n, err, tt.wantN)
				}
				got, err := s.ToolCallCounts(ctx, time.Time{})
				if err != nil {
					t.Fatal(err)
				}
				calls := 0
				for _, c := range got {
					calls += c.Calls
				}
				if calls != tt.kept {
					t.Errorf("%d calls left (%+v), want %d", calls, got, tt.kept)
				}
				// What is left is exactly what ToolCallCounts since the same time counts.
				if !tt.before.IsZero() {
					since, err := s.ToolCallCounts(ctx, tt.before)
					if err != nil || !slices.Equal(since, got) {
						t.Errorf("counts since %v = %+v, %v; want what pruning left, %+v", tt.before, since, err, got)
					}
				}
			})
		}
	})
}

// Several replicas recording the same row at once lose no call and no request.
func TestRecordToolCallConcurrent(t *testing.T) {
	const goroutines, each = 8, 25
	forEachDriver(t, func(t *testing.T, tg target) {
		ctx := t.Context()
		replicas := []*Store{tg.open(t), tg.open(t)}
		wantRequests := 0
		for i := range goroutines {
			for j := range each {
				wantRequests += (i + j) % 3
			}
		}
		wins, _ := race(t, goroutines, func(i int) (bool, error) {
			for j := range each {
				if err := replicas[i%len(replicas)].RecordToolCall(ctx, toolCall("move_item", time.Duration(j)*time.Second, 20*time.Millisecond, (i+j)%3)); err != nil {
					return false, err
				}
			}
			return true, nil
		})
		if wins != goroutines {
			t.Fatalf("%d of %d goroutines recorded all their calls", wins, goroutines)
		}
		want := []enforce.ToolCallCount{{Tool: "move_item", Agent: "agent-1", Outcome: enforce.OutcomeOK, Bucket: 2,
			Calls: goroutines * each, Requests: wantRequests}}
		if got, err := replicas[0].ToolCallCounts(ctx, toolCallsAt); err != nil || !slices.Equal(got, want) {
			t.Errorf("ToolCallCounts = %+v, %v; want %+v", got, err, want)
		}
	})
}
