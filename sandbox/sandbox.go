// Package sandbox runs ralph-gate against the built-in GitHub simulator in one process: the
// world `ralph-gate demo`, the end-to-end tests and the benchmarks share. Nothing here talks to
// the real GitHub.
package sandbox

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/ralph-gate/ralph-gate/app"
	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/ghboard"
	"github.com/ralph-gate/ralph-gate/ghsim"
)

//go:embed demo_seed.yaml
var demoSeed []byte

// DemoSeed returns the embedded seed (a copy).
func DemoSeed() []byte { return append([]byte(nil), demoSeed...) }

// WriteGap is the app's pause between two mutations of the installation in the sandbox. GitHub
// asks for a second (ghboard.DefaultMinWriteGap, what production uses); the simulator is not
// GitHub, and the suites would crawl. Mutations stay one at a time.
const WriteGap = 2 * time.Millisecond

// Options configure a sandbox.
type Options struct {
	// Seed is the simulator's YAML seed; empty means the demo seed.
	Seed []byte
	// Dir holds the store and the app key; empty means a new temporary directory (removed on Close).
	Dir string
	// StoreDriver and StoreDSN select the store; empty means SQLite in Dir.
	StoreDriver, StoreDSN string
	// Configure may adjust the configuration before the app starts.
	Configure func(*config.Config)
	// SimOptions are passed to the simulator (faults seed, clock, …).
	SimOptions ghsim.Options
	Version    string
	// WebhookMiddleware wraps the app's webhook route (see app.Options); the benchmarks use it.
	WebhookMiddleware func(http.Handler) http.Handler
	// Periodic runs the reconciler and the redelivery sweeper on their schedules. Off by
	// default, so that tests counting API calls are not disturbed: tests call
	// App.ReconcileNow and App.SweepNow when they want a pass.
	Periodic bool
	// SecondaryLimits has the simulator enforce GitHub's documented secondary rate limits
	// (ghsim.DefaultSecondaryLimits) unless SimOptions sets its own. Off by default for now.
	SecondaryLimits bool
	// SimAddr and AppAddr are where the simulator and the app listen (host:port, loopback
	// only); empty means 127.0.0.1 on a free port.
	SimAddr, AppAddr string
}

// Sandbox is a running simulator plus a running app.
type Sandbox struct {
	Sim      *ghsim.Server
	App      *app.App
	Config   config.Config
	SimURL   string
	AppURL   string
	Dir      string
	seed     ghsim.Seed
	cancel   context.CancelFunc
	done     chan error
	tempDir  bool
	mu       sync.Mutex
	fieldsOf map[string]ghboard.Field
	opts     Options // what the app was started with (RestartApp)
}

// Start starts the simulator and the app, wired to each other, and returns once the app serves.
func Start(ctx context.Context, opts Options) (*Sandbox, error) {
	if err := loopbackOnly(orFreePort(opts.AppAddr)); err != nil {
		return nil, err
	}
	sb := &Sandbox{Dir: opts.Dir, fieldsOf: map[string]ghboard.Field{}}
	if sb.Dir == "" {
		dir, err := os.MkdirTemp("", "ralph-gate-sandbox-")
		if err != nil {
			return nil, fmt.Errorf("temp dir: %w", err)
		}
		sb.Dir, sb.tempDir = dir, true
	}
	seedBytes := opts.Seed
	if len(seedBytes) == 0 {
		seedBytes = DemoSeed()
	}
	seed, err := ghsim.ParseSeed(seedBytes)
	if err != nil {
		sb.cleanup()
		return nil, fmt.Errorf("seed: %w", err)
	}
	if seed.App.PrivateKeyFile == "" && seed.App.PrivateKeyPEM == "" {
		seed.App.PrivateKeyFile = filepath.Join(sb.Dir, "app.pem")
	}
	sb.seed = seed
	if opts.SecondaryLimits && !opts.SimOptions.SecondaryLimits.Enabled {
		opts.SimOptions.SecondaryLimits = ghsim.DefaultSecondaryLimits()
	}
	sim, err := ghsim.New(seed, opts.SimOptions)
	if err != nil {
		sb.cleanup()
		return nil, fmt.Errorf("simulator: %w", err)
	}
	sb.Sim = sim
	// The simulator lives until Close, not until the start-up context ends.
	if sb.SimURL, err = sim.Start(context.WithoutCancel(ctx), orFreePort(opts.SimAddr)); err != nil {
		sb.cleanup()
		return nil, fmt.Errorf("start simulator: %w", err)
	}

	cfg, err := config.Default()
	if err != nil {
		sb.cleanup()
		return nil, err
	}
	cfg.Server.Address, cfg.Server.Port = "127.0.0.1", 0
	cfg.GitHub.WebURL = sb.SimURL
	cfg.GitHub.V3APIURL = sb.SimURL + "/api/v3/"
	cfg.GitHub.V4APIURL = sb.SimURL + "/api/graphql"
	cfg.GitHub.App.IntegrationID = seed.App.ID
	cfg.GitHub.App.WebhookSecret = seed.App.WebhookSecret
	cfg.GitHub.App.PrivateKey = string(sim.PrivateKeyPEM())
	cfg.Store.Driver, cfg.Store.DSN = "sqlite", filepath.Join(sb.Dir, "ralph-gate.db")
	if opts.StoreDriver != "" {
		cfg.Store.Driver, cfg.Store.DSN = opts.StoreDriver, opts.StoreDSN
	}
	for _, p := range seed.Projects {
		cfg.Projects = append(cfg.Projects, config.Project{Owner: seed.Org, Number: p.Number})
	}
	cfg.Enforcement.ReorderWindow = 2 * time.Second
	if opts.Configure != nil {
		opts.Configure(&cfg)
	}
	sb.Config = cfg

	sb.opts = opts
	if err := sb.startApp(ctx); err != nil {
		sb.cleanup()
		return nil, err
	}
	return sb, nil
}

