package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"gopkg.in/yaml.v3"

	"github.com/ralph-gate/ralph-gate/ghsim"
	"github.com/ralph-gate/ralph-gate/sandbox"
)

// TestMCPStdio runs `ralph-gate mcp --stdio` against the simulator and talks to it with the
// SDK's client over a pipe, as a local agent's MCP client would. It is given only what it
// uses: the App's id, its private key as a file (GITHUB_APP_PRIVATE_KEY_FILE), the projects
// and the store; no webhook secret, and no agent's token.
func TestMCPStdio(t *testing.T) {
	clearAppEnv(t)
	seed, err := ghsim.ParseSeed(sandbox.DemoSeed())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	seed.App.PrivateKeyFile = filepath.Join(dir, "app.pem")
	sim, err := ghsim.New(seed, ghsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	url, err := sim.Start(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close() })
	cfg := map[string]any{
		"github": map[string]any{
			"web_url": url, "v3_api_url": url + "/api/v3/", "v4_api_url": url + "/api/graphql",
			"app": map[string]any{"integration_id": seed.App.ID},
		},
		"store":    map[string]any{"driver": "sqlite", "dsn": filepath.Join(dir, "ralph-gate.db")},
		"projects": []map[string]any{{"owner": seed.Org, "number": 1}},
		"logging":  map[string]any{"level": "warn"},
		"mcp": map[string]any{"default_repo": "app", "agents": []map[string]any{
			{"name": "researcher-1", "token_env": "RALPH_GATE_TEST_UNSET_TOKEN", "commands": []string{"research"}},
			{"name": "builder-1", "token_sha256": strings.Repeat("ab", 32)},
		}},
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}

	// Without the key, the one problem is the key: the webhook secret is not asked for.
	if code, out, stderr := runCLI(t, "", "mcp", "--stdio", "--config", file, "--agent", "researcher-1"); code != exitError ||
		!strings.Contains(stderr, "github.app.private_key: is required") || strings.Contains(out+stderr, "webhook_secret") ||
		!strings.Contains(stderr, "1 problem(s)") {
		t.Fatalf("mcp without a key: exit %d\n%s%s", code, out, stderr)
	}
	keyFile := filepath.Join(dir, "app-key.pem")
	if err := os.WriteFile(keyFile, sim.PrivateKeyPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GITHUB_APP_PRIVATE_KEY_FILE", keyFile)

	// Usage errors: no --stdio, an unknown agent, two agents and no --agent.
	for _, args := range [][]string{{"mcp", "--config", file}, {"mcp", "--stdio", "--config", file, "--agent", "nobody"}, {"mcp", "--stdio", "--config", file}} {
		if code, _, errOut := runCLI(t, "", args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", args, code, exitUsage, errOut)
		}
	}

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var errOut strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"mcp", "--stdio", "--config", file, "--agent", "researcher-1"}, streams{in: inR, out: outW, err: &errOut})
		outW.Close()
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "local-agent", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatalf("connect: %v (stderr: %s)", err, errOut.String())
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "handoff_ticket", Arguments: map[string]any{
		"number": 2, "command": "research", "intent": "lock", "reason": "looking into it"}})
	if err != nil || res.IsError {
		t.Fatalf("handoff: %v %+v", err, res)
	}
	is, ok := sim.State().Issue("app", 2)
	if !ok || is.Fields["Workflow State"] != "Research in Progress" || len(is.Comments) != 1 || !strings.Contains(is.Comments[0].Body, "`researcher-1`") {
		t.Fatalf("after the handoff: %+v", is)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "handoff_ticket", Arguments: map[string]any{
		"number": 6, "command": "impl", "intent": "complete", "reason": "not my command"}})
	if err != nil || !res.IsError {
		t.Fatalf("a research-only agent used impl: %v %+v", err, res)
	}
	cs.Close()
	inW.Close()
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("mcp exited %d: %s", code, errOut.String())
		}
	case <-ctx.Done():
		t.Fatal("mcp --stdio did not stop when its client went away")
	}
}
