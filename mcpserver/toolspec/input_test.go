package toolspec

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ralph-gate/ralph-gate/policy"
)

func TestNormalize(t *testing.T) {
	for _, tc := range []struct {
		name  string
		in    interface{ Normalize() error }
		field string // "" = valid
	}{
		{"valid handoff", &HandoffInput{Issue: Issue{Number: 1}, Command: "research", Intent: "lock", Reason: "go"}, ""},
		{"owner/name repo", &HandoffInput{Issue: Issue{Repo: "acme/app", Number: 1}, Command: "research", Intent: "lock", Reason: "go"}, ""},
		{"owner mismatch", &StateInput{Issue: Issue{Owner: "x", Repo: "acme/app", Number: 1}}, "repo"},
		{"zero number", &StateInput{Issue: Issue{Number: 0}}, "number"},
		{"bad owner", &StateInput{Issue: Issue{Owner: "no spaces", Number: 1}}, "owner"},
		{"bad repo", &StateInput{Issue: Issue{Repo: "a b", Number: 1}}, "repo"},
		{"negative project", &StateInput{Issue: Issue{Number: 1, Project: -1}}, "project"},
		{"no command", &HandoffInput{Issue: Issue{Number: 1}, Intent: "lock", Reason: "go"}, "command"},
		{"no reason", &HandoffInput{Issue: Issue{Number: 1}, Command: "impl", Intent: "lock"}, "reason"},
		{"long reason", &HandoffInput{Issue: Issue{Number: 1}, Command: "impl", Intent: "lock", Reason: strings.Repeat("x", maxReason+1)}, "reason"},
		{"stream count", &PipelineInput{Issue: Issue{Number: 1}, StreamCount: -1}, "streamCount"},
		{"no target", &ConvergenceInput{Issue: Issue{Number: 1}}, "targetState"},
		{"advance target", &AdvanceInput{Issue: Issue{Number: 1}, TargetState: " "}, "targetState"},
		{"pick without state", &PickInput{}, "workflowState"},
		{"claim without command", &PickInput{WorkflowState: "Research Needed", Claim: true}, "command"},
		{"claim", &PickInput{WorkflowState: "Research Needed", Claim: true, Command: "research"}, ""},
		{"every project's health", &HealthInput{}, ""},
		{"one project's health", &HealthInput{Owner: " acme ", Project: 3}, ""},
		{"negative health project", &HealthInput{Project: -3}, "project"},
		{"health owner is no login", &HealthInput{Owner: "acme/3"}, "owner"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.in.Normalize()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var r *policy.Refusal
			if !errors.As(err, &r) || !strings.Contains(err.Error(), "Invalid "+tc.field) || !strings.Contains(err.Error(), "Recovery: ") {
				t.Fatalf("want a refusal about %s with a Recovery, got %v", tc.field, err)
			}
		})
	}
	in := HandoffInput{Issue: Issue{Repo: " acme/app ", Number: 3}, Command: " research ", Intent: "lock", Reason: " r "}
	if err := in.Normalize(); err != nil || in.Owner != "acme" || in.Repo != "app" || in.Command != "research" || in.Reason != "r" {
		t.Fatalf("normalized to %+v (%v)", in, err)
	}
	p := PickInput{WorkflowState: "Research Needed", Claim: true, Command: "research"}
	if err := p.Normalize(); err != nil || p.Reason == "" {
		t.Fatalf("a claim gets a default reason: %+v %v", p, err)
	}
}

func TestEveryToolHasASpec(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range Tools() {
		if seen[s.Name] || s.Title == "" || len(s.Description) < 80 || (s.ReadOnly && s.Destructive) {
			t.Errorf("tool %q: duplicate, untitled, thin description or contradictory hints", s.Name)
		}
		seen[s.Name] = true
	}
	if len(seen) != 8 {
		t.Errorf("want 8 tools, got %d", len(seen))
	}
}

// FuzzToolInputs decodes arbitrary JSON into every tool's input as the SDK does, then
// normalizes it: no panic, and what passes is well-formed.
func FuzzToolInputs(f *testing.F) {
	for _, s := range []string{
		`{"number":1,"command":"research","intent":"lock","reason":"go"}`,
		`{"owner":"acme","repo":"acme/app","number":7,"to_state":"Ready for Plan","command":"ralph_triage","reason":"x"}`,
		`{"number":-1}`, `{"number":1,"targetState":"Ready for Plan"}`, `{"workflowState":"Research Needed","claim":true}`,
		`{"repo":"/","number":1}`, `{"number":1e3,"streamCount":5,"autoMode":true}`, `null`, `[]`, `{"number":"1"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		inputs := []interface{ Normalize() error }{&HandoffInput{}, &StateInput{}, &PipelineInput{}, &ConvergenceInput{}, &AdvanceInput{}, &PickInput{}, &HealthInput{}}
		for _, in := range inputs {
			if json.Unmarshal(data, in) != nil {
				continue
			}
			err := in.Normalize()
			if err != nil {
				if !strings.Contains(err.Error(), "Recovery: ") {
					t.Fatalf("error without Recovery: %v", err)
				}
				continue
			}
			var issue *Issue
			switch v := in.(type) {
			case *HandoffInput:
				issue = &v.Issue
				if v.Command == "" || v.Reason == "" || len(v.Reason) > maxReason {
					t.Fatalf("accepted %+v", v)
				}
			case *StateInput:
				issue = &v.Issue
			case *PipelineInput:
				issue = &v.Issue
			case *ConvergenceInput:
				issue = &v.Issue
			case *AdvanceInput:
				issue = &v.Issue
			case *PickInput:
				if v.WorkflowState == "" || (v.Claim && v.Command == "") {
					t.Fatalf("accepted %+v", v)
				}
			case *HealthInput:
				if v.Project < 0 || v.Owner != strings.TrimSpace(v.Owner) || v.Owner != "" && !loginPattern.MatchString(v.Owner) {
					t.Fatalf("accepted %+v", v)
				}
			}
			if issue != nil && (issue.Number <= 0 || strings.Contains(issue.Repo, "/") || issue.Project < 0) {
				t.Fatalf("accepted %+v", issue)
			}
		}
	})
}
