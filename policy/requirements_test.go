package policy

import (
	"slices"
	"strings"
	"testing"
)

func requirementsMachine(t *testing.T) *Machine {
	return machineWith(t, func(s *Spec) {
		s.Requirements = []Requirement{
			{Into: []string{sRFP}, Fields: []string{"Estimate"}},
			{Into: []string{sDone}, PullRequest: PullRequestMerged, For: []string{"agent"}},
			{Into: []string{sIP}, Fields: []string{"Priority", "Estimate"}, For: []string{"agent", "human"}},
		}
	})
}

func TestDecideRequirements(t *testing.T) {
	m := requirementsMachine(t)
	est := map[string]string{"Estimate": "S"}
	both := map[string]string{"Estimate": "S", "Priority": "P1"}
	opts := map[string][]string{"Estimate": {"XS", "S", "M", "L", "XL"}}
	tests := []struct {
		name     string
		c        Change
		verdict  Verdict
		rule     Rule
		reason   string
		recovery string
		options  []string
	}{
		{name: "field missing", c: Change{From: sRN, To: sRFP, Actor: "agent-1", ActorKind: ActorAgent, FieldOptions: opts},
			verdict: Revert, rule: RuleRequirement, reason: "Ready for Plan requires Estimate to have a value",
			recovery: "set Estimate (XS, S, M, L, XL) on the item first, then retry Ready for Plan", options: []string{"Estimate"}},
		{name: "field blank is missing", c: Change{From: sRN, To: sRFP, Actor: "agent-1", ActorKind: ActorAgent, Fields: map[string]string{"Estimate": "  "}},
			verdict: Revert, rule: RuleRequirement, recovery: "set Estimate on the item first, then retry Ready for Plan"},
		{name: "field set", c: Change{From: sRN, To: sRFP, Actor: "agent-1", ActorKind: ActorAgent, Fields: est},
			verdict: Allow, rule: RuleLegal},
		{name: "binds agents only by default", c: Change{From: sRN, To: sRFP, Actor: "alice", ActorKind: ActorHuman},
			verdict: Allow, rule: RuleLegal},
		{name: "bypass is never bound", c: Change{From: sRN, To: sRFP, Actor: "boss", ActorKind: ActorBypass},
			verdict: Allow, rule: RuleBypass},
		{name: "the app is never bound", c: Change{From: sRN, To: sRFP, Actor: "ralph-gate[bot]", ActorKind: ActorApp},
			verdict: Allow, rule: RuleApp},
		{name: "an unknown actor kind is not bound", c: Change{From: sRN, To: sRFP, Actor: "x"},
			verdict: Allow, rule: RuleLegal},
		{name: "two fields, both missing, bind humans too", c: Change{From: sPIR, To: sIP, Actor: "alice", ActorKind: ActorHuman},
			verdict: Revert, rule: RuleRequirement, reason: "In Progress requires Priority and Estimate to have values",
			recovery: "set Priority and set Estimate on the item first, then retry In Progress", options: []string{"Priority", "Estimate"}},
		{name: "two fields, one missing", c: Change{From: sPIR, To: sIP, Actor: "agent-1", ActorKind: ActorAgent, Fields: est},
			verdict: Revert, rule: RuleRequirement, reason: "In Progress requires Priority to have a value"},
		{name: "two fields set", c: Change{From: sPIR, To: sIP, Actor: "agent-1", ActorKind: ActorAgent, Fields: both},
			verdict: Allow, rule: RuleLegal},
		{name: "no merged pull request", c: Change{From: sIR, To: sDone, Actor: "agent-1", ActorKind: ActorAgent, Number: 7},
			verdict: Revert, rule: RuleRequirement, reason: "Done requires a merged pull request that closes the issue",
			recovery: "merge a pull request that closes #7 first, then retry Done", options: []string{}},
		{name: "merged pull request", c: Change{From: sIR, To: sDone, Actor: "agent-1", ActorKind: ActorAgent, MergedPR: true},
			verdict: Allow, rule: RuleLegal},
		{name: "a human may close without a pull request", c: Change{From: sIR, To: sDone, Actor: "alice", ActorKind: ActorHuman},
			verdict: Allow, rule: RuleLegal},
		{name: "the table comes first", c: Change{From: sBacklog, To: sIP, Actor: "agent-1", ActorKind: ActorAgent},
			verdict: Revert, rule: RuleTransition},
		{name: "states without requirements are free", c: Change{From: sRN, To: sRIP, Actor: "agent-1", ActorKind: ActorAgent},
			verdict: Allow, rule: RuleLegal},
		{name: "the gates come before requirements", c: Change{From: sRN, To: sRIP, Actor: "agent-1", ActorKind: ActorAgent,
			OpenBlockers: []Member{{Number: 3, State: sRN}}},
			verdict: Revert, rule: RuleBlockers},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := m.Decide(tt.c)
			if d.Verdict != tt.verdict || d.Rule != tt.rule {
				t.Fatalf("Decide = %v/%v (%s), want %v/%v", d.Verdict, d.Rule, d.Reason, tt.verdict, tt.rule)
			}
			if tt.reason != "" && d.Reason != tt.reason {
				t.Errorf("reason:\n got %s\nwant %s", d.Reason, tt.reason)
			}
			r := m.RefusalFor(tt.c, d)
			if tt.verdict == Allow {
				if r != nil {
					t.Errorf("a refusal for an allowed move: %v", r)
				}
				return
			}
			if tt.recovery != "" && r.Recovery != tt.recovery {
				t.Errorf("recovery:\n got %s\nwant %s", r.Recovery, tt.recovery)
			}
			if tt.options != nil && !slices.Equal(r.Options, tt.options) {
				t.Errorf("options = %q, want %q", r.Options, tt.options)
			}
			if r.Kind() != tt.rule {
				t.Errorf("counted under %q, want %q", r.Kind(), tt.rule)
			}
		})
	}
}

