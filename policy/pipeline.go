package policy

import (
	"fmt"
	"slices"
	"strings"
)

// Phase is a pipeline phase of detect_pipeline_position.
type Phase string

const (
	PhaseSplit     Phase = "SPLIT"
	PhaseTriage    Phase = "TRIAGE"
	PhaseResearch  Phase = "RESEARCH"
	PhasePlan      Phase = "PLAN"
	PhaseReview    Phase = "REVIEW"
	PhaseHumanGate Phase = "HUMAN_GATE"
	PhaseImplement Phase = "IMPLEMENT"
	PhaseIntegrate Phase = "INTEGRATE"
	PhaseTerminal  Phase = "TERMINAL"
)

func (p Phase) String() string { return string(p) }

// RemainingPhases lists the phases still ahead of p (policy.DetectPipeline); never nil.
func (p Phase) RemainingPhases() []string {
	all := []string{"split", "triage", "research", "plan", "review", "implement", "pr"}
	switch p {
	case PhaseSplit:
		return all
	case PhaseTriage:
		return all[1:]
	case PhaseResearch:
		return all[2:]
	case PhasePlan:
		return all[3:]
	case PhaseReview:
		return all[4:]
	case PhaseImplement:
		return all[5:]
	case PhaseIntegrate:
		return []string{"integrate"}
	}
	return []string{}
}

// PipelineIssue is one issue of the group as detect_pipeline_position sees it.
type PipelineIssue struct {
	Number        int    `json:"number"`
	Title         string `json:"title"`
	WorkflowState string `json:"workflowState"`
	Estimate      string `json:"estimate"`
	SubIssueCount int    `json:"subIssueCount"`
}

// PipelineInput is the stdin of `ralph-gate policy pipeline`.
type PipelineInput struct {
	Issues       []PipelineIssue `json:"issues"`
	IsGroup      bool            `json:"isGroup"`
	GroupPrimary int             `json:"groupPrimary"`
	Options      PipelineOptions `json:"options"`
}

// PipelineOptions tune the roster and the INTEGRATE phase.
type PipelineOptions struct {
	AutoMode    bool `json:"autoMode"`
	StreamCount int  `json:"streamCount"`
}

// PipelineResult is the detect_pipeline_position answer.
type PipelineResult struct {
	Phase           Phase               `json:"phase"`
	Reason          string              `json:"reason"`
	RemainingPhases []string            `json:"remainingPhases"`
	Convergence     PipelineConvergence `json:"convergence"`
	IsGroup         bool                `json:"isGroup"`
	GroupPrimary    int                 `json:"groupPrimary"`
	SuggestedRoster Roster              `json:"suggestedRoster"`
}

// PipelineConvergence says whether the group may move on together.
type PipelineConvergence struct {
	Required       bool            `json:"required"` // true for groups
	Met            bool            `json:"met"`
	Blocking       []PipelineBlock `json:"blocking"`
	Recommendation Recommendation  `json:"recommendation"`
}

// PipelineBlock is an issue holding the group back.
type PipelineBlock struct {
	Number int    `json:"number"`
	State  string `json:"state"`
}

// Roster is the suggested number of workers per role.
type Roster struct {
	Analyst    int `json:"analyst"`
	Builder    int `json:"builder"`
	Integrator int `json:"integrator"`
}

// The state names of the default workflow (README, The workflow) that pipeline detection is defined over (the MCP tool's contract
// is phrased in these names, independently of a customised machine).
const (
	stBacklog      = "Backlog"
	stResearch     = "Research Needed"
	stResearching  = "Research in Progress"
	stReadyForPlan = "Ready for Plan"
	stPlanning     = "Plan in Progress"
	stPlanReview   = "Plan in Review"
	stInProgress   = "In Progress"
	stInReview     = "In Review"
	stHumanNeeded  = "Human Needed"
	stDone         = "Done"
	stCanceled     = "Canceled"
)

