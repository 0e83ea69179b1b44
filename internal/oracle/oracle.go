// Package oracle judges a true history of Workflow State moves in order, as an observer that
// saw every move would: the reference the history suites hold ralph-gate to. It knows nothing
// of GitHub or of how changes are reported; it uses only the policy engine.
package oracle

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ralph-gate/ralph-gate/policy"
)

// Oracle judges the true history in order, as an observer that saw every move would.
type Oracle struct {
	m       *policy.Machine
	actors  policy.Actors
	initial map[string]string
	moves   map[string][]Move // by item, in true order
	// Legal and Holder are each item's last legal state and lock holder as the moves so far
	// leave them; Violations (by delivery id) every refused move so far.
	Legal, Holder map[string]string
	Violations    map[string]Violation
	// GroupOf, when set, names the other members of an item's group (siblings, or a parent's
	// sub-issues); their legal states at each move are the convergence gate's input.
	GroupOf func(item string) []string
	// Family, when set, names an item's parent ("" for none) and its sub-issues. Automation is
	// then part of the true history: a move that changes an item's legal state carries its
	// children along (cascade) and converges its ancestors at once, at the move's time, as
	// the app's automation does (policy.PlanCascade, policy.ConvergenceTarget).
	Family func(item string) (parent string, children []string)
	// Automated lists the moves automation made, in order.
	Automated []Automated
	// MergeVia names, for a close, the state between the one it closes from and Done that a
	// merge passes (In Progress: In Review): the close is allowed when both moves are.
	MergeVia map[string]string
	// MergeTo is where a merge moves an item from its legal state (In Progress: In Review, In
	// Review: Done); from any other, nowhere.
	MergeTo map[string]string
	// IssueClosed, when set, reports whether an item's issue ends closed; Check then compares
	// it with the outcome's (a refused close or reopen is undone).
	IssueClosed func(item string) bool
	// Stands: refused moves are not reverted (a project in warn or evaluate mode). A refused
	// move of the card then becomes the item's state (the history goes on from the value the
	// board shows), a close, reopen or merge never moves the card and is never undone, and no
	// automation runs. Silent: refused moves are not explained either (evaluate).
	Stands, Silent bool
	// FieldsOf, when set, is an item's field values before the history: the input of
	// workflow.requirements, with the edits of the history (Move.Field) applied in order, for
	// its own moves and for the automation that would move it.
	FieldsOf func(item string) map[string]string
	// PolicyAt, when set, is the policy in force at a time (the organization's file, pushed
	// mid-history): each move is judged by the one in force when it was made, and its
	// automation runs under it; unset, the machine and actors New was given, with Stands and
	// Silent, throughout.
	PolicyAt func(at time.Time) Policy
	byApp    map[string]bool   // the item's legal state was last set by automation
	writes   map[string][]Move // by item: the values the app wrote on its card (Wrote)
}

// Policy is a policy in force: the workflow, the actors, and the mode (Stands, Silent as the
// Oracle's).
type Policy struct {
	M              *policy.Machine
	Actors         policy.Actors
	Stands, Silent bool
}

// at is the policy in force at a time.
func (o *Oracle) at(t time.Time) Policy {
	if o.PolicyAt != nil {
		return o.PolicyAt(t)
	}
	return Policy{M: o.m, Actors: o.actors, Stands: o.Stands, Silent: o.Silent}
}

// LegalByAutomation reports whether an item's legal state was last set by the app's
// automation (so far unwritten, perhaps: the app writes it when it judges the cause).
func (o *Oracle) LegalByAutomation(item string) bool { return o.byApp[item] }

// Automated is a move the app's automation owes: the item, the state it enters, and the
// item whose move caused it.
type Automated struct {
	Item, To, Cause string
	At              time.Time
}

