package policy

import (
	"slices"
	"strings"
	"testing"
)

func TestCompileDefault(t *testing.T) {
	m, ps := Compile(DefaultSpec())
	if m == nil || len(ps) != 0 {
		t.Fatalf("default: %v", ps)
	}
}

func TestCompileProblems(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Spec)
		want []string // exact problems, in order
	}{
		{"empty field", func(s *Spec) { s.Field = " " }, []string{"workflow.field: must not be empty"}},
		{"empty state name", func(s *Spec) { s.States = append(s.States, StateSpec{Kind: "queue"}) },
			[]string{"workflow.states[11].name: must not be empty"}},
		{"duplicate state", func(s *Spec) { s.States = append(s.States, StateSpec{Name: sDone, Kind: "terminal"}) },
			[]string{`workflow.states[11].name: duplicate state "Done" (also workflow.states[9])`}},
		{"unknown kind", func(s *Spec) { s.States[0].Kind = "inbox" },
			[]string{`workflow.states[0].kind: unknown kind "inbox" (valid: queue, lock, human_gate, terminal)`}},
		{"unknown next", func(s *Spec) { s.States[3].Next[1] = "Nowhere" },
			[]string{`workflow.states[3].next[1]: unknown state "Nowhere"`}},
		{"empty next", func(s *Spec) { s.States[3].Next[1] = "" },
			[]string{`workflow.states[3].next[1]: must name a state`}},
		{"self next", func(s *Spec) { s.States[1].Next = append(s.States[1].Next, sRN) },
			[]string{`workflow.states[1].next[3]: a state cannot move to itself`}},
		{"duplicate next", func(s *Spec) { s.States[1].Next = append(s.States[1].Next, sRFP) },
			[]string{`workflow.states[1].next[3]: "Ready for Plan" is listed twice`}},
		{"unknown from_anywhere", func(s *Spec) { s.FromAnywhere[1].To = "Trash" },
			[]string{`workflow.from_anywhere[1].to: unknown state "Trash"`}},
		{"unknown humans_only", func(s *Spec) { s.HumansOnly = []TransitionRef{{From: "X", To: "Y"}} },
			[]string{`workflow.humans_only[0].from: unknown state "X"`, `workflow.humans_only[0].to: unknown state "Y"`}},
		{"humans_only not a transition", func(s *Spec) { s.HumansOnly = []TransitionRef{{From: sBacklog, To: sIP}} },
			[]string{`workflow.humans_only[0]: Backlog → In Progress is not a transition of the workflow`}},
		{"no initial", func(s *Spec) { s.Initial = nil }, []string{"workflow.initial: must list at least one initial state"}},
		{"unknown initial", func(s *Spec) { s.Initial[2] = "Start" }, []string{`workflow.initial[2]: unknown state "Start"`}},
		{"unknown pipeline", func(s *Spec) { s.Pipeline[0] = "Inbox" }, []string{`workflow.pipeline[0]: unknown state "Inbox"`}},
		{"duplicate pipeline", func(s *Spec) { s.Pipeline = append(s.Pipeline, sBacklog) },
			[]string{`workflow.pipeline[9]: "Backlog" is listed twice`}},
		{"unknown parent gate", func(s *Spec) { s.ParentGates[1] = "Gate" }, []string{`workflow.parent_gates[1]: unknown state "Gate"`}},
		{"parent gate off pipeline", func(s *Spec) { s.ParentGates = append(s.ParentGates, sHN) },
			[]string{`workflow.parent_gates[4]: "Human Needed" is not on the pipeline, so no child can reach it`}},
		{"intent unknown target state", func(s *Spec) { s.Intents[0].Targets["research"] = "Researching" },
			[]string{`workflow.intents[0].targets.research: unknown state "Researching"`}},
		{"intent unknown command", func(s *Spec) { s.Intents[0].Targets["deploy"] = sIP },
			[]string{`workflow.intents[0].targets.deploy: unknown command "deploy"`}},
		{"intent prefixed command ok", func(s *Spec) {
			delete(s.Intents[0].Targets, "research")
			s.Intents[0].Targets["ralph_research"] = sRIP
		}, nil},
		{"intent same command twice", func(s *Spec) { s.Intents[0].Targets["ralph_research"] = sRIP },
			[]string{`workflow.intents[0].targets.research: names the same command as targets.ralph_research`}},
		{"duplicate intent", func(s *Spec) { s.Intents[6].Name = "close" },
			[]string{`workflow.intents[6].name: duplicate intent "close" (also workflow.intents[5])`}},
		{"marker intent name", func(s *Spec) { s.Intents[0].Name = "__LOCK__" },
			[]string{`workflow.intents[0].name: must be the lower-case word "lock" (the __MARKER__ form is accepted from agents, not declared)`}},
		{"empty intent", func(s *Spec) { s.Intents[0].Name = ""; s.Intents[0].Targets = nil },
			[]string{`workflow.intents[0].name: must not be empty`, `workflow.intents[0].targets: must map at least one command or "*" to a state`}},
		{"ambiguous unknown command", func(s *Spec) { s.Intents[1].Ambiguous = append(s.Intents[1].Ambiguous, "deploy") },
			[]string{`workflow.intents[1].ambiguous[1]: unknown command "deploy"`}},
		{"ambiguous and mapped", func(s *Spec) { s.Intents[1].Ambiguous = append(s.Intents[1].Ambiguous, "ralph_impl") },
			[]string{`workflow.intents[1].ambiguous[1]: "ralph_impl" is also mapped in targets.impl; a command is either mapped or ambiguous`}},
		{"duplicate command", func(s *Spec) { s.Commands[9].Name = "pr" },
			[]string{`workflow.commands[9].name: duplicate command "pr" (also workflow.commands[7])`}},
		{"prefixed command name", func(s *Spec) { s.Commands[9].Name = "ralph_hero" },
			[]string{`workflow.commands[9].name: must be the bare lower-case name "hero" (ralph_ prefixes are accepted from agents, not declared)`}},
		{"wildcard command name", func(s *Spec) { s.Commands[9].Name = "*" },
			[]string{`workflow.commands[9].name: "*" is reserved for intent wildcards`}},
		{"empty command name", func(s *Spec) { s.Commands[7].Name = "" },
			[]string{`workflow.commands[7].name: must not be empty`}},
		{"unknown input", func(s *Spec) { s.Commands[0].Inputs[0] = "Inbox" },
			[]string{`workflow.commands[0].inputs[0]: unknown state "Inbox"`}},
		{"unknown output", func(s *Spec) { s.Commands[2].Outputs[1] = "Help" },
			[]string{`workflow.commands[2].outputs[1]: unknown state "Help"`}},
		{"unknown lock", func(s *Spec) { s.Commands[2].Lock = "Researching" },
			[]string{`workflow.commands[2].lock: unknown state "Researching"`}},
		{"lock not a lock", func(s *Spec) { s.Commands[2].Lock = sRN },
			[]string{`workflow.commands[2].lock: "Research Needed" is a queue state, not a lock state`}},
		{"wip unknown and negative", func(s *Spec) { s.Gates.WIPLimits = map[string]int{"Foo": 1, sIP: -1, sIR: 3} },
			[]string{`workflow.gates.wip_limits.Foo: unknown state "Foo"`, `workflow.gates.wip_limits.In Progress: must not be negative (got -1)`}},
		{"max depth", func(s *Spec) { s.Automation.MaxCascadeDepth = 0 },
			[]string{`workflow.automation.max_cascade_depth: must be at least 1 (got 0)`}},
		{"no exit", func(s *Spec) { s.FromAnywhere = nil; s.States[6].Next = nil },
			[]string{`workflow.states[6].next: non-terminal state "In Progress" has no exit`,
				`workflow.states[7].name: state "In Review" cannot be reached from any initial state`}},
		{"terminal without exit is fine", func(s *Spec) { s.States[10].Next = nil }, nil},
		{"an exit by from_anywhere alone", func(s *Spec) {
			s.States = append(s.States, StateSpec{Name: "Parked", Kind: "queue"})
			s.States[0].Next = append(s.States[0].Next, "Parked")
		}, nil},
		{"from_anywhere into the state itself is no exit", func(s *Spec) {
			s.States = append(s.States, StateSpec{Name: "Solo", Kind: "queue"})
			s.FromAnywhere = []AnywhereRule{{To: "Solo"}}
		}, []string{`workflow.states[11].next: non-terminal state "Solo" has no exit`}},
		{"reached by from_anywhere alone", func(s *Spec) {
			s.States = append(s.States, StateSpec{Name: "Escalated", Kind: "human_gate", Next: []string{sBacklog}})
			s.FromAnywhere = append(s.FromAnywhere, AnywhereRule{To: "Escalated"}, AnywhereRule{To: "Escalated"})
		}, nil},
		{"a terminal state does not move by from_anywhere", func(s *Spec) {
			s.Initial = []string{sDone}
			s.States[9].Next = nil
		}, []string{
			`workflow.states[0].name: state "Backlog" cannot be reached from any initial state`,
			`workflow.states[1].name: state "Research Needed" cannot be reached from any initial state`,
			`workflow.states[2].name: state "Research in Progress" cannot be reached from any initial state`,
			`workflow.states[3].name: state "Ready for Plan" cannot be reached from any initial state`,
			`workflow.states[4].name: state "Plan in Progress" cannot be reached from any initial state`,
			`workflow.states[5].name: state "Plan in Review" cannot be reached from any initial state`,
			`workflow.states[6].name: state "In Progress" cannot be reached from any initial state`,
			`workflow.states[7].name: state "In Review" cannot be reached from any initial state`,
			`workflow.states[8].name: state "Human Needed" cannot be reached from any initial state`,
			`workflow.states[10].name: state "Canceled" cannot be reached from any initial state`,
		}},
		{"humans_only by from_anywhere", func(s *Spec) {
			s.HumansOnly = []TransitionRef{{From: sBacklog, To: sHN}, {From: sDone, To: sHN}}
		}, []string{`workflow.humans_only[1]: Done → Human Needed is not a transition of the workflow`}},
		{"unreachable", func(s *Spec) {
			s.States = append(s.States, StateSpec{Name: "Archived", Kind: "terminal"})
		}, []string{`workflow.states[11].name: state "Archived" cannot be reached from any initial state`}},
		{"no states", func(s *Spec) {
			*s = Spec{Field: "F", Automation: AutomationSpec{MaxCascadeDepth: 1}}
		}, []string{"workflow.states: must list at least one state", "workflow.initial: must list at least one initial state"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := DefaultSpec()
			tt.edit(&s)
			m, ps := Compile(s)
			var got []string
			for _, p := range ps {
				got = append(got, p.String())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("problems:\n got %q\nwant %q", got, tt.want)
			}
			if (m == nil) != (len(tt.want) > 0) {
				t.Errorf("machine = %v with %d problems", m, len(ps))
			}
		})
	}
}

