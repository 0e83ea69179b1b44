package health

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
)

// The façade section: what agents did through the MCP façade over the last hour and day, per
// tool and per agent, summed from the store's per-minute counts (docs/OPERATIONS.md "The
// façade"), so every replica's calls are in it and a restart loses none.

// Facade is the façade's use over the last hour and the last day.
type Facade struct {
	Hour FacadeWindow `json:"hour"`
	Day  FacadeWindow `json:"day"`
}

// FacadeWindow is the façade's use since a time, per tool and per agent, most calls first.
type FacadeWindow struct {
	Since  time.Time `json:"since"`
	Calls  int       `json:"calls"`
	Tools  []Usage   `json:"tools"`
	Agents []Usage   `json:"agents"`
}

// Usage is what the calls of one tool, or of one agent, came to.
type Usage struct {
	Name        string `json:"name"`
	Calls       int    `json:"calls"`
	OK          int    `json:"ok"`
	Refused     int    `json:"refused"`
	Errors      int    `json:"errors"`
	RateLimited int    `json:"rateLimited"`
	// RefusedBy counts the refused and rate-limited calls by their rule.
	RefusedBy      map[string]int `json:"refusedBy"`
	GitHubRequests int            `json:"githubRequests"`
	// P50Ms and P99Ms: half, and 99 in 100, of the calls took at most this many milliseconds
	// (the bound of the duration bucket the quantile falls in); -1 when it is beyond the
	// largest bucket (a minute).
	P50Ms float64 `json:"p50Ms"`
	P99Ms float64 `json:"p99Ms"`

	buckets []int
}

// facade reads the façade section at now.
func (r *Reader) facade(ctx context.Context, now time.Time) (Facade, error) {
	var f Facade
	for _, w := range []struct {
		into *FacadeWindow
		span time.Duration
	}{{&f.Hour, time.Hour}, {&f.Day, 24 * time.Hour}} {
		since := now.Add(-w.span).Truncate(time.Minute)
		counts, err := r.src.ToolCallCounts(ctx, since)
		if err != nil {
			return Facade{}, fmt.Errorf("tool calls: %w", err)
		}
		*w.into = Window(since, counts)
	}
	return f, nil
}

// Window sums counts into the use of each tool and each agent.
func Window(since time.Time, counts []enforce.ToolCallCount) FacadeWindow {
	w := FacadeWindow{Since: since.UTC(), Tools: []Usage{}, Agents: []Usage{}}
	tools, agents := map[string]*Usage{}, map[string]*Usage{}
	nb := len(enforce.DurationBounds()) + 1
	add := func(m map[string]*Usage, name string, c enforce.ToolCallCount) {
		u, ok := m[name]
		if !ok {
			u = &Usage{Name: name, RefusedBy: map[string]int{}, buckets: make([]int, nb)}
			m[name] = u
		}
		u.Calls += c.Calls
		u.GitHubRequests += c.Requests
		switch c.Outcome {
		case enforce.OutcomeOK:
			u.OK += c.Calls
		case enforce.OutcomeRefused:
			u.Refused += c.Calls
		case enforce.OutcomeError:
			u.Errors += c.Calls
		case enforce.OutcomeRateLimited:
			u.RateLimited += c.Calls
		}
		if c.Rule != "" {
			u.RefusedBy[c.Rule] += c.Calls
		}
		if c.Bucket >= 0 && c.Bucket < nb {
			u.buckets[c.Bucket] += c.Calls
		}
	}
	for _, c := range counts {
		w.Calls += c.Calls
		add(tools, c.Tool, c)
		add(agents, c.Agent, c)
	}
	w.Tools, w.Agents = usages(tools), usages(agents)
	return w
}

// usages lists m most calls first, then by name, with each one's quantiles.
func usages(m map[string]*Usage) []Usage {
	out := make([]Usage, 0, len(m))
	for _, u := range m {
		u.P50Ms, u.P99Ms = quantileMs(u.buckets, 0.50), quantileMs(u.buckets, 0.99)
		out = append(out, *u)
	}
	slices.SortFunc(out, func(a, b Usage) int {
		return cmp.Or(cmp.Compare(b.Calls, a.Calls), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// quantileMs is the bound, in milliseconds, of the bucket holding the q-quantile of the calls
// counted in buckets: 0 when there are none, -1 past the largest bound.
func quantileMs(buckets []int, q float64) float64 {
	total := 0
	for _, n := range buckets {
		total += n
	}
	if total == 0 {
		return 0
	}
	rank := int(math.Ceil(q * float64(total)))
	bounds := enforce.DurationBounds()
	seen := 0
	for i, n := range buckets {
		seen += n
		if seen >= rank {
			if i < len(bounds) {
				return float64(bounds[i]) / float64(time.Millisecond)
			}
			return -1
		}
	}
	return -1
}

// QuantileText shows a duration quantile's bound as the page and the report do: "≤ 25 ms",
// "> 1 min" past the largest bucket, "–" with no call.
func QuantileText(ms float64) string {
	switch {
	case ms < 0:
		return "> 1 min"
	case ms == 0:
		return "–"
	}
	return "≤ " + strconv.FormatFloat(ms, 'f', -1, 64) + " ms"
}

// ByCount lists counts by name, most first, then by name: "transition 3, arguments 1"; ""
// for none.
func ByCount(m map[string]int) string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(m[b], m[a]), cmp.Compare(a, b)) })
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %d", n, m[n])
	}
	return strings.Join(parts, ", ")
}
