package enforce

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestSmallScopeExhaustive checks every history of a small scope against the oracle, where the
// random histories only sample: a parent and its child, both in Backlog; two moves by others
// (the parent's, legal so that it cascades onto the child or illegal so that it is reverted,
// and the child's by a person or an agent), in either order, in one second or in two; each
// move's webhook delivered at once, dropped (redelivered by a sweep), delivered twice or late;
// each of the app's first two writes to a card landed, not made, made with its answer lost, or
// made after someone's move landed between its read and it; judged by jobs alone, or also
// together when a sweep completes (as the app does). 12,288 histories, a few seconds.
func TestSmallScopeExhaustive(t *testing.T) {
	m, actors := simMachine(t)
	type move struct {
		item      int
		actor, to string
	}
	parentMoves := []move{{0, "alice", "Research Needed"}, {0, "agent-1", "In Review"}}
	childMoves := []move{{1, "alice", "Ready for Plan"}, {1, "agent-2", "Research Needed"}, {1, "agent-1", "Done"}}
	faults := []struct {
		name string
		set  func(*simMove)
	}{
		{"", func(*simMove) {}},
		{"drop", func(mv *simMove) { mv.Drop = true }},
		{"dup", func(mv *simMove) { mv.Dup = true }},
		{"late", func(mv *simMove) { mv.Latency = 2500 * time.Millisecond }},
	}
	outcomes := []string{writeLanded, writeFailed, writeAnswerLost, writeRaced}
	var failed []string
	n := 0
	reached := map[string]bool{} // the outcomes of the first two writes some history made
	for _, pm := range parentMoves {
		for _, cm := range childMoves {
			for _, childFirst := range []bool{false, true} {
				for _, gap := range []time.Duration{300 * time.Millisecond, 1500 * time.Millisecond} {
					for _, f1 := range faults {
						for _, f2 := range faults {
							for k := range 16 {
								o := []string{outcomes[k%4], outcomes[k/4]}
								for _, together := range []bool{false, true} {
									first, second := pm, cm
									if childFirst {
										first, second = cm, pm
									}
									m1 := simMove{Item: first.item, Actor: first.actor, To: first.to, After: time.Second, Latency: 10 * time.Millisecond}
									m2 := simMove{Item: second.item, Actor: second.actor, To: second.to, After: gap, Latency: 10 * time.Millisecond}
									f1.set(&m1)
									f2.set(&m2)
									h := simHistory{Seed: uint64(n + 1), Items: []string{"Backlog", "Backlog"}, Parents: []int{-1, 0},
										Moves: []simMove{m1, m2}, WriteOutcomes: o, Together: together}
									n++
									w := newSimWorld(m, actors, h)
									problems := w.run()
									if w.writesMade >= 2 {
										reached[o[0]+"/"+o[1]] = true
									}
									if len(problems) > 0 {
										data, _ := json.Marshal(h)
										failed = append(failed, fmt.Sprintf("%s\n  %s", data, strings.Join(problems[:min(len(problems), 3)], "\n  ")))
									}
								}
							}
						}
					}
				}
			}
		}
	}
	if len(failed) > 0 {
		t.Errorf("%d of %d histories diverge from the oracle; the first:\n%s", len(failed), n, strings.Join(failed[:min(len(failed), 3)], "\n"))
	}
	// (The scope is only as good as the writes it reaches: every pair of outcomes of the first
	// two writes is met by some history.)
	if len(reached) != len(outcomes)*len(outcomes) {
		t.Errorf("the histories reach %d of the %d outcomes of two writes: %v", len(reached), len(outcomes)*len(outcomes), reached)
	}
	t.Logf("%d histories", n)
}
