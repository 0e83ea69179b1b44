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
	"log/slog"
	"maps"
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

// DefaultMinWriteGap is the least time between two mutations of one client (one installation:
// the app keeps one Client per installation): GitHub's advice, payload.MutationGap.
const DefaultMinWriteGap = payload.MutationGap

// Client posts GraphQL documents with an authenticated HTTP client. It is safe for concurrent
// use. It never sends a request before a retry-after (or primary reset) GitHub gave it, retries
// transient failures a bounded number of times with jittered backoff, and remembers the last
// rate-limit headers so callers can budget their work. Its mutations go one at a time, each at
// least the write gap after the previous one ended (GitHub asks integrators to make mutative
// requests serially and pause between them); reads are not paced.
type Client struct {
	http *http.Client
	url  string
	now  func() time.Time
	// sleep waits d or until ctx ends (tests replace it).
	sleep    func(ctx context.Context, d time.Duration) error
	attempts int
	backoff  time.Duration
	log      *slog.Logger

	// writes is held by the mutation under way (nil: Unpaced); lastWrite (guarded by holding
	// the turn) is when the previous one ended.
	writes    *turnstile
	writeGap  time.Duration
	content   contentBudget
	lastWrite time.Time

	mu        sync.Mutex
	notBefore time.Time
	rate      payload.Rate
	hasRate   bool
	sent      int64
}

// Option configures a Client (NewClient).
type Option func(*Client)

// WithMinWriteGap sets the least time between the end of one mutation of the client and the
// start of the next (default DefaultMinWriteGap). Mutations stay one at a time whatever the
// gap; 0 (or less) only drops the pause. Production keeps GitHub's second; the sandbox, whose
// simulator is not GitHub, sets a small gap so that its suites stay fast.
func WithMinWriteGap(d time.Duration) Option {
	return func(c *Client) { c.writeGap = max(d, 0) }
}

// Unpaced lets the client's mutations go out at once, concurrently, without a pause and
// without a content budget: for a
// client that stands for a person acting in GitHub's web interface (the sandbox's and the
// benchmarks' seeded users), never for the app.
func Unpaced() Option {
	return func(c *Client) { c.writes, c.content.perMinute, c.content.perHour = nil, 0, 0 }
}

// WithLogger sets where the adapter reports what a read skipped (relatives the installation
// may not see, or that no longer exist); default slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(c *Client) {
		if l != nil {
			c.log = l
		}
	}
}

// NewClient returns a client for the GraphQL endpoint url (e.g. https://api.github.com/graphql).
func NewClient(h *http.Client, url string, opts ...Option) *Client {
	c := &Client{http: h, url: url, now: time.Now, sleep: sleepCtx, attempts: defaultAttempts, backoff: defaultBackoff,
		log: slog.Default(), writes: &turnstile{}, writeGap: DefaultMinWriteGap,
		content: contentBudget{perMinute: DefaultContentPerMinute, perHour: DefaultContentPerHour}}
	for _, o := range opts {
		o(c)
	}
	return c
}

type gqlRequest struct {
	Query     string         `json:"query"`
	Variables map[string]any `json:"variables,omitempty"`
}

