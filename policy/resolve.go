package policy

import (
	"fmt"
	"slices"
	"strings"
)

// ResolveIntent turns a semantic intent into the state it means for a command (README: The workflow).
// Commands are accepted bare or ralph_-prefixed, intents as words or __MARKERS__, both in any
// letter case. Every error is a *Refusal whose Recovery lists exactly the valid retries.
func (m *Machine) ResolveIntent(cmd, intentName string) (string, error) {
	c, err := m.command(cmd)
	if err != nil {
		return "", err
	}
	i, ok := m.intIndex[normIntent(intentName)]
	if !ok {
		descs := make([]string, len(m.intents))
		for j, it := range m.intents {
			descs[j] = it.name + " (" + it.description + ")"
		}
		why := "No intents are configured"
		if len(descs) > 0 {
			why = "Valid intents are " + strings.Join(descs, ", ") + "; each is also accepted in the marker form, e.g. __" + strings.ToUpper(m.intents[0].name) + "__"
		}
		r := m.retryRefusal(c, fmt.Sprintf("Unknown intent %q", intentName), why)
		r.Unknown = true
		return "", r
	}
	it := m.intents[i]
	state, res := it.resolve(c.name)
	switch res {
	case resolved:
		return state, nil
	case ambiguous:
		return "", NewRetryRefusal(fmt.Sprintf("Intent %q is ambiguous for %s", it.name, c.name),
			fmt.Sprintf("the command %s has several outputs: %s", c.name, strings.Join(c.direct, ", ")),
			Retry{Lead: "use a direct state instead:", Drop: []Arg{ArgIntent},
				With: []Suggestion{{Arg: ArgState, Kind: Text, Values: slices.Clone(c.direct)}}}).Because(RuleArguments)
	}
	var supporters []string
	for _, other := range m.commands {
		if st, r := it.resolve(other.name); r == resolved {
			supporters = append(supporters, other.name+" → "+st)
		}
	}
	why := fmt.Sprintf("Only these commands support %s: %s", it.name, strings.Join(supporters, ", "))
	if len(supporters) == 0 {
		why = fmt.Sprintf("No command supports %s", it.name)
	}
	return "", m.retryRefusal(c, fmt.Sprintf("Intent %q is not defined for %s", it.name, c.name), why).Because(RuleCommand)
}

// ResolveState validates a direct state for a command: it must be one of the command's outputs
// or its lock state. A __MARKER__ is resolved as an intent, since agents pass both in one field.
func (m *Machine) ResolveState(cmd, state string) (string, error) {
	c, err := m.command(cmd)
	if err != nil {
		return "", err
	}
	if isMarker(state) {
		return m.ResolveIntent(cmd, state)
	}
	if !m.IsState(state) {
		r := m.retryRefusal(c, fmt.Sprintf("Unknown state %q", state), m.validStates(state))
		r.Unknown = true
		return "", r
	}
	if slices.Contains(c.direct, state) {
		return state, nil
	}
	return "", m.retryRefusal(c, fmt.Sprintf("State %q is not a valid output for %s", state, c.name),
		fmt.Sprintf("Valid states for %s are %s", c.name, strings.Join(c.direct, ", "))).Because(RuleCommand)
}

// validStates explains the valid states to someone who gave an unknown one, with a hint when
// only its letter case is wrong.
func (m *Machine) validStates(state string) string {
	hint := ""
	for _, s := range m.states {
		if strings.EqualFold(strings.TrimSpace(state), s) {
			hint = fmt.Sprintf("; did you mean %q?", s)
			break
		}
	}
	return "Valid states are " + strings.Join(m.states, ", ") + " (names are case-sensitive" + hint + ")"
}

// RequireState refuses a name that is not a state of the workflow, suggesting every state for
// arg; nil for a state.
func (m *Machine) RequireState(arg Arg, state string) error {
	if m.IsState(state) {
		return nil
	}
	r := NewRetryRefusal(fmt.Sprintf("Unknown state %q", state), m.validStates(state),
		Retry{With: []Suggestion{{Arg: arg, Kind: Text, Values: slices.Clone(m.states)}}})
	r.Unknown = true
	return r
}

func (m *Machine) command(name string) (*command, error) {
	if i, ok := m.cmdIndex[normCommand(name)]; ok {
		return &m.commands[i], nil
	}
	names := m.Commands()
	if len(names) == 0 {
		return nil, &Refusal{
			Tried:    fmt.Sprintf("Unknown command %q", name),
			Why:      "No commands are configured",
			Recovery: "declare commands under workflow.commands in the config, or move the item without a command",
			Options:  []string{},
			Unknown:  true,
		}
	}
	r := NewRetryRefusal(fmt.Sprintf("Unknown command %q", name),
		"Valid commands are "+strings.Join(names, ", ")+" (each is also accepted with the ralph_ prefix, e.g. ralph_"+names[0]+")",
		Retry{With: []Suggestion{{Arg: ArgCommand, Kind: Word, Values: names}}})
	r.Unknown = true
	return nil, r
}

// Retries is everything command cmd may ask for, as a retry: its direct states, then every
// intent that resolves for it with the state it means (one of the two, not both). ok is false
// when cmd is unknown or may ask for nothing.
func (m *Machine) Retries(cmd string) (Retry, bool) {
	c, err := m.command(cmd)
	if err != nil {
		return Retry{}, false
	}
	rt := m.retries(c)
	return rt, len(rt.With) > 0
}

func (m *Machine) retries(c *command) Retry {
	rt := Retry{Lead: "for " + c.name + ",", OneOf: true}
	if len(c.direct) > 0 {
		rt.With = append(rt.With, Suggestion{Arg: ArgState, Kind: Text, Values: slices.Clone(c.direct)})
	}
	var its, notes []string
	for _, it := range m.intents {
		if st, r := it.resolve(c.name); r == resolved {
			its, notes = append(its, it.name), append(notes, "→ "+st)
		}
	}
	if len(its) > 0 {
		rt.With = append(rt.With, Suggestion{Arg: ArgIntent, Kind: Word, Values: its, Notes: notes})
	}
	return rt
}

// retryRefusal refuses a request of command c, suggesting everything c may ask for (retries).
func (m *Machine) retryRefusal(c *command, tried, why string) *Refusal {
	rt := m.retries(c)
	if len(rt.With) == 0 {
		return &Refusal{Tried: tried, Why: why, Options: []string{},
			Recovery: c.name + " has no direct states and no intents resolve for it; declare its outputs under workflow.commands in the config"}
	}
	return NewRetryRefusal(tried, why, rt)
}

type resolution int

const (
	undefined resolution = iota
	resolved
	ambiguous
)

// resolve applies the precedence: an explicit target, then ambiguity, then the "*" wildcard.
func (it intent) resolve(cmd string) (string, resolution) {
	if st, ok := it.targets[cmd]; ok {
		return st, resolved
	}
	if it.ambiguous[cmd] {
		return "", ambiguous
	}
	if st, ok := it.targets["*"]; ok {
		return st, resolved
	}
	return "", undefined
}
