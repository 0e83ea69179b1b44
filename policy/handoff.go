package policy

import (
	"fmt"
	"slices"
	"strings"
)

// HandoffRetries lists what an agent running cmd may ask for from state `from`: the intents
// that resolve (for cmd) to a state the actor may move to, each as "intent (→ State)", and the
// command's direct states the actor may move to. Both are nil when cmd is unknown.
func (m *Machine) HandoffRetries(cmd, from string, actor ActorKind) (intents, states []string) {
	c, err := m.command(cmd)
	if err != nil {
		return nil, nil
	}
	allowed := m.AllowedNext(from, actor)
	intents, states = []string{}, []string{}
	for _, it := range m.intents {
		if st, r := it.resolve(c.name); r == resolved && slices.Contains(allowed, st) {
			intents = append(intents, it.name+" (→ "+st+")")
		}
	}
	for _, st := range c.direct {
		if slices.Contains(allowed, st) {
			states = append(states, st)
		}
	}
	return intents, states
}

// HandoffRefusal renders a refused handoff (an agent asking the app to move an item with a
// command) as the three-part error described in the README (The workflow). Gate refusals (lock ownership, blockers,
// convergence, WIP) keep RefusalFor's recovery; a move the table refuses lists the intents and
// direct states that cmd may use from the current state instead, and the other moves open to
// the actor there. nil when d allows the change.
func (m *Machine) HandoffRefusal(cmd string, c Change, d Decision) *Refusal {
	r := m.RefusalFor(c, d)
	if r == nil {
		return nil
	}
	who := c.Actor
	if who == "" {
		who = "the agent"
	}
	r.Tried = fmt.Sprintf("%s asked to hand the item off from %s to %s with command %s", who, displayFrom(c.From), quoteState(c.To), cmd)
	switch d.Rule {
	case RuleLockOwnership, RuleBlockers, RuleConvergence, RuleWIP:
		return r
	}
	intents, states := m.HandoffRetries(cmd, c.From, c.ActorKind)
	var parts, opts []string
	if len(intents) > 0 {
		parts = append(parts, "retry with intent "+joinOr(intents))
		for _, it := range intents {
			name, _, _ := strings.Cut(it, " ")
			opts = append(opts, name)
		}
	}
	if len(states) > 0 {
		parts = append(parts, "with to_state "+joinOr(quotedStates(states)))
		opts = append(opts, states...)
	}
	var others []string
	for _, st := range d.Allowed {
		if !slices.Contains(states, st) {
			others = append(others, st)
		}
	}
	switch {
	case len(parts) > 0:
		r.Recovery = fmt.Sprintf("from %s, %s may %s", displayFrom(c.From), cmd, strings.Join(parts, ", or "))
	case len(d.Allowed) > 0:
		r.Recovery = fmt.Sprintf("%s has no valid handoff from %s; use the command whose outputs include one of %s, or ask a human", cmd, displayFrom(c.From), joinOr(quotedStates(d.Allowed)))
	default:
		r.Recovery = fmt.Sprintf("no move out of %s is open to %s; ask a human", displayFrom(c.From), c.ActorKind)
	}
	if len(parts) > 0 && len(others) > 0 {
		r.Recovery += fmt.Sprintf(" (other commands may move it to %s)", joinOr(quotedStates(others)))
	}
	if opts == nil {
		opts = slices.Clone(d.Allowed)
	}
	r.Options = opts
	return r
}

// CheckAdvance says whether an agent may advance a parent's children to target: target must be
// on the pipeline and not later than the parent's own state, so children never get ahead of
// their parent (the children cascade of docs/AUTOMATION.md, asked for explicitly).
func (m *Machine) CheckAdvance(parentState, target string) error {
	pipe := m.Pipeline()
	ti := m.PipelineIndex(target)
	if ti < 0 {
		tried := fmt.Sprintf("Unknown target state %q", target)
		if m.IsState(target) {
			tried = fmt.Sprintf("Target state %q is off the pipeline", target)
		}
		return &Refusal{
			Tried:    tried,
			Why:      "Children can only be advanced along the pipeline: " + strings.Join(pipe, ", "),
			Recovery: "retry with targetState set to one of: " + strings.Join(pipe, ", "),
			Options:  pipe,
		}
	}
	pi := m.PipelineIndex(parentState)
	if pi < 0 {
		return &Refusal{
			Tried:    fmt.Sprintf("Advancing the children to %s", target),
			Why:      fmt.Sprintf("the parent is in %s, which is off the pipeline, so its children have nothing to follow", displayFrom(parentState)),
			Recovery: "move the parent onto the pipeline first (a human may need to), then retry",
			Options:  []string{},
		}
	}
	if ti > pi {
		ok := pipe[:pi+1]
		return &Refusal{
			Tried:    fmt.Sprintf("Advancing the children to %s", target),
			Why:      fmt.Sprintf("the parent is only in %s, and children never get ahead of their parent", parentState),
			Recovery: fmt.Sprintf("hand the parent off to %s first, or retry with targetState %s", target, joinOr(quotedStates(ok))),
			Options:  slices.Clone(ok),
		}
	}
	return nil
}