// PipelineStates are the workflowState values DetectPipeline knows, in the default workflow's
// order; an issue with no state has "" (or "unknown").
func PipelineStates() []string {
	return []string{stBacklog, stResearch, stResearching, stReadyForPlan, stPlanning, stPlanReview, stInProgress, stInReview,
		stHumanNeeded, stDone, stCanceled}
}

// IsPipelineState reports whether DetectPipeline knows s: one of PipelineStates, or no state
// ("", "unknown"; surrounding spaces are ignored).
func IsPipelineState(s string) bool {
	s = strings.TrimSpace(s)
	return s == "" || strings.EqualFold(s, "unknown") || slices.Contains(PipelineStates(), s)
}

// DetectPipeline finds the phase of an issue or group in the order below, first match wins.
//
// Interpretations where the original tool's contract is silent:
//   - "no state" is an empty (or whitespace) workflowState or the literal "unknown", which is
//     what the original tool reported for unset items;
//   - Canceled issues are ignored by the "all Ready for Plan" (4) and "all Plan in Review" (6)
//     steps, as they are by every convergence rule, but at least one issue must count;
//   - a split candidate (1) is an M/L/XL estimate, case-insensitive, with no sub-issues;
//   - blocking in step 12 lists every non-Canceled issue not in Ready for Plan;
//   - "issues needing research" for the analyst count are those in Research Needed or
//     Research in Progress (Backlog and unset items still wait for triage).
func DetectPipeline(in PipelineInput) PipelineResult {
	res := PipelineResult{IsGroup: in.IsGroup, GroupPrimary: in.GroupPrimary}
	res.Convergence = PipelineConvergence{Required: in.IsGroup, Met: true, Blocking: []PipelineBlock{}}
	res.Phase, res.Reason = detectPhase(in, &res.Convergence)
	res.RemainingPhases = res.Phase.RemainingPhases()
	res.Convergence.Recommendation = Proceed
	if !res.Convergence.Met {
		res.Convergence.Recommendation = Wait
		for _, b := range res.Convergence.Blocking {
			if b.State == stHumanNeeded {
				res.Convergence.Recommendation = Escalate
			}
		}
	}
	res.SuggestedRoster = roster(res.Phase, in)
	return res
}

