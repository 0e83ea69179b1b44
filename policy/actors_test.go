package policy

import (
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	a := Actors{App: "ralph-gate[bot]", Agents: []string{"*[bot]", "agent-*", "bad\\"}, Bypass: []string{"Owner"}}
	tests := map[string]ActorKind{
		"ralph-gate[bot]": ActorApp,
		"Ralph-Gate[bot]": ActorApp, // logins are case-insensitive on GitHub
		"owner":           ActorBypass,
		"OWNER":           ActorBypass,
		"dependabot[bot]": ActorAgent,
		"agent-7":         ActorAgent,
		"Agent-7":         ActorAgent,
		"alice":           ActorHuman,
		"agent":           ActorHuman, // "*[bot]" is literal, not the class [bot]
		"robot":           ActorHuman,
		"[bot]":           ActorAgent,
		"":                ActorAgent, // no sender: the least privilege, never a person's
	}
	for login, want := range tests {
		t.Run(login, func(t *testing.T) {
			if got := a.Classify(login); got != want {
				t.Errorf("Classify(%q) = %v, want %v", login, got, want)
			}
		})
	}
	// An unknown sender gets the least privilege (an agent's), and an empty app login does
	// not match it.
	if (Actors{}).Classify("") != ActorAgent || (Actors{Bypass: []string{""}}).Classify("") != ActorAgent {
		t.Error("an empty login must be classified as an agent")
	}
	// The app's own login wins over a matching agent pattern; bypass wins over agents.
	b := Actors{App: "x[bot]", Agents: []string{"*"}, Bypass: []string{"boss"}}
	if b.Classify("x[bot]") != ActorApp || b.Classify("boss") != ActorBypass || b.Classify("y") != ActorAgent {
		t.Error("precedence app > bypass > agent")
	}
}

func TestActorsValidate(t *testing.T) {
	ps := Actors{Agents: []string{"ok-*", "", "bad\\", "[literal"}, Bypass: []string{"x", " "}}.Validate()
	want := []string{
		"actors.agents[1]: must not be empty",
		"actors.agents[2]: invalid pattern",
		"actors.bypass[1]: must not be empty",
	}
	if len(ps) != len(want) {
		t.Fatalf("problems = %v", ps)
	}
	for i, w := range want {
		if !strings.HasPrefix(ps[i].String(), w) {
			t.Errorf("problem %d = %q, want prefix %q", i, ps[i], w)
		}
	}
	if ps := (Actors{Agents: []string{"*[bot]", "agent-*"}}).Validate(); len(ps) != 0 {
		t.Errorf("default actors invalid: %v", ps)
	}
}
