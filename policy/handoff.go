package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// HandoffAsk is an agent's handoff as policy sees it when it says what to retry with: the
// command and the intent or direct state asked for (at most one), the state the item is in
// (its last legal state; "" = unset), and who asks — the actor, its kind and worker role, and
// the commands it may use (empty: every command). A Recovery built for it suggests only
// what the workflow lets this agent do from From.
type HandoffAsk struct {
	Command  string
	Intent   string
	State    string
	From     string
	Actor    string
	Kind     ActorKind
	Role     string
	Commands []string
}

// change is the move to `to` the ask stands for.
func (a HandoffAsk) change(to string) Change {
	return Change{From: a.From, To: to, Actor: a.Actor, ActorKind: a.Kind, Role: a.Role}
}

// mayUse reports whether the asker may use command name (the canonical name).
func (a HandoffAsk) mayUse(name string) bool {
	return len(a.Commands) == 0 || slices.ContainsFunc(a.Commands, func(c string) bool { return normCommand(c) == normCommand(name) })
}

// mayMove reports whether the table, the actor's kind and its worker role let c happen: what
// a Recovery may suggest. The gates (locks, blockers, convergence, WIP, serialized work) depend
// on other items and are not asked. A move to the state the item is in is no move.
func (m *Machine) mayMove(c Change) bool {
	from := c.From
	if !m.IsState(from) {
		from = ""
	}
	if !m.IsState(c.To) || from == c.To {
		return false
	}
	if c.ActorKind == ActorApp || c.ActorKind == ActorBypass {
		return true
	}
	if ok, _, _ := m.checkMove(from, c.To, c.ActorKind); !ok {
		return false
	}
	role := m.roleOf(c)
	return role == "" || m.checkRole(c, from, role) == ""
}

// HandoffRetries lists what an agent running cmd may ask for from state `from`: the intents
// that resolve (for cmd) to a state the actor may move to, each as "intent (→ State)", and the
// command's direct states the actor may move to. Both are nil when cmd is unknown.
func (m *Machine) HandoffRetries(cmd, from string, actor ActorKind) (intents, states []string) {
	c, err := m.command(cmd)
	if err != nil {
		return nil, nil
	}
	its, targets, states := m.handoffTargets(c, HandoffAsk{Command: cmd, From: from, Kind: actor})
	intents = []string{}
	for i, it := range its {
		intents = append(intents, it+" (→ "+targets[i]+")")
	}
	return intents, states
}

// handoffTargets are the intents (with the state each means) and the direct states command c
// may ask for from a.From, for the asker (mayMove).
func (m *Machine) handoffTargets(c *command, a HandoffAsk) (intents, targets, states []string) {
	intents, targets, states = []string{}, []string{}, []string{}
	for _, it := range m.intents {
		if st, r := it.resolve(c.name); r == resolved && m.mayMove(a.change(st)) {
			intents, targets = append(intents, it.name), append(targets, st)
		}
	}
	for _, st := range c.direct {
		if m.mayMove(a.change(st)) {
			states = append(states, st)
		}
	}
	return intents, targets, states
}

// others are the states the asker's other commands would move the item to (elsewhere).
type others struct {
	text   string   // `"Done" (merge) or "Backlog" (triage or split)`; "" when none
	states []string // the states text names
}

// elsewhere says which other commands the asker may use would move the item, by direct state,
// to a state the asker may move it to and that offered does not list.
func (m *Machine) elsewhere(c *command, a HandoffAsk, offered []string) others {
	byState := map[string][]string{}
	var order []string
	for _, oc := range m.commands {
		if oc.name == c.name || !a.mayUse(oc.name) {
			continue
		}
		for _, st := range oc.direct {
			if slices.Contains(offered, st) || slices.Contains(byState[st], oc.name) || !m.mayMove(a.change(st)) {
				continue
			}
			if _, seen := byState[st]; !seen {
				order = append(order, st)
			}
			byState[st] = append(byState[st], oc.name)
		}
	}
	if len(order) == 0 {
		return others{}
	}
	slices.SortStableFunc(order, func(x, y string) int { return m.index[x] - m.index[y] })
	parts := make([]string, len(order))
	for i, st := range order {
		parts[i] = quoteState(st) + " (" + joinOr(byState[st]) + ")"
	}
	return others{text: joinOr(parts), states: order}
}

