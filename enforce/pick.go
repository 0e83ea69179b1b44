package enforce

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
// order; with Claim, the handoff that locked it (Best is then as the claim left it: locked,
// in the state the claim moved it to) and the issues lost to other claimers.
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

// maxClaimRounds bounds how often a claim ranks the project afresh after losing every
// candidate to other claimers (new work may have become eligible meanwhile).
const maxClaimRounds = 3

// Pick ranks the open, unlocked, unblocked issues in a state (policy.Pick) and, with Claim,
// locks the best one it can for the caller: concurrent claimers never get the same issue.
func (f *Facade) Pick(ctx context.Context, b Board, req PickRequest) (PickResult, error) {
	if err := f.Machine().RequireState(ArgPickState, req.State); err != nil {
		var r *policy.Refusal
		if errors.As(err, &r) {
			r.Tried = fmt.Sprintf("Unknown workflow state %q", req.State)
		}
		return PickResult{}, err
	}
	if _, _, err := policy.Pick(nil, req.State, req.MaxEstimate); err != nil {
		return PickResult{}, err
	}
	if err := f.roleMayPick(req); err != nil {
		return PickResult{}, err
	}
	var lockState string
	inPlace := req.Claim && f.claimsInPlace(req)
	takeOver := req.Claim && !inPlace && f.takesOver(req)
	if req.Claim {
		if err := f.permit(req.Handoff); err != nil {
			return PickResult{}, err
		}
		if !inPlace && !takeOver {
			st, err := f.claimState(req)
			if err != nil {
				return PickResult{}, err
			}
			lockState = st
		}
	}
	target := lockState
	if target == "" && !takeOver && req.Handoff.Command != "" {
		target, _ = f.claimState(req) // what the issue would enter, for its requirements
	}
	ranked, lacking, err := f.rank(ctx, b, req, target, nil)
	if err != nil {
		return PickResult{}, err
	}
	res := PickResult{Alternatives: []Pick{}, Passed: lacking}
	if !req.Claim {
		if len(ranked) > 0 {
			res.Best, res.Alternatives = &ranked[0], ranked[1:]
		}
		return res, nil
	}
	// A claim tries every candidate, best first, and gives up only when nothing eligible is
	// left: when all were lost to other claimers, the project is ranked afresh.
	tried := map[string]bool{}
	for round := 0; round < maxClaimRounds && len(ranked) > 0; round++ {
		lost := false
		for i, p := range ranked {
			tried[p.Item.ID] = true
			claim := func() (HandoffResult, error) { return f.claim(ctx, b, p.Item, req.Handoff, lockState) }
			switch {
			case inPlace:
				claim = func() (HandoffResult, error) { return f.claimIntegration(ctx, b, p.Item, req.Handoff) }
			case takeOver:
				claim = func() (HandoffResult, error) { return f.claimExpired(ctx, b, p.Item, req.Handoff) }
			}
			hr, err := claim()
			var refusal *policy.Refusal
			switch {
			case err == nil:
				res.Best, res.Alternatives, res.Claimed = &ranked[i], ranked[i+1:], &hr
				// The best issue as it is now: claimed, in the state the claim moved it to.
				res.Best.Locked = true
				if hr.NewState != "" {
					res.Best.Item.State = hr.NewState
				}
				return res, nil
			case errors.As(err, &refusal):
				res.Passed = append(res.Passed, Passed{Item: p.Item, Reason: refusal.Error()})
			case errors.Is(err, errClaimLost):
				res.Passed = append(res.Passed, Passed{Item: p.Item, Reason: err.Error()})
				lost = true
			default:
				return res, err
			}
		}
		if !lost {
			break // every candidate refused: ranking again would refuse them again
		}
		if ranked, _, err = f.rank(ctx, b, req, target, tried); err != nil {
			return res, err
		}
	}
	return res, nil
}

// claimState is the lock state a claim hands the picked issue off to: the lock intent of the
// caller's command, which an agent must be able to enter from req.State.
func (f *Facade) claimState(req PickRequest) (string, error) {
	m := f.Machine()
	cmd, _ := f.CanonicalCommand(req.Handoff.Command)
	st, err := m.ResolveIntent(cmd, lockIntent)
	if err != nil {
		var lockers []string
		for _, c := range m.Commands() {
			if _, err := m.ResolveIntent(c, lockIntent); err == nil {
				lockers = append(lockers, c)
			}
		}
		why := fmt.Sprintf("a claim locks the issue with %s's lock intent, and %s has none", cmd, cmd)
		retry := policy.Retry{With: []policy.Suggestion{{Arg: ArgClaim, Kind: policy.Literal, Values: []string{"false"}}}}
		if len(lockers) > 0 {
			retry.With = append([]policy.Suggestion{{Arg: policy.ArgCommand, Kind: policy.Word, Values: lockers}}, retry.With...)
		}
		return "", policy.NewRetryRefusal(fmt.Sprintf("Claiming an issue for command %s", cmd), why, retry).Because(policy.RuleCommand)
	}
	if slices.Contains(m.AllowedNext(req.State, policy.ActorAgent), st) {
		return st, nil
	}
	var from []string
	for _, s := range m.States() {
		if s != st && slices.Contains(m.AllowedNext(s, policy.ActorAgent), st) {
			from = append(from, s)
		}
	}
	tried := fmt.Sprintf("Claiming an issue in %s for command %s", req.State, cmd)
	why := fmt.Sprintf("a claim moves the issue to %s, and an agent may not move an issue from %s to %s", st, req.State, st)
	retry := policy.Retry{With: []policy.Suggestion{{Arg: ArgClaim, Kind: policy.Literal, Values: []string{"false"}}}}
	if len(from) > 0 {
		retry.With = append([]policy.Suggestion{{Arg: ArgPickState, Kind: policy.Text, Values: from}}, retry.With...)
	}
	return "", policy.NewRetryRefusal(tried, why, retry).Because(policy.RuleTransition)
}