// Move is one move of the true history.
type Move struct {
	From, To, Actor, Delivery string
	// NoFrom marks a move whose report carried no previous value: nothing the app is told
	// orders it within its second, so any order of the second may place it anywhere (From is
	// still the true one).
	NoFrom bool
	At     time.Time // GitHub's time: whole seconds
	// App marks the app's own write: a revert (to the legal value: nothing changes) or an
	// automated move (legal by definition; the caller checks it was one).
	App bool
	// Wrote marks a value the app wrote on the card (Oracle.Wrote): no move of the true
	// history, but the moves of its second chain through it (Interleavings, Reordered).
	Wrote bool
	// Lifecycle marks a close (LifecycleClose) or a reopen (LifecycleReopen) of the item's
	// issue: its actor's move to To (Done, Backlog). A refused one is undone; one to the legal
	// state moves nothing.
	Lifecycle string
	// Field marks an edit of a required field (From → To are its values): no move, but the
	// moves after it are checked against its value. Besides the true order, Orders tries the
	// edits of a second first in it (ralph-gate's sequencer takes them so: GitHub dates both
	// to the second).
	Field string
	// Now marks a move the app made at once for its actor (a façade handoff): its gates read
	// the group as it stands at the move, every earlier step counted (Group otherwise leaves
	// out the steps of the move's second, which GitHub's reports cannot order).
	Now bool
	// Raced marks a Now move whose write landed after moves that raced it (made between the
	// call's read and its write): on the card it leaves the value it was decided on (From), and
	// its write, recorded apart (Wrote), carries the card from the raced value to To.
	Raced bool
	// After names a move (by delivery) this one came after for sure: a move that raced a
	// façade call's write came after the call's move, whatever the second's order.
	After string
	// Group is the other members of the item's group as they stood just before the move's
	// second (the convergence gate's input; moves of one second are not ordered across items
	// by GitHub's clock); Step fills it from GroupOf.
	Group []policy.Member
}

// The lifecycle events a Move can be.
const (
	LifecycleClose  = "close"
	LifecycleReopen = "reopen"
	// LifecycleMerge is a merged pull request that closes the item's issue: its state is decided
	// when judged (MergeTo); GitHub closes the issue too, a close of its own.
	LifecycleMerge = "merge"
)

// Violation is a refused move: who, from which legal state, to what, by which rule.
type Violation struct {
	Item, Actor, From, To string
	Rule                  policy.Rule
}

func (v Violation) String() string {
	return fmt.Sprintf("%s's refused %s → %s (%s)", v.Actor, show(v.From), show(v.To), v.Rule)
}

// New returns an oracle for the machine and actors.
func New(m *policy.Machine, actors policy.Actors) *Oracle {
	return &Oracle{m: m, actors: actors, initial: map[string]string{}, moves: map[string][]Move{},
		Legal: map[string]string{}, Holder: map[string]string{}, Violations: map[string]Violation{}, writes: map[string][]Move{}}
}

// Wrote records a value the app wrote on an item's card (a revert, provisional or not, or an
// automated move), from the value the card showed, at GitHub's time: no move of the true
// history, but a change of the card's value that moves of its second may follow (Orders).
func (o *Oracle) Wrote(item, from, to string, at time.Time) {
	o.writes[item] = append(o.writes[item], Move{From: from, To: to, At: at, App: true})
}

// Start sets an item's first state (adopted as legal, with no lock holder).
func (o *Oracle) Start(item, state string) {
	o.initial[item], o.Legal[item] = state, state
}

// Outcome is what judging an item's moves in one order leads to.
type Outcome struct {
	Legal, Holder string
	Violations    map[string]Violation
	// Quiet are the violations judged under evaluate: refused, and never explained.
	Quiet   map[string]bool
	Allowed map[string]string // by delivery id: the legal moves, described
	Closed  bool              // the item's issue ends closed
}

