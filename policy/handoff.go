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
	its, targets, states, ok := m.handoffRetries(cmd, from, actor)
	if !ok {
		return nil, nil
	}
	intents = []string{}
	for i, it := range its {
		intents = append(intents, it+" (→ "+targets[i]+")")
	}
	return intents, states
}

// handoffRetries is HandoffRetries with each intent and its state apart; ok is false when cmd
// is unknown.
func (m *Machine) handoffRetries(cmd, from string, actor ActorKind) (intents, targets, states []string, ok bool) {
	c, err := m.command(cmd)
	if err != nil {
		return nil, nil, nil, false
	}
	allowed := m.AllowedNext(from, actor)
	intents, targets, states = []string{}, []string{}, []string{}
	for _, it := range m.intents {
		if st, r := it.resolve(c.name); r == resolved && slices.Contains(allowed, st) {
			intents, targets = append(intents, it.name), append(targets, st)
		}
	}
	for _, st := range c.direct {
		if slices.Contains(allowed, st) {
			states = append(states, st)
		}
	}
	return intents, targets, states, true
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
	case RuleLockOwnership, RuleBlockers, RuleConvergence, RuleWIP, RuleRole, RuleSerialized:
		return r
	}
	intents, targets, states, _ := m.handoffRetries(cmd, c.From, c.ActorKind)
	rt := Retry{Lead: fmt.Sprintf("from %s, %s may", displayFrom(c.From), cmd), OneOf: true}
	if len(intents) > 0 {
		notes := make([]string, len(targets))
		for i, st := range targets {
			notes[i] = "→ " + st
		}
		rt.With = append(rt.With, Suggestion{Arg: ArgIntent, Kind: Word, Values: intents, Notes: notes})
	}
	if len(states) > 0 {
		rt.With = append(rt.With, Suggestion{Arg: ArgState, Kind: Text, Values: states})
	}
	var others []string
	for _, st := range d.Allowed {
		if !slices.Contains(states, st) {
			others = append(others, st)
		}
	}
	switch {
	case len(rt.With) > 0:
		if len(others) > 0 {
			rt.Tail = fmt.Sprintf("; other commands may move it to %s", joinOr(quotedStates(others)))
		}
		return NewRetryRefusal(r.Tried, r.Why, rt).Because(d.Rule)
	case len(d.Allowed) > 0:
		r.Recovery = fmt.Sprintf("%s has no valid handoff from %s; use the command whose outputs include one of %s, or ask a human", cmd, displayFrom(c.From), joinOr(quotedStates(d.Allowed)))
	default:
		r.Recovery = fmt.Sprintf("no move out of %s is open to %s; ask a human", displayFrom(c.From), c.ActorKind)
	}
	r.Options = slices.Clone(d.Allowed)
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
		r := NewRetryRefusal(tried, "Children can only be advanced along the pipeline: "+strings.Join(pipe, ", "),
			Retry{With: []Suggestion{{Arg: ArgTarget, Kind: Text, Values: pipe}}}).Because(RuleArguments)
		r.Unknown = !m.IsState(target)
		return r
	}
	pi := m.PipelineIndex(parentState)
	if pi < 0 {
		return &Refusal{
			Tried:    fmt.Sprintf("Advancing the children to %s", target),
			Why:      fmt.Sprintf("the parent is in %s, which is off the pipeline, so its children have nothing to follow", displayFrom(parentState)),
			Recovery: "move the parent onto the pipeline first (a human may need to), then retry",
			Options:  []string{},
			Rule:     RuleConvergence,
		}
	}
	if ti > pi {
		ok := pipe[:pi+1]
		return NewRetryRefusal(fmt.Sprintf("Advancing the children to %s", target),
			fmt.Sprintf("the parent is only in %s, and children never get ahead of their parent", parentState),
			Retry{Lead: fmt.Sprintf("hand the parent off to %s first, or", target), With: []Suggestion{{Arg: ArgTarget, Kind: Text, Values: slices.Clone(ok)}}}).Because(RuleConvergence)
	}
	return nil
}
