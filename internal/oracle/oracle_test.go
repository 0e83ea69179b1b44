package oracle

import (
	"strings"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/policy"
)

func TestInterleavings(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	mv := func(item, delivery, from, to string, sec int) ItemMove {
		return ItemMove{Item: item, Move: Move{From: from, To: to, Delivery: delivery, At: t0.Add(time.Duration(sec) * time.Second)}}
	}
	noFrom := func(im ItemMove) ItemMove { im.Move.NoFrom = true; return im }
	raced := func(im ItemMove) ItemMove { im.Move.Now, im.Move.Raced = true, true; return im }
	after := func(im ItemMove, d string) ItemMove { im.Move.After = d; return im }
	wrote := func(im ItemMove) ItemMove { im.Move.Wrote = true; return im }
	orders := func(ms []ItemMove, limit int) []string {
		var out []string
		for _, o := range Interleavings(ms, limit) {
			out = append(out, key(o))
		}
		return out
	}
	tests := []struct {
		name  string
		moves []ItemMove
		limit int
		want  []string
	}{
		{"moves of different seconds keep their order", []ItemMove{mv("A", "a1", "Backlog", "Done", 1), mv("B", "b1", "Backlog", "Done", 2)}, 10,
			[]string{"a1,b1,"}},
		{"two items in one second: both orders, the true one first", []ItemMove{mv("A", "a1", "Backlog", "Done", 1), mv("B", "b1", "Backlog", "Done", 1)}, 10,
			[]string{"a1,b1,", "b1,a1,"}},
		{"one item's moves of one second: only the orders that chain", []ItemMove{
			mv("A", "a1", "Backlog", "Ready for Plan", 1), mv("A", "a2", "Ready for Plan", "Backlog", 1), mv("A", "a3", "Backlog", "Done", 1)}, 10,
			[]string{"a1,a2,a3,"}},
		{"a loop of one item chains two ways", []ItemMove{
			mv("A", "a1", "Backlog", "Done", 1), mv("A", "a2", "Done", "Backlog", 1), mv("A", "a3", "Backlog", "Ready for Plan", 1),
			mv("A", "a4", "Ready for Plan", "Backlog", 1)}, 10,
			[]string{"a1,a2,a3,a4,", "a3,a4,a1,a2,"}},
		{"seconds changed one at a time come first, then together", []ItemMove{
			mv("A", "a1", "Backlog", "Done", 1), mv("B", "b1", "Backlog", "Done", 1), mv("A", "a2", "Done", "Backlog", 2), mv("B", "b2", "Done", "Backlog", 2)}, 10,
			[]string{"a1,b1,a2,b2,", "b1,a1,a2,b2,", "a1,b1,b2,a2,", "b1,a1,b2,a2,"}},
		{"at most limit", []ItemMove{mv("A", "a1", "Backlog", "Done", 1), mv("B", "b1", "Backlog", "Done", 1), mv("C", "c1", "Backlog", "Done", 1)}, 2,
			[]string{"a1,b1,c1,", "a1,c1,b1,"}},
		{"a move whose report said no previous value goes anywhere in its second", []ItemMove{
			mv("A", "a1", "Backlog", "Ready for Plan", 1), noFrom(mv("A", "a2", "Ready for Plan", "Backlog", 1)), mv("A", "a3", "Backlog", "Done", 1)}, 10,
			[]string{"a1,a2,a3,", "a3,a2,a1,"}},
		// A handoff h1 decided on Backlog; b1 lands before its write, which then lands over
		// it (w1); r1 raced a write of the call on another item: it comes after h1.
		{"a raced façade move leaves the value it was decided on; the moves that raced it come after it", []ItemMove{
			raced(mv("A", "h1", "Backlog", "Research", 1)), after(mv("A", "b1", "Backlog", "Done", 1), "h1"),
			wrote(mv("A", "w1", "Done", "Research", 1)), after(mv("B", "r1", "Backlog", "Done", 1), "h1"), mv("B", "x1", "Done", "Backlog", 1)}, 10,
			[]string{"h1,b1,w1,r1,x1,", "h1,r1,b1,w1,x1,", "h1,r1,x1,b1,w1,"}},
		// Writes of the app's commute with other cards' moves: orders that differ only in where
		// a write falls among them are one.
		{"a write of the app's is taken as soon as it is the one move of its card that can come", []ItemMove{
			wrote(mv("A", "w1", "Backlog", "Done", 1)), wrote(mv("B", "w2", "Backlog", "Done", 1)), mv("C", "c1", "Backlog", "Done", 1)}, 10,
			[]string{"w1,w2,c1,"}},
		{"… another move of its card that can come too: both orders", []ItemMove{
			wrote(mv("A", "w1", "Backlog", "Done", 1)), mv("A", "a1", "Done", "Backlog", 1), mv("A", "a2", "Backlog", "Done", 1)}, 10,
			[]string{"w1,a1,a2,", "a2,a1,w1,"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := orders(tt.moves, tt.limit); strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// Reordered sorts each second by rank and says whether the result is an order Interleavings
// allows.
func TestReordered(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	mv := func(item, delivery, from, to, lifecycle string, sec int) ItemMove {
		return ItemMove{Item: item, Move: Move{From: from, To: to, Delivery: delivery, Lifecycle: lifecycle, At: t0.Add(time.Duration(sec) * time.Second)}}
	}
	after := func(im ItemMove, d string) ItemMove { im.Move.After = d; return im }
	tests := []struct {
		name  string
		moves []ItemMove
		ranks map[string]int
		want  string // "" when not allowed
	}{
		{"items of one second in any order", []ItemMove{mv("A", "a1", "Backlog", "Done", "", 1), mv("B", "b1", "Backlog", "Done", "", 1)},
			map[string]int{"a1": 2, "b1": 1}, "b1,a1,"},
		{"an event anywhere in its second", []ItemMove{mv("A", "a1", "Backlog", "Done", "", 1), mv("A", "e1", "", "Done", LifecycleClose, 1)},
			map[string]int{"a1": 2, "e1": 1}, "e1,a1,"},
		{"never across seconds", []ItemMove{mv("A", "a1", "Backlog", "Done", "", 1), mv("B", "b1", "Backlog", "Done", "", 2)},
			map[string]int{"a1": 2, "b1": 1}, "a1,b1,"},
		{"an item's moves must chain", []ItemMove{mv("A", "a1", "Backlog", "Ready for Plan", "", 1), mv("A", "a2", "Ready for Plan", "Done", "", 1)},
			map[string]int{"a1": 2, "a2": 1}, ""},
		{"equal ranks keep the true order", []ItemMove{mv("A", "a1", "Backlog", "Done", "", 1), mv("B", "b1", "Backlog", "Done", "", 1)},
			map[string]int{}, "a1,b1,"},
		{"never before the move it came after", []ItemMove{mv("A", "h1", "Backlog", "Done", "", 1), after(mv("B", "r1", "Backlog", "Done", "", 1), "h1")},
			map[string]int{"h1": 2, "r1": 1}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Reordered(tt.moves, func(m ItemMove) int { return tt.ranks[m.Move.Delivery] })
			if tt.want == "" {
				if ok {
					t.Fatalf("allowed %s", key(got))
				}
				return
			}
			if !ok || key(got) != tt.want {
				t.Fatalf("got %s (%v), want %s", key(got), ok, tt.want)
			}
		})
	}
}

// Automation runs in the true history at its cause's time: a parent's legal move cascades its
// children along, and a child's move that brings every child to a gate converges the parent.
func TestOracleRunsAutomation(t *testing.T) {
	m, problems := policy.Compile(policy.DefaultSpec())
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	o := New(m, policy.Actors{Agents: []string{"agent-*"}})
	fam := map[string][]string{"P": {"C1", "C2"}}
	o.Family = func(item string) (string, []string) {
		if item == "P" {
			return "", fam["P"]
		}
		return "P", nil
	}
	for _, it := range []string{"P", "C1", "C2"} {
		o.Start(it, "Backlog")
	}
	at := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	o.Step("P", Move{From: "Backlog", To: "Research Needed", Actor: "alice", Delivery: "d1", At: at})
	if o.Legal["C1"] != "Research Needed" || o.Legal["C2"] != "Research Needed" || len(o.Automated) != 2 || !o.LegalByAutomation("C1") {
		t.Fatalf("cascade: %v, automated %v", o.Legal, o.Automated)
	}
	o.Step("C1", Move{From: "Research Needed", To: "Ready for Plan", Actor: "alice", Delivery: "d2", At: at.Add(time.Second)})
	o.Step("C2", Move{From: "Research Needed", To: "Ready for Plan", Actor: "alice", Delivery: "d3", At: at.Add(2 * time.Second)})
	if o.Legal["P"] != "Ready for Plan" || o.LegalByAutomation("C1") {
		t.Fatalf("convergence: %v", o.Legal)
	}
	if last := o.Automated[len(o.Automated)-1]; last.Item != "P" || last.Cause != "C2" {
		t.Fatalf("automated %v", o.Automated)
	}
}

func TestAsSequenced(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	mv := func(delivery, lifecycle string, sec int) ItemMove {
		return ItemMove{Item: "A", Move: Move{Delivery: delivery, Lifecycle: lifecycle, At: t0.Add(time.Duration(sec) * time.Second)}}
	}
	edit := mv("e1", "", 1)
	edit.Move.Field = "Estimate"
	got := key(AsSequenced([]ItemMove{mv("c1", LifecycleClose, 1), mv("a", "", 1), mv("r1", LifecycleReopen, 1), edit, mv("b", "", 1),
		mv("c2", LifecycleClose, 2), mv("d", "", 3)}))
	if want := "e1,a,b,c1,r1,c2,d,"; got != want {
		t.Errorf("AsSequenced = %s, want %s", got, want)
	}
}

// A field's edit is judged with no verdict of its own, and the moves after it in the order
// judged have its value: one second's edit and move are told apart by the orders Check tries.
func TestFieldEditsAreInputs(t *testing.T) {
	spec := policy.DefaultSpec()
	spec.Requirements = []policy.Requirement{{Into: []string{"Ready for Plan"}, Fields: []string{"Estimate"}}}
	m, problems := policy.Compile(spec)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	t0 := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	o := New(m, policy.Actors{Agents: []string{"agent-*"}})
	o.FieldsOf = func(string) map[string]string { return map[string]string{"Estimate": ""} }
	o.Start("A", "Research Needed")
	o.Step("A", Move{From: "Research Needed", To: "Ready for Plan", Actor: "agent-1", Delivery: "m", At: t0})
	o.Step("A", Move{From: "", To: "S", Actor: "bob", Delivery: "e", At: t0, Field: "Estimate"})
	if _, refused := o.Violations["m"]; !refused || o.Legal["A"] != "Research Needed" {
		t.Fatalf("the move made before the Estimate was set: violations %v, legal %q", o.Violations, o.Legal["A"])
	}
	// The edit of the move's second may have come first: GitHub's reports cannot tell.
	if diffs := o.Check("A", "Ready for Plan", "", nil); diffs != nil {
		t.Errorf("the edit first is an order GitHub cannot tell from the true one: %v", diffs)
	}
	// A second later, it cannot have.
	o2 := New(m, policy.Actors{Agents: []string{"agent-*"}})
	o2.FieldsOf = o.FieldsOf
	o2.Start("A", "Research Needed")
	o2.Step("A", Move{From: "Research Needed", To: "Ready for Plan", Actor: "agent-1", Delivery: "m", At: t0})
	o2.Step("A", Move{From: "", To: "S", Actor: "bob", Delivery: "e", At: t0.Add(time.Second), Field: "Estimate"})
	if diffs := o2.Check("A", "Ready for Plan", "", nil); diffs == nil {
		t.Error("a move made a second before the Estimate was set must be refused")
	}
}

// With PolicyAt, each move is judged by the policy of its time: the same agent's move is
// refused before a push that allows it and allowed after it; under evaluate a refused move
// stands and is quiet (never explained), under enforce it is reverted.
func TestPolicyAt(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	base, _ := policy.Compile(policy.DefaultSpec())
	wide := policy.DefaultSpec()
	for i := range wide.States {
		if wide.States[i].Name == "Backlog" {
			wide.States[i].Next = append(wide.States[i].Next, "In Progress")
		}
	}
	wm, problems := policy.Compile(wide)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	actors := policy.Actors{Agents: []string{"agent-*"}}
	o := New(base, actors)
	o.PolicyAt = func(at time.Time) Policy {
		switch {
		case at.Before(t0.Add(10 * time.Second)):
			return Policy{M: base, Actors: actors}
		case at.Before(t0.Add(20 * time.Second)):
			return Policy{M: wm, Actors: actors}
		}
		return Policy{M: base, Actors: actors, Stands: true, Silent: true}
	}
	o.Start("A", "Backlog")
	mv := func(d, from, to string, sec int) Move {
		return Move{From: from, To: to, Actor: "agent-1", Delivery: d, At: t0.Add(time.Duration(sec) * time.Second)}
	}
	out := o.Judge("A", []Move{mv("d1", "Backlog", "In Progress", 5), mv("d2", "Backlog", "In Progress", 15), mv("d3", "In Progress", "Done", 25)})
	if _, refused := out.Violations["d1"]; !refused || out.Allowed["d2"] == "" {
		t.Errorf("before the push refused, after it allowed: %+v", out)
	}
	if _, refused := out.Violations["d3"]; !refused || !out.Quiet["d3"] || out.Legal != "Done" {
		t.Errorf("under evaluate a refused move stands, quiet: %+v", out)
	}
}
