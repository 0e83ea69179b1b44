package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// envOf is a lookup over a fixed environment.
func envOf(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

// paths lists the key paths of problems.
func paths(ps Problems) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Path)
	}
	return out
}

// The private key may come from a file (GITHUB_APP_PRIVATE_KEY_FILE, as the chart mounts its
// Secret); a file that cannot be used, or the key given twice, is a problem that names the
// variable and the path and never the file's content.
func TestPrivateKeyFromFile(t *testing.T) {
	key := testKeyPEM(t)
	dir := t.TempDir()
	write := func(name, text string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const secretLine = "c2VjcmV0LWJ5dGVzLW5vdC10by1wcmludA=="
	good := write("app.pem", key)
	garbage := write("garbage.pem", "not a key at all "+secretLine+"\n")
	escaped := write("escaped.pem", strings.ReplaceAll(key, "\n", `\n`))
	cert := write("cert.pem", "-----BEGIN CERTIFICATE-----\n"+secretLine+"\n-----END CERTIFICATE-----\n")
	broken := write("broken.pem", "-----BEGIN RSA PRIVATE KEY-----\n"+secretLine+"\n-----END RSA PRIVATE KEY-----\n")
	missing := filepath.Join(dir, "missing.pem")
	cfgFile := write("c.yml", "projects: [{owner: acme, number: 1}]\n")

	base := map[string]string{EnvIntegrationID: "42", EnvWebhookSecret: "Zq4v8tN1xK7mR2pW9cL5"}
	tests := []struct {
		name    string
		env     map[string]string
		problem string // "" when the key loads; else a substring of the one problem
	}{
		{"a readable key file", map[string]string{EnvPrivateKeyFile: good}, ""},
		{"a key file beside an empty PEM variable", map[string]string{EnvPrivateKeyFile: good, EnvPrivateKey: ""}, ""},
		{"the PEM text in the environment", map[string]string{EnvPrivateKey: key}, ""},
		{"both set", map[string]string{EnvPrivateKeyFile: good, EnvPrivateKey: key}, "and GITHUB_APP_PRIVATE_KEY are both set"},
		{"a missing file", map[string]string{EnvPrivateKeyFile: missing}, "cannot read the private key file " + missing + ": no such file or directory"},
		{"a directory", map[string]string{EnvPrivateKeyFile: dir}, "cannot read the private key file " + dir},
		{"not PEM", map[string]string{EnvPrivateKeyFile: garbage}, "the file " + garbage + " is not PEM text"},
		{"escaped line breaks", map[string]string{EnvPrivateKeyFile: escaped}, `holds "\n" escapes`},
		{"a certificate", map[string]string{EnvPrivateKeyFile: cert}, `holds a PEM "CERTIFICATE" block`},
		{"a PEM block that does not decode", map[string]string{EnvPrivateKeyFile: broken}, "is not a valid PEM private key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{}
			for k, v := range base {
				env[k] = v
			}
			for k, v := range tt.env {
				env[k] = v
			}
			cfg, problems, err := Preflight(cfgFile, ForServe, envOf(env))
			if err != nil {
				t.Fatal(err)
			}
			if tt.problem == "" {
				if len(problems) > 0 || cfg.GitHub.App.PrivateKey != key {
					t.Fatalf("want the key loaded, got problems %v", problems)
				}
				return
			}
			if len(problems) != 1 || problems[0].Path != "env "+EnvPrivateKeyFile || !strings.Contains(problems[0].Message, tt.problem) {
				t.Fatalf("want one problem at env %s saying %q, got %v", EnvPrivateKeyFile, tt.problem, problems)
			}
			if strings.Contains(problems.Error(), secretLine) || strings.Contains(problems.Error(), "MII") {
				t.Errorf("the problem echoes the file's content: %v", problems)
			}
		})
	}
}

