package policy

import (
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Refusal is every user-fixable error: what was tried, why it fails, and exactly what to retry
// with, so an agent can self-correct from the message alone (seeds/000 "Recovery Guidance").
type Refusal struct {
	Tried    string   `json:"tried"`
	Why      string   `json:"why"`
	Recovery string   `json:"recovery"`
	Options  []string `json:"options"` // the valid retry values, each named in Recovery
	// Retry is Recovery in structured form when it asks for the same call with other
	// arguments (which argument, which values); nil when the recovery is something else
	// (wait, ask a human). Recovery spells the arguments by their roles; a surface whose
	// arguments are named differently shows Spell's copy instead.
	Retry *Retry `json:"retry,omitempty"`
	// Unknown marks a refusal about a name the workflow does not know (a command, intent,
	// state, target, actor kind or estimate): the caller's input is wrong, rather than refused
	// by a rule. The CLI answers these as usage errors.
	Unknown bool `json:"unknown,omitempty"`
	// Rule names what refused: a refused move's decision rule, or one of the refusal rules
	// below. Empty where the refusal has none; Kind says which rule it counts under.
	Rule Rule `json:"rule,omitempty"`
	// TakeOver marks a refused take-over of a lock (CheckTakeOver): a claimer that meets one
	// for an item it ranked as expired lost it to another taker.
	TakeOver bool `json:"-"`
}

// The rules of refusals that are not a move's verdict (a refused move carries its decision's
// rule). With the decision rules they are the bounded set a refusal is counted under.
const (
	// RuleArguments: the input is malformed or names something the workflow does not know.
	RuleArguments Rule = "arguments"
	// RuleNotFound: the issue, item or project is not there, or not one ralph-gate enforces.
	RuleNotFound Rule = "not_found"
	// RuleCommand: the caller may not use the command, or the command has no move to offer.
	RuleCommand Rule = "command"
	// RuleUnsettled: a change of the item or its group is still being judged; retry shortly.
	RuleUnsettled Rule = "unsettled"
	// RuleGroup: the item's group cannot be judged as it stands (a blocker cycle, a member in
	// no pipeline state).
	RuleGroup Rule = "group"
	// RuleRate: the caller made more calls than it may in a minute.
	RuleRate Rule = "rate"
	// RuleBudget: the GitHub budget left is kept for enforcing the workflow.
	RuleBudget Rule = "budget"
	// RuleOther: a refusal that names no rule.
	RuleOther Rule = "other"
)

// Rules lists every rule a refusal may count under, decision rules first.
func Rules() []Rule {
	return []Rule{RuleUnknownState, RuleNotInitial, RuleTransition, RuleHumansOnly, RuleLockOwnership, RuleBlockers,
		RuleConvergence, RuleWIP, RuleRole, RuleSerialized, RuleRequirement, RuleArguments, RuleNotFound, RuleCommand, RuleUnsettled,
		RuleGroup, RuleRate, RuleBudget, RuleOther}
}

// Kind is the rule the refusal counts under: its Rule when it is one of Rules, arguments for
// an unknown name, else other.
func (r *Refusal) Kind() Rule {
	switch {
	case r.Rule != "" && slices.Contains(Rules(), r.Rule):
		return r.Rule
	case r.Unknown:
		return RuleArguments
	}
	return RuleOther
}

// Because returns the refusal with its rule set.
func (r *Refusal) Because(rule Rule) *Refusal {
	r.Rule = rule
	return r
}

// Error joins the three parts: "<Tried>. <Why>. Recovery: <Recovery>". Tried and Why each
// begin a sentence, so each starts with a capital when it starts with an ordinary lower-case
// word ("got an array" → "Got an array"); one that starts with a name — a tool, a login, a
// command, anything holding a digit, a hyphen, an underscore or a slash, or quoted — is left
// as it is ("handoff_ticket: …", "agent-1 may …"). The Recovery follows a colon and is left
// as it is.
func (r *Refusal) Error() string {
	return sentence(r.Tried) + ". " + sentence(r.Why) + ". Recovery: " + r.Recovery
}

// sentence capitalises s's first rune when s starts with an ordinary word: lower-case letters
// only, up to the first space or the punctuation that may end a word (, ; : .).
func sentence(s string) string {
	word := s
	if i := strings.IndexAny(s, " \t\n"); i >= 0 {
		word = s[:i]
	}
	word = strings.TrimRight(word, ",;:.")
	if word == "" {
		return s
	}
	for _, r := range word {
		if !unicode.IsLetter(r) {
			return s
		}
	}
	first, size := utf8.DecodeRuneInString(s)
	if !unicode.IsLower(first) {
		return s
	}
	return string(unicode.ToUpper(first)) + s[size:]
}

// Spell returns the refusal with its Recovery rendered in a surface's own argument names
// (spell maps a role to the name; nil keeps the role names). A refusal without a Retry is
// returned as it is.
func (r *Refusal) Spell(spell func(Arg) string) *Refusal {
	if r == nil || r.Retry == nil {
		return r
	}
	out := *r
	out.Recovery = r.Retry.Render(spell)
	return &out
}

// NewRetryRefusal builds a refusal whose Recovery is retry, rendered with the role names;
// its Options are every value retry suggests.
func NewRetryRefusal(tried, why string, retry Retry) *Refusal {
	return &Refusal{Tried: tried, Why: why, Recovery: retry.Render(nil), Options: retry.values(), Retry: &retry}
}

// Arg is an argument a Recovery asks to retry with, named by its role. Each surface spells it
// its own way — the MCP tool handoff_ticket spells ArgState to_state, `ralph-gate policy
// resolve` spells it --state — so a Recovery is executable as written wherever it is shown.
// A role spells itself by default.
type Arg string

// The workflow's roles. Surfaces may add their own (the façade's owner, project, …).
const (
	ArgCommand  Arg = "command"      // an agent command
	ArgIntent   Arg = "intent"       // a semantic intent, resolved for a command
	ArgState    Arg = "state"        // a state a command moves an item to directly
	ArgTarget   Arg = "target"       // a pipeline state a group or a parent's children should reach
	ArgFrom     Arg = "from"         // the state an item is in
	ArgTo       Arg = "to"           // the state an item is moved to
	ArgActor    Arg = "actor"        // an actor kind
	ArgEstimate Arg = "max_estimate" // the largest estimate to pick
	ArgRole     Arg = "role"         // a worker role (actors.roles)
)

// ValueKind says how a suggested value is written.
type ValueKind int

const (
	// Word values (commands, intents, estimates) are written bare when they are one word.
	Word ValueKind = iota
	// Text values (states, names) are always quoted: they may hold spaces.
	Text
	// Literal values (numbers, booleans) are written as they are.
	Literal
)

// Suggestion is one argument to retry with and the values that would do.
type Suggestion struct {
	Arg    Arg       `json:"arg"`
	Kind   ValueKind `json:"kind"`
	Values []string  `json:"values"`
	// Notes explain values one by one ("→ Ready for Plan" for an intent); empty, or as long as Values.
	Notes []string `json:"notes,omitempty"`
	// Hint describes the value when none can be named ("the repository name").
	Hint string `json:"hint,omitempty"`
	// Optional: leaving the argument out is a valid retry too.
	Optional bool `json:"optional,omitempty"`
}

// Retry is a Recovery that asks for the same call with other arguments:
// "<Lead> retry without <Drop>, with <arg> <value> … or <value>, or with <arg> …<Tail>", or,
// when the suggestions replace the dropped arguments (Instead),
// "<Lead> retry with <arg> <value> instead of <Drop><Tail>".
type Retry struct {
	// Lead is prose before "retry", e.g. "from Backlog, research may".
	Lead string `json:"lead,omitempty"`
	// Drop are arguments to leave out of the call.
	Drop []Arg `json:"drop,omitempty"`
	// With are the alternatives: set one of these arguments to one of its values.
	With []Suggestion `json:"with,omitempty"`
	// OneOf: the suggested arguments exclude each other; the call gives only one of them.
	OneOf bool `json:"one_of,omitempty"`
	// Tail is prose after the suggestions (no argument names), e.g. ", or ask a human".
	Tail string `json:"tail,omitempty"`
	// Instead: the suggestions replace the dropped arguments (a misnamed argument and the
	// one meant): "retry with <With> instead of <Drop>".
	Instead bool `json:"instead,omitempty"`
}

// Render writes the retry with spell's argument names (nil: the role names).
func (rt Retry) Render(spell func(Arg) string) string {
	name := func(a Arg) string {
		if spell != nil {
			if n := spell(a); n != "" {
				return n
			}
		}
		return string(a)
	}
	var b strings.Builder
	if rt.Lead != "" {
		b.WriteString(rt.Lead + " ")
	}
	b.WriteString("retry")
	instead := rt.Instead && len(rt.Drop) > 0 && len(rt.With) > 0
	if len(rt.Drop) > 0 && !instead {
		names := make([]string, len(rt.Drop))
		for i, a := range rt.Drop {
			names[i] = name(a)
		}
		b.WriteString(" without " + joinAnd(names))
		if len(rt.With) > 0 {
			b.WriteString(",")
		}
	}
	var args []string
	for i, s := range rt.With {
		if i > 0 {
			b.WriteString(", or")
		}
		b.WriteString(" with " + s.render(name(s.Arg)))
		if !slices.Contains(args, name(s.Arg)) {
			args = append(args, name(s.Arg))
		}
	}
	if instead {
		names := make([]string, len(rt.Drop))
		for i, a := range rt.Drop {
			names[i] = name(a)
		}
		b.WriteString(" instead of " + joinAnd(names))
	}
	switch {
	case !rt.OneOf || len(args) < 2:
	case len(args) == 2:
		b.WriteString(" (give " + joinOr(args) + ", not both)")
	default:
		b.WriteString(" (give only one of " + joinAnd(args) + ")")
	}
	b.WriteString(rt.Tail)
	return b.String()
}

// render writes "name v1 (note), v2 or v3".
func (s Suggestion) render(name string) string {
	if len(s.Values) == 0 {
		hint := s.Hint
		if hint == "" {
			hint = "another value"
		}
		return name + " set to " + hint
	}
	vals := make([]string, len(s.Values))
	for i, v := range s.Values {
		vals[i] = s.Kind.write(v)
		if i < len(s.Notes) && s.Notes[i] != "" {
			vals[i] += " (" + s.Notes[i] + ")"
		}
	}
	out := name + " " + joinOr(vals)
	if s.Optional {
		out += " (or leave " + name + " out)"
	}
	return out
}

func (k ValueKind) write(v string) string {
	if k == Literal || k == Word && isBareWord(v) {
		return v
	}
	return strconv.Quote(v)
}

// isBareWord: v reads as one word that cannot be taken for a number, a boolean or null.
func isBareWord(v string) bool {
	if v == "" || v == "true" || v == "false" || v == "null" {
		return false
	}
	for i, r := range v {
		switch {
		case r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
		case i > 0 && (r >= '0' && r <= '9' || r == '-' || r == '.'):
		default:
			return false
		}
	}
	return true
}

func (rt Retry) values() []string {
	out := []string{}
	for _, s := range rt.With {
		out = append(out, s.Values...)
	}
	return out
}

// joinOr renders "a, b or c".
func joinOr(items []string) string { return joinWord(items, "or") }

// joinAnd renders "a, b and c".
func joinAnd(items []string) string { return joinWord(items, "and") }

func joinWord(items []string, word string) string {
	switch len(items) {
	case 0:
		return "(none)"
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " " + word + " " + items[len(items)-1]
}
