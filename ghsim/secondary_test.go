package ghsim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const addCommentDoc = `mutation($s: ID!) { addComment(input: {subjectId: $s, body: "hi"}) { commentEdge { node { id } } } }`

// limitedSim is a simulator with GitHub's documented secondary limits on a fake clock.
func limitedSim(t *testing.T, l SecondaryLimits) (*sim, *fakeClock) {
	t.Helper()
	clock := &fakeClock{t: time.Now()}
	return startSim(t, testSeed(t), Options{Clock: clock.Now, SecondaryLimits: l}), clock
}

func (s *sim) issueID(number int) string {
	s.t.Helper()
	q := fmt.Sprintf(`{ repository(owner: "acme", name: "app") { issue(number: %d) { id } } }`, number)
	return dig(s.gqlOK("alice-token", q, nil), "repository", "issue", "id").(string)
}

// comment posts one comment as token's owner and returns the raw answer.
func (s *sim) comment(token, subject string) resp {
	s.t.Helper()
	return s.gql(token, addCommentDoc, map[string]any{"s": subject}).raw
}

// wantSecondary checks a refusal: GitHub's status and message, a retry-after of want seconds,
// the primary budget unspent, and the request log naming the limit.
func wantSecondary(t *testing.T, s *sim, r resp, status int, limit string, want int) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	if !strings.Contains(string(r.body), "You have exceeded a secondary rate limit") {
		t.Errorf("body lacks GitHub's secondary-limit message: %s", r.body)
	}
	if got, _ := strconv.Atoi(r.header.Get("Retry-After")); got != want {
		t.Errorf("retry-after %q, want %d", r.header.Get("Retry-After"), want)
	}
	if rem, _ := strconv.Atoi(r.header.Get("X-Ratelimit-Remaining")); rem <= 0 {
		t.Errorf("x-ratelimit-remaining %q: a secondary limit must not look like a spent primary budget", r.header.Get("X-Ratelimit-Remaining"))
	}
	// The refusal's entry: the newest refused one (requests still in flight log later).
	log := s.Requests()
	var last RequestEntry
	for i := len(log.Entries) - 1; i >= 0; i-- {
		if log.Entries[i].Fault != "" {
			last = log.Entries[i]
			break
		}
	}
	if last.Fault != "secondary_rate_limit" || last.SecondaryLimit != limit || last.RetryAfter != want {
		t.Errorf("request log: fault %q limit %q retry_after %d, want secondary_rate_limit %q %d", last.Fault, last.SecondaryLimit, last.RetryAfter, limit, want)
	}
}

