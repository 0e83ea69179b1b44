package ghboard

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ralph-gate/ralph-gate/payload"
)

// Gate is an http.RoundTripper for every request the app sends to GitHub (REST, GraphQL, token
// refreshes, the app's own JWT calls). GitHub's retry-after and primary reset apply to the
// identity that made the request, so Gate remembers them per identity (the app's JWT, each
// installation token) and holds back any request of that identity until they have passed: it
// answers 429 with the remaining Retry-After itself, without touching the network, so no
// caller — whatever client library it uses — can retry early.
//
// Use it as go-githubapp's base transport (githubapp.WithTransport): it then sits below the
// installation-token transport and sees the Authorization header.
type Gate struct {
	next http.RoundTripper
	now  func() time.Time

	pace *pacer

	mu        sync.Mutex
	notBefore map[string]time.Time
	held      int64
	waits     []Wait
	inFlight  map[string]int
}

// Wait is one instruction from GitHub to wait: when the app learnt it, until when it holds,
// whose it is ("app" for the JWT, "token" for an installation or user token) and how many other
// requests of that identity were already on their way then (GitHub may count those as early:
// they left before the answer came).
type Wait struct {
	Learnt, Until time.Time
	Identity      string
	InFlight      int
}

// maxWaits bounds the waits Gate remembers for inspection.
const maxWaits = 1000

// HeldHeader marks a 429 that Gate answered itself.
const HeldHeader = "X-Ralph-Gate-Held"

// NewGate wraps next (nil: http.DefaultTransport).
func NewGate(next http.RoundTripper) *Gate {
	if next == nil {
		next = http.DefaultTransport
	}
	return &Gate{next: next, now: time.Now, pace: newPacer(), notBefore: map[string]time.Time{}, inFlight: map[string]int{}}
}

// RoundTrip implements http.RoundTripper.
func (g *Gate) RoundTrip(r *http.Request) (*http.Response, error) {
	key := identity(r)
	now := g.now()
	g.mu.Lock()
	until := g.notBefore[key]
	if now.Before(until) {
		g.held++
		g.mu.Unlock()
		if r.Body != nil {
			r.Body.Close()
		}
		return held(r, until.Sub(now)), nil
	}
	g.mu.Unlock()
	// Below GitHub's secondary limits: wait for room rather than be told to (pacer.go).
	release, err := g.pace.acquire(r.Context(), key, r, g.now)
	if err != nil {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, err
	}
	defer release()
	g.mu.Lock()
	if now := g.now(); now.Before(g.notBefore[key]) {
		// GitHub asked to wait while this request waited for room.
		until := g.notBefore[key]
		g.held++
		g.mu.Unlock()
		if r.Body != nil {
			r.Body.Close()
		}
		return held(r, until.Sub(now)), nil
	}
	g.inFlight[key]++
	g.mu.Unlock()

	resp, err := g.next.RoundTrip(r)
	var t time.Time
	var wait bool
	if err == nil {
		// Outside the lock: it may read the start of the body.
		t, wait = waitUntil(r, resp, g.now())
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inFlight[key]--
	if err != nil {
		return resp, err
	}
	if wait {
		if t.After(g.notBefore[key]) {
			g.notBefore[key] = t
		}
		if len(g.waits) < maxWaits {
			kind := "token"
			if strings.HasSuffix(key, "|app") {
				kind = "app"
			}
			g.waits = append(g.waits, Wait{Learnt: g.now(), Until: t, Identity: kind, InFlight: g.inFlight[key]})
		}
	}
	return resp, nil
}

// Waits lists the waits GitHub asked for (the first 1000), for tests and diagnostics.
func (g *Gate) Waits() []Wait {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]Wait(nil), g.waits...)
}

// Held counts the requests Gate answered itself.
func (g *Gate) Held() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.held
}

// maxPeek bounds how much of a response Gate reads to tell a rate limit: GitHub's rate-limit
// answers are a few hundred bytes; a larger body is handed on unread.
const maxPeek = 64 << 10

// waitUntil says until when GitHub wants this identity to wait, as payload decides it for
// every shape GitHub documents: a secondary limit answered 403 or 429 (REST, GraphQL) or 200
// with an error saying so (GraphQL), waited out by its retry-after, else until the primary reset
// when x-ratelimit-remaining is 0, else at least a minute; a spent primary budget (GraphQL
// answers it with 200 and a RATE_LIMITED error) until its reset. The body is read only for
// those statuses (200 only from the GraphQL endpoint), and is handed on intact.
func waitUntil(r *http.Request, resp *http.Response, now time.Time) (time.Time, bool) {
	status := resp.StatusCode
	limited := status == http.StatusForbidden || status == http.StatusTooManyRequests
	graphql := status == http.StatusOK && strings.HasSuffix(r.URL.Path, "/graphql")
	if (limited || graphql) && resp.Body != nil {
		if body, whole := peek(resp, maxPeek); whole {
			var err error
			if graphql {
				_, err = payload.GraphQL(status, resp.Header, body, now)
			} else {
				err = payload.Classify(status, resp.Header, body, now)
			}
			var rl *payload.RateLimitError
			if errors.As(err, &rl) {
				return now.Add(rl.RetryAfter), true
			}
		}
	}
	if limited {
		if ra, ok := payload.RetryAfter(resp.Header, now); ok {
			return now.Add(ra), true
		}
	}
	if resp.Header.Get("X-Ratelimit-Remaining") == "0" && (limited || status == http.StatusOK) {
		return now.Add(payload.UntilReset(resp.Header, now)), true
	}
	return time.Time{}, false
}

// peek reads up to n bytes of the response body and puts them back in front of the rest;
// whole says the body ended within them.
func peek(resp *http.Response, n int64) (body []byte, whole bool) {
	body, err := io.ReadAll(io.LimitReader(resp.Body, n+1))
	resp.Body = peeked{Reader: io.MultiReader(bytes.NewReader(body), resp.Body), Closer: resp.Body}
	return body, err == nil && int64(len(body)) <= n
}

type peeked struct {
	io.Reader
	io.Closer
}

// held is the answer for a request Gate did not send.
func held(r *http.Request, wait time.Duration) *http.Response {
	secs := int((wait + time.Second - 1) / time.Second)
	body := fmt.Sprintf(`{"message":"held back by ralph-gate: GitHub asked this identity to wait %ds (secondary rate limit or spent budget)","documentation_url":"https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`, secs)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Retry-After", strconv.Itoa(max(secs, 1)))
	h.Set(HeldHeader, "1")
	return &http.Response{
		Status: "429 Too Many Requests", StatusCode: http.StatusTooManyRequests,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(bytes.NewReader([]byte(body))), ContentLength: int64(len(body)),
		Request: r,
	}
}

// identity names who a request speaks for, without keeping any secret: the app (a JWT, which
// is re-signed for every request) or a hash of the installation or user token.
func identity(r *http.Request) string {
	auth := r.Header.Get("Authorization")
	_, cred, _ := strings.Cut(auth, " ")
	switch {
	case auth == "":
		return r.URL.Host + "|anonymous"
	case strings.Count(cred, ".") == 2:
		return r.URL.Host + "|app"
	}
	sum := sha256.Sum256([]byte(auth))
	return r.URL.Host + "|" + hex.EncodeToString(sum[:8])
}
