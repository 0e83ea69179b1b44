package app

import (
	"strconv"

	"github.com/ralph-gate/ralph-gate/app/config"
)

// startupFields are the fields of the one line that says the app serves: the build, where it
// listens, what it enforces and what it runs on. They name things, never a secret: the store
// by its driver (never its DSN), the MCP agents by name (never a token).
func startupFields(cfg config.Config, version, appLogin, address string) []any {
	projects := make([]string, len(cfg.Projects))
	for i, p := range cfg.Projects {
		projects[i] = p.Owner + "/" + strconv.Itoa(p.Number)
	}
	agents := make([]string, len(cfg.MCP.Agents))
	for i, ag := range cfg.MCP.Agents {
		agents[i] = ag.Name
	}
	var policies any = "config.yml"
	if cfg.OrgPolicies() {
		policies = cfg.Policy.Repository + "/" + cfg.Policy.Path // each organization's own
	}
	return []any{
		"version", version,
		"address", address,
		"app", appLogin,
		"projects", projects,
		"policies", policies,
		"store", cfg.Store.Driver,
		"mcp", len(agents) > 0, // the façade answers only configured agents
		"agents", len(agents),
		"agent_names", agents,
	}
}
