package toolspec

import "github.com/ralph-gate/ralph-gate/policy"

// Guidance is what an agent may do from a state.
type Guidance struct {
	State             string   `json:"state" jsonschema:"The Workflow State the guidance is for."`
	AllowedNext       []string `json:"allowedNext" jsonschema:"States an agent may move the issue to from here."`
	CommandsExpecting []string `json:"commandsExpecting" jsonschema:"Commands that take this state as their input: who works on the issue next."`
	IsLock            bool     `json:"isLock" jsonschema:"The state is a lock: someone is working on the issue."`
	IsTerminal        bool     `json:"isTerminal" jsonschema:"The state is terminal: only a human reopens the issue."`
	IsHumanGate       bool     `json:"isHumanGate" jsonschema:"The state waits for a person's attention."`
	NeedsHuman        bool     `json:"needsHuman" jsonschema:"Only a human can move the issue on from here."`
	LockHolder        string   `json:"lockHolder,omitempty" jsonschema:"Who holds the lock, when the state is a lock."`
}

// HandoffOutput is handoff_ticket's result.
type HandoffOutput struct {
	Number        int      `json:"number"`
	Repo          string   `json:"repo"`
	Title         string   `json:"title"`
	Command       string   `json:"command" jsonschema:"The command, as configured (bare)."`
	PreviousState string   `json:"previousState"`
	NewState      string   `json:"newState"`
	Changed       bool     `json:"changed" jsonschema:"False when the issue already was in the requested state; nothing was written."`
	Reason        string   `json:"reason" jsonschema:"Why the workflow allows the move."`
	Guidance      Guidance `json:"guidance"`
	Warnings      []string `json:"warnings,omitempty" jsonschema:"Problems after the move took effect (the move stands)."`
	TookOverFrom  string   `json:"tookOverFrom,omitempty" jsonschema:"Whom you took the issue's expired lock over from (take_over)."`
}

// IssueSummary is a related issue.
type IssueSummary struct {
	Number int    `json:"number"`
	Title  string `json:"title"`
	Repo   string `json:"repo"`
	State  string `json:"state" jsonschema:"Workflow State on this project; empty when unset or not on the project."`
	Open   bool   `json:"open"`
}

// Children summarizes sub-issues.
type Children struct {
	Total   int            `json:"total"`
	ByState map[string]int `json:"byState" jsonschema:"Number of sub-issues per Workflow State (\"\" = unset or not on the project)."`
	Issues  []IssueSummary `json:"issues" jsonschema:"The sub-issues (at most 50)."`
}

// StateOutput is get_workflow_state's result.
type StateOutput struct {
	Number         int            `json:"number"`
	Repo           string         `json:"repo"`
	Title          string         `json:"title"`
	Project        int            `json:"project"`
	Open           bool           `json:"open"`
	State          string         `json:"state" jsonschema:"The Workflow State on the board; empty when unset."`
	LastLegalState string         `json:"lastLegalState" jsonschema:"The newest state ralph-gate accepted; differs from state only while a change is being processed."`
	LockHolder     string         `json:"lockHolder,omitempty"`
	LockSince      string         `json:"lockSince,omitempty" jsonschema:"RFC 3339 time the lock was taken."`
	Guidance       Guidance       `json:"guidance"`
	Parent         *IssueSummary  `json:"parent"`
	Children       Children       `json:"children"`
	OpenBlockers   []IssueSummary `json:"openBlockers" jsonschema:"Open issues this one is blocked by (native blockedBy)."`
}

// PipelineIssue is one issue of the group, in topological order.
type PipelineIssue struct {
	Number        int    `json:"number"`
	Title         string `json:"title"`
	WorkflowState string `json:"workflowState"`
	Estimate      string `json:"estimate"`
	SubIssueCount int    `json:"subIssueCount"`
	BlockedBy     []int  `json:"blockedBy" jsonschema:"Open blockers inside the group."`
	NextRequires  string `json:"nextRequires,omitempty" jsonschema:"What the issue lacks to enter the next state on the pipeline (workflow.requirements): set it before you move it there."`
}

