package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/ralph-gate/ralph-gate/ghsim"
	"github.com/ralph-gate/ralph-gate/sandbox"
	"github.com/ralph-gate/ralph-gate/store"
)

// startSim runs ghsim on seed (after edit) and writes the configuration serve would use
// against it; it returns the configuration file.
func startSim(t *testing.T, edit func(seedText string) string, adjust func(*ghsim.Seed)) string {
	t.Helper()
	file, _ := startSimServer(t, edit, adjust)
	return file
}

// startSimServer is startSim that also returns the simulator (to inject faults).
func startSimServer(t *testing.T, edit func(seedText string) string, adjust func(*ghsim.Seed)) (string, *ghsim.Server) {
	t.Helper()
	text := string(sandbox.DemoSeed())
	if edit != nil {
		text = edit(text)
	}
	seed, err := ghsim.ParseSeed([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	seed.App.PrivateKeyFile = filepath.Join(dir, "app.pem")
	if adjust != nil {
		adjust(&seed)
	}
	sim, err := ghsim.New(seed, ghsim.Options{WebhookURL: "https://ralph.example.com/api/github/hook"})
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
			"app": map[string]any{"integration_id": seed.App.ID, "webhook_secret": seed.App.WebhookSecret, "private_key": string(sim.PrivateKeyPEM())},
		},
		"projects": []map[string]any{{"owner": seed.Org, "number": 1}},
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return file, sim
}

// editConfig rewrites a configuration file through edit.
func editConfig(t *testing.T, file string, edit func(map[string]any)) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	edit(cfg)
	if data, err = yaml.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestDoctor(t *testing.T) {
	clearAppEnv(t)
	tests := []struct {
		name     string
		edit     func(string) string
		adjust   func(*ghsim.Seed)
		config   func(map[string]any)
		env      map[string]string
		code     int
		contains []string
		absent   []string
	}{
		{
			name: "a correct installation passes",
			code: exitOK,
			contains: []string{
				"ok    app: authenticated as ralph-gate (App ID 1001)",
				"ok    app: permissions organization_projects=write issues=write pull_requests=read metadata=read",
				"ok    app: subscribed to projects_v2_item, issues, pull_request",
				"ok    webhook: https://ralph.example.com/api/github/hook",
				"ok    installation: 2002 on acme",
				`ok    project acme/1: field "Workflow State" has exactly the workflow's 11 states`,
				"0 failure(s), 0 warning(s)",
			},
			absent: []string{"FAIL  ", "warn  "},
		},
		{
			name: "a project without Human Needed is named",
			edit: func(s string) string { return strings.Replace(s, ", Canceled, Human Needed]", ", Canceled]", 1) },
			code: exitError,
			contains: []string{
				`FAIL  project acme/1: field "Workflow State" lacks the option "Human Needed"`,
				`fix: in the project's settings edit the field "Workflow State" and add the option "Human Needed"`,
				"1 failure(s)",
			},
		},
		{
			name: "a misspelt option and an extra one",
			edit: func(s string) string {
				return strings.Replace(s, ", Canceled, Human Needed]", ", Canceled, Human needed, Blocked]", 1)
			},
			code: exitError,
			contains: []string{
				`lacks the option "Human Needed"`,
				`rename the option "Human needed" to "Human Needed"`,
				`has the option "Blocked", which is not a workflow state`,
				"2 failure(s)",
			},
		},
		{
			name: "a near-miss option is renamed, never deleted",
			edit: func(s string) string {
				return strings.Replace(s, ", Canceled, Human Needed]", ", Cancelled, Human Needed]", 1)
			},
			code: exitError,
			contains: []string{
				`FAIL  project acme/1: field "Workflow State" lacks the option "Canceled"`,
				`fix: rename the option "Cancelled" to "Canceled" in the field "Workflow State"`,
				"never delete it and add a new one: deleting an option clears it on every item that holds it",
				"1 failure(s)",
			},
			absent: []string{`has the option "Cancelled"`},
		},
		{
			name: "a field workflow.requirements names must be on the board",
			config: func(c map[string]any) {
				c["workflow"] = map[string]any{"requirements": []map[string]any{
					{"into": []string{"Ready for Plan"}, "fields": []string{"Estimat"}},
					{"into": []string{"Done"}, "fields": []string{"Estimate", "Risk"}},
				}}
			},
			code: exitError,
			contains: []string{
				`FAIL  project acme/1: has no field "Estimat", which workflow.requirements names`,
				`fix: the project has a field "Estimate": write that name under workflow.requirements`,
				`FAIL  project acme/1: has no field "Risk", which workflow.requirements names`,
				`fix: add a field named "Risk" to the project`,
				"2 failure(s)",
			},
			absent: []string{`has no field "Estimate"`},
		},
		{
			name:   "a project that does not exist",
			config: func(c map[string]any) { c["projects"] = []map[string]any{{"owner": "acme", "number": 7}} },
			code:   exitError,
			contains: []string{
				"FAIL  project acme/7: the project does not exist, or the App cannot see it",
				"fix: check projects[].owner and number",
			},
		},
		{
			name: "missing event and excess permissions",
			adjust: func(s *ghsim.Seed) {
				s.App.Permissions = map[string]string{"organization_projects": "write", "issues": "write", "pull_requests": "write", "metadata": "read",
					"contents": "read", "checks": "write", "administration": "read"}
				s.App.Events = []string{"projects_v2_item", "issues", "push", "release"}
			},
			code: exitError,
			contains: []string{
				"FAIL  app: not subscribed to the pull_request webhook event",
				`tick "Pull request"`,
				"warn  app: permission administration=read is more than ralph-gate needs",
				"warn  app: permission pull_requests=write is more than ralph-gate needs (read)",
				"warn  app: subscribed to release, which ralph-gate ignores",
			},
			// What app.yml asks for to read the organizations' policy files is not in excess
			// with projects listed in config.yml.
			absent: []string{"contents=read is more", "checks=write is more", "subscribed to push, which"},
		},
		{
			name:   "the board health pages need Members: read, on the App and the installation",
			config: enableUI,
			env:    map[string]string{"RALPH_GATE_SESSION_KEY": testSessionKey},
			code:   exitError,
			contains: []string{
				`FAIL  app: permission members is "none", ralph-gate needs read for the board health pages' sign-in (ui.enabled)`,
				`Organization permissions → Members to "Read-only"`,
				`FAIL  installation on acme: permission members is "none", ralph-gate needs read`,
				"2 failure(s), 0 warning(s)",
			},
		},
		{
			name:   "with the pages on, Members: read is exactly what is needed",
			adjust: grantMembers,
			config: enableUI,
			env:    map[string]string{"RALPH_GATE_SESSION_KEY": testSessionKey},
			code:   exitOK,
			contains: []string{
				"ok    config: ",
				"ok    app: permissions organization_projects=write members=read issues=write pull_requests=read metadata=read",
				"ok    installation on acme: permissions organization_projects=write members=read issues=write pull_requests=read metadata=read",
				"0 failure(s), 0 warning(s)",
			},
		},
		{
			name:   "with the pages off, Members: read is more than needed",
			adjust: grantMembers,
			code:   exitOK,
			contains: []string{
				"ok    app: permissions organization_projects=write issues=write pull_requests=read metadata=read",
				"warn  app: permission members=read is more than ralph-gate needs with ui.enabled false (the board health pages need it)",
				"0 failure(s), 1 warning(s)",
			},
		},
		{
			// config.yml lists no projects: each organization's policy file is read, which
			// needs Contents: read and Checks: write on every installation.
			name:   "policies from the organizations need Contents and Checks",
			config: func(c map[string]any) { delete(c, "projects") },
			adjust: func(s *ghsim.Seed) {
				s.App.Permissions = map[string]string{"organization_projects": "write", "issues": "write", "pull_requests": "read", "metadata": "read", "contents": "read"}
			},
			code: exitError,
			contains: []string{
				`FAIL  app: permission checks is "none", ralph-gate needs write`,
				`Repository permissions → Checks to "Read and write"`,
				"ok    installation: 2002 on acme",
				`FAIL  installation on acme: permission checks is "none", ralph-gate needs write`,
			},
			absent: []string{"project acme/1"},
		},
		{
			name: "a missing permission fails with the settings to change",
			adjust: func(s *ghsim.Seed) {
				s.App.Permissions = map[string]string{"organization_projects": "read", "issues": "write", "pull_requests": "read", "metadata": "read"}
			},
			code:     exitError,
			contains: []string{`FAIL  app: permission organization_projects is "read", ralph-gate needs write`, `Organization permissions → Projects to "Read and write"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := startSim(t, tt.edit, tt.adjust)
			if tt.config != nil {
				editConfig(t, file, tt.config)
			}
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			code, out, errOut := runCLI(t, "", "doctor", "--config", file)
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, out, errOut)
			}
			for _, want := range tt.contains {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			for _, bad := range tt.absent {
				if strings.Contains(out, bad) {
					t.Errorf("output has %q:\n%s", bad, out)
				}
			}
			if strings.Contains(out+errOut, "PRIVATE KEY") {
				t.Error("the private key was printed")
			}
		})
	}
}

// testSessionKey is a session key serve accepts (config.MinSessionKeyBytes, random-looking).
const testSessionKey = "3f9c1a7e5b2d4068ae1f7c3b9d5e2a4c6b8d0f1e3a5c7e9b"

// enableUI turns the board health pages on, with everything serve needs for them in the file
// (the session key comes from the environment).
func enableUI(c map[string]any) {
	c["ui"] = map[string]any{"enabled": true}
	c["server"] = map[string]any{"public_url": "https://ralph.example.com"}
	gh := c["github"].(map[string]any)
	gh["oauth"] = map[string]any{"client_id": "Iv1.0123456789abcdef", "client_secret": "0123456789abcdef0123456789abcdef01234567"}
}

// grantMembers gives the App (and so its installation) Members: read besides what ralph-gate
// always needs.
func grantMembers(s *ghsim.Seed) {
	s.App.Permissions = map[string]string{"organization_projects": "write", "issues": "write", "pull_requests": "read", "metadata": "read", "members": "read"}
}

// Without --config doctor checks the embedded config.yml like the other commands, and says
// what it lacks in its own words (not "serve needs…"); without the App's id and key it
// checks nothing on GitHub, and says so.
func TestDoctorWithoutConfig(t *testing.T) {
	clearAppEnv(t)
	code, out, errOut := runCLI(t, "", "doctor")
	if code != exitError || !strings.Contains(errOut, "--config") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{
		"FAIL  config: github.app.integration_id: is required",
		"FAIL  config: github.app.private_key: is required",
		"FAIL  config: github.app.webhook_secret: is required",
		"skip  github: not checked: doctor authenticates as the App",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// No project is no problem: serve reads each organization's policy file.
	if strings.Contains(out, "config: projects") {
		t.Errorf("doctor asks for projects:\n%s", out)
	}
	if strings.Contains(out+errOut, "serve needs") {
		t.Errorf("doctor speaks of serve's needs:\n%s%s", out, errOut)
	}
}

// A problem that does not keep doctor from acting as the App (here: no webhook secret) is a
// failure, and the GitHub checks still run.
func TestDoctorReportsConfigProblemsAndGoesOn(t *testing.T) {
	clearAppEnv(t)
	file := startSim(t, nil, nil)
	editConfig(t, file, func(c map[string]any) {
		delete(c["github"].(map[string]any)["app"].(map[string]any), "webhook_secret")
	})
	code, out, _ := runCLI(t, "", "doctor", "--config", file)
	if code != exitError {
		t.Errorf("exit %d, want %d", code, exitError)
	}
	for _, want := range []string{"FAIL  config: github.app.webhook_secret: is required", "ok    app: authenticated as ralph-gate",
		`ok    project acme/1: field "Workflow State" has exactly`, "1 failure(s), 0 warning(s)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// doctor --json: {"ok","failures","warnings","checks":[{"name","status","detail","hint"}]}.
func TestDoctorJSON(t *testing.T) {
	clearAppEnv(t)
	type check struct {
		Name, Status, Detail, Hint string
	}
	type report struct {
		OK                 bool
		Failures, Warnings int
		Checks             []check
	}
	tests := []struct {
		name   string
		edit   func(string) string
		code   int
		ok     bool
		failed []check // the failed checks (Detail and Hint: substrings)
	}{
		{name: "a correct installation", code: exitOK, ok: true},
		{name: "a near-miss option", code: exitError,
			edit: func(s string) string {
				return strings.Replace(s, ", Canceled, Human Needed]", ", Cancelled, Human Needed]", 1)
			},
			failed: []check{{Name: "project acme/1", Status: "fail", Detail: `field "Workflow State" lacks the option "Canceled"`,
				Hint: `rename the option "Cancelled" to "Canceled"`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := startSim(t, tt.edit, nil)
			code, out, errOut := runCLI(t, "", "doctor", "--json", "--config", file)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tt.code, out, errOut)
			}
			var rep report
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, out)
			}
			for _, key := range []string{`"ok":`, `"failures":`, `"warnings":`, `"checks":`, `"name":`, `"status":`, `"detail":`} {
				if !strings.Contains(out, key) {
					t.Errorf("the report lacks %s:\n%s", key, out)
				}
			}
			if rep.OK != tt.ok || rep.Failures != len(tt.failed) {
				t.Errorf("ok %v with %d failure(s), want %v with %d", rep.OK, rep.Failures, tt.ok, len(tt.failed))
			}
			names := map[string]bool{}
			var failed []check
			for _, c := range rep.Checks {
				names[c.Name] = true
				if c.Status == "fail" {
					failed = append(failed, c)
				}
				if !slices.Contains([]string{"ok", "warn", "fail", "skip"}, c.Status) || c.Detail == "" {
					t.Errorf("check %+v", c)
				}
			}
			for _, n := range []string{"config", "app", "webhook", "installation", "installation on acme", "project acme/1"} {
				if !names[n] {
					t.Errorf("no check named %q: %v", n, names)
				}
			}
			if len(failed) != len(tt.failed) {
				t.Fatalf("failed checks %+v, want %+v", failed, tt.failed)
			}
			for i, w := range tt.failed {
				g := failed[i]
				if g.Name != w.Name || !strings.Contains(g.Detail, w.Detail) || !strings.Contains(g.Hint, w.Hint) {
					t.Errorf("failed check %+v, want %+v", g, w)
				}
			}
		})
	}
}

// doctor explains every GitHub error it meets in a sentence with its fix: never the client
// library's raw text ("GET …: 404 Not Found []"), and never credential advice for a request
// that did not reach GitHub (DNS, a refused connection, a timeout).
func TestDoctorExplainsGitHubErrors(t *testing.T) {
	clearAppEnv(t)
	closed := closedPort(t)
	silent := silentServer(t)
	tests := []struct {
		name     string
		config   func(map[string]any)
		faults   *ghsim.Faults
		args     []string
		contains []string
		absent   []string
	}{
		{
			name:   "an organization the App is not installed on",
			config: func(c map[string]any) { c["projects"] = []map[string]any{{"owner": "globex", "number": 1}} },
			contains: []string{
				"FAIL  installation: the App ralph-gate is not installed on the organization globex (or globex is not an organization GitHub knows)",
				"fix: an owner of globex installs it from ", "/apps/ralph-gate/installations/new",
			},
			absent: []string{"404 Not Found", "installation on globex: permissions"},
		},
		{
			name:   "a GitHub that refuses connections",
			config: githubAt("http://" + closed),
			contains: []string{
				"FAIL  app: cannot reach " + closed + " (connection refused): GitHub was not asked who the App is",
				"fix: check the URL (github.v3_api_url http://" + closed + "/api/v3/", "DNS, firewall", "HTTPS_PROXY",
			},
			absent: []string{"integration_id", "private key", "generate a new key"},
		},
		{
			name:   "a GitHub host that does not resolve",
			config: githubAt("http://ralph-gate-doctor.invalid"),
			contains: []string{
				"FAIL  app: cannot reach ralph-gate-doctor.invalid (", "fix: check the URL (github.v3_api_url http://ralph-gate-doctor.invalid/api/v3/",
			},
			absent: []string{"integration_id", "private key"},
		},
		{
			name:   "a GitHub that never answers",
			config: githubAt("http://" + silent),
			args:   []string{"--timeout", "1s"},
			contains: []string{
				"FAIL  app: cannot reach " + silent + " (no answer before doctor's --timeout): GitHub was not asked who the App is",
				"fix: check the URL",
			},
			absent: []string{"integration_id", "private key"},
		},
		{
			name: "an App ID GitHub does not know",
			config: func(c map[string]any) {
				c["github"].(map[string]any)["app"].(map[string]any)["integration_id"] = 999999
			},
			contains: []string{
				"FAIL  app: GitHub refused to authenticate as App 999999 (GitHub answered 401 Unauthorized",
				"fix: check github.app.integration_id",
			},
		},
		{
			name: "an API URL where GitHub's API is not",
			config: func(c map[string]any) {
				gh := c["github"].(map[string]any)
				gh["v3_api_url"] = gh["web_url"].(string) + "/wrong/"
			},
			contains: []string{
				"knows no App behind GET /app (GitHub answered 404 Not Found)",
				"fix: check github.v3_api_url (", "/wrong/: https://api.github.com/ for github.com",
			},
		},
		{
			name:   "GitHub failing while looking for the installation",
			faults: &ghsim.Faults{ErrorRate: 1, Operations: []string{"rest:GET /orgs/{org}/installation"}},
			contains: []string{
				"FAIL  installation: GitHub failed while looking for the App's installation on acme (GitHub answered 502 Bad Gateway",
				"fix: try again in a few minutes; https://www.githubstatus.com",
			},
		},
		{
			name:   "GitHub failing to issue the installation's token",
			faults: &ghsim.Faults{ErrorRate: 1, Operations: []string{"rest:POST /app/installations/{id}/access_tokens"}},
			contains: []string{
				"FAIL  installation on acme: GitHub failed while asking for a token of the installation on acme (GitHub answered 502 Bad Gateway",
				"fix: try again in a few minutes",
			},
		},
		{
			name:   "GitHub failing while the board is read",
			faults: &ghsim.Faults{ErrorRate: 1, Operations: []string{"graphql:*"}},
			contains: []string{
				"FAIL  project acme/1: GitHub failed while the board was read (HTTP 502)",
				"fix: try again in a few minutes",
			},
		},
		{
			name:   "a rate limit on the App's own request",
			faults: &ghsim.Faults{PrimaryExhausted: true, Operations: []string{"rest:GET /app"}},
			contains: []string{
				"FAIL  app: GitHub's rate limit stopped doctor while authenticating as App 1001",
				"fix: run doctor again once the limit resets",
			},
			absent: []string{"integration_id"},
		},
	}
	rawError := regexp.MustCompile(`\d{3} [A-Z][A-Za-z ]*\[\]|(GET|POST|PATCH) https?://`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file, sim := startSimServer(t, nil, nil)
			if tt.config != nil {
				editConfig(t, file, tt.config)
			}
			if tt.faults != nil {
				if err := sim.SetFaults(*tt.faults); err != nil {
					t.Fatal(err)
				}
			}
			code, out, errOut := runCLI(t, "", append([]string{"doctor", "--config", file}, tt.args...)...)
			if code != exitError {
				t.Errorf("exit %d, want %d", code, exitError)
			}
			for _, want := range tt.contains {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s%s", want, out, errOut)
				}
			}
			for _, bad := range tt.absent {
				if strings.Contains(out, bad) {
					t.Errorf("output has %q:\n%s", bad, out)
				}
			}
			if m := rawError.FindString(out); m != "" {
				t.Errorf("a raw GitHub error (%q) was printed:\n%s", m, out)
			}
		})
	}
}

