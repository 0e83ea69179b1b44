package enforce

import (
	"context"
	"fmt"

	"github.com/ralph-gate/ralph-gate/policy"
)

// gateInputs gathers what the gates need for a move that the table allows: open blockers,
// the group's states and the WIP count. Each is read only when its gate can apply, so a plain
// legal move costs no extra call.
func (s *Service) gateInputs(ctx context.Context, b Board, it Item, pc policy.Change) (policy.Change, error) {
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
		group, err := s.group(ctx, b, it)
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

func stateOrOpen(r Relative) string {
	if r.State != "" {
		return r.State
	}
	return "open"
}

// group is the issue's group for the convergence gate: its siblings (the parent's other
// sub-issues) or, for a parent, its own sub-issues; only members on the same project count.
func (s *Service) group(ctx context.Context, b Board, it Item) ([]policy.Member, error) {
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
		out = append(out, policy.Member{Number: c.Number, Title: c.Title, State: c.State})
	}
	return out, nil
}
