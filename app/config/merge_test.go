package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/ralph-gate/ralph-gate/policy"
)

// Each rule of the merge, on a default of any shape: mappings key by key at every depth,
// lists of named mappings by name, everything else whole, an empty value keeps the default's.
func TestMergeRules(t *testing.T) {
	tests := []struct{ name, def, user, want string }{
		{"a mapping merges key by key, at every depth",
			"{a: 1, gates: {lock: true, wip_limits: {Doing: 3, Review: 2}}}",
			"{gates: {wip_limits: {Doing: 5}}}",
			"{a: 1, gates: {lock: true, wip_limits: {Doing: 5, Review: 2}}}"},
		{"a new key is added after the default's",
			"{a: 1, b: 2}", "{c: 3, a: 4}", "{a: 4, b: 2, c: 3}"},
		{"an item of a known name merges into it key by key",
			"[{name: A, kind: queue, description: first, next: [B, C]}, {name: B, kind: lock}]",
			"[{name: A, next: [C]}]",
			"[{name: A, kind: queue, description: first, next: [C]}, {name: B, kind: lock}]"},
		{"new names are appended in the order given, known ones stay in place",
			"[{name: A, kind: queue}, {name: B, kind: lock}]",
			"[{name: D, kind: queue}, {name: B, kind: terminal}, {name: C}]",
			"[{name: A, kind: queue}, {name: B, kind: terminal}, {name: D, kind: queue}, {name: C}]"},
		{"a name given twice is appended the second time",
			"[{name: A, kind: queue}]", "[{name: A, kind: lock}, {name: A, kind: terminal}]",
			"[{name: A, kind: lock}, {name: A, kind: terminal}]"},
		{"an item without a name is appended",
			"[{name: A, kind: queue}]", "[{nme: B}, plain]", "[{name: A, kind: queue}, {nme: B}, plain]"},
		{"a named item's own named list merges by name too",
			"[{name: A, steps: [{name: x, n: 1}, {name: y, n: 2}]}]", "[{name: A, steps: [{name: y, n: 3}]}]",
			"[{name: A, steps: [{name: x, n: 1}, {name: y, n: 3}]}]"},
		{"a list of strings replaces whole", "{pipeline: [A, B, C]}", "{pipeline: [C]}", "{pipeline: [C]}"},
		{"an empty list replaces whole", "{initial: [A, B]}", "{initial: []}", "{initial: []}"},
		{"a list of mappings without names replaces whole",
			"{from_anywhere: [{to: A}, {to: B, humans_only: true}]}", "{from_anywhere: [{to: C}]}", "{from_anywhere: [{to: C}]}"},
		{"a scalar replaces", "{review_mode: skip, depth: 10}", "{review_mode: auto, depth: 3}", "{review_mode: auto, depth: 3}"},
		{"a value of another shape replaces whole", "{gates: {lock: true}, next: [A]}", "{gates: off, next: {A: 1}}", "{gates: off, next: {A: 1}}"},
		{"an empty value keeps the default's", "{review_mode: skip, gates: {lock: true}, next: [A]}", "{review_mode: , gates: ~, next: null}",
			"{review_mode: skip, gates: {lock: true}, next: [A]}"},
		{"no section is the default", "{a: 1, states: [{name: A}]}", "", "{a: 1, states: [{name: A}]}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			def, user := node(t, tt.def), (*yaml.Node)(nil)
			if tt.user != "" {
				user = node(t, tt.user)
			}
			o := &workflowOrigin{moved: map[string]string{}}
			got := o.merge(def, user, "workflow", "workflow")
			if g, w := plain(t, got), plain(t, node(t, tt.want)); !reflect.DeepEqual(g, w) {
				t.Errorf("merged %s into %s:\ngot  %v\nwant %v", tt.user, tt.def, g, w)
			}
			if again := plain(t, node(t, tt.def)); !reflect.DeepEqual(again, plain(t, def)) {
				t.Errorf("the merge changed the default: %v", plain(t, def))
			}
		})
	}
}

func node(t *testing.T, text string) *yaml.Node {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatalf("%q: %v", text, err)
	}
	return doc.Content[0]
}

