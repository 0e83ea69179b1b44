package config

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

func TestMCPSection(t *testing.T) {
	sum := sha256.Sum256([]byte("builder-token-0123456"))
	good := `mcp:
  default_repo: acme/app
  agents:
    - {name: researcher-1, token_env: RALPH_TEST_MCP_TOKEN, commands: [research, ralph_plan]}
    - {name: builder-1, token_sha256: ` + hex.EncodeToString(sum[:]) + `}
    - {name: local, token: a-local-test-token-000}
`
	cfg, err := Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	env := func(k string) (string, bool) {
		if k == "RALPH_TEST_MCP_TOKEN" {
			return "researcher-token-0123", true
		}
		return "", false
	}
	creds, problems := cfg.MCPCredentials(env)
	if len(problems) > 0 || len(creds) != 3 {
		t.Fatalf("credentials: %v %v", creds, problems)
	}
	if creds[0].Hash != sha256.Sum256([]byte("researcher-token-0123")) || creds[1].Hash != sum || creds[0].Name != "researcher-1" {
		t.Fatal("tokens are not hashed as configured")
	}
	if _, problems := cfg.MCPCredentials(func(string) (string, bool) { return "", false }); len(problems) != 1 || problems[0].Path != "mcp.agents[0].token_env" {
		t.Fatalf("an unset token_env: %v", problems)
	}
	if a, ok := cfg.MCPAgentNamed("BUILDER-1"); !ok || a.Name != "builder-1" {
		t.Fatal("agents are found by name, case-insensitively")
	}

	bad := `mcp:
  default_repo: "not a repo"
  agents:
    - {name: "", token: short}
    - {name: twin, token: a-local-test-token-000, token_env: X}
    - {name: twin, token_sha256: nothex, commands: [research, fly, research]}
    - {name: "bad name!", token_env: "1X"}
`
	_, err = Parse([]byte(bad))
	if err == nil {
		t.Fatal("want problems")
	}
	for _, want := range []string{"mcp.default_repo", "mcp.agents[0].name", "mcp.agents[0].token: is shorter", "mcp.agents[1]: give exactly one",
		"mcp.agents[2].name: duplicate", "mcp.agents[2].token_sha256", `mcp.agents[2].commands[1]: unknown command "fly"`,
		"mcp.agents[2].commands[2]: duplicate", "mcp.agents[3].name", "mcp.agents[3].token_env"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("problems lack %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "a-local-test-token-000") || strings.Contains(err.Error(), "short\"") {
		t.Errorf("a problem echoes a token:\n%v", err)
	}
	shared := `mcp:
  agents:
    - {name: a, token: same-token-0123456789}
    - {name: b, token: same-token-0123456789}
`
	// The file alone shows the token is shared: validate reports it, not only serve.
	if _, err := Parse([]byte(shared)); err == nil || !strings.Contains(err.Error(), `mcp.agents[1]: shares its token with agent "a"`) {
		t.Fatalf("a shared token in the file: %v", err)
	}
	cfg, _, err = Preflight(writeFile(t, shared), ForFile, env)
	if err != nil {
		t.Fatal(err)
	}
	if _, problems := cfg.MCPCredentials(env); len(problems) != 1 || !strings.Contains(problems[0].Message, "shares its token") {
		t.Fatalf("a shared token: %v", problems)
	}
}

func TestReferenceDocumentsMCP(t *testing.T) {
	got, err := Reference()
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"mcp.default_repo", "mcp.agents", "mcp.agents[].token_sha256", "mcp.agents[].commands"} {
		if !strings.Contains(string(got), "| `"+key+"` |") {
			t.Errorf("the reference lacks %s", key)
		}
	}
	if !strings.Contains(string(got), "## `mcp`\n\nThe MCP façade") {
		t.Error("the mcp section has no description in config.yml")
	}
}