func TestSecondaryLimitsEachLimit(t *testing.T) {
	for _, tc := range []struct {
		name string
		// fill spends exactly the limit (advancing the clock as it likes) and returns how long
		// ago, at the refusal, the oldest spending that must leave the window happened.
		fill func(t *testing.T, s *sim, c *fakeClock) time.Duration
		// over makes the request one past the limit (subject: issue 2's node id).
		over   func(s *sim, subject string) resp
		status int
		limit  string
		// span of the window: the retry-after is span minus the age of the oldest spending.
		span time.Duration
	}{
		{
			name: "81st content request in a minute",
			fill: func(t *testing.T, s *sim, c *fakeClock) time.Duration {
				id := s.issueID(1)
				for i := range 80 {
					if r := s.comment("alice-token", id); r.status != 200 {
						t.Fatalf("comment %d: %d %s", i+1, r.status, r.body)
					}
					if i == 0 {
						c.advance(15 * time.Second)
					}
				}
				return 15 * time.Second
			},
			over:   func(s *sim, subject string) resp { return s.comment("alice-token", subject) },
			status: http.StatusForbidden, limit: LimitContentPerMinute, span: time.Minute,
		},
		{
			name: "501st content request in an hour (REST and GraphQL together)",
			fill: func(t *testing.T, s *sim, c *fakeClock) time.Duration {
				id := s.issueID(1)
				for i := range 500 {
					var r resp
					if i%2 == 0 {
						r = s.comment("alice-token", id)
					} else {
						r = s.do("POST", "/api/v3/repos/acme/app/issues/1/comments", "bearer alice-token", map[string]any{"body": "hi"})
					}
					if r.status != 200 && r.status != 201 {
						t.Fatalf("comment %d: %d %s", i+1, r.status, r.body)
					}
					if (i+1)%50 == 0 { // 50 a minute: under 80 a minute
						c.advance(time.Minute)
					}
				}
				return 10 * time.Minute
			},
			over:   func(s *sim, subject string) resp { return s.comment("alice-token", subject) },
			status: http.StatusForbidden, limit: LimitContentPerHour, span: time.Hour,
		},
		{
			name: "2,001 GraphQL points in a minute (400 mutations, then a query)",
			fill: func(t *testing.T, s *sim, c *fakeClock) time.Duration {
				// The subject's look-up (alice) is another identity's.
				b := s.board("bob-token") // 1 point
				for i := range 399 {      // 1,996 points
					s.setState("bob-token", b, 1, "Backlog")
					if i == 0 {
						c.advance(20 * time.Second)
					}
				}
				for range 4 { // 2,000
					s.gqlOK("bob-token", `{ viewer { login } }`, nil)
				}
				return 20 * time.Second
			},
			over:   func(s *sim, _ string) resp { return s.gql("bob-token", `{ viewer { login } }`, nil).raw },
			status: http.StatusForbidden, limit: LimitGraphQLPoints, span: time.Minute,
		},
		{
			name: "901 REST points on one endpoint in a minute (App JWT)",
			fill: func(t *testing.T, s *sim, c *fakeClock) time.Duration {
				jwt := s.appJWT()
				for i := range 900 {
					if r := s.do("GET", "/api/v3/app", "Bearer "+jwt, nil); r.status != 200 {
						t.Fatalf("GET /app %d: %d %s", i+1, r.status, r.body)
					}
					if i == 0 {
						c.advance(59 * time.Second)
					}
				}
				// Another endpoint has a window of its own.
				if r := s.do("GET", "/api/v3/app/installations", "Bearer "+jwt, nil); r.status != 200 {
					t.Fatalf("GET /app/installations: %d %s", r.status, r.body)
				}
				return 59 * time.Second
			},
			over:   func(s *sim, _ string) resp { return s.do("GET", "/api/v3/app", "Bearer "+s.appJWT(), nil) },
			status: http.StatusForbidden, limit: LimitRESTPoints, span: time.Minute,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, clock := limitedSim(t, DefaultSecondaryLimits())
			subject := s.issueID(2)
			age := tc.fill(t, s, clock)
			r := tc.over(s, subject)
			retry := int((tc.span - age) / time.Second)
			wantSecondary(t, s, r, tc.status, tc.limit, retry)
			if st := s.SecondaryStats(); st.Answers != 1 || st.ByLimit[tc.limit] != 1 {
				t.Errorf("stats %+v, want one answer for %s", st, tc.limit)
			}
			if n := s.Requests().Counts["secondary_limit:"+tc.limit]; n != 1 {
				t.Errorf("request log counts %d refusals of %s, want 1", n, tc.limit)
			}

			// Any request of that identity before the retry-after is refused again, flagged.
			clock.advance(time.Duration(retry-1) * time.Second)
			early := tc.over(s, subject)
			wantSecondary(t, s, early, tc.status, LimitEarlyRetry, 1)
			if e := s.Requests().Entries; !e[len(e)-1].EarlyRetry {
				t.Error("a request before the retry-after is not flagged early_retry")
			}
			// Once it has elapsed, the request fits again.
			clock.advance(time.Second)
			if r := tc.over(s, subject); r.status != 200 || strings.Contains(string(r.body), "secondary") {
				t.Errorf("after the retry-after: %d %s", r.status, r.body)
			}
		})
	}
}

