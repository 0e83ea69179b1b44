package policy

import (
	"maps"
	"slices"
	"strings"
)

// Machine is a compiled, immutable workflow. Build it with Compile; all methods are safe for
// concurrent use because nothing mutates it after construction.
type Machine struct {
	spec     Spec
	states   []string
	index    map[string]int // state name -> position in states
	info     []StateInfo
	edges    [][]edge // edges[from][to]
	initial  []string
	isInit   map[string]bool
	commands []command
	cmdIndex map[string]int // normalized command name -> position in commands
	intents  []intent
	intIndex map[string]int // normalized intent name -> position in intents

	// The convergence gate (docs/ENFORCEMENT.md) guards entering convLock until the group reaches convReady.
	convLock, convReady string

	// roles is the state ownership map (nil: no roles, agents keep the agent rules alone).
	roles *Roles
}

// StateInfo describes one state.
type StateInfo struct {
	Name        string `json:"name"`
	Kind        Kind   `json:"kind"`
	Description string `json:"description"`
	// PipelineIndex is the position on the pipeline, -1 when off the pipeline.
	PipelineIndex int `json:"pipeline_index"`
	// HumansOnly: every exit from this state is humans-only.
	HumansOnly bool `json:"humans_only"`
}

// Transition is one edge of the machine.
type Transition struct {
	From       string `json:"from"`
	To         string `json:"to"`
	HumansOnly bool   `json:"humans_only"`
	// Anywhere: the edge comes from a from_anywhere rule, not the state's own next list.
	Anywhere bool `json:"anywhere"`
}

type edge struct {
	ok, humansOnly, anywhere bool
}

type command struct {
	name, description string
	inputs, outputs   []string
	lock              string
	direct            []string // lock first, then outputs: the states a handoff may name directly
}

type intent struct {
	name, description string
	targets           map[string]string // normalized command or "*" -> state
	ambiguous         map[string]bool
}

// normCommand accepts "research", "ralph_research" and any letter case.
func normCommand(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	return strings.TrimPrefix(s, "ralph_")
}

// normIntent accepts "lock", "LOCK" and the marker form "__LOCK__".
func normIntent(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 4 && strings.HasPrefix(s, "__") && strings.HasSuffix(s, "__") {
		s = s[2 : len(s)-2]
	}
	return strings.ToLower(s)
}

// isMarker reports the __WORD__ form, which can never be a state name in practice.
func isMarker(s string) bool {
	s = strings.TrimSpace(s)
	return len(s) > 4 && strings.HasPrefix(s, "__") && strings.HasSuffix(s, "__")
}

// States returns the state names in display order.
func (m *Machine) States() []string { return slices.Clone(m.states) }

// State describes one state; false when name is not a state.
func (m *Machine) State(name string) (StateInfo, bool) {
	i, ok := m.index[name]
	if !ok {
		return StateInfo{Name: name, PipelineIndex: -1}, false
	}
	return m.info[i], true
}

func (m *Machine) kindIs(name string, k Kind) bool {
	i, ok := m.index[name]
	return ok && m.info[i].Kind == k
}

// IsLock reports whether name is a lock state.
func (m *Machine) IsLock(name string) bool { return m.kindIs(name, Lock) }

// IsTerminal reports whether name is a terminal state.
func (m *Machine) IsTerminal(name string) bool { return m.kindIs(name, Terminal) }

// IsHumanGate reports whether name is a human gate state.
func (m *Machine) IsHumanGate(name string) bool { return m.kindIs(name, HumanGate) }

// IsState reports whether name is a state of the machine.
func (m *Machine) IsState(name string) bool { _, ok := m.index[name]; return ok }

// PipelineIndex is the position of name on the pipeline, -1 when off it or unknown.
func (m *Machine) PipelineIndex(name string) int {
	if i, ok := m.index[name]; ok {
		return m.info[i].PipelineIndex
	}
	return -1
}

// isCanceledLike: terminal but off the pipeline (Canceled). Such items are ignored by convergence.
func (m *Machine) isCanceledLike(name string) bool {
	return m.IsTerminal(name) && m.PipelineIndex(name) < 0
}

// isEscalated: off the pipeline and waiting for a human (Human Needed).
func (m *Machine) isEscalated(name string) bool {
	return m.IsHumanGate(name) && m.PipelineIndex(name) < 0
}

// ReviewMode is workflow.review_mode, skip when unset.
func (m *Machine) ReviewMode() string {
	if m.spec.ReviewMode == "" {
		return ReviewSkip
	}
	return m.spec.ReviewMode
}

// Field is the name of the project field holding the state.
func (m *Machine) Field() string { return m.spec.Field }

// Spec returns a deep copy of the spec the machine was compiled from.
func (m *Machine) Spec() Spec { return cloneSpec(m.spec) }

// Initial returns the states an item with no value may take first, in display order.
func (m *Machine) Initial() []string { return slices.Clone(m.initial) }

// Pipeline returns the pipeline order.
func (m *Machine) Pipeline() []string { return slices.Clone(m.spec.Pipeline) }

