package enforce

import (
	"strings"
	"testing"
	"time"
)

// modeHarness is a harness whose project is in mode.
func modeHarness(t *testing.T, mode *Mode, items ...Item) *harness {
	t.Helper()
	return newHarnessWith(t, nil, func(_ *harness, o *Options) {
		o.Mode = func(owner string, number int) Mode {
			if owner != "acme" || number != 1 {
				t.Errorf("mode asked of %s/%d", owner, number)
			}
			return *mode
		}
	}, items...)
}

// Under warn and evaluate a refused move stands, audited would_revert with its rule; warn
// explains it on the issue saying it was not reverted, evaluate writes nothing at all; a legal
// move stands as ever; and the next move is judged from the value the board shows.
func TestModesLeaveRefusedMovesStanding(t *testing.T) {
	for _, tc := range []struct {
		mode     Mode
		verdict  Verdict
		comments int
		state    string
	}{
		{ModeEnforce, VerdictReverted, 1, "Backlog"},
		{ModeWarn, VerdictWouldRevert, 1, "In Progress"},
		{ModeEvaluate, VerdictWouldRevert, 0, "In Progress"},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			mode := tc.mode
			h := modeHarness(t, &mode, issue("A", "Backlog"))
			h.adoptAll("A")
			h.now = h.now.Add(time.Second)
			res := h.process(h.board.move("A", "agent-1", "In Progress", h.now))
			if res.Verdict != tc.verdict || h.state("A") != tc.state {
				t.Fatalf("verdict %v, state %q; want %v, %q", res.Verdict, h.state("A"), tc.verdict, tc.state)
			}
			es := h.audit("A")
			last := es[len(es)-1]
			if last.Verdict != tc.verdict || last.Rule != "transition" || last.Actor != "agent-1" {
				t.Errorf("audit %+v, want %s by agent-1 under the transition rule", last, tc.verdict)
			}
			h.drain()
			bodies := h.commentBodies()
			if len(bodies) != tc.comments {
				t.Fatalf("%d comments, want %d: %q", len(bodies), tc.comments, bodies)
			}
			if tc.mode == ModeWarn && (!strings.Contains(bodies[0], "would have reverted") || !strings.Contains(bodies[0], "not reverted, because the project is in warn mode") ||
				!strings.Contains(bodies[0], "Recovery:") || !strings.Contains(bodies[0], "would_revert")) {
				t.Errorf("the warn comment does not say the move stood:\n%s", bodies[0])
			}
			// The next move is judged from what the board shows.
			h.now = h.now.Add(time.Second)
			next := h.process(h.board.move("A", "agent-1", "In Review", h.now))
			want := VerdictAllowed // In Progress → In Review
			if tc.mode == ModeEnforce {
				want = VerdictReverted // Backlog → In Review
			}
			if next.Verdict != want {
				t.Errorf("the next move: %v, want %v", next.Verdict, want)
			}
		})
	}
}

// Under warn and evaluate no automation runs: a parent's legal move carries no child along.
func TestModesRunNoAutomation(t *testing.T) {
	for _, mode := range []Mode{ModeWarn, ModeEvaluate} {
		t.Run(string(mode), func(t *testing.T) {
			parent, child := issueN("P", "Plan in Review", 10), issueN("C", "Backlog", 11)
			h := modeHarness(t, &mode, parent, child)
			setFamily(h.board, parent, child)
			h.adoptAll("P", "C")
			h.now = h.now.Add(time.Second)
			if res := h.process(h.board.move("P", "alice", "In Progress", h.now)); res.Verdict != VerdictAllowed {
				t.Fatalf("%+v", res)
			}
			h.drain()
			if h.state("C") != "Backlog" || h.record("P").AutomateState != "" {
				t.Errorf("child %q, parent owes %q: automation ran under %s", h.state("C"), h.record("P").AutomateState, mode)
			}
		})
	}
}

// A move judged under evaluate is not reverted once the project is switched to enforce: its
// value is the item's state; only the moves after the switch are enforced.
func TestSwitchingToEnforceRevertsNothingJudgedBefore(t *testing.T) {
	mode := ModeEvaluate
	h := modeHarness(t, &mode, issue("A", "Backlog"))
	h.adoptAll("A")
	h.now = h.now.Add(time.Second)
	if res := h.process(h.board.move("A", "agent-1", "In Progress", h.now)); res.Verdict != VerdictWouldRevert {
		t.Fatalf("%+v", res)
	}
	mode = ModeEnforce
	if rep := h.mustReconcile(ReconcileOptions{}); rep.Reverted != 0 || h.state("A") != "In Progress" {
		t.Fatalf("after the switch the reconciler reverted %d, the item is in %q", rep.Reverted, h.state("A"))
	}
	h.now = h.now.Add(time.Second)
	if res := h.process(h.board.move("A", "agent-1", "Backlog", h.now)); res.Verdict != VerdictReverted || h.state("A") != "In Progress" {
		t.Fatalf("a refused move after the switch: %v, state %q", res.Verdict, h.state("A"))
	}
}
