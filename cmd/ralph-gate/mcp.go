package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ralph-gate/ralph-gate/app"
	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/store"
)

// runMCP serves the MCP façade over stdio for one local agent. It acts through the App exactly
// as /mcp does, so it needs the App's id and private key, the projects and the store; it
// serves no HTTP and processes no webhooks, so it needs neither the webhook secret nor the
// agents' tokens (config.ForMCP). The store must be the service's, so it must exist already
// unless --create-store says to start a new one. Logs go to stderr: stdout is the protocol.
func runMCP(ctx context.Context, args []string, s streams) int {
	fs := newFlags("mcp", s)
	stdio := fs.Bool("stdio", false, "serve the MCP façade on stdin/stdout (the only mode; HTTP is /mcp on serve)")
	file := fs.String("config", "", "configuration file (as for serve)")
	agent := fs.String("agent", "", "the mcp.agents name to act as (default: the only configured agent)")
	createStore := fs.Bool("create-store", false, "create (and migrate) the store when there is none yet; without it mcp --stdio refuses a store that does not exist, since it must share the running service's")
	if code, ok := parseFlags(fs, args, s); !ok {
		return code
	}
	if !*stdio {
		fmt.Fprintln(s.err, "ralph-gate mcp: give --stdio (over HTTP the façade is served by `ralph-gate serve` at /mcp)")
		return exitUsage
	}
	cfg, err := config.LoadFor(*file, config.ForMCP, os.LookupEnv)
	if err != nil {
		printProblems(s, "mcp", err, *file)
		return exitError
	}
	name, err := stdioAgent(cfg, *agent)
	if err != nil {
		fmt.Fprintf(s.err, "ralph-gate mcp: %v\n", err)
		return exitUsage
	}
	if !*createStore {
		if code, ok := existingStore(ctx, s, cfg); !ok {
			return code
		}
	}
	logger := newLogger(s.err, cfg.Logging)
	ctx = logger.WithContext(ctx)
	// Over stdio the caller is the local user who holds the App's key: no agent token is
	// checked, and no webhook is served.
	a, err := app.New(ctx, cfg, app.Options{Version: version, StdioMCP: true})
	if err != nil {
		logger.Error().Err(err).Msg("ralph-gate cannot start")
		return exitError
	}
	defer a.Store().Close()
	logger.Info().Str("agent", name).Msg("serving the MCP façade on stdio")
	if err := a.MCPServer(name).Run(ctx, &mcp.IOTransport{Reader: readCloser{s.in}, Writer: writeCloser{s.out}}); err != nil && ctx.Err() == nil {
		logger.Error().Err(err).Msg("mcp session ended with an error")
		return exitError
	}
	return exitOK
}

// existingStore refuses to go on when the configured store does not exist yet (no SQLite
// file, or a database without ralph-gate's tables) or cannot be read, as audit does: the
// façade over stdio must share the running service's store, whose locks and records the
// service acts on, and app.New would otherwise create and migrate an empty one of its own.
// It only reads (store.OpenReadOnly).
func existingStore(ctx context.Context, s streams, cfg config.Config) (int, bool) {
	st, err := store.OpenReadOnly(ctx, cfg.Store.Driver, cfg.Store.DSN)
	if err == nil {
		_ = st.Close()
		return exitOK, true
	}
	if !errors.Is(err, store.ErrNoStore) {
		return fail(s, "mcp", exitError, "cannot open the store: "+storeProblem(err), storeHint(err, cfg.Store.Driver, cfg.Store.DSN, false)), false
	}
	where := "in the PostgreSQL database of store.dsn (or " + config.EnvStoreDSN + ")"
	if cfg.Store.Driver != store.DriverPostgres {
		path := store.SQLitePath(cfg.Store.DSN)
		if path == "" { // an in-memory database: no store to share
			return fail(s, "mcp", exitError, storeProblem(err), "give store.dsn the service's database file"), false
		}
		if abs, aerr := filepath.Abs(path); aerr == nil {
			path = abs
		}
		where = "at " + path
		if dir := filepath.Dir(path); !isDir(dir) {
			return fail(s, "mcp", exitError, fmt.Sprintf("no store at %s: its directory %s does not exist", path, dir),
				"fix store.dsn (or "+config.EnvStoreDSN+"): it must name the store the running service uses"), false
		}
	}
	return fail(s, "mcp", exitError, "no store "+where+": start the service first, or pass --create-store to start a new one",
		"mcp --stdio must use the store the running service uses (store.dsn, or "+config.EnvStoreDSN+"): the service learns about the façade's moves and locks only from it"), false
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// stdioAgent picks the configured agent the session acts as.
func stdioAgent(cfg config.Config, name string) (string, error) {
	if name == "" {
		if len(cfg.MCP.Agents) == 1 {
			return cfg.MCP.Agents[0].Name, nil
		}
		return "", fmt.Errorf("give --agent NAME, one of the mcp.agents (%s)", agentNames(cfg))
	}
	a, ok := cfg.MCPAgentNamed(name)
	if !ok {
		return "", fmt.Errorf("--agent %q is not configured under mcp.agents (%s)", name, agentNames(cfg))
	}
	return a.Name, nil
}

func agentNames(cfg config.Config) string {
	var names []string
	for _, a := range cfg.MCP.Agents {
		names = append(names, a.Name)
	}
	if len(names) == 0 {
		return "none configured"
	}
	return strings.Join(names, ", ")
}

// readCloser and writeCloser let the session close without closing the process's streams.
type readCloser struct {
	r interface{ Read([]byte) (int, error) }
}

func (r readCloser) Read(p []byte) (int, error) { return r.r.Read(p) }
func (readCloser) Close() error                 { return nil }

type writeCloser struct {
	w interface{ Write([]byte) (int, error) }
}

func (w writeCloser) Write(p []byte) (int, error) { return w.w.Write(p) }
func (writeCloser) Close() error                  { return nil }
