package main

import (
	"strings"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/health"
)

// The report says how a project is enforced and, under warn and evaluate, what enforce would
// have reverted; a project in enforce mode gets no such lines.
func TestReportPrintsTheMode(t *testing.T) {
	at := time.Date(2026, 11, 27, 9, 30, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		p    health.Project
		want []string
		not  []string
	}{
		{"enforce", health.Project{Mode: "enforce"}, nil, []string{"Mode:", "would have reverted"}},
		{"evaluate before a reconciliation", health.Project{Mode: "evaluate"},
			[]string{"Mode: evaluate (nothing is reverted, commented or automated)", "unknown until the first reconciliation"}, nil},
		{"warn with nothing", health.Project{Mode: "warn", WouldRevert: &health.WouldRevert{Since: at}},
			[]string{"Mode: warn (refused moves are explained, not reverted; nothing is automated)", "would have reverted nothing since 2026-11-27T09:30:00Z"}, nil},
		{"warn with moves", health.Project{Mode: "warn", WouldRevert: &health.WouldRevert{Since: at, Count: 12,
			ByRule: map[string]int{"transition": 9, "humans_only": 3}, ByActor: map[string]int{"agent-1": 12},
			Moves: []health.StoodMove{{At: at, Item: health.ItemRef{Repo: "acme/app", Number: 3}, Actor: "agent-1", From: "", To: "In Progress", Rule: "transition"}}}},
			[]string{"would have reverted 12 moves since 2026-11-27T09:30:00Z — by rule: transition 9, humans_only 3; by actor: agent-1 12",
				"acme/app#3", "(no state) → In Progress", "every one: ralph-gate audit --verdict would_revert"}, nil},
	} {
		var b strings.Builder
		printMode(&b, tc.p)
		for _, w := range tc.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s: lacks %q:\n%s", tc.name, w, b.String())
			}
		}
		for _, n := range tc.not {
			if strings.Contains(b.String(), n) {
				t.Errorf("%s: has %q:\n%s", tc.name, n, b.String())
			}
		}
	}
}
