package ghboard

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

func noSleep(context.Context, time.Duration) error { return nil }

// Transient failures are retried a bounded number of times; a content-creating mutation, and a
// write of a card's value or an issue's state, is sent once; a rate limit is returned at once and no request goes out before it has passed.
func TestClientRetriesAndWaits(t *testing.T) {
	var calls atomic.Int32
	status := atomic.Int32{}
	status.Store(http.StatusBadGateway)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		switch s := int(status.Load()); s {
		case http.StatusForbidden:
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(s)
			w.Write([]byte(`{"message":"You have exceeded a secondary rate limit."}`))
		case http.StatusOK:
			w.Header().Set("X-Ratelimit-Limit", "5000")
			w.Header().Set("X-Ratelimit-Remaining", "4990")
			w.Header().Set("X-Ratelimit-Reset", "1700003600")
			w.Write([]byte(`{"data":{"ok":true}}`))
		default:
			w.WriteHeader(s)
		}
	}))
	defer srv.Close()
	c := NewClient(srv.Client(), srv.URL)
	c.sleep = noSleep
	ctx := context.Background()

	err := c.Do(ctx, queryItem, nil, nil)
	var se *ServerError
	if !errors.As(err, &se) || calls.Load() != defaultAttempts {
		t.Fatalf("5xx: %v after %d calls; want a ServerError after %d", err, calls.Load(), defaultAttempts)
	}
	for name, doc := range map[string]string{"addComment": mutationAddComment, "a card's value": mutationSetState,
		"a cleared value": mutationClearState, "a close": mutationCloseIssue} {
		calls.Store(0)
		if err := c.Do(ctx, doc, nil, nil); !errors.As(err, &se) || calls.Load() != 1 {
			t.Fatalf("%s: %v after %d calls; want one call (sent again only after reading again)", name, err, calls.Load())
		}
	}
	calls.Store(0)
	if err := c.Do(ctx, mutationUpdateComment, nil, nil); !errors.As(err, &se) || calls.Load() != defaultAttempts {
		t.Fatalf("a comment's edit: %v after %d calls; want %d", err, calls.Load(), defaultAttempts)
	}

	now := time.Unix(1_700_000_000, 0)
	c.now = func() time.Time { return now }
	status.Store(http.StatusForbidden)
	calls.Store(0)
	var rl *RateLimitError
	if err := c.Do(ctx, queryItem, nil, nil); !errors.As(err, &rl) || rl.RetryAfter != 2*time.Second || calls.Load() != 1 {
		t.Fatalf("secondary limit: %v after %d calls; want a 2s RateLimitError after one", err, calls.Load())
	}
	status.Store(http.StatusOK)
	now = now.Add(1500 * time.Millisecond)
	if err := c.Do(ctx, queryItem, nil, nil); !errors.As(err, &rl) || calls.Load() != 1 || rl.RetryAfter != 500*time.Millisecond {
		t.Fatalf("inside retry-after: %v, %d calls; want it held back without a request", err, calls.Load())
	}
	now = now.Add(time.Second)
	var out struct{ OK bool }
	if err := c.Do(ctx, queryItem, nil, &out); err != nil || !out.OK || calls.Load() != 2 {
		t.Fatalf("after retry-after: %v %+v %d calls", err, out, calls.Load())
	}
	if rl, ok := c.RateLimit(); !ok || rl.Limit != 5000 || rl.Remaining != 4990 {
		t.Fatalf("rate limit %+v %v", rl, ok)
	}
}

// Gate holds back every request of an identity GitHub asked to wait, whatever client made it.
func TestGateHoldsAnIdentity(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.URL.Path == "/limited" {
			w.Header().Set("Retry-After", "60")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	g := NewGate(srv.Client().Transport)
	client := &http.Client{Transport: g}
	get := func(path, auth string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		req.Header.Set("Authorization", auth)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	get("/limited", "token ghs_one")
	if resp := get("/other", "token ghs_one"); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get(HeldHeader) == "" || calls.Load() != 1 {
		t.Fatalf("same identity: %d after %d calls; want a held 429", resp.StatusCode, calls.Load())
	}
	if resp := get("/other", "token ghs_two"); resp.StatusCode != http.StatusOK {
		t.Fatalf("another identity: %d", resp.StatusCode)
	}
	if resp := get("/other", "Bearer a.b.c"); resp.StatusCode != http.StatusOK {
		t.Fatalf("the app JWT: %d", resp.StatusCode)
	}
	if w := g.Waits(); len(w) != 1 || g.Held() != 1 {
		t.Fatalf("waits %+v held %d", w, g.Held())
	}
}
