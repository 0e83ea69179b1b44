package policy

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Estimates in ascending size.
var estimateOrder = [...]string{"XS", "S", "M", "L", "XL"}

// Candidate is an issue pick_actionable_issue may choose.
type Candidate struct {
	Number       int    `json:"number"`
	Title        string `json:"title"`
	State        string `json:"state"`
	Estimate     string `json:"estimate"`
	Priority     string `json:"priority"`
	Open         bool   `json:"open"`
	Locked       bool   `json:"locked"`
	OpenBlockers int    `json:"openBlockers"`
	// Key is the caller's name for the candidate (issues of two repositories may share a
	// number); it plays no part in the ranking.
	Key string `json:"-"`
}

// Estimates are the estimates pick knows, smallest first.
func Estimates() []string { return slices.Clone(estimateOrder[:]) }

// estimateRank is the size rank of an estimate; -1 when unrecognised.
func estimateRank(e string) int {
	e = strings.ToUpper(strings.TrimSpace(e))
	for i, x := range estimateOrder {
		if x == e {
			return i
		}
	}
	return -1
}

// priorityRank: P0 < P1 < P2 < P3 < anything else (none).
func priorityRank(p string) int {
	switch strings.ToUpper(strings.TrimSpace(p)) {
	case "P0":
		return 0
	case "P1":
		return 1
	case "P2":
		return 2
	case "P3":
		return 3
	}
	return 4
}

// Pick chooses the best actionable issue in state: open, not locked, without open blockers,
// estimate at most maxEstimate (default S). An issue without an estimate is eligible (nobody
// sized it, so nothing says it is too big) and ranks after every sized issue of its priority;
// an unrecognised non-empty estimate is excluded, since it cannot be shown to be small enough.
// Ranking: priority P0 > P1 > P2 > P3 > none, then smaller estimate, then lower number.
// best is nil when nothing qualifies; alternatives are the other eligible issues in rank order.
func Pick(cands []Candidate, state, maxEstimate string) (best *Candidate, alternatives []Candidate, err error) {
	if strings.TrimSpace(maxEstimate) == "" {
		maxEstimate = "S"
	}
	limit := estimateRank(maxEstimate)
	if limit < 0 {
		r := NewRetryRefusal(fmt.Sprintf("Unknown maxEstimate %q", maxEstimate), "Valid estimates are "+strings.Join(estimateOrder[:], ", ")+" (smallest first)",
			Retry{With: []Suggestion{{Arg: ArgEstimate, Kind: Word, Values: Estimates(), Optional: true}}})
		r.Unknown = true
		return nil, []Candidate{}, r
	}
	sizeRank := func(c Candidate) int {
		if strings.TrimSpace(c.Estimate) == "" {
			return len(estimateOrder)
		}
		return estimateRank(c.Estimate)
	}
	eligible := []Candidate{}
	for _, c := range cands {
		r := sizeRank(c)
		if !c.Open || c.State != state || c.Locked || c.OpenBlockers > 0 || r < 0 {
			continue
		}
		if r < len(estimateOrder) && r > limit {
			continue
		}
		eligible = append(eligible, c)
	}
	slices.SortStableFunc(eligible, func(a, b Candidate) int {
		return cmp.Or(
			cmp.Compare(priorityRank(a.Priority), priorityRank(b.Priority)),
			cmp.Compare(sizeRank(a), sizeRank(b)),
			cmp.Compare(a.Number, b.Number),
		)
	})
	if len(eligible) == 0 {
		return nil, eligible, nil
	}
	first := eligible[0]
	return &first, eligible[1:], nil
}
