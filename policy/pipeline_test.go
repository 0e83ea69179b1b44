package policy

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func issues(states ...string) []PipelineIssue {
	out := make([]PipelineIssue, len(states))
	for i, s := range states {
		out[i] = PipelineIssue{Number: i + 1, Title: "T", WorkflowState: s, Estimate: "S"}
	}
	return out
}

func TestDetectPipelineOrder(t *testing.T) {
	var (
		rTriage   = []string{"triage", "research", "plan", "review", "implement", "pr"}
		rSplit    = append([]string{"split"}, rTriage...)
		rResearch = rTriage[1:]
		rPlan     = rTriage[2:]
		rReview   = rTriage[3:]
		rImpl     = rTriage[4:]
	)
	big := issues(sBacklog, sRN)
	big[0].Estimate = "m"
	splitDone := issues(sBacklog)
	splitDone[0].Estimate, splitDone[0].SubIssueCount = "XL", 3
	tests := []struct {
		name      string
		in        PipelineInput
		phase     Phase
		reason    string
		remaining []string
		met       bool
		blocking  []PipelineBlock
		rec       Recommendation
		roster    Roster
	}{
		{"0 no issues", PipelineInput{}, PhaseTriage, "no issues to work on; triage first", rTriage, true, nil, Proceed, Roster{1, 1, 1}},
		{"1 split beats everything", PipelineInput{Issues: big}, PhaseSplit, "#1 is estimated M or larger without sub-issues; split first", rSplit, true, nil, Proceed, Roster{1, 1, 1}},
		{"1 already split is not split", PipelineInput{Issues: splitDone}, PhaseTriage, "#1 is in Backlog; triage first", rTriage, true, nil, Proceed, Roster{1, 1, 1}},
		{"2 no state", PipelineInput{Issues: issues(sRN, "", "unknown")}, PhaseTriage, "2 issues (#2, #3) have no workflow state; triage first", rTriage, true, nil, Proceed, Roster{1, 1, 1}},
		{"3 research", PipelineInput{Issues: issues(sRN, sRIP, sRFP), IsGroup: true, GroupPrimary: 1}, PhaseResearch,
			"2 issues (#1, #2) are in Research Needed or Research in Progress", rResearch, false,
			[]PipelineBlock{{1, sRN}, {2, sRIP}}, Wait, Roster{2, 1, 1}},
		{"4 all ready for plan", PipelineInput{Issues: issues(sRFP, sRFP), IsGroup: true}, PhasePlan, "all issues are in Ready for Plan", rPlan, true, nil, Proceed, Roster{1, 1, 1}},
		{"4 canceled ignored", PipelineInput{Issues: issues(sRFP, sCancel)}, PhasePlan, "all issues are in Ready for Plan", rPlan, true, nil, Proceed, Roster{1, 1, 1}},
		{"5 plan in progress", PipelineInput{Issues: issues(sRFP, sPIP)}, PhaseReview, "#2 is in Plan in Progress", rReview, true, nil, Proceed, Roster{0, 1, 1}},
		{"6 all plan in review", PipelineInput{Issues: issues(sPIR, sPIR, sCancel)}, PhaseHumanGate, "all plans are in Plan in Review, awaiting approval", []string{}, true, nil, Proceed, Roster{0, 1, 1}},
		{"7 some plan in review", PipelineInput{Issues: issues(sPIR, sIP)}, PhaseReview, "#1 is in Plan in Review", rReview, true, nil, Proceed, Roster{0, 1, 1}},
		{"8 in progress", PipelineInput{Issues: issues(sIP, sIR), Options: PipelineOptions{StreamCount: 2}}, PhaseImplement, "#1 is in In Progress", rImpl, true, nil, Proceed, Roster{0, 2, 1}},
		{"9 terminal", PipelineInput{Issues: issues(sIR, sDone, sCancel)}, PhaseTerminal, "all issues are in In Review, Done or Canceled", []string{}, true, nil, Proceed, Roster{}},
		{"9 integrate in auto mode", PipelineInput{Issues: issues(sIR, sDone), Options: PipelineOptions{AutoMode: true, StreamCount: 3}}, PhaseIntegrate,
			"#1 is in In Review and auto mode is on; integrate", []string{"integrate"}, true, nil, Proceed, Roster{0, 0, 1}},
		{"9 auto mode but all done", PipelineInput{Issues: issues(sDone, sCancel), Options: PipelineOptions{AutoMode: true}}, PhaseTerminal,
			"all issues are in In Review, Done or Canceled", []string{}, true, nil, Proceed, Roster{}},
		{"9 all canceled", PipelineInput{Issues: issues(sCancel)}, PhaseTerminal, "all issues are in In Review, Done or Canceled", []string{}, true, nil, Proceed, Roster{}},
		{"10 human needed beats backlog and ready", PipelineInput{Issues: issues(sHN, sBacklog, sRFP)}, PhaseTerminal, "#1 is in Human Needed; a human must act", []string{}, true, nil, Proceed, Roster{}},
		{"11 backlog", PipelineInput{Issues: issues(sBacklog, sRFP, sDone)}, PhaseTriage, "#1 is in Backlog; triage first", rTriage, true, nil, Proceed, Roster{1, 1, 1}},
		{"12 ready for plan mixed with later", PipelineInput{Issues: issues(sRFP, sIR, sDone, sCancel), IsGroup: true, GroupPrimary: 1}, PhasePlan,
			"some issues are in Ready for Plan while others are further along; the group has not converged", rPlan, false,
			[]PipelineBlock{{2, sIR}, {3, sDone}}, Wait, Roster{1, 1, 1}},
		{"13 otherwise", PipelineInput{Issues: issues("Legacy")}, PhaseTriage, "no phase matches the issues' states; triage first", rTriage, true, nil, Proceed, Roster{1, 1, 1}},
		{"roster: many issues need research", PipelineInput{Issues: issues(sBacklog, sBacklog, sBacklog, sRN, sRN, sRIP), Options: PipelineOptions{StreamCount: 9}},
			PhaseResearch, "3 issues (#4, #5, #6) are in Research Needed or Research in Progress", rResearch, false,
			[]PipelineBlock{{4, sRN}, {5, sRN}, {6, sRIP}}, Wait, Roster{2, 3, 2}},
		// Only Research Needed and Research in Progress need an analyst's research: Backlog and
		// unset items wait for triage.
		{"roster: backlog and unset items do not need research", PipelineInput{Issues: issues(sBacklog, sBacklog, sBacklog, "", "", sRN)},
			PhaseTriage, "2 issues (#4, #5) have no workflow state; triage first", rTriage, true, nil, Proceed, Roster{1, 1, 2}},
		{"roster: six issues need research", PipelineInput{Issues: issues(sRN, sRN, sRN, sRN, sRIP, sRIP)},
			PhaseResearch, "6 issues (#1, #2, #3, #4, #5, #6) are in Research Needed or Research in Progress", rResearch, false,
			[]PipelineBlock{{1, sRN}, {2, sRN}, {3, sRN}, {4, sRN}, {5, sRIP}, {6, sRIP}}, Wait, Roster{3, 1, 2}},
		{"roster: five issues need two integrators", PipelineInput{Issues: issues(sIP, sIP, sIP, sIP, sIP), Options: PipelineOptions{StreamCount: -4}},
			PhaseImplement, "5 issues (#1, #2, #3, #4, #5) are in In Progress", rImpl, true, nil, Proceed, Roster{0, 1, 2}},
		{"roster: five research issues", PipelineInput{Issues: issues(sRN, sRN, sRN, sRN, sRN)},
			PhaseResearch, "5 issues (#1, #2, #3, #4, #5) are in Research Needed or Research in Progress", rResearch, false,
			[]PipelineBlock{{1, sRN}, {2, sRN}, {3, sRN}, {4, sRN}, {5, sRN}}, Wait, Roster{2, 1, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DetectPipeline(tt.in)
			if got.Phase != tt.phase || got.Reason != tt.reason {
				t.Fatalf("phase %s (%q), want %s (%q)", got.Phase, got.Reason, tt.phase, tt.reason)
			}
			sameStrings(t, "remainingPhases", got.RemainingPhases, tt.remaining)
			c := got.Convergence
			if c.Required != tt.in.IsGroup || c.Met != tt.met || c.Recommendation != tt.rec {
				t.Errorf("convergence = %+v", c)
			}
			if c.Blocking == nil || !slices.Equal(c.Blocking, tt.blocking) && !(len(tt.blocking) == 0 && len(c.Blocking) == 0) {
				t.Errorf("blocking = %v, want %v", c.Blocking, tt.blocking)
			}
			if got.SuggestedRoster != tt.roster {
				t.Errorf("roster = %+v, want %+v", got.SuggestedRoster, tt.roster)
			}
			if got.IsGroup != tt.in.IsGroup || got.GroupPrimary != tt.in.GroupPrimary {
				t.Errorf("group echo = %v/%d", got.IsGroup, got.GroupPrimary)
			}
		})
	}
}