// rank reads the projects' open, unlocked items in req.State and ranks them (policy.Pick),
// leaving out the items in skip, and those that lack a field target requires of an agent
// (workflow.requirements; the field values come with the page): those are returned as passed,
// with why. (A merged pull request a requirement asks is not on the page: the claim's handoff
// checks it.)
func (f *Facade) rank(ctx context.Context, b Board, req PickRequest, target string, skip map[string]bool) ([]Pick, []Passed, error) {
	var cands []policy.Candidate
	byID := map[string]Item{}
	lacking := []Passed{}
	for _, p := range req.Projects {
		after := ""
		for page := 0; page < maxPickPages; page++ {
			pg, err := b.ProjectItems(ctx, p.Owner, p.Number, after)
			if err != nil {
				return nil, nil, err
			}
			for _, it := range pg.Items {
				if it.ContentType != ContentIssue || it.Archived || it.State != req.State || !it.Open || skip[it.ID] {
					continue
				}
				rec, _, err := f.items.load(ctx, it.ID)
				if err != nil {
					return nil, nil, err
				}
				locked := f.Machine().IsLock(it.State) || rec.LockHolder != ""
				if f.takesOver(req) && rec.LockHolder != "" && !strings.EqualFold(rec.LockHolder, req.Handoff.Agent) &&
					f.Machine().LockExpired(rec.LockSince, f.now()) {
					locked = false // an expired lock: a claim takes it over (claimExpired)
				}
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
		return nil, nil, err
	}
	ranked := []Pick{}
	if best != nil {
		for _, c := range append([]policy.Candidate{*best}, alts...) {
			it := byID[c.Key]
			// Eligible, but lacking what target requires of an agent: not offered, and said why.
			if target != "" {
				if why := f.Machine().Lacks(target, policy.Member{Fields: it.Fields, MergedPR: true}, policy.ActorAgent); why != "" {
					lacking = append(lacking, Passed{Item: it, Reason: why})
					continue
				}
			}
			ranked = append(ranked, Pick{Item: it, Locked: c.Locked})
		}
	}
	return ranked, lacking, nil
}

// takesOver: a claim in a lock state takes over an item whose lock expired (workflow.locks.ttl),
// rather than moving an item into a lock.
func (f *Facade) takesOver(req PickRequest) bool {
	return f.Machine().IsLock(req.State) && f.Machine().LockTTL() > 0
}

// claimExpired takes over an item's expired lock for h.Agent: a handoff to the state it is in,
// with take_over (takeover.go). Another claimer that took it first makes it a refusal.
func (f *Facade) claimExpired(ctx context.Context, b Board, it Item, h Handoff) (HandoffResult, error) {
	h.Intent, h.ToState, h.TakeOver = "", it.State, true
	res, err := f.Handoff(ctx, b, it, h)
	var r *policy.Refusal
	if errors.As(err, &r) && r.TakeOver && r.Rule != policy.RuleRole {
		// Another claimer took it over first (the lock is fresh again, or changed hands
		// while this one was deciding): lost, and the project is ranked again.
		return HandoffResult{}, fmt.Errorf("#%d: %w", it.Number, errClaimLost)
	}
	return res, err
}

// roleMayPick refuses to look for work in a state the agent's role does not own: a worker
// polls its own states (docs/ENFORCEMENT.md, Worker roles).
func (f *Facade) roleMayPick(req PickRequest) error {
	role, roles := req.Handoff.Role, f.Machine().Roles()
	if role == "" || !roles.Has(role) {
		return nil
	}
	owns := roles.Owns(role)
	if slices.Contains(owns, req.State) {
		return nil
	}
	return policy.NewRetryRefusal(fmt.Sprintf("%s (%s) looked for work in %s", req.Handoff.Agent, role, req.State),
		fmt.Sprintf("the %s role works on %s; %s", role, strings.Join(owns, ", "), ownedByText(roles.Owners(req.State))),
		policy.Retry{With: []policy.Suggestion{{Arg: ArgPickState, Kind: policy.Text, Values: owns}}}).Because(policy.RuleRole)
}

// ownedByText says which roles own a state: "the analyst role owns it".
func ownedByText(owners []string) string {
	switch len(owners) {
	case 0:
		return "no agent role owns it"
	case 1:
		return "the " + owners[0] + " role owns it"
	}
	return "the " + strings.Join(owners, " and ") + " roles own it"
}
