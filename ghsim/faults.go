package ghsim

import (
	"errors"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Faults are injected into /api/ requests and webhook deliveries. The zero value injects nothing.
// Random draws come from a generator seeded by Options.RandomSeed, so a run is reproducible for a
// given order of requests.
type Faults struct {
	LatencyMS int `json:"latency_ms"`
	JitterMS  int `json:"jitter_ms"`
	// ErrorRate answers that share of requests with a 502 and GitHub's "Server Error" body.
	ErrorRate float64 `json:"error_rate"`
	// SecondaryRateLimitRate answers that share with a secondary rate limit: GitHub's message
	// and a retry-after of RetryAfterS (default 1). REST answers 403; GraphQL answers either of
	// the shapes GitHub documents ("the response status will be 200 or 403"), drawn at random
	// unless SecondaryRateLimitStatus pins one: 403 with {"message"}, or 200 with a
	// RATE_LIMITED error. Either way the primary budget is not spent (x-ratelimit-remaining
	// stays above 0).
	SecondaryRateLimitRate float64 `json:"secondary_rate_limit_rate"`
	RetryAfterS            int     `json:"retry_after_s"`
	// SecondaryRateLimitStatus pins the status of GraphQL's secondary limits: 200 or 403 (0:
	// either, at random).
	SecondaryRateLimitStatus int `json:"secondary_rate_limit_status,omitempty"`
	// NoRetryAfter answers secondary limits without retry-after, as GitHub may: the client must
	// then wait "at least one minute", and ghsim refuses (and flags as early) any request of
	// that identity within the minute.
	NoRetryAfter bool `json:"no_retry_after,omitempty"`
	// PrimaryExhausted answers as if the primary budget were spent: REST 403 with
	// x-ratelimit-remaining 0, GraphQL 200 with a RATE_LIMITED error.
	PrimaryExhausted bool `json:"primary_exhausted"`
	// Operations, when set, limits the API faults above to these operations (as in the request
	// log, e.g. "graphql:updateProjectV2ItemFieldValue"; a trailing "*" matches a prefix).
	Operations []string      `json:"operations,omitempty"`
	Webhook    WebhookFaults `json:"webhook"`
}

// WebhookFaults perturb deliveries: dropped ones are recorded as failed (status code 0) and never
// reach the receiver; duplicated ones arrive twice with one X-GitHub-Delivery; with Reorder the
// dispatcher gathers the deliveries queued within max(DelayMS, 50) ms (at most 8) and sends them
// newest first;
// DelayMS delays every delivery.
type WebhookFaults struct {
	DropRate      float64 `json:"drop_rate"`
	DuplicateRate float64 `json:"duplicate_rate"`
	Reorder       bool    `json:"reorder"`
	DelayMS       int     `json:"delay_ms"`
	// Unrecorded keeps dropped deliveries out of the deliveries list too, as for an event
	// GitHub never attempted to deliver (or one past its three days): nothing can redeliver it.
	Unrecorded bool `json:"unrecorded,omitempty"`
}

// Validate refuses rates outside [0,1] and negative durations.
func (f Faults) Validate() error {
	var errs []error
	rate := func(name string, v float64) {
		if v < 0 || v > 1 || math.IsNaN(v) {
			errs = append(errs, errors.New(name+": must be between 0 and 1"))
		}
	}
	rate("error_rate", f.ErrorRate)
	rate("secondary_rate_limit_rate", f.SecondaryRateLimitRate)
	rate("webhook.drop_rate", f.Webhook.DropRate)
	rate("webhook.duplicate_rate", f.Webhook.DuplicateRate)
	if f.LatencyMS < 0 || f.JitterMS < 0 || f.RetryAfterS < 0 || f.Webhook.DelayMS < 0 {
		errs = append(errs, errors.New("latency_ms, jitter_ms, retry_after_s and webhook.delay_ms must not be negative"))
	}
	if s := f.SecondaryRateLimitStatus; s != 0 && s != http.StatusOK && s != http.StatusForbidden {
		errs = append(errs, errors.New("secondary_rate_limit_status: 200, 403 or 0 (either)"))
	}
	return errors.Join(errs...)
}

func (f Faults) matches(ops []string) bool {
	if len(f.Operations) == 0 {
		return true
	}
	for _, want := range f.Operations {
		for _, op := range ops {
			if op == want || (strings.HasSuffix(want, "*") && strings.HasPrefix(op, strings.TrimSuffix(want, "*"))) {
				return true
			}
		}
	}
	return false
}

type faultKind string

const (
	faultNone      faultKind = ""
	faultError     faultKind = "error"
	faultSecondary faultKind = "secondary_rate_limit"
	faultPrimary   faultKind = "primary_rate_limit"
)

type faultDecision struct {
	latency    time.Duration
	kind       faultKind
	retryAfter int // seconds; 0: the answer carries no retry-after
	early      bool
	// status is a secondary limit's HTTP status for GraphQL (200 or 403).
	status int
}

// secondaryWithoutRetryAfter is how long an identity stays limited after a secondary limit
// that named no retry-after: GitHub's "wait for at least one minute before retrying"
// (docs.github.com/en/graphql/overview/rate-limits-and-query-limits-for-the-graphql-api).
const secondaryWithoutRetryAfter = time.Minute

// secondaryMessage is GitHub's secondary rate limit message.
const secondaryMessage = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID GHSIM."

// writeSecondary answers a secondary rate limit: for REST 403 (or 429 when d.status says so)
// with GitHub's body, for GraphQL 403 likewise or 200 with a RATE_LIMITED error (d.status), each
// with retry-after unless none was drawn.
func writeSecondary(w http.ResponseWriter, isGraphQL bool, d faultDecision) {
	if d.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(d.retryAfter))
	}
	if isGraphQL && d.status == http.StatusOK {
		writeJSON(w, http.StatusOK, map[string]any{"errors": []any{map[string]any{
			"type": "RATE_LIMITED", "message": secondaryMessage}}})
		return
	}
	status := http.StatusForbidden
	if !isGraphQL && d.status == http.StatusTooManyRequests {
		status = d.status
	}
	writeJSON(w, status, map[string]any{
		"message":           secondaryMessage,
		"documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"})
}

