package ghsim

import (
	"errors"
	"maps"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vektah/gqlparser/v2/ast"
)

// SecondaryLimits model GitHub's documented secondary rate limits ("About secondary rate
// limits" in "Rate limits for the REST API" and "Rate limits and query limits for the GraphQL
// API"), kept per identity (installation, user, App JWT). The zero value models nothing; a zero
// limit of an enabled model takes GitHub's documented value (DefaultSecondaryLimits).
// docs/GITHUB.md lists every assumption with its source.
type SecondaryLimits struct {
	Enabled bool `json:"enabled"`
	// Concurrent caps the requests of one identity in flight at once, REST and GraphQL
	// together (100).
	Concurrent int `json:"concurrent,omitempty"`
	// RESTPointsPerMinute caps the points of one identity on one REST endpoint (method and
	// route) over any 60 s (900); GraphQLPointsPerMinute the GraphQL endpoint (2,000). A REST
	// GET, HEAD or OPTIONS costs 1, any other method 5; a GraphQL request 1, or 5 when it
	// holds a mutation.
	RESTPointsPerMinute    int `json:"rest_points_per_minute,omitempty"`
	GraphQLPointsPerMinute int `json:"graphql_points_per_minute,omitempty"`
	// ContentPerMinute and ContentPerHour cap content creation over any 60 s (80) and any
	// hour (500). Each content-creating operation counts, aliases of one GraphQL document
	// separately.
	ContentPerMinute int `json:"content_per_minute,omitempty"`
	ContentPerHour   int `json:"content_per_hour,omitempty"`
	// ContentOperations replaces the operations that create content (as in the request log,
	// e.g. "graphql:addComment"; default ContentOperations()).
	ContentOperations []string `json:"content_operations,omitempty"`
	// RESTStatus is the status of a refused REST request: 403 (default) or 429; GraphQLStatus
	// that of a refused GraphQL request: 403 (default) or 200 with a RATE_LIMITED error.
	RESTStatus    int `json:"rest_status,omitempty"`
	GraphQLStatus int `json:"graphql_status,omitempty"`
}

// The documented values.
const (
	secondaryConcurrent      = 100
	secondaryRESTPoints      = 900
	secondaryGraphQLPoints   = 2000
	secondaryContentPerMin   = 80
	secondaryContentPerHour  = 500
	secondaryPointsWindow    = time.Minute
	secondaryContentMinute   = time.Minute
	secondaryContentHour     = time.Hour
	secondaryConcurrencyWait = time.Second
)

// The limits a refusal names (RequestEntry.SecondaryLimit, SecondaryStats.ByLimit).
const (
	LimitConcurrency      = "concurrency"
	LimitRESTPoints       = "rest_points"
	LimitGraphQLPoints    = "graphql_points"
	LimitContentPerMinute = "content_per_minute"
	LimitContentPerHour   = "content_per_hour"
	// LimitEarlyRetry is a request made before the retry-after of an earlier refusal elapsed.
	LimitEarlyRetry = "early_retry"
)

// DefaultSecondaryLimits are GitHub's documented secondary limits, enabled.
func DefaultSecondaryLimits() SecondaryLimits {
	return SecondaryLimits{Enabled: true, Concurrent: secondaryConcurrent, RESTPointsPerMinute: secondaryRESTPoints,
		GraphQLPointsPerMinute: secondaryGraphQLPoints, ContentPerMinute: secondaryContentPerMin, ContentPerHour: secondaryContentPerHour,
		ContentOperations: ContentOperations(), RESTStatus: http.StatusForbidden, GraphQLStatus: http.StatusForbidden}
}

// ContentOperations are the operations ghsim counts as creating content by default: creating an
// issue, a pull request, a discussion, a comment or a review, through REST or GraphQL. Editing
// (updateIssueComment, PATCH …/issues/comments/{id}) and setting a project field
// (updateProjectV2ItemFieldValue) create nothing new and are not counted (docs/GITHUB.md).
func ContentOperations() []string {
	return []string{
		"graphql:addComment", "graphql:addDiscussionComment", "graphql:addPullRequestReview",
		"graphql:addPullRequestReviewComment", "graphql:addPullRequestReviewThread",
		"graphql:addPullRequestReviewThreadReply", "graphql:createDiscussion", "graphql:createIssue",
		"graphql:createPullRequest",
		"rest:POST /repos/{owner}/{repo}/issues", "rest:POST /repos/{owner}/{repo}/issues/{number}/comments",
		"rest:POST /repos/{owner}/{repo}/pulls", "rest:POST /repos/{owner}/{repo}/pulls/{number}/comments",
		"rest:POST /repos/{owner}/{repo}/pulls/{number}/reviews", "rest:POST /repos/{owner}/{repo}/commits/{sha}/comments",
	}
}