// Judge replays moves in order from the item's first state: each judged from the last legal
// state, with the mover's own kind.
func (o *Oracle) Judge(item string, moves []Move) Outcome {
	out := Outcome{Legal: o.initial[item], Violations: map[string]Violation{}, Allowed: map[string]string{}, Quiet: map[string]bool{}}
	fields := maps.Clone(o.fields(item))
	for _, mv := range moves {
		l := out.Legal
		if mv.Field != "" {
			if fields == nil {
				fields = map[string]string{}
			}
			fields[mv.Field] = mv.To
			continue
		}
		p := o.at(mv.At)
		if mv.App {
			if mv.To != l {
				// As the app records an automated move: the holder of a lock it leaves goes.
				out.Legal = mv.To
				if !p.M.IsLock(mv.To) {
					out.Holder = ""
				}
			}
			continue
		}
		closing, issue := mv.Lifecycle == LifecycleClose, mv.Lifecycle == LifecycleClose || mv.Lifecycle == LifecycleReopen
		to := mv.To
		if mv.Lifecycle == LifecycleMerge {
			to = o.MergeTo[l] // decided from the legal state; none: nothing to move
		}
		if to == l || to == "" {
			out.Allowed[mv.Delivery] = "a move back to the last legal state"
			if issue {
				out.Closed = closing
			}
			continue
		}
		c := policy.Change{From: l, To: to, Actor: mv.Actor, ActorKind: p.Actors.Classify(mv.Actor), LockHolder: out.Holder, Group: mv.Group,
			Fields: fields, MergedPR: mv.Lifecycle == LifecycleMerge || o.mergedBy(item, mv.At)}
		d := p.M.Decide(c)
		refused := d.Verdict != policy.Allow && !(closing && o.mergePath(p.M, c))
		if p.Stands {
			// Judged, nothing written: a refused move stands as the item's state; a lifecycle
			// event leaves the card and the issue as they are.
			if refused {
				out.Violations[mv.Delivery] = Violation{Item: item, Actor: mv.Actor, From: l, To: to, Rule: d.Rule}
				if p.Silent {
					out.Quiet[mv.Delivery] = true
				}
			} else {
				out.Allowed[mv.Delivery] = fmt.Sprintf("%s's legal %s → %s", mv.Actor, show(l), show(to))
			}
			if issue {
				out.Closed = closing
			}
			if mv.Lifecycle == "" {
				out.Legal, out.Holder = to, ""
				if p.M.IsLock(to) {
					out.Holder = mv.Actor
				}
			}
			continue
		}
		if refused {
			out.Violations[mv.Delivery] = Violation{Item: item, Actor: mv.Actor, From: l, To: to, Rule: d.Rule}
			if issue {
				out.Closed = !closing // undone
			}
			continue
		}
		if issue {
			out.Closed = closing
		}
		out.Allowed[mv.Delivery] = fmt.Sprintf("%s's legal %s → %s", mv.Actor, show(l), show(to))
		out.Legal, out.Holder = to, ""
		if p.M.IsLock(to) {
			out.Holder = mv.Actor
		}
	}
	return out
}

// mergePath reports whether a close is what merging a pull request does: from a state MergeVia
// names, through it to the close's state, both moves allowed.
func (o *Oracle) mergePath(m *policy.Machine, c policy.Change) bool {
	via, ok := o.MergeVia[c.From]
	if !ok {
		return false
	}
	first, second := c, c
	first.To, second.From = via, via
	return m.Decide(first).Verdict == policy.Allow && m.Decide(second).Verdict == policy.Allow
}

// Step records one move of the true history (a write of the app's, Wrote, is recorded as such).
func (o *Oracle) Step(item string, mv Move) {
	if mv.Wrote {
		o.Wrote(item, mv.From, mv.To, mv.At)
		return
	}
	if o.GroupOf != nil && !mv.App && mv.Field == "" {
		for i, other := range o.GroupOf(item) {
			state := o.legalBefore(other, mv.At)
			if mv.Now {
				state = o.Legal[other]
			}
			mv.Group = append(mv.Group, policy.Member{Number: i + 1, Title: other, State: state})
		}
	}
	before := o.Legal[item]
	o.moves[item] = append(o.moves[item], mv)
	out := o.Judge(item, o.moves[item])
	o.Legal[item], o.Holder[item] = out.Legal, out.Holder
	for d, v := range out.Violations {
		o.Violations[d] = v
	}
	if out.Legal != before && o.byApp != nil {
		o.byApp[item] = false
	}
	if o.Family != nil && !mv.App && out.Legal != before && !o.at(mv.At).Stands {
		o.automate(item, mv.At)
	}
}

