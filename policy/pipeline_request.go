package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// DecodePipelineRequest decodes a pipeline request (the JSON `ralph-gate policy pipeline` reads)
// strictly: a misspelt key is an error, not a silent zero. Errors end in a Recovery line.
func DecodePipelineRequest(data []byte) (PipelineInput, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var in PipelineInput
	if err := dec.Decode(&in); err != nil {
		return PipelineInput{}, fmt.Errorf("input is not a pipeline request: %v. Recovery: send {\"issues\":[{\"number\":1,\"title\":\"…\",\"workflowState\":\"Backlog\",\"estimate\":\"S\",\"subIssueCount\":0}],\"isGroup\":false,\"groupPrimary\":1,\"options\":{\"autoMode\":false,\"streamCount\":1}}", err)
	}
	if dec.More() {
		return PipelineInput{}, errors.New("input has more than one JSON value. Recovery: send exactly one JSON object")
	}
	for i, issue := range in.Issues {
		if issue.Number <= 0 {
			return PipelineInput{}, fmt.Errorf("issues[%d] has no positive number. Recovery: give every issue its issue number", i)
		}
		if issue.SubIssueCount < 0 {
			return PipelineInput{}, fmt.Errorf("issues[%d].subIssueCount is negative. Recovery: send the number of sub-issues (0 or more)", i)
		}
	}
	if in.Options.StreamCount < 0 {
		return PipelineInput{}, errors.New("options.streamCount is negative. Recovery: send 0 (unknown) or the number of work streams")
	}
	return in, nil
}
