package policy

import (
	"errors"
	"strings"
	"testing"
)

func TestDecodePipelineRequest(t *testing.T) {
	tests := []struct {
		name, in, errHas string
	}{
		{"valid", `{"issues":[{"number":1,"title":"a","workflowState":"Backlog","estimate":"S","subIssueCount":0}],"isGroup":true,"groupPrimary":1,"options":{"autoMode":true,"streamCount":2}}`, ""},
		{"empty object", `{}`, ""},
		{"unknown key", `{"issuez":[]}`, "issuez"},
		{"not json", `{"issues":`, "Recovery:"},
		{"two values", `{} {}`, "more than one"},
		{"no number", `{"issues":[{"title":"x"}]}`, "issues[0]"},
		{"negative sub-issues", `{"issues":[{"number":1,"subIssueCount":-1}]}`, "subIssueCount"},
		{"negative streams", `{"options":{"streamCount":-1}}`, "streamCount"},
		// An unknown state is refused with the valid ones, not detected as TRIAGE.
		{"unknown state", `{"issues":[{"number":1,"workflowState":"Backlog"},{"number":2,"workflowState":"Bogus"}]}`,
			`issues[1].workflowState "Bogus" is not a workflow state. Pipeline detection knows Backlog, Research Needed, Research in Progress, Ready for Plan, Plan in Progress, Plan in Review, In Progress, In Review, Human Needed, Done, Canceled, and "" for an issue with no state`},
		{"state in the wrong case", `{"issues":[{"number":1,"workflowState":"ready for plan"}]}`, `did you mean "Ready for Plan"?`},
		{"no state", `{"issues":[{"number":1,"workflowState":""},{"number":2,"workflowState":"unknown"},{"number":3,"workflowState":" Done "}]}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodePipelineRequest([]byte(tt.in))
			if tt.errHas == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			var r *Refusal
			if !errors.As(err, &r) || !strings.Contains(err.Error(), tt.errHas) || !strings.Contains(err.Error(), "Recovery:") {
				t.Fatalf("error %v, want a refusal naming %q with a Recovery", err, tt.errHas)
			}
		})
	}
}

func TestPipelineStates(t *testing.T) {
	sameStrings(t, "PipelineStates", PipelineStates(), allStates)
	for s, want := range map[string]bool{"": true, " ": true, "unknown": true, "Unknown": true, sIR: true, " " + sIR + " ": true, "in review": false, "Bogus": false} {
		if IsPipelineState(s) != want {
			t.Errorf("IsPipelineState(%q) = %v", s, !want)
		}
	}
}

func FuzzDecodePipelineRequest(f *testing.F) {
	f.Add([]byte(`{"issues":[{"number":1,"title":"a","workflowState":"Ready for Plan","estimate":"S","subIssueCount":0}],"isGroup":false,"groupPrimary":1,"options":{"autoMode":false,"streamCount":1}}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"issues":null,"options":{"streamCount":-5}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := DecodePipelineRequest(data)
		if err != nil {
			if !strings.Contains(err.Error(), "Recovery:") {
				t.Fatalf("error without Recovery: %v", err)
			}
			return
		}
		res := DetectPipeline(in)
		if res.Phase == "" {
			t.Fatalf("no phase for %s", data)
		}
	})
}