// automate runs the automation a legal move of item sets off: its children follow it down
// the pipeline (to max_cascade_depth levels), then its ancestors converge. One chain never
// moves an item twice.
func (o *Oracle) automate(item string, at time.Time) {
	visited := map[string]bool{item: true}
	m := o.at(at).M
	auto := m.Automation()
	if auto.CascadeChildren {
		o.cascade(item, item, at, 1, visited)
	}
	if !auto.ConvergeParents {
		return
	}
	parent, _ := o.Family(item)
	for depth := 0; parent != "" && depth < auto.MaxCascadeDepth && !visited[parent]; depth++ {
		_, children := o.Family(parent)
		var members []policy.Member
		for i, c := range children {
			members = append(members, policy.Member{Number: i + 1, Title: c, State: o.Legal[c]})
		}
		target, ok := m.ConvergenceTarget(o.Legal[parent], members)
		if !ok || m.Unmet(target, policy.Member{Fields: o.fieldsBefore(parent, at), MergedPR: o.mergedBy(parent, at)}) != "" {
			return
		}
		visited[parent] = true
		o.appMove(parent, target, item, at)
		parent, _ = o.Family(parent)
	}
}

func (o *Oracle) cascade(cause, parent string, at time.Time, depth int, visited map[string]bool) {
	m := o.at(at).M
	if m.PipelineIndex(o.Legal[parent]) < 0 {
		return
	}
	_, children := o.Family(parent)
	byNumber := map[int]string{}
	var members []policy.Member
	for i, c := range children {
		if visited[c] {
			continue
		}
		byNumber[i+1] = c
		members = append(members, policy.Member{Number: i + 1, Title: c, State: o.Legal[c], Fields: o.fieldsBefore(c, at), MergedPR: o.mergedBy(c, at)})
	}
	moves, _ := m.PlanCascade(o.Legal[parent], members)
	var moved []string
	for _, mv := range moves {
		c := byNumber[mv.Number]
		visited[c] = true
		o.appMove(c, mv.To, cause, at)
		moved = append(moved, c)
	}
	if depth >= m.Automation().MaxCascadeDepth {
		return
	}
	for _, c := range moved {
		if _, grand := o.Family(c); len(grand) > 0 {
			o.cascade(cause, c, at, depth+1, visited)
		}
	}
}

// fields is an item's field values (FieldsOf; nil without).
func (o *Oracle) fields(item string) map[string]string {
	if o.FieldsOf == nil {
		return nil
	}
	return o.FieldsOf(item)
}

// fieldsBefore is an item's field values as they stood before t's second: its edits of one
// second are not ordered against another item's moves (as Group's states).
func (o *Oracle) fieldsBefore(item string, t time.Time) map[string]string {
	fields := maps.Clone(o.fields(item))
	for _, mv := range o.moves[item] {
		if mv.Field != "" && mv.At.Before(t.Truncate(time.Second)) {
			if fields == nil {
				fields = map[string]string{}
			}
			fields[mv.Field] = mv.To
		}
	}
	return fields
}

// mergedBy reports whether a pull request closing the item's issue was merged by t's second
// (GitHub dates the merge to the second: one of the move's second counts).
func (o *Oracle) mergedBy(item string, t time.Time) bool {
	for _, mv := range o.moves[item] {
		if mv.Lifecycle == LifecycleMerge && !mv.At.Truncate(time.Second).After(t.Truncate(time.Second)) {
			return true
		}
	}
	return false
}

