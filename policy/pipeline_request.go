package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// pipelineExample is a well-formed pipeline request, for Recovery lines.
const pipelineExample = `{"issues":[{"number":1,"title":"…","workflowState":"Backlog","estimate":"S","subIssueCount":0}],"isGroup":false,"groupPrimary":1,"options":{"autoMode":false,"streamCount":1}}`

// DecodePipelineRequest decodes a pipeline request (the JSON `ralph-gate policy pipeline` reads)
// strictly: a misspelt key or a workflowState pipeline detection does not know is an error,
// not a silent zero or a silent TRIAGE. Every error is a *Refusal naming the JSON path to fix.
func DecodePipelineRequest(data []byte) (PipelineInput, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var in PipelineInput
	if err := dec.Decode(&in); err != nil {
		return PipelineInput{}, &Refusal{Tried: "The input is not a pipeline request", Why: err.Error(),
			Recovery: "send " + pipelineExample, Options: []string{}, Rule: RuleArguments}
	}
	if dec.More() {
		return PipelineInput{}, &Refusal{Tried: "The input has more than one JSON value", Why: "a pipeline request is one JSON object",
			Recovery: "send exactly one JSON object", Options: []string{}, Rule: RuleArguments}
	}
	for i, issue := range in.Issues {
		if issue.Number <= 0 {
			return PipelineInput{}, &Refusal{Tried: fmt.Sprintf("issues[%d] has no positive number", i),
				Why: "reasons and blocking lists name issues by number", Recovery: fmt.Sprintf("send issues[%d].number as the issue's number", i), Options: []string{}, Rule: RuleArguments}
		}
		if issue.SubIssueCount < 0 {
			return PipelineInput{}, &Refusal{Tried: fmt.Sprintf("issues[%d].subIssueCount is negative", i),
				Why: "it counts the issue's sub-issues", Recovery: fmt.Sprintf("send issues[%d].subIssueCount as the number of sub-issues (0 or more)", i), Options: []string{}, Rule: RuleArguments}
		}
		if !IsPipelineState(issue.WorkflowState) {
			return PipelineInput{}, unknownPipelineState(i, issue.WorkflowState)
		}
	}
	if in.Options.StreamCount < 0 {
		return PipelineInput{}, &Refusal{Tried: "options.streamCount is negative", Why: "it counts the work streams",
			Recovery: "send options.streamCount as 0 (unknown) or the number of work streams", Options: []string{}, Rule: RuleArguments}
	}
	return in, nil
}

// unknownPipelineState refuses issues[i].workflowState, listing the states pipeline detection knows.
func unknownPipelineState(i int, state string) *Refusal {
	states := PipelineStates()
	hint := ""
	for _, s := range states {
		if strings.EqualFold(strings.TrimSpace(state), s) {
			hint = fmt.Sprintf(" (names are case-sensitive; did you mean %q?)", s)
		}
	}
	quoted := make([]string, len(states))
	for j, s := range states {
		quoted[j] = quoteState(s)
	}
	return &Refusal{
		Tried:    fmt.Sprintf("issues[%d].workflowState %q is not a workflow state", i, state),
		Why:      "Pipeline detection knows " + strings.Join(states, ", ") + `, and "" for an issue with no state` + hint,
		Recovery: fmt.Sprintf(`send issues[%d].workflowState as one of %s, or "" when the issue has no state`, i, strings.Join(quoted, ", ")),
		Options:  states,
		Unknown:  true,
		Rule:     RuleArguments,
	}
}
