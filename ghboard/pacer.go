package ghboard

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Pacing below GitHub's secondary limits. GitHub documents, per identity, at most 900 points a
// minute for a REST endpoint and 2,000 for the GraphQL endpoint (a read 1 point, a write or a
// mutation 5) and 100 requests in flight ("About secondary rate limits"). Exceeding one is
// answered with a wait that stops every request of the identity — the sweeps that prove an
// item's history complete, the reverts — so Gate keeps each identity below them itself: a
// request that would pass a budget waits until the oldest points of the window have aged out.

// Budgets kept below GitHub's documented limits (which "may change without notice").
const (
	RESTPointsPerMinute    = 800
	GraphQLPointsPerMinute = 1800
	MaxInFlight            = 80
)

// pointsWindow is the points spent in the last minute on one endpoint by one identity.
type pointsWindow struct {
	spent []spend // oldest first
	sum   int
}

type spend struct {
	at     time.Time
	points int
}

// pacer is the budgets of every identity Gate has seen.
type pacer struct {
	mu       sync.Mutex
	windows  map[string]*pointsWindow // identity|endpoint
	inFlight map[string]chan struct{} // identity → a slot per request in flight
	waited   time.Duration            // total time requests waited (diagnostics)
}

func newPacer() *pacer {
	return &pacer{windows: map[string]*pointsWindow{}, inFlight: map[string]chan struct{}{}}
}

// cost is a request's points and the endpoint whose budget it spends.
func cost(r *http.Request) (endpoint string, points, limit int) {
	if strings.HasSuffix(r.URL.Path, "/graphql") {
		points = 1
		if isMutationRequest(r) {
			points = 5
		}
		return "graphql", points, GraphQLPointsPerMinute
	}
	points = 1
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		points = 5
	}
	return r.Method + " " + routeOf(r.URL.Path), points, RESTPointsPerMinute
}

// routeOf is a path with its numeric segments (ids, numbers) as one placeholder: the strict
// reading of GitHub's "endpoint".
func routeOf(path string) string {
	parts := strings.Split(path, "/")
	for i, p := range parts {
		if p != "" && strings.Trim(p, "0123456789") == "" {
			parts[i] = "{n}"
		}
	}
	return strings.Join(parts, "/")
}

// isMutationRequest peeks at a GraphQL request's document (and puts the body back).
func isMutationRequest(r *http.Request) bool {
	if r.Body == nil || r.Body == http.NoBody {
		return false
	}
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return false
	}
	var doc struct {
		Query string `json:"query"`
	}
	if json.Unmarshal(body, &doc) != nil {
		return false
	}
	return isMutation(doc.Query)
}

// acquire waits for room in the identity's budgets (or ctx's end) and spends it; release must
// be called when the answer is in.
func (p *pacer) acquire(ctx context.Context, identity string, r *http.Request, now func() time.Time) (release func(), err error) {
	p.mu.Lock()
	slots, ok := p.inFlight[identity]
	if !ok {
		slots = make(chan struct{}, MaxInFlight)
		p.inFlight[identity] = slots
	}
	p.mu.Unlock()
	select {
	case slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	endpoint, points, limit := cost(r)
	key := identity + "|" + endpoint
	for {
		p.mu.Lock()
		w := p.windows[key]
		if w == nil {
			w = &pointsWindow{}
			p.windows[key] = w
		}
		t := now()
		for len(w.spent) > 0 && !w.spent[0].at.After(t.Add(-time.Minute)) {
			w.sum -= w.spent[0].points
			w.spent = w.spent[1:]
		}
		if w.sum+points <= limit {
			w.spent = append(w.spent, spend{at: t, points: points})
			w.sum += points
			p.mu.Unlock()
			return func() { <-slots }, nil
		}
		// Wait until enough of the oldest spending ages out.
		need, i := w.sum+points-limit, 0
		for need > 0 && i < len(w.spent) {
			need -= w.spent[i].points
			i++
		}
		wait := w.spent[i-1].at.Add(time.Minute).Sub(t) + time.Millisecond
		p.waited += wait
		p.mu.Unlock()
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			<-slots
			return nil, ctx.Err()
		}
	}
}