// DetectPipeline's recommendation would escalate if a blocker were in Human Needed; the detection
// order makes that unreachable (step 10 catches Human Needed first), which this pins down.
func TestDetectPipelineHumanNeededNeverBlocks(t *testing.T) {
	for _, states := range [][]string{{sHN, sRFP, sIR}, {sHN, sRN}} {
		got := DetectPipeline(PipelineInput{Issues: issues(states...)})
		for _, b := range got.Convergence.Blocking {
			if b.State == sHN {
				t.Errorf("%v: blocker in Human Needed: %+v", states, got)
			}
		}
	}
}

func TestPipelineJSON(t *testing.T) {
	var in PipelineInput
	if err := json.Unmarshal([]byte(`{"issues":[{"number":7,"title":"X","workflowState":"Research Needed","estimate":"S","subIssueCount":0}],"isGroup":true,"groupPrimary":7,"options":{"autoMode":false,"streamCount":2}}`), &in); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(DetectPipeline(in))
	want := `{"phase":"RESEARCH","reason":"#7 is in Research Needed or Research in Progress","remainingPhases":["research","plan","review","implement","pr"],` +
		`"convergence":{"required":true,"met":false,"blocking":[{"number":7,"state":"Research Needed"}],"recommendation":"wait"},` +
		`"isGroup":true,"groupPrimary":7,"suggestedRoster":{"analyst":1,"builder":2,"integrator":1}}`
	if string(b) != want {
		t.Errorf("json:\n got %s\nwant %s", b, want)
	}
	b, _ = json.Marshal(DetectPipeline(PipelineInput{Issues: issues(sPIR)}))
	if !strings.Contains(string(b), `"remainingPhases":[]`) || !strings.Contains(string(b), `"blocking":[]`) {
		t.Errorf("empty slices must be arrays: %s", b)
	}
}

func TestPhaseStrings(t *testing.T) {
	for _, p := range []Phase{PhaseSplit, PhaseTriage, PhaseResearch, PhasePlan, PhaseReview, PhaseHumanGate, PhaseImplement, PhaseIntegrate, PhaseTerminal} {
		if p.String() != strings.ToUpper(p.String()) || p.RemainingPhases() == nil {
			t.Errorf("%s", p)
		}
	}
	if Phase("X").RemainingPhases() == nil {
		t.Error("unknown phase remaining must be empty, not nil")
	}
}
