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
//
// Its cost is that of the candidates' lengths, not their product with the name's: a candidate
// whose length alone puts it too far is skipped, and a distance stops being counted once it
// is too far (a long name, or a long list of candidates, stays cheap).
func Nearest(name string, candidates []string) (string, bool) {
	n := []rune(normalName(name))
	var rows editRows
	best, bestD := "", -1
	for _, c := range candidates {
		// Nearer than the best so far, and within a third of the name.
		limit := len(n) / 3
		if bestD >= 0 {
			limit = min(limit, bestD-1)
		}
		if limit < 0 {
			break
		}
		cn := []rune(normalName(c))
		if abs(len(n)-len(cn)) > limit {
			continue // the distance is at least the difference of the lengths
		}
		d, within := rows.distance(n, cn, limit)
		if !within || (d == 0 && c == name) {
			continue // too far; or the name itself, which is not a suggestion
		}
		best, bestD = c, d
	}
	return best, bestD >= 0
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// normalName folds case and runs of spaces, the differences a reader does not see.
func normalName(s string) string {
	return strings.Join(strings.Fields(strings.ToLower(s)), " ")
}

// editRows are the two rows of an edit distance's table, kept from one distance to the next.
type editRows struct{ prev, cur []int }

// distance is the Levenshtein distance between a and b, in runes, when it is at most limit
// (within); once every cell of a row is over limit, so is the distance, and it stops there.
func (r *editRows) distance(a, b []rune, limit int) (d int, within bool) {
	r.prev, r.cur = grow(r.prev, len(b)+1), grow(r.cur, len(b)+1)
	for j := range r.prev {
		r.prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		r.cur[0] = i
		least := i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			r.cur[j] = min(r.prev[j]+1, r.cur[j-1]+1, r.prev[j-1]+cost)
			least = min(least, r.cur[j])
		}
		if least > limit {
			return least, false
		}
		r.prev, r.cur = r.cur, r.prev
	}
	return r.prev[len(b)], r.prev[len(b)] <= limit
}

// grow is s with length n, reusing its array when it is large enough.
func grow(s []int, n int) []int {
	if cap(s) < n {
		return make([]int, n)
	}
	return s[:n]
}

// unknownState finds the name in the workflow's "unknown state" problems.
var unknownState = regexp.MustCompile(`^unknown state ("(?:[^"\\]|\\.)*")`)

// suggestStates adds the nearest state to every "unknown state" problem that names none:
// `workflow.states[3].next[1]: unknown state "Reserch Needed" (did you mean "Research Needed"?)`.
// The nearest state is looked for once per name, for the first MaxProblems names: a file that
// names ten thousand states that do not exist costs the states' length a hundred times, not ten
// thousand (an organization's policy file lists no more problems than that).
func suggestStates(ps []Problem, states []string) []Problem {
	out := make([]Problem, len(ps))
	nearest := map[string]string{} // a name → its suggestion, "" for none
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
		near, looked := nearest[name]
		if !looked {
			if len(nearest) == MaxProblems {
				continue
			}
			near, _ = Nearest(name, states)
			nearest[name] = near
		}
		if near != "" {
			out[i].Message = strings.Replace(p.Message, m[1], fmt.Sprintf("%s (did you mean %q?)", m[1], near), 1)
		}
	}
	return out
}
