package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	ralphgate "github.com/ralph-gate/ralph-gate"
	"github.com/ralph-gate/ralph-gate/policy"
)

func TestDefaultConfigIsTheDesignWorkflow(t *testing.T) {
	cfg, err := Default()
	if err != nil {
		t.Fatalf("embedded config.yml does not load: %v", err)
	}
	if !reflect.DeepEqual(cfg.Workflow, policy.DefaultSpec()) {
		t.Errorf("config.yml's workflow and policy.DefaultSpec() drifted apart:\nconfig.yml: %+v\nDefaultSpec: %+v", cfg.Workflow, policy.DefaultSpec())
	}
	if _, err := cfg.Machine(); err != nil {
		t.Fatalf("default machine: %v", err)
	}
}

func TestLoadEmptyPathIsDefault(t *testing.T) {
	a, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatal("Load(\"\") differs from Default()")
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(t.TempDir() + "/nope.yml")
	if err == nil || !strings.Contains(err.Error(), "read config") {
		t.Fatalf("want a read error, got %v", err)
	}
}

// A file beyond MaxFileBytes is refused before it is decoded (a 51 MB file took 1.6 s and
// 364 MB), by Load and by Preflight alike; one at the bound is read.
func TestConfigFileSizeBound(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yml")
	data := append(append([]byte{}, ralphgate.DefaultConfig()...), []byte("\n#")...)
	data = append(data, bytes.Repeat([]byte("x"), MaxFileBytes+1-len(data))...)
	if err := os.WriteFile(big, data, 0o600); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("read config: %s is larger than %d bytes", big, MaxFileBytes)
	if _, err := Load(big); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Load: %v", err)
	}
	if _, _, err := Preflight(big, ForFile, func(string) (string, bool) { return "", false }); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Preflight: %v", err)
	}
	atBound := filepath.Join(dir, "ok.yml")
	if err := os.WriteFile(atBound, data[:MaxFileBytes], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(atBound); err != nil {
		t.Errorf("a file at the bound: %v", err)
	}
}

// withWorkflow returns the default config text with one edit applied.
func edited(t *testing.T, old, new string) []byte {
	t.Helper()
	text := string(ralphgate.DefaultConfig())
	if !strings.Contains(text, old) {
		t.Fatalf("config.yml does not contain %q", old)
	}
	return []byte(strings.Replace(text, old, new, 1))
}

func TestParseProblems(t *testing.T) {
	tests := []struct {
		name  string
		data  func(t *testing.T) []byte
		paths []string // every path must be reported
	}{
		{"empty file", func(*testing.T) []byte { return nil }, []string{"(file)"}},
		{"not yaml", func(*testing.T) []byte { return []byte("a: [b") }, []string{"(file)"}},
		{"unknown top-level key", func(t *testing.T) []byte { return edited(t, "actors:\n", "actorz: 1\nactors:\n") }, []string{"actorz"}},
		{"unknown nested keys all reported", func(t *testing.T) []byte {
			d := edited(t, "    - name: Backlog\n", "    - name: Backlog\n      colour: red\n")
			return []byte(strings.Replace(string(d), "    lock_ownership: true\n", "    lock_ownership: true\n    lock_owner: true\n", 1))
		}, []string{"workflow.states[0].colour", "workflow.gates.lock_owner"}},
		{"type mismatch", func(t *testing.T) []byte { return edited(t, "max_cascade_depth: 10", "max_cascade_depth: ten") }, []string{"workflow.automation.max_cascade_depth"}},
		{"empty agent pattern", func(t *testing.T) []byte { return edited(t, `    - "agent-*"`, `    - " "`) }, []string{"actors.agents[1]"}},
		{"pattern in bypass and duplicates", func(t *testing.T) []byte { return edited(t, "bypass: []", "bypass: [ops, ops, \"x*\"]") }, []string{"actors.bypass[1]", "actors.bypass[2]"}},
		{"workflow problems come from policy", func(t *testing.T) []byte {
			return edited(t, "next: [Research Needed, Ready for Plan, Done, Canceled]", "next: [Research Needed, Nowhere, Done, Canceled]")
		}, []string{"workflow.states[0].next[1]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.data(t))
			var problems Problems
			if !errors.As(err, &problems) {
				t.Fatalf("want Problems, got %v", err)
			}
			for _, want := range tt.paths {
				found := false
				for _, p := range problems {
					if p.Path == want {
						found = true
					}
				}
				if !found {
					t.Errorf("no problem at %s; got:\n%v", want, problems)
				}
			}
			if !strings.Contains(problems.Error(), "problem(s)") {
				t.Errorf("Problems.Error() = %q", problems.Error())
			}
		})
	}
}

