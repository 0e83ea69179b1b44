package policy

// DefaultSpec is the default workflow (README: The workflow), equal field by field to the `workflow:` section of
// config.yml as yaml.v3 decodes it (so `[]` and `{}` are empty, not nil, and absent keys nil).
// A fresh value on every call: callers may modify it freely.
func DefaultSpec() Spec {
	return Spec{
		Field: "Workflow State",
		States: []StateSpec{
			{Name: "Backlog", Kind: "queue", Description: "Awaiting triage",
				Next: []string{"Research Needed", "Ready for Plan", "Done", "Canceled"}},
			{Name: "Research Needed", Kind: "queue", Description: "Needs investigation before planning",
				Next: []string{"Research in Progress", "Ready for Plan", "Human Needed"}},
			{Name: "Research in Progress", Kind: "lock", Description: "Research actively being conducted",
				Next: []string{"Ready for Plan", "Human Needed", "Research Needed"}},
			{Name: "Ready for Plan", Kind: "queue", Description: "Research complete, ready for implementation planning",
				Next: []string{"Plan in Progress", "Human Needed"}},
			{Name: "Plan in Progress", Kind: "lock", Description: "Plan actively being written",
				Next: []string{"Plan in Review", "In Progress", "Human Needed", "Ready for Plan"}},
			{Name: "Plan in Review", Kind: "human_gate", Description: "Plan awaiting approval",
				Next: []string{"In Progress", "Ready for Plan", "Human Needed"}},
			{Name: "In Progress", Kind: "lock", Description: "Implementation underway",
				Next: []string{"In Review", "Human Needed"}},
			{Name: "In Review", Kind: "human_gate", Description: "Pull request awaiting code review",
				Next: []string{"Done", "In Progress", "Human Needed"}},
			{Name: "Human Needed", Kind: "human_gate", Description: "Escalated, requires human intervention",
				Next: []string{"Backlog", "Research Needed", "Ready for Plan", "In Progress"}, HumansOnly: true},
			{Name: "Done", Kind: "terminal", Description: "Completed",
				Next: []string{"Backlog"}, HumansOnly: true},
			{Name: "Canceled", Kind: "terminal", Description: "Canceled or superseded",
				Next: []string{"Backlog"}, HumansOnly: true},
		},
		FromAnywhere: []AnywhereRule{
			{To: "Human Needed"},
			{To: "Canceled", HumansOnly: true},
		},
		HumansOnly: []TransitionRef{},
		Initial:    []string{"Backlog", "Research Needed", "Ready for Plan"},
		Pipeline: []string{
			"Backlog", "Research Needed", "Research in Progress", "Ready for Plan", "Plan in Progress",
			"Plan in Review", "In Progress", "In Review", "Done",
		},
		ParentGates: []string{"Ready for Plan", "Plan in Review", "In Review", "Done"},
		Intents: []IntentSpec{
			{Name: "lock", Description: "claim work", Targets: map[string]string{
				"research": "Research in Progress", "plan": "Plan in Progress", "plan_epic": "Plan in Progress", "impl": "In Progress",
			}},
			{Name: "complete", Description: "finish work", Targets: map[string]string{
				"split": "Backlog", "research": "Ready for Plan", "plan": "Plan in Review", "plan_epic": "In Progress",
				"impl": "In Review", "review": "In Progress", "merge": "Done",
			}, Ambiguous: []string{"triage"}},
			{Name: "escalate", Description: "needs a human", Targets: map[string]string{"*": "Human Needed"}},
			{Name: "release", Description: "give claimed work back", Targets: map[string]string{
				"research": "Research Needed", "plan": "Ready for Plan", "plan_epic": "Ready for Plan",
			}},
			{Name: "reject", Description: "send work back", Targets: map[string]string{
				"review": "Ready for Plan", "impl": "In Progress", "*": "Human Needed",
			}},
			{Name: "close", Description: "mark done", Targets: map[string]string{"*": "Done"}},
			{Name: "cancel", Description: "abandon", Targets: map[string]string{"*": "Canceled"}},
		},
		Commands: []CommandSpec{
			{Name: "triage", Description: "route a new issue", Inputs: []string{"Backlog"},
				Outputs: []string{"Research Needed", "Ready for Plan", "Done", "Canceled", "Human Needed"}},
			{Name: "split", Description: "break a large issue into sub-issues", Inputs: []string{"Backlog", "Research Needed"},
				Outputs: []string{"Backlog", "In Progress", "Ready for Plan"}},
			{Name: "research", Description: "investigate before planning", Inputs: []string{"Research Needed"},
				Outputs: []string{"Ready for Plan", "Human Needed"}, Lock: "Research in Progress"},
			{Name: "plan", Description: "write an implementation plan", Inputs: []string{"Ready for Plan"},
				Outputs: []string{"Plan in Review", "In Progress", "Human Needed"}, Lock: "Plan in Progress"},
			{Name: "plan_epic", Description: "plan an epic and its children together", Inputs: []string{"Ready for Plan"},
				Outputs: []string{"In Progress", "Human Needed"}, Lock: "Plan in Progress"},
			{Name: "review", Description: "review a plan", Inputs: []string{"Plan in Review"},
				Outputs: []string{"In Progress", "Ready for Plan", "Human Needed"}},
			{Name: "impl", Description: "implement a reviewed plan", Inputs: []string{"Plan in Review", "In Progress"},
				Outputs: []string{"In Progress", "In Review", "Human Needed"}, Lock: "In Progress"},
			{Name: "pr", Description: "open the pull request", Inputs: []string{"In Progress"},
				Outputs: []string{"In Review", "Human Needed"}},
			{Name: "merge", Description: "merge an approved pull request", Inputs: []string{"In Review"},
				Outputs: []string{"Done", "Human Needed"}},
			{Name: "hero", Description: "orchestrate a whole issue tree",
				Inputs:  []string{"Backlog", "Research Needed", "Ready for Plan", "Plan in Review", "In Progress"},
				Outputs: []string{"In Review", "Human Needed"}},
		},
		Gates:        GatesSpec{LockOwnership: true, Blockers: true, Convergence: true, WIPLimits: map[string]int{}},
		Requirements: []Requirement{},
		Automation: AutomationSpec{
			CascadeChildren: true, ConvergeParents: true, LifecycleSync: true, CommentAutomation: false,
			MaxCascadeDepth: 10,
		},
		ReviewMode: ReviewSkip,
	}
}

// DefaultMachine compiles DefaultSpec; the default is valid by construction (tested).
func DefaultMachine() *Machine {
	m, ps := Compile(DefaultSpec())
	if len(ps) > 0 {
		panic("policy: default workflow is invalid: " + ps[0].String())
	}
	return m
}
