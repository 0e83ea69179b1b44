package policy

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestCheckConvergence(t *testing.T) {
	m := defaultMachine(t)
	tests := []struct {
		name    string
		target  string
		members []Member
		want    ConvergenceResult
	}{
		{"all ready", sRFP, []Member{{Number: 1, Title: "A", State: sRFP}, {Number: 2, Title: "B", State: sPIR}},
			ConvergenceResult{Converged: true, TargetState: sRFP, Total: 2, Ready: 2, Blocking: []ConvergenceMember{}, Recommendation: Proceed}},
		{"empty group trivially converges", sRFP, nil,
			ConvergenceResult{Converged: true, TargetState: sRFP, Total: 0, Ready: 0, Blocking: []ConvergenceMember{}, Recommendation: Proceed}},
		{"waiting", sRFP, []Member{{Number: 1, Title: "A", State: sRFP}, {Number: 2, Title: "B", State: sRN}, {Number: 3, Title: "C", State: sBacklog}, {Number: 4, Title: "D", State: sCancel}},
			ConvergenceResult{TargetState: sRFP, Total: 3, Ready: 1, Blocking: []ConvergenceMember{
				{2, "B", sRN, 2}, {3, "C", sBacklog, 3}}, Recommendation: Wait}},
		{"escalate on human needed", sIR, []Member{{Number: 1, Title: "A", State: sHN}, {Number: 2, Title: "B", State: sIP}, {Number: 3, Title: "C", State: sDone}},
			ConvergenceResult{TargetState: sIR, Total: 3, Ready: 1, Blocking: []ConvergenceMember{
				{1, "A", sHN, -1}, {2, "B", sIP, 1}}, Recommendation: Escalate}},
		{"escalate even when listed after a waiting one", sIR, []Member{{Number: 2, Title: "B", State: sIP}, {Number: 1, Title: "A", State: sHN}},
			ConvergenceResult{TargetState: sIR, Total: 2, Ready: 0, Blocking: []ConvergenceMember{
				{2, "B", sIP, 1}, {1, "A", sHN, -1}}, Recommendation: Escalate}},
		{"unset and unknown wait", sDone, []Member{{Number: 1, Title: "A", State: ""}, {Number: 2, Title: "B", State: "Legacy"}},
			ConvergenceResult{TargetState: sDone, Total: 2, Ready: 0, Blocking: []ConvergenceMember{
				{1, "A", "", -1}, {2, "B", "Legacy", -1}}, Recommendation: Wait}},
		{"all canceled", sDone, []Member{{Number: 1, Title: "A", State: sCancel}},
			ConvergenceResult{Converged: true, TargetState: sDone, Total: 0, Ready: 0, Blocking: []ConvergenceMember{}, Recommendation: Proceed}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := m.CheckConvergence(tt.target, tt.members)
			if err != nil {
				t.Fatal(err)
			}
			if got.Converged != tt.want.Converged || got.TargetState != tt.want.TargetState || got.Total != tt.want.Total ||
				got.Ready != tt.want.Ready || got.Recommendation != tt.want.Recommendation || !slices.Equal(got.Blocking, tt.want.Blocking) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
	res, _ := m.CheckConvergence(sRFP, nil)
	b, _ := json.Marshal(res)
	if string(b) != `{"converged":true,"targetState":"Ready for Plan","total":0,"ready":0,"blocking":[],"recommendation":"proceed"}` {
		t.Error(string(b))
	}
	res, _ = m.CheckConvergence(sRFP, []Member{{Number: 7, Title: "T", State: sRN}})
	b, _ = json.Marshal(res)
	if !strings.Contains(string(b), `"blocking":[{"number":7,"title":"T","currentState":"Research Needed","distanceToTarget":2}]`) {
		t.Error(string(b))
	}
}

func TestCheckConvergenceErrors(t *testing.T) {
	m := defaultMachine(t)
	pipe := []string{sBacklog, sRN, sRIP, sRFP, sPIP, sPIR, sIP, sIR, sDone}
	for target, tried := range map[string]string{
		"Foo":   `Unknown target state "Foo"`,
		"":      `Unknown target state ""`,
		sHN:     `Target state "Human Needed" is off the pipeline`,
		sCancel: `Target state "Canceled" is off the pipeline`,
	} {
		t.Run(target, func(t *testing.T) {
			_, err := m.CheckConvergence(target, []Member{{Number: 1, Title: "A", State: sRFP}})
			r := asRefusal(t, err)
			if r.Tried != tried {
				t.Errorf("tried %q", r.Tried)
			}
			sameStrings(t, "options", r.Options, pipe)
		})
	}
	if Proceed.String() != "proceed" || Wait.String() != "wait" || Escalate.String() != "escalate" {
		t.Error("Recommendation.String")
	}
}
