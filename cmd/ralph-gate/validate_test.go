package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// validate refuses what serve would refuse: a store DSN that does not suit the driver (from
// the file or from RALPH_GATE_STORE_DSN) and a short webhook secret, each by key path, all at
// once, echoing neither a password nor the secret, and creating no file.
func TestValidateRefusesUnsafeStoreAndSecret(t *testing.T) {
	clearAppEnv(t)
	const password, secret = "hunter2-Pw", "tiny-s3cret"
	dir := t.TempDir()
	// Everything else serve needs is there: the App from the environment, a project.
	t.Setenv("GITHUB_APP_INTEGRATION_ID", "1001")
	t.Setenv("GITHUB_APP_PRIVATE_KEY_FILE", writeKeyFile(t, dir))
	t.Chdir(dir)
	write := func(name, text string) string {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte("projects: [{owner: acme, number: 1}]\n"+text), 0o600); err != nil {
			t.Fatal(err)
		}
		return name
	}
	pgURL := write("pg-url.yml", "store:\n  dsn: postgres://ralph:"+password+"@db:5432/ralph\n")
	libpq := write("libpq.yml", "store:\n  driver: sqlite\n  dsn: host=db user=ralph password="+password+" dbname=ralph\n")
	pgFile := write("pg-file.yml", "store:\n  driver: postgres\n  dsn: ralph-gate.db\n")
	both := write("both.yml", "github:\n  app:\n    webhook_secret: "+secret+"\nstore:\n  dsn: postgresql://ralph:"+password+"@db/ralph\n")
	plain := write("plain.yml", "store:\n  dsn: ralph-gate.db\n")
	const sound = "Zq4v8tN1xK7mR2pW9cL5"

	tests := []struct {
		name     string
		file     string
		env      map[string]string
		code     int
		contains []string
	}{
		{"postgres URL with the default driver", pgURL, map[string]string{"GITHUB_APP_WEBHOOK_SECRET": sound}, exitError, []string{"store.dsn: ", "store.driver", "postgres://xxxxx@db:5432/ralph", "1 problem(s)"}},
		{"libpq settings with sqlite", libpq, map[string]string{"GITHUB_APP_WEBHOOK_SECRET": sound}, exitError, []string{"store.dsn: ", "store.driver", "password=…"}},
		{"file path with postgres", pgFile, map[string]string{"GITHUB_APP_WEBHOOK_SECRET": sound}, exitError, []string{"store.dsn: ", "store.driver is postgres"}},
		{"every problem at once", both, nil, exitError, []string{"github.app.webhook_secret: ", "at least 16", "store.dsn: ", "2 problem(s)"}},
		{"postgres URL from the environment", plain, map[string]string{"RALPH_GATE_STORE_DSN": "postgres://ralph:" + password + "@db/ralph", "GITHUB_APP_WEBHOOK_SECRET": sound}, exitError,
			[]string{"store.dsn: ", "store.driver"}},
		{"short secret from the environment", plain, map[string]string{"GITHUB_APP_WEBHOOK_SECRET": secret}, exitError,
			[]string{"github.app.webhook_secret: ", "at least 16"}},
		{"sound file", plain, map[string]string{"GITHUB_APP_WEBHOOK_SECRET": sound}, exitOK, []string{"is valid for serve"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			code, out, errOut := runCLI(t, "", "validate", "--config", tt.file)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, out, errOut)
			}
			for _, want := range tt.contains {
				if !strings.Contains(out, want) {
					t.Errorf("stdout lacks %q:\n%s", want, out)
				}
			}
			if strings.Contains(out+errOut, password) || strings.Contains(out+errOut, secret) {
				t.Errorf("output echoes a secret:\n%s%s", out, errOut)
			}
		})
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".yml") && e.Name() != "app.pem" {
			t.Errorf("validate created %q", e.Name())
		}
	}
}