// appMove records an automated move of item at the time of the move that caused it.
func (o *Oracle) appMove(item, to, cause string, at time.Time) {
	o.moves[item] = append(o.moves[item], Move{From: o.Legal[item], To: to, Actor: "(automation)", At: at, App: true})
	out := o.Judge(item, o.moves[item])
	o.Legal[item], o.Holder[item] = out.Legal, out.Holder
	o.Automated = append(o.Automated, Automated{Item: item, To: to, Cause: cause, At: at})
	if o.byApp == nil {
		o.byApp = map[string]bool{}
	}
	o.byApp[item] = true
}

// Ambiguous reports whether the item's moves so far hold two of one second: GitHub dates
// changes to the second, so their order can only be told from how their values chain.
func (o *Oracle) Ambiguous(item string) bool {
	ms := o.moves[item]
	for i := 1; i < len(ms); i++ {
		if ms[i].At.Equal(ms[i-1].At) {
			return true
		}
	}
	return false
}

// Orders lists the orders of an item's moves that GitHub's reports cannot tell from the true
// one: moves of one second permuted so that each still leaves the value the one before it
// left it in. The true order comes first.
func (o *Oracle) Orders(item string) [][]Move {
	ms := o.moves[item]
	out := [][]Move{ms}
	var groups [][]Move
	for i := 0; i < len(ms); {
		j := i + 1
		for j < len(ms) && ms[j].At.Equal(ms[i].At) {
			j++
		}
		groups = append(groups, ms[i:j])
		i = j
	}
	var walk func(g int, prefix []Move)
	walk = func(g int, prefix []Move) {
		if len(out) > 200 {
			return
		}
		if g == len(groups) {
			if !slices.ContainsFunc(out, func(o []Move) bool { return slicesEqualMoves(o, prefix) }) {
				out = append(out, append([]Move{}, prefix...))
			}
			return
		}
		// The second's edits of fields come first, in their true order (as ralph-gate's
		// sequencer takes them); the true order, first of all, has them where they were made.
		var edits, grp []Move
		for _, mv := range groups[g] {
			if mv.Field != "" {
				edits = append(edits, mv)
			} else {
				grp = append(grp, mv)
			}
		}
		prefix = append(slices.Clone(prefix), edits...)
		used := make([]bool, len(grp))
		placed := func(d string) bool {
			i := slices.IndexFunc(grp, func(m Move) bool { return m.Delivery == d })
			return i < 0 || used[i]
		}
		// The app's writes of the second changed the card's value too: a move may follow one
		// (each used at most once; they are no moves, so no order holds them).
		var writes []Move
		for _, wr := range o.writes[item] {
			if wr.At.Equal(groups[g][0].At) {
				writes = append(writes, wr)
			}
		}
		wrote := make([]bool, len(writes))
		// Within one second each move must leave the value the one before it left (an app
		// write between two seconds may change it, so seconds are not chained to each other).
		// A lifecycle event sets no value: it goes anywhere in its second.
		start := ""
		if len(grp) > 0 {
			start = grp[0].From
		}
		for _, mv := range grp {
			if mv.Lifecycle == "" {
				start = mv.From
				if !mv.NoFrom {
					break
				}
			}
		}
		var perm func(cur []Move, value string)
		perm = func(cur []Move, value string) {
			if len(cur) == len(prefix)+len(grp) {
				walk(g+1, cur)
				return
			}
			for i, mv := range grp {
				if used[i] || mv.waits(placed) {
					continue
				}
				next := value
				if mv.Lifecycle == "" {
					if !mv.follows(value) {
						continue
					}
					next = mv.leaves()
				}
				used[i] = true
				perm(append(cur, mv), next)
				used[i] = false
			}
			for i, wr := range writes {
				if !wrote[i] && wr.From == value && len(out) <= 200 {
					wrote[i] = true
					perm(cur, wr.To)
					wrote[i] = false
				}
			}
		}
		perm(append([]Move{}, prefix...), start)
		for _, wr := range writes {
			if wr.From != start {
				perm(append([]Move{}, prefix...), wr.From) // (the second began with a write of the app's)
			}
		}
	}
	walk(0, nil)
	return out
}

