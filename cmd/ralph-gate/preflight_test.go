package main

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
)

// appEnv are the variables that give the App's identity and secrets.
var appEnv = []string{"GITHUB_APP_INTEGRATION_ID", "GITHUB_APP_WEBHOOK_SECRET", "GITHUB_APP_PRIVATE_KEY",
	"GITHUB_APP_PRIVATE_KEY_FILE", "RALPH_GATE_STORE_DSN", "GITHUB_OAUTH_CLIENT_ID", "GITHUB_OAUTH_CLIENT_SECRET", "RALPH_GATE_SESSION_KEY"}

// clearAppEnv unsets the App's variables for the test, so a developer's own do not leak in.
func clearAppEnv(t *testing.T) {
	t.Helper()
	for _, k := range appEnv {
		if _, ok := os.LookupEnv(k); ok {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
}

var testKey = sync.OnceValues(func() ([]byte, error) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}), nil
})

// writeKeyFile writes an RSA private key, as GitHub generates an App's, to dir/app.pem.
func writeKeyFile(t *testing.T, dir string) string {
	t.Helper()
	key, err := testKey()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "app.pem")
	if err := os.WriteFile(file, key, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// validate checks what each command needs, with every static check serve runs, by key path.
func TestValidateChecksWhatEachCommandNeeds(t *testing.T) {
	clearAppEnv(t)
	dir := t.TempDir()
	keyFile := writeKeyFile(t, dir)
	write := func(name, text string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	project := "projects: [{owner: acme, number: 1}]\nstore: {dsn: " + filepath.Join(dir, "x.db") + "}\n"
	good := write("good.yml", project)
	noProject := write("no-project.yml", "store: {dsn: x.db}\n")
	unsetToken := write("unset-token.yml", project+"mcp: {agents: [{name: a, token_env: RALPH_TEST_UNSET_TOKEN}]}\n")
	sharedToken := write("shared.yml", project+"mcp: {agents: [{name: a, token_env: RALPH_TEST_TOKEN}, {name: b, token_env: RALPH_TEST_TOKEN}]}\n")
	typo := write("typo.yml", project+strings.Replace(defaultWorkflow(t), "next: [Research Needed, Ready for Plan, Done, Canceled]",
		"next: [Reserch Needed, Ready for Plan, Done, Canceled]", 1))
	wrongType := write("type.yml", project+"enforcement:\n  coalesce_window: 10\n")

	app := map[string]string{"GITHUB_APP_INTEGRATION_ID": "1001", "GITHUB_APP_PRIVATE_KEY_FILE": keyFile}
	all := map[string]string{"GITHUB_APP_INTEGRATION_ID": "1001", "GITHUB_APP_PRIVATE_KEY_FILE": keyFile,
		"GITHUB_APP_WEBHOOK_SECRET": "Zq4v8tN1xK7mR2pW9cL5", "RALPH_TEST_TOKEN": "a-token-of-20-chars-"}
	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		code     int
		contains []string
		absent   []string
	}{
		{"serve by default with --config", []string{"--config", good}, nil, exitError,
			[]string{"github.app.integration_id: is required", "github.app.private_key: is required", "github.app.webhook_secret: is required",
				"3 problem(s) in " + good + ", checked for serve"}, []string{"projects:"}},
		{"serve with everything", []string{"--config", good}, all, exitOK, []string{good + " is valid for serve: 11 states"}, nil},
		{"mcp needs no webhook secret", []string{"--config", good, "--for", "mcp"}, app, exitOK, []string{"is valid for mcp --stdio"}, nil},
		{"mcp needs the key", []string{"--config", good, "--for", "mcp"}, map[string]string{"GITHUB_APP_INTEGRATION_ID": "1001"}, exitError,
			[]string{"github.app.private_key: is required", "1 problem(s)"}, []string{"webhook_secret"}},
		{"the file alone", []string{"--config", good, "--for", "file"}, nil, exitOK, []string{"is valid as a file"}, nil},
		{"the embedded default is checked as a file", nil, nil, exitOK, []string{"the embedded config.yml is valid as a file"}, nil},
		// Serve needs no project: without one it reads each organization's policy file.
		{"the embedded default for serve", []string{"--for", "serve"}, nil, exitError,
			[]string{"github.app.integration_id: is required", "github.app.private_key: is required", "github.app.webhook_secret: is required",
				"3 problem(s) in the embedded config.yml, checked for serve"}, []string{"projects:"}},
		{"no project", []string{"--config", noProject}, all, exitOK, []string{noProject + " is valid for serve"}, []string{"projects:"}},
		{"no project for mcp", []string{"--config", noProject, "--for", "mcp"}, app, exitError,
			[]string{"projects: list at least one organization project to enforce ({owner, number}): mcp --stdio reads no organization's policy file", "1 problem(s)"}, nil},
		{"an unset token_env", []string{"--config", unsetToken}, all, exitError,
			[]string{"mcp.agents[0].token_env: environment variable RALPH_TEST_UNSET_TOKEN is unset", "1 problem(s)"}, nil},
		{"one token for two agents", []string{"--config", sharedToken}, all, exitError,
			[]string{`mcp.agents[1]: shares its token with agent "a"`, "1 problem(s)"}, nil},
		{"a mistyped state", []string{"--config", typo}, all, exitError,
			[]string{`workflow.states[0].next[0]: unknown state "Reserch Needed" (did you mean "Research Needed"?)`}, nil},
		{"a wrong type", []string{"--config", wrongType}, all, exitError,
			[]string{`enforcement.coalesce_window: line 4: want a duration such as "10m", got 10`, "1 problem(s)"}, []string{"(file)"}},
		{"the key twice", []string{"--config", good}, map[string]string{"GITHUB_APP_INTEGRATION_ID": "1001", "GITHUB_APP_PRIVATE_KEY_FILE": keyFile,
			"GITHUB_APP_PRIVATE_KEY": "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\n", "GITHUB_APP_WEBHOOK_SECRET": "Zq4v8tN1xK7mR2pW9cL5"}, exitError,
			[]string{"env GITHUB_APP_PRIVATE_KEY_FILE: and GITHUB_APP_PRIVATE_KEY are both set", "1 problem(s)"}, []string{"MIIE"}},
		{"an unknown mode", []string{"--for", "webhooks"}, nil, exitUsage, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
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
				if strings.Contains(out+errOut, bad) {
					t.Errorf("output has %q:\n%s%s", bad, out, errOut)
				}
			}
		})
	}
}

