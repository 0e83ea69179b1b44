package ghsim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Options tune a simulator; the zero value is usable.
type Options struct {
	// WebhookURL overrides the seed's app.webhook_url (it can also change at runtime).
	WebhookURL string
	// RandomSeed seeds fault draws, delivery GUIDs and installation tokens (default 1).
	RandomSeed uint64
	// Clock replaces time.Now for timestamps, tokens and rate-limit windows.
	Clock func() time.Time
	// RateLimit is the hourly primary budget per identity and resource (default 5000, GitHub's
	// installation default). When spent, requests get GitHub's rate-limit answers.
	RateLimit int
	// BaseURL is the public URL used in payload links when serving through Handler() without
	// Start; Start sets it to the listening URL.
	BaseURL string
	// SecondaryLimits models GitHub's secondary rate limits per identity (zero value: off;
	// DefaultSecondaryLimits: GitHub's documented values). See secondary.go.
	SecondaryLimits SecondaryLimits
}

// Server is an in-memory GitHub: REST under /api/v3/, GraphQL at /api/graphql, signed webhooks to
// the app, fault injection, and inspection under /_sim/.
type Server struct {
	seed   Seed
	opts   Options
	now    func() time.Time
	keyPEM []byte

	w         *world
	auth      *authenticator
	rate      *rateLimiter
	log       *requestLog
	faults    *faultState
	secondary *secondaryState
	hooks     *dispatcher
	resolvers resolverSet
	manifests manifestFlow // codes issued by the App manifest flow (rest_app.go)
	oauth     *oauthState  // the App's OAuth client, codes and user tokens (oauth.go)
	rest      *http.ServeMux
	handler   http.Handler

	mu      sync.Mutex
	httpSrv *http.Server
	url     string
	closed  bool
	done    chan struct{} // closed by Close
}

// New builds a simulator from a seed. The seed must carry the app's private key (inline or loaded
// by LoadSeed); when it has none, one is generated (see PrivateKeyPEM).
func New(seed Seed, opts Options) (*Server, error) {
	if err := seed.Validate(); err != nil {
		return nil, err
	}
	if _, err := loadSchema(); err != nil {
		return nil, err
	}
	if opts.RandomSeed == 0 {
		opts.RandomSeed = 1
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.RateLimit <= 0 {
		opts.RateLimit = 5000
	}
	if err := opts.SecondaryLimits.Validate(); err != nil {
		return nil, fmt.Errorf("secondary limits: %w", err)
	}
	keyPEM := []byte(seed.App.PrivateKeyPEM)
	if len(keyPEM) == 0 {
		var err error
		if keyPEM, err = generateKeyPEM(); err != nil {
			return nil, err
		}
	}
	key, err := parsePrivateKey(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("app private key: %w", err)
	}
	w, err := newWorld(seed, opts.Clock)
	if err != nil {
		return nil, err
	}
	w.baseURL = strings.TrimSuffix(opts.BaseURL, "/")
	s := &Server{seed: seed, opts: opts, now: opts.Clock, keyPEM: keyPEM, w: w, done: make(chan struct{})}
	s.auth = &authenticator{pub: &key.PublicKey, appID: seed.App.ID, seed: opts.RandomSeed, now: opts.Clock, tokens: map[string]issuedToken{}}
	s.rate = newRateLimiter(opts.RateLimit, opts.Clock)
	s.log = newRequestLog()
	s.faults = newFaultState(opts.RandomSeed)
	s.secondary = newSecondaryState(opts.SecondaryLimits)
	hookURL := seed.App.WebhookURL
	if opts.WebhookURL != "" {
		hookURL = opts.WebhookURL
	}
	s.hooks = newDispatcher(hookURL, seed.App.WebhookSecret, seed.App.ID, opts.RandomSeed, opts.Clock, s.faults)
	s.resolvers = newResolvers()
	s.rest = http.NewServeMux()
	s.routes()
	s.oauth = newOAuthState(seed, opts)
	mux := http.NewServeMux()
	mux.HandleFunc("/api/", s.serveAPI)
	s.simRoutes(mux)
	s.webRoutes(mux)
	s.oauthRoutes(mux)
	s.handler = mux
	return s, nil
}

// Handler serves the whole simulator (for httptest or embedding).
func (s *Server) Handler() http.Handler { return s.handler }

// Start listens on addr (loopback only, e.g. "127.0.0.1:0") and serves until ctx ends or Close.
func (s *Server) Start(ctx context.Context, addr string) (string, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("listen address: %w", err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return "", fmt.Errorf("ghsim listens on loopback addresses only, not %q", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("listen: %w", err)
	}
	url := "http://" + ln.Addr().String()
	srv := &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second}
	s.mu.Lock()
	if s.closed || s.httpSrv != nil {
		s.mu.Unlock()
		ln.Close()
		return "", errors.New("ghsim: server already started or closed")
	}
	s.httpSrv, s.url = srv, url
	s.mu.Unlock()
	s.w.mu.Lock()
	s.w.baseURL = url
	s.w.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
	go func() {
		select {
		case <-ctx.Done():
			_ = s.Close()
		case <-s.done:
		}
	}()
	return url, nil
}

// URL is the listening URL ("" before Start).
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.url
}