// handoffRetry is everything a.Command may ask for from a.From for the asker, as a retry:
// the intents, then the direct states (one of the two), and in its Tail the states other
// commands of the asker's would move the item to. ok is false when the command may ask for
// nothing; the Tail alone is then in other.
func (m *Machine) handoffRetry(c *command, a HandoffAsk) (rt Retry, other others, ok bool) {
	intents, targets, states := m.handoffTargets(c, a)
	rt = Retry{Lead: fmt.Sprintf("from %s, %s may", displayFrom(a.From), c.name), OneOf: true}
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
	offered := slices.Clone(states)
	offered = append(offered, targets...)
	other = m.elsewhere(c, a, offered)
	if other.text != "" {
		rt.Tail = "; other commands you may use move it to " + other.text
	}
	return rt, other, len(rt.With) > 0
}

// nothingFrom is the Recovery of a handoff that command c may not make from a.From at all,
// and the states it names.
func (m *Machine) nothingFrom(c *command, a HandoffAsk, other others) (string, []string) {
	if other.text != "" {
		return fmt.Sprintf("%s has no handoff open to you from %s; other commands you may use move it to %s, or ask a human",
			c.name, displayFrom(a.From), other.text), slices.Clone(other.states)
	}
	who := a.Kind.String()
	if a.Role != "" {
		who += " of the " + a.Role + " role"
	}
	return fmt.Sprintf("no move out of %s is open to this %s; ask a human", displayFrom(a.From), who), []string{}
}

// CheckCommand refuses a command the workflow does not know, suggesting only the commands
// the asker may use (commands; empty: every command). nil for a known command.
func (m *Machine) CheckCommand(cmd string, commands []string) error {
	_, err := m.commandFor(cmd, commands)
	return err
}

// commandFor is command, whose refusal of an unknown name lists only the commands the asker
// may use.
func (m *Machine) commandFor(cmd string, commands []string) (*command, error) {
	c, err := m.command(cmd)
	var r *Refusal
	if err == nil || len(commands) == 0 || !errors.As(err, &r) || r.Retry == nil {
		return c, err
	}
	a := HandoffAsk{Commands: commands}
	var names []string
	for _, name := range m.Commands() {
		if a.mayUse(name) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil, err
	}
	out := NewRetryRefusal(r.Tried, "The commands you may use are "+strings.Join(names, ", ")+" (each is also accepted with the ralph_ prefix, e.g. ralph_"+names[0]+")",
		Retry{With: []Suggestion{{Arg: ArgCommand, Kind: Word, Values: names}}})
	out.Unknown, out.Rule = r.Unknown, r.Rule
	return nil, out
}

// ResolveHandoff resolves a handoff's intent or direct state for its command, as ResolveIntent
// and ResolveState do; but a refusal's Recovery suggests only what the asker may ask for
// from a.From — the intents and direct states of its command that the table, its kind and its
// role allow from there, and the states its other commands would move the item to — so that
// every value it names, retried as written, passes resolution and the table. An unknown
// command's Recovery names only the commands the asker may use.
func (m *Machine) ResolveHandoff(a HandoffAsk) (string, error) {
	c, err := m.commandFor(a.Command, a.Commands)
	if err != nil {
		return "", err
	}
	var to string
	if strings.TrimSpace(a.Intent) != "" {
		to, err = m.ResolveIntent(c.name, a.Intent)
	} else {
		to, err = m.ResolveState(c.name, a.State)
	}
	var r *Refusal
	if err == nil || !errors.As(err, &r) {
		return to, err
	}
	return "", m.narrow(c, a, r)
}