// Validate refuses negative limits and statuses GitHub does not answer.
func (l SecondaryLimits) Validate() error {
	var errs []error
	if l.Concurrent < 0 || l.RESTPointsPerMinute < 0 || l.GraphQLPointsPerMinute < 0 || l.ContentPerMinute < 0 || l.ContentPerHour < 0 {
		errs = append(errs, errors.New("secondary limits must not be negative"))
	}
	if s := l.RESTStatus; s != 0 && s != http.StatusForbidden && s != http.StatusTooManyRequests {
		errs = append(errs, errors.New("rest_status: 403 or 429"))
	}
	if s := l.GraphQLStatus; s != 0 && s != http.StatusForbidden && s != http.StatusOK {
		errs = append(errs, errors.New("graphql_status: 200 or 403"))
	}
	return errors.Join(errs...)
}

// filled gives every zero limit its documented value.
func (l SecondaryLimits) filled() SecondaryLimits {
	d := DefaultSecondaryLimits()
	set := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	set(&l.Concurrent, d.Concurrent)
	set(&l.RESTPointsPerMinute, d.RESTPointsPerMinute)
	set(&l.GraphQLPointsPerMinute, d.GraphQLPointsPerMinute)
	set(&l.ContentPerMinute, d.ContentPerMinute)
	set(&l.ContentPerHour, d.ContentPerHour)
	set(&l.RESTStatus, d.RESTStatus)
	set(&l.GraphQLStatus, d.GraphQLStatus)
	if len(l.ContentOperations) == 0 {
		l.ContentOperations = d.ContentOperations
	}
	l.ContentOperations = slices.Clone(l.ContentOperations)
	return l
}

// SecondaryStats counts the secondary-limit answers the model gave: in all and per limit (the
// Limit* names). Injected faults (Faults.SecondaryRateLimitRate) are not counted here; the
// request log counts both ("fault:secondary_rate_limit").
type SecondaryStats struct {
	Answers int            `json:"answers"`
	ByLimit map[string]int `json:"by_limit"`
}

// secondaryState keeps sliding windows per identity: a window holds the events of its span
// (time, amount), so a limit is never exceeded over any span, whatever its alignment.
type secondaryState struct {
	initial SecondaryLimits

	mu      sync.Mutex
	cfg     SecondaryLimits // filled when enabled
	ids     map[string]*secondaryIdentity
	answers int
	byLimit map[string]int
}

type secondaryIdentity struct {
	inflight    int
	points      map[string]*slidingWindow // "graphql" or "rest:<METHOD> <route>"
	contentMin  slidingWindow
	contentHour slidingWindow
	heldUntil   time.Time
}

type slidingWindow struct {
	span   time.Duration
	events []windowEvent
	sum    int
}

type windowEvent struct {
	at time.Time
	n  int
}

func (w *slidingWindow) prune(now time.Time) {
	i := 0
	for i < len(w.events) && !w.events[i].at.Add(w.span).After(now) {
		w.sum -= w.events[i].n
		i++
	}
	w.events = w.events[i:]
}

// wait is how long until need more fits under limit (0: it fits now). What can never fit waits
// a whole span.
func (w *slidingWindow) wait(now time.Time, need, limit int) time.Duration {
	w.prune(now)
	if w.sum+need <= limit {
		return 0
	}
	if need > limit {
		return w.span
	}
	left := w.sum
	for _, e := range w.events {
		left -= e.n
		if left+need <= limit {
			return e.at.Add(w.span).Sub(now)
		}
	}
	return w.span
}

func (w *slidingWindow) add(now time.Time, n int) {
	w.events = append(w.events, windowEvent{at: now, n: n})
	w.sum += n
}

