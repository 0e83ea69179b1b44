package web

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/health"
)

// A project in warn or evaluate mode shows its mode and what enforce would have reverted: the
// count, by rule and by actor, and the moves; a project in enforce mode shows no such section.
func TestBoardShowsTheMode(t *testing.T) {
	at := time.Date(2026, 11, 27, 9, 30, 0, 0, time.UTC)
	for _, tc := range []struct {
		mode  string
		stood *health.WouldRevert
		want  []string
		not   []string
	}{
		{"enforce", nil, nil, []string{"Mode:", "would have reverted"}},
		{"warn", &health.WouldRevert{Since: at.Add(-7 * 24 * time.Hour), Count: 3, ByRule: map[string]int{"transition": 2, "humans_only": 1},
			ByActor: map[string]int{"agent-1": 3}, Moves: []health.StoodMove{
				{At: at, Item: health.ItemRef{ItemID: "PVTI_4", Repo: "acme/web", Number: 4}, Actor: "agent-1\u202e", From: "Backlog", To: "In Progress", Rule: "transition"},
			}},
			[]string{"Mode: warn", "explained on their issue and not reverted", "Enforce would have reverted 3 moves", "By rule: transition 2, humans_only 1",
				"By actor: agent-1 3", "Backlog → In Progress", "2026-11-27 09:30:00 UTC"}, []string{"\u202e"}},
		{"evaluate", &health.WouldRevert{Since: at, ByRule: map[string]int{}, ByActor: map[string]int{}},
			[]string{"Mode: evaluate", "Nothing is reverted, commented or automated", "Enforce would have reverted nothing since"}, nil},
		{"evaluate", nil, []string{"Mode: evaluate", "once a reconciler pass has read the project"}, nil},
	} {
		rep := boardReport()
		rep.Projects[0].Mode, rep.Projects[0].WouldRevert = tc.mode, tc.stood
		e := newEnv(t, rep, Options{})
		page := e.get(t, fmt.Sprintf("/ui/projects/%s/%d", rep.Projects[0].Owner, rep.Projects[0].Number)).body
		for _, w := range tc.want {
			if !strings.Contains(page, w) {
				t.Errorf("%s: the page lacks %q", tc.mode, w)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(page, n) {
				t.Errorf("%s: the page shows %q", tc.mode, n)
			}
		}
	}
}

// With the policy read from the organization's repository, the board page says which commit is
// in force and that a newer push was refused; the index lists every organization's policy,
// one with none valid as enforcing nothing.
func TestPagesShowThePolicyInForce(t *testing.T) {
	at := time.Date(2026, 11, 27, 9, 30, 0, 0, time.UTC)
	rep := boardReport()
	owner := rep.Projects[0].Owner
	rep.Orgs = []health.Org{
		{Owner: owner, Commit: "0123456789abcdef0123456789abcdef01234567", Since: at,
			Refused: "fedcba9876543210fedcba9876543210fedcba98", RefusedAt: at.Add(time.Minute), RefusedWhy: "projects[0].mode (line 3): unknown mode"},
		{Owner: "globex"},
	}
	rep.Projects = append(rep.Projects, rep.Projects[0])
	rep.Projects[1].Number++
	e := newEnv(t, rep, Options{})
	board := e.get(t, fmt.Sprintf("/ui/projects/%s/%d", owner, rep.Projects[0].Number)).body
	for _, w := range []string{"Policy in force", "<code>0123456</code>", "2026-11-27 09:30:00 UTC", "A newer push, <code>fedcba9</code>, was refused"} {
		if !strings.Contains(board, w) {
			t.Errorf("the board page lacks %q", w)
		}
	}
	index := e.get(t, "/ui/").body
	for _, w := range []string{"Policies of the organizations", owner + ": commit <code>0123456</code>", "push <code>fedcba9</code> refused",
		"globex: <strong class=\"warn\">no valid policy: none of its projects is enforced"} {
		if !strings.Contains(index, w) {
			t.Errorf("the index lacks %q:\n%s", w, index)
		}
	}
}
