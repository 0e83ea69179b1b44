package policy

import (
	"fmt"
	"strings"
)

// Kind describes what a state is for; it says nothing about who may act on it.
type Kind int

const (
	// Queue waits to be picked up.
	Queue Kind = iota
	// Lock means someone is working on the item; entering records the lock holder.
	Lock
	// HumanGate waits for a person's attention (agents may still make the listed moves).
	HumanGate
	// Terminal is finished; only the listed (usually humans-only) reopen moves leave it.
	Terminal
)

var kindNames = [...]string{Queue: "queue", Lock: "lock", HumanGate: "human_gate", Terminal: "terminal"}

func (k Kind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// MarshalText makes kinds appear by name in JSON.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// ParseKind parses the config spelling of a kind (queue, lock, human_gate, terminal).
func ParseKind(s string) (Kind, error) {
	for i, n := range kindNames {
		if n == s {
			return Kind(i), nil
		}
	}
	return 0, fmt.Errorf("unknown kind %q (valid: %s)", s, strings.Join(kindNames[:], ", "))
}

// ActorKind classifies who made a change. The zero value is "unknown" and is treated as an
// agent everywhere (the most restricted kind), so a forgotten field never grants rights.
type ActorKind int

const (
	// ActorApp is ralph-gate's own bot: never checked.
	ActorApp ActorKind = iota + 1
	// ActorBypass is a configured login that is never reverted (but audited).
	ActorBypass
	// ActorAgent is an autonomous coding agent.
	ActorAgent
	// ActorHuman is everyone else.
	ActorHuman
)

var actorNames = [...]string{ActorApp: "app", ActorBypass: "bypass", ActorAgent: "agent", ActorHuman: "human"}

func (a ActorKind) String() string {
	if a >= ActorApp && int(a) < len(actorNames) {
		return actorNames[a]
	}
	return "unknown"
}

// MarshalText makes actor kinds appear by name in JSON.
func (a ActorKind) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText accepts the names produced by MarshalText.
func (a *ActorKind) UnmarshalText(b []byte) error {
	k, err := ParseActorKind(string(b))
	if err != nil {
		return err
	}
	*a = k
	return nil
}

// ParseActorKind parses app, bypass, agent or human (case-insensitive).
func ParseActorKind(s string) (ActorKind, error) {
	n := strings.ToLower(strings.TrimSpace(s))
	for i := ActorApp; int(i) < len(actorNames); i++ {
		if actorNames[i] == n {
			return i, nil
		}
	}
	r := NewRetryRefusal(fmt.Sprintf("Unknown actor kind %q", s), "Valid actor kinds are app, bypass, agent, human",
		Retry{With: []Suggestion{{Arg: ArgActor, Kind: Word, Values: []string{"app", "bypass", "agent", "human"}}}})
	r.Unknown = true
	return 0, r
}

// restricted reports whether humans-only moves are refused to this actor kind.
func (a ActorKind) restricted() bool { return a != ActorHuman && a != ActorApp && a != ActorBypass }

// Verdict is the outcome of a decision.
type Verdict int

const (
	// Allow keeps the change.
	Allow Verdict = iota
	// Revert sets the value back to the last legal state.
	Revert
)

func (v Verdict) String() string {
	switch v {
	case Allow:
		return "allow"
	case Revert:
		return "revert"
	}
	return fmt.Sprintf("verdict(%d)", int(v))
}

// MarshalText makes verdicts appear by name in JSON.
func (v Verdict) MarshalText() ([]byte, error) { return []byte(v.String()), nil }