// githubAt points the configuration's GitHub at base.
func githubAt(base string) func(map[string]any) {
	return func(c map[string]any) {
		gh := c["github"].(map[string]any)
		gh["web_url"], gh["v3_api_url"], gh["v4_api_url"] = base, base+"/api/v3/", base+"/api/graphql"
	}
}

// closedPort is a local address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// silentServer accepts connections and never answers.
func silentServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// doctor checks the store serve would open, reading only: what would stop serve at once (an
// unreachable PostgreSQL server, a SQLite file in a directory that does not exist) fails with
// its fix; a store serve will create or migrate is fine, and said so. It once passed all of
// these ("0 failure(s)"), and serve then exited at once.
func TestDoctorChecksTheStore(t *testing.T) {
	clearAppEnv(t)
	const password = "hunter2-Pw"
	dir := t.TempDir()
	migrated := filepath.Join(dir, "migrated.db")
	st, err := store.Open(t.Context(), store.DriverSQLite, migrated)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, driver, dsn string
		code              int
		contains          []string
	}{
		{
			name: "an unreachable PostgreSQL server", driver: "postgres", dsn: "postgres://ralph:" + password + "@127.0.0.1:1/ralph?sslmode=disable",
			code: exitError,
			contains: []string{
				`FAIL  store: cannot reach the PostgreSQL server 127.0.0.1:1 (connection refused): serve cannot start`,
				"fix: check the host and port in store.dsn (or RALPH_GATE_STORE_DSN)",
			},
		},
		{
			name: "an SQLite file in a directory that does not exist", driver: "sqlite", dsn: filepath.Join(dir, "typo", "rg.db"),
			code: exitError,
			contains: []string{
				"FAIL  store: the directory " + filepath.Join(dir, "typo") + " of the SQLite store " + filepath.Join(dir, "typo", "rg.db") + " does not exist: serve refuses to start",
				"fix: fix store.dsn (or RALPH_GATE_STORE_DSN) if the path is mistyped; otherwise create the directory (mkdir -p " + filepath.Join(dir, "typo") + ")",
			},
		},
		{
			name: "an SQLite store serve will create", driver: "sqlite", dsn: filepath.Join(dir, "new.db"),
			code:     exitOK,
			contains: []string{"ok    store: sqlite " + filepath.Join(dir, "new.db") + " does not exist yet: serve creates it on its first start"},
		},
		{
			name: "an SQLite file without ralph-gate's tables yet", driver: "sqlite", dsn: empty,
			code:     exitOK,
			contains: []string{"ok    store: sqlite " + empty + " has no ralph-gate tables yet: serve creates them on its first start"},
		},
		{
			name: "an SQLite store serve has migrated", driver: "sqlite", dsn: migrated,
			code:     exitOK,
			contains: []string{"ok    store: sqlite " + migrated + ": ralph-gate's store, schema up to date"},
		},
		{
			name: "a directory instead of a file", driver: "sqlite", dsn: dir,
			code:     exitError,
			contains: []string{"FAIL  store: " + dir + " is a directory, not an SQLite database file"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := startSim(t, nil, nil)
			editConfig(t, file, func(c map[string]any) { c["store"] = map[string]any{"driver": tt.driver, "dsn": tt.dsn} })
			code, out, errOut := runCLI(t, "", "doctor", "--config", file)
			if code != tt.code {
				t.Errorf("exit %d, want %d\n%s%s", code, tt.code, out, errOut)
			}
			for _, want := range tt.contains {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			if strings.Contains(out+errOut, password) {
				t.Errorf("the store's password was printed:\n%s", out)
			}
			// The GitHub checks still run.
			if !strings.Contains(out, "ok    app: authenticated as ralph-gate") {
				t.Errorf("the GitHub checks did not run:\n%s", out)
			}
		})
	}
	// Reading only: nothing was created, the empty file stayed empty.
	for _, p := range []string{filepath.Join(dir, "typo"), filepath.Join(dir, "new.db")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("doctor created %s", p)
		}
	}
	if fi, err := os.Stat(empty); err != nil || fi.Size() != 0 {
		t.Errorf("doctor wrote to %s (%v)", empty, err)
	}
	// A store.dsn the configuration refuses is not opened.
	file := startSim(t, nil, nil)
	editConfig(t, file, func(c map[string]any) { c["store"] = map[string]any{"driver": "sqlite", "dsn": "postgres://db/ralph"} })
	if _, out, _ := runCLI(t, "", "doctor", "--config", file); !strings.Contains(out, "skip  store: not checked: store.driver and store.dsn must be fixed first") {
		t.Errorf("a refused store.dsn was checked:\n%s", out)
	}
}

