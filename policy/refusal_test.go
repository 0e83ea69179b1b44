package policy

import (
	"errors"
	"slices"
	"testing"
)

func TestRefusal(t *testing.T) {
	var err error = &Refusal{Tried: "Tried x", Why: "It is wrong", Recovery: `retry with state="A"`, Options: []string{"A"}}
	if err.Error() != `Tried x. It is wrong. Recovery: retry with state="A"` {
		t.Error(err)
	}
	var r *Refusal
	if !errors.As(err, &r) {
		t.Error("errors.As")
	}
	for in, want := range map[string]string{"": "(none)", "a": "a", "a,b": "a or b", "a,b,c": "a, b or c"} {
		var items []string
		if in != "" {
			items = splitComma(in)
		}
		if got := joinOr(items); got != want {
			t.Errorf("joinOr(%q) = %q", in, got)
		}
	}
	if joinAnd([]string{"x", "y"}) != "x and y" {
		t.Error("joinAnd")
	}
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}

func TestRetryRender(t *testing.T) {
	cli := func(a Arg) string { return "--" + string(a) }
	tests := []struct {
		name  string
		rt    Retry
		spell func(Arg) string
		want  string
	}{
		{"one argument", Retry{With: []Suggestion{{Arg: ArgCommand, Kind: Word, Values: []string{"research", "plan"}}}}, nil,
			"retry with command research or plan"},
		{"states are quoted", Retry{With: []Suggestion{{Arg: ArgTarget, Kind: Text, Values: []string{"Backlog", "Ready for Plan"}}}}, nil,
			`retry with target "Backlog" or "Ready for Plan"`},
		{"words that are not one word are quoted", Retry{With: []Suggestion{{Arg: ArgCommand, Kind: Word, Values: []string{"a b", "true", "7x", "x-7"}}}}, nil,
			`retry with command "a b", "true", "7x" or x-7`},
		{"literals are bare", Retry{With: []Suggestion{{Arg: "number", Kind: Literal, Values: []string{"5"}}}}, nil, "retry with number 5"},
		{"notes, alternatives, one of, tail", Retry{Lead: "for x,", OneOf: true, Tail: "; or ask a human",
			With: []Suggestion{{Arg: ArgState, Kind: Text, Values: []string{"A"}}, {Arg: ArgIntent, Kind: Word, Values: []string{"lock", "complete"}, Notes: []string{"→ A", "→ B"}}}}, nil,
			`for x, retry with state "A", or with intent lock (→ A) or complete (→ B) (give state or intent, not both); or ask a human`},
		{"spelt for the CLI", Retry{Drop: []Arg{ArgIntent}, With: []Suggestion{{Arg: ArgState, Kind: Text, Values: []string{"Done"}}}}, cli,
			`retry without --intent, with --state "Done"`},
		{"drop alone", Retry{Drop: []Arg{"a", "b"}}, nil, "retry without a and b"},
		{"one of three", Retry{OneOf: true, With: []Suggestion{{Arg: "a", Values: []string{"x"}}, {Arg: "b", Values: []string{"y"}}, {Arg: "c", Values: []string{"z"}}}}, nil,
			"retry with a x, or with b y, or with c z (give only one of a, b and c)"},
		{"optional", Retry{With: []Suggestion{{Arg: ArgEstimate, Values: []string{"S"}, Optional: true}}}, nil, "retry with max_estimate S (or leave max_estimate out)"},
		{"no value to name", Retry{With: []Suggestion{{Arg: "repo", Hint: "the issue's repository name"}}}, nil, "retry with repo set to the issue's repository name"},
		{"an unspelt role keeps its name", Retry{With: []Suggestion{{Arg: ArgActor, Values: []string{"agent"}}}}, func(Arg) string { return "" }, "retry with actor agent"},
		{"instead of a misnamed argument", Retry{Instead: true, Drop: []Arg{"issue"}, With: []Suggestion{{Arg: "number", Kind: Literal, Values: []string{"3"}}}}, nil,
			"retry with number 3 instead of issue"},
		{"instead, spelt", Retry{Instead: true, Drop: []Arg{"to_state"}, With: []Suggestion{{Arg: ArgTarget, Kind: Text, Values: []string{"Done"}}}},
			func(a Arg) string { return map[Arg]string{ArgTarget: "targetState"}[a] }, `retry with targetState "Done" instead of to_state`},
		{"instead with nothing to suggest is a drop", Retry{Instead: true, Drop: []Arg{"issue"}}, nil, "retry without issue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.rt.Render(tt.spell); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestRefusalSpell(t *testing.T) {
	r := NewRetryRefusal("Tried x", "It is wrong", Retry{With: []Suggestion{{Arg: ArgState, Kind: Text, Values: []string{"A", "B"}}}})
	if r.Recovery != `retry with state "A" or "B"` || !slices.Equal(r.Options, []string{"A", "B"}) {
		t.Fatalf("%+v", r)
	}
	spelt := r.Spell(func(a Arg) string { return map[Arg]string{ArgState: "to_state"}[a] })
	if spelt.Error() != `Tried x. It is wrong. Recovery: retry with to_state "A" or "B"` || r.Recovery != `retry with state "A" or "B"` {
		t.Errorf("spelt %q, original %q", spelt.Error(), r.Recovery)
	}
	plain := &Refusal{Tried: "t", Why: "w", Recovery: "ask a human"}
	if plain.Spell(func(Arg) string { return "x" }) != plain {
		t.Error("a refusal without a Retry is returned as it is")
	}
	var none *Refusal
	if none.Spell(nil) != nil {
		t.Error("nil")
	}
}

// TestRefusalKind: every refusal counts under one rule of the bounded set Rules lists.
func TestRefusalKind(t *testing.T) {
	m := defaultMachine(t)
	_, unknownState := m.ResolveState("research", "Nowhere")
	_, notOutput := m.ResolveState("research", "Done")
	_, unknownCommand := m.ResolveState("no_such_command", "Done")
	moved := m.RefusalFor(Change{From: "Backlog", To: "In Progress", Actor: "bot", ActorKind: ActorAgent},
		m.Decide(Change{From: "Backlog", To: "In Progress", Actor: "bot", ActorKind: ActorAgent}))
	_, badRequest := DecodePipelineRequest([]byte(`{"issues": [{"number": 0}]}`))
	for _, tc := range []struct {
		name string
		err  error
		want Rule
	}{
		{"a refused move carries its decision's rule", moved, RuleTransition},
		{"an unknown state is an argument problem", unknownState, RuleArguments},
		{"an unknown command is an argument problem", unknownCommand, RuleArguments},
		{"a state the command cannot reach", notOutput, RuleCommand},
		{"a malformed pipeline request", badRequest, RuleArguments},
		{"a rule given", (&Refusal{}).Because(RuleRate), RuleRate},
		{"no rule", &Refusal{}, RuleOther},
		{"a rule outside the set", &Refusal{Rule: "made_up"}, RuleOther},
		{"unknown wins over no rule", &Refusal{Unknown: true}, RuleArguments},
	} {
		var r *Refusal
		if !errors.As(tc.err, &r) {
			t.Fatalf("%s: %v is not a refusal", tc.name, tc.err)
		}
		if got := r.Kind(); got != tc.want {
			t.Errorf("%s: Kind = %q, want %q (%v)", tc.name, got, tc.want, r)
		}
		if !slices.Contains(Rules(), r.Kind()) {
			t.Errorf("%s: %q is not in Rules()", tc.name, r.Kind())
		}
	}
	seen := map[Rule]bool{}
	for _, r := range Rules() {
		if seen[r] || r == "" {
			t.Errorf("Rules() repeats or has an empty rule: %q", r)
		}
		seen[r] = true
	}
	if seen[RuleLegal] || seen[RuleApp] || seen[RuleBypass] {
		t.Error("Rules() lists a rule that allows")
	}
}

// TestRefusalErrorSentences: Error starts Tried and Why with a capital when each starts with
// an ordinary lower-case word (Why follows a full stop), never a name, and leaves the Recovery
// (after a colon) as it is.
func TestRefusalErrorSentences(t *testing.T) {
	for _, tc := range []struct {
		name       string
		tried, why string
		recovery   string
		want       string
	}{
		{"a lower-case why", "Handing off #3", "it is locked", "wait", "Handing off #3. It is locked. Recovery: wait"},
		{"a lower-case tried", "moving #3", "The table refuses it", "ask a human", "Moving #3. The table refuses it. Recovery: ask a human"},
		{"already capitalised", "Tried x", "It is wrong", "retry with number 3", "Tried x. It is wrong. Recovery: retry with number 3"},
		{"the recovery after the colon is left as it is", "T", "W", "retry with to_state \"Done\"", "T. W. Recovery: retry with to_state \"Done\""},
		{"a word before a colon", "got: an array", "got, say, x", "r", "Got: an array. Got, say, x. Recovery: r"},
		{"a tool name", "handoff_ticket: argument `number` is missing", "`number` is required", "r", "handoff_ticket: argument `number` is missing. `number` is required. Recovery: r"},
		{"a login with a digit", "agent-1 asked to hand the item off", "agent-1 may only use the commands research", "r",
			"agent-1 asked to hand the item off. agent-1 may only use the commands research. Recovery: r"},
		{"a hyphenated name", "x", "ralph-gate enforces projects of several organizations", "r", "X. ralph-gate enforces projects of several organizations. Recovery: r"},
		{"a number or a quote", "#3 moved", "\"acme\" is not a project", "r", "#3 moved. \"acme\" is not a project. Recovery: r"},
		{"a repository", "acme/app#3 was not found", "x", "r", "acme/app#3 was not found. X. Recovery: r"},
		{"only the first rune", "état inconnu", "ünknown ÄND more", "r", "État inconnu. Ünknown ÄND more. Recovery: r"},
		{"not a letter", "(unset) → Done", "→ x", "r", "(unset) → Done. → x. Recovery: r"},
		{"empty parts", "", "", "", ". . Recovery: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Refusal{Tried: tc.tried, Why: tc.why, Recovery: tc.recovery}
			if got := r.Error(); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if r.Tried != tc.tried || r.Why != tc.why {
				t.Error("Error changed the refusal")
			}
		})
	}
}