// PipelineOutput is detect_pipeline_position's result.
type PipelineOutput struct {
	Phase           string                     `json:"phase" jsonschema:"SPLIT, TRIAGE, RESEARCH, PLAN, REVIEW, HUMAN_GATE, IMPLEMENT, INTEGRATE or TERMINAL."`
	Reason          string                     `json:"reason"`
	RemainingPhases []string                   `json:"remainingPhases"`
	Issues          []PipelineIssue            `json:"issues" jsonschema:"The group, blockers first."`
	Convergence     policy.PipelineConvergence `json:"convergence"`
	IsGroup         bool                       `json:"isGroup"`
	GroupPrimary    int                        `json:"groupPrimary" jsonschema:"The first issue of the group in topological order."`
	GroupParent     int                        `json:"groupParent,omitempty" jsonschema:"The issue whose sub-issues form the group."`
	SuggestedRoster policy.Roster              `json:"suggestedRoster"`
}

// ConvergenceOutput is check_convergence's result.
type ConvergenceOutput struct {
	Converged      bool                       `json:"converged"`
	TargetState    string                     `json:"targetState"`
	Total          int                        `json:"total" jsonschema:"Members that count (Canceled ones do not)."`
	Ready          int                        `json:"ready"`
	Blocking       []policy.ConvergenceMember `json:"blocking" jsonschema:"Members not yet at the target; distanceToTarget is -1 when off the pipeline (Human Needed, unset)."`
	Recommendation string                     `json:"recommendation" jsonschema:"proceed, wait or escalate."`
	Group          []int                      `json:"group" jsonschema:"The issue numbers of the group."`
}

// AdvancedChild is a child that was moved.
type AdvancedChild struct {
	Number    int    `json:"number"`
	FromState string `json:"fromState"`
	ToState   string `json:"toState"`
}

// SkippedChild is a child left alone, with why.
type SkippedChild struct {
	Number       int    `json:"number"`
	CurrentState string `json:"currentState"`
	Reason       string `json:"reason"`
}

// ChildError is a child that could not be moved.
type ChildError struct {
	Number int    `json:"number"`
	Error  string `json:"error"`
}

// AdvanceOutput is advance_children's result: partial success is normal.
type AdvanceOutput struct {
	Parent      int             `json:"parent"`
	ParentState string          `json:"parentState"`
	TargetState string          `json:"targetState"`
	Advanced    []AdvancedChild `json:"advanced"`
	Skipped     []SkippedChild  `json:"skipped"`
	Errors      []ChildError    `json:"errors"`
}

// PickedIssue is an actionable issue.
type PickedIssue struct {
	Number        int    `json:"number"`
	Title         string `json:"title"`
	Repo          string `json:"repo"`
	Project       int    `json:"project"`
	WorkflowState string `json:"workflowState"`
	Estimate      string `json:"estimate"`
	Priority      string `json:"priority"`
	IsLocked      bool   `json:"isLocked"`
}

// PassedIssue is a better-ranked issue a claim could not take.
type PassedIssue struct {
	Number int    `json:"number"`
	Reason string `json:"reason"`
}

// PickOutput is pick_actionable_issue's result.
type PickOutput struct {
	Found             bool           `json:"found" jsonschema:"False when nothing is actionable: not an error; try another state or stop."`
	Issue             *PickedIssue   `json:"issue" jsonschema:"The best issue, null when none. With claim, as the claim left it: workflowState is the state it was moved to (handoff.newState) and isLocked is true."`
	Alternatives      int            `json:"alternatives" jsonschema:"How many other issues qualify, lower ranked."`
	AlternativeIssues []PickedIssue  `json:"alternativeIssues" jsonschema:"The next issues in rank order (at most 10)."`
	Claimed           bool           `json:"claimed" jsonschema:"With claim: the issue is now locked for you."`
	Handoff           *HandoffOutput `json:"handoff" jsonschema:"With claim: the handoff that locked the issue."`
	Passed            []PassedIssue  `json:"passed,omitempty" jsonschema:"Issues left out, with why: lacking what the state your command would move them to requires (workflow.requirements), or, with claim, claimed by someone else first or refused."`
	Message           string         `json:"message"`
}

