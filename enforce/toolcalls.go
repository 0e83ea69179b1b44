package enforce

import "time"

// What the façade keeps of its tool calls (docs/OPERATIONS.md "The façade"): each call is
// added to the counts of its minute, tool, agent, outcome and rule, with its duration in one
// of a fixed set of buckets, so the store holds a bounded number of rows however many calls
// are made, and every replica's calls add up in one place.

// Outcomes of a tool call.
const (
	OutcomeOK          = "ok"           // the tool answered
	OutcomeRefused     = "refused"      // a refusal the agent can act on (its rule says which)
	OutcomeError       = "error"        // ralph-gate could not complete the call
	OutcomeRateLimited = "rate_limited" // refused for a limit on what an agent may spend
)

// ToolCall is one tool call, as it is counted.
type ToolCall struct {
	At       time.Time
	Tool     string
	Agent    string
	Outcome  string
	Rule     string // the refusal's rule ("" unless refused or rate limited)
	Duration time.Duration
	Requests int // GitHub requests made while the call ran
}

// Minute is the minute a call is counted in.
func (c ToolCall) Minute() time.Time { return c.At.UTC().Truncate(time.Minute) }

// Bucket is the index of the duration bucket the call falls in: the first bound it does not
// exceed, or len(DurationBounds()) when it exceeds them all.
func (c ToolCall) Bucket() int {
	bounds := DurationBounds()
	for i, b := range bounds {
		if c.Duration <= b {
			return i
		}
	}
	return len(bounds)
}

// DurationBounds are the upper bounds of the duration buckets tool calls are counted in; a
// last bucket holds the calls longer than all of them.
func DurationBounds() []time.Duration {
	return []time.Duration{5 * time.Millisecond, 10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
		100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2500 * time.Millisecond,
		5 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute}
}

// ToolCallCount is the calls of one tool, agent, outcome and rule since a time whose duration
// fell in one bucket, and the GitHub requests they made.
type ToolCallCount struct {
	Tool, Agent, Outcome, Rule string
	Bucket                     int
	Calls, Requests            int
}
