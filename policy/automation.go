package policy

import "fmt"

// Move is one state change the automation plans to make.
type Move struct {
	Number int    `json:"number"`
	From   string `json:"from"`
	To     string `json:"to"`
}

// Skip is an item the automation deliberately leaves alone, with the reason.
type Skip struct {
	Number int    `json:"number"`
	State  string `json:"state"`
	Reason string `json:"reason"`
	// Rule is requirement when the item fails a requirement of the target; else empty.
	Rule Rule `json:"rule,omitempty"`
}

// PlanCascade plans the children cascade (docs/AUTOMATION.md): when a parent enters pipeline state
// parentTo, every child strictly earlier on the pipeline moves to parentTo. Terminal,
// off-pipeline and unknown children are skipped; an unset child counts as earliest. A child
// that fails a requirement of parentTo (Unmet) is skipped with what it lacks.
// Children keep their input order. Both results are non-nil.
func (m *Machine) PlanCascade(parentTo string, children []Member) (moves []Move, skipped []Skip) {
	return m.planCascade(parentTo, children, m.Unmet)
}

// PlanCascadeAs plans the moves an actor of kind makes of a parent's children (advance_children:
// an agent's own moves), skipping a child that fails a requirement binding that kind.
func (m *Machine) PlanCascadeAs(parentTo string, children []Member, kind ActorKind) (moves []Move, skipped []Skip) {
	return m.planCascade(parentTo, children, func(state string, mb Member) string { return m.Lacks(state, mb, kind) })
}

func (m *Machine) planCascade(parentTo string, children []Member, unmet func(string, Member) string) (moves []Move, skipped []Skip) {
	moves, skipped = []Move{}, []Skip{}
	target := m.PipelineIndex(parentTo)
	for _, c := range children {
		skip := func(reason string) { skipped = append(skipped, Skip{Number: c.Number, State: c.State, Reason: reason}) }
		move := func() {
			if why := unmet(parentTo, c); why != "" {
				skipped = append(skipped, Skip{Number: c.Number, State: c.State, Reason: why, Rule: RuleRequirement})
				return
			}
			moves = append(moves, Move{Number: c.Number, From: c.State, To: parentTo})
		}
		switch {
		case target < 0:
			skip(fmt.Sprintf("%s is not on the pipeline, so nothing cascades from it", quoteState(parentTo)))
		case c.State == "":
			move()
		case !m.IsState(c.State):
			skip(fmt.Sprintf("%s is not a state of the workflow", quoteState(c.State)))
		case m.IsTerminal(c.State):
			skip(fmt.Sprintf("%s is terminal; only a human reopens it", c.State))
		case m.PipelineIndex(c.State) < 0:
			skip(fmt.Sprintf("%s is off the pipeline; a human must move it", c.State))
		case m.PipelineIndex(c.State) >= target:
			skip(fmt.Sprintf("already at %s, which is not earlier than %s", c.State, parentTo))
		default:
			move()
		}
	}
	return moves, skipped
}

// ConvergenceTarget is the parent gate a parent should advance to given its children
// (docs/AUTOMATION.md): the highest gate every non-Canceled child has reached, provided no such child
// is off the pipeline (Human Needed, unset, unknown), at least one child is not Canceled, and
// the gate is strictly later than parentState ("" counts as earliest). A parent that is off
// the pipeline (Human Needed, Canceled) never advances by itself.
func (m *Machine) ConvergenceTarget(parentState string, children []Member) (string, bool) {
	pi := -1
	if parentState != "" {
		if pi = m.PipelineIndex(parentState); pi < 0 {
			return "", false
		}
	}
	low, active := -1, 0
	for _, c := range children {
		if m.isCanceledLike(c.State) {
			continue
		}
		i := m.PipelineIndex(c.State)
		if i < 0 {
			return "", false
		}
		if active == 0 || i < low {
			low = i
		}
		active++
	}
	if active == 0 {
		return "", false
	}
	best, bi := "", -1
	for _, g := range m.spec.ParentGates {
		if gi := m.PipelineIndex(g); gi <= low && gi > bi {
			best, bi = g, gi
		}
	}
	if bi <= pi {
		return "", false
	}
	return best, true
}

// Node is an issue in a hierarchy; Parent 0 means none.
type Node struct {
	Number int    `json:"number"`
	Parent int    `json:"parent"`
	State  string `json:"state"`
}

// PlanConvergence plans the parent convergence after `moved` changed state (nodes hold its new
// state): starting at its parent, each ancestor that converges advances, and the walk repeats
// one level up with the updated state. It stops at the first ancestor that does not move, after
// maxDepth levels, or on a number already visited (a corrupt, cyclic hierarchy).
func (m *Machine) PlanConvergence(nodes []Node, moved int, maxDepth int) []Move {
	moves := []Move{}
	byNum := map[int]Node{}
	for _, n := range nodes {
		if _, dup := byNum[n.Number]; !dup {
			byNum[n.Number] = n
		}
	}
	state := func(n int) string { return byNum[n].State }
	start, ok := byNum[moved]
	if !ok {
		return moves
	}
	seen := map[int]bool{moved: true}
	for cur, depth := start.Parent, 0; cur != 0 && depth < maxDepth && !seen[cur]; depth++ {
		parent, ok := byNum[cur]
		if !ok {
			break
		}
		seen[cur] = true
		var children []Member
		counted := map[int]bool{}
		for _, n := range nodes {
			if byNum[n.Number].Parent == cur && n.Number != cur && !counted[n.Number] {
				counted[n.Number] = true
				children = append(children, Member{Number: n.Number, State: state(n.Number)})
			}
		}
		target, ok := m.ConvergenceTarget(parent.State, children)
		if !ok {
			break
		}
		moves = append(moves, Move{Number: cur, From: parent.State, To: target})
		parent.State = target
		byNum[cur] = parent
		cur = parent.Parent
	}
	return moves
}