func TestRequiredInputs(t *testing.T) {
	m := requirementsMachine(t)
	if got := m.RequiredFields(); !slices.Equal(got, []string{"Estimate", "Priority"}) {
		t.Errorf("RequiredFields = %q", got)
	}
	if !m.NeedsMergedPR() {
		t.Error("NeedsMergedPR = false with a pull_request requirement")
	}
	if got := m.Requirements(sIP); len(got) != 1 || !slices.Equal(got[0].Fields, []string{"Priority", "Estimate"}) {
		t.Errorf("Requirements(In Progress) = %+v", got)
	}
	d := defaultMachine(t)
	if len(d.RequiredFields()) != 0 || d.NeedsMergedPR() || len(d.Requirements(sDone)) != 0 {
		t.Error("the default workflow has no requirements")
	}
}

func TestCompileRequirements(t *testing.T) {
	tests := []struct {
		name string
		reqs []Requirement
		want []string // "path: message" substrings, in order
	}{
		{"valid", []Requirement{{Into: []string{sRFP, sPIP}, Fields: []string{"Estimate"}}, {Into: []string{sDone}, PullRequest: "merged", For: []string{"human", "agent"}}}, nil},
		{"unknown state", []Requirement{{Into: []string{"Ready"}, Fields: []string{"Estimate"}}},
			[]string{`workflow.requirements[0].into[0]: unknown state "Ready"`}},
		{"no states", []Requirement{{Fields: []string{"Estimate"}}},
			[]string{"workflow.requirements[0].into: must list at least one state"}},
		{"nothing required", []Requirement{{Into: []string{sDone}}},
			[]string{"workflow.requirements[0]: must require fields, a pull_request, or both"}},
		{"bad field names", []Requirement{{Into: []string{sDone}, Fields: []string{"", "Workflow State", "Size", "Size"}}},
			[]string{"workflow.requirements[0].fields[0]: must name a project field",
				`workflow.requirements[0].fields[1]: "Workflow State" is the workflow field itself`,
				`workflow.requirements[0].fields[3]: "Size" is listed twice`}},
		{"at most four fields", []Requirement{{Into: []string{sRFP}, Fields: []string{"A", "B", "C"}}, {Into: []string{sDone}, Fields: []string{"A", "D", "E"}}},
			[]string{`workflow.requirements[1].fields[2]: the requirements may name at most 4 fields in all; "E" would be the 5th`}},
		{"bad pull_request and for", []Requirement{{Into: []string{sDone}, PullRequest: "closed", For: []string{"agent", "bot"}}},
			[]string{`workflow.requirements[0].pull_request: must be merged, got "closed"`,
				`workflow.requirements[0].for[1]: must be agent or human, got "bot"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := DefaultSpec()
			s.Requirements = tt.reqs
			_, ps := Compile(s)
			var got []string
			for _, p := range ps {
				got = append(got, p.String())
			}
			if len(got) != len(tt.want) {
				t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			for i, w := range tt.want {
				if got[i] != w {
					t.Errorf("problem %d = %s, want %s", i, got[i], w)
				}
			}
		})
	}
}

// The app's automation never moves an item where a requirement of the state would refuse it,
// whoever the requirement binds: a cascade skips such a child, saying what it lacks, and a
// parent that fails one does not converge (Unmet).
func TestAutomationRespectsRequirements(t *testing.T) {
	m := machineWith(t, func(s *Spec) {
		s.Requirements = []Requirement{
			{Into: []string{sRFP}, Fields: []string{"Estimate"}, For: []string{"human"}},
			{Into: []string{sDone}, PullRequest: PullRequestMerged},
		}
	})
	children := []Member{
		{Number: 1, State: sBacklog, Fields: map[string]string{"Estimate": "S"}},
		{Number: 2, State: sBacklog},
		{Number: 3, State: ""},
		{Number: 4, State: sDone},
	}
	moves, skipped := m.PlanCascade(sRFP, children)
	if len(moves) != 1 || moves[0].Number != 1 {
		t.Errorf("moves = %+v, want #1 only", moves)
	}
	want := map[int]Rule{2: RuleRequirement, 3: RuleRequirement, 4: ""}
	if len(skipped) != len(want) {
		t.Fatalf("skipped = %+v", skipped)
	}
	for _, s := range skipped {
		if r, ok := want[s.Number]; !ok || s.Rule != r {
			t.Errorf("skip %+v, want rule %q", s, r)
		}
		if s.Rule == RuleRequirement && s.Reason != "Ready for Plan requires Estimate to have a value" {
			t.Errorf("skip reason %q", s.Reason)
		}
	}
	if got := m.Unmet(sDone, Member{Number: 9}); got != "Done requires a merged pull request that closes the issue" {
		t.Errorf("Unmet(Done) = %q", got)
	}
	if got := m.Unmet(sDone, Member{Number: 9, MergedPR: true}); got != "" {
		t.Errorf("Unmet(Done) with a merged pull request = %q", got)
	}
	if got := defaultMachine(t).Unmet(sDone, Member{}); got != "" {
		t.Errorf("Unmet without requirements = %q", got)
	}
}

// An agent's own cascade (advance_children) is bound only by the requirements that bind
// agents; the app's is bound by all.
func TestPlanCascadeAsAnAgent(t *testing.T) {
	m := machineWith(t, func(s *Spec) {
		s.Requirements = []Requirement{{Into: []string{sRFP}, Fields: []string{"Estimate"}, For: []string{"human"}}}
	})
	children := []Member{{Number: 1, State: sBacklog}}
	if moves, _ := m.PlanCascadeAs(sRFP, children, ActorAgent); len(moves) != 1 {
		t.Errorf("an agent's cascade: %+v, want #1 moved (the requirement binds humans)", moves)
	}
	if moves, skipped := m.PlanCascadeAs(sRFP, children, ActorHuman); len(moves) != 0 || len(skipped) != 1 || skipped[0].Rule != RuleRequirement {
		t.Errorf("a human's cascade: moves %+v, skipped %+v", moves, skipped)
	}
	if moves, _ := m.PlanCascade(sRFP, children); len(moves) != 0 {
		t.Errorf("the app's cascade: %+v, want none", moves)
	}
}
