package enforce

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ralph-gate/ralph-gate/policy"
	"github.com/ralph-gate/ralph-gate/store"
)

// gateInputs gathers what the gates need for a move that the table allows: open blockers,
// the group's states and the WIP count. Each is read only when its gate can apply, so a plain
// legal move costs no extra call.
//
// at is when the judged move was made (zero: a move being made now): the group's states are what they were then (a move is
// judged once its place in the history is certain, seconds later), each member's legal state
// read back from its own judged history. errGroupUnsettled: a member's history up to then is
// still being judged.
func (s *Service) gateInputs(ctx context.Context, b Board, it Item, pc policy.Change, at time.Time) (policy.Change, error) {
	g := s.machine.Gates()
	if g.Blockers && s.machine.IsLock(pc.To) && it.OpenBlockers > 0 && it.ContentID != "" {
		fam, err := b.Family(ctx, it.ContentID, it.ProjectID)
		if err != nil {
			return pc, fmt.Errorf("read blockers: %w", err)
		}
		for _, r := range fam.OpenBlockers {
			pc.OpenBlockers = append(pc.OpenBlockers, policy.Member{Number: r.Number, Title: r.Title, State: stateOrOpen(r)})
		}
	}
	if g.Convergence && pc.To != "" && pc.To == s.machine.ConvergenceGateState() && it.ContentType == ContentIssue {
		group, err := s.group(ctx, b, it, at)
		if err != nil {
			return pc, err
		}
		pc.Group = group
	}
	if limit, ok := g.WIPLimits[pc.To]; ok && limit >= 0 {
		n, err := s.store.CountInState(ctx, it.ProjectID, pc.To)
		if err != nil {
			return pc, fmt.Errorf("count work in progress: %w", err)
		}
		pc.WIPCount = n
	}
	return pc, nil
}

// errGroupUnsettled: a group member's history up to the judged move is still being judged.
var errGroupUnsettled = errors.New("a group member's history is still being judged")

func stateOrOpen(r Relative) string {
	if r.State != "" {
		return r.State
	}
	return "open"
}

// group is the issue's group for the convergence gate: its siblings (the parent's other
// sub-issues) or, for a parent, its own sub-issues; only members on the same project count.
func (s *Service) group(ctx context.Context, b Board, it Item, at time.Time) ([]policy.Member, error) {
	var source string
	switch {
	case it.ParentID != "":
		source = it.ParentID
	case it.SubIssues > 0:
		source = it.ContentID
	default:
		return nil, nil
	}
	fam, err := b.Family(ctx, source, it.ProjectID)
	if err != nil {
		return nil, fmt.Errorf("read group: %w", err)
	}
	var out []policy.Member
	for _, c := range fam.Children {
		if c.ItemID == "" || c.ItemID == it.ID {
			continue
		}
		// A member's legal state when the move was made, not its board value now: the board
		// may show a refused move that is about to be set back, or a later move.
		state := c.State
		if at.IsZero() {
			// A move being made now (a handoff): the members' legal states now.
			if rec, err := s.store.GetItem(ctx, c.ItemID); err == nil {
				state = rec.LastLegalState
			} else if !errors.Is(err, store.ErrNotFound) {
				return nil, fmt.Errorf("load item %s: %w", c.ItemID, err)
			}
		} else {
			legal, known, err := s.store.LegalStateAt(ctx, c.ItemID, at)
			switch {
			case err != nil:
				return nil, fmt.Errorf("load item %s: %w", c.ItemID, err)
			case known:
				state = legal
			default:
				if _, err := s.store.GetItem(ctx, c.ItemID); err == nil || !errors.Is(err, store.ErrNotFound) {
					return nil, fmt.Errorf("#%d: %w", c.Number, errGroupUnsettled)
				}
			}
		}
		out = append(out, policy.Member{Number: c.Number, Title: c.Title, State: state})
	}
	return out, nil
}
