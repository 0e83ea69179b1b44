package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/ralph-gate/ralph-gate/ghsim"
	"github.com/ralph-gate/ralph-gate/sandbox"
)

// startSim runs ghsim on seed (after edit) and writes the configuration serve would use
// against it; it returns the configuration file.
func startSim(t *testing.T, edit func(seedText string) string, adjust func(*ghsim.Seed)) string {
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
	return file
}

func TestDoctor(t *testing.T) {
	for _, k := range []string{"GITHUB_APP_INTEGRATION_ID", "GITHUB_APP_WEBHOOK_SECRET", "GITHUB_APP_PRIVATE_KEY"} {
		if _, ok := os.LookupEnv(k); ok {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
	tests := []struct {
		name     string
		edit     func(string) string
		adjust   func(*ghsim.Seed)
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
			name: "missing event and excess permissions",
			adjust: func(s *ghsim.Seed) {
				s.App.Permissions = map[string]string{"organization_projects": "write", "issues": "write", "pull_requests": "write", "metadata": "read", "contents": "read"}
				s.App.Events = []string{"projects_v2_item", "issues", "push"}
			},
			code: exitError,
			contains: []string{
				"FAIL  app: not subscribed to the pull_request webhook event",
				`tick "Pull request"`,
				"warn  app: permission contents=read is more than ralph-gate needs",
				"warn  app: permission pull_requests=write is more than ralph-gate needs (read)",
				"warn  app: subscribed to push, which ralph-gate ignores",
			},
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

func TestDoctorWithoutConfig(t *testing.T) {
	code, _, errOut := runCLI(t, "", "doctor")
	if code != exitError || !strings.Contains(errOut, "--config") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}
