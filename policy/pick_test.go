package policy

import (
	"slices"
	"testing"
)

func TestPick(t *testing.T) {
	c := func(n int, est, prio string) Candidate {
		return Candidate{Number: n, Title: "T", State: sRN, Estimate: est, Priority: prio, Open: true}
	}
	tests := []struct {
		name  string
		cands []Candidate
		state string
		max   string
		want  []int // best first, then alternatives
	}{
		{"priority first", []Candidate{c(1, "XS", "P2"), c(2, "S", "P0"), c(3, "XS", ""), c(4, "S", "P1")}, sRN, "", []int{2, 4, 1, 3}},
		{"then smaller estimate", []Candidate{c(1, "S", "P1"), c(2, "XS", "P1")}, sRN, "S", []int{2, 1}},
		{"then lower number", []Candidate{c(9, "S", "P1"), c(3, "S", "P1"), c(5, "s", "p1")}, sRN, "S", []int{3, 5, 9}},
		{"no priority ties by estimate then number", []Candidate{c(8, "S", ""), c(7, "S", "none"), c(6, "XS", "P9")}, sRN, "", []int{6, 7, 8}},
		{"unestimated ranks after sized of same priority", []Candidate{c(1, "", "P1"), c(2, "S", "P1"), c(3, "", "P0")}, sRN, "", []int{3, 2, 1}},
		{"default max is S", []Candidate{c(1, "M", "P0"), c(2, "S", "P3")}, sRN, "", []int{2}},
		{"max L", []Candidate{c(1, "XL", "P0"), c(2, "L", "P3"), c(3, "M", "P3")}, sRN, "l", []int{3, 2}},
		{"unrecognised estimate excluded", []Candidate{c(1, "XXL", "P0"), c(2, "S", "P3")}, sRN, "XL", []int{2}},
		{"filters closed, locked, blocked, other state", []Candidate{
			{Number: 1, State: sRN, Estimate: "XS", Priority: "P0", Open: false},
			{Number: 2, State: sRN, Estimate: "XS", Priority: "P0", Open: true, Locked: true},
			{Number: 3, State: sRN, Estimate: "XS", Priority: "P0", Open: true, OpenBlockers: 1},
			{Number: 4, State: sRFP, Estimate: "XS", Priority: "P0", Open: true},
			{Number: 5, State: sRN, Estimate: "S", Priority: "P3", Open: true},
		}, sRN, "S", []int{5}},
		{"nothing", []Candidate{c(1, "S", "P0")}, sRFP, "S", nil},
		{"empty", nil, sRN, "XS", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			best, alts, err := Pick(tt.cands, tt.state, tt.max)
			if err != nil {
				t.Fatal(err)
			}
			if alts == nil {
				t.Fatal("alternatives nil")
			}
			var got []int
			if best != nil {
				got = append(got, best.Number)
			}
			for _, a := range alts {
				got = append(got, a.Number)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Pick = %v, want %v", got, tt.want)
			}
		})
	}
	// best is a copy: changing it does not change the caller's slice.
	cands := []Candidate{c(1, "S", "P0")}
	best, _, _ := Pick(cands, sRN, "S")
	best.Title = "changed"
	if cands[0].Title != "T" {
		t.Error("best aliases the input")
	}
}

func TestPickUnknownEstimate(t *testing.T) {
	for _, max := range []string{"XXL", "small", "0"} {
		t.Run(max, func(t *testing.T) {
			best, alts, err := Pick([]Candidate{{Number: 1, State: sRN, Open: true}}, sRN, max)
			if best != nil || alts == nil || len(alts) != 0 {
				t.Errorf("best %v alts %v", best, alts)
			}
			r := asRefusal(t, err)
			sameStrings(t, "options", r.Options, []string{"XS", "S", "M", "L", "XL"})
		})
	}
}
