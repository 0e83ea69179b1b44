package sandbox

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"gopkg.in/yaml.v3"

	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/mcpserver/toolspec"
)

// docs/INSTALL.md, "Connect your agents", followed end to end: the chart rendered with
// charts/ralph-gate/ci/mcp-values.yaml (/mcp on the Ingress, the agents' tokens from a Secret
// whose keys are their token_env names); the app started against the simulator with exactly
// the ConfigMap's config.yml and the Deployment's environment and files, the Secrets' values
// supplied here as a cluster would; and a real MCP client calling every tool over HTTP at the
// Ingress's /mcp path with an agent's bearer token.

const connectSeed = `org: acme
app: {id: 1001, slug: ralph-gate, installation_id: 2002, webhook_secret: connect-agents-webhook-secret-01}
users:
  - {login: alice, token: alice-token}
repos: [app]
projects:
  - number: 1
    title: Ralph
    fields:
      Workflow State: [Backlog, Research Needed, Research in Progress, Ready for Plan, Plan in Progress,
                       Plan in Review, In Progress, In Review, Done, Canceled, Human Needed]
      Priority: [P0, P1, P2, P3]
      Estimate: [XS, S, M, L, XL]
issues:
  - {repo: app, number: 1, title: Research the cache, project: 1, fields: {Workflow State: Research Needed, Estimate: S, Priority: P1}}
  - {repo: app, number: 10, title: Epic - search, project: 1, fields: {Workflow State: Research Needed, Estimate: M}}
  - {repo: app, number: 11, title: Index, parent: 10, project: 1, fields: {Workflow State: Backlog, Estimate: S}}
  - {repo: app, number: 12, title: Rank, parent: 10, project: 1, fields: {Workflow State: Research Needed, Estimate: XS}}
`

// The Secrets the values file names, as the cluster would hold them (test values, not secrets).
const (
	researcherToken1 = "researcher-1-token-from-the-secret"
	plannerToken1    = "planner-1-token-from-the-secret-0"
)

// everyTool is what the acceptance test calls each tool the server lists with, in this order
// (reads first): a tool the server lists that is not here fails the test.
var everyTool = []struct {
	name string
	args map[string]any
}{
	{toolspec.DescribeWorkflow, map[string]any{}},
	{toolspec.BoardHealth, map[string]any{"project": 1}},
	{toolspec.GetWorkflowState, map[string]any{"number": 1}},
	{toolspec.DetectPipelinePosition, map[string]any{"number": 10}},
	{toolspec.CheckConvergence, map[string]any{"number": 10, "targetState": "Research Needed"}},
	{toolspec.PickActionableIssue, map[string]any{"workflowState": "Research Needed"}},
	{toolspec.AdvanceChildren, map[string]any{"number": 10, "targetState": "Research Needed"}},
	{toolspec.HandoffTicket, map[string]any{"number": 1, "command": "research", "intent": "lock", "reason": "researching the cache"}},
}

