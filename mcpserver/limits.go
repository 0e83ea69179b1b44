package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/policy"
)

// What one agent may make the façade spend (docs/SECURITY.md "Budgets"). Every tool call may
// cost GitHub requests, from the installation's one hourly budget that enforcement's reverts
// also draw on. So: a POST carries at most a few JSON-RPC messages, each agent has its own rate
// of tool calls, and the façade calls GitHub only while more than a reserve of the budget is
// left, which it keeps for enforcement. Each refusal says how long to wait and is counted.

// Limits bound what the façade may be made to spend.
type Limits struct {
	// CallsPerMinute is each agent's sustained rate of tool calls, in bursts of up to Burst;
	// 0: no limit.
	CallsPerMinute, Burst int
	// MaxBatch is how many JSON-RPC messages one POST may carry (0: one).
	MaxBatch int
	// GitHubReserve is the share of the installation's GitHub rate limit the façade leaves to
	// enforcement: while less than it remains, tool calls that would read or write GitHub are
	// refused until the limit resets. 0: none kept.
	GitHubReserve float64
	// Refused, when set, is told of each refusal by its reason: "batch", "rate" or "budget".
	Refused func(reason string)
}

func (l Limits) refused(reason string) {
	if l.Refused != nil {
		l.Refused(reason)
	}
}

// agentRates holds each agent's token bucket.
type agentRates struct {
	mu     sync.Mutex
	perMin int
	burst  int
	byName map[string]*rate.Limiter
}

func newAgentRates(l Limits) *agentRates {
	return &agentRates{perMin: l.CallsPerMinute, burst: max(l.Burst, 1), byName: map[string]*rate.Limiter{}}
}

// take spends one call of the agent's at now; when none is left it spends nothing and returns
// how long until one is.
func (r *agentRates) take(agent string, now time.Time) (time.Duration, bool) {
	if r.perMin <= 0 {
		return 0, true
	}
	r.mu.Lock()
	lim, ok := r.byName[strings.ToLower(agent)]
	if !ok {
		lim = rate.NewLimiter(rate.Limit(float64(r.perMin)/60), r.burst)
		r.byName[strings.ToLower(agent)] = lim
	}
	r.mu.Unlock()
	res := lim.ReserveN(now, 1)
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return d, false
	}
	return 0, true
}

// limitCalls is a receiving middleware that refuses an agent's tool call beyond its rate,
// before anything else is done for it (a bad call counts too).
func (s *server) limitCalls() mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			call, ok := req.(*mcp.CallToolRequest)
			if !ok || call.Params == nil {
				return next(ctx, method, req)
			}
			agent := s.callerOf(req)
			if wait, ok := s.rates.take(agent, s.now()); !ok {
				s.opts.Limits.refused("rate")
				res := &mcp.CallToolResult{}
				res.SetError(retryAfter(fmt.Sprintf("%s: %s has called more than %d tools a minute", call.Params.Name, agent, s.opts.Limits.CallsPerMinute),
					fmt.Sprintf("each agent may make %d tool calls a minute, in bursts of up to %d (config mcp.limits)", s.opts.Limits.CallsPerMinute, s.rates.burst), wait).Because(policy.RuleRate))
				return res, nil
			}
			return next(ctx, method, req)
		}
	}
}

// board is the installation's board on owner, unless the façade may not spend GitHub's budget
// now: while less than the reserve kept for enforcement remains, a refusal saying when the
// limit resets.
func (s *server) board(ctx context.Context, owner string) (enforce.Board, error) {
	b, err := s.opts.Board(ctx, owner)
	if err != nil {
		return nil, err
	}
	reserve := s.opts.Limits.GitHubReserve
	rl, ok := b.RateLimit()
	now := s.now()
	if reserve <= 0 || !ok || rl.Limit <= 0 || float64(rl.Remaining) >= reserve*float64(rl.Limit) || !now.Before(rl.Reset) {
		return b, nil
	}
	s.opts.Limits.refused("budget")
	return nil, retryAfter(fmt.Sprintf("The façade did not call GitHub for %s: %d of the installation's %d requests an hour are left", owner, rl.Remaining, rl.Limit),
		fmt.Sprintf("the last %.0f%% are kept for enforcing the workflow (config mcp.limits.github_reserve)", reserve*100), rl.Reset.Sub(now)).Because(policy.RuleBudget)
}

// retryAfter is a refusal that asks to retry after wait (whole seconds, at least one).
func retryAfter(tried, why string, wait time.Duration) *policy.Refusal {
	secs := int(math.Ceil(wait.Seconds()))
	return &policy.Refusal{Tried: tried, Why: why, Recovery: fmt.Sprintf("retry after %d s (Retry-After: %d)", max(secs, 1), max(secs, 1)),
		Options: []string{}}
}

func (s *server) now() time.Time {
	if s.opts.Now != nil {
		return s.opts.Now()
	}
	return time.Now()
}

// limitBatches refuses a POST carrying more JSON-RPC messages than max (a batch): each may be
// a tool call, and hundreds in one request would spend the installation's budget at once.
func limitBatches(next http.Handler, l Limits) http.Handler {
	most := max(l.MaxBatch, 1)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			http.Error(w, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit), http.StatusRequestEntityTooLarge)
			return
		case err != nil:
			http.Error(w, "failed to read body", http.StatusBadRequest)
			return
		}
		if n := batchLen(body); n > most {
			l.refused("batch")
			http.Error(w, fmt.Sprintf("a JSON-RPC batch may carry at most %d messages, this one carries %d: send the calls one per request", most, n),
				http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

// batchLen is how many messages a body carries: a JSON array's elements, else one.
func batchLen(body []byte) int {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '[' {
		return 1
	}
	var msgs []json.RawMessage
	if json.Unmarshal(body, &msgs) != nil {
		return 1 // malformed: the SDK says so
	}
	return len(msgs)
}

// maxBody bounds a request's body.
const maxBody = 1 << 20
