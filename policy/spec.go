// Package policy is the workflow brain of ralph-gate: the state machine, intent and command
// resolution, enforcement decisions, automation plans, pipeline detection and pick ranking.
//
// Everything here is a pure, deterministic function over values. It must import only the
// standard library: no GitHub types, no I/O, no clocks (callers pass `now`), no logging.
package policy

// Spec is the declarative workflow as written under `workflow:` in config.yml. The yaml tags
// are plain struct tags so that config decoding (outside this package) can decode strictly
// into it without this package importing a YAML library.
type Spec struct {
	// Field is the name of the single-select project field that holds the state.
	Field string `yaml:"field" json:"field"`
	// States in display order; each lists the states it may move to.
	States []StateSpec `yaml:"states" json:"states"`
	// FromAnywhere rules hold from every non-terminal state (escalation, cancel).
	FromAnywhere []AnywhereRule `yaml:"from_anywhere" json:"from_anywhere"`
	// HumansOnly marks single transitions that only humans may make.
	HumansOnly []TransitionRef `yaml:"humans_only" json:"humans_only"`
	// Initial states an item with no value may take first.
	Initial []string `yaml:"initial" json:"initial"`
	// Pipeline is the order used for "earlier/later"; states not listed are off the pipeline.
	Pipeline []string `yaml:"pipeline" json:"pipeline"`
	// ParentGates are the states a parent may converge to when all children reach them.
	ParentGates []string `yaml:"parent_gates" json:"parent_gates"`
	// Intents map semantic intents to states per command ("*" is the wildcard).
	Intents []IntentSpec `yaml:"intents" json:"intents"`
	// Commands declare the agent commands with their input states, outputs and lock state.
	Commands []CommandSpec `yaml:"commands" json:"commands"`
	// Gates switch the gates of docs/ENFORCEMENT.md (step 6; docs/AUTOMATION.md) on and off.
	Gates GatesSpec `yaml:"gates" json:"gates"`
	// Locks configure lock expiry (docs/ENFORCEMENT.md "Lock expiry").
	Locks LocksSpec `yaml:"locks" json:"locks"`
	// Requirements are conditions on entering states: fields set, a merged pull request
	// (docs/ENFORCEMENT.md "Requirements").
	Requirements []Requirement `yaml:"requirements" json:"requirements,omitempty"`
	// Automation switches the automation rules of docs/AUTOMATION.md on and off.
	Automation AutomationSpec `yaml:"automation" json:"automation"`
	// ReviewMode settles who takes a plan out of review when roles are configured:
	// skip (the default), auto or interactive (docs/ENFORCEMENT.md, Worker roles).
	ReviewMode string `yaml:"review_mode" json:"review_mode,omitempty"`
}

// StateSpec is one state of the machine.
type StateSpec struct {
	Name        string `yaml:"name" json:"name"`
	Kind        string `yaml:"kind" json:"kind"` // queue | lock | human_gate | terminal
	Description string `yaml:"description" json:"description"`
	// Next lists the states this one may move to (besides the from-anywhere rules).
	Next []string `yaml:"next" json:"next"`
	// HumansOnly makes every exit from this state humans-only.
	HumansOnly bool `yaml:"humans_only" json:"humans_only"`
}

// AnywhereRule allows a move into To from every non-terminal state.
type AnywhereRule struct {
	To         string `yaml:"to" json:"to"`
	HumansOnly bool   `yaml:"humans_only" json:"humans_only"`
}

// TransitionRef names one transition.
type TransitionRef struct {
	From string `yaml:"from" json:"from"`
	To   string `yaml:"to" json:"to"`
}

// IntentSpec maps one semantic intent to a state per command.
type IntentSpec struct {
	Name        string `yaml:"name" json:"name"`
	Description string `yaml:"description" json:"description"`
	// Targets maps a command name (bare, e.g. "research") or "*" to a state.
	Targets map[string]string `yaml:"targets" json:"targets"`
	// Ambiguous lists commands for which the intent has several possible outputs.
	Ambiguous []string `yaml:"ambiguous" json:"ambiguous,omitempty"`
}

// CommandSpec declares one agent command.
type CommandSpec struct {
	Name        string   `yaml:"name" json:"name"`
	Description string   `yaml:"description" json:"description"`
	Inputs      []string `yaml:"inputs" json:"inputs"`
	Outputs     []string `yaml:"outputs" json:"outputs"`
	Lock        string   `yaml:"lock" json:"lock,omitempty"`
}

// GatesSpec switches the gates; WIPLimits maps a state to its maximum item count.
type GatesSpec struct {
	LockOwnership bool           `yaml:"lock_ownership" json:"lock_ownership"`
	Blockers      bool           `yaml:"blockers" json:"blockers"`
	Convergence   bool           `yaml:"convergence" json:"convergence"`
	WIPLimits     map[string]int `yaml:"wip_limits" json:"wip_limits,omitempty"`
}

// AutomationSpec switches the automation rules.
type AutomationSpec struct {
	CascadeChildren   bool `yaml:"cascade_children" json:"cascade_children"`
	ConvergeParents   bool `yaml:"converge_parents" json:"converge_parents"`
	LifecycleSync     bool `yaml:"lifecycle_sync" json:"lifecycle_sync"`
	CommentAutomation bool `yaml:"comment_automation" json:"comment_automation"`
	// MaxCascadeDepth bounds how far up/down a chain of automation may go.
	MaxCascadeDepth int `yaml:"max_cascade_depth" json:"max_cascade_depth"`
}
