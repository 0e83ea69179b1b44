package config

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	ralphgate "github.com/ralph-gate/ralph-gate"
	"github.com/ralph-gate/ralph-gate/policy"
)

// deployment is a config.yml for organizations' policies: no projects, two agents with tokens.
func deployment(t testing.TB) Config {
	t.Helper()
	cfg, err := Parse([]byte("actors: {agents: [\"bot-*\"], bypass: [ops]}\n" +
		"mcp: {agents: [{name: builder-1, token_env: RALPH_BUILDER_TOKEN, commands: [impl]}, {name: researcher-1, token_env: RALPH_RESEARCHER_TOKEN}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.OrgPolicies() {
		t.Fatal("a config.yml without projects reads the organizations' policies")
	}
	return cfg
}

// An organization's policy file: the effective configuration, or every problem with the line
// of its key, each worded as validate words it for config.yml.
func TestForOrganization(t *testing.T) {
	dep := deployment(t)
	example, ok := strings.CutPrefix(orgPolicyDoc[strings.Index(orgPolicyDoc, "```yaml\n"):], "```yaml\n")
	if !ok {
		t.Fatal("the documentation has no example")
	}
	example, _, _ = strings.Cut(example, "```")
	tests := []struct {
		name, file string
		// want is every problem, in order, as "line: path: message"; none when empty.
		want  []string
		check func(t *testing.T, cfg Config)
	}{
		{"a minimal file: one project, the default workflow, the deployment's actors, no agent",
			"projects: [{number: 1, mode: evaluate}]\n", nil, func(t *testing.T, cfg Config) {
				if _, err := cfg.Machine(); err != nil {
					t.Fatalf("Machine: %v", err)
				}
				if !reflect.DeepEqual(cfg.Workflow, policy.DefaultSpec()) {
					t.Error("no workflow section is not the default workflow")
				}
				if !cfg.Enforces("acme", 1) || !cfg.Enforces("ACME", 1) || cfg.Enforces("acme", 2) || cfg.Enforces("globex", 1) {
					t.Errorf("Enforces: projects %+v", cfg.Projects)
				}
				if cfg.ModeOf("acme", 1) != "evaluate" || cfg.ModeOf("acme", 2) != "enforce" {
					t.Errorf("ModeOf: %q, %q", cfg.ModeOf("acme", 1), cfg.ModeOf("acme", 2))
				}
				mcp := dep.MCP
				mcp.Agents = nil // an agent works for the organizations that name it
				if !reflect.DeepEqual(cfg.Actors, dep.Actors) || !reflect.DeepEqual(cfg.MCP, mcp) {
					t.Errorf("actors %+v, mcp %+v: want the deployment's actors, its mcp without agents", cfg.Actors, cfg.MCP)
				}
				if cfg.Server != dep.Server || cfg.Store != dep.Store || cfg.Enforcement != dep.Enforcement || cfg.Policy != dep.Policy {
					t.Error("the deployment's own sections changed")
				}
				if cfg.OrgPolicies() {
					t.Error("the effective configuration lists its projects")
				}
			}},
		{"a partial workflow extends the default",
			"projects:\n  - number: 3\nworkflow:\n  gates: {wip_limits: {In Progress: 2}}\n  states:\n    - name: In Progress\n      next: [In Review, Human Needed, Ready for Plan]\n",
			nil, func(t *testing.T, cfg Config) {
				want := defaultWith(func(s *policy.Spec) {
					s.Gates.WIPLimits = map[string]int{"In Progress": 2}
					s.States[6].Next = []string{"In Review", "Human Needed", "Ready for Plan"}
				})
				if !reflect.DeepEqual(cfg.Workflow, want) {
					t.Errorf("workflow:\n got %+v\nwant %+v", cfg.Workflow, want)
				}
				if !cfg.Enforces("acme", 3) {
					t.Error("the project is not enforced")
				}
			}},
		{"extends: none is the whole workflow",
			"projects: [{number: 1}]\nworkflow:\n  extends: none\n  field: Status\n  states:\n    - {name: Todo, kind: queue, next: [Done]}\n    - {name: Done, kind: terminal, next: [Todo]}\n  initial: [Todo]\n  automation: {max_cascade_depth: 3}\nmcp: {agents: []}\n",
			nil, func(t *testing.T, cfg Config) {
				if cfg.Workflow.Field != "Status" || len(cfg.Workflow.States) != 2 {
					t.Errorf("workflow: %+v", cfg.Workflow)
				}
				if len(cfg.MCP.Agents) != 0 {
					t.Errorf("agents %+v: the file lists none", cfg.MCP.Agents)
				}
			}},
		{"the deployment's agents work only for the organizations that name them",
			"projects: [{number: 1}]\nworkflow:\n  extends: none\n  field: Status\n  states:\n    - {name: Todo, kind: queue, next: [Done]}\n    - {name: Done, kind: terminal, next: [Todo]}\n  initial: [Todo]\n  automation: {max_cascade_depth: 3}\n", nil,
			func(t *testing.T, cfg Config) {
				if len(cfg.MCP.Agents) != 0 {
					t.Errorf("agents %+v: want none (the file names none)", cfg.MCP.Agents)
				}
			}},
		{"the documentation's example", example, nil, func(t *testing.T, cfg Config) {
			if len(cfg.Projects) != 2 || cfg.ModeOf("acme", 2) != "evaluate" || cfg.Workflow.ReviewMode != policy.ReviewInteractive {
				t.Errorf("projects %+v, review mode %q", cfg.Projects, cfg.Workflow.ReviewMode)
			}
			want := []MCPAgent{{Name: "builder-1", TokenEnv: "RALPH_BUILDER_TOKEN", Commands: []string{"impl"}, Role: "builder"}}
			if !reflect.DeepEqual(cfg.MCP.Agents, want) {
				t.Errorf("agents %+v, want %+v (merged onto the deployment's, which keeps its token)", cfg.MCP.Agents, want)
			}
			if len(cfg.Actors.Roles) != 2 || len(cfg.Actors.Agents) != 0 || len(cfg.Actors.Bypass) != 0 {
				t.Errorf("actors %+v: the file's section replaces the deployment's whole", cfg.Actors)
			}
		}},
		{"an agent's commands replace the deployment's", "projects: [{number: 1}]\nmcp:\n  agents:\n    - {name: Builder-1, commands: [impl, pr]}\n",
			nil, func(t *testing.T, cfg Config) {
				want := []MCPAgent{{Name: "builder-1", TokenEnv: "RALPH_BUILDER_TOKEN", Commands: []string{"impl", "pr"}}}
				if !reflect.DeepEqual(cfg.MCP.Agents, want) {
					t.Errorf("agents %+v, want %+v", cfg.MCP.Agents, want)
				}
				if !slices.Equal(dep.MCP.Agents[0].Commands, []string{"impl"}) {
					t.Error("the deployment's agent changed")
				}
			}},
		{"unknown keys get the nearest key",
			"projects: [{number: 1}]\nworkflow:\n  review_mod: auto\nactor: {}\nmcp: {agent: []}\n", []string{
				`3: workflow.review_mod: unknown key (line 3) (did you mean "review_mode"?); known keys: extends, field, states, from_anywhere, humans_only, initial, pipeline, parent_gates, intents, commands, gates, locks, requirements, automation, review_mode`,
				`4: actor: unknown key (line 4) (did you mean "actors"?); known keys: projects, workflow, actors, mcp`,
				`5: mcp.agent: unknown key (line 5) (did you mean "agents"?); known keys: agents`,
			}, nil},
		{"the operator's keys",
			"projects: [{number: 1}]\nserver:\n  port: 9090\ngithub:\n  app:\n    private_key: not-a-real-key-0123\nmcp:\n  default_repo: acme/app\n  limits: {burst: 3}\npolicy: {path: x.yml}\nlogging: {}\n", []string{
				"3: server.port: " + operatorKeyMessage,
				"6: github.app.private_key: " + operatorKeyMessage,
				"8: mcp.default_repo: " + operatorKeyMessage,
				"9: mcp.limits.burst: " + operatorKeyMessage,
				"10: policy.path: " + operatorKeyMessage,
				"11: logging: " + operatorKeyMessage,
			}, nil},
		{"tokens",
			"projects: [{number: 1}]\nmcp:\n  agents:\n    - name: builder-1\n      token: a-local-test-token-000\n      token_env: X\n    - {name: researcher-1, token_sha256: abc}\n", []string{
				"5: mcp.agents[0].token: " + tokenKeyMessage,
				"6: mcp.agents[0].token_env: " + tokenKeyMessage,
				"7: mcp.agents[1].token_sha256: " + tokenKeyMessage,
			}, nil},
		{"an agent the deployment does not list",
			"projects: [{number: 1}]\nmcp:\n  agents:\n    - {name: researcher-1}\n    - name: builder-9\n      commands: [impl]\n", []string{
				`5: mcp.agents[1].name: agent "builder-9" is not in the deployment's config.yml: the operator adds it there under mcp.agents, with its token (token_env)`,
			}, nil},
		{"the agents' problems as validate gives them",
			"projects: [{number: 1}]\nmcp:\n  agents:\n    - {name: builder-1, commands: [impl, fly]}\n    - {name: builder-1}\n", []string{
				`4: mcp.agents[0].commands[1]: unknown command "fly"; workflow.commands has triage, split, research, plan, plan_epic, review, impl, pr, merge, hero`,
				`5: mcp.agents[1].name: duplicate agent "builder-1"`,
			}, nil},
		{"a project of another organization",
			"projects:\n  - {owner: acme, number: 1}\n  - owner: globex\n    number: 2\n", []string{
				`3: projects[1].owner: "globex" is another organization: acme's policy file lists only acme's own projects (owner may be left out)`,
			}, nil},
		{"no project", "# acme's policy\nworkflow: {review_mode: auto}\n", []string{
			"2: projects: list at least one of acme's projects to enforce ({number}, or {number, mode})",
		}, nil},
		{"the projects' problems as validate gives them", "projects:\n  - {number: 1, mode: enforced}\n  - {number: 1}\n  - {number: two}\n", []string{
			`4: projects[2].number: line 4: want a whole number, got "two"`,
			`2: projects[0].mode: unknown mode "enforced": want evaluate, warn or enforce (did you mean "enforce"?)`,
			`3: projects[1]: duplicate project acme/1`,
		}, nil},
		{"an empty file", "", []string{"1: (file): the file is empty"}, nil},
		{"comments only", "# nothing yet\n", []string{"1: (file): the file is empty"}, nil},
		{"not YAML", "projects: [{number: 1}]\nworkflow: {review_mode: auto\n", []string{
			"2: (file): line 2: did not find expected ',' or '}'",
		}, nil},
		{"not a mapping", "- projects\n", []string{
			"1: (file): line 1: want a mapping (projects, workflow, actors, mcp), got a list",
		}, nil},
		{"an invalid workflow, each problem on its line",
			"projects: [{number: 1}]\nworkflow:\n  states:\n    - name: Backlog\n      next: [Reserch Needed, Nowhere]\n    - name: In Progress\n      next: [In Reveiw, Human Needed]\n", []string{
				`5: workflow.states[0].next[0]: unknown state "Reserch Needed" (did you mean "Research Needed"?)`,
				`5: workflow.states[0].next[1]: unknown state "Nowhere"`,
				`7: workflow.states[6].next[0]: unknown state "In Reveiw" (did you mean "In Review"?) (the file's workflow.states[1].next[0], line 7)`,
				// Values of the default workflow the file's change broke: at the workflow key.
				`2: workflow.states[7].name: state "In Review" cannot be reached from any initial state`,
				`2: workflow.states[9].name: state "Done" cannot be reached from any initial state`,
			}, nil},
		{"a type error in the workflow, and a default value it breaks",
			"projects: [{number: 1}]\nworkflow:\n  gates:\n    blockers: 1\n  states:\n    - name: Research in Progress\n      kind: queue\n", []string{
				`4: workflow.gates.blockers: line 4: want true or false, got 1`,
				`2: workflow.commands[2].lock: "Research in Progress" is a queue state, not a lock state`,
			}, nil},
		{"actors' problems", "projects: [{number: 1}]\nactors:\n  roles:\n    reviewer:\n      agents: [\"validator-*\"]\n      owns: [Plan in Reviw]\n", []string{
			`6: actors.roles.reviewer.owns[0]: unknown state "Plan in Reviw" (did you mean "Plan in Review"?)`,
		}, nil},
		{"a bad extends", "projects: [{number: 1}]\nworkflow:\n  extends: nnone\n", []string{
			`3: workflow.extends: line 3: want default (extend the embedded default workflow) or none (this section is the whole workflow), got "nnone" (did you mean "none"?)`,
		}, nil},
		{"a key given twice: the first is kept", "projects: [{number: 1}]\nprojects: [{number: 2}]\nworkflow: {review_mode: auto, review_mode: skip}\n", []string{
			`2: projects: line 2: mapping key "projects" already defined at line 1`,
			`3: workflow.review_mode: line 3: mapping key "review_mode" already defined at line 3`,
		}, nil},
		{"a long message is cut short", "projects: [{number: 1}]\nworkflow:\n  states:\n    - name: Backlog\n      next: [" + strings.Repeat("x", 1500) + "]\n", []string{
			`5: workflow.states[0].next[0]: unknown state "` + strings.Repeat("x", maxProblemText-len(`unknown state "`)-len("…")) + "…",
		}, nil},
		{"a file over the size limit", "projects: [{number: 1}]\n#" + strings.Repeat("x", MaxFileBytes), []string{
			"1: (file): is larger than 1048576 bytes: is it the policy file?",
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, problems := dep.ForOrganization("acme", []byte(tt.file))
			got := make([]string, 0, len(problems))
			for _, p := range problems {
				got = append(got, fmt.Sprintf("%d: %s", p.Line, p))
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("problems:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(tt.want, "\n  "))
			}
			if len(problems) > 0 {
				if !reflect.DeepEqual(cfg, Config{}) {
					t.Error("a configuration with problems")
				}
				for _, secret := range []string{"not-a-real-key-0123", "a-local-test-token-000"} {
					if strings.Contains(problems.Error(), secret) {
						t.Errorf("a problem echoes a secret: %v", problems)
					}
				}
				return
			}
			if tt.check != nil {
				tt.check(t, cfg)
			}
		})
	}
}

// An organization's section has the same problems, with the same messages, as the same
// section in config.yml: one validator.
func TestForOrganizationSpeaksAsValidate(t *testing.T) {
	section := "workflow:\n  states:\n    - name: Backlog\n      colour: red\n  gates: {blockers: 1}\n" +
		"actors:\n  roles:\n    reviewer: {agents: [\"validator-*\"], owns: [Plan in Reviw]}\n"
	_, fromConfig := parse([]byte("projects: [{owner: acme, number: 1}]\n" + section))
	_, fromOrg := deployment(t).ForOrganization("acme", []byte("projects: [{number: 1}]\n"+section))
	strip := func(ps Problems) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Path+": "+p.Message)
		}
		return out
	}
	if len(fromConfig) != 3 || !slices.Equal(strip(fromConfig), strip(fromOrg)) {
		t.Errorf("config.yml:\n  %s\nthe organization's file:\n  %s", strings.Join(strip(fromConfig), "\n  "), strings.Join(strip(fromOrg), "\n  "))
	}
	if fromConfig[0].Line != 0 {
		t.Errorf("config.yml's problems carry no line: %+v", fromConfig[0])
	}
}

