package policy

import (
	"fmt"
	"strings"
)

// Refusal is every user-fixable error: what was tried, why it fails, and exactly what to retry
// with, so an agent can self-correct from the message alone (seeds/000 "Recovery Guidance").
type Refusal struct {
	Tried    string   `json:"tried"`
	Why      string   `json:"why"`
	Recovery string   `json:"recovery"`
	Options  []string `json:"options"` // the valid retry values, each named in Recovery
}

func (r *Refusal) Error() string {
	return r.Tried + ". " + r.Why + ". Recovery: " + r.Recovery
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

// stateArgs renders states as retry arguments: state="A", state="B".
func stateArgs(states []string) []string {
	out := make([]string, len(states))
	for i, s := range states {
		out[i] = fmt.Sprintf("state=%q", s)
	}
	return out
}
