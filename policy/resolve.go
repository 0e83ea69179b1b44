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
		rec, opts := m.retries(c)
		return "", &Refusal{
			Tried:    fmt.Sprintf("Unknown intent %q", intentName),
			Why:      why,
			Recovery: rec,
			Options:  opts,
		}
	}
	it := m.intents[i]
	state, res := it.resolve(c.name)
	switch res {
	case resolved:
		return state, nil
	case ambiguous:
		return "", &Refusal{
			Tried:    fmt.Sprintf("Intent %q is ambiguous for %s", it.name, c.name),
			Why:      fmt.Sprintf("%s has several outputs: %s", c.name, strings.Join(c.direct, ", ")),
			Recovery: "use a direct state instead: retry with " + joinOr(stateArgs(c.direct)),
			Options:  slices.Clone(c.direct),
		}
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
	rec, opts := m.retries(c)
	return "", &Refusal{
		Tried:    fmt.Sprintf("Intent %q is not defined for %s", it.name, c.name),
		Why:      why,
		Recovery: rec,
		Options:  opts,
	}
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
		hint := ""
		for _, s := range m.states {
			if strings.EqualFold(strings.TrimSpace(state), s) {
				hint = fmt.Sprintf("; did you mean %q?", s)
				break
			}
		}
		why := "Valid states are " + strings.Join(m.states, ", ") + " (names are case-sensitive" + hint + ")"
		rec, opts := m.retries(c)
		return "", &Refusal{Tried: fmt.Sprintf("Unknown state %q", state), Why: why, Recovery: rec, Options: opts}
	}
	if slices.Contains(c.direct, state) {
		return state, nil
	}
	rec, opts := m.retries(c)
	return "", &Refusal{
		Tried:    fmt.Sprintf("State %q is not a valid output for %s", state, c.name),
		Why:      fmt.Sprintf("Valid states for %s are %s", c.name, strings.Join(c.direct, ", ")),
		Recovery: rec,
		Options:  opts,
	}
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
		}
	}
	return nil, &Refusal{
		Tried:    fmt.Sprintf("Unknown command %q", name),
		Why:      "Valid commands are " + strings.Join(names, ", ") + " (each is also accepted with the ralph_ prefix, e.g. ralph_" + names[0] + ")",
		Recovery: "retry with command set to one of: " + strings.Join(names, ", "),
		Options:  names,
	}
}

// retries renders everything a command may ask for: its direct states, then every intent that
// resolves for it with the state it means.
func (m *Machine) retries(c *command) (string, []string) {
	opts := slices.Clone(c.direct)
	var its []string
	for _, it := range m.intents {
		if st, r := it.resolve(c.name); r == resolved {
			its = append(its, it.name+" (→ "+st+")")
			opts = append(opts, it.name)
		}
	}
	rec := c.name + " accepts these direct states: retry with " + joinOr(stateArgs(c.direct))
	if len(c.direct) == 0 {
		rec = c.name + " has no direct states"
	}
	if len(its) > 0 {
		rec += ", or with intent " + joinOr(its)
	}
	return rec, opts
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