type faultState struct {
	mu             sync.Mutex
	f              Faults
	rng            *rand.Rand
	secondaryUntil map[string]time.Time
}

func newFaultState(seed uint64) *faultState {
	return &faultState{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), secondaryUntil: map[string]time.Time{}}
}

func (s *faultState) get() Faults {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.f
}

func (s *faultState) set(f Faults) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.f = f
}

func (s *faultState) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.f = Faults{}
	s.secondaryUntil = map[string]time.Time{}
}

// decide draws the fault for one request by identity at now.
func (s *faultState) decide(ops []string, identity string, now time.Time) faultDecision {
	s.mu.Lock()
	defer s.mu.Unlock()
	var d faultDecision
	graphql := len(ops) > 0 && ops[0] == "graphql:request"
	if until, ok := s.secondaryUntil[identity]; ok && now.Before(until) {
		d.early = true
		d.kind = faultSecondary
		d.status = s.secondaryStatus(graphql)
		if !s.f.NoRetryAfter {
			d.retryAfter = int(math.Ceil(until.Sub(now).Seconds()))
		}
		return d
	}
	f := s.f
	if !f.matches(ops) {
		return d
	}
	d.latency = time.Duration(f.LatencyMS) * time.Millisecond
	if f.JitterMS > 0 {
		d.latency += time.Duration(s.rng.IntN(f.JitterMS+1)) * time.Millisecond
	}
	switch {
	case f.PrimaryExhausted:
		d.kind = faultPrimary
	case f.ErrorRate > 0 && s.rng.Float64() < f.ErrorRate:
		d.kind = faultError
	case f.SecondaryRateLimitRate > 0 && s.rng.Float64() < f.SecondaryRateLimitRate:
		d.kind = faultSecondary
		d.status = s.secondaryStatus(graphql)
		wait := secondaryWithoutRetryAfter
		if !f.NoRetryAfter {
			d.retryAfter = max(f.RetryAfterS, 1)
			wait = time.Duration(d.retryAfter) * time.Second
		}
		s.secondaryUntil[identity] = now.Add(wait)
	}
	return d
}

// secondaryStatus is the status of a secondary limit: for GraphQL the pinned one, or 200 or 403
// at random (both are GitHub's); for REST 403. Callers hold mu.
func (s *faultState) secondaryStatus(graphql bool) int {
	if !graphql {
		return http.StatusForbidden
	}
	switch s.f.SecondaryRateLimitStatus {
	case http.StatusOK, http.StatusForbidden:
		return s.f.SecondaryRateLimitStatus
	}
	if s.rng.IntN(2) == 0 {
		return http.StatusOK
	}
	return http.StatusForbidden
}

// webhookDraw decides drop and duplicate for one delivery.
func (s *faultState) webhookDraw() (wf WebhookFaults, drop, dup bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	wf = s.f.Webhook
	drop = wf.DropRate > 0 && s.rng.Float64() < wf.DropRate
	dup = !drop && wf.DuplicateRate > 0 && s.rng.Float64() < wf.DuplicateRate
	return wf, drop, dup
}