// TestSecondaryLimitsConcurrency: the 101st request in flight of one identity is refused; the
// others, and other identities, are served.
func TestSecondaryLimitsConcurrency(t *testing.T) {
	s, _ := limitedSim(t, DefaultSecondaryLimits())
	if err := s.SetFaults(Faults{LatencyMS: 1500, Operations: []string{"graphql:viewer"}}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	statuses := make(chan int, 100)
	for range 100 {
		wg.Go(func() { statuses <- s.gql("alice-token", `{ viewer { login } }`, nil).raw.status })
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.inflight("user:alice") < 100 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d requests in flight", s.inflight("user:alice"))
		}
		time.Sleep(5 * time.Millisecond)
	}
	// A request that is not delayed, so that it is refused (or not) while the 100 are held.
	other := s.gql("bob-token", `{ rateLimit { remaining } }`, nil).raw
	r := s.gql("alice-token", `{ rateLimit { remaining } }`, nil).raw
	wg.Wait()
	close(statuses)
	for st := range statuses {
		if st != 200 {
			t.Errorf("one of the first 100 was answered %d", st)
		}
	}
	wantSecondary(t, s, r, http.StatusForbidden, LimitConcurrency, 1)
	if other.status != 200 {
		t.Errorf("another identity was refused while alice had 100 in flight: %d %s", other.status, other.body)
	}
	if n := s.inflight("user:alice"); n != 0 {
		t.Errorf("%d requests still counted in flight after all ended", n)
	}
}

func (s *sim) inflight(identity string) int {
	s.secondary.mu.Lock()
	defer s.secondary.mu.Unlock()
	if id := s.secondary.ids[identity]; id != nil {
		return id.inflight
	}
	return 0
}

// TestSecondaryLimitsPerIdentity: one identity's spent windows do not refuse another's
// requests: users, the installation and the App JWT each have their own.
func TestSecondaryLimitsPerIdentity(t *testing.T) {
	s, _ := limitedSim(t, SecondaryLimits{Enabled: true, ContentPerMinute: 2})
	id := s.issueID(1)
	for range 2 {
		if r := s.comment("alice-token", id); r.status != 200 {
			t.Fatalf("alice: %d %s", r.status, r.body)
		}
	}
	if r := s.comment("alice-token", id); r.status != http.StatusForbidden {
		t.Fatalf("alice's third comment: %d, want 403", r.status)
	}
	inst := s.installationToken()
	for _, tok := range []string{"bob-token", "agent1-token", inst} {
		if r := s.comment(tok, id); r.status != 200 {
			t.Errorf("%s was refused for alice's comments: %d %s", tok, r.status, r.body)
		}
	}
	if st := s.SecondaryStats(); st.Answers != 1 {
		t.Errorf("stats %+v, want 1 answer", st)
	}
}

// TestSecondaryLimitsWhatCounts: edits and project field writes create no content; aliases of
// one document count one each; a refused request spends nothing.
func TestSecondaryLimitsWhatCounts(t *testing.T) {
	s, _ := limitedSim(t, SecondaryLimits{Enabled: true, ContentPerMinute: 3})
	b := s.board("alice-token")
	for range 5 {
		s.setState("alice-token", b, 1, "Backlog")
	}
	id := s.issueID(1)
	d := s.gqlOK("alice-token", addCommentDoc, map[string]any{"s": id})
	cid := dig(d, "addComment", "commentEdge", "node", "id").(string)
	for range 5 {
		s.gqlOK("alice-token", `mutation($c: ID!) { updateIssueComment(input: {id: $c, body: "edited"}) { issueComment { id } } }`, map[string]any{"c": cid})
	}
	two := `mutation($s: ID!) { a: addComment(input: {subjectId: $s, body: "a"}) { clientMutationId } b: addComment(input: {subjectId: $s, body: "b"}) { clientMutationId } }`
	s.gqlOK("alice-token", two, map[string]any{"s": id}) // 3 of 3
	if r := s.comment("alice-token", id); r.status != http.StatusForbidden {
		t.Fatalf("a fourth comment: %d %s, want 403", r.status, r.body)
	}
}