// narrow re-renders a refusal of a's resolution with the suggestions of its Retry that the
// asker may follow from a.From: an intent stays when the state it means may be entered, a
// state when it may be entered; the Lead says where from, the Tail what other commands do.
func (m *Machine) narrow(c *command, a HandoffAsk, r *Refusal) *Refusal {
	if r.Retry == nil {
		return r
	}
	rt := *r.Retry
	rt.With = nil
	var offered []string
	for _, s := range r.Retry.With {
		if s.Arg != ArgIntent && s.Arg != ArgState {
			continue
		}
		keep := s
		keep.Values, keep.Notes = nil, nil
		for _, v := range s.Values {
			st := v
			if s.Arg == ArgIntent {
				i, known := m.intIndex[normIntent(v)]
				if !known {
					continue
				}
				var res resolution
				if st, res = m.intents[i].resolve(c.name); res != resolved {
					continue
				}
			}
			if !m.mayMove(a.change(st)) {
				continue
			}
			keep.Values = append(keep.Values, v)
			if s.Arg == ArgIntent {
				keep.Notes = append(keep.Notes, "→ "+st)
			}
			offered = append(offered, st)
		}
		if len(keep.Values) > 0 {
			rt.With = append(rt.With, keep)
		}
	}
	other := m.elsewhere(c, a, offered)
	out := &Refusal{Tried: r.Tried, Why: r.Why, Unknown: r.Unknown, Rule: r.Rule}
	if len(rt.With) == 0 {
		out.Recovery, out.Options = m.nothingFrom(c, a, other)
		return out
	}
	switch lead := strings.TrimSpace(rt.Lead); lead {
	case "", "for " + c.name + ",":
		rt.Lead = fmt.Sprintf("from %s, %s may", displayFrom(a.From), c.name)
	default:
		rt.Lead = fmt.Sprintf("from %s, %s", displayFrom(a.From), lead)
	}
	rt.Tail = ""
	if other.text != "" {
		rt.Tail = "; other commands you may use move it to " + other.text
	}
	nr := NewRetryRefusal(out.Tried, out.Why, rt)
	nr.Unknown, nr.Rule = out.Unknown, out.Rule
	return nr
}

// HandoffRetryRefusal refuses a's handoff for tried and why, suggesting everything the asker
// may ask for from a.From with its command (handoffRetry): what an agent that named neither an
// intent nor a state, or both, is told. The command must be known.
func (m *Machine) HandoffRetryRefusal(a HandoffAsk, tried, why string) *Refusal {
	c, err := m.commandFor(a.Command, a.Commands)
	if err != nil {
		var r *Refusal
		if errors.As(err, &r) {
			return r
		}
		return &Refusal{Tried: tried, Why: why, Recovery: "retry with a known command", Options: []string{}, Rule: RuleCommand}
	}
	rt, other, ok := m.handoffRetry(c, a)
	if !ok {
		rec, opts := m.nothingFrom(c, a, other)
		return &Refusal{Tried: tried, Why: why, Recovery: rec, Options: opts, Rule: RuleCommand}
	}
	return NewRetryRefusal(tried, why, rt).Because(RuleArguments)
}

// HandoffRefusal renders a refused handoff (an agent asking the app to move an item with a
// command) as the three-part error described in the README (The workflow). Gate refusals
// (lock ownership, blockers, convergence, WIP, serialized work) keep RefusalFor's recovery;
// a move the table or the role refuses lists the intents and direct states that cmd may use
// from the current state instead — only those the table, the actor's kind and its role allow
// (c.Role, else the role its name matches) — and the states the other commands it may use
// (commands; empty: every command) would move the item to; a role refusal adds who else may
// move it. nil when d allows the change.
func (m *Machine) HandoffRefusal(cmd string, commands []string, c Change, d Decision) *Refusal {
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
	case RuleLockOwnership, RuleBlockers, RuleConvergence, RuleWIP, RuleSerialized, RuleRequirement:
		return r
	}
	a := HandoffAsk{Command: cmd, From: c.From, Actor: c.Actor, Kind: c.ActorKind, Role: c.Role, Commands: commands}
	if a.Role == "" {
		a.Role = m.roleOf(c)
	}
	cm, err := m.command(cmd)
	if err != nil {
		return r
	}
	rt, other, ok := m.handoffRetry(cm, a)
	if d.Rule == RuleRole {
		// What the role may do from here (escalate), or leave the item to its owners.
		if !ok {
			return r
		}
		state := c.From
		if !m.IsState(state) {
			state = c.To
		}
		rt.Tail += "; or " + m.roleLeave(state)
		return NewRetryRefusal(r.Tried, r.Why, rt).Because(d.Rule)
	}
	if ok {
		return NewRetryRefusal(r.Tried, r.Why, rt).Because(d.Rule)
	}
	r.Recovery, r.Options = m.nothingFrom(cm, a, other)
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