func TestLineOf(t *testing.T) {
	file := []byte("projects: [{number: 1}]\n" +
		"workflow:\n  states:\n    - name: Backlog\n      next:\n        - Research Needed\n        - Done\n" +
		"actors:\n  roles:\n    ops.team:\n      agents: [\"ops-*\"]\n")
	for path, want := range map[string]int{
		"projects":                        1,
		"projects[0].number":              1,
		"workflow":                        2,
		"workflow.states[0]":              4,
		"workflow.states[0].next[1]":      7,
		"workflow.states[3].next[1]":      3, // no such item: the list's key
		"workflow.gates.wip_limits":       2, // no such key: the nearest above it
		"actors.roles.ops.team.agents[0]": 11,
		"server.port":                     1, // the document
	} {
		if got := LineOf(file, path); got != want {
			t.Errorf("LineOf(%s) = %d, want %d", path, got, want)
		}
	}
	if LineOf([]byte("a: [b"), "a") != 0 || LineOf(nil, "a") != 0 {
		t.Error("a text that is not YAML has no lines")
	}
}

// The organization's file is written by anyone who may push to its repository: whatever it
// holds, ForOrganization returns a configuration that works, or problems, each on a line of
// the file; never both, never neither.
func FuzzForOrganization(f *testing.F) {
	f.Add([]byte("projects: [{number: 1}]\n"))
	f.Add([]byte("projects: [{number: 1, mode: warn}]\nworkflow:\n  review_mode: auto\n  states:\n    - name: In Progress\n      next: [In Review, Human Needed, Ready for Plan]\n"))
	f.Add([]byte("projects: [{number: 1}]\nactors: {roles: {builder: {agents: [\"builder-*\"], owns: [In Progress]}}}\nmcp: {agents: [{name: builder-1, role: builder}]}\n"))
	f.Add([]byte("projects: [{owner: globex, number: 1}]\nserver: {port: 1}\nmcp: {agents: [{name: x, token: y}], limits: {burst: 1}}\n"))
	f.Add([]byte("projects: [{number: 1}]\nworkflow: {extends: none, states: [{name: A, kind: queue, next: [A]}]}\n"))
	f.Add([]byte("projects: [{number: 1}]\nworkflow:\n  states:\n    - name: Backlog\n      next: [Nowhere]\n"))
	f.Add([]byte("&a [*a, *a]"))
	f.Add([]byte("a: &x {b: *x}\n"))
	f.Add([]byte("projects: [{number: 1}\n"))
	f.Add([]byte(""))
	f.Add(bytes.Clone(ralphgate.DefaultConfig()))
	dep := deployment(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, problems := dep.ForOrganization("acme", data)
		if len(problems) > 0 {
			last := max(textLines(data), 1)
			for _, p := range problems {
				if p.Line < 1 || p.Line > last || p.Path == "" {
					t.Fatalf("problem %+v: want a path and a line from 1 to %d", p, last)
				}
			}
			return
		}
		if len(cfg.Projects) == 0 {
			t.Fatal("a configuration without projects, and no problem")
		}
		for _, p := range cfg.Projects {
			if !cfg.Enforces("acme", p.Number) || !strings.EqualFold(p.Owner, "acme") {
				t.Fatalf("project %+v is not acme's", p)
			}
		}
		if _, err := cfg.Machine(); err != nil {
			t.Fatalf("no problem, but the machine does not compile: %v", err)
		}
		if ps := cfg.Validate(); len(ps) > 0 {
			t.Fatalf("no problem, but the configuration is invalid: %v", ps)
		}
	})
}