// Close stops serving and delivering webhooks. It is safe to call more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	srv := s.httpSrv
	s.mu.Unlock()
	var err error
	if srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err = srv.Shutdown(ctx); err != nil {
			err = srv.Close()
		}
	}
	s.hooks.close()
	return err
}

// PrivateKeyPEM is the app's private key (PEM), to sign app JWTs.
func (s *Server) PrivateKeyPEM() []byte { return append([]byte{}, s.keyPEM...) }

// SetWebhookURL changes where webhooks go from now on.
func (s *Server) SetWebhookURL(u string) { s.hooks.setURL(u) }

// SetFaults replaces the injected faults.
func (s *Server) SetFaults(f Faults) error {
	if err := f.Validate(); err != nil {
		return err
	}
	s.faults.set(f)
	return nil
}

// GetFaults returns the injected faults.
func (s *Server) GetFaults() Faults { return s.faults.get() }

// Requests returns the request log with every retained entry.
func (s *Server) Requests() RequestLog { return s.log.snapshot(-1) }

// Deliveries returns every recorded webhook delivery, oldest first.
func (s *Server) Deliveries() []Delivery { return s.hooks.list() }

// WaitIdle blocks until every queued webhook has been attempted (or ctx ends).
func (s *Server) WaitIdle(ctx context.Context) error { return s.hooks.waitIdle(ctx) }

// Merge merges a pull request as login would (empty: the first seeded user), like POST /_sim/merge.
// repoName is a repository of the seed's top-level organization, or "owner/name".
func (s *Server) Merge(repoName string, number int, login string) error {
	s.w.mu.Lock()
	defer s.flushLocked()
	owner, name := s.w.org.login, repoName
	if o, n, ok := strings.Cut(repoName, "/"); ok {
		owner, name = o, n
	}
	pr := s.w.pr(owner, name, number)
	if pr == nil {
		return errNotFound("no pull request %s#%d", repoName, number)
	}
	by := s.w.users[0]
	if login != "" {
		if by = s.w.byLogin[login]; by == nil {
			return errNotFound("no user %q", login)
		}
	}
	return s.w.mergePR(by, pr)
}

// Reset restores the seed: world, request log, deliveries, rate budgets, faults and the
// secondary limits (as Options gave them, windows and counters emptied). Issued
// installation tokens stay valid.
func (s *Server) Reset() error {
	s.w.mu.Lock()
	err := s.w.load(s.seed)
	s.w.mu.Unlock()
	s.log.reset()
	s.hooks.reset()
	s.rate.reset()
	s.faults.reset()
	s.secondary.reset()
	return err
}