func newSecondaryState(l SecondaryLimits) *secondaryState {
	s := &secondaryState{initial: l}
	s.resetLocked()
	return s
}

func (s *secondaryState) resetLocked() {
	s.cfg = s.initial
	if s.cfg.Enabled {
		s.cfg = s.cfg.filled()
	}
	s.ids = map[string]*secondaryIdentity{}
	s.answers, s.byLimit = 0, map[string]int{}
}

func (s *secondaryState) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resetLocked()
}

func (s *secondaryState) identity(key string) *secondaryIdentity {
	id := s.ids[key]
	if id == nil {
		id = &secondaryIdentity{points: map[string]*slidingWindow{},
			contentMin: slidingWindow{span: secondaryContentMinute}, contentHour: slidingWindow{span: secondaryContentHour}}
		s.ids[key] = id
	}
	return id
}

// secondaryRequest is what the model needs to know of one request.
type secondaryRequest struct {
	identity string
	graphql  bool
	mutation bool
	method   string
	ops      []string
}

func (r secondaryRequest) endpoint() (key string, cost int) {
	if r.graphql {
		if r.mutation {
			return "graphql", 5
		}
		return "graphql", 1
	}
	key = "rest"
	for _, op := range r.ops {
		if strings.HasPrefix(op, "rest:") {
			key = op
		}
	}
	switch r.method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return key, 1
	}
	return key, 5
}

// secondaryVerdict is a refusal: the limit named, the wait, the answer's status.
type secondaryVerdict struct {
	limit  string
	wait   time.Duration
	status int
	early  bool
}

// admit decides one request at now. Admitted, it is in flight until release and its points
// and content are spent; refused, it spends nothing and the identity is held until the
// retry-after it is given (a request before then is refused again, flagged early).
func (s *secondaryState) admit(r secondaryRequest, now time.Time) (release func(), v *secondaryVerdict) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.cfg.Enabled || r.identity == "" || r.identity == "anonymous" {
		return func() {}, nil
	}
	status := s.cfg.RESTStatus
	if r.graphql {
		status = s.cfg.GraphQLStatus
	}
	id := s.identity(r.identity)
	refuse := func(limit string, wait time.Duration, early bool) (func(), *secondaryVerdict) {
		wait = time.Duration(math.Ceil(wait.Seconds())) * time.Second
		wait = max(wait, time.Second)
		if !early {
			id.heldUntil = now.Add(wait)
		}
		s.answers++
		s.byLimit[limit]++
		return func() {}, &secondaryVerdict{limit: limit, wait: wait, status: status, early: early}
	}
	if now.Before(id.heldUntil) {
		return refuse(LimitEarlyRetry, id.heldUntil.Sub(now), true)
	}
	if id.inflight >= s.cfg.Concurrent {
		return refuse(LimitConcurrency, secondaryConcurrencyWait, false)
	}
	key, cost := r.endpoint()
	pw := id.points[key]
	if pw == nil {
		pw = &slidingWindow{span: secondaryPointsWindow}
		id.points[key] = pw
	}
	pointsLimit, pointsName := s.cfg.RESTPointsPerMinute, LimitRESTPoints
	if r.graphql {
		pointsLimit, pointsName = s.cfg.GraphQLPointsPerMinute, LimitGraphQLPoints
	}
	content := 0
	for _, op := range r.ops {
		if slices.Contains(s.cfg.ContentOperations, op) {
			content++
		}
	}
	// Every limit the request would exceed is checked, so that the retry-after given is
	// enough for all of them; the refusal names the one that waits longest.
	var worst secondaryVerdict
	consider := func(limit string, wait time.Duration) {
		if wait > worst.wait {
			worst = secondaryVerdict{limit: limit, wait: wait}
		}
	}
	consider(pointsName, pw.wait(now, cost, pointsLimit))
	if content > 0 {
		consider(LimitContentPerMinute, id.contentMin.wait(now, content, s.cfg.ContentPerMinute))
		consider(LimitContentPerHour, id.contentHour.wait(now, content, s.cfg.ContentPerHour))
	}
	if worst.wait > 0 {
		return refuse(worst.limit, worst.wait, false)
	}
	pw.add(now, cost)
	if content > 0 {
		id.contentMin.add(now, content)
		id.contentHour.add(now, content)
	}
	id.inflight++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			id.inflight--
		})
	}, nil
}