func detectPhase(in PipelineInput, conv *PipelineConvergence) (Phase, string) {
	is := in.Issues
	if len(is) == 0 {
		return PhaseTriage, "no issues to work on; triage first"
	}
	state := func(i PipelineIssue) string { return strings.TrimSpace(i.WorkflowState) }
	unset := func(i PipelineIssue) bool { s := state(i); return s == "" || strings.EqualFold(s, "unknown") }
	in1 := func(i PipelineIssue, states ...string) bool {
		for _, s := range states {
			if state(i) == s {
				return true
			}
		}
		return false
	}
	pick := func(f func(PipelineIssue) bool) []PipelineIssue {
		var out []PipelineIssue
		for _, i := range is {
			if f(i) {
				out = append(out, i)
			}
		}
		return out
	}
	// allCounting: every non-Canceled issue satisfies f, and there is at least one.
	allCounting := func(f func(PipelineIssue) bool) bool {
		n := 0
		for _, i := range is {
			if in1(i, stCanceled) {
				continue
			}
			if !f(i) {
				return false
			}
			n++
		}
		return n > 0
	}
	is1 := func(s string) func(PipelineIssue) bool { return func(i PipelineIssue) bool { return in1(i, s) } }
	block := func(list []PipelineIssue) {
		conv.Met = false
		for _, i := range list {
			conv.Blocking = append(conv.Blocking, PipelineBlock{Number: i.Number, State: state(i)})
		}
	}

	if big := pick(func(i PipelineIssue) bool {
		e := strings.ToUpper(strings.TrimSpace(i.Estimate))
		return (e == "M" || e == "L" || e == "XL") && i.SubIssueCount == 0
	}); len(big) > 0 {
		return PhaseSplit, fmt.Sprintf("%s estimated M or larger without sub-issues; split first", countIssues(big))
	}
	if u := pick(unset); len(u) > 0 {
		return PhaseTriage, fmt.Sprintf("%s no workflow state; triage first", countIssuesHave(u))
	}
	if r := pick(func(i PipelineIssue) bool { return in1(i, stResearch, stResearching) }); len(r) > 0 {
		block(r)
		return PhaseResearch, fmt.Sprintf("%s in %s or %s", countIssues(r), stResearch, stResearching)
	}
	if allCounting(is1(stReadyForPlan)) {
		return PhasePlan, "all issues are in " + stReadyForPlan
	}
	if p := pick(is1(stPlanning)); len(p) > 0 {
		return PhaseReview, fmt.Sprintf("%s in %s", countIssues(p), stPlanning)
	}
	if allCounting(is1(stPlanReview)) {
		return PhaseHumanGate, "all plans are in " + stPlanReview + ", awaiting approval"
	}
	if p := pick(is1(stPlanReview)); len(p) > 0 {
		return PhaseReview, fmt.Sprintf("%s in %s", countIssues(p), stPlanReview)
	}
	if p := pick(is1(stInProgress)); len(p) > 0 {
		return PhaseImplement, fmt.Sprintf("%s in %s", countIssues(p), stInProgress)
	}
	if len(pick(func(i PipelineIssue) bool { return in1(i, stInReview, stDone, stCanceled) })) == len(is) {
		review := pick(is1(stInReview))
		if in.Options.AutoMode && len(review) > 0 {
			return PhaseIntegrate, fmt.Sprintf("%s in %s and auto mode is on; integrate", countIssues(review), stInReview)
		}
		return PhaseTerminal, "all issues are in " + stInReview + ", " + stDone + " or " + stCanceled
	}
	if h := pick(is1(stHumanNeeded)); len(h) > 0 {
		return PhaseTerminal, fmt.Sprintf("%s in %s; a human must act", countIssues(h), stHumanNeeded)
	}
	if b := pick(is1(stBacklog)); len(b) > 0 {
		return PhaseTriage, fmt.Sprintf("%s in %s; triage first", countIssues(b), stBacklog)
	}
	if len(pick(is1(stReadyForPlan))) > 0 {
		block(pick(func(i PipelineIssue) bool { return !in1(i, stReadyForPlan, stCanceled) }))
		return PhasePlan, "some issues are in " + stReadyForPlan + " while others are further along; the group has not converged"
	}
	return PhaseTriage, "no phase matches the issues' states; triage first"
}

func countIssues(is []PipelineIssue) string {
	if len(is) == 1 {
		return fmt.Sprintf("#%d is", is[0].Number)
	}
	nums := make([]string, len(is))
	for i, x := range is {
		nums[i] = fmt.Sprintf("#%d", x.Number)
	}
	return fmt.Sprintf("%d issues (%s) are", len(is), strings.Join(nums, ", "))
}

func countIssuesHave(is []PipelineIssue) string {
	s := countIssues(is)
	if strings.HasSuffix(s, " is") {
		return strings.TrimSuffix(s, " is") + " has"
	}
	return strings.TrimSuffix(s, " are") + " have"
}

// roster implements the suggestedRoster of DetectPipeline.
func roster(p Phase, in PipelineInput) Roster {
	switch p {
	case PhaseTerminal:
		return Roster{}
	case PhaseIntegrate:
		return Roster{Integrator: 1}
	}
	var r Roster
	switch p {
	case PhaseSplit, PhaseTriage, PhaseResearch, PhasePlan:
		n := 0
		for _, i := range in.Issues {
			if s := strings.TrimSpace(i.WorkflowState); s == stResearch || s == stResearching {
				n++
			}
		}
		switch {
		case n <= 1:
			r.Analyst = 1
		case n <= 5:
			r.Analyst = 2
		default:
			r.Analyst = 3
		}
	}
	r.Builder = max(in.Options.StreamCount, 1)
	r.Builder = min(r.Builder, 3)
	r.Integrator = 1
	if len(in.Issues) >= 5 {
		r.Integrator = 2
	}
	return r
}