func TestPolicyActors(t *testing.T) {
	cfg, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.PolicyActors("ralph-gate[bot]")
	for login, want := range map[string]policy.ActorKind{
		"ralph-gate[bot]": policy.ActorApp,
		"dependabot[bot]": policy.ActorAgent,
		"agent-7":         policy.ActorAgent,
		"alice":           policy.ActorHuman,
	} {
		if got := a.Classify(login); got != want {
			t.Errorf("Classify(%q) = %v, want %v", login, got, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(ralphgate.DefaultConfig())
	f.Add([]byte("workflow: {states: [{name: A, kind: queue, next: [A]}]}"))
	f.Add([]byte("actors: {agents: ['['], bypass: ['*']}"))
	f.Add([]byte("&a [*a, *a]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data)
		if err != nil {
			return
		}
		if _, err := cfg.Machine(); err != nil {
			t.Fatalf("Parse accepted a config whose machine does not compile: %v", err)
		}
	})
}

func TestWorkflowDefaultsToTheEmbeddedMachine(t *testing.T) {
	cfg, err := Parse([]byte("projects: [{owner: acme, number: 1}]\nstore: {driver: sqlite, dsn: x.db}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg.Workflow, policy.DefaultSpec()) {
		t.Error("a file without workflow did not get the default workflow")
	}
	if len(cfg.Actors.Agents) == 0 {
		t.Error("a file without actors did not get the default actors")
	}
	if cfg.Server.Port != 8080 || cfg.Enforcement.Workers != 8 || cfg.Store.DSN != "x.db" {
		t.Errorf("defaults: %+v %+v %+v", cfg.Server, cfg.Enforcement, cfg.Store)
	}
}

func TestServeNeeds(t *testing.T) {
	cfg, err := Parse([]byte("projects: [{owner: acme, number: 1}, {owner: ACME, number: 1}, {owner: '', number: 0}]\n"))
	var problems Problems
	if !errors.As(err, &problems) {
		t.Fatalf("want problems, got %v", err)
	}
	_ = cfg
	joined := problems.Error()
	for _, want := range []string{"projects[1]: duplicate", "projects[2].owner", "projects[2].number"} {
		if !strings.Contains(joined, want) {
			t.Errorf("lacks %q: %s", want, joined)
		}
	}
	ok, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{EnvIntegrationID: "42", EnvWebhookSecret: "Zq4v8tN1xK7mR2pW9cL5", EnvPrivateKey: testKeyPEM(t)}
	if ps := ok.ApplyEnv(func(k string) (string, bool) { v, found := env[k]; return v, found }); len(ps) > 0 {
		t.Fatal(ps)
	}
	ok.Projects = []Project{{Owner: "acme", Number: 1}}
	if ps := ok.ValidateServe(); len(ps) > 0 {
		t.Fatalf("env-provided secrets not accepted: %v", ps)
	}
	if ps := ok.ApplyEnv(func(k string) (string, bool) { return "x", k == EnvIntegrationID }); len(ps) != 1 {
		t.Fatalf("a non-numeric app id from the environment must be a problem: %v", ps)
	}
}
