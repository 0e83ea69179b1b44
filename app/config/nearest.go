package config

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Nearest returns the candidate a mistyped name most likely meant: one that differs only by
// case or spacing, or else the closest by edit distance when at most a third of the name
// differs ("Reserch Needed" → "Research Needed", "Cancelled" → "Canceled"). The first of
// equally near candidates wins; ok is false when none is near.
func Nearest(name string, candidates []string) (string, bool) {
	n := normalName(name)
	best, bestD := "", -1
	for _, c := range candidates {
		d := editDistance(n, normalName(c))
		if d == 0 && c == name {
			continue // the name itself is not a suggestion
		}
		if d*3 <= len([]rune(n)) && (bestD < 0 || d < bestD) {
			best, bestD = c, d
		}
	}
	return best, bestD >= 0
}

// normalName folds case and runs of spaces, the differences a reader does not see.
func normalName(s string) string {
	return strings.Join(strings.Fields(strings.ToLower(s)), " ")
}

// editDistance is the Levenshtein distance between a and b, in runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur := make([]int, len(rb)+1)
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(rb)]
}

// unknownState finds the name in the workflow's "unknown state" problems.
var unknownState = regexp.MustCompile(`^unknown state ("(?:[^"\\]|\\.)*")`)

// suggestStates adds the nearest state to every "unknown state" problem that names none:
// `workflow.states[3].next[1]: unknown state "Reserch Needed" (did you mean "Research Needed"?)`.
func suggestStates(ps []Problem, states []string) []Problem {
	out := make([]Problem, len(ps))
	for i, p := range ps {
		out[i] = p
		m := unknownState.FindStringSubmatch(p.Message)
		if m == nil || strings.Contains(p.Message, "did you mean") {
			continue
		}
		name, err := strconv.Unquote(m[1])
		if err != nil {
			continue
		}
		if near, ok := Nearest(name, states); ok {
			out[i].Message = strings.Replace(p.Message, m[1], fmt.Sprintf("%s (did you mean %q?)", m[1], near), 1)
		}
	}
	return out
}
