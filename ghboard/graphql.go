// Package ghboard is the GitHub adapter: it implements enforce.Board with GitHub's GraphQL API
// (one document per operation, listed in documents.go so the simulator's schema test can
// validate every one of them). It decides nothing.
package ghboard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/payload"
)

// maxResponse bounds how much of a GraphQL response is read.
const maxResponse = 32 << 20

// The errors a GitHub call returns; they live in package payload, where the decoding is
// fuzzed without the rest of the app.
type (
	// RateLimitError is GitHub asking the caller to wait (secondary limit with retry-after, or
	// an exhausted primary budget until its reset). It implements RetryAfterDuration, so a job
	// is snoozed, never retried early.
	RateLimitError = payload.RateLimitError
	// ServerError is a 5xx or transport failure worth retrying.
	ServerError = payload.ServerError
	// GraphQLError is a GraphQL error that retrying will not fix.
	GraphQLError = payload.GraphQLError
)

// Retry policy for transient failures (5xx, transport errors) inside one call. Rate limits are
// never retried here: the caller gets a RateLimitError and the job is snoozed past retry-after.
const (
	defaultAttempts = 3
	defaultBackoff  = 200 * time.Millisecond
	maxBackoff      = 2 * time.Second
)

// Client posts GraphQL documents with an authenticated HTTP client. It is safe for concurrent
// use. It never sends a request before a retry-after (or primary reset) GitHub gave it, retries
// transient failures a bounded number of times with jittered backoff, and remembers the last
// rate-limit headers so callers can budget their work.
type Client struct {
	http *http.Client
	url  string
	now  func() time.Time
	// sleep waits d or until ctx ends (tests replace it).
	sleep    func(ctx context.Context, d time.Duration) error
	attempts int
	backoff  time.Duration

	mu        sync.Mutex
	notBefore time.Time
	rate      payload.Rate
	hasRate   bool
	sent      int64
}

// NewClient returns a client for the GraphQL endpoint url (e.g. https://api.github.com/graphql).
func NewClient(h *http.Client, url string) *Client {
	return &Client{http: h, url: url, now: time.Now, sleep: sleepCtx, attempts: defaultAttempts, backoff: defaultBackoff}
}

type gqlRequest struct {
	Query     string         `json:"query"`
	Variables map[string]any `json:"variables,omitempty"`
}

// Do runs one document and decodes its data into out. Queries and idempotent mutations are
// retried on 5xx and transport errors; a document that creates content (a comment) is sent at
// most once, because a 5xx does not say whether GitHub created it.
func (c *Client) Do(ctx context.Context, query string, vars map[string]any, out any) error {
	body, err := json.Marshal(gqlRequest{Query: query, Variables: vars})
	if err != nil {
		return fmt.Errorf("encode graphql request: %w", err)
	}
	attempts := c.attempts
	if !idempotent(query) {
		attempts = 1
	}
	for attempt := 1; ; attempt++ {
		data, err := c.once(ctx, body)
		if err == nil {
			if out != nil && len(data) > 0 {
				if err := json.Unmarshal(data, out); err != nil {
					return fmt.Errorf("decode graphql data: %w", err)
				}
			}
			return nil
		}
		var se *ServerError
		if !errors.As(err, &se) || attempt >= attempts {
			return err
		}
		if err := c.sleep(ctx, c.jitter(attempt)); err != nil {
			return err
		}
	}
}

// jitter is "full jitter" exponential backoff: uniform in [d/2, d) with d doubling per attempt.
func (c *Client) jitter(attempt int) time.Duration {
	d := min(c.backoff<<(attempt-1), maxBackoff)
	return d/2 + rand.N(d/2+1)
}

// once sends one request, unless GitHub asked us to wait.
func (c *Client) once(ctx context.Context, body []byte) (json.RawMessage, error) {
	if wait := c.wait(); wait > 0 {
		return nil, &RateLimitError{RetryAfter: wait, Secondary: true, Message: "held back: GitHub asked to wait"}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("build graphql request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	c.mu.Lock()
	c.sent++
	c.mu.Unlock()
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var rl *RateLimitError
		if errors.As(err, &rl) { // the transport gate held the request back
			return nil, rl
		}
		return nil, &ServerError{Err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return nil, &ServerError{Err: fmt.Errorf("read graphql response: %w", err)}
	}
	now := c.now()
	if r, ok := payload.RateFromHeaders(resp.Header); ok {
		c.mu.Lock()
		c.rate, c.hasRate = r, true
		c.mu.Unlock()
	}
	data, err := payload.GraphQL(resp.StatusCode, resp.Header, raw, now)
	var rl *RateLimitError
	if errors.As(err, &rl) {
		c.holdUntil(now.Add(rl.RetryAfter))
	}
	var ge *GraphQLError
	if errors.As(err, &ge) && slices.Contains(ge.Types, "NOT_FOUND") {
		// GitHub names what does not exist (or what the app may not see): enforcement's
		// not-found, so a caller tells it from a failure without knowing GraphQL.
		err = fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return data, err
}

// wait is how long until GitHub allows the next request; 0 when it does now.
func (c *Client) wait() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.notBefore.Sub(c.now())
}

func (c *Client) holdUntil(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.notBefore) {
		c.notBefore = t
	}
}

// RateLimit is GitHub's GraphQL budget as last reported; ok is false before the first answer.
func (c *Client) RateLimit() (enforce.RateLimit, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return enforce.RateLimit{Limit: c.rate.Limit, Remaining: c.rate.Remaining, Used: c.rate.Used, Reset: c.rate.Reset}, c.hasRate
}

// Sent counts the requests this client has sent (held-back ones excluded).
func (c *Client) Sent() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sent
}

// idempotent reports whether sending the document twice has the effect of sending it once.
// Only content-creating mutations are not: a retried addComment after an ambiguous 5xx could
// post the comment twice.
func idempotent(query string) bool {
	return !strings.Contains(query, "addComment(")
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// IsRetryable reports whether err is worth retrying later.
func IsRetryable(err error) bool {
	var se *ServerError
	var rl *RateLimitError
	return errors.As(err, &se) || errors.As(err, &rl)
}
