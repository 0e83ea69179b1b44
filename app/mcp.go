package app

import (
	"context"
	"net/http"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/mcpserver"
)

// MCPServer builds the MCP façade over the app's enforcement service and GitHub boards. agent,
// when set, is the caller of every request (stdio: one local agent); otherwise each HTTP
// request's bearer token names its agent.
func (a *App) MCPServer(agent string) *mcp.Server {
	opts := mcpserver.Options{
		Facade:      a.service.Facade,
		Board:       func(ctx context.Context, owner string) (enforce.Board, error) { return a.boards.get(ctx, 0, owner) },
		DefaultRepo: a.cfg.MCP.DefaultRepo,
		Agent:       agent,
		Version:     a.version,
	}
	for _, p := range a.cfg.Projects {
		opts.Projects = append(opts.Projects, enforce.ProjectRef{Owner: p.Owner, Number: p.Number})
	}
	for _, ag := range a.cfg.MCP.Agents {
		opts.Agents = append(opts.Agents, mcpserver.Agent{Name: ag.Name, Role: ag.Role, Commands: ag.Commands})
	}
	return mcpserver.New(opts)
}

// mcpHandler serves the façade at /mcp behind bearer-token authentication. A token_env
// variable that is unset is a configuration problem: the app refuses to start.
func (a *App) mcpHandler() (http.Handler, error) {
	creds, problems := a.cfg.MCPCredentials(os.LookupEnv)
	if len(problems) > 0 {
		return nil, problems
	}
	out := make([]mcpserver.Credential, len(creds))
	for i, c := range creds {
		out[i] = mcpserver.Credential{Name: c.Name, Hash: c.Hash}
	}
	return mcpserver.Handler(a.MCPServer(""), out), nil
}
