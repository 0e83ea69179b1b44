package policy

import (
	"slices"
	"testing"
)

func TestOrderGroup(t *testing.T) {
	tests := []struct {
		name  string
		nodes []GroupNode
		want  []int
	}{
		{"empty", nil, []int{}},
		{"ties by number", []GroupNode{{Number: 9}, {Number: 3}, {Number: 5}}, []int{3, 5, 9}},
		{"chain", []GroupNode{{Number: 1, BlockedBy: []int{2}}, {Number: 2, BlockedBy: []int{3}}, {Number: 3}}, []int{3, 2, 1}},
		{"diamond", []GroupNode{
			{Number: 4, BlockedBy: []int{2, 3}}, {Number: 2, BlockedBy: []int{1}}, {Number: 3, BlockedBy: []int{1}}, {Number: 1},
		}, []int{1, 2, 3, 4}},
		{"smallest ready first, not depth first", []GroupNode{
			{Number: 10}, {Number: 2, BlockedBy: []int{10}}, {Number: 5},
		}, []int{5, 10, 2}},
		{"outside blockers ignored", []GroupNode{{Number: 2, BlockedBy: []int{99}}, {Number: 1, BlockedBy: []int{2}}}, []int{2, 1}},
		{"duplicates merge", []GroupNode{{Number: 1}, {Number: 2}, {Number: 1, BlockedBy: []int{2}}}, []int{2, 1}},
		{"duplicate blocker entries", []GroupNode{{Number: 1, BlockedBy: []int{2, 2}}, {Number: 2}}, []int{2, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := OrderGroup(tt.nodes)
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("OrderGroup = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestOrderGroupCycles(t *testing.T) {
	tests := []struct {
		name  string
		nodes []GroupNode
		msg   string
		opts  []string
	}{
		{"two", []GroupNode{{Number: 1, BlockedBy: []int{2}}, {Number: 2, BlockedBy: []int{1}}, {Number: 3}},
			"Ordering the group by its blockedBy links. The links form a cycle: #1 is blocked by #2, #2 is blocked by #1. Recovery: remove one of these blockedBy links, then retry: #1 is blocked by #2, #2 is blocked by #1",
			[]string{"#1", "#2"}},
		{"self", []GroupNode{{Number: 7, BlockedBy: []int{7}}},
			"Ordering the group by its blockedBy links. The links form a cycle: #7 is blocked by #7. Recovery: remove one of these blockedBy links, then retry: #7 is blocked by #7",
			[]string{"#7"}},
		{"three behind a tail", []GroupNode{
			{Number: 1, BlockedBy: []int{5}}, // 1 waits on the cycle but is not part of it
			{Number: 5, BlockedBy: []int{6}}, {Number: 6, BlockedBy: []int{8}}, {Number: 8, BlockedBy: []int{5}},
			{Number: 2},
		}, "Ordering the group by its blockedBy links. The links form a cycle: #5 is blocked by #6, #6 is blocked by #8, #8 is blocked by #5. Recovery: remove one of these blockedBy links, then retry: #5 is blocked by #6, #6 is blocked by #8, #8 is blocked by #5",
			[]string{"#5", "#6", "#8"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := OrderGroup(tt.nodes)
			if got != nil {
				t.Errorf("order = %v", got)
			}
			r := asRefusal(t, err)
			if r.Error() != tt.msg {
				t.Errorf("message:\n got %s\nwant %s", r.Error(), tt.msg)
			}
			sameStrings(t, "options", r.Options, tt.opts)
		})
	}
}
