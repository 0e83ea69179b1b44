package policy

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestPlanCascade(t *testing.T) {
	m := defaultMachine(t)
	children := []Member{
		{Number: 1, State: sBacklog},
		{Number: 2, State: sRN},
		{Number: 3, State: sRFP},
		{Number: 4, State: sPIR},
		{Number: 5, State: sHN},
		{Number: 6, State: sCancel},
		{Number: 7, State: sDone},
		{Number: 8, State: ""},
		{Number: 9, State: "Legacy"},
		{Number: 10, State: sIP},
	}
	tests := []struct {
		parentTo string
		moves    []Move
		skipped  map[int]string
	}{
		{sRFP, []Move{{1, sBacklog, sRFP}, {2, sRN, sRFP}, {8, "", sRFP}}, map[int]string{
			3:  "already at Ready for Plan, which is not earlier than Ready for Plan",
			4:  "already at Plan in Review, which is not earlier than Ready for Plan",
			5:  "Human Needed is off the pipeline; a human must move it",
			6:  "Canceled is terminal; only a human reopens it",
			7:  "Done is terminal; only a human reopens it",
			9:  `"Legacy" is not a state of the workflow`,
			10: "already at In Progress, which is not earlier than Ready for Plan",
		}},
		{sIP, []Move{{1, sBacklog, sIP}, {2, sRN, sIP}, {3, sRFP, sIP}, {4, sPIR, sIP}, {8, "", sIP}}, map[int]string{
			5:  "Human Needed is off the pipeline; a human must move it",
			6:  "Canceled is terminal; only a human reopens it",
			7:  "Done is terminal; only a human reopens it",
			9:  `"Legacy" is not a state of the workflow`,
			10: "already at In Progress, which is not earlier than In Progress",
		}},
		{sDone, []Move{{1, sBacklog, sDone}, {2, sRN, sDone}, {3, sRFP, sDone}, {4, sPIR, sDone}, {8, "", sDone}, {10, sIP, sDone}}, map[int]string{
			5: "Human Needed is off the pipeline; a human must move it",
			6: "Canceled is terminal; only a human reopens it",
			7: "Done is terminal; only a human reopens it",
			9: `"Legacy" is not a state of the workflow`,
		}},
		{sBacklog, []Move{{8, "", sBacklog}}, nil},
		{sHN, []Move{}, nil},
		{sCancel, []Move{}, nil},
		{"Nope", []Move{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.parentTo, func(t *testing.T) {
			moves, skipped := m.PlanCascade(tt.parentTo, children)
			if !slices.Equal(moves, tt.moves) {
				t.Errorf("moves = %v, want %v", moves, tt.moves)
			}
			if len(moves)+len(skipped) != len(children) {
				t.Errorf("%d moves + %d skips != %d children", len(moves), len(skipped), len(children))
			}
			for _, s := range skipped {
				if tt.skipped != nil {
					if want, ok := tt.skipped[s.Number]; ok && s.Reason != want {
						t.Errorf("skip #%d reason %q, want %q", s.Number, s.Reason, want)
					}
				}
				if s.Reason == "" || s.State != children[s.Number-1].State {
					t.Errorf("skip %+v", s)
				}
			}
		})
	}
	moves, skipped := m.PlanCascade(sIP, nil)
	if moves == nil || skipped == nil {
		t.Error("nil slices")
	}
	b, _ := json.Marshal(struct {
		M []Move
		S []Skip
	}{moves, skipped})
	if string(b) != `{"M":[],"S":[]}` {
		t.Error(string(b))
	}
}

func TestConvergenceTarget(t *testing.T) {
	m := defaultMachine(t)
	c := func(states ...string) []Member {
		var out []Member
		for i, s := range states {
			out = append(out, Member{Number: i + 1, State: s})
		}
		return out
	}
	tests := []struct {
		name   string
		parent string
		kids   []Member
		want   string
		ok     bool
	}{
		{"all ready for plan", sBacklog, c(sRFP, sRFP), sRFP, true},
		{"lowest child decides", sBacklog, c(sIR, sPIR, sDone), sPIR, true},
		{"between gates", sBacklog, c(sPIP, sIP), sRFP, true},
		{"all done", sIR, c(sDone, sDone), sDone, true},
		{"canceled ignored", sRN, c(sRFP, sCancel), sRFP, true},
		{"done and canceled", sIP, c(sDone, sCancel, sDone), sDone, true},
		{"unset parent counts earliest", "", c(sRFP), sRFP, true},
		{"parent already at gate", sRFP, c(sRFP, sPIP), "", false},
		{"parent beyond gate", sPIR, c(sRFP), "", false},
		{"parent between gates advances", sPIP, c(sPIR, sIR), sPIR, true},
		{"human needed child blocks", sBacklog, c(sRFP, sHN), "", false},
		{"unset child blocks", sBacklog, c(sRFP, ""), "", false},
		{"unknown child blocks", sBacklog, c(sRFP, "Legacy"), "", false},
		{"below first gate", sBacklog, c(sRN, sRFP), "", false},
		{"all canceled", sBacklog, c(sCancel, sCancel), "", false},
		{"no children", sBacklog, nil, "", false},
		{"human needed parent stays", sHN, c(sDone), "", false},
		{"canceled parent stays", sCancel, c(sDone), "", false},
		{"unknown parent stays", "Legacy", c(sDone), "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := m.ConvergenceTarget(tt.parent, tt.kids)
			if got != tt.want || ok != tt.ok {
				t.Errorf("ConvergenceTarget = %q, %v; want %q, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestPlanConvergence(t *testing.T) {
	m := defaultMachine(t)
	// 1 ← 2 ← {4, 5}; 1 ← 3; 6 is an unrelated root.
	tree := []Node{
		{Number: 1, State: sBacklog},
		{Number: 2, Parent: 1, State: sBacklog},
		{Number: 3, Parent: 1, State: sPIR},
		{Number: 4, Parent: 2, State: sRFP},
		{Number: 5, Parent: 2, State: sPIR},
		{Number: 6, State: sBacklog},
	}
	with := func(edit func([]Node)) []Node {
		n := slices.Clone(tree)
		edit(n)
		return n
	}
	tests := []struct {
		name     string
		nodes    []Node
		moved    int
		maxDepth int
		want     []Move
	}{
		{"two levels", tree, 4, 10, []Move{{2, sBacklog, sRFP}, {1, sBacklog, sRFP}}},
		{"depth bound", tree, 4, 1, []Move{{2, sBacklog, sRFP}}},
		{"depth zero", tree, 4, 0, []Move{}},
		{"stops where parent does not move", with(func(n []Node) { n[2].State = sRN }), 4, 10, []Move{{2, sBacklog, sRFP}}},
		{"higher gate", with(func(n []Node) { n[3].State = sIR; n[4].State = sDone; n[2].State = sIR }), 5, 10,
			[]Move{{2, sBacklog, sIR}, {1, sBacklog, sIR}}},
		{"canceled sibling ignored", with(func(n []Node) { n[4].State = sCancel }), 4, 10, []Move{{2, sBacklog, sRFP}, {1, sBacklog, sRFP}}},
		{"human needed sibling blocks", with(func(n []Node) { n[4].State = sHN }), 4, 10, []Move{}},
		{"all canceled does not converge", with(func(n []Node) { n[3].State = sCancel; n[4].State = sCancel }), 4, 10, []Move{}},
		{"moved is a root", tree, 6, 10, []Move{}},
		{"moved unknown", tree, 99, 10, []Move{}},
		{"parent missing", []Node{{Number: 4, Parent: 2, State: sDone}}, 4, 10, []Move{}},
		{"cycle is walked once", []Node{
			{Number: 1, Parent: 2, State: sDone},
			{Number: 2, Parent: 1, State: sBacklog},
		}, 1, 10, []Move{{2, sBacklog, sDone}}},
		{"own parent", []Node{{Number: 5, Parent: 5, State: sDone}}, 5, 10, []Move{}},
		{"duplicate nodes use the first", append(slices.Clone(tree), Node{Number: 5, Parent: 2, State: sHN}), 4, 10,
			[]Move{{2, sBacklog, sRFP}, {1, sBacklog, sRFP}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := m.PlanConvergence(tt.nodes, tt.moved, tt.maxDepth)
			if got == nil {
				t.Fatal("nil moves")
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("PlanConvergence = %v, want %v", got, tt.want)
			}
		})
	}
}