// defaultWorkflow is the workflow section of the embedded config.yml.
func defaultWorkflow(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "config.yml"))
	if err != nil {
		t.Fatal(err)
	}
	_, wf, ok := strings.Cut(string(data), "\nworkflow:\n")
	if !ok {
		t.Fatal("config.yml has no workflow section")
	}
	return "workflow:\n" + wf
}

// validate --json prints one documented shape whatever happened.
func TestValidateJSON(t *testing.T) {
	clearAppEnv(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yml")
	if err := os.WriteFile(bad, []byte("projects: [{owner: acme, number: 1}]\nenforcement: {workers: many}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	type problem struct{ Path, Message string }
	type report struct {
		File     string    `json:"file"`
		For      string    `json:"for"`
		Valid    bool      `json:"valid"`
		Problems []problem `json:"problems"`
		Workflow *struct {
			States, Commands, Intents int
		} `json:"workflow"`
	}
	tests := []struct {
		name  string
		args  []string
		code  int
		valid bool
		paths []string
		keys  []string // every top-level key, in order
	}{
		{"valid", []string{"--for", "file"}, exitOK, true, []string{}, []string{"file", "for", "valid", "problems", "workflow"}},
		{"problems", []string{"--config", bad, "--for", "mcp"}, exitError, false,
			[]string{"enforcement.workers", "github.app.integration_id", "github.app.private_key"}, []string{"file", "for", "valid", "problems"}},
		{"unreadable file", []string{"--config", filepath.Join(dir, "none.yml")}, exitError, false, []string{"--config"},
			[]string{"file", "for", "valid", "problems"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", append([]string{"validate", "--json"}, tt.args...)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tt.code, out, errOut)
			}
			var rep report
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, out)
			}
			var keys []string
			dec := json.NewDecoder(strings.NewReader(out))
			dec.Token() // {
			for dec.More() {
				k, _ := dec.Token()
				keys = append(keys, k.(string))
				var skip json.RawMessage
				dec.Decode(&skip)
			}
			if !slices.Equal(keys, tt.keys) {
				t.Errorf("keys %v, want %v", keys, tt.keys)
			}
			if !strings.Contains(out, `"problems": [`) {
				t.Errorf("problems is not a list:\n%s", out)
			}
			var got []string
			for _, p := range rep.Problems {
				got = append(got, p.Path)
				if p.Message == "" {
					t.Errorf("problem at %s has no message", p.Path)
				}
			}
			if rep.Valid != tt.valid || !reflect.DeepEqual(append([]string{}, got...), tt.paths) {
				t.Errorf("valid %v problems %v, want %v %v", rep.Valid, got, tt.valid, tt.paths)
			}
			if tt.valid && (rep.Workflow == nil || rep.Workflow.States != 11) {
				t.Errorf("workflow counts: %+v", rep.Workflow)
			}
		})
	}
}