// A spec with many mistakes reports every one of them, in spec order, deterministically.
func TestCompileReportsEverything(t *testing.T) {
	s := DefaultSpec()
	s.Field = ""
	s.States[0].Kind = "bucket"
	s.States[2].Next[0] = "Nope"
	s.States = append(s.States, StateSpec{Name: sRN, Kind: "queue", Next: []string{sRFP}})
	s.FromAnywhere[0].To = "Help"
	s.Initial = append(s.Initial, "Start")
	s.Pipeline = append(s.Pipeline, "End")
	s.ParentGates = append(s.ParentGates, "Gate")
	s.Intents[0].Targets["deploy"] = sIP
	s.Intents[3].Targets["plan"] = "Planning"
	s.Intents[1].Ambiguous = []string{"ghost"}
	s.Commands[1].Name = "triage"
	s.Commands[4].Lock = sRFP
	s.Commands[5].Outputs = append(s.Commands[5].Outputs, "Merged")
	s.Gates.WIPLimits = map[string]int{"Zeta": 2, "Alpha": -3}
	s.Automation.MaxCascadeDepth = -1
	want := []string{
		"workflow.field: must not be empty",
		`workflow.states[11].name: duplicate state "Research Needed" (also workflow.states[1])`,
		`workflow.states[0].kind: unknown kind "bucket" (valid: queue, lock, human_gate, terminal)`,
		`workflow.states[2].next[0]: unknown state "Nope"`,
		`workflow.from_anywhere[0].to: unknown state "Help"`,
		`workflow.initial[3]: unknown state "Start"`,
		`workflow.pipeline[9]: unknown state "End"`,
		`workflow.parent_gates[4]: unknown state "Gate"`,
		`workflow.intents[0].targets.deploy: unknown command "deploy"`,
		`workflow.intents[1].targets.split: unknown command "split"`,
		`workflow.intents[1].ambiguous[0]: unknown command "ghost"`,
		`workflow.intents[3].targets.plan: unknown state "Planning"`,
		`workflow.commands[1].name: duplicate command "triage" (also workflow.commands[0])`,
		`workflow.commands[4].lock: "Ready for Plan" is a queue state, not a lock state`,
		`workflow.commands[5].outputs[3]: unknown state "Merged"`,
		`workflow.gates.wip_limits.Alpha: unknown state "Alpha"`,
		`workflow.gates.wip_limits.Alpha: must not be negative (got -3)`,
		`workflow.gates.wip_limits.Zeta: unknown state "Zeta"`,
		`workflow.automation.max_cascade_depth: must be at least 1 (got -1)`,
	}
	for i := 0; i < 3; i++ { // deterministic across runs despite map iteration
		m, ps := Compile(s)
		if m != nil {
			t.Fatal("machine returned with problems")
		}
		var got []string
		for _, p := range ps {
			got = append(got, p.String())
		}
		if !slices.Equal(got, want) {
			t.Fatalf("problems:\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(want, "\n     "))
		}
	}
}

func TestProblemString(t *testing.T) {
	if s := (Problem{Path: "workflow.field", Message: "must not be empty"}).String(); s != "workflow.field: must not be empty" {
		t.Error(s)
	}
}

// The precedence rules on a small custom machine: next beats from_anywhere, a humans-only
// state makes every exit humans-only, a humans_only pair restricts one edge, terminal states
// get no from_anywhere edges.
func TestCompilePrecedence(t *testing.T) {
	s := Spec{
		Field: "Status",
		States: []StateSpec{
			{Name: "A", Kind: "queue", Next: []string{"B", "X"}},
			{Name: "B", Kind: "lock", Next: []string{"C"}},
			{Name: "C", Kind: "human_gate", Next: []string{"A"}, HumansOnly: true},
			{Name: "X", Kind: "terminal", Next: []string{"A"}},
		},
		FromAnywhere: []AnywhereRule{{To: "X", HumansOnly: true}, {To: "C"}},
		HumansOnly:   []TransitionRef{{From: "B", To: "C"}},
		Initial:      []string{"A"},
		Pipeline:     []string{"A", "B", "C"},
		Automation:   AutomationSpec{MaxCascadeDepth: 1},
	}
	m, ps := Compile(s)
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	tests := []struct {
		from         string
		agent, human []string
	}{
		{"A", []string{"B", "C", "X"}, []string{"B", "C", "X"}}, // A → X listed in next: anyone
		{"B", []string{}, []string{"C", "X"}},                   // B → C pair humans-only; → X rule humans-only
		{"C", []string{}, []string{"A", "X"}},                   // humans-only state
		{"X", []string{"A"}, []string{"A"}},                     // terminal: no anywhere edges
	}
	for _, tt := range tests {
		sameStrings(t, "agent from "+tt.from, m.AllowedNext(tt.from, ActorAgent), tt.agent)
		sameStrings(t, "human from "+tt.from, m.AllowedNext(tt.from, ActorHuman), tt.human)
	}
	// No plan command and no "Ready for Plan": the convergence gate has nothing to guard.
	d := m.Decide(Change{From: "A", To: "B", ActorKind: ActorAgent, Group: []Member{{Number: 1, State: "A"}}})
	if d.Verdict != Allow {
		t.Errorf("Decide = %+v", d)
	}
}
