package app

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/app/config"
)

// The startup line names the build, the address, the projects enforced, the store's driver and
// the MCP agents, and carries no secret: no DSN, token, token hash, key or webhook secret.
func TestStartupLine(t *testing.T) {
	const (
		dsn         = "postgres://ralph:db-password-7f3a@db.internal:5432/ralph?sslmode=require"
		webhook     = "webhook-secret-91bd"
		key         = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAkey-material-5c2e\n-----END RSA PRIVATE KEY-----\n"
		token       = "agent-token-0123456789abcdef"
		tokenEnv    = "RALPH_GATE_MCP_PLANNER_TOKEN"
		tokenSHA256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	)
	withSecrets := func(c *config.Config) {
		c.Store = config.Store{Driver: "postgres", DSN: dsn}
		c.GitHub.App.WebhookSecret, c.GitHub.App.PrivateKey = webhook, key
	}
	tests := []struct {
		name string
		cfg  func(*config.Config)
		want map[string]any
	}{
		{
			name: "two projects, postgres, three agents",
			cfg: func(c *config.Config) {
				withSecrets(c)
				c.Projects = []config.Project{{Owner: "acme", Number: 1}, {Owner: "acme", Number: 7}}
				c.MCP.Agents = []config.MCPAgent{
					{Name: "planner-1", Token: token},
					{Name: "coder-1", TokenEnv: tokenEnv},
					{Name: "reviewer-1", TokenSHA256: tokenSHA256},
				}
			},
			want: map[string]any{
				"level": "info", "message": "ralph-gate is serving", "version": "1.2.3", "address": "127.0.0.1:8080",
				"app": "ralph-gate[bot]", "projects": []any{"acme/1", "acme/7"}, "policies": "config.yml", "store": "postgres", "mcp": true,
				"agents": float64(3), "agent_names": []any{"planner-1", "coder-1", "reviewer-1"},
			},
		},
		{
			name: "no agents: the façade answers nobody",
			cfg: func(c *config.Config) {
				withSecrets(c)
				c.Store.Driver = "sqlite"
				c.Projects = []config.Project{{Owner: "acme", Number: 1}}
			},
			want: map[string]any{
				"level": "info", "message": "ralph-gate is serving", "version": "1.2.3", "address": "127.0.0.1:8080",
				"app": "ralph-gate[bot]", "projects": []any{"acme/1"}, "policies": "config.yml", "store": "sqlite", "mcp": false,
				"agents": float64(0), "agent_names": []any{},
			},
		},
		{
			name: "no projects: each organization's policy file",
			cfg: func(c *config.Config) {
				withSecrets(c)
				c.Store.Driver = "sqlite"
				c.Policy = config.Policy{Repository: ".github", Path: "ralph-gate.yml"}
			},
			want: map[string]any{
				"level": "info", "message": "ralph-gate is serving", "version": "1.2.3", "address": "127.0.0.1:8080",
				"app": "ralph-gate[bot]", "projects": []any{}, "policies": ".github/ralph-gate.yml", "store": "sqlite", "mcp": false,
				"agents": float64(0), "agent_names": []any{},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cfg config.Config
			tt.cfg(&cfg)
			var buf bytes.Buffer
			logger := zerolog.New(&buf)
			logger.Info().Fields(startupFields(cfg, "1.2.3", "ralph-gate[bot]", "127.0.0.1:8080")).Msg("ralph-gate is serving")
			var got map[string]any
			if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
				t.Fatalf("%v: %s", err, buf.String())
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("startup line\n %v\nwant\n %v", got, tt.want)
			}
			for _, secret := range []string{dsn, "db-password-7f3a", "db.internal", webhook, "key-material-5c2e", "PRIVATE KEY", token, tokenEnv, tokenSHA256} {
				if strings.Contains(buf.String(), secret) {
					t.Errorf("the startup line carries %q: %s", secret, buf.String())
				}
			}
		})
	}
}