// ParentGates returns the parent gate states in pipeline order.
func (m *Machine) ParentGates() []string {
	gs := slices.Clone(m.spec.ParentGates)
	slices.SortStableFunc(gs, func(a, b string) int { return m.PipelineIndex(a) - m.PipelineIndex(b) })
	return gs
}

// Commands returns the command names in config order.
func (m *Machine) Commands() []string {
	out := make([]string, len(m.commands))
	for i, c := range m.commands {
		out[i] = c.name
	}
	return out
}

// Intents returns the intent names in config order.
func (m *Machine) Intents() []string {
	out := make([]string, len(m.intents))
	for i, it := range m.intents {
		out[i] = it.name
	}
	return out
}

// CommandsExpecting returns the commands that take state as an input, in config order.
func (m *Machine) CommandsExpecting(state string) []string {
	out := []string{}
	for _, c := range m.commands {
		if slices.Contains(c.inputs, state) {
			out = append(out, c.name)
		}
	}
	return out
}

// DirectStates returns the states a command may name directly (lock ∪ outputs); false when
// the command is unknown. Accepts bare and ralph_-prefixed names.
func (m *Machine) DirectStates(cmd string) ([]string, bool) {
	i, ok := m.cmdIndex[normCommand(cmd)]
	if !ok {
		return nil, false
	}
	return slices.Clone(m.commands[i].direct), true
}

// CommandLock returns the lock state of a command ("" when it has none).
func (m *Machine) CommandLock(cmd string) string {
	if i, ok := m.cmdIndex[normCommand(cmd)]; ok {
		return m.commands[i].lock
	}
	return ""
}

// Gates returns a copy of the gate switches.
func (m *Machine) Gates() GatesSpec {
	g := m.spec.Gates
	g.WIPLimits = maps.Clone(g.WIPLimits)
	return g
}

// Automation returns the automation switches.
func (m *Machine) Automation() AutomationSpec { return m.spec.Automation }

// Transitions lists every edge, ordered by from then to in display order.
func (m *Machine) Transitions() []Transition {
	out := []Transition{}
	for f := range m.states {
		for t := range m.states {
			if e := m.edges[f][t]; e.ok {
				out = append(out, Transition{From: m.states[f], To: m.states[t], HumansOnly: e.humansOnly, Anywhere: e.anywhere})
			}
		}
	}
	return out
}

// AllowedNext lists the states the actor may move an item to from `from`, in display order.
// from "" means unset: the initial states. Unknown states allow nothing.
func (m *Machine) AllowedNext(from string, actor ActorKind) []string {
	if from == "" {
		return m.Initial()
	}
	f, ok := m.index[from]
	if !ok {
		return []string{}
	}
	out := []string{}
	for t, e := range m.edges[f] {
		if e.ok && (!e.humansOnly || !actor.restricted()) {
			out = append(out, m.states[t])
		}
	}
	return out
}

// CheckResult is the answer of `ralph-gate policy check`.
type CheckResult struct {
	Allowed            bool     `json:"allowed"`
	Reason             string   `json:"reason"`
	AllowedTransitions []string `json:"allowed_transitions"`
}

// Check says whether actor may move an item from `from` ("" = unset) to `to`.
func (m *Machine) Check(from, to string, actor ActorKind) CheckResult {
	res := CheckResult{AllowedTransitions: m.AllowedNext(from, actor)}
	res.Allowed, res.Reason, _ = m.checkMove(from, to, actor)
	return res
}

// checkMove is Check's verdict plus the rule that decided it (shared with Decide).
func (m *Machine) checkMove(from, to string, actor ActorKind) (bool, string, Rule) {
	if from != "" && !m.IsState(from) {
		return false, quoteState(from) + " is not a state of the workflow", RuleUnknownState
	}
	if !m.IsState(to) {
		return false, quoteState(to) + " is not a state of the workflow", RuleUnknownState
	}
	arrow := displayFrom(from) + " → " + to
	if from == "" {
		if !m.isInit[to] {
			return false, arrow + " is not allowed: an item with no state may start only in " + joinOr(m.initial), RuleNotInitial
		}
		return true, arrow + " is allowed for " + actor.String(), RuleLegal
	}
	if from == to {
		return false, arrow + " is not a change", RuleTransition
	}
	e := m.edges[m.index[from]][m.index[to]]
	switch {
	case !e.ok:
		return false, arrow + " is not a transition of the workflow", RuleTransition
	case e.humansOnly && actor.restricted():
		return false, arrow + " is for humans only", RuleHumansOnly
	}
	return true, arrow + " is allowed for " + actor.String(), RuleLegal
}

func displayFrom(from string) string {
	if from == "" {
		return "(unset)"
	}
	return from
}

func quoteState(s string) string { return `"` + s + `"` }

// ConvergenceGateState is the state the convergence gate guards (the plan command's lock);
// "" when the gate has nothing to guard.
func (m *Machine) ConvergenceGateState() string { return m.convLock }
