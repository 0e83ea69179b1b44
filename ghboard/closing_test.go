package ghboard

import (
	"testing"
	"time"
)

// The pull requests that close an issue say whether one is merged and when the first was
// (a move is checked against those merged by its own second).
func TestClosingPullRequestsMerged(t *testing.T) {
	t1, t2 := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC), time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	pr := func(merged bool, at *time.Time) *struct {
		Merged   bool       `json:"merged"`
		MergedAt *time.Time `json:"mergedAt"`
	} {
		return &struct {
			Merged   bool       `json:"merged"`
			MergedAt *time.Time `json:"mergedAt"`
		}{merged, at}
	}
	tests := []struct {
		name   string
		prs    *closingPRs
		merged bool
		at     time.Time
	}{
		{"not read", nil, false, time.Time{}},
		{"none merged", &closingPRs{Nodes: append(closingPRs{}.Nodes, pr(false, nil), nil)}, false, time.Time{}},
		{"one merged", &closingPRs{Nodes: append(closingPRs{}.Nodes, pr(false, nil), pr(true, &t2))}, true, t2},
		{"the first merged counts", &closingPRs{Nodes: append(closingPRs{}.Nodes, pr(true, &t2), pr(true, &t1))}, true, t1},
		{"merged, GitHub not saying when", &closingPRs{Nodes: append(closingPRs{}.Nodes, pr(true, nil))}, true, time.Time{}},
	}
	for _, tt := range tests {
		merged, at := tt.prs.merged()
		if merged != tt.merged || !at.Equal(tt.at) {
			t.Errorf("%s: merged() = %v, %v; want %v, %v", tt.name, merged, at, tt.merged, tt.at)
		}
	}
}