func orFreePort(addr string) string {
	if addr == "" {
		return "127.0.0.1:0"
	}
	return addr
}

// loopbackOnly refuses an address other machines could reach: the sandbox's tokens, webhook
// secret and key are well known.
func loopbackOnly(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("the sandbox listens on loopback addresses only, not %q", addr)
	}
	return nil
}

func waitReady(ctx context.Context, url string) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return errors.New("ralph-gate did not become ready within 10s")
}

// startApp builds the app over sb.Config and serves it, wired to the simulator, until it is
// ready.
func (sb *Sandbox) startApp(ctx context.Context) error {
	opts := sb.opts
	a, err := app.New(ctx, sb.Config, app.Options{Version: opts.Version, WebhookMiddleware: opts.WebhookMiddleware, NoPeriodic: !opts.Periodic,
		GitHubWriteGap: WriteGap, LiftContentBudget: !opts.SimOptions.SecondaryLimits.Enabled})
	if err != nil {
		return fmt.Errorf("start ralph-gate: %w", err)
	}
	sb.App = a
	ln, err := net.Listen("tcp", orFreePort(opts.AppAddr))
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	sb.AppURL = "http://" + ln.Addr().String()
	sb.Sim.SetWebhookURL(sb.AppURL + app.WebhookRoute)
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	sb.cancel, sb.done = cancel, make(chan error, 1)
	go func() { sb.done <- a.Serve(runCtx, ln) }()
	if err := waitReady(ctx, sb.AppURL+"/readyz"); err != nil {
		sb.stopApp()
		return err
	}
	return nil
}

// stopApp stops the app gracefully.
func (sb *Sandbox) stopApp() error {
	if sb.cancel == nil {
		return nil
	}
	sb.cancel()
	err := <-sb.done
	sb.cancel = nil
	return err
}

// RestartApp stops the app and starts a new one over the same store and simulator, as a
// deployment's restart does (GitHub keeps everything; webhooks sent meanwhile fail and wait
// for redelivery).
func (sb *Sandbox) RestartApp(ctx context.Context) error {
	if err := sb.stopApp(); err != nil {
		return fmt.Errorf("stop ralph-gate: %w", err)
	}
	return sb.startApp(ctx)
}

// Close stops the app (gracefully), then the simulator, and removes a temporary directory.
func (sb *Sandbox) Close() error {
	err := sb.stopApp()
	sb.cleanup()
	return err
}

func (sb *Sandbox) cleanup() {
	if sb.Sim != nil {
		sb.Sim.Close()
	}
	if sb.tempDir {
		os.RemoveAll(sb.Dir)
		sb.tempDir = false
	}
}

// Org is the simulated organization.
func (sb *Sandbox) Org() string { return sb.seed.Org }

// Token returns a seeded user's API token.
func (sb *Sandbox) Token(login string) (string, error) {
	for _, u := range sb.seed.Users {
		if u.Login == login {
			return u.Token, nil
		}
	}
	return "", fmt.Errorf("no seeded user %q", login)
}