func TestConnectAgentsFromChart(t *testing.T) {
	m := mustTemplate(t, "-f", chartDir+"/ci/mcp-values.yaml")

	// The Ingress routes /mcp to the Service; the client connects to that path.
	var mcpPath string
	for _, p := range m.ingressPaths(t) {
		if p.Path == "/mcp" {
			mcpPath = p.Path
		}
	}
	if mcpPath == "" {
		t.Fatal("the rendered Ingress does not route /mcp")
	}

	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	secrets := map[string]map[string]string{
		// github.existingSecret, with the chart's default key names (github.existingSecretKeys).
		"ralph-gate-github": {"app-id": "1001", "webhook-secret": "connect-agents-webhook-secret-01", "private-key": keyPEM},
		// mcp.agentTokensSecret: one key per token_env.
		"ralph-gate-agent-tokens": {"RALPH_GATE_MCP_RESEARCHER_1": researcherToken1, "RALPH_GATE_MCP_PLANNER_1": plannerToken1},
	}
	pod := mountPod(t, m, secrets)

	// The Deployment's environment, exactly: nothing else of this process's environment that
	// ralph-gate reads may leak in.
	for _, name := range []string{"GITHUB_APP_INTEGRATION_ID", "GITHUB_APP_WEBHOOK_SECRET", "GITHUB_APP_PRIVATE_KEY",
		"GITHUB_APP_PRIVATE_KEY_FILE", "RALPH_GATE_STORE_DSN", "RALPH_GATE_MCP_RESEARCHER_1", "RALPH_GATE_MCP_PLANNER_1",
		config.EnvOAuthClientID, config.EnvOAuthClientSecret, config.EnvSessionKey} {
		t.Setenv(name, "")
		os.Unsetenv(name)
	}
	for name, value := range pod.env {
		t.Setenv(name, value)
	}
	for _, want := range []string{"RALPH_GATE_MCP_RESEARCHER_1", "RALPH_GATE_MCP_PLANNER_1"} {
		if got := pod.from[want]; got != "ralph-gate-agent-tokens/"+want {
			t.Errorf("%s comes from %q, want key %s of mcp.agentTokensSecret", want, got, want)
		}
	}

	// serve --config FILE, as the container's args say, loaded as serve loads it.
	if len(pod.args) != 3 || pod.args[0] != "serve" || pod.args[1] != "--config" {
		t.Fatalf("container args %v, want serve --config FILE", pod.args)
	}
	loaded, err := config.LoadFor(pod.path(t, pod.args[2]), config.ForServe, os.LookupEnv)
	if err != nil {
		t.Fatalf("the rendered config.yml with the Deployment's environment does not load for serve: %v", err)
	}
	if loaded.GitHub.App.PrivateKey != keyPEM {
		t.Fatal("the private key serve loaded is not the Secret's (GITHUB_APP_PRIVATE_KEY_FILE)")
	}
	loaded.Store.DSN = pod.path(t, loaded.Store.DSN) // /data/ralph-gate.db on the claim

	var seed map[string]any
	if err := yaml.Unmarshal([]byte(connectSeed), &seed); err != nil {
		t.Fatal(err)
	}
	seed["app"].(map[string]any)["private_key_pem"] = keyPEM
	seedBytes, err := yaml.Marshal(seed)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sb, err := Start(ctx, Options{Seed: seedBytes, Dir: t.TempDir(), Configure: func(c *config.Config) {
		// Exactly the loaded configuration; only where GitHub is (the simulator) and where to
		// listen are the sandbox's.
		gh, server := c.GitHub, c.Server
		*c = loaded
		c.GitHub.WebURL, c.GitHub.V3APIURL, c.GitHub.V4APIURL = gh.WebURL, gh.V3APIURL, gh.V4APIURL
		c.Server.Address, c.Server.Port = server.Address, server.Port
	}})
	if err != nil {
		t.Fatalf("start ralph-gate with the chart's configuration: %v", err)
	}
	t.Cleanup(func() {
		if err := sb.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	endpoint := sb.AppURL + mcpPath

	t.Run("every tool answers the agent", func(t *testing.T) {
		cs := connectAgent(t, endpoint, plannerToken1)
		listed, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		var names, known []string
		for _, tool := range listed.Tools {
			names = append(names, tool.Name)
		}
		for _, c := range everyTool {
			known = append(known, c.name)
		}
		sort.Strings(names)
		sort.Strings(known)
		if !slices.Equal(names, known) {
			t.Fatalf("the server lists %v; this test calls %v: give every listed tool its arguments in everyTool", names, known)
		}
		for _, c := range everyTool {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.name, Arguments: c.args})
			if err != nil {
				t.Fatalf("%s(%v): protocol error: %v", c.name, c.args, err)
			}
			if res.IsError {
				t.Errorf("%s(%v): tool error: %s", c.name, c.args, toolText(res))
				continue
			}
			if res.StructuredContent == nil {
				t.Errorf("%s(%v): no structured result", c.name, c.args)
			}
		}
		// The writes were made by the App on GitHub (here, the simulator).
		for number, want := range map[int]string{1: "Research in Progress", 11: "Research Needed"} {
			if got, err := sb.State("app", number); err != nil || got != want {
				t.Errorf("#%d is in %q (%v), want %s after handoff_ticket and advance_children", number, got, err, want)
			}
		}
	})

	t.Run("each agent has its own token and commands", func(t *testing.T) {
		cs := connectAgent(t, endpoint, researcherToken1)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: toolspec.HandoffTicket, Arguments: map[string]any{
			"number": 12, "command": "plan", "intent": "lock", "reason": "not mine to plan"}})
		if err != nil {
			t.Fatalf("handoff_ticket: protocol error: %v", err)
		}
		if !res.IsError || !strings.Contains(toolText(res), "researcher-1") {
			t.Errorf("researcher-1 (commands: [research]) handing off with plan: want a tool error naming it, got %s", toolText(res))
		}
	})

	t.Run("a wrong or missing token is refused", func(t *testing.T) {
		for name, header := range map[string]string{"missing": "", "wrong": "Bearer not-a-configured-token-0000", "another's prefix": "Bearer " + plannerToken1[:12]} {
			resp := postMCP(t, endpoint, header, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("%s token: status %d, want 401", name, resp.StatusCode)
			}
		}
		client := mcp.NewClient(&mcp.Implementation{Name: "intruder", Version: "1"}, nil)
		if _, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint,
			HTTPClient: &http.Client{Transport: bearerTransport{token: "not-a-configured-token-0000"}}, MaxRetries: -1}, nil); err == nil {
			t.Error("an MCP client with a wrong token connected")
		}
	})

	t.Run("any MCP client: the request docs/INSTALL.md shows", func(t *testing.T) {
		resp := postMCP(t, endpoint, "Bearer "+plannerToken1, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var out struct {
			Result struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
			} `json:"result"`
		}
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &out) != nil || len(out.Result.Tools) != len(everyTool) {
			t.Errorf("tools/list over plain HTTP: status %d, body %s", resp.StatusCode, body)
		}
	})
}

