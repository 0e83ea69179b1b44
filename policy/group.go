package policy

import (
	"fmt"
	"slices"
	"strings"
)

// GroupNode is a group member with its native blockedBy issues.
type GroupNode struct {
	Number    int   `json:"number"`
	BlockedBy []int `json:"blockedBy"`
}

// OrderGroup orders a group topologically, blockers first, ties by number ascending. Blockers
// outside the group are ignored; duplicate nodes merge their blockers. A cycle (including an
// issue blocked by itself) is a *Refusal naming the issues in the cycle.
func OrderGroup(nodes []GroupNode) ([]int, error) {
	blockers := map[int]map[int]bool{}
	for _, n := range nodes {
		if blockers[n.Number] == nil {
			blockers[n.Number] = map[int]bool{}
		}
	}
	for _, n := range nodes {
		for _, b := range n.BlockedBy {
			if _, in := blockers[b]; in {
				blockers[n.Number][b] = true
			}
		}
	}
	nums := make([]int, 0, len(blockers))
	for n := range blockers {
		nums = append(nums, n)
	}
	slices.Sort(nums)
	pending := map[int]int{} // number -> unmet blockers
	for _, n := range nums {
		pending[n] = len(blockers[n])
	}
	order := make([]int, 0, len(nums))
	done := map[int]bool{}
	// The group is small (an issue tree), so a quadratic scan keeps this simple and stable.
	for len(order) < len(nums) {
		next := -1
		for _, n := range nums {
			if !done[n] && pending[n] == 0 {
				next = n
				break
			}
		}
		if next == -1 {
			return nil, cycleRefusal(findCycle(nums, done, blockers))
		}
		done[next] = true
		order = append(order, next)
		for _, n := range nums {
			if blockers[n][next] {
				pending[n]--
			}
		}
	}
	return order, nil
}

// findCycle walks blockedBy links from the smallest unordered issue until one repeats; every
// unordered issue has an unordered blocker, so the walk must close a cycle.
func findCycle(nums []int, done map[int]bool, blockers map[int]map[int]bool) []int {
	var start int
	for _, n := range nums {
		if !done[n] {
			start = n
			break
		}
	}
	pos := map[int]int{}
	var path []int
	for cur := start; ; {
		if i, seen := pos[cur]; seen {
			return path[i:]
		}
		pos[cur] = len(path)
		path = append(path, cur)
		next := -1
		for _, b := range nums { // smallest unordered blocker, for a deterministic message
			if blockers[cur][b] && !done[b] {
				next = b
				break
			}
		}
		cur = next
	}
}

func cycleRefusal(cycle []int) *Refusal {
	var links, opts []string
	for i, n := range cycle {
		b := cycle[(i+1)%len(cycle)]
		links = append(links, fmt.Sprintf("#%d is blocked by #%d", n, b))
		opts = append(opts, fmt.Sprintf("#%d", n))
	}
	return &Refusal{
		Tried:    "Ordering the group by its blockedBy links",
		Why:      "The links form a cycle: " + strings.Join(links, ", "),
		Recovery: "remove one of these blockedBy links, then retry: " + strings.Join(links, ", "),
		Options:  opts,
		Rule:     RuleGroup,
	}
}
