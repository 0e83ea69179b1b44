package enforce

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ralph-gate/ralph-gate/policy"
)

// The four roles of the state ownership map (docs/ENFORCEMENT.md, Worker roles).
func ownershipRoles() map[string]policy.RoleSpec {
	return map[string]policy.RoleSpec{
		"analyst":    {Agents: []string{"analyst-*"}, Owns: []string{"Backlog", "Research Needed", "Research in Progress"}},
		"builder":    {Agents: []string{"builder-*"}, Owns: []string{"Ready for Plan", "Plan in Progress", "Plan in Review", "In Progress"}},
		"validator":  {Agents: []string{"validator-*"}, Owns: []string{"Plan in Review"}},
		"integrator": {Agents: []string{"integrator-*"}, Owns: []string{"In Review"}, Serialize: policy.SerializeRepository},
	}
}

// newRolesHarness is the harness with worker roles in a review mode; the roles' agents are
// agents, as config makes them.
func newRolesHarness(t *testing.T, mode string, items ...Item) *harness {
	t.Helper()
	h := newHarnessWith(t, func(s *policy.Spec) { s.ReviewMode = mode }, nil, items...)
	m := h.svc.Facade.Machine()
	roles, ps := policy.CompileRoles(m, ownershipRoles())
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	actors := policy.Actors{Agents: []string{"agent-*", "analyst-*", "builder-*", "validator-*", "integrator-*"}, Bypass: []string{"owner"}}
	h.svc = New(m.WithRoles(roles), actors, h.st, h.svc.Enforcer.now, h.svc.Enforcer.opts)
	return h
}

// Acceptance of worker roles on the board: a builder moving an item out of Research Needed is
// reverted with one comment naming both roles; an analyst's same move stays; escalation by
// any role stays.
func TestBoardMovesFollowTheRoles(t *testing.T) {
	h := newRolesHarness(t, policy.ReviewSkip, issueN("A", "Research Needed", 12), issueN("B", "Research Needed", 13), issueN("C", "In Progress", 14))
	h.adoptAll("A", "B", "C")
	res := h.process(h.board.move("A", "builder-2", "Research in Progress", h.now))
	if res.Verdict != VerdictReverted || h.state("A") != "Research Needed" {
		t.Fatalf("builder's move: %+v, state %q", res, h.state("A"))
	}
	if h.board.adds != 1 {
		t.Fatalf("want one comment, got %d", h.board.adds)
	}
	body := strings.Join(h.commentBodies(), "\n")
	for _, want := range []string{"builder-2", "(builder)", "the analyst role owns it", "leave it to an agent of the analyst role, or escalate to Human Needed"} {
		if !strings.Contains(body, want) {
			t.Errorf("comment lacks %q:\n%s", want, body)
		}
	}
	if es := h.audit("A"); len(es) == 0 || es[len(es)-1].Rule != string(policy.RuleRole) {
		t.Errorf("audit %+v, want the role rule", es)
	}
	if res := h.process(h.board.move("B", "analyst-1", "Research in Progress", h.now)); res.Verdict != VerdictAllowed {
		t.Errorf("analyst's move: %+v", res)
	}
	if res := h.process(h.board.move("C", "integrator-1", "Human Needed", h.now)); res.Verdict != VerdictAllowed {
		t.Errorf("escalation by another role: %+v", res)
	}
}

// Interactive review: a builder leaving Plan in Review is reverted, a validator's or a
// person's move stays; in skip mode the builder's move stays.
func TestReviewModeDecidesWhoLeavesReview(t *testing.T) {
	tests := []struct {
		mode, actor string
		want        Verdict
	}{
		{policy.ReviewInteractive, "builder-1", VerdictReverted},
		{policy.ReviewInteractive, "validator-1", VerdictAllowed},
		{policy.ReviewInteractive, "alice", VerdictAllowed},
		{policy.ReviewSkip, "builder-1", VerdictAllowed},
		{policy.ReviewAuto, "builder-1", VerdictAllowed},
	}
	for _, tt := range tests {
		h := newRolesHarness(t, tt.mode, issueN("A", "Plan in Review", 3))
		h.adoptAll("A")
		if res := h.process(h.board.move("A", tt.actor, "In Progress", h.now)); res.Verdict != tt.want {
			t.Errorf("%s, %s: %+v, want %s", tt.mode, tt.actor, res, tt.want)
		}
	}
}

