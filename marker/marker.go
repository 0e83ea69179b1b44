// Package marker reads and writes the hidden machine-readable markers ralph-gate puts in the
// comments it writes: `<!-- ralph-transition: {"from":…,"to":…,"command":…,"at":…} -->`
// (extra keys allowed) and the marker that identifies a violation comment. Standard library only.
package marker

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Violation opens every violation comment; it is how the app finds its own comment.
const Violation = "<!-- ralph-gate:violation -->"

// ViolationSummary opens a storm's summary comment: it explains refused moves of several
// issues, each marker naming its issue (Transition.Issue).
const ViolationSummary = "<!-- ralph-gate:violation-summary -->"

// Explained lists the refused moves a comment of the app explains, by the issue each belongs
// to: a violation comment explains moves of the issue it is on (onIssue), a summary those of
// the issues its markers name. Other comments explain nothing.
func Explained(body, onIssue string) (map[string][]Transition, error) {
	summary := strings.HasPrefix(body, ViolationSummary)
	if !summary && !strings.Contains(body, Violation) {
		return nil, nil
	}
	ms, err := ParseTransitions(body)
	out := map[string][]Transition{}
	for _, m := range ms {
		issue := onIssue
		if summary && m.Issue != "" {
			issue = m.Issue
		}
		out[issue] = append(out[issue], m)
	}
	return out, err
}

const (
	transitionOpen  = "<!-- ralph-transition: "
	transitionClose = " -->"
)

// Transition is the machine-readable record of one move.
type Transition struct {
	From    string  `json:"from"`
	To      string  `json:"to"`
	Command *string `json:"command"`
	At      string  `json:"at"`
	Actor   string  `json:"actor,omitempty"`
	Verdict string  `json:"verdict,omitempty"`
	Rule    string  `json:"rule,omitempty"`
	Reason  string  `json:"reason,omitempty"`
	Cause   string  `json:"cause,omitempty"`
	// Delivery is the webhook delivery (or reconciliation) that carried the move: it makes the
	// marker unique per move, so a retried job can tell whether it already explained it.
	Delivery string `json:"delivery,omitempty"`
	// Issue is the move's issue ("owner/repo#N"), written where a comment explains moves of
	// other issues than its own (a storm's summary).
	Issue string `json:"issue,omitempty"`
}

// String renders the hidden HTML comment. "-->" inside values is escaped by the JSON encoder
// (> becomes \u003e), so a value can never end the comment early; "@" is written \u0040, so a
// value (an agent's reason) can never mention anyone. Both decode back to the same text.
func (t Transition) String() string {
	data, err := json.Marshal(t)
	if err != nil {
		return "" // a struct of strings always encodes
	}
	// "@" only occurs inside JSON strings here, where \u0040 is the same character.
	return transitionOpen + strings.ReplaceAll(string(data), "@", `\u0040`) + transitionClose
}

// ParseTransitions returns every ralph-transition marker in a comment body, in order.
func ParseTransitions(body string) ([]Transition, error) {
	var out []Transition
	for {
		i := strings.Index(body, transitionOpen)
		if i < 0 {
			return out, nil
		}
		body = body[i+len(transitionOpen):]
		j := strings.Index(body, transitionClose)
		if j < 0 {
			return out, errors.New("unterminated ralph-transition marker")
		}
		var t Transition
		if err := json.Unmarshal([]byte(body[:j]), &t); err != nil {
			return out, fmt.Errorf("bad ralph-transition marker: %w", err)
		}
		out = append(out, t)
		body = body[j+len(transitionClose):]
	}
}
