package sandbox

import (
	"testing"
)

// TestAPICostPerStep counts the app's GitHub requests for each kind of step (from the
// simulator's request log) and holds them to the budgets docs/AUTOMATION.md states.
func TestAPICostPerStep(t *testing.T) {
	t.Parallel()
	e := start(t, "sqlite", automationSeed(), nil)
	// Warm the per-process field cache so each step is measured on its own.
	e.move("alice", 71, "Ready for Plan")
	e.move("agent-1", 71, "Done")
	e.settle()

	steps := []struct {
		name   string
		act    func()
		budget int
	}{
		{"legal leaf move", func() { e.move("alice", 51, "Ready for Plan") }, 1},
		// A revert reads the card again once its write's turn has come (guarded write).
		{"illegal move (revert + comment)", func() { e.move("agent-1", 60, "In Review") }, 4},
		// The item is known now: the move is reverted at once, checked on the read the guarded
		// write makes (docs/ENFORCEMENT.md "Provisional reverts"), and judged with its proof
		// (the item read).
		{"illegal move again (revert at once + coalesced comment update)", func() { e.move("agent-1", 60, "Done") }, 4},
		{"child move, parent not converged (item + parent family)", func() { e.move("agent-1", 21, "Ready for Plan") }, 2},
		// Automation's writes are guarded as reverts are: each turn reads its cards (up to 50)
		// before its one aliased mutation.
		{"child move converging parent and grandparent", func() {
			e.move("agent-1", 22, "Ready for Plan")
			e.settle()
			e.move("agent-1", 23, "Ready for Plan")
		}, 2 + 1 + 2*3},
		{"cascade to 5 children (3 move)", func() { e.move("alice", 1, "In Progress") }, 1 + 1 + 2},
		{"cascade to 120 children", func() { e.move("alice", 100, "In Progress") }, 1 + 2 + 3*2},
	}
	for _, s := range steps {
		before := e.sb.Sim.Requests().Total
		s.act()
		e.settle()
		n := appRequestsBetween(e, before)
		t.Logf("%-60s %d app requests (budget %d)", s.name, n, s.budget)
		if n > s.budget {
			t.Errorf("%s: %d app requests, budget %d", s.name, n, s.budget)
		}
	}
}