// StateDescription is one state of the workflow.
type StateDescription struct {
	Name           string        `json:"name"`
	Kind           string        `json:"kind" jsonschema:"queue, lock, human_gate or terminal."`
	Description    string        `json:"description"`
	PipelineIndex  int           `json:"pipelineIndex" jsonschema:"Position on the pipeline; -1 when off it."`
	HumansOnly     bool          `json:"humansOnly" jsonschema:"Every exit from this state is for humans only."`
	AgentNext      []string      `json:"agentNext" jsonschema:"States an agent may move an item to from here."`
	HumanNext      []string      `json:"humanNext" jsonschema:"States a human may move an item to from here."`
	ExpectedBy     []string      `json:"expectedBy" jsonschema:"Commands that take this state as input."`
	IsInitial      bool          `json:"isInitial" jsonschema:"An item with no state may start here."`
	IsParentGateOf bool          `json:"isParentGate" jsonschema:"A parent advances here when all its children have."`
	Owners         []string      `json:"owners,omitempty" jsonschema:"The worker roles whose agents may move an item out of this state (when roles are configured)."`
	Requirements   []Requirement `json:"requirements,omitempty" jsonschema:"What an item needs to enter this state (workflow.requirements): a move that lacks it is reverted."`
}

// Requirement is one condition on entering a state.
type Requirement struct {
	Fields      []string `json:"fields,omitempty" jsonschema:"Project fields that must have a value on the item."`
	PullRequest string   `json:"pullRequest,omitempty" jsonschema:"merged: a merged pull request must close the issue."`
	For         []string `json:"for" jsonschema:"Whom it binds: agent, human."`
}

// RoleDescription is one worker role of the state ownership map.
type RoleDescription struct {
	Name      string   `json:"name"`
	Agents    []string `json:"agents" jsonschema:"Logins or patterns of the role's agents."`
	Owns      []string `json:"owns" jsonschema:"The states its agents may move an item out of."`
	Commands  []string `json:"commands" jsonschema:"The commands its agents run."`
	Serialize string   `json:"serialize,omitempty" jsonschema:"repository: one item per repository at a time in its states."`
}

// IntentDescription is one semantic intent.
type IntentDescription struct {
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Targets     map[string]string `json:"targets" jsonschema:"State per command (* = any other command)."`
	Ambiguous   []string          `json:"ambiguous" jsonschema:"Commands for which the intent has several outputs: name the state instead."`
}

// CommandDescription is one agent command.
type CommandDescription struct {
	Name         string   `json:"name"`
	Description  string   `json:"description"`
	Inputs       []string `json:"inputs" jsonschema:"States the command works on."`
	Outputs      []string `json:"outputs"`
	Lock         string   `json:"lock" jsonschema:"The state the command locks an issue in; empty when none."`
	DirectStates []string `json:"directStates" jsonschema:"States a handoff with this command may name in to_state."`
	Intents      []string `json:"intents" jsonschema:"Intents that resolve for this command, as intent (→ State)."`
}

// TransitionDescription is one edge of the machine.
type TransitionDescription struct {
	From       string `json:"from"`
	To         string `json:"to"`
	HumansOnly bool   `json:"humansOnly"`
	Anywhere   bool   `json:"anywhere" jsonschema:"The edge holds from every non-terminal state."`
}

// Gates says which gates of the workflow are on.
type Gates struct {
	LockOwnership bool           `json:"lockOwnership"`
	Blockers      bool           `json:"blockers"`
	Convergence   bool           `json:"convergence"`
	WIPLimits     map[string]int `json:"wipLimits"`
	// LockTTL: workflow.locks.ttl, "" when locks never expire.
	LockTTL string `json:"lockTtl,omitempty" jsonschema:"A lock held longer may be taken over (handoff_ticket take_over, pick_actionable_issue claim in a lock state), e.g. 2h0m0s; absent when locks never expire."`
}

// DescribeOutput is describe_workflow's result (also the workflow resource).
type DescribeOutput struct {
	Field        string                  `json:"field" jsonschema:"The project field that holds the state."`
	States       []StateDescription      `json:"states"`
	Transitions  []TransitionDescription `json:"transitions"`
	Pipeline     []string                `json:"pipeline"`
	Intents      []IntentDescription     `json:"intents"`
	Commands     []CommandDescription    `json:"commands"`
	Gates        Gates                   `json:"gates"`
	Agent        string                  `json:"agent" jsonschema:"You, as ralph-gate knows you."`
	YourCommands []string                `json:"yourCommands" jsonschema:"The commands you may use."`
	YourRole     string                  `json:"yourRole,omitempty" jsonschema:"Your worker role, when roles are configured: you may move items only out of its states (or escalate)."`
	Roles        []RoleDescription       `json:"roles,omitempty" jsonschema:"The worker roles and the states each owns (empty: no roles)."`
	ReviewMode   string                  `json:"reviewMode,omitempty" jsonschema:"Who takes a plan out of review when roles are configured: skip, auto or interactive."`
}
