// Package app wires ralph-gate together: configuration, GitHub clients, the store, the
// durable queue, the webhook handlers and the HTTP routes, and runs them until shutdown.
// It holds no business rules.
package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/go-github/v89/github"
	"github.com/gregjones/httpcache"
	"github.com/palantir/go-githubapp/githubapp"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/ghboard"
	"github.com/ralph-gate/ralph-gate/handlers"
	"github.com/ralph-gate/ralph-gate/jobs"
	"github.com/ralph-gate/ralph-gate/mcpserver"
	"github.com/ralph-gate/ralph-gate/metrics"
	"github.com/ralph-gate/ralph-gate/policy"
	"github.com/ralph-gate/ralph-gate/store"
)

// WebhookRoute is where GitHub delivers webhooks.
const WebhookRoute = githubapp.DefaultWebhookRoute

// App is one running ralph-gate.
type App struct {
	cfg      config.Config
	machine  *policy.Machine
	store    *store.Store
	queue    jobs.Queue
	service  *enforce.Service
	github   githubapp.ClientCreator
	boards   *boards
	appLogin string
	handler  http.Handler
	ready    atomic.Bool
	// preflight holds /readyz until the enforced boards have what the workflow needs
	// (Options.CheckBoards; preflight.go).
	preflight *boardGate
	// stdio: built for `mcp --stdio` only (Options.StdioMCP): no routes, Serve refuses.
	stdio    bool
	metrics  *metrics.Metrics
	hookWrap func(http.Handler) http.Handler
	maint    *maintenance // reconciler and redelivery sweeper (reliability.go)
	version  string
	mcp      http.Handler // the MCP façade at /mcp, behind bearer auth
	ui       http.Handler // the board health pages at /ui/ (ui.enabled; ui.go)
	// orgs are the organizations' own policies, when config.yml lists no projects
	// (orgpolicy.go); nil otherwise. policyLocks take each organization's policy changes one
	// at a time (by lower-case owner); strangers are the organizations not served that were
	// logged (config.yml's organizations).
	orgs        *orgPolicies
	policyLocks sync.Map
	strangers   sync.Map
	// projectNumbers is each project node id's number, as payloads and item reads tell it:
	// shared by the intake and enforcement (handlers.ProjectsV2Item.Projects).
	projectNumbers *handlers.ProjectNumbers
}

// Options are what the caller supplies besides the configuration.
type Options struct {
	Version string
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
	// WebhookMiddleware, when set, wraps the webhook route outermost (`ralph-gate bench` times
	// webhook receipt with it). Nil in production.
	WebhookMiddleware func(http.Handler) http.Handler
	// NoPeriodic leaves the reconciler and the redelivery sweeper unscheduled (tests that count
	// API calls run them by hand: ReconcileNow, SweepNow).
	NoPeriodic bool
	// GitHubWriteGap is the least time between two mutations of one installation; 0 keeps
	// ghboard's default, GitHub's advice of a second. The sandbox sets a small one.
	GitHubWriteGap time.Duration
	// LiftContentBudget lets the app create comments without its own count below GitHub's
	// content-creation limit (ghboard.WithContentBudget): for the sandbox when its simulator
	// enforces no secondary limits, as it shortens the write gap. Never in production.
	LiftContentBudget bool
	// CheckBoards makes Serve check every enforced project's board before /readyz answers
	// ready: the project, its workflow field and an option for every state (CheckBoards).
	// serve sets it; the sandbox, whose boards are seeded, leaves it off.
	CheckBoards bool
	// StdioMCP builds the app for `mcp --stdio`: one local agent, no webhooks and no HTTP,
	// so the webhook secret and the agents' tokens are not needed (config.ForMCP). Serve
	// refuses such an app.
	StdioMCP bool
}