// With PostgreSQL (RALPH_GATE_TEST_POSTGRES_DSN): a reachable server passes, before and after
// serve migrates it; a user it does not know and a database it does not have fail, each with
// its fix.
func TestDoctorChecksAPostgresStore(t *testing.T) {
	base := os.Getenv("RALPH_GATE_TEST_POSTGRES_DSN")
	if base == "" {
		t.Skip("set RALPH_GATE_TEST_POSTGRES_DSN (eval \"$(bash .ci/postgres.sh start)\") to run against PostgreSQL")
	}
	clearAppEnv(t)
	u, err := url.Parse(base)
	if err != nil || u.Scheme == "" {
		t.Skipf("RALPH_GATE_TEST_POSTGRES_DSN is not a postgres:// URL (%v)", err)
	}
	ctx := t.Context()
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	schema := "doctor_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = admin.ExecContext(context.Background(), "DROP SCHEMA "+schema+" CASCADE") })
	with := func(edit func(u *url.URL)) string {
		v := *u
		q := v.Query()
		q.Set("search_path", schema)
		v.RawQuery = q.Encode()
		if edit != nil {
			edit(&v)
		}
		return v.String()
	}
	dsn := with(nil)
	db := strings.TrimPrefix(u.Path, "/")
	server := u.Host
	doctor := func(t *testing.T, dsn string) (int, string) {
		t.Helper()
		file := startSim(t, nil, nil)
		editConfig(t, file, func(c map[string]any) { c["store"] = map[string]any{"driver": "postgres"} })
		t.Setenv("RALPH_GATE_STORE_DSN", dsn)
		code, out, _ := runCLI(t, "", "doctor", "--config", file)
		return code, out
	}
	t.Run("reachable, not migrated yet", func(t *testing.T) {
		code, out := doctor(t, dsn)
		if code != exitOK || !strings.Contains(out, `ok    store: postgres database "`+db+`" on `) ||
			!strings.Contains(out, "has no ralph-gate tables yet: serve creates them on its first start") {
			t.Errorf("exit %d:\n%s", code, out)
		}
	})
	t.Run("migrated", func(t *testing.T) {
		st, err := store.Open(ctx, store.DriverPostgres, dsn)
		if err != nil {
			t.Fatal(err)
		}
		st.Close()
		code, out := doctor(t, dsn)
		if code != exitOK || !strings.Contains(out, "ralph-gate's store, schema up to date") {
			t.Errorf("exit %d:\n%s", code, out)
		}
	})
	t.Run("a user the server does not know", func(t *testing.T) {
		code, out := doctor(t, with(func(v *url.URL) { v.User = url.UserPassword("nobody_"+schema, "wrong") }))
		if code != exitError || !strings.Contains(out, `FAIL  store: PostgreSQL refused the user "nobody_`+schema+`"`) ||
			!strings.Contains(out, "fix: check the user and password in store.dsn") || strings.Contains(out, "wrong") {
			t.Errorf("exit %d:\n%s", code, out)
		}
	})
	t.Run("a database the server does not have", func(t *testing.T) {
		code, out := doctor(t, with(func(v *url.URL) { v.Path = "/missing_" + schema }))
		if code != exitError || !strings.Contains(out, `FAIL  store: the PostgreSQL server `+server+` has no database "missing_`+schema+`"`) ||
			!strings.Contains(out, "fix: create it (CREATE DATABASE missing_"+schema) {
			t.Errorf("exit %d:\n%s", code, out)
		}
	})
}
