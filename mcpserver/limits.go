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

// limitCalls is a receiving middleware that holds every message of an agent to its rates,
// before anything else is done for it (a bad call counts too): a tool call to the agent's
// calls a minute (answered as a refused tool call, saying when to retry), any other method
// (tools/list, initialize, ping…) to otherMethodsPerCall times as many (answered as a JSON-RPC
// error saying when to retry). No method goes unbounded.
func (s *server) limitCalls() mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			agent := s.callerOf(req)
			call, ok := req.(*mcp.CallToolRequest)
			if !ok || call.Params == nil {
				if wait, ok := s.others.take(agent, s.now()); !ok {
					s.opts.Limits.refused("rate")
					return nil, retryAfter(fmt.Sprintf("%s: %s has sent more than %d messages a minute besides its tool calls", method, agent, s.others.perMin),
						fmt.Sprintf("each agent may send %d messages a minute besides its %d tool calls, in bursts of up to %d (config mcp.limits, %d× the tool calls)",
							s.others.perMin, s.opts.Limits.CallsPerMinute, s.others.burst, otherMethodsPerCall), wait).Because(policy.RuleRate)
				}
				return next(ctx, method, req)
			}
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

// otherMethodsPerCall is how many messages that are not tool calls (a session's initialize,
// tools/list, pings) an agent may send for each tool call its rate allows.
const otherMethodsPerCall = 4

// newOtherRates is each agent's bucket of messages that are not tool calls.
func newOtherRates(l Limits) *agentRates {
	return &agentRates{perMin: l.CallsPerMinute * otherMethodsPerCall, burst: max(l.Burst, 1) * otherMethodsPerCall, byName: map[string]*rate.Limiter{}}
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

// limitBatches refuses, before anything runs, a POST whose body is not exactly one JSON value
// (trailing data, or not JSON at all: 400), and one carrying more JSON-RPC messages than max (a
// batch). Its messages are counted as the SDK will parse them: the one value, or each element
// of the one array. Each may be a tool call, and each costs GitHub requests.
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
		n, err := messageCount(body)
		if err != nil {
			l.refused("malformed")
			http.Error(w, "the body must be one JSON-RPC message or one batch (a JSON array of them), and nothing else: "+err.Error(), http.StatusBadRequest)
			return
		}
		if n > most {
			l.refused("batch")
			http.Error(w, fmt.Sprintf("a JSON-RPC batch may carry at most %d messages, this one carries %d: send the calls one per request", most, n),
				http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

// messageCount is how many JSON-RPC messages a body carries: the elements of its one JSON
// array, else one. A body that is not exactly one JSON value (empty, malformed, or followed by
// anything but white space) is an error: what the SDK would make of it is not ours to guess.
func messageCount(body []byte) (int, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		return 0, fmt.Errorf("not JSON (%v)", err)
	}
	if rest := body[dec.InputOffset():]; len(bytes.TrimSpace(rest)) > 0 {
		return 0, fmt.Errorf("%d bytes of trailing data after the first JSON value", len(bytes.TrimSpace(rest)))
	}
	if v = bytes.TrimSpace(v); len(v) == 0 || v[0] != '[' {
		return 1, nil
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal(v, &msgs); err != nil {
		return 0, fmt.Errorf("not a JSON array (%v)", err)
	}
	return len(msgs), nil
}

// maxBody bounds a request's body.
const maxBody = 1 << 20