// follows reports whether the move can come when the card shows value: it left that value, or
// its report did not say what it left.
func (mv Move) follows(value string) bool { return mv.NoFrom || mv.From == value }

// leaves is the value the move leaves on the card: its To, or for a raced façade move the
// value it was decided on (its write, recorded apart, moves the card on).
func (mv Move) leaves() string {
	if mv.Raced {
		return mv.From
	}
	return mv.To
}

// waits reports whether the move must wait for one of the given moves not yet placed (After).
func (mv Move) waits(placed func(delivery string) bool) bool {
	return mv.After != "" && !placed(mv.After)
}

func slicesEqualMoves(a, b []Move) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Delivery != b[i].Delivery {
			return false
		}
	}
	return true
}

// legalBefore is an item's legal state after its moves dated before t.
func (o *Oracle) legalBefore(item string, t time.Time) string {
	var before []Move
	for _, mv := range o.moves[item] {
		if mv.At.Before(t) {
			before = append(before, mv)
		}
	}
	return o.Judge(item, before).Legal
}

// Moves returns an item's moves in true order.
func (o *Oracle) Moves(item string) []Move { return o.moves[item] }

// IsLock reports whether a state is a lock (the holder matters only there).
func (o *Oracle) IsLock(state string) bool { return o.m.IsLock(state) }

// Compare lists how what an app left (the board's value, the lock holder and how many times
// each delivery was explained as a violation) differs from an outcome.
func Compare(item, board, holder string, isLock bool, explained map[string]int, out Outcome) []string {
	var diffs []string
	if board != out.Legal {
		diffs = append(diffs, fmt.Sprintf("%s ends in %s, want %s", item, show(board), show(out.Legal)))
	}
	if isLock && holder != out.Holder {
		diffs = append(diffs, fmt.Sprintf("%s: lock held by %q, want %q", item, holder, out.Holder))
	}
	for d, n := range explained {
		v, ok := out.Violations[d]
		switch {
		case !ok && out.Allowed[d] != "":
			diffs = append(diffs, fmt.Sprintf("%s: %s explained as a violation, but it was %s", item, d, out.Allowed[d]))
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s: %s explained as a violation, but it was no move anyone made", item, d))
		case n != 1:
			diffs = append(diffs, fmt.Sprintf("%s: %s (%s) explained %d times", item, d, v, n))
		}
	}
	for d, v := range out.Violations {
		if explained[d] == 0 {
			diffs = append(diffs, fmt.Sprintf("%s: %s (%s) never explained", item, d, v))
		}
	}
	return diffs
}

// Check compares an item against every order of its moves GitHub's reports cannot tell from
// the true one; it returns nothing when one matches, else the differences from the true order.
func (o *Oracle) Check(item, board, holder string, explained map[string]int) []string {
	var first []string
	for k, order := range o.Orders(item) {
		out := o.Judge(item, order)
		for d := range out.Quiet {
			delete(out.Violations, d) // never explained (evaluate)
		}
		diffs := Compare(item, board, holder, o.IsLock(out.Legal), explained, out)
		if o.IssueClosed != nil && o.IssueClosed(item) != out.Closed {
			diffs = append(diffs, fmt.Sprintf("%s: issue closed=%v, want closed=%v", item, o.IssueClosed(item), out.Closed))
		}
		if len(diffs) == 0 {
			return nil
		}
		if k == 0 {
			first = diffs
		}
	}
	return first
}

func show(s string) string {
	if s == "" {
		return "(no state)"
	}
	return s
}

// ItemMove is one move of the true history and the item it moved.
type ItemMove struct {
	Item string
	Move Move
}