// validate --show-workflow prints, after the report, the workflow in effect (the default
// extended by the file's section) as a section that reads back as the same workflow; it
// changes neither the report nor the exit code.
func TestValidateShowWorkflow(t *testing.T) {
	clearAppEnv(t)
	dir := t.TempDir()
	write := func(name, text string) string {
		t.Helper()
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return file
	}
	const project = "projects: [{owner: acme, number: 1}]\n"
	partial := write("partial.yml", project+"workflow:\n  review_mode: auto\n  states:\n    - name: In Progress\n      next: [In Review, Human Needed, Ready for Plan]\n")
	typo := write("typo.yml", project+"workflow:\n  states:\n    - name: In Progress\n      next: [In Reveiw]\n")
	notYAML := write("not-yaml.yml", "workflow: [\n")
	const inProgress = "    - name: In Progress\n      kind: lock\n      description: Implementation underway\n      next: [In Review, Human Needed, Ready for Plan]\n"
	const header = "\n# The workflow in effect, written whole (extends: none): pasted into a file, this section\n# is exactly this workflow.\nworkflow:\n  extends: none\n  field: Workflow State\n"
	tests := []struct {
		name     string
		args     []string
		code     int
		contains []string
		absent   []string
	}{
		{"a partial workflow, merged", []string{"--config", partial, "--for", "file", "--show-workflow"}, exitOK,
			[]string{partial + " is valid as a file: 11 states, 10 commands, 7 intents", header, inProgress, "    - name: Canceled\n", "  review_mode: auto\n"}, nil},
		{"without the flag", []string{"--config", partial, "--for", "file"}, exitOK,
			[]string{"is valid as a file"}, []string{"workflow:", "extends"}},
		{"an invalid workflow is shown too", []string{"--config", typo, "--for", "file", "--show-workflow"}, exitError,
			[]string{`workflow.states[6].next[0]: unknown state "In Reveiw" (did you mean "In Review"?) (the file's workflow.states[0].next[0], line 5)`,
				"problem(s) in " + typo, header, "      next: [In Reveiw]\n"}, nil},
		{"a file that is not YAML", []string{"--config", notYAML, "--for", "file", "--show-workflow"}, exitError,
			[]string{"(file): line 1: ", "# No workflow to show: none was decoded (see the problems above).\n"}, []string{"workflow:"}},
		{"the embedded default", []string{"--show-workflow"}, exitOK,
			[]string{"the embedded config.yml is valid as a file", header, "  review_mode: skip\n"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", append([]string{"validate"}, tt.args...)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, out, errOut)
			}
			for _, want := range tt.contains {
				if !strings.Contains(out, want) {
					t.Errorf("stdout lacks %q:\n%s", want, out)
				}
			}
			for _, bad := range tt.absent {
				if strings.Contains(out, bad) {
					t.Errorf("stdout has %q:\n%s", bad, out)
				}
			}
		})
	}

	// The section printed is the same workflow on its own: validated, it prints itself again.
	_, out, _ := runCLI(t, "", "validate", "--config", partial, "--for", "file", "--show-workflow")
	_, section, _ := strings.Cut(out, "\nworkflow:\n")
	again := write("again.yml", project+"workflow:\n"+section)
	code, out2, _ := runCLI(t, "", "validate", "--config", again, "--for", "file", "--show-workflow")
	if _, section2, _ := strings.Cut(out2, "\nworkflow:\n"); code != exitOK || section2 != section {
		t.Errorf("the printed workflow does not read back as itself (exit %d):\n%s\nfrom\n%s", code, section2, section)
	}

	// --json carries it as effective_workflow, with the keys config.yml spells.
	for _, show := range []bool{true, false} {
		args := []string{"validate", "--json", "--config", partial, "--for", "file"}
		if show {
			args = append(args, "--show-workflow")
		}
		code, out, errOut := runCLI(t, "", args...)
		var rep struct {
			Valid             bool            `json:"valid"`
			EffectiveWorkflow json.RawMessage `json:"effective_workflow"`
		}
		if err := json.Unmarshal([]byte(out), &rep); code != exitOK || err != nil || !rep.Valid {
			t.Fatalf("validate --json (show %v): exit %d, %v\n%s%s", show, code, err, out, errOut)
		}
		if !show {
			if rep.EffectiveWorkflow != nil {
				t.Errorf("effective_workflow without --show-workflow:\n%s", out)
			}
			continue
		}
		var spec struct {
			ReviewMode string `json:"review_mode"`
			States     []struct {
				Name, Kind string
				Next       []string
			} `json:"states"`
		}
		if err := json.Unmarshal(rep.EffectiveWorkflow, &spec); err != nil || spec.ReviewMode != "auto" || len(spec.States) != 11 ||
			spec.States[6].Kind != "lock" || !slices.Equal(spec.States[6].Next, []string{"In Review", "Human Needed", "Ready for Plan"}) {
			t.Errorf("effective_workflow: %v %+v\n%s", err, spec, rep.EffectiveWorkflow)
		}
	}
}

