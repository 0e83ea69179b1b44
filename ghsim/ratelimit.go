package ghsim

import (
	"net/http"
	"strconv"
	"sync"
	"time"
)

// rateLimiter keeps GitHub's primary budget per identity (app, installation, user) and resource
// ("core" for REST, "graphql"), in hourly windows.
type rateLimiter struct {
	limit int
	now   func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	used  int
	reset time.Time
}

// rateSnapshot is what the x-ratelimit-* headers and GraphQL's rateLimit report.
type rateSnapshot struct {
	Limit     int
	Remaining int
	Used      int
	Reset     time.Time
	Resource  string
}

func newRateLimiter(limit int, now func() time.Time) *rateLimiter {
	return &rateLimiter{limit: limit, now: now, buckets: map[string]*bucket{}}
}

func (r *rateLimiter) limitFor(key string) int {
	if key == "anonymous" {
		return 60
	}
	return r.limit
}

// take spends cost points; exhausted reports a request the budget cannot pay for (not spent).
func (r *rateLimiter) take(key, resource string, cost int) (s rateSnapshot, exhausted bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	b := r.buckets[key+"|"+resource]
	if b == nil || !now.Before(b.reset) {
		b = &bucket{reset: now.Add(time.Hour).Truncate(time.Second)}
		r.buckets[key+"|"+resource] = b
	}
	limit := r.limitFor(key)
	if b.used+cost > limit {
		exhausted = true
	} else {
		b.used += cost
	}
	return rateSnapshot{Limit: limit, Remaining: limit - b.used, Used: b.used, Reset: b.reset, Resource: resource}, exhausted
}

// peek reports the budget without spending it (a request refused before it is served).
func (r *rateLimiter) peek(key, resource string) rateSnapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	limit := r.limitFor(key)
	b := r.buckets[key+"|"+resource]
	if b == nil || !now.Before(b.reset) {
		return rateSnapshot{Limit: limit, Remaining: limit, Reset: now.Add(time.Hour).Truncate(time.Second), Resource: resource}
	}
	return rateSnapshot{Limit: limit, Remaining: limit - b.used, Used: b.used, Reset: b.reset, Resource: resource}
}

func (r *rateLimiter) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buckets = map[string]*bucket{}
}

func (s rateSnapshot) setHeaders(h http.Header) {
	h.Set("X-Ratelimit-Limit", strconv.Itoa(s.Limit))
	h.Set("X-Ratelimit-Remaining", strconv.Itoa(s.Remaining))
	h.Set("X-Ratelimit-Used", strconv.Itoa(s.Used))
	h.Set("X-Ratelimit-Reset", strconv.FormatInt(s.Reset.Unix(), 10))
	h.Set("X-Ratelimit-Resource", s.Resource)
}
