package enforce

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ralph-gate/ralph-gate/policy"
)

// ProjectRef names an organization project.
type ProjectRef struct {
	Owner  string
	Number int
}

// PickRequest is pick_actionable_issue's question.
type PickRequest struct {
	Projects    []ProjectRef // all on one board (installation)
	State       string
	MaxEstimate string
	// Claim locks the best issue for Handoff.Agent with Handoff.Command's lock intent.
	Claim   bool
	Handoff Handoff
}

// Pick is a ranked candidate with its item.
type Pick struct {
	Item   Item
	Locked bool
}

// PickResult is the answer: the best issue (nil when nothing qualifies) and the others in rank
// order; with Claim, the handoff that locked it and the issues lost to other claimers.
type PickResult struct {
	Best         *Pick
	Alternatives []Pick
	Claimed      *HandoffResult
	// Passed are better-ranked issues that could not be claimed, with why.
	Passed []Passed
}

// Passed is a candidate a claim skipped.
type Passed struct {
	Item   Item
	Reason string
}

// maxClaimAttempts bounds how many candidates one claim tries before giving up.
const maxClaimAttempts = 10

// Pick ranks the open, unlocked, unblocked issues in a state (policy.Pick) and, with Claim,
// locks the best one it can for the caller: concurrent claimers never get the same issue.
func (f *Facade) Pick(ctx context.Context, b Board, req PickRequest) (PickResult, error) {
	if !f.machine.IsState(req.State) {
		states := f.machine.States()
		return PickResult{}, &policy.Refusal{
			Tried:    fmt.Sprintf("Unknown workflow state %q", req.State),
			Why:      "Valid states are " + strings.Join(states, ", ") + " (case-sensitive)",
			Recovery: "retry with workflowState set to one of: " + strings.Join(states, ", "),
			Options:  states,
		}
	}
	if _, _, err := policy.Pick(nil, req.State, req.MaxEstimate); err != nil {
		return PickResult{}, err
	}
	var lockState string
	if req.Claim {
		if err := f.permit(req.Handoff); err != nil {
			return PickResult{}, err
		}
		st, err := f.machine.ResolveIntent(req.Handoff.Command, lockIntent)
		if err != nil {
			return PickResult{}, err
		}
		lockState = st
	}
	var cands []policy.Candidate
	byID := map[string]Item{}
	for _, p := range req.Projects {
		after := ""
		for page := 0; page < maxPickPages; page++ {
			pg, err := b.ProjectItems(ctx, p.Owner, p.Number, after)
			if err != nil {
				return PickResult{}, err
			}
			for _, it := range pg.Items {
				if it.ContentType != ContentIssue || it.Archived || it.State != req.State || !it.Open {
					continue
				}
				locked := f.machine.IsLock(it.State)
				rec, _, err := f.items.load(ctx, it.ID)
				if err != nil {
					return PickResult{}, err
				}
				locked = locked || rec.LockHolder != ""
				cands = append(cands, policy.Candidate{Number: it.Number, Title: it.Title, State: it.State, Estimate: it.Estimate,
					Priority: it.Priority, Open: it.Open, Locked: locked, OpenBlockers: it.OpenBlockers, Key: it.ID})
				byID[it.ID] = it
			}
			if !pg.HasNext || pg.EndCursor == "" {
				break
			}
			after = pg.EndCursor
		}
	}
	best, alts, err := policy.Pick(cands, req.State, req.MaxEstimate)
	if err != nil {
		return PickResult{}, err
	}
	take := func(c policy.Candidate) Pick {
		return Pick{Item: byID[c.Key], Locked: c.Locked}
	}
	res := PickResult{Alternatives: []Pick{}, Passed: []Passed{}}
	ranked := []Pick{}
	if best != nil {
		ranked = append(ranked, take(*best))
		for _, c := range alts {
			ranked = append(ranked, take(c))
		}
	}
	if !req.Claim {
		if len(ranked) > 0 {
			res.Best, res.Alternatives = &ranked[0], ranked[1:]
		}
		return res, nil
	}
	for i, p := range ranked {
		if i >= maxClaimAttempts {
			break
		}
		hr, err := f.claim(ctx, b, p.Item, req.Handoff, lockState)
		var refusal *policy.Refusal
		switch {
		case err == nil:
			res.Best, res.Alternatives, res.Claimed = &ranked[i], ranked[i+1:], &hr
			res.Best.Locked = true
			return res, nil
		case errors.As(err, &refusal):
			res.Passed = append(res.Passed, Passed{Item: p.Item, Reason: refusal.Error()})
		case errors.Is(err, errClaimLost):
			res.Passed = append(res.Passed, Passed{Item: p.Item, Reason: err.Error()})
		default:
			return res, err
		}
	}
	if len(ranked) > maxClaimAttempts {
		res.Alternatives = ranked[maxClaimAttempts:]
	}
	return res, nil
}