func plain(t *testing.T, n *yaml.Node) any {
	t.Helper()
	var v any
	if err := n.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// The embedded default's workflow with a few of its values changed.
func defaultWith(edit func(*policy.Spec)) policy.Spec {
	s := policy.DefaultSpec()
	edit(&s)
	return s
}

// A workflow section extends the embedded default: the file (review_mode alone) is
// valid, one state's next is changed without repeating its kind, new states are appended,
// one WIP limit keeps every gate; extends: none starts from nothing, as sections did before.
func TestWorkflowSectionExtendsTheDefault(t *testing.T) {
	const reviewer = "actors: {roles: {validator: {agents: [\"validator-*\"], owns: [Plan in Review]}}}\n"
	tests := []struct {
		name, yaml string
		want       policy.Spec
		problems   []string // exactly these, in order; none when empty
	}{
		{"review_mode alone (the issue's four errors)", reviewer + "workflow: {review_mode: interactive}\n",
			defaultWith(func(s *policy.Spec) { s.ReviewMode = policy.ReviewInteractive }), nil},
		{"extends: default is the same as no extends", "workflow: {extends: default, review_mode: auto}\n",
			defaultWith(func(s *policy.Spec) { s.ReviewMode = policy.ReviewAuto }), nil},
		{"extends: none starts from nothing", reviewer + "workflow: {extends: none, review_mode: interactive}\n",
			policy.Spec{ReviewMode: policy.ReviewInteractive}, []string{
				"workflow.field: must not be empty",
				"workflow.states: must list at least one state",
				"workflow.initial: must list at least one initial state",
				"workflow.automation.max_cascade_depth: must be at least 1 (got 0)"}},
		{"extends: none keeps a whole workflow as written",
			"workflow:\n  extends: none\n  field: Status\n  states:\n    - {name: Todo, kind: queue, next: [Done]}\n    - {name: Done, kind: terminal, next: [Todo]}\n" +
				"  initial: [Todo]\n  automation: {max_cascade_depth: 3}\n",
			policy.Spec{Field: "Status", States: []policy.StateSpec{{Name: "Todo", Kind: "queue", Next: []string{"Done"}}, {Name: "Done", Kind: "terminal", Next: []string{"Todo"}}},
				Initial: []string{"Todo"}, Automation: policy.AutomationSpec{MaxCascadeDepth: 3}}, nil},
		{"a state's next is replaced, its kind and description kept",
			"workflow:\n  states:\n    - name: In Progress\n      next: [In Review, Human Needed, Ready for Plan]\n",
			defaultWith(func(s *policy.Spec) { s.States[6].Next = []string{"In Review", "Human Needed", "Ready for Plan"} }), nil},
		{"new states are appended in the order given",
			"workflow:\n  states:\n    - {name: Blocked, kind: human_gate, next: [In Progress]}\n" +
				"    - {name: In Progress, next: [In Review, Human Needed, Blocked, On Hold]}\n" +
				"    - {name: On Hold, kind: human_gate, description: parked, next: [In Progress]}\n",
			defaultWith(func(s *policy.Spec) {
				s.States[6].Next = []string{"In Review", "Human Needed", "Blocked", "On Hold"}
				s.States = append(s.States, policy.StateSpec{Name: "Blocked", Kind: "human_gate", Next: []string{"In Progress"}},
					policy.StateSpec{Name: "On Hold", Kind: "human_gate", Description: "parked", Next: []string{"In Progress"}})
			}), nil},
		{"one WIP limit keeps the other gates", "workflow:\n  gates: {wip_limits: {In Progress: 2}}\n",
			defaultWith(func(s *policy.Spec) { s.Gates.WIPLimits = map[string]int{"In Progress": 2} }), nil},
		{"a command changes only the keys given", "workflow:\n  commands:\n    - {name: review, outputs: [In Progress, Human Needed]}\n",
			defaultWith(func(s *policy.Spec) { s.Commands[5].Outputs = []string{"In Progress", "Human Needed"} }), nil},
		{"an intent's targets merge key by key", "workflow:\n  intents:\n    - name: complete\n      targets: {review: Ready for Plan}\n",
			defaultWith(func(s *policy.Spec) { s.Intents[1].Targets["review"] = "Ready for Plan" }), nil},
		{"a list that is not named replaces whole", "workflow:\n  initial: [Backlog]\n  from_anywhere: [{to: Human Needed}]\n",
			defaultWith(func(s *policy.Spec) {
				s.Initial = []string{"Backlog"}
				s.FromAnywhere = []policy.AnywhereRule{{To: "Human Needed"}}
			}), nil},
		{"empty values keep the default's", "workflow:\n  review_mode:\n  gates: ~\n  states:\n", policy.DefaultSpec(), nil},
		{"an empty section is the default", "workflow:\n", policy.DefaultSpec(), nil},
		{"a bad extends is named with the valid values (and the default extended)", "workflow:\n  extends: nnone\n",
			policy.DefaultSpec(), []string{`workflow.extends: line 2: want default (extend the embedded default workflow) or none (this section is the whole workflow), got "nnone" (did you mean "none"?)`}},
		{"extends of another type", "workflow: {extends: [none]}\n",
			policy.DefaultSpec(), []string{`workflow.extends: line 1: want default (extend the embedded default workflow) or none (this section is the whole workflow), got a list`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, problems := parse([]byte(tt.yaml))
			var got []string
			for _, p := range problems {
				got = append(got, p.String())
			}
			if !slices.Equal(got, tt.problems) {
				t.Errorf("problems:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(tt.problems, "\n  "))
			}
			if !reflect.DeepEqual(cfg.Workflow, tt.want) {
				t.Errorf("workflow:\n got %+v\nwant %+v", cfg.Workflow, tt.want)
			}
		})
	}
}

// Problems in what the section gives keep the file's key paths and lines; problems of the
// merged workflow are at its paths, naming the file's path and line when the item moved.
func TestWorkflowSectionProblemsKeepTheFilesPlaces(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string // each present
		absent     []string // no problem at these paths
	}{
		{"a type error at the file's line and path",
			"workflow:\n  states:\n    - name: In Progress\n      kind: [lock]\n",
			[]string{"workflow.states[0].kind: line 4: want a string, got a list"},
			// The merged item is states[6]: its kind did not decode, and saying so again there
			// would only mislead.
			[]string{"workflow.states[6].kind"}},
		{"a type error deep in a merged mapping", "logging: {level: info}\nworkflow:\n  gates:\n    wip_limits: {In Progress: many}\n",
			[]string{`workflow.gates.wip_limits.In Progress: line 4: want a whole number, got "many"`}, nil},
		{"unknown keys by the file's path",
			"workflow:\n  states:\n    - name: Plan in Review\n      colour: red\n  gatez: {}\n",
			[]string{"workflow.states[0].colour: unknown key (line 4); known keys: name, kind, description, next, humans_only",
				"workflow.gatez: unknown key (line 5) (did you mean \"gates\"?); known keys: extends, field, states, from_anywhere, humans_only, initial, pipeline, parent_gates, intents, commands, gates, locks, requirements, automation, review_mode"},
			nil},
		{"a next naming no state, in a state that moved",
			"workflow:\n  states:\n    - name: In Progress\n      next: [In Reveiw, Human Needed]\n",
			[]string{`workflow.states[6].next[0]: unknown state "In Reveiw" (did you mean "In Review"?) (the file's workflow.states[0].next[0], line 4)`},
			[]string{"workflow.states[0].next[0]"}},
		{"a next naming no state, in a state that stayed",
			"workflow:\n  states:\n    - name: Backlog\n      next: [Nowhere]\n",
			[]string{`workflow.states[0].next[0]: unknown state "Nowhere"`}, nil},
		{"an appended item without a name",
			"workflow:\n  states:\n    - nme: Blocked\n",
			[]string{"workflow.states[0].nme: unknown key (line 3) (did you mean \"name\"?); known keys: name, kind, description, next, humans_only",
				"workflow.states[11].name: must not be empty (the file's workflow.states[0], line 3)"}, nil},
		{"a key given twice keeps the default's other keys",
			"workflow:\n  review_mode: auto\n  review_mode: skip\n",
			[]string{`workflow.review_mode: line 3: mapping key "review_mode" already defined at line 2`},
			[]string{"workflow.field", "workflow.states"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, problems := parse([]byte(tt.yaml))
			got := make([]string, 0, len(problems))
			for _, p := range problems {
				got = append(got, p.String())
				if slices.Contains(tt.absent, p.Path) {
					t.Errorf("a problem at %s: %v", p.Path, p)
				}
			}
			for _, w := range tt.want {
				if !slices.Contains(got, w) {
					t.Errorf("no problem %q; got:\n  %s", w, strings.Join(got, "\n  "))
				}
			}
		})
	}
}

// A YAML syntax error is reported on its line: yaml.v3 counts the lines of its parser's
// errors from 0 (an error on line 16 said line 15), those of its scanner from 1.
func TestYAMLSyntaxErrorLine(t *testing.T) {
	head := "projects:\n  - {owner: acme, number: 1}\n" + strings.Repeat("# a comment\n", 11) + "logging:\n  level: info\n"
	if n := strings.Count(head, "\n"); n != 15 {
		t.Fatalf("the head has %d lines", n)
	}
	tests := []struct{ name, yaml, want string }{
		{"a key indented less than its siblings", head + " format: json\n", "line 16: did not find expected key"},
		{"a flow list left open", head + "  format: [json\n", "line 16: did not find expected ',' or ']'"},
		{"a flow mapping left open", head + "  format: {a: json\n", "line 16: did not find expected ',' or '}'"},
		{"a bracket where a value starts", head + "  format: ]json\n", "line 16: did not find expected node content"},
		{"a list item among keys", head + "  - json\n", "line 15: did not find expected key"}, // the mapping it breaks starts on line 15
		{"a quote left open (a scanner error)", head + "  format: \"json\n", "line 16: found unexpected end of stream"},
		{"two colons (a scanner error)", head + "  format: a: b\n", "line 16: mapping values are not allowed in this context"},
		{"on the first line (yaml.v3 names no line)", "a: ]", "line 1: did not find expected node content"},
		// At the end of the text yaml.v3 is on the line after the last: still the last line.
		{"a list left open on the only line", "a: [b\n", "line 1: did not find expected ',' or ']'"},
		{"a list left open on the only line, without a newline", "a: [b", "line 1: did not find expected ',' or ']'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps := problemsOf(t, tt.yaml)
			if len(ps) != 1 || ps[0].Path != "(file)" || ps[0].Message != tt.want {
				t.Fatalf("want the one problem (file): %s, got %v", tt.want, ps)
			}
		})
	}
}

