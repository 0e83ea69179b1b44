package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ralph-gate/ralph-gate/app"
	"github.com/ralph-gate/ralph-gate/app/config"
)

// runMCP serves the MCP façade over stdio for one local agent. It acts through the App exactly
// as /mcp does, so it needs the App's id and private key, the projects and the store; it
// serves no HTTP and processes no webhooks, so it needs neither the webhook secret nor the
// agents' tokens (config.ForMCP). Logs go to stderr: stdout is the protocol.
func runMCP(ctx context.Context, args []string, s streams) int {
	fs := newFlags("mcp", s)
	stdio := fs.Bool("stdio", false, "serve the MCP façade on stdin/stdout (the only mode; HTTP is /mcp on serve)")
	file := fs.String("config", "", "configuration file (as for serve)")
	agent := fs.String("agent", "", "the mcp.agents name to act as (default: the only configured agent)")
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
