package mcpserver

import (
	"slices"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/mcpserver/toolspec"
	"github.com/ralph-gate/ralph-gate/policy"
)

// describe_workflow says what each state requires (workflow.requirements, whom each binds:
// agents by default) and how long a lock lasts (workflow.locks.ttl).
func TestDescribeWorkflowListsRequirementsAndLockTTL(t *testing.T) {
	f := newFixtureSpec(t, func(s *policy.Spec) {
		s.Requirements = []policy.Requirement{
			{Into: []string{"Ready for Plan"}, Fields: []string{"Estimate"}},
			{Into: []string{"Done"}, PullRequest: policy.PullRequestMerged, For: []string{"agent", "human"}},
		}
		s.Locks.TTL = 2 * time.Hour
	})
	var out toolspec.DescribeOutput
	if msg := callTool(t, f.session("agent-1"), toolspec.DescribeWorkflow, map[string]any{}, &out); msg != "" {
		t.Fatal(msg)
	}
	if out.Gates.LockTTL != "2h0m0s" {
		t.Errorf("lockTtl %q", out.Gates.LockTTL)
	}
	for _, s := range out.States {
		switch s.Name {
		case "Ready for Plan":
			if len(s.Requirements) != 1 || !slices.Equal(s.Requirements[0].Fields, []string{"Estimate"}) || !slices.Equal(s.Requirements[0].For, []string{"agent"}) {
				t.Errorf("Ready for Plan requires %+v", s.Requirements)
			}
		case "Done":
			if len(s.Requirements) != 1 || s.Requirements[0].PullRequest != "merged" || !slices.Equal(s.Requirements[0].For, []string{"agent", "human"}) {
				t.Errorf("Done requires %+v", s.Requirements)
			}
		default:
			if len(s.Requirements) != 0 {
				t.Errorf("%s requires %+v", s.Name, s.Requirements)
			}
		}
	}
	var plain toolspec.DescribeOutput
	if msg := callTool(t, newFixture(t).session("agent-1"), toolspec.DescribeWorkflow, map[string]any{}, &plain); msg != "" {
		t.Fatal(msg)
	}
	if plain.Gates.LockTTL != "" {
		t.Errorf("locks never expire by default, lockTtl %q", plain.Gates.LockTTL)
	}
}

// pick_actionable_issue does not offer an issue that lacks what the state its command would
// move it to requires, and says why in passed; with claim, the issue that has it is claimed.
func TestPickLeavesOutIssuesThatLackARequirement(t *testing.T) {
	lacking, having := issue(1, "Research Needed"), issue(2, "Research Needed")
	having.Fields = map[string]string{"Priority": "P1"}
	lacking.Fields = map[string]string{"Priority": ""}
	lacking.Priority = "P0" // ranked first, but it cannot enter Research in Progress
	f := newFixtureSpec(t, func(s *policy.Spec) {
		s.Requirements = []policy.Requirement{{Into: []string{"Research in Progress"}, Fields: []string{"Priority"}}}
	}, lacking, having)
	var out toolspec.PickOutput
	if msg := callTool(t, f.session("agent-1"), toolspec.PickActionableIssue,
		map[string]any{"workflowState": "Research Needed", "command": "research"}, &out); msg != "" {
		t.Fatal(msg)
	}
	if !out.Found || out.Issue.Number != 2 || out.Alternatives != 0 {
		t.Fatalf("offered %+v (alternatives %d), want #2 alone", out.Issue, out.Alternatives)
	}
	if len(out.Passed) != 1 || out.Passed[0].Number != 1 || out.Passed[0].Reason != "Research in Progress requires Priority to have a value" {
		t.Errorf("passed %+v", out.Passed)
	}
	var claimed toolspec.PickOutput
	if msg := callTool(t, f.session("agent-1"), toolspec.PickActionableIssue,
		map[string]any{"workflowState": "Research Needed", "command": "research", "claim": true, "reason": "r"}, &claimed); msg != "" {
		t.Fatal(msg)
	}
	if !claimed.Claimed || claimed.Issue.Number != 2 || claimed.Handoff.NewState != "Research in Progress" {
		t.Errorf("claim: %+v", claimed)
	}
}

// detect_pipeline_position says, per issue of the group, what it lacks to enter the next state
// on the pipeline.
func TestNextRequires(t *testing.T) {
	m, problems := policy.Compile(func() policy.Spec {
		s := policy.DefaultSpec()
		s.Requirements = []policy.Requirement{{Into: []string{"Ready for Plan"}, Fields: []string{"Estimate"}}}
		return s
	}())
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	for _, tt := range []struct {
		state  string
		fields map[string]string
		want   string
	}{
		{"Research in Progress", nil, "Ready for Plan requires Estimate to have a value"},
		{"Research in Progress", map[string]string{"Estimate": "M"}, ""},
		{"Research Needed", nil, ""}, // its next state is Research in Progress
		{"Done", nil, ""},            // the pipeline's end
		{"Human Needed", nil, ""},    // off the pipeline
	} {
		if got := nextRequires(m, enforce.Relative{State: tt.state, Fields: tt.fields}); got != tt.want {
			t.Errorf("%s %v: %q, want %q", tt.state, tt.fields, got, tt.want)
		}
	}
}