// postMCP posts one JSON-RPC message to /mcp as any HTTP client would.
func postMCP(t *testing.T, endpoint, authorization, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func connectAgent(t *testing.T, endpoint, token string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "connect-agents", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint:   endpoint,
		HTTPClient: &http.Client{Transport: bearerTransport{token: token}, Timeout: 30 * time.Second},
	}, nil)
	if err != nil {
		t.Fatalf("connect to %s: %v", endpoint, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func toolText(res *mcp.CallToolResult) string {
	var text []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text = append(text, tc.Text)
		}
	}
	return strings.Join(text, "\n")
}

// pod is the rendered Deployment's container as the kubelet would start it: its volumes
// mounted under a temporary root, its environment resolved from the Secrets.
type pod struct {
	root   string
	mounts []string // mount paths, longest first
	env    map[string]string
	// from says where each variable came from: "SECRET/KEY", or "" for a literal value.
	from map[string]string
	args []string
}

// path maps a path inside the container to the temporary root; it must be on a mount.
func (p *pod) path(t *testing.T, inside string) string {
	t.Helper()
	for _, m := range p.mounts {
		if inside == m || strings.HasPrefix(inside, strings.TrimSuffix(m, "/")+"/") {
			return filepath.Join(p.root, inside)
		}
	}
	t.Fatalf("%s is on no volume of the pod (the root filesystem is read-only)", inside)
	return ""
}

// mountPod resolves the Deployment's only container: ConfigMap and Secret volumes are written
// under a temporary root with their items, other volumes are empty directories, and every
// environment variable takes its literal value or its Secret's key (a missing Secret or key
// fails, as the kubelet would refuse to start the container). A *_FILE variable's path is
// mapped to the temporary root.
func mountPod(t *testing.T, m *manifests, secrets map[string]map[string]string) *pod {
	t.Helper()
	_, dep := m.deployment(t)
	spec := dep.Template.Spec
	if len(spec.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(spec.Containers))
	}
	ct := spec.Containers[0]
	p := &pod{root: t.TempDir(), env: map[string]string{}, from: map[string]string{}, args: ct.Args}
	configMaps := map[string]map[string]string{}
	for _, o := range m.objects {
		if o.Kind == "ConfigMap" {
			configMaps[o.Metadata.Name] = o.Data
		}
	}
	volumes := map[string]podVolume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	for _, vm := range ct.VolumeMounts {
		v, ok := volumes[vm.Name]
		if !ok {
			t.Fatalf("volume %s is mounted but not declared", vm.Name)
		}
		dir := filepath.Join(p.root, vm.MountPath)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		var data map[string]string
		var items []keyToPath
		switch {
		case v.ConfigMap != nil:
			data, items = configMaps[v.ConfigMap.Name], v.ConfigMap.Items
			if data == nil {
				t.Fatalf("volume %s: ConfigMap %s is not rendered", vm.Name, v.ConfigMap.Name)
			}
		case v.Secret != nil:
			data, items = secrets[v.Secret.SecretName], v.Secret.Items
			if data == nil {
				t.Fatalf("volume %s: Secret %s is not supplied", vm.Name, v.Secret.SecretName)
			}
		}
		if items == nil {
			for k := range data {
				items = append(items, keyToPath{Key: k, Path: k})
			}
		}
		for _, it := range items {
			value, ok := data[it.Key]
			if !ok {
				t.Fatalf("volume %s: no key %s", vm.Name, it.Key)
			}
			if err := os.WriteFile(filepath.Join(dir, it.Path), []byte(value), 0o400); err != nil {
				t.Fatal(err)
			}
		}
		p.mounts = append(p.mounts, vm.MountPath)
	}
	sort.Slice(p.mounts, func(i, j int) bool { return len(p.mounts[i]) > len(p.mounts[j]) })
	for _, e := range ct.Env {
		switch {
		case e.Value != nil:
			p.env[e.Name] = *e.Value
			if strings.HasSuffix(e.Name, "_FILE") {
				p.env[e.Name] = p.path(t, *e.Value)
			}
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			value, ok := secrets[ref.Name][ref.Key]
			if !ok {
				t.Fatalf("%s: Secret %s has no key %s", e.Name, ref.Name, ref.Key)
			}
			p.env[e.Name], p.from[e.Name] = value, ref.Name+"/"+ref.Key
		default:
			t.Fatalf("%s: neither a value nor a secretKeyRef", e.Name)
		}
	}
	return p
}