// New builds the app: it authenticates as the GitHub App (to learn its own bot login), opens
// the store (running migrations) and prepares the queue. Nothing runs until Serve.
func New(ctx context.Context, cfg config.Config, opts Options) (*App, error) {
	mode := config.ForServe
	if opts.StdioMCP {
		mode = config.ForMCP
	}
	if problems := cfg.Check(mode, os.LookupEnv); len(problems) > 0 {
		return nil, problems
	}
	m, err := cfg.Machine()
	if err != nil {
		return nil, err
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	var a *App
	mx := newMetrics(opts.Version, func() jobs.Queue {
		if a == nil {
			return nil
		}
		return a.queue
	}, func() int {
		if a == nil || a.service == nil {
			return 0
		}
		return a.service.Enforcer.Waiting()
	})
	gate := ghboard.NewGate(nil) // no request before GitHub's retry-after, per identity
	creator := githubapp.NewClientCreator(cfg.GitHub.V3APIURL, cfg.GitHub.V4APIURL, cfg.GitHub.App.IntegrationID,
		[]byte(cfg.GitHub.App.PrivateKey),
		githubapp.WithTransport(gate),
		githubapp.WithClientUserAgent("ralph-gate/"+opts.Version),
		githubapp.WithClientMiddleware(mx.GitHub),
		githubapp.WithClientTimeout(15*time.Second),
		githubapp.WithClientCaching(false, func() httpcache.Cache { return httpcache.NewMemoryCache() }),
	)
	appLogin, err := fetchAppLogin(ctx, creator)
	if err != nil {
		return nil, err
	}
	st, err := store.Open(ctx, cfg.Store.Driver, cfg.Store.DSN)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	if n := st.MaxConns(); n > 0 && n < 2*cfg.Enforcement.Workers+8 {
		st.Close()
		return nil, fmt.Errorf("store.dsn: the Postgres pool (pool_max_conns=%d) is too small for %d workers: set pool_max_conns to at least %d or lower enforcement.workers",
			n, cfg.Enforcement.Workers, 2*cfg.Enforcement.Workers+8)
	}
	a = &App{cfg: cfg, machine: m, store: st, github: creator, appLogin: appLogin, metrics: mx, hookWrap: opts.WebhookMiddleware,
		projectNumbers: &handlers.ProjectNumbers{}}
	boardOpts := []ghboard.Option{ghboard.WithLogger(riverLogger(ctx))}
	if opts.GitHubWriteGap > 0 {
		boardOpts = append(boardOpts, ghboard.WithMinWriteGap(opts.GitHubWriteGap))
	}
	if opts.LiftContentBudget {
		boardOpts = append(boardOpts, ghboard.WithContentBudget(0, 0))
	}
	a.boards = newBoards(creator, cfg.GitHub.V4APIURL, m.Field(), boardOpts...)
	a.boards.required, a.boards.prs = m.RequiredFields(), m.NeedsMergedPR()
	a.maint = newMaintenance(a, gate)
	walkers, batch := batchWalkers(st.MaxConns(), cfg.Enforcement.Workers)
	enforced, modes := cfg.Enforces, modeOf(cfg)
	var policies enforce.Policies
	if cfg.OrgPolicies() && !opts.StdioMCP {
		a.orgs = newOrgPolicies(cfg, appLogin)
		for _, o := range cfg.Organizations {
			mx.PolicyOrganization(o.Login)
		}
		enforced, modes, policies = a.orgs.enforces, a.orgs.mode, a.orgs
	}
	a.service = enforce.New(m, cfg.PolicyActors(appLogin), st, opts.Now, enforce.Options{
		BatchJudge:   batch,
		BatchWalkers: walkers,
		Boards: func(ctx context.Context, installationID int64, owner string) (enforce.Board, error) {
			b, err := a.boards.get(ctx, installationID, owner)
			if err != nil {
				return nil, err
			}
			return b, nil
		},
		ReorderWindow: cfg.Enforcement.ReorderWindow,
		// A handoff waits for the reports of the item's changes as long as one may take.
		HandoffWait:    cfg.Enforcement.ReorderWindow,
		GapHold:        cfg.Enforcement.GapHold,
		Redeliveries:   a.maint.gaps,
		CoalesceWindow: cfg.Enforcement.CoalesceWindow,
		AppLogin:       appLogin,
		Enforced:       enforced,
		Mode:           modes,
		Policies:       policies,
		LearnProject:   a.projectNumbers.Learn,
		Observer:       automationCounter{metrics: mx},
		DecisionLink:   decisionLink(cfg),
	})
	if batch {
		a.maint.gaps.judge, a.maint.gaps.sweepDue = a.service.Enforcer.JudgeWaiting, a.service.Enforcer.SweepDue
		a.maint.gaps.revertNow, a.maint.gaps.listed = a.service.Enforcer.RevertAtOnce, a.service.Enforcer.AtOnceListed()
	}
	jobOpts := jobs.Options{Workers: cfg.Enforcement.Workers, Logger: riverLogger(ctx), Count: st.QueueDepth}
	if !opts.NoPeriodic {
		jobOpts.Periodic = a.maint.periodic()
	}
	proc := observed{next: processor{service: a.service, boards: a.boards, policy: a.processPolicyPush}, metrics: mx}
	if a.queue, err = prepareQueue(ctx, st, proc, jobOpts); err != nil {
		st.Close()
		return nil, fmt.Errorf("prepare queue: %w", err)
	}
	a.version = opts.Version
	a.preflight, a.stdio = newBoardGate(opts.CheckBoards), opts.StdioMCP
	if a.stdio {
		return a, nil // no routes: the façade is served on stdio (MCPServer)
	}
	if a.mcp, err = a.mcpHandler(); err != nil {
		st.Close()
		return nil, err
	}
	if cfg.UI.Enabled {
		if a.ui, err = a.uiHandler(opts.Now); err != nil {
			st.Close()
			return nil, err
		}
	}
	a.handler = a.routes()
	return a, nil
}

// prepareQueue runs River's migrations on the store's database and returns the queue. The
// migrations run under the store's migration lock, as the store's own do (store.Open), so
// replicas that start together on one PostgreSQL database migrate one at a time.
func prepareQueue(ctx context.Context, st *store.Store, proc jobs.Processor, opts jobs.Options) (jobs.Queue, error) {
	var q jobs.Queue
	err := st.WithMigrationLock(ctx, func(ctx context.Context) (err error) {
		if st.Driver() == store.DriverPostgres {
			q, err = jobs.New(ctx, riverpgxv5.New(st.Pool()), proc, opts)
		} else {
			q, err = jobs.New(ctx, riversqlite.New(st.DB()), proc, opts)
		}
		return err
	})
	return q, err
}

// AppLogin is the app's own bot login, "<slug>[bot]".
func (a *App) AppLogin() string { return a.appLogin }

// Store gives read access to decisions (demo, audit).
func (a *App) Store() *store.Store { return a.store }

// Handler serves every route.
func (a *App) Handler() http.Handler { return a.handler }

// ErrGitHubUnavailable is a start that failed because GitHub could not be reached, or
// answered with a server error or a rate limit: serve keeps its port, not ready, and tries
// again (docs/TROUBLESHOOTING.md).
var ErrGitHubUnavailable = errors.New("GitHub cannot be reached")

// isRateLimited reports whether err is one of GitHub's rate limits (primary or secondary).
func isRateLimited(err error) bool {
	var rl *github.RateLimitError
	var ab *github.AbuseRateLimitError
	return errors.As(err, &rl) || errors.As(err, &ab)
}

func fetchAppLogin(ctx context.Context, creator githubapp.ClientCreator) (string, error) {
	client, err := creator.NewAppClient()
	if err != nil {
		return "", fmt.Errorf("github app client: %w", err)
	}
	app, resp, err := client.Apps.Get(ctx, "")
	if err != nil {
		if resp == nil || resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests || isRateLimited(err) {
			return "", fmt.Errorf("authenticate as the github app: %w: %w", ErrGitHubUnavailable, err)
		}
		return "", fmt.Errorf("authenticate as the github app (check github.app.integration_id and the private key): %w", err)
	}
	if app.GetSlug() == "" {
		return "", errors.New("authenticate as the github app: GitHub returned no slug")
	}
	return app.GetSlug() + "[bot]", nil
}

// eventHandlers are the handlers of the webhook events the app takes in.
func (a *App) eventHandlers() []githubapp.EventHandler {
	scope := handlers.Scope{Field: a.machine.Field(), AppLogin: a.appLogin, Required: a.machine.RequiredFields()}
	for _, p := range a.cfg.Projects {
		scope.Projects = append(scope.Projects, handlers.Project{Owner: p.Owner, Number: p.Number})
	}
	if a.orgs != nil {
		scope.ByOwner = a.orgs.scope
	}
	return []githubapp.EventHandler{
		&handlers.ProjectsV2Item{Scope: scope, Queue: a.queue, History: a.service.Enforcer, Projects: a.projectNumbers},
		&handlers.Issues{Scope: scope, Queue: a.queue, History: a.service.Enforcer},
		&handlers.PullRequest{Scope: scope, Queue: a.queue},
		&handlers.Push{Policies: a},
		&handlers.Installation{Policies: a},
	}
}

// ingestDelivery takes in a delivery the sweeper gave up redelivering, from GitHub's record of
// it (redeliver.Options.Ingest): its event's handler, as if it had arrived. GitHub's API is
// the source, so no signature is checked.
func (a *App) ingestDelivery(ctx context.Context, event, guid string, payload []byte) error {
	for _, h := range a.eventHandlers() {
		if slices.Contains(h.Handles(), event) {
			return h.Handle(ctx, event, guid, payload)
		}
	}
	return nil // an event the app does not handle
}

func (a *App) routes() http.Handler {
	mux := http.NewServeMux()
	secret := []byte(a.cfg.GitHub.App.WebhookSecret)
	var guarded []githubapp.EventHandler
	for _, h := range a.eventHandlers() {
		guarded = append(guarded, replayGuard{next: h, store: a.store, held: a.maint.gaps.RequestSweep})
	}
	dispatcher := githubapp.NewEventDispatcher(guarded, a.cfg.GitHub.App.WebhookSecret, githubapp.WithErrorCallback(dispatchError))
	hook := a.metrics.Webhooks(webhookIntake(secret, a.cfg.Server, dispatcher))
	if a.hookWrap != nil {
		hook = a.hookWrap(hook)
	}
	mux.Handle("POST "+WebhookRoute, hook)
	mux.Handle("GET "+MetricsRoute, a.metrics.Handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", a.readyz)
	mux.Handle(mcpserver.Route, a.mcp)
	if a.ui != nil {
		mux.Handle(UIRoute, a.ui)
		mux.Handle("GET /{$}", http.RedirectHandler(UIRoute, http.StatusFound))
	}
	return mux
}

// readyProbeCursor is the row /readyz writes to see that the store can write.
const readyProbeCursor = "readyz/probe"

func (a *App) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if !a.ready.Load() {
		http.Error(w, "starting", http.StatusServiceUnavailable)
		return
	}
	if reason, pending := a.preflight.pending(); pending {
		http.Error(w, reason, http.StatusServiceUnavailable)
		return
	}
	if err := a.store.Ping(ctx); err != nil {
		http.Error(w, "store unreachable", http.StatusServiceUnavailable)
		return
	}
	// Every delivery is recorded before it is answered: a store that answers but cannot write
	// (a full disk) fails them all, so the replica is not ready.
	if err := a.store.PutCursor(ctx, readyProbeCursor, time.Now().UTC().Format(time.RFC3339)); err != nil {
		zerolog.Ctx(r.Context()).Warn().Err(err).Msg("not ready: the store cannot write")
		http.Error(w, "store cannot write", http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, a.readyText()) // what is enforced; nothing is still 200 (readyText)
}

// Serve runs the queue and the HTTP server on ln until ctx ends, then shuts down gracefully:
// it stops taking webhooks, lets running jobs finish and closes the store.
func (a *App) Serve(ctx context.Context, ln net.Listener) error {
	logger := zerolog.Ctx(ctx)
	if a.stdio {
		return errors.New("this app was built for the MCP façade on stdio (Options.StdioMCP): it serves no HTTP")
	}
	if err := a.recoverInterrupted(ctx); err != nil {
		return err
	}
	if a.orgs != nil {
		// The kept policies first: enforcement resumes before GitHub is read.
		if err := a.restoreOrgPolicies(ctx); err != nil {
			return fmt.Errorf("restore the organizations' policies: %w", err)
		}
	}
	// Not ctx: its end must not cancel running jobs. Shutdown stops the queue below, which lets
	// them finish (drain) before the store closes.
	if err := a.queue.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("start queue: %w", err)
	}
	srv := &http.Server{
		Handler:           withLogger(*logger, a.handler),
		ReadHeaderTimeout: 5 * time.Second,
		MaxHeaderBytes:    64 << 10,         // headers are read before any check: GitHub's are a few KiB
		ReadTimeout:       10 * time.Second, // GitHub gives up after 10 s anyway
		WriteTimeout:      15 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	gapCtx, stopGaps := context.WithCancel(ctx)
	defer stopGaps()
	// The judging of released items drains at shutdown like a running job (below).
	judgeCtx, stopJudging := context.WithCancel(context.WithoutCancel(ctx))
	defer stopJudging()
	go a.maint.gaps.run(gapCtx)
	go a.maint.gaps.runJudge(gapCtx, judgeCtx)
	go a.maint.gaps.runRevertsAtOnce(gapCtx, judgeCtx)
	if a.orgs != nil {
		go a.listenOrgPolicies(gapCtx)
		go func() {
			if err := a.readAllOrgPolicies(gapCtx); err != nil && gapCtx.Err() == nil {
				logger.Warn().Err(err).Msg("reading the organizations' policies: those not read keep their kept policy; a push or a restart reads them again")
			}
		}()
	}
	if _, pending := a.preflight.pending(); pending {
		go a.runPreflight(gapCtx)
	}
	errs := make(chan error, 1)
	go func() { errs <- srv.Serve(ln) }()
	a.ready.Store(true)
	logger.Info().Fields(startupFields(a.cfg, a.version, a.appLogin, ln.Addr().String())).Msg("ralph-gate is serving")

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errs:
	}
	a.ready.Store(false)
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		logger.Warn().Err(err).Msg("http shutdown")
	}
	a.maint.stop() // a reconciliation in progress saves its place and returns
	stopGaps()
	if err := a.maint.gaps.drain(shutdownCtx); err != nil {
		logger.Warn().Err(err).Msg("judging of released items interrupted: their jobs judge them after a restart")
	}
	if err := a.service.Enforcer.Drain(shutdownCtx); err != nil {
		logger.Warn().Err(err).Msg("explanations interrupted: their jobs write them after a restart")
	}
	stopJudging()
	if err := a.queue.Stop(shutdownCtx); err != nil {
		logger.Warn().Err(err).Msg("queue shutdown: running jobs will be retried after a restart")
	}
	if err := a.store.Close(); err != nil {
		logger.Warn().Err(err).Msg("close store")
	}
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return fmt.Errorf("http server: %w", serveErr)
	}
	return nil
}

