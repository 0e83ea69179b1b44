package enforce

import (
	"slices"
	"strings"
	"testing"

	"github.com/ralph-gate/ralph-gate/policy"
)

// suggested lists a refusal's suggested retries as "arg=v1|v2", in order.
func suggested(r *policy.Refusal) []string {
	if r.Retry == nil {
		return nil
	}
	var out []string
	for _, s := range r.Retry.With {
		out = append(out, string(s.Arg)+"="+strings.Join(s.Values, "|"))
	}
	return out
}

// The façade's refusals carry their retries in structured form, by role, so each surface
// names its own arguments (the MCP tools: mcpserver's spelling).
func TestFacadeRefusalsSuggestRoles(t *testing.T) {
	a := issueN("A", "Research Needed", 1)
	b := issueN("B", "Research Needed", 2)
	b2 := onProject(issueN("B2", "Research Needed", 2), 2)
	h := newHarness(t, a, b, b2)
	pick := func(req PickRequest) error {
		req.Projects = []ProjectRef{project1}
		_, err := h.svc.Facade.Pick(bg, h.board, req)
		return err
	}
	claim := func(state, cmd string) error {
		return pick(PickRequest{State: state, Claim: true, Handoff: Handoff{Agent: "agent-1", Command: cmd}})
	}
	tests := []struct {
		name    string
		err     error
		want    string
		retries []string
		oneOf   bool
	}{
		{"unknown workflow state", pick(PickRequest{State: "Nowhere"}), `Unknown workflow state "Nowhere"`,
			[]string{"pick_state=Backlog|Research Needed|Research in Progress|Ready for Plan|Plan in Progress|Plan in Review|In Progress|In Review|Human Needed|Done|Canceled"}, false},
		{"a claim with a command without a lock", claim("Research Needed", "ralph_triage"), "A claim locks the issue with triage's lock intent, and triage has none",
			[]string{"command=research|plan|plan_epic|impl", "claim=false"}, false},
		{"a claim where the lock cannot be entered", claim("Backlog", "research"), "an agent may not move an issue from Backlog to Research in Progress",
			[]string{"pick_state=Research Needed", "claim=false"}, false},
		{"a handoff with neither intent nor state", errOf(h.handoff("A", Handoff{Agent: "agent-1", Command: "research"})), "Neither intent nor to_state",
			// Only what research may do from Research Needed: no release (it is there), no close or cancel.
			[]string{"intent=lock|complete|escalate|reject", "state=Research in Progress|Ready for Plan|Human Needed"}, true},
		{"an issue on several projects", errOf(h.svc.Facade.Locate(bg, h.board, IssueRef{Owner: "acme", Repo: "app", Number: 2}, 0)), "several enforced projects",
			[]string{"project=1|2"}, false},
		{"an issue not on the project named", errOf(h.svc.Facade.Locate(bg, h.board, IssueRef{Owner: "acme", Repo: "app", Number: 1}, 2)), "is not on project 2",
			[]string{"project=1"}, false},
		{"a command the agent may not use", pick(PickRequest{State: "Research Needed", Claim: true, Handoff: Handoff{Agent: "agent-1", Command: "impl", Commands: []string{"research"}}}),
			"may only use the commands research", []string{"command=research"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := asRefusal(t, tt.err, tt.want)
			if got := suggested(r); !slices.Equal(got, tt.retries) || r.Retry.OneOf != tt.oneOf {
				t.Errorf("retries %q (one of: %v), want %q (one of: %v)", got, r.Retry.OneOf, tt.retries, tt.oneOf)
			}
			if r.Recovery != r.Retry.Render(nil) {
				t.Errorf("the Recovery %q is not its retry %q", r.Recovery, r.Retry.Render(nil))
			}
		})
	}
}

// A group member in a state pipeline detection does not know is refused, not guessed at.
func TestPositionRefusesUnknownStates(t *testing.T) {
	t.Run("not a state of the workflow", func(t *testing.T) {
		parent := issueN("P", "Ready for Plan", 10)
		a := issueN("A", "Ready for Plan", 1)
		b := issueN("B", "Bogus", 2)
		h := newHarness(t, parent, a, b)
		setFamily(h.board, parent, a, b)
		_, err := h.svc.Facade.Position(bg, h.board, h.boardItem("A"), policy.PipelineOptions{})
		r := asRefusal(t, err, `#2 of the group is in "Bogus", which is not a state of the workflow`)
		if !strings.Contains(r.Recovery, "put #2 back in its last legal state") {
			t.Errorf("recovery %q", r.Recovery)
		}
	})
	t.Run("a state of a customised workflow", func(t *testing.T) {
		edit := func(s *policy.Spec) {
			s.States = append(s.States, policy.StateSpec{Name: "Triaged", Kind: "queue", Next: []string{"Ready for Plan"}})
			s.Initial = append(s.Initial, "Triaged")
		}
		a := issueN("A", "Triaged", 1)
		h := newHarnessWith(t, edit, nil, a)
		_, err := h.svc.Facade.Position(bg, h.board, h.boardItem("A"), policy.PipelineOptions{})
		r := asRefusal(t, err, "#1 of the group is in Triaged, and pipeline detection knows only Backlog, Research Needed")
		if !strings.Contains(r.Recovery, "ask a human to move #1") {
			t.Errorf("recovery %q", r.Recovery)
		}
	})
}
