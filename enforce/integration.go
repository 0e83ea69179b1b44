package enforce

// Integration, one item per repository: a worker role with `serialize: repository` (the
// integrator) works on at most one item of a repository at a time (docs/AUTOMATION.md).
//
// An item is being integrated from the moment an agent of that role claims it
// (pick_actionable_issue with claim: true) until it leaves the role's states, whoever moves it:
// the claim sits in the repository's slot, and a slot whose item has left the role's states
// is free (it is released when next looked at). While it is held, a move by an agent of the
// role out of its states on another item of the repository — on the board or through the
// façade — is refused, and so is a claim of another item.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/policy"
)

// Slot is a serialization slot as the store keeps it: the item a holder is integrating.
type Slot struct {
	Key         string // "integration:" + the repository, lower-cased
	ItemID      string
	Holder      string // the agent integrating it
	Role        string // the holder's role
	Repo        string // "owner/name"
	IssueNumber int
	Since       time.Time
}

// integrationSlot is the slot key of a repository.
func integrationSlot(repo string) string { return "integration:" + strings.ToLower(repo) }

// integrating is the repository's integration under way on another item, for a move that
// would start one (the actor's role serializes and owns the state left); nil when none.
func (c *core) integrating(ctx context.Context, m *policy.Machine, it Item, pc policy.Change) (*policy.Integration, error) {
	role := m.RoleOf(pc)
	if role == "" || it.Repo == "" || !m.SerializedFrom(role, pc.From) {
		return nil, nil
	}
	sl, live, err := c.liveSlot(ctx, integrationSlot(it.Repo))
	if err != nil || !live || sl.ItemID == it.ID {
		return nil, err
	}
	return &policy.Integration{Repo: sl.Repo, Number: sl.IssueNumber, Holder: sl.Holder}, nil
}

// liveSlot reads a slot and frees it when its item has left the holder's role's states.
func (c *core) liveSlot(ctx context.Context, key string) (Slot, bool, error) {
	sl, found, err := c.store().GetSlot(ctx, key)
	if err != nil || !found {
		return sl, false, err
	}
	live, err := c.stillIntegrated(ctx, sl)
	if err != nil || live {
		return sl, live, err
	}
	if _, err := c.store().ReleaseSlot(ctx, key, sl.ItemID); err != nil {
		return sl, false, err
	}
	zerolog.Ctx(ctx).Info().Str("repo", sl.Repo).Int("issue", sl.IssueNumber).Str("holder", sl.Holder).
		Msg("integration ended: the item left the integrating role's states")
	return sl, false, nil
}

// stillIntegrated: the slot's item is still in a state its holder's role owns.
func (c *core) stillIntegrated(ctx context.Context, sl Slot) (bool, error) {
	rec, found, err := c.items.load(ctx, sl.ItemID)
	if err != nil {
		return false, err
	}
	return found && slices.Contains(c.machineAt(ownerOfRepo(sl.Repo), time.Time{}).Roles().Owns(sl.Role), rec.LastLegalState), nil
}

// claimsInPlace reports whether a claim by this agent takes the item's repository slot
// instead of a lock: its role serializes and owns the state picked from.
func (f *Facade) claimsInPlace(req PickRequest) bool {
	return f.Machine().SerializedFrom(req.Handoff.Role, req.State)
}

// claimIntegration claims an item for integration: the repository's slot, without moving the
// card. A slot held for another live item refuses the claim, with a Recovery to wait.
func (f *Facade) claimIntegration(ctx context.Context, b Board, it Item, h Handoff) (HandoffResult, error) {
	cur, unlock, err := f.lockForClaim(ctx, b, it)
	if err != nil {
		return HandoffResult{}, err
	}
	defer unlock()
	cmd, _ := f.CanonicalCommand(h.Command)
	key := integrationSlot(cur.Repo)
	want := Slot{Key: key, ItemID: cur.ID, Holder: h.Agent, Role: h.Role, Repo: cur.Repo, IssueNumber: cur.Number, Since: f.now()}
	for range 2 { // a stale slot is freed once, then claimed
		held, won, err := f.store().ClaimSlot(ctx, want)
		if err != nil {
			return HandoffResult{}, fmt.Errorf("claim %s for #%d: %w", key, cur.Number, err)
		}
		if won {
			reason := fmt.Sprintf("claimed for integration: the only item of %s being integrated", cur.Repo)
			f.audit(ctx, AuditEntry{At: f.now(), ProjectID: cur.ProjectID, ItemID: cur.ID, IssueNumber: cur.Number, Repo: cur.Repo,
				Actor: h.Agent, ActorKind: policy.ActorAgent.String(), FromState: cur.State, ToState: cur.State,
				Verdict: VerdictHandoff, Rule: string(policy.RuleSerialized), Reason: reason, Cause: "mcp " + cmd})
			return HandoffResult{Item: cur, Command: cmd, PreviousState: cur.State, NewState: cur.State, Rule: string(policy.RuleSerialized),
				Reason: reason, Guidance: f.Guide(cur.State, ""), Warnings: []string{}}, nil
		}
		live, err := f.stillIntegrated(ctx, held)
		if err != nil {
			return HandoffResult{}, err
		}
		if live {
			return HandoffResult{}, &policy.Refusal{
				Tried: fmt.Sprintf("%s claimed #%d for integration", h.Agent, cur.Number),
				Why: fmt.Sprintf("%s#%d is being integrated by %s: the %s role integrates one item per repository at a time",
					held.Repo, held.IssueNumber, held.Holder, held.Role),
				Recovery: fmt.Sprintf("wait until #%d is integrated (it leaves %s), then retry; or pick an issue of another repository", held.IssueNumber, cur.State),
				Options:  []string{},
				Rule:     policy.RuleSerialized,
			}
		}
		if _, err := f.store().ReleaseSlot(ctx, key, held.ItemID); err != nil {
			return HandoffResult{}, err
		}
	}
	return HandoffResult{}, fmt.Errorf("#%d: %w", cur.Number, errClaimLost)
}