// ListenAddress is the configured host:port.
func (a *App) ListenAddress() string {
	return net.JoinHostPort(a.cfg.Server.Address, strconv.Itoa(a.cfg.Server.Port))
}

func withLogger(logger zerolog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(logger.WithContext(r.Context())))
	})
}

// riverLogger sends River's own logs (warnings and errors only) to our logger.
func riverLogger(ctx context.Context) *slog.Logger {
	return slog.New(slog.NewJSONHandler(zerologWriter{zerolog.Ctx(ctx)}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type zerologWriter struct{ l *zerolog.Logger }

func (w zerologWriter) Write(p []byte) (int, error) {
	w.l.Warn().RawJSON("river", trimNewline(p)).Msg("river")
	return len(p), nil
}

func trimNewline(p []byte) []byte {
	for len(p) > 0 && (p[len(p)-1] == '\n' || p[len(p)-1] == '\r') {
		p = p[:len(p)-1]
	}
	return p
}

// batchWalkers is how many items the judging of a sweep's released items walks at once, and
// whether it runs at all. On SQLite, enforce's default. On PostgreSQL each walk holds a
// connection for its item's lock and uses another for its queries, like a worker: the walks
// get what the pool has beyond the workers' 2 × workers + 8 and the organizations' policies'
// listener, and none when that is nothing
// (the jobs then judge their items one by one).
func batchWalkers(maxConns, workers int) (int, bool) {
	if maxConns == 0 {
		return enforce.DefaultBatchWalkers, true
	}
	n := min((maxConns-9)/2-workers, enforce.DefaultBatchWalkers) // (one more: the policies' listener)
	return max(n, 0), n > 0
}

// processor finds the installation's board and runs enforcement; policy takes in a push of
// an organization's policy file.
type processor struct {
	service *enforce.Service
	boards  *boards
	policy  func(ctx context.Context, push json.RawMessage) error
}

func (p processor) ProcessPolicyPush(ctx context.Context, push json.RawMessage) error {
	return p.policy(ctx, push)
}

func (p processor) ProcessChange(ctx context.Context, ch enforce.Change) (enforce.Result, error) {
	b, err := p.boards.get(ctx, ch.InstallationID, ch.Owner)
	if err != nil {
		return enforce.Result{}, err
	}
	return p.service.Enforcer.ProcessChange(ctx, b, ch)
}

func (p processor) ProcessLifecycle(ctx context.Context, ev enforce.Lifecycle) (enforce.Result, error) {
	b, err := p.boards.get(ctx, ev.InstallationID, ev.Owner)
	if err != nil {
		return enforce.Result{}, err
	}
	return p.service.Enforcer.ProcessLifecycle(ctx, b, ev)
}

// boards keeps one Board per installation (each has its own token).
type boards struct {
	creator githubapp.ClientCreator
	v4URL   string
	field   string
	fields  *ghboard.FieldCache
	opts    []ghboard.Option // each installation's client: write gap, logger
	// required, prs: what workflow.requirements check, read with items and families
	// (ghboard.Board.Requiring).
	required []string
	prs      bool
	mu       sync.Mutex
	byID     map[int64]*ghboard.Board
	orgs     map[string]int64
}

func newBoards(creator githubapp.ClientCreator, v4URL, field string, opts ...ghboard.Option) *boards {
	return &boards{creator: creator, v4URL: v4URL, field: field, fields: ghboard.NewFieldCache(), opts: opts,
		byID: map[int64]*ghboard.Board{}, orgs: map[string]int64{}}
}

func (b *boards) get(ctx context.Context, installationID int64, owner string) (*ghboard.Board, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if installationID == 0 {
		id, ok := b.orgs[owner]
		if !ok {
			client, err := b.creator.NewAppClient()
			if err != nil {
				return nil, fmt.Errorf("github app client: %w", err)
			}
			inst, _, err := client.Apps.GetOrganizationInstallation(ctx, owner)
			if err != nil {
				return nil, fmt.Errorf("find the installation on %s: %w", owner, err)
			}
			id = inst.GetID()
			b.orgs[owner] = id
		}
		installationID = id
	}
	if board, ok := b.byID[installationID]; ok {
		return board, nil
	}
	client, err := b.creator.NewInstallationClient(installationID)
	if err != nil {
		return nil, fmt.Errorf("installation %d client: %w", installationID, err)
	}
	board := ghboard.New(ghboard.NewClient(client.Client(), b.v4URL, b.opts...), b.field, b.fields).Requiring(b.required, b.prs)
	b.byID[installationID] = board
	return board, nil
}

// DrainEnforcement waits until the work enforcement does beside its jobs (explanations, woken
// walks) has ended, or ctx ends.
func (a *App) DrainEnforcement(ctx context.Context) error { return a.service.Enforcer.Drain(ctx) }

// QueueDepth counts queued changes not yet finished.
func (a *App) QueueDepth(ctx context.Context) (int, error) { return a.queue.Depth(ctx) }