// The façade follows the roles: a handoff out of a state the role does not own is refused
// with the owner named; a pick in such a state is refused with the role's states to retry.
func TestFacadeFollowsTheRoles(t *testing.T) {
	h := newRolesHarness(t, policy.ReviewSkip, issueN("A", "Research Needed", 5), issueN("B", "Ready for Plan", 6))
	h.adoptAll("A", "B")
	_, err := h.handoff("A", Handoff{Agent: "researcher-1", Role: "builder", Command: "research", Intent: "lock", Reason: "r"})
	var refusal *policy.Refusal
	if !errors.As(err, &refusal) || !strings.Contains(refusal.Error(), "the analyst role owns it") || h.state("A") != "Research Needed" {
		t.Fatalf("builder's handoff out of Research Needed: %v", err)
	}
	if res, err := h.handoff("A", Handoff{Agent: "researcher-1", Role: "analyst", Command: "research", Intent: "lock", Reason: "r"}); err != nil || res.NewState != "Research in Progress" {
		t.Fatalf("analyst's handoff: %+v %v", res, err)
	}
	req := PickRequest{Projects: []ProjectRef{{Owner: "acme", Number: 1}}, State: "Research Needed", Handoff: Handoff{Agent: "builder-1", Role: "builder"}}
	_, err = h.svc.Facade.Pick(context.Background(), h.board, req)
	if !errors.As(err, &refusal) || !strings.Contains(refusal.Error(), "Ready for Plan") || !strings.Contains(refusal.Error(), "the analyst role owns it") {
		t.Fatalf("builder picking in Research Needed: %v", err)
	}
	req.State = "Ready for Plan"
	if res, err := h.svc.Facade.Pick(context.Background(), h.board, req); err != nil || res.Best == nil || res.Best.Item.ID != "B" {
		t.Fatalf("builder picking in its own state: %+v %v", res, err)
	}
}

// Integration, one item per repository: of two integrators claiming In Review items of one
// repository at once exactly one succeeds; the other is told to wait for it; a board move by
// an integrator on another item of that repository is reverted and explained; once the item
// integrated leaves In Review, the repository is free again.
func TestIntegratorsSerializedPerRepository(t *testing.T) {
	a, b, c := issueN("A", "In Review", 21), issueN("B", "In Review", 22), issueN("C", "In Review", 23)
	c.Repo = "acme/other"
	h := newRolesHarness(t, policy.ReviewSkip, a, b, c)
	h.adoptAll("A", "B", "C")
	ctx := context.Background()
	pick := func(agent string) (PickResult, error) {
		return h.svc.Facade.Pick(ctx, h.board, PickRequest{Projects: []ProjectRef{{Owner: "acme", Number: 1}}, State: "In Review", Claim: true,
			Handoff: Handoff{Agent: agent, Role: "integrator", Command: "merge", Reason: "merge"}})
	}
	type outcome struct {
		res PickResult
		err error
	}
	results := make(chan outcome, 2)
	for _, agent := range []string{"integrator-1", "integrator-2"} {
		go func() {
			res, err := pick(agent)
			results <- outcome{res, err}
		}()
	}
	claimed := map[string]string{} // repo -> issue claimed
	for range 2 {
		o := <-results
		if o.err != nil {
			t.Fatal(o.err)
		}
		if o.res.Claimed != nil {
			it := o.res.Claimed.Item
			if prev, dup := claimed[it.Repo]; dup {
				t.Fatalf("two integrations of %s: #%s and #%d", it.Repo, prev, it.Number)
			}
			claimed[it.Repo] = it.ID
			if o.res.Claimed.Changed || h.state(it.ID) != "In Review" {
				t.Errorf("a claim for integration moved the card: %+v", o.res.Claimed)
			}
		}
	}
	if len(claimed) != 2 || claimed["acme/other"] != "C" {
		t.Fatalf("claims %v: want one item of acme/app and C of acme/other", claimed)
	}
	held := claimed["acme/app"]
	other := map[string]string{"A": "B", "B": "A"}[held]
	// A third claimer is refused for acme/app, with a Recovery to wait.
	res, err := pick("integrator-3")
	if err != nil || res.Claimed != nil || len(res.Passed) == 0 || !strings.Contains(res.Passed[0].Reason, "is being integrated by") ||
		!strings.Contains(res.Passed[0].Reason, "Recovery: wait until #") {
		t.Fatalf("third claim: %+v %v", res, err)
	}
	// The board move that would start a second integration is reverted and explained.
	r := h.process(h.board.move(other, "integrator-3", "Done", h.now))
	if r.Verdict != VerdictReverted || h.state(other) != "In Review" || !strings.Contains(r.Reason, "one item per repository at a time") {
		t.Fatalf("second integration on the board: %+v", r)
	}
	if body := strings.Join(h.commentBodies(), "\n"); !strings.Contains(body, "is being integrated by") {
		t.Errorf("the revert is not explained:\n%s", body)
	}
	// Escalation stays open; a person is not serialized.
	if r := h.process(h.board.move(other, "alice", "In Progress", h.now)); r.Verdict != VerdictAllowed {
		t.Fatalf("a person's move: %+v", r)
	}
	// The integrated item leaves In Review: the repository is free for the next claim.
	if r := h.process(h.board.move(held, "integrator-1", "Done", h.now)); r.Verdict != VerdictAllowed {
		t.Fatalf("finishing the integration: %+v", r)
	}
	if r := h.process(h.board.move(other, "alice", "In Review", h.now)); r.Verdict != VerdictAllowed {
		t.Fatalf("back to review: %+v", r)
	}
	if res, err := pick("integrator-3"); err != nil || res.Claimed == nil || res.Claimed.Item.ID != other {
		t.Fatalf("claim after the integration ended: %+v %v", res, err)
	}
}