// flushLocked hands the webhooks of the mutation just made to the dispatcher and releases the
// world lock; queueing before unlocking keeps webhooks in the order of the changes.
func (s *Server) flushLocked() {
	s.hooks.enqueue(s.w.takePending())
	s.w.mu.Unlock()
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

type ctxKey int

const (
	ctxPrincipal ctxKey = iota
	ctxRate
)

func principalFrom(ctx context.Context) principal {
	p, _ := ctx.Value(ctxPrincipal).(principal)
	return p
}

func rateFrom(ctx context.Context) rateSnapshot { r, _ := ctx.Value(ctxRate).(rateSnapshot); return r }

// serveAPI is the front door of REST and GraphQL: route, authenticate, inject faults, spend the
// rate budget, serve and log.
func (s *Server) serveAPI(rw http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &statusRecorder{ResponseWriter: rw}
	entry := RequestEntry{Time: s.now().UTC(), Method: r.Method, Path: r.URL.Path}
	defer func() {
		entry.Status = rec.status
		entry.DurationMS = float64(time.Since(start).Microseconds()) / 1000
		if len(entry.Operations) > 0 {
			entry.Operation = entry.Operations[len(entry.Operations)-1]
		}
		s.log.add(entry)
	}()
	rw.Header().Set("X-GitHub-Request-Id", fmt.Sprintf("GHSIM:%d", start.UnixNano()))

	isGraphQL := r.URL.Path == "/api/graphql"
	var gql *gqlRequest
	var route string
	if isGraphQL {
		if r.Method != http.MethodPost {
			entry.Operations = []string{"graphql:request"}
			writeError(rec, http.StatusNotFound, "Not Found")
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
		if err != nil {
			writeError(rec, http.StatusBadRequest, "Problems reading the body")
			return
		}
		schema, _ := loadSchema()
		gql = prepareGraphQL(schema, body)
		entry.Operations = gql.operations()
	} else {
		_, pattern := s.rest.Handler(r)
		if pattern == "" {
			entry.Operations = []string{"rest:unmatched"}
			writeError(rec, http.StatusNotFound, "Not Found")
			return
		}
		_, route, _ = strings.Cut(pattern, " ")
		route = strings.TrimPrefix(route, "/api/v3")
		entry.Operations = []string{"rest:" + r.Method + " " + route}
	}

	s.w.mu.RLock()
	who, err := s.identify(r.Header.Get("Authorization"))
	s.w.mu.RUnlock()
	entry.TokenKind = who.kind.String()
	entry.TokenOwner = who.owner()
	entry.Identity = who.key
	appRoute := jwtRoute(route)
	switch {
	case err != nil:
		writeError(rec, http.StatusUnauthorized, err.Error())
		return
	case appRoute && who.kind != appJWT:
		writeError(rec, http.StatusUnauthorized, errJWTDecode.Error())
		return
	case !appRoute && who.kind == appJWT:
		writeError(rec, http.StatusUnauthorized, "A JSON web token cannot be used for this endpoint; use an installation token")
		return
	case who.kind == anonymous && !anonymousRoute(route):
		if isGraphQL {
			writeJSON(rec, http.StatusUnauthorized, map[string]any{"message": "This endpoint requires you to be authenticated.",
				"documentation_url": "https://docs.github.com/graphql/guides/forming-calls-with-graphql#authenticating-with-graphql"})
			return
		}
		writeError(rec, http.StatusUnauthorized, "Requires authentication")
		return
	}

	release, refused := s.admitSecondary(rec, &entry, r.Method, gql, who)
	defer release()
	if refused {
		return
	}
	d := s.faults.decide(entry.Operations, who.key, s.now())
	entry.EarlyRetry = d.early
	if d.latency > 0 {
		entry.LatencyMS = int(d.latency.Milliseconds())
		select {
		case <-time.After(d.latency):
		case <-r.Context().Done():
			return
		}
	}
	resource := "core"
	if isGraphQL {
		resource = "graphql"
	}
	snap, exhausted := s.rate.take(who.key, resource, 1)
	if d.kind == faultPrimary {
		exhausted = true
		snap.Remaining = 0
		snap.Used = snap.Limit
	}
	snap.setHeaders(rec.Header())
	switch {
	case exhausted:
		entry.Fault = string(faultPrimary)
		msg := fmt.Sprintf("API rate limit exceeded for %s.", who.describe())
		if isGraphQL {
			writeJSON(rec, http.StatusOK, map[string]any{"errors": []any{map[string]any{"type": "RATE_LIMITED", "code": "graphql_rate_limit", "message": msg}}})
			return
		}
		rec.Header().Set("X-Ratelimit-Remaining", "0")
		writeJSON(rec, http.StatusForbidden, map[string]any{"message": msg + " (But here's the good news: Authenticated requests get a higher rate limit. Check out the documentation for more details.)",
			"documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"})
		return
	case d.kind == faultError:
		entry.Fault = string(faultError)
		writeJSON(rec, http.StatusBadGateway, map[string]any{"message": "Server Error", "documentation_url": docsURL})
		return
	case d.kind == faultSecondary:
		entry.Fault = string(faultSecondary)
		entry.RetryAfter = d.retryAfter
		writeSecondary(rec, isGraphQL, d)
		return
	}

	ctx := context.WithValue(context.WithValue(r.Context(), ctxPrincipal, who), ctxRate, snap)
	if isGraphQL {
		s.serveGraphQL(rec, ctx, gql)
		return
	}
	s.rest.ServeHTTP(rec, r.WithContext(ctx))
}

// jwtRoute reports the routes GitHub serves to the app itself (JWT), not to installations.
func jwtRoute(route string) bool {
	return route == "/app" || strings.HasPrefix(route, "/app/") ||
		route == "/orgs/{org}/installation" || route == "/repos/{owner}/{repo}/installation"
}

func (p principal) describe() string {
	switch p.kind {
	case installationToken:
		return fmt.Sprintf("installation ID %d", p.inst.id)
	case userToken:
		return "user ID " + strconv.FormatInt(p.actor.id, 10)
	}
	return "this client"
}
