package store

// Tool calls of the MCP façade, counted per minute (enforce.ToolCall): each call adds to the
// row of its minute, tool, agent, outcome, rule and duration bucket, so the table stays small
// however many calls are made, and the calls of every replica add up in it.

import (
	"context"
	"fmt"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
)

// RecordToolCall counts one call, and the GitHub requests it made, in the row of its minute,
// tool, agent, outcome, rule and duration bucket. A call whose time is zero is counted now.
// It is one upsert, so replicas recording the same row at once each add their own call.
func (s *Store) RecordToolCall(ctx context.Context, c enforce.ToolCall) error {
	c.At = nowUTC(c.At)
	if _, err := s.exec(ctx, `INSERT INTO tool_calls (minute, tool, agent, outcome, rule, bucket, calls, requests)
		VALUES (?, ?, ?, ?, ?, ?, 1, ?)
		ON CONFLICT (minute, tool, agent, outcome, rule, bucket) DO UPDATE SET
			calls = tool_calls.calls + excluded.calls, requests = tool_calls.requests + excluded.requests`,
		s.t(c.Minute()), c.Tool, c.Agent, c.Outcome, c.Rule, c.Bucket(), c.Requests); err != nil {
		return fmt.Errorf("store: record tool call %s: %w", c.Tool, err)
	}
	return nil
}

// ToolCallCounts sums the calls counted since the minute of since (the whole of that minute
// included; a zero since counts every minute kept) per tool, agent, outcome, rule and duration
// bucket, ordered by those. It only reads, so it works on a store opened with OpenReadOnly.
func (s *Store) ToolCallCounts(ctx context.Context, since time.Time) ([]enforce.ToolCallCount, error) {
	// SUM of a BIGINT is a NUMERIC on PostgreSQL: cast back so both drivers scan an integer.
	const (
		head = `SELECT tool, agent, outcome, rule, bucket, CAST(SUM(calls) AS BIGINT), CAST(SUM(requests) AS BIGINT) FROM tool_calls`
		tail = ` GROUP BY tool, agent, outcome, rule, bucket ORDER BY tool, agent, outcome, rule, bucket`
	)
	query, args := head+tail, []any(nil)
	if !since.IsZero() {
		query, args = head+` WHERE minute >= ?`+tail, []any{s.t(since.UTC().Truncate(time.Minute))}
	}
	rows, err := s.query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: tool call counts: %w", err)
	}
	defer rows.Close()
	var out []enforce.ToolCallCount
	for rows.Next() {
		var c enforce.ToolCallCount
		if err := rows.Scan(&c.Tool, &c.Agent, &c.Outcome, &c.Rule, &c.Bucket, &c.Calls, &c.Requests); err != nil {
			return nil, fmt.Errorf("store: tool call counts: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: tool call counts: %w", err)
	}
	return out, nil
}

// PruneToolCalls forgets the minutes before the minute of before (that minute itself is kept,
// as ToolCallCounts since before counts it; a zero before forgets nothing) and returns how
// many rows it deleted: the counts are kept for a while, not forever.
func (s *Store) PruneToolCalls(ctx context.Context, before time.Time) (int64, error) {
	res, err := s.exec(ctx, `DELETE FROM tool_calls WHERE minute < ?`, s.t(before.UTC().Truncate(time.Minute)))
	return pruned(res, err, "tool calls")
}
