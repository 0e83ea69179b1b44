// Package payload decodes what GitHub sends ralph-gate: webhook payloads (per event) and
// GraphQL response envelopes (data, errors, rate limits). It is pure decoding over bytes and
// headers, so that fuzz targets can exercise every byte GitHub controls without building the
// store or the queue.
//
// It must not import the store, the queue, enforce or any GitHub client: the standard library
// and go-github's payload types only.
package payload

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/go-github/v89/github"
)

// ErrMalformed marks a payload that is not what its event says; the intake answers 400.
var ErrMalformed = errors.New("malformed webhook payload")

// Webhook actions ralph-gate acts on.
const (
	ActionEdited   = "edited"
	ActionClosed   = "closed"
	ActionReopened = "reopened"
)

// FieldChange is a projects_v2_item event, reduced to what enforcement reads. Ignore says why
// the event is not a field value change at all ("" when it is one).
type FieldChange struct {
	Action         string
	Ignore         string
	ItemID         string
	ProjectID      string
	ProjectNumber  int
	Owner          string
	InstallationID int64
	ContentType    string
	Field          string
	// FromKnown is false when the payload carried no from value at all (GitHub marks it
	// optional); From "" with FromKnown means the item had no value.
	FromKnown bool
	From      string
	To        string
	Sender    string
	At        time.Time // the item's updated_at; zero when absent
}

// singleSelectValue is the from/to shape of a single-select field change.
type singleSelectValue struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// ProjectsV2Item decodes a projects_v2_item payload. An event that is well formed but not a
// field value edit comes back with Ignore set and no error.
func ProjectsV2Item(data []byte) (FieldChange, error) {
	var ev github.ProjectV2ItemEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return FieldChange{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	item := ev.GetProjectV2Item()
	if item == nil || item.GetNodeID() == "" {
		return FieldChange{}, fmt.Errorf("%w: no projects_v2_item.node_id", ErrMalformed)
	}
	fc := FieldChange{
		Action:         ev.GetAction(),
		ItemID:         item.GetNodeID(),
		ProjectID:      item.GetProjectNodeID(),
		Owner:          ev.GetOrg().GetLogin(),
		InstallationID: ev.GetInstallation().GetID(),
		Sender:         ev.GetSender().GetLogin(),
		At:             item.GetUpdatedAt().Time,
	}
	if ct := item.GetContentType(); ct != nil {
		fc.ContentType = string(*ct)
	}
	if fc.Action != ActionEdited {
		fc.Ignore = "only edits change the workflow field"
		return fc, nil
	}
	fv := ev.GetChanges().GetFieldValue()
	if fv == nil {
		fc.Ignore = "not a field value change"
		return fc, nil
	}
	fc.Field, fc.ProjectNumber = fv.GetFieldName(), int(fv.GetProjectNumber())
	var err error
	if fc.From, fc.FromKnown, err = option(fv.From); err != nil {
		return FieldChange{}, err
	}
	if fc.To, _, err = option(fv.To); err != nil {
		return FieldChange{}, err
	}
	return fc, nil
}

// option reads a from/to value: absent means unknown, null means no value.
func option(raw json.RawMessage) (name string, known bool, err error) {
	if len(raw) == 0 {
		return "", false, nil
	}
	if string(raw) == "null" {
		return "", true, nil
	}
	var v singleSelectValue
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", false, fmt.Errorf("%w: field value: %v", ErrMalformed, err)
	}
	return v.Name, true, nil
}

// IssueEvent is an issues event, reduced to what lifecycle sync reads.
type IssueEvent struct {
	Action         string
	Owner, Repo    string
	Number         int
	StateReason    string
	Sender         string
	InstallationID int64
	At             time.Time
}

// Issues decodes an issues payload. Only closed and reopened need the issue and repository;
// other actions decode to their Action and nothing else is checked.
func Issues(data []byte) (IssueEvent, error) {
	var ev github.IssuesEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return IssueEvent{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	out := IssueEvent{Action: ev.GetAction(), Sender: ev.GetSender().GetLogin(), InstallationID: ev.GetInstallation().GetID(),
		Owner: ev.GetRepo().GetOwner().GetLogin(), Repo: ev.GetRepo().GetName(), Number: ev.GetIssue().GetNumber(),
		StateReason: ev.GetIssue().GetStateReason(), At: ev.GetIssue().GetUpdatedAt().Time}
	if (out.Action == ActionClosed || out.Action == ActionReopened) && (ev.GetIssue() == nil || ev.GetRepo() == nil) {
		return IssueEvent{}, fmt.Errorf("%w: no issue or repository", ErrMalformed)
	}
	return out, nil
}

// PullRequestEvent is a pull_request event, reduced to what merge sync reads.
type PullRequestEvent struct {
	Action         string
	Merged         bool
	Owner, Repo    string
	Number         int
	Sender         string
	InstallationID int64
	MergedAt       time.Time
}

// PullRequest decodes a pull_request payload; a merge needs its repository.
func PullRequest(data []byte) (PullRequestEvent, error) {
	var ev github.PullRequestEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return PullRequestEvent{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	out := PullRequestEvent{Action: ev.GetAction(), Merged: ev.GetPullRequest().GetMerged(), Sender: ev.GetSender().GetLogin(),
		InstallationID: ev.GetInstallation().GetID(), Owner: ev.GetRepo().GetOwner().GetLogin(), Repo: ev.GetRepo().GetName(),
		Number: ev.GetNumber(), MergedAt: ev.GetPullRequest().GetMergedAt().Time}
	if out.Number == 0 {
		out.Number = ev.GetPullRequest().GetNumber()
	}
	if out.Action == ActionClosed && out.Merged && ev.GetRepo() == nil {
		return PullRequestEvent{}, fmt.Errorf("%w: no repository", ErrMalformed)
	}
	return out, nil
}