// Interleavings lists the orders of moves (given in true order) that GitHub's reports cannot
// tell from the true one across items: GitHub dates changes to the second, so moves of
// different items made in one second may have come in any order, and one item's in any order
// that chains (as Orders). With families this matters: a parent's move cascades onto its
// children, a child's converges its parent. The true order comes first, then the orders
// that change one second only, then the others; at most limit.
func Interleavings(moves []ItemMove, limit int) [][]ItemMove {
	var groups [][]ItemMove
	for i := 0; i < len(moves); {
		j := i + 1
		for j < len(moves) && moves[j].Move.At.Equal(moves[i].Move.At) {
			j++
		}
		groups = append(groups, moves[i:j])
		i = j
	}
	alternatives := make([][][]ItemMove, len(groups)) // each second's orders, its true one first
	for g, grp := range groups {
		alternatives[g] = interleave(grp, limit)
	}
	out := [][]ItemMove{moves}
	seen := map[string]bool{key(moves): true}
	add := func(order []ItemMove) {
		if k := key(order); !seen[k] && len(out) < limit {
			seen[k] = true
			out = append(out, order)
		}
	}
	// One second changed at a time.
	for g := range groups {
		for _, alt := range alternatives[g][1:] {
			var order []ItemMove
			for h := range groups {
				if h == g {
					order = append(order, alt...)
				} else {
					order = append(order, groups[h]...)
				}
			}
			add(order)
		}
	}
	// Then every combination, as long as there is room.
	var walk func(g int, prefix []ItemMove)
	walk = func(g int, prefix []ItemMove) {
		if len(out) >= limit {
			return
		}
		if g == len(groups) {
			add(append([]ItemMove{}, prefix...))
			return
		}
		for _, alt := range alternatives[g] {
			walk(g+1, append(prefix, alt...))
		}
	}
	walk(0, nil)
	return out
}

// interleave lists the orders of one second's moves that GitHub's reports cannot tell apart:
// any interleaving across items, and within an item any order in which each move leaves the
// value the one before it left (as Orders; a lifecycle event anywhere); the given order
// first; at most limit.
func interleave(all []ItemMove, limit int) [][]ItemMove {
	// Fields' edits first, in their true order (as Orders), then the moves in any order.
	var edits, grp []ItemMove
	for _, im := range all {
		if im.Move.Field != "" {
			edits = append(edits, im)
		} else {
			grp = append(grp, im)
		}
	}
	var out [][]ItemMove
	used := make([]bool, len(grp))
	placed := func(d string) bool {
		i := slices.IndexFunc(grp, func(im ItemMove) bool { return im.Move.Delivery == d })
		return i < 0 || used[i]
	}
	cur := map[string]string{} // each item's value (and each of its fields') so far in the second
	for i := len(grp) - 1; i >= 0; i-- {
		if grp[i].Move.Lifecycle == "" {
			cur[chainKey(grp[i])] = grp[i].Move.From
		}
	}
	var rec func(order []ItemMove)
	rec = func(order []ItemMove) {
		if len(out) >= limit {
			return
		}
		if len(order) == len(edits)+len(grp) {
			out = append(out, append([]ItemMove{}, order...))
			return
		}
		enabled := func(i int) bool {
			im := grp[i]
			return !used[i] && (im.Move.Lifecycle != "" || im.Move.follows(cur[chainKey(im)])) && !im.Move.waits(placed)
		}
		// A write of the app's is no move: it changes its card's value only, so it commutes
		// with every move of another item. When it is the one move of its card that can come
		// now, the orders that take it later are the same as taking it now: it is taken now,
		// alone (a second of many writes to many cards would otherwise fill the limit with
		// orders that differ in nothing).
		next := -1
		for i, im := range grp {
			if !im.Move.Wrote || !enabled(i) {
				continue
			}
			alone := true
			for j, o := range grp {
				if j != i && o.Move.Lifecycle == "" && chainKey(o) == chainKey(im) && enabled(j) {
					alone = false
				}
			}
			if alone {
				next = i
				break
			}
		}
		for i, im := range grp {
			event, k := im.Move.Lifecycle != "", chainKey(im)
			if !enabled(i) || (next >= 0 && i != next) {
				continue
			}
			used[i] = true
			before := cur[k]
			if !event {
				cur[k] = im.Move.leaves()
			}
			rec(append(order, im))
			cur[k] = before
			used[i] = false
		}
	}
	rec(slices.Clone(edits))
	if len(out) == 0 || key(out[0]) != key(all) {
		// The given order first, even when its values do not chain (a value set between two
		// reports of one second by a write of the app's).
		out = append([][]ItemMove{append([]ItemMove{}, all...)}, out...)
	}
	return out
}