// Do runs one document and decodes its data into out. Queries and idempotent mutations (a
// comment's edit) are retried on 5xx and transport errors; a document that creates content (a
// comment) is sent at most once, because a 5xx does not say whether GitHub created it, and so
// is a write of a card's value or an issue's state, which must be read again before it is sent
// again (idempotent).
//
// GitHub answers with data and errors together when part of a document failed (a node the
// installation may not see, one that no longer exists, one alias of a batch): Do then decodes
// the data that came back into out and returns the *GraphQLError (Partial, with each error's
// path and type), so the caller can use what it got and decide per node.
func (c *Client) Do(ctx context.Context, query string, vars map[string]any, out any) error {
	body, err := json.Marshal(gqlRequest{Query: query, Variables: vars})
	if err != nil {
		return fmt.Errorf("encode graphql request: %w", err)
	}
	attempts := c.attempts
	if !idempotent(query) {
		attempts = 1
	}
	mutation := isMutation(query)
	for attempt := 1; ; attempt++ {
		data, err := c.once(ctx, body, mutation)
		if out != nil && len(data) > 0 {
			if derr := json.Unmarshal(data, out); derr != nil && err == nil {
				return fmt.Errorf("decode graphql data: %w", derr)
			}
		}
		if err == nil {
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

// turnHeld marks a context whose caller holds the client's write turn (WithWriteTurn).
type turnHeld struct{}

// WithWriteTurn runs fn holding the client's write turn: what fn reads and the mutation it
// then sends happen back to back, with no other mutation of this client between them and the
// write gap kept before and after. It is how a write is guarded by a fresh read.
func (c *Client) WithWriteTurn(ctx context.Context, fn func(ctx context.Context) error) error {
	if c.writes == nil {
		return fn(ctx)
	}
	if err := c.writeTurn(ctx); err != nil {
		return err
	}
	err := fn(context.WithValue(ctx, turnHeld{}, true))
	c.writeDone(true)
	return err
}

// once sends one request, unless GitHub asked us to wait. A mutation waits for its turn
// first (writeTurn) and ends it once its answer is in, or at once when it was not sent.
func (c *Client) once(ctx context.Context, body []byte, mutation bool) (json.RawMessage, error) {
	if !mutation || c.writes == nil || ctx.Value(turnHeld{}) != nil {
		data, _, err := c.send(ctx, body)
		return data, err
	}
	if err := c.writeTurn(ctx); err != nil {
		return nil, err
	}
	data, sent, err := c.send(ctx, body)
	c.writeDone(sent)
	return data, err
}

// writeTurn waits until no other mutation of this client is under way and the write gap has
// passed since the last one ended (or ctx ends). The caller must call writeDone.
func (c *Client) writeTurn(ctx context.Context) error {
	class := classOf(ctx)
	if err := c.writes.acquire(ctx, class); err != nil {
		return err
	}
	for {
		if !c.lastWrite.IsZero() {
			if wait := c.lastWrite.Add(c.writeGap).Sub(c.now()); wait > 0 {
				if err := c.sleep(ctx, wait); err != nil {
					c.writes.release()
					return err
				}
			}
		}
		// A board write that came while this explanation waited out the gap goes first.
		yielded, err := c.writes.yield(ctx, class)
		if err != nil {
			return err
		}
		if !yielded {
			return nil
		}
	}
}

// writeDone ends a mutation's turn; sent says it reached the network (the next one then keeps
// the gap from now).
func (c *Client) writeDone(sent bool) {
	if sent {
		c.lastWrite = c.now()
	}
	c.writes.release()
}

// send sends one request unless GitHub asked us to wait; sent says it left.
func (c *Client) send(ctx context.Context, body []byte) (data json.RawMessage, sent bool, err error) {
	if wait := c.wait(); wait > 0 {
		return nil, false, &RateLimitError{RetryAfter: wait, Secondary: true, Message: "held back: GitHub asked to wait"}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, false, fmt.Errorf("build graphql request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	c.mu.Lock()
	c.sent++
	c.mu.Unlock()
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, true, ctx.Err()
		}
		var rl *RateLimitError
		if errors.As(err, &rl) { // the transport gate held the request back
			return nil, false, rl
		}
		return nil, true, &ServerError{Err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return nil, true, &ServerError{Err: fmt.Errorf("read graphql response: %w", err)}
	}
	now := c.now()
	if r, ok := payload.RateFromHeaders(resp.Header); ok {
		c.mu.Lock()
		c.rate, c.hasRate = r, true
		c.mu.Unlock()
	}
	data, err = payload.GraphQL(resp.StatusCode, resp.Header, raw, now)
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
	return data, resp.Header.Get(HeldHeader) == "", err
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

// anyIndex, at the end of a place given to skips, stands for any element of that list.
type anyIndex struct{}

// skips sorts the error of a read that came back with data. Every error must be FORBIDDEN (the
// installation may not see it: "Resource not accessible by integration") or NOT_FOUND (it no
// longer exists) at or inside one of the places the caller can do without: an object (its path)
// or any element of a list (its path, then anyIndex). skips then returns those places, keyed by
// their path ("node.subIssues.nodes.3"), for the caller to leave out and log (logSkipped). Any
// other error, or an error without data, is returned as it is; no error returns nothing.
func skips(err error, places ...[]any) (map[string]payload.FieldError, error) {
	if err == nil {
		return nil, nil
	}
	var ge *GraphQLError
	if !errors.As(err, &ge) || !ge.Partial {
		return nil, err
	}
	out := map[string]payload.FieldError{}
	for _, fe := range ge.Errors {
		key, ok := "", false
		if fe.Type == "FORBIDDEN" || fe.Type == "NOT_FOUND" {
			key, ok = placeOf(fe, places)
		}
		if !ok {
			return nil, err
		}
		out[key] = fe
	}
	return out, nil
}

// placeOf finds the place an error is at or inside, and that place's path.
func placeOf(fe payload.FieldError, places [][]any) (string, bool) {
	for _, place := range places {
		n := len(place)
		prefix := place
		if n > 0 && place[n-1] == (anyIndex{}) {
			prefix = place[:n-1]
			if len(fe.Path) < n {
				continue
			}
			if _, isIndex := fe.Path[n-1].(int); !isIndex {
				continue
			}
		}
		if fe.Under(prefix...) {
			return payload.FieldError{Path: fe.Path[:n]}.PathString(), true
		}
	}
	return "", false
}

// logSkipped reports what a read left out because GitHub did not return it.
func (c *Client) logSkipped(ctx context.Context, read string, skipped map[string]payload.FieldError) {
	if len(skipped) == 0 {
		return
	}
	list := make([]string, 0, len(skipped))
	for _, key := range slices.Sorted(maps.Keys(skipped)) {
		fe := skipped[key]
		list = append(list, fmt.Sprintf("%s (%s: %s)", key, fe.Type, fe.Message))
	}
	c.log.WarnContext(ctx, "github returned part of a read: left out what the installation may not see or what no longer exists",
		"read", read, "skipped", list)
}

// isMutation reports whether a document is a mutation (GitHub's "mutative request"): its
// operation, after any leading blanks and comments, starts with the keyword.
func isMutation(query string) bool {
	q := query
	for {
		q = strings.TrimLeft(q, " \t\r\n,\ufeff")
		if !strings.HasPrefix(q, "#") {
			break
		}
		_, rest, found := strings.Cut(q, "\n")
		if !found {
			return false
		}
		q = rest
	}
	return strings.HasPrefix(q, "mutation")
}

// idempotent reports whether Do may send the document again after a 5xx. A content-creating
// mutation may not: a retried addComment after an ambiguous 5xx could post the comment twice.
// Nor may a write of a value others change too (a field's value, an issue's state): sent
// again without reading again, it would land over a move made since the first was read. The
// caller sends it again after reading again (a guarded write: Board.writeGuarded) or leaves it
// to its walk, which reads the item anew.
func idempotent(query string) bool {
	for _, once := range []string{"addComment(", "updateProjectV2ItemFieldValue(", "clearProjectV2ItemFieldValue(", "closeIssue(", "reopenIssue("} {
		if strings.Contains(query, once) {
			return false
		}
	}
	return true
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
