package main

import (
	"context"
	"database/sql"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"gopkg.in/yaml.v3"

	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/ghsim"
	"github.com/ralph-gate/ralph-gate/sandbox"
	"github.com/ralph-gate/ralph-gate/store"
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

	// The store does not exist yet: mcp --stdio refuses to create one of its own (the service's
	// locks and records are in the service's store), and creates nothing.
	storeFile := filepath.Join(dir, "ralph-gate.db")
	if code, out, stderr := runCLI(t, "", "mcp", "--stdio", "--config", file, "--agent", "researcher-1"); code != exitError ||
		!strings.Contains(stderr, "ralph-gate mcp: no store at "+storeFile+": start the service first, or pass --create-store to start a new one") || out != "" {
		t.Fatalf("mcp without a store: exit %d\n%s%s", code, out, stderr)
	}
	if _, err := os.Stat(storeFile); err == nil {
		t.Fatal("mcp --stdio created a store without --create-store")
	}

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var errOut strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"mcp", "--stdio", "--config", file, "--agent", "researcher-1", "--create-store"}, streams{in: inR, out: outW, err: &errOut})
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

// mcp --stdio needs the store the service uses: one that does not exist is refused, as audit
// refuses it, unless --create-store starts a new one; and neither it nor serve creates the
// directory of an SQLite store (a mistyped path once became a new directory and an empty store).
func TestMCPStdioNeedsAnExistingStore(t *testing.T) {
	clearAppEnv(t)
	file, _ := startSimServer(t, nil, nil)
	dir := filepath.Dir(file)
	withStore := func(t *testing.T, driver, dsn string) {
		t.Helper()
		editConfig(t, file, func(c map[string]any) {
			c["store"] = map[string]any{"driver": driver, "dsn": dsn}
			c["logging"] = map[string]any{"level": "warn"}
			c["mcp"] = map[string]any{"default_repo": "app", "agents": []map[string]any{{"name": "researcher-1", "token_sha256": strings.Repeat("ab", 32)}}}
		})
	}
	mcpStdio := func(t *testing.T, extra ...string) (int, string) {
		t.Helper()
		code, _, stderr := runCLI(t, "", append([]string{"mcp", "--stdio", "--config", file}, extra...)...)
		return code, stderr
	}

	t.Run("a missing SQLite file, then --create-store", func(t *testing.T) {
		path := filepath.Join(dir, "new.db")
		withStore(t, "sqlite", path)
		if code, stderr := mcpStdio(t); code != exitError ||
			!strings.Contains(stderr, "no store at "+path+": start the service first, or pass --create-store to start a new one") {
			t.Errorf("exit %d\n%s", code, stderr)
		}
		if _, err := os.Stat(path); err == nil {
			t.Fatal("a store was created without --create-store")
		}
		// --create-store starts one (the session ends at once: stdin is empty).
		if code, stderr := mcpStdio(t, "--create-store"); code != exitOK {
			t.Fatalf("--create-store: exit %d\n%s", code, stderr)
		}
		st, err := store.OpenReadOnly(t.Context(), store.DriverSQLite, path)
		if err != nil {
			t.Fatalf("--create-store left no store: %v", err)
		}
		st.Close()
		// Now it exists: the check lets it through.
		cfg, err := config.LoadFor(file, config.ForMCP, os.LookupEnv)
		if err != nil {
			t.Fatal(err)
		}
		var errOut strings.Builder
		if code, ok := existingStore(t.Context(), streams{in: strings.NewReader(""), out: io.Discard, err: &errOut}, cfg); !ok {
			t.Errorf("an existing store refused: %d %s", code, errOut.String())
		}
	})

	t.Run("a directory that does not exist, for mcp and serve alike", func(t *testing.T) {
		missing := filepath.Join(dir, "typo")
		path := filepath.Join(missing, "rg.db")
		withStore(t, "sqlite", path)
		if code, stderr := mcpStdio(t); code != exitError ||
			!strings.Contains(stderr, "no store at "+path+": its directory "+missing+" does not exist") || strings.Contains(stderr, "--create-store") {
			t.Errorf("mcp: exit %d\n%s", code, stderr)
		}
		if code, stderr := mcpStdio(t, "--create-store"); code != exitError ||
			!strings.Contains(stderr, "the directory "+missing+" of the SQLite store "+path+" does not exist") {
			t.Errorf("mcp --create-store: exit %d\n%s", code, stderr)
		}
		editConfig(t, file, func(c map[string]any) { c["server"] = map[string]any{"address": "127.0.0.1", "port": 0} })
		var stderr logBuffer
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		code := run(ctx, []string{"serve", "--config", file}, streams{in: strings.NewReader(""), out: io.Discard, err: &stderr})
		if code == exitOK || !strings.Contains(stderr.String(), "the directory "+missing+" of the SQLite store "+path+" does not exist") {
			t.Errorf("serve: exit %d\n%s", code, stderr.String())
		}
		if _, err := os.Stat(missing); err == nil {
			t.Errorf("%s was created", missing)
		}
	})

	t.Run("a PostgreSQL database without ralph-gate's tables", func(t *testing.T) {
		base := os.Getenv("RALPH_GATE_TEST_POSTGRES_DSN")
		if base == "" {
			t.Skip("set RALPH_GATE_TEST_POSTGRES_DSN (eval \"$(bash .ci/postgres.sh start)\") to run against PostgreSQL")
		}
		u, err := url.Parse(base)
		if err != nil || u.Scheme == "" {
			t.Skipf("RALPH_GATE_TEST_POSTGRES_DSN is not a postgres:// URL (%v)", err)
		}
		admin, err := sql.Open("pgx", base)
		if err != nil {
			t.Fatal(err)
		}
		defer admin.Close()
		schema := "mcp_" + strconv.FormatInt(time.Now().UnixNano(), 36)
		if _, err := admin.ExecContext(t.Context(), "CREATE SCHEMA "+schema); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = admin.ExecContext(context.Background(), "DROP SCHEMA "+schema+" CASCADE") })
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		withStore(t, "postgres", u.String())
		if code, stderr := mcpStdio(t); code != exitError ||
			!strings.Contains(stderr, "no store in the PostgreSQL database of store.dsn (or RALPH_GATE_STORE_DSN): start the service first, or pass --create-store to start a new one") {
			t.Errorf("exit %d\n%s", code, stderr)
		}
		var tables int
		if err := admin.QueryRowContext(t.Context(), "SELECT count(*) FROM information_schema.tables WHERE table_schema = $1", schema).Scan(&tables); err != nil || tables != 0 {
			t.Errorf("%d tables created (%v)", tables, err)
		}
		if code, stderr := mcpStdio(t, "--create-store"); code != exitOK {
			t.Fatalf("--create-store: exit %d\n%s", code, stderr)
		}
		if code, stderr := mcpStdio(t); code != exitOK {
			t.Errorf("the store --create-store made: exit %d\n%s", code, stderr)
		}
	})
}