// validate --org-policy checks an organization's policy file as the App checks a push of it
// (config.Config.ForOrganization against the deployment's configuration): every problem by
// key path with its line in the file, a valid file accepted, and owner left out as the
// organization's file may.
func TestValidateOrgPolicy(t *testing.T) {
	clearAppEnv(t)
	dir := t.TempDir()
	write := func(name, text string) string {
		t.Helper()
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return file
	}
	valid := write("valid.yml", "projects:\n  - {owner: acme, number: 1}\n  - {number: 2, mode: evaluate}\nworkflow:\n  review_mode: auto\n")
	noOwner := write("no-owner.yml", "# acme's policy\nprojects:\n  - number: 1\n")
	misspelt := write("misspelt.yml", "projects: [{owner: acme, number: 1}]\nworkflow:\n  review_mod: auto\nserver:\n  port: 9090\n")
	agents := write("agents.yml", "projects: [{owner: acme, number: 1}]\nmcp:\n  agents:\n    - {name: builder-1, commands: [impl]}\n")
	deployment := write("deployment.yml", "mcp:\n  agents:\n    - {name: builder-1, token_env: RALPH_BUILDER_TOKEN, commands: [impl, pr]}\n")
	var many strings.Builder
	many.WriteString("projects: [{owner: acme, number: 1}]\n")
	for i := range 150 {
		fmt.Fprintf(&many, "key%d: 1\n", i)
	}
	manyProblems := write("many.yml", many.String())
	embedded := "against the embedded config.yml"

	tests := []struct {
		name     string
		args     []string
		code     int
		contains []string
		absent   []string
		stderr   string
	}{
		{"a valid file, the organization its projects' owner", []string{"--org-policy", valid}, exitOK,
			[]string{valid + " is valid as acme's policy file " + embedded + ": 2 project(s), 11 states, 10 commands, 7 intents"}, nil, ""},
		{"projects[0].owner left out, the organization given", []string{"--org-policy", noOwner, "--org", "acme"}, exitOK,
			[]string{noOwner + " is valid as acme's policy file"}, []string{"owner: is required"}, ""},
		{"a misspelt key and an operator's key, each with its line", []string{"--org-policy", misspelt}, exitError,
			[]string{`workflow.review_mod (line 3): unknown key (line 3) (did you mean "review_mode"?); known keys: extends, field`,
				"server.port (line 5): is the operator's: it belongs in the deployment's config.yml",
				"2 problem(s) in " + misspelt + ", checked as acme's policy file " + embedded}, nil, ""},
		{"another organization's file", []string{"--org-policy", valid, "--org", "globex"}, exitError,
			[]string{`projects[0].owner (line 2): "acme" is another organization: globex's policy file lists only globex's own projects`}, nil, ""},
		{"an agent the embedded config.yml does not list", []string{"--org-policy", agents}, exitError,
			[]string{`mcp.agents[0].name (line 4): agent "builder-1" is not in the deployment's config.yml`}, nil, ""},
		{"the same agent, against the deployment's config.yml that lists it", []string{"--org-policy", agents, "--config", deployment}, exitOK,
			[]string{agents + " is valid as acme's policy file against " + deployment}, nil, ""},
		{"a long list of problems is cut short", []string{"--org-policy", manyProblems}, exitError,
			[]string{"key99 (line 101): unknown key", "(file) (line 1): … and 50 more not listed (only the first 100 problems of a policy file are)",
				"101 problem(s) in " + manyProblems}, []string{"key100 "}, ""},
		{"a file that cannot be read", []string{"--org-policy", filepath.Join(dir, "absent.yml"), "--org", "acme"}, exitError,
			[]string{"--org-policy: read the policy file: ", "1 problem(s) in "}, nil, ""},
		{"no owner and no --org", []string{"--org-policy", noOwner}, exitUsage, nil, nil, "give --org LOGIN, the organization whose file it is"},
		{"--org without --org-policy", []string{"--org", "acme"}, exitUsage, nil, nil, "--org goes with --org-policy FILE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", append([]string{"validate"}, tt.args...)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, out, errOut)
			}
			for _, want := range tt.contains {
				if !strings.Contains(out, want) {
					t.Errorf("stdout lacks %q:\n%s", want, out)
				}
			}
			for _, bad := range tt.absent {
				if strings.Contains(out, bad) {
					t.Errorf("stdout has %q:\n%s", bad, out)
				}
			}
			if !strings.Contains(errOut, tt.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tt.stderr, errOut)
			}
		})
	}

	// --json gives each problem its line, and says which organization's file it checked.
	code, out, errOut := runCLI(t, "", "validate", "--json", "--org-policy", misspelt)
	var rep struct {
		OrgPolicy string `json:"org_policy"`
		Org       string `json:"org"`
		Valid     bool   `json:"valid"`
		Problems  []struct {
			Path string `json:"path"`
			Line int    `json:"line"`
		} `json:"problems"`
	}
	if err := json.Unmarshal([]byte(out), &rep); code != exitError || err != nil {
		t.Fatalf("validate --json --org-policy: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	if rep.OrgPolicy != misspelt || rep.Org != "acme" || rep.Valid || len(rep.Problems) != 2 ||
		rep.Problems[0].Path != "server.port" || rep.Problems[0].Line != 5 || rep.Problems[1].Path != "workflow.review_mod" || rep.Problems[1].Line != 3 {
		t.Errorf("validate --json --org-policy: %+v", rep)
	}
}
