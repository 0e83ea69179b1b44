package enforce

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/ralph-gate/ralph-gate/policy"
)

// gateQuery is a move the table allows, whose gates need their inputs.
type gateQuery struct {
	board  Board
	it     Item // the item moved, as read
	change policy.Change
	// at is when the move was made (zero: a move being made now): the group's states are
	// what they were then.
	at time.Time
	// m is the workflow of the item's organization.
	m *policy.Machine
}

// errGroupUnsettled: a group member's history up to the judged move is still being judged.
var errGroupUnsettled = errors.New("a group member's history is still being judged")

// gateInputs gathers what the gates need for a move that the table allows: open blockers,
// the group's states, the WIP count and the repository's integration under way. Each is read only when its gate can apply, so a plain
// legal move costs no extra call.
//
// A move is judged once its place in the history is certain, seconds after it was made: the
// group's states are each member's legal state at q.at, read back from its own judged
// history. errGroupUnsettled: a member's history up to then is still being judged.
func (c *core) gateInputs(ctx context.Context, q gateQuery) (policy.Change, error) {
	m := q.m
	if m == nil {
		m = c.machineAt(q.it.Owner, q.at)
	}
	g, it, pc := m.Gates(), q.it, q.change
	if g.Blockers && m.IsLock(pc.To) && it.OpenBlockers > 0 && it.ContentID != "" {
		fam, err := q.board.Family(ctx, it.ContentID, it.ProjectID)
		if err != nil {
			return pc, fmt.Errorf("read blockers: %w", err)
		}
		for _, r := range fam.OpenBlockers {
			pc.OpenBlockers = append(pc.OpenBlockers, policy.Member{Number: r.Number, Title: r.Title, State: stateOrOpen(r)})
		}
	}
	if g.Convergence && pc.To != "" && pc.To == m.ConvergenceGateState() && it.ContentType == ContentIssue {
		group, err := c.group(ctx, q)
		if err != nil {
			return pc, err
		}
		pc.Group = group
	}
	if limit, ok := g.WIPLimits[pc.To]; ok && limit >= 0 {
		n, err := c.store().CountInState(ctx, it.ProjectID, pc.To)
		if err != nil {
			return pc, fmt.Errorf("count work in progress: %w", err)
		}
		pc.WIPCount = n
	}
	in, err := c.integrating(ctx, m, it, pc)
	if err != nil {
		return pc, fmt.Errorf("read the repository's integration: %w", err)
	}
	pc.Integrating = in
	return pc, nil
}

// withItem adds to a move being made now (a handoff, a claim, advance_children) what
// workflow.requirements check, as read with its item (no request of its own: the board's item
// reads select it when requirements are configured): the item as it stands is the item at
// the move.
func (c *core) withItem(pc policy.Change, it Item) policy.Change {
	pc.Number = it.Number
	if !c.machineAt(it.Owner, time.Time{}).HasRequirements() {
		return pc
	}
	pc.Fields, pc.FieldOptions = it.Fields, it.FieldOptions
	pc.MergedPR = pc.MergedPR || it.MergedPR
	return pc
}

// withHistory is withItem for a step of the item's history judged after it was made, at
// `at`: the required fields as the history held them then (its edits are steps of it, taken
// in before the step when made before it or in its second), and a pull request merged by the
// step's second (docs/ENFORCEMENT.md "Requirements"). A field the record does not hold yet
// (the item was recorded before the field was required) is the value the first edit of it
// waiting to be taken in left, or else as read.
func (c *core) withHistory(pc policy.Change, w *walk, at time.Time) policy.Change {
	own := pc.MergedPR // (a merge's own move)
	pc = c.withItem(pc, w.it)
	if !c.machineAt(w.org(), at).HasRequirements() {
		return pc
	}
	held := w.rec.fieldValues()
	first := map[string]Observation{}
	for _, o := range w.pending {
		if _, ok := w.rec.Fields[o.Field]; o.Field != "" && !ok && o.FromKnown {
			if f, seen := first[o.Field]; !seen || o.At.Before(f.At) {
				first[o.Field] = o
			}
		}
	}
	for name, o := range first {
		if held == nil {
			held = map[string]string{}
		}
		held[name] = o.From
	}
	pc.Fields = overlay(w.it.Fields, held)
	pc.MergedPR = own || mergedBy(w.it.MergedPR, w.it.MergedAt, at)
	return pc
}

// mergedBy reports whether a merged pull request closing the issue was merged by `at`'s
// second (zero: now, or GitHub did not say when).
func mergedBy(merged bool, mergedAt, at time.Time) bool {
	return merged && (at.IsZero() || mergedAt.IsZero() || !mergedAt.Truncate(time.Second).After(at.Truncate(time.Second)))
}

// overlay is read with the values of held laid over it (nil when both are empty).
func overlay(read, held map[string]string) map[string]string {
	if len(held) == 0 {
		return read
	}
	out := maps.Clone(read)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, held)
	return out
}