// TestSecondaryLimitsShapes: the statuses GitHub may answer, and the model off by default.
func TestSecondaryLimitsShapes(t *testing.T) {
	t.Run("off by default", func(t *testing.T) {
		s := startSim(t, testSeed(t), Options{})
		id := s.issueID(1)
		for i := range 81 {
			if r := s.comment("alice-token", id); r.status != 200 {
				t.Fatalf("comment %d: %d", i+1, r.status)
			}
		}
		if s.GetSecondaryLimits().Enabled || s.SecondaryStats().Answers != 0 {
			t.Error("secondary limits are on without being asked for")
		}
	})
	t.Run("GraphQL 200 with RATE_LIMITED, REST 429", func(t *testing.T) {
		s, _ := limitedSim(t, SecondaryLimits{Enabled: true, ContentPerMinute: 1, GraphQLStatus: 200, RESTStatus: 429})
		id := s.issueID(1)
		s.comment("alice-token", id)
		g := s.gql("alice-token", addCommentDoc, map[string]any{"s": id})
		if g.raw.status != 200 || len(g.Errors) != 1 || g.Errors[0]["type"] != "RATE_LIMITED" || g.raw.header.Get("Retry-After") != "60" {
			t.Errorf("GraphQL: %d %s (retry-after %q)", g.raw.status, g.raw.body, g.raw.header.Get("Retry-After"))
		}
		s.do("POST", "/api/v3/repos/acme/app/issues/1/comments", "bearer bob-token", map[string]any{"body": "x"})
		r := s.do("POST", "/api/v3/repos/acme/app/issues/1/comments", "bearer bob-token", map[string]any{"body": "y"})
		if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") == "" {
			t.Errorf("REST: %d %s", r.status, r.body)
		}
	})
	t.Run("invalid", func(t *testing.T) {
		for _, l := range []SecondaryLimits{{Enabled: true, ContentPerHour: -1}, {RESTStatus: 500}, {GraphQLStatus: 429}} {
			if _, err := New(testSeed(t), Options{SecondaryLimits: l}); err == nil {
				t.Errorf("%+v accepted", l)
			}
		}
	})
}

// TestSecondaryLimitsSimAPI: /_sim/secondary_limits switches the model and reads its counter;
// Reset goes back to the options'.
func TestSecondaryLimitsSimAPI(t *testing.T) {
	s := startSim(t, testSeed(t), Options{})
	post := func(path, body string) simSecondary {
		t.Helper()
		res, err := http.Post(s.url+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var out simSecondary
		if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != 200 {
			t.Fatalf("POST %s: %d %v", path, res.StatusCode, err)
		}
		return out
	}
	got := post("/_sim/secondary_limits", `{"enabled": true, "content_per_minute": 1}`)
	if !got.Limits.Enabled || got.Limits.ContentPerMinute != 1 || got.Limits.ContentPerHour != 500 || got.Limits.Concurrent != 100 {
		t.Fatalf("limits after POST: %+v", got.Limits)
	}
	id := s.issueID(1)
	s.comment("alice-token", id)
	if r := s.comment("alice-token", id); r.status != http.StatusForbidden {
		t.Fatalf("second comment: %d", r.status)
	}
	r := s.do("GET", "/_sim/secondary_limits", "", nil)
	var read simSecondary
	r.json(t, &read)
	if read.Answers != 1 || read.ByLimit[LimitContentPerMinute] != 1 {
		t.Errorf("GET /_sim/secondary_limits: %s", r.body)
	}
	post("/_sim/secondary_limits/clear", "")
	if r := s.comment("alice-token", id); r.status != 200 {
		t.Errorf("after clear: %d %s", r.status, r.body)
	}
	if r := s.do("POST", "/_sim/secondary_limits", "", map[string]any{"rest_status": 500}); r.status != http.StatusBadRequest {
		t.Errorf("a bad status was accepted: %d", r.status)
	}
	if err := s.Reset(); err != nil {
		t.Fatal(err)
	}
	if l := s.GetSecondaryLimits(); l.Enabled || s.SecondaryStats().Answers != 0 {
		t.Errorf("after Reset: %+v, %+v", l, s.SecondaryStats())
	}
}
