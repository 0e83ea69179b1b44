package ghboard

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// A request that would pass an identity's points budget for its endpoint waits until the
// oldest points of the minute age out; other endpoints and identities are not held back.
func TestPacerKeepsEachEndpointBelowItsBudget(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	p := newPacer()
	get := func(path string) *http.Request {
		r, _ := http.NewRequest(http.MethodGet, "https://api.github.com"+path, nil)
		return r
	}
	ctx := context.Background()
	for i := range RESTPointsPerMinute {
		rel, err := p.acquire(ctx, "app", get("/app/hook/deliveries"), clock)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		rel()
	}
	// The budget of that endpoint is spent; another endpoint and another identity are not.
	for _, c := range []struct{ id, path string }{{"app", "/app/installations/7"}, {"token", "/app/hook/deliveries"}} {
		rel, err := p.acquire(ctx, c.id, get(c.path), clock)
		if err != nil {
			t.Fatal(err)
		}
		rel()
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := p.acquire(short, "app", get("/app/hook/deliveries"), clock); err == nil {
		t.Fatal("a request past the endpoint's budget went out at once")
	}
	mu.Lock()
	now = now.Add(time.Minute)
	mu.Unlock()
	rel, err := p.acquire(ctx, "app", get("/app/hook/deliveries"), clock)
	if err != nil {
		t.Fatalf("after the minute: %v", err)
	}
	rel()
}

// Points follow GitHub's table: a read 1, a write 5; a GraphQL mutation 5, a query 1; the
// numeric segments of a REST path are one endpoint.
func TestPacerCost(t *testing.T) {
	for _, c := range []struct {
		method, path, body string
		endpoint           string
		points             int
	}{
		{"GET", "/app/hook/deliveries", "", "GET /app/hook/deliveries", 1},
		{"POST", "/app/hook/deliveries/123/attempts", "", "POST /app/hook/deliveries/{n}/attempts", 5},
		{"POST", "/api/graphql", `{"query":"query { viewer { login } }"}`, "graphql", 1},
		{"POST", "/api/graphql", `{"query":"mutation M { addComment(input: {}) { clientMutationId } }"}`, "graphql", 5},
	} {
		r, _ := http.NewRequest(c.method, "https://api.github.com"+c.path, strings.NewReader(c.body))
		endpoint, points, _ := cost(r)
		if endpoint != c.endpoint || points != c.points {
			t.Errorf("%s %s: %q %d points, want %q %d", c.method, c.path, endpoint, points, c.endpoint, c.points)
		}
		if c.body != "" {
			if b, _ := io.ReadAll(r.Body); string(b) != c.body {
				t.Errorf("the body was not put back: %q", b)
			}
		}
	}
}
