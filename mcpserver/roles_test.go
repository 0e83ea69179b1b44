package mcpserver

import (
	"slices"
	"strings"
	"testing"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/mcpserver/toolspec"
	"github.com/ralph-gate/ralph-gate/policy"
)

// newRolesFixture is the fixture with the four worker roles in interactive review mode; the
// agent "researcher" declares the analyst role, "builder-1" has the builder's by its name.
func newRolesFixture(t *testing.T, items ...enforce.Item) *fixture {
	t.Helper()
	f := newFixtureSpec(t, func(s *policy.Spec) { s.ReviewMode = policy.ReviewInteractive }, items...)
	m := f.opts.Facade.Machine()
	roles, ps := policy.CompileRoles(m, map[string]policy.RoleSpec{
		"analyst":    {Agents: []string{"analyst-*"}, Owns: []string{"Backlog", "Research Needed", "Research in Progress"}},
		"builder":    {Agents: []string{"builder-*"}, Owns: []string{"Ready for Plan", "Plan in Progress", "Plan in Review", "In Progress"}},
		"validator":  {Agents: []string{"validator-*"}, Owns: []string{"Plan in Review"}},
		"integrator": {Agents: []string{"integrator-*"}, Owns: []string{"In Review"}, Serialize: policy.SerializeRepository},
	})
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	svc := enforce.New(m.WithRoles(roles), policy.Actors{Agents: []string{"agent-*", "builder-*"}}, f.st, nil, enforce.Options{AppLogin: "ralph-gate[bot]", HandoffWait: handoffWait})
	f.opts.Facade = svc.Facade
	f.opts.Agents = []Agent{{Name: "researcher", Role: "analyst"}, {Name: "builder-1"}}
	return f
}

// describe_workflow lists the roles, each state's owners, the caller's role and the commands
// its role gives it.
func TestDescribeWorkflowListsRoles(t *testing.T) {
	f := newRolesFixture(t)
	var out toolspec.DescribeOutput
	if msg := callTool(t, f.session("builder-1"), toolspec.DescribeWorkflow, map[string]any{}, &out); msg != "" {
		t.Fatal(msg)
	}
	if out.YourRole != "builder" || out.ReviewMode != policy.ReviewInteractive || len(out.Roles) != 4 {
		t.Fatalf("role %q, mode %q, roles %+v", out.YourRole, out.ReviewMode, out.Roles)
	}
	if !slices.Equal(out.YourCommands, []string{"plan", "plan_epic", "review", "impl", "pr"}) {
		t.Errorf("builder's commands %v", out.YourCommands)
	}
	for _, s := range out.States {
		if s.Name == "Plan in Review" && !slices.Equal(s.Owners, []string{"validator"}) {
			t.Errorf("owners of Plan in Review in interactive mode: %v", s.Owners)
		}
	}
}

// A handoff by an agent whose declared role does not own the state is refused, naming the
// owner; the same agent's handoff in its own states goes through.
func TestHandoffFollowsTheDeclaredRole(t *testing.T) {
	f := newRolesFixture(t, issue(5, "Ready for Plan"), issue(6, "Research Needed"))
	cs := f.session("researcher")
	var out toolspec.HandoffOutput
	msg := callTool(t, cs, toolspec.HandoffTicket, map[string]any{"number": 5, "command": "research", "intent": "escalate", "reason": "r"}, &out)
	if msg != "" || out.NewState != "Human Needed" {
		t.Fatalf("escalation is open to every role: %s %+v", msg, out)
	}
	msg = callTool(t, cs, toolspec.HandoffTicket, map[string]any{"number": 6, "command": "research", "intent": "lock", "reason": "r"}, &out)
	if msg != "" || out.NewState != "Research in Progress" {
		t.Fatalf("analyst's handoff: %s %+v", msg, out)
	}
	msg = callTool(t, f.session("builder-1"), toolspec.PickActionableIssue, map[string]any{"workflowState": "Research Needed"}, &toolspec.PickOutput{})
	if !strings.Contains(msg, "the analyst role owns it") || !strings.Contains(msg, `workflowState "Ready for Plan"`) {
		t.Fatalf("builder picking in Research Needed: %s", msg)
	}
}