// Each mode asks only for what it uses: mcp --stdio needs the App's id and key and a project
// listed in the file, never the webhook secret nor agents' tokens; serve needs the App's id,
// key, webhook secret and agents' tokens, but no project (without projects it reads each
// organization's policy file); the file alone needs none.
func TestModesAskOnlyForWhatTheyUse(t *testing.T) {
	key := testKeyPEM(t)
	full := map[string]string{EnvIntegrationID: "42", EnvWebhookSecret: "Zq4v8tN1xK7mR2pW9cL5", EnvPrivateKey: key, "RALPH_TEST_TOKEN": "researcher-token-0123"}
	without := func(keys ...string) map[string]string {
		out := map[string]string{}
		for k, v := range full {
			if !slices.Contains(keys, k) {
				out[k] = v
			}
		}
		return out
	}
	withAgent := "projects: [{owner: acme, number: 1}]\nmcp: {agents: [{name: r, token_env: RALPH_TEST_TOKEN}]}\n"
	noProjects := "mcp: {agents: [{name: r, token_env: RALPH_TEST_TOKEN}]}\n"
	tests := []struct {
		name  string
		file  string
		mode  Mode
		env   map[string]string
		paths []string // exactly these problems, in this order
	}{
		{"serve with everything", withAgent, ForServe, full, nil},
		{"serve without the webhook secret", withAgent, ForServe, without(EnvWebhookSecret), []string{"github.app.webhook_secret"}},
		{"serve without an agent's token", withAgent, ForServe, without("RALPH_TEST_TOKEN"), []string{"mcp.agents[0].token_env"}},
		{"serve with nothing", noProjects, ForServe, nil,
			[]string{"github.app.integration_id", "github.app.private_key", "github.app.webhook_secret", "mcp.agents[0].token_env"}},
		{"serve without projects reads the organizations' policies", noProjects, ForServe, full, nil},
		{"mcp without projects", noProjects, ForMCP, full, []string{"projects"}},
		{"mcp without the webhook secret and the token", withAgent, ForMCP, without(EnvWebhookSecret, "RALPH_TEST_TOKEN"), nil},
		{"mcp without the key", withAgent, ForMCP, without(EnvPrivateKey), []string{"github.app.private_key"}},
		{"mcp with nothing", noProjects, ForMCP, nil, []string{"github.app.integration_id", "github.app.private_key", "projects"}},
		{"the file alone", noProjects, ForFile, nil, nil},
		{"the file alone still refuses a broken key", noProjects, ForFile, map[string]string{EnvPrivateKey: "-----BEGIN RSA PRIVATE KEY-----"}, []string{"github.app.private_key"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, problems, err := Preflight(writeFile(t, tt.file), tt.mode, envOf(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			if got := paths(problems); !slices.Equal(got, tt.paths) {
				t.Fatalf("problems at %q, want %q:\n%v", got, tt.paths, problems)
			}
			if cfg.OrgPolicies() != (tt.file == noProjects) {
				t.Errorf("OrgPolicies() = %v for %q", cfg.OrgPolicies(), tt.file)
			}
			if strings.Contains(problems.Error(), "MII") {
				t.Errorf("a problem echoes the key: %v", problems)
			}
		})
	}
	if _, err := ParseMode("webhooks"); err == nil {
		t.Error("an unknown mode was accepted")
	}
	for _, m := range Modes {
		if got, err := ParseMode(strings.ToUpper(string(m))); err != nil || got != m {
			t.Errorf("ParseMode(%q) = %q, %v", m, got, err)
		}
	}
}

// What validate passed and serve refused: a token_env that is unset, one token shared by two
// agents. Preflight for serve reports each, by key path. No project is not one of them (the
// organizations' policy files are read), but a policy section pointing outside a repository is.
func TestPreflightHasEveryCheckServeHas(t *testing.T) {
	env := envOf(map[string]string{EnvIntegrationID: "42", EnvWebhookSecret: "Zq4v8tN1xK7mR2pW9cL5", EnvPrivateKey: testKeyPEM(t),
		"TOKEN_A": "same-token-0123456789", "TOKEN_B": "same-token-0123456789"})
	tests := []struct {
		name, file string
		want       []string
	}{
		{"an unset token_env", "projects: [{owner: acme, number: 1}]\nmcp: {agents: [{name: a, token_env: TOKEN_UNSET}]}\n",
			[]string{"mcp.agents[0].token_env: environment variable TOKEN_UNSET is unset"}},
		{"one variable for two agents", "projects: [{owner: acme, number: 1}]\nmcp: {agents: [{name: a, token_env: TOKEN_A}, {name: b, token_env: TOKEN_A}]}\n",
			[]string{`mcp.agents[1]: shares its token with agent "a"`}},
		{"two variables holding one token", "projects: [{owner: acme, number: 1}]\nmcp: {agents: [{name: a, token_env: TOKEN_A}, {name: b, token_env: TOKEN_B}]}\n",
			[]string{`mcp.agents[1]: shares its token with agent "a"`}},
		{"a token in clear and its hash", "projects: [{owner: acme, number: 1}]\nmcp: {agents: [{name: a, token: same-token-0123456789}, " +
			"{name: b, token_sha256: EE99F8241250FBB516B0C3FF29C32D352697E4EF1A8137E02BFD3B2E58D8EEFB}]}\n", []string{`mcp.agents[1]: shares its token with agent "a"`}},
		// No project is no problem: serve reads the organizations' policy files, from where the
		// policy section says (validated like any other key).
		{"no project", "server: {port: 8080}\n", nil},
		{"no project and a policy file outside the repository", "policy: {repository: acme/.github, path: ../ralph-gate.yml}\n", []string{
			`policy.repository: must be the name of a repository of the organization (letters, digits, '.', '_', '-'; at most 100), got "acme/.github"`,
			`policy.path: must be a file's path from the repository's root, without ".." (such as ralph-gate.yml or .github/ralph-gate.yml), got "../ralph-gate.yml"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, problems, err := Preflight(writeFile(t, tt.file), ForServe, env)
			if err != nil {
				t.Fatal(err)
			}
			if len(problems) != len(tt.want) {
				t.Fatalf("want %d problem(s), got %v", len(tt.want), problems)
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(problems[i].String(), w) {
					t.Errorf("problem %d is %q, want it to start with %q", i, problems[i], w)
				}
			}
		})
	}
}

// Every value of the wrong type is reported at its key path, with its line, in words, at
// any depth: maps, lists, durations, integers, booleans.
func TestTypeErrorsNameTheirKeyPath(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       string // the one problem
	}{
		{"a number for a duration", "enforcement:\n  coalesce_window: 10\n",
			`enforcement.coalesce_window: line 2: want a duration such as "10m", got 10`},
		{"words for a duration", "reconcile: {interval: ten minutes}\n",
			`reconcile.interval: line 1: want a duration such as "10m", got "ten minutes"`},
		{"a string for an integer", "server:\n  port: \"eighty\"\n", `server.port: line 2: want a whole number, got "eighty"`},
		{"a fraction for an integer", "enforcement: {workers: 1.5}\n", `enforcement.workers: line 1: want a whole number, got 1.5`},
		{"a number for a boolean", "workflow:\n  gates:\n    blockers: 1\n", `workflow.gates.blockers: line 3: want true or false, got 1`},
		{"a list for a string", "store: {driver: [sqlite]}\n", `store.driver: line 1: want a string, got a list`},
		{"a string for a list", "actors: {agents: agent-*}\n", `actors.agents: line 1: want a list, got "agent-*"`},
		{"a mapping for a list", "projects: {owner: acme, number: 1}\n", `projects: line 1: want a list, got a mapping`},
		{"a string for a mapping", "github: https://github.com\n", `github: line 1: want a mapping (web_url, v3_api_url, v4_api_url, app, oauth), got "https://github.com"`},
		{"deep in a list", "projects:\n  - {owner: acme, number: 1}\n  - {owner: acme, number: two}\n",
			`projects[1].number: line 3: want a whole number, got "two"`},
		{"deep in a map of a list", "mcp:\n  agents:\n    - name: a\n      token: a-local-test-token-000\n      commands: {research: true}\n",
			`mcp.agents[0].commands: line 5: want a list, got a mapping`},
		{"a map value", "workflow:\n  gates:\n    wip_limits: {In Progress: many}\n",
			`workflow.gates.wip_limits.In Progress: line 3: want a whole number, got "many"`},
		{"a number for a float", "reconcile: {budget_share: lots}\n", `reconcile.budget_share: line 1: want a number, got "lots"`},
		{"not a mapping at all", "- server\n- github\n", `(file): line 1: want a mapping (`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps := problemsOf(t, tt.yaml)
			var typed Problems
			for _, p := range ps {
				if yamlLine.MatchString(p.Message) {
					typed = append(typed, p)
				}
			}
			if len(typed) != 1 || !strings.HasPrefix(typed[0].String(), tt.want) {
				t.Fatalf("want one problem %q, got:\n%v", tt.want, ps)
			}
			for _, p := range ps {
				if p.Path == "(file)" && tt.want[:6] != "(file)" {
					t.Errorf("a problem without a key path: %v", p)
				}
				if p.Path == typed[0].Path && p != typed[0] {
					t.Errorf("a second problem about the same value: %v", p)
				}
			}
		})
	}
	// Several at once, each at its own path.
	ps := problemsOf(t, "enforcement: {coalesce_window: 10, workers: many}\nlogging: {level: [info]}\n")
	if got := paths(ps); !slices.Equal(got, []string{"enforcement.coalesce_window", "enforcement.workers", "logging.level"}) {
		t.Errorf("want every wrong value, got %v", ps)
	}
}

// A mistyped state in the workflow gets the nearest state as a suggestion.
func TestUnknownStateSuggestsTheNearest(t *testing.T) {
	tests := []struct{ old, new, want string }{
		{"next: [Research Needed, Ready for Plan, Done, Canceled]", "next: [Reserch Needed, Ready for Plan, Done, Canceled]",
			`workflow.states[0].next[0]: unknown state "Reserch Needed" (did you mean "Research Needed"?)`},
		{"next: [Research Needed, Ready for Plan, Done, Canceled]", "next: [Research Needed, Ready for Plan, Done, Cancelled]",
			`workflow.states[0].next[3]: unknown state "Cancelled" (did you mean "Canceled"?)`},
		{"next: [Research Needed, Ready for Plan, Done, Canceled]", "next: [Research Needed, ready for plan, Done, Canceled]",
			`workflow.states[0].next[1]: unknown state "ready for plan" (did you mean "Ready for Plan"?)`},
		{"next: [Research Needed, Ready for Plan, Done, Canceled]", "next: [Research Needed, Nowhere, Done, Canceled]",
			`workflow.states[0].next[1]: unknown state "Nowhere"`},
	}
	for _, tt := range tests {
		ps := problemsOf(t, string(edited(t, tt.old, tt.new)))
		found := false
		for _, p := range ps {
			if strings.HasPrefix(p.String(), tt.want) {
				found = true
				if tt.want[len(tt.want)-1] == '"' && strings.Contains(p.Message, "did you mean") {
					t.Errorf("a suggestion for a name near no state: %v", p)
				}
			}
		}
		if !found {
			t.Errorf("want %q, got:\n%v", tt.want, ps)
		}
	}
}

func TestNearest(t *testing.T) {
	states := []string{"Backlog", "Research Needed", "Ready for Plan", "Done", "Canceled", "Human Needed"}
	for name, want := range map[string]string{
		"Reserch Needed": "Research Needed",
		"Cancelled":      "Canceled",
		"Human needed":   "Human Needed",
		"HUMAN  NEEDED":  "Human Needed",
		"Dome":           "Done",
		"Blocked":        "",
		"In Progress":    "",
		"Canceled":       "",
	} {
		got, ok := Nearest(name, states)
		if got != want || ok != (want != "") {
			t.Errorf("Nearest(%q) = %q, %v; want %q", name, got, ok, want)
		}
	}
}