func (s *secondaryState) get() SecondaryLimits {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.cfg
	l.ContentOperations = slices.Clone(l.ContentOperations)
	return l
}

func (s *secondaryState) set(l SecondaryLimits) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l.Enabled {
		l = l.filled()
	}
	s.cfg = l
}

// clearWindows forgets what every identity spent and any hold; requests in flight stay counted.
func (s *secondaryState) clearWindows() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, id := range s.ids {
		fresh := &secondaryIdentity{inflight: id.inflight, points: map[string]*slidingWindow{},
			contentMin: slidingWindow{span: secondaryContentMinute}, contentHour: slidingWindow{span: secondaryContentHour}}
		*id = *fresh
		s.ids[key] = id
	}
}

func (s *secondaryState) stats() SecondaryStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return SecondaryStats{Answers: s.answers, ByLimit: maps.Clone(s.byLimit)}
}

// admitSecondary runs the secondary-limit model for one authenticated request. A refusal is
// answered here, as GitHub answers a secondary limit (writeSecondary, with the primary budget's
// headers unspent), and recorded in e; the caller then returns. release ends the request's
// time in flight.
func (s *Server) admitSecondary(w http.ResponseWriter, e *RequestEntry, method string, gql *gqlRequest, who principal) (release func(), refused bool) {
	req := secondaryRequest{identity: who.key, graphql: gql != nil, method: method, ops: e.Operations}
	req.mutation = gql != nil && gql.op != nil && gql.op.Operation == ast.Mutation
	release, v := s.secondary.admit(req, s.now())
	if v == nil {
		return release, false
	}
	resource := "core"
	if req.graphql {
		resource = "graphql"
	}
	s.rate.peek(who.key, resource).setHeaders(w.Header())
	retry := int(v.wait / time.Second)
	e.Fault, e.RetryAfter, e.EarlyRetry, e.SecondaryLimit = string(faultSecondary), retry, v.early, v.limit
	writeSecondary(w, req.graphql, faultDecision{kind: faultSecondary, retryAfter: retry, status: v.status})
	return release, true
}

// SetSecondaryLimits replaces the secondary-limit model (windows and counters are kept).
func (s *Server) SetSecondaryLimits(l SecondaryLimits) error {
	if err := l.Validate(); err != nil {
		return err
	}
	s.secondary.set(l)
	return nil
}

// GetSecondaryLimits returns the secondary-limit model, its defaults filled in when enabled.
func (s *Server) GetSecondaryLimits() SecondaryLimits { return s.secondary.get() }

// SecondaryStats returns the secondary-limit answers the model gave since the start (or Reset).
func (s *Server) SecondaryStats() SecondaryStats { return s.secondary.stats() }

// ClearSecondaryWindows forgets what every identity spent of its secondary limits, and any
// retry-after it was given: a benchmark phase then starts from fresh windows.
func (s *Server) ClearSecondaryWindows() { s.secondary.clearWindows() }

type simSecondary struct {
	Limits SecondaryLimits `json:"limits"`
	SecondaryStats
}

// secondaryRoutes: GET /_sim/secondary_limits answers the model and its counters; POST
// replaces the model (a SecondaryLimits object); POST /_sim/secondary_limits/clear clears the
// windows.
func (s *Server) secondaryRoutes(mux *http.ServeMux) {
	get := func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, simSecondary{Limits: s.GetSecondaryLimits(), SecondaryStats: s.SecondaryStats()})
	}
	mux.HandleFunc("GET /_sim/secondary_limits", get)
	mux.HandleFunc("POST /_sim/secondary_limits", func(w http.ResponseWriter, r *http.Request) {
		var l SecondaryLimits
		if !simDecode(w, r, &l) {
			return
		}
		if err := s.SetSecondaryLimits(l); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
			return
		}
		get(w, r)
	})
	mux.HandleFunc("POST /_sim/secondary_limits/clear", func(w http.ResponseWriter, r *http.Request) {
		s.ClearSecondaryWindows()
		get(w, r)
	})
}