// WorkflowYAML writes a workflow section that reads back as the same workflow, on its own
// (extends: none), leaving empty values out.
func TestWorkflowYAMLReadsBack(t *testing.T) {
	for _, file := range []string{
		"projects: [{owner: acme, number: 1}]\n",
		"workflow:\n  gates: {wip_limits: {In Progress: 2}}\n  review_mode: auto\n  states:\n" +
			"    - {name: Blocked, kind: human_gate, next: [In Progress]}\n    - {name: In Progress, next: [In Review, Human Needed, Blocked]}\n",
	} {
		cfg, ps := parse([]byte(file))
		if len(ps) > 0 {
			t.Fatalf("%q: %v", file, ps)
		}
		text, err := WorkflowYAML(cfg.Workflow)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(text), "workflow:\n  extends: none\n  field: Workflow State\n  states:\n    - name: Backlog\n      kind: queue\n") {
			t.Errorf("WorkflowYAML starts:\n%s", text[:min(len(text), 200)])
		}
		for _, empty := range []string{"humans_only: false", `lock: ""`, "humans_only: []", "comment_automation"} {
			if strings.Contains(string(text), empty) {
				t.Errorf("WorkflowYAML writes the empty value %q", empty)
			}
		}
		back, ps := parse(text)
		if len(ps) > 0 {
			t.Fatalf("WorkflowYAML does not read back:\n%v\n%s", ps, text)
		}
		again, err := WorkflowYAML(back.Workflow)
		if err != nil {
			t.Fatal(err)
		}
		if string(again) != string(text) {
			t.Errorf("read back, the workflow differs:\n%s\nfrom\n%s", again, text)
		}
		// (An empty list or mapping reads back as none: %+v prints both alike.)
		if got, want := fmt.Sprintf("%+v", back.Workflow), fmt.Sprintf("%+v", cfg.Workflow); got != want {
			t.Errorf("read back, the workflow differs:\n got %s\nwant %s", got, want)
		}
	}
}