// fieldsAt is a relative's required field values as they stood before the second of a step
// made at `at` (as the group's states do: relatives' changes of one second are not ordered
// across items), zero: now, as read. As read when GitHub says nothing of the item changed from
// that second on: an edit whose report is late or lost is counted too. Else its record's, with
// the edits its history took in from that second on undone (each edit says the value it left);
// a field the record does not hold, as read.
func (c *core) fieldsAt(ctx context.Context, m *policy.Machine, r Relative, rec Record, at time.Time) (map[string]string, error) {
	second := at.Truncate(time.Second)
	if !m.HasRequirements() || at.IsZero() || len(rec.Fields) == 0 || (!r.UpdatedAt.IsZero() && r.UpdatedAt.Before(second)) {
		return r.Fields, nil
	}
	held := rec.fieldValues()
	edits, err := c.store().FieldEdits(ctx, r.ItemID, second)
	if err != nil {
		return nil, fmt.Errorf("required fields of #%d: %w", r.Number, err)
	}
	undone := map[string]bool{}
	for _, o := range edits {
		if _, ok := held[o.Field]; ok && !undone[o.Field] && o.FromKnown {
			held[o.Field], undone[o.Field] = o.From, true
		}
	}
	return overlay(r.Fields, held), nil
}

// memberOf is a relative as policy's automation plans see it, in its legal state, with its
// required fields as given and a pull request merged by `at`.
func memberOf(r Relative, legal string, fields map[string]string, at time.Time) policy.Member {
	return policy.Member{Number: r.Number, Title: r.Title, State: legal, Fields: fields, MergedPR: mergedBy(r.MergedPR, r.MergedAt, at)}
}

func stateOrOpen(r Relative) string {
	if r.State != "" {
		return r.State
	}
	return "open"
}

// group is the issue's group for the convergence gate: its siblings (the parent's other
// sub-issues) or, for a parent, its own sub-issues; only members on the same project count.
func (c *core) group(ctx context.Context, q gateQuery) ([]policy.Member, error) {
	it := q.it
	var source string
	switch {
	case it.ParentID != "":
		source = it.ParentID
	case it.SubIssues > 0:
		source = it.ContentID
	default:
		return nil, nil
	}
	fam, err := q.board.Family(ctx, source, it.ProjectID)
	if err != nil {
		return nil, fmt.Errorf("read group: %w", err)
	}
	if err := c.membersBelowUnsettled(ctx, q, fam.Children); err != nil {
		return nil, err
	}
	var out []policy.Member
	for _, r := range fam.Children {
		if r.ItemID == "" || r.ItemID == it.ID {
			continue
		}
		state, err := c.memberState(ctx, r, q.at)
		if err != nil {
			return nil, err
		}
		out = append(out, policy.Member{Number: r.Number, Title: r.Title, State: state})
	}
	return out, nil
}

// membersBelowUnsettled returns a groupUnsettled naming an item below a sibling member of the
// group whose history before the move is still being judged, or whose automation owed by then
// has not run: its convergence may move the member before the move (a sibling's own reports
// and its ancestors' are the member's and the item's relatives' to wait for). One query when
// nothing waits anywhere (the usual case); the members' families read only when something does.
func (c *core) membersBelowUnsettled(ctx context.Context, q gateQuery, members []Relative) error {
	if q.at.IsZero() {
		return nil // (a move made now: each member's own walk is settled, memberState)
	}
	// (Strictly before the move's second, automation owed too: relatives of one second do not
	// wait for each other.)
	before := q.at.Truncate(time.Second).Add(-time.Nanosecond)
	pending, err := c.store().PendingItemsBefore(ctx, before, q.it.ID, c.opts.AppLogin)
	if err != nil || len(pending) == 0 {
		return err
	}
	waiting := make(map[string]bool, len(pending))
	for _, id := range pending {
		waiting[id] = true
	}
	for _, r := range members {
		if r.ItemID == "" || r.ItemID == q.it.ID || r.SubIssues == 0 {
			continue
		}
		below := relativeItem(q.it, r)
		below.ParentID = "" // (its ancestors are the item's: waited for with the item's relatives)
		if err := c.eachRelative(ctx, q.board, below, func(d Relative, _ bool) (bool, error) { return waiting[d.ItemID], nil }); err != nil {
			return err
		}
	}
	return nil
}

// memberState is a group member's legal state when the move was made, not its board value
// now: the board may show a refused move that is about to be set back, or a later move. A
// member never recorded counts with its board value.
func (c *core) memberState(ctx context.Context, r Relative, at time.Time) (string, error) {
	if at.IsZero() {
		// A move being made now (a handoff): the member's legal state now, once its history
		// up to now is judged (no report of it waiting, no change on its card unjudged, nothing
		// of it still being written).
		rec, found, err := c.items.load(ctx, r.ItemID)
		if err != nil || !found || !rec.known() {
			return r.State, err
		}
		pending, err := c.store().PendingObservations(ctx, r.ItemID)
		if err != nil {
			return "", fmt.Errorf("load reports of item %s: %w", r.ItemID, err)
		}
		unsettled := r.State != rec.ObservedState || rec.RevertPending != "" || rec.AutomateState != "" ||
			(!rec.ObservedAt.IsZero() && r.StateUpdatedAt.After(rec.ObservedAt))
		for _, o := range pending {
			unsettled = unsettled || (o.Actor != c.opts.AppLogin && o.Field == "") // (a field's edit moves no card)
		}
		if unsettled {
			return "", groupUnsettled{member: r.ItemID, number: r.Number}
		}
		return rec.LastLegalState, nil
	}
	legal, known, err := c.store().LegalStateAt(ctx, r.ItemID, at)
	switch {
	case err != nil:
		return "", fmt.Errorf("load item %s: %w", r.ItemID, err)
	case known:
		return legal, nil
	}
	_, found, err := c.items.load(ctx, r.ItemID)
	switch {
	case err != nil:
		return "", err
	case found:
		return "", groupUnsettled{member: r.ItemID, number: r.Number}
	}
	return r.State, nil
}