// chainKey names the chain a move's values belong to: its item's card, or one of its fields.
func chainKey(im ItemMove) string {
	if im.Move.Field != "" {
		return im.Item + "\x00" + im.Move.Field
	}
	return im.Item
}

// AsSequenced is the order of moves (given in true order) in which, within each second, the
// fields' edits come first, then the card moves, then the lifecycle events, each kind in its
// true order: the order ralph-gate's sequencer gives an item's reports of one second (and one
// of the orders Interleavings may reach only late, when a second holds many moves).
func AsSequenced(moves []ItemMove) []ItemMove {
	out := make([]ItemMove, 0, len(moves))
	rank := func(m Move) int {
		switch {
		case m.Field != "":
			return 0
		case m.Lifecycle == "":
			return 1
		}
		return 2
	}
	for i := 0; i < len(moves); {
		j := i + 1
		for j < len(moves) && moves[j].Move.At.Equal(moves[i].Move.At) {
			j++
		}
		for r := 0; r < 3; r++ {
			for _, im := range moves[i:j] {
				if rank(im.Move) == r {
					out = append(out, im)
				}
			}
		}
		i = j
	}
	return out
}

// Reordered is moves (given in true order) with each second's moves sorted stably by rank,
// and whether that is an order Interleavings allows (one GitHub's reports cannot tell from the
// true one: each item's card moves chain; a lifecycle event anywhere in its second). It lets a
// check try first the order an implementation took, which Interleavings may reach only late
// when a second holds many moves.
func Reordered(moves []ItemMove, rank func(ItemMove) int) ([]ItemMove, bool) {
	out := make([]ItemMove, 0, len(moves))
	for i := 0; i < len(moves); {
		j := i + 1
		for j < len(moves) && moves[j].Move.At.Equal(moves[i].Move.At) {
			j++
		}
		grp := append([]ItemMove{}, moves[i:j]...)
		cur := map[string]string{} // each item's value (and each of its fields') so far in the second
		for k := len(grp) - 1; k >= 0; k-- {
			if grp[k].Move.Lifecycle == "" {
				cur[chainKey(grp[k])] = grp[k].Move.From
			}
		}
		sort.SliceStable(grp, func(a, b int) bool { return rank(grp[a]) < rank(grp[b]) })
		seen := map[string]bool{}
		for _, im := range grp {
			if im.Move.waits(func(d string) bool {
				return seen[d] || !slices.ContainsFunc(grp, func(o ItemMove) bool { return o.Move.Delivery == d })
			}) {
				return nil, false
			}
			seen[im.Move.Delivery] = true
			if im.Move.Lifecycle != "" {
				continue
			}
			if !im.Move.follows(cur[chainKey(im)]) {
				return nil, false
			}
			cur[chainKey(im)] = im.Move.leaves()
		}
		out = append(out, grp...)
		i = j
	}
	return out, true
}

// key names an order by its deliveries.
func key(order []ItemMove) string {
	var b strings.Builder
	for _, im := range order {
		b.WriteString(im.Move.Delivery)
		b.WriteByte(',')
	}
	return b.String()
}
