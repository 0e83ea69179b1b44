package config

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// nearestByDefinition is Nearest as it reads: every candidate's whole edit distance.
func nearestByDefinition(name string, candidates []string) (string, bool) {
	n := normalName(name)
	best, bestD := "", -1
	for _, c := range candidates {
		a, b := []rune(n), []rune(normalName(c))
		prev := make([]int, len(b)+1)
		for j := range prev {
			prev[j] = j
		}
		for i := 1; i <= len(a); i++ {
			cur := make([]int, len(b)+1)
			cur[0] = i
			for j := 1; j <= len(b); j++ {
				cost := 1
				if a[i-1] == b[j-1] {
					cost = 0
				}
				cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			}
			prev = cur
		}
		d := prev[len(b)]
		if d == 0 && c == name {
			continue
		}
		if d*3 <= len(a) && (bestD < 0 || d < bestD) {
			best, bestD = c, d
		}
	}
	return best, bestD >= 0
}

// Nearest skips the candidates too far by their length alone and stops counting a distance
// once it is too far: it finds what the whole distances would.
func TestNearestIsTheDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	word := func() string {
		const letters = "abcdeé Ab"
		var b strings.Builder
		for range r.IntN(14) {
			b.WriteRune([]rune(letters)[r.IntN(len([]rune(letters)))])
		}
		return b.String()
	}
	for i := range 20000 {
		candidates := make([]string, r.IntN(8))
		for j := range candidates {
			candidates[j] = word()
		}
		name := word()
		if len(candidates) > 0 && i%3 == 0 {
			name = candidates[r.IntN(len(candidates))] // the name itself is among them
		}
		got, ok := Nearest(name, candidates)
		want, wantOK := nearestByDefinition(name, candidates)
		if got != want || ok != wantOK {
			t.Fatalf("Nearest(%q, %q) = %q, %v; by definition %q, %v", name, candidates, got, ok, want, wantOK)
		}
	}
}

// suggestStates looks the nearest state up once for each name, for the first MaxProblems
// names: the problems after those keep their words.
func TestSuggestStatesLooksUpTheFirstNames(t *testing.T) {
	var ps []Problem
	for i := range MaxProblems + 10 {
		ps = append(ps, Problem{Path: fmt.Sprintf("workflow.states[0].next[%d]", i), Message: fmt.Sprintf("unknown state %q", fmt.Sprintf("Backlog%d", i))})
	}
	ps = append(ps, Problem{Path: "workflow.initial[0]", Message: `unknown state "Backlog0"`}) // a name looked up already
	out := suggestStates(ps, []string{"Backlog", "Done"})
	for i, p := range out {
		suggested := strings.Contains(p.Message, `(did you mean "Backlog"?)`)
		if want := i < MaxProblems || i == len(out)-1; suggested != want {
			t.Errorf("%s: suggested %v, want %v", p, suggested, want)
		}
	}
}
