// Package payload decodes what GitHub sends ralph-gate: webhook payloads (per event) and
// GraphQL response envelopes (data, errors, rate limits). It is pure decoding over bytes and
// headers, so that fuzz targets can exercise every byte GitHub controls without building the
// store or the queue.
//
// It must not import the store, the queue, enforce or any GitHub client: the standard library
// and go-github's payload types only.
package payload

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
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

// FieldChange is a projects_v2_item event, reduced to what routing and enforcement read.
// Ignore says why the event is not a field value change at all ("" when it is one).
//
// GitHub's published schema (@octokit/openapi-webhooks, webhook-projects-v2-item-edited)
// marks every member of changes.field_value optional, and from/to may be a string (text,
// date), a number, a single-select option, an iteration, null, or an object that is none of
// these. Only the members routing needs are decoded, and a value of any kind decodes: what
// it is says which fields it can belong to (Kind), never whether the payload is malformed.
type FieldChange struct {
	Action    string
	Ignore    string
	ItemID    string
	ProjectID string // the project's node id (projects_v2_item.project_node_id)
	// ProjectNumber is 0 when the payload does not say (project_number is optional).
	ProjectNumber  int
	Owner          string
	InstallationID int64
	ContentType    string
	// Field is the changed field's name, "" when the payload does not say (field_name is
	// optional: GitHub's published example carries only field_node_id and field_type).
	Field string
	// FieldNodeID and FieldType are as sent ("" when absent); FieldType is "single_select",
	// "text", "number", "date" or "iteration".
	FieldNodeID string
	FieldType   string
	// Kind is what from and to say of the field (see SingleSelect).
	Kind ValueKind
	// FromKnown is false when the payload carried no readable single-select from value (absent,
	// or not an option); From "" with FromKnown means the item had no value (null). ToKnown
	// and To likewise.
	FromKnown bool
	From      string
	ToKnown   bool
	To        string
	// Value is the change as any field's, for a field workflow.requirements names: its from
	// and to as text (an option's or iteration's name, a string, a number; "" for null), each
	// known only when the payload carries a readable value.
	Value  ValueChange
	Sender string
	At     time.Time // the item's updated_at; zero when absent or unreadable
}

// ValueChange is a field's from and to values as text (FieldChange.Value).
type ValueChange struct {
	FromKnown, ToKnown bool
	From, To           string
}

// ValueKind is what the from and to values of a field value change say of the field's type.
type ValueKind int

const (
	// KindUnknown: from and to are absent, null, or objects that are neither an option nor an
	// iteration; they say nothing of the field's type.
	KindUnknown ValueKind = iota
	// KindOption: a single-select option on one side at least, and nothing that is not one.
	KindOption
	// KindOther: a string (text, date), a number, an iteration or any other value that no
	// single-select field holds, on one side at least.
	KindOther
)

// FieldTypeSingleSelect is field_type for a single-select field.
const FieldTypeSingleSelect = "single_select"

// SingleSelect says whether the changed field is a single-select field, as far as the payload
// tells: a value no single-select field holds, or another field_type, says it is not; an
// option, or field_type single_select, says it is. known is false when nothing tells.
func (fc FieldChange) SingleSelect() (yes, known bool) {
	switch {
	case fc.Kind == KindOther:
		return false, true
	case fc.FieldType != "" && !strings.EqualFold(fc.FieldType, FieldTypeSingleSelect):
		return false, true
	case fc.FieldType != "" || fc.Kind == KindOption:
		return true, true
	}
	return false, false
}

// ProjectsV2Item decodes a projects_v2_item payload. Only the members routing and enforcement
// read are decoded, by their exact names (encoding/json would match struct fields case-
// insensitively, so a stray "Action" could shadow "action"). An event that is well formed but
// not a field value edit, or names no item, comes back with Ignore set and no error; a payload
// that is not a JSON object, lacks projects_v2_item, or has a member read here of the wrong
// JSON type (an item that is not an object, an action that is not a string, …) is
// ErrMalformed. Members that only refine routing (project_number, updated_at,
// installation.id, from, to) are read leniently: a value that cannot be used is unknown.
func ProjectsV2Item(data []byte) (FieldChange, error) {
	fc, err := projectsV2Item(data)
	if err != nil {
		return FieldChange{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return fc, nil
}

func projectsV2Item(data []byte) (FieldChange, error) {
	ev, ok, err := object(data, "the payload")
	if err != nil || !ok {
		return FieldChange{}, cmp.Or(err, errors.New("the payload is null"))
	}
	item, ok, err := ev.object("projects_v2_item")
	if err != nil || !ok {
		return FieldChange{}, cmp.Or(err, errors.New("no projects_v2_item"))
	}
	var fc FieldChange
	var errs []error
	readString := func(o members, key string, dst *string) { errs = append(errs, o.str(key, dst)) }
	readString(ev, "action", &fc.Action)
	readString(item, "node_id", &fc.ItemID)
	readString(item, "project_node_id", &fc.ProjectID)
	readString(item, "content_type", &fc.ContentType)
	fc.At = timestamp(item["updated_at"])
	org, _, err := ev.object("organization")
	errs = append(errs, err)
	readString(org, "login", &fc.Owner)
	sender, _, err := ev.object("sender")
	errs = append(errs, err)
	readString(sender, "login", &fc.Sender)
	inst, _, err := ev.object("installation")
	errs = append(errs, err)
	fc.InstallationID, _ = integer(inst["id"])
	changes, _, err := ev.object("changes")
	errs = append(errs, err)
	fv, hasFieldValue, err := changes.object("field_value")
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return FieldChange{}, err
	}
	switch {
	case fc.Action != ActionEdited:
		fc.Ignore = "only edits change the workflow field"
		return fc, nil
	case fc.ItemID == "":
		// GitHub's schema does not require projects_v2_item.node_id; without it there is
		// nothing to read back or enforce, and refusing would only have it redelivered.
		fc.Ignore = "the payload names no item (projects_v2_item.node_id)"
		return fc, nil
	case !hasFieldValue:
		fc.Ignore = "not a field value change"
		return fc, nil
	}
	readString(fv, "field_name", &fc.Field)
	readString(fv, "field_node_id", &fc.FieldNodeID)
	readString(fv, "field_type", &fc.FieldType)
	if err := errors.Join(errs...); err != nil {
		return FieldChange{}, err
	}
	if n, ok := integer(fv["project_number"]); ok && n > 0 && n <= math.MaxInt32 {
		fc.ProjectNumber = int(n)
	}
	from, to := readValue(fv["from"]), readValue(fv["to"])
	fc.Value = ValueChange{FromKnown: from.textKnown, From: from.text, ToKnown: to.textKnown, To: to.text}
	fc.From, fc.FromKnown = from.name, from.known
	fc.To, fc.ToKnown = to.name, to.known
	switch {
	case from.kind == KindOther || to.kind == KindOther:
		fc.Kind = KindOther
		fc.From, fc.FromKnown, fc.To, fc.ToKnown = "", false, "", false
	case from.kind == KindOption || to.kind == KindOption:
		fc.Kind = KindOption
	}
	return fc, nil
}

// members is a JSON object's members by exact name.
type members map[string]json.RawMessage

// object decodes raw as a JSON object; ok is false for absent or null.
func object(raw json.RawMessage, what string) (members, bool, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, false, nil
	}
	var m members
	if raw[0] != '{' || json.Unmarshal(raw, &m) != nil {
		return nil, false, fmt.Errorf("%s is not a JSON object", what)
	}
	return m, true, nil
}

// object is member key as an object (ok false when absent or null).
func (m members) object(key string) (members, bool, error) { return object(m[key], key) }

// str reads member key as a string into dst ("" when absent or null).
func (m members) str(key string, dst *string) error {
	raw := m[key]
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	s, ok := unquote(raw)
	if !ok {
		return fmt.Errorf("%s is not a string", key)
	}
	*dst = s
	return nil
}

// unquote reads a JSON string (ok false for any other value).
func unquote(raw json.RawMessage) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if inner := raw[1 : len(raw)-1]; bytes.IndexByte(inner, '\\') < 0 {
		return string(inner), true // no escapes: the common case, without a decoder
	}
	var s string
	return s, json.Unmarshal(raw, &s) == nil
}

// fieldValue is one side (from or to) of a field value change, as far as routing reads it.
type fieldValue struct {
	name  string    // the option's name ("" for null)
	known bool      // an option, or null (no value)
	kind  ValueKind // KindUnknown for absent, null and unreadable objects
	// text is the value of any field type as text (an option's or an iteration's name, a
	// string, a number as sent; "" for null), textKnown false when absent or unreadable.
	text      string
	textKnown bool
}

// readValue reads a from/to value. Absent means unknown and null means no value; an object
// with a string "name" is a single-select option; an object with neither "name" nor "title"
// (GitHub's schema allows {}) tells nothing; anything else — a string, a number, an
// iteration ({id, title, …}), a boolean, an array — is a value of a field that is not a
// single-select field. Nothing here is an error: the outer decoding has checked the JSON.
func readValue(raw json.RawMessage) fieldValue {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0:
		return fieldValue{}
	case string(raw) == "null":
		return fieldValue{known: true, textKnown: true}
	}
	obj, _, err := object(raw, "the value")
	if err != nil {
		v := fieldValue{kind: KindOther}
		if s, ok := unquote(raw); ok {
			v.text, v.textKnown = s, true
		} else if _, err := strconv.ParseFloat(string(raw), 64); err == nil {
			v.text, v.textKnown = string(raw), true
		}
		return v
	}
	name, hasName := obj["name"]
	title, hasTitle := obj["title"]
	if !hasName && !hasTitle {
		return fieldValue{}
	}
	s, ok := unquote(name)
	if !ok {
		v := fieldValue{kind: KindOther}
		v.text, v.textKnown = unquote(title) // an iteration
		return v
	}
	return fieldValue{name: s, known: true, kind: KindOption, text: s, textKnown: true}
}

// integer reads a JSON number that holds an integer (1, 1.0, 1e3); ok is false for anything
// else, including absent and null.
func integer(raw json.RawMessage) (int64, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return 0, false
	}
	if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}

// timestamp reads updated_at: an RFC 3339 string (or, as go-github accepts, Unix seconds);
// the zero time when it is absent or unreadable (the receipt time dates the change then).
func timestamp(raw json.RawMessage) time.Time {
	if s, ok := unquote(raw); ok {
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			return t
		}
		return time.Time{}
	}
	if n, ok := integer(raw); ok && n > 0 {
		return time.Unix(n, 0)
	}
	return time.Time{}
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

// PushEvent is a push event, reduced to what the policy's validation reads: the commit pushed
// to, the branch, and every file its commits touched.
type PushEvent struct {
	Owner, Repo   string
	Ref           string // "refs/heads/main"
	DefaultBranch string
	After         string // the commit pushed to
	Deleted       bool   // the branch was deleted
	// Forced and Created: a force-push or a new branch, whose commits list is not every change
	// (GitHub lists the commits new to the repository, at most 20).
	Forced, Created bool
	// Sender is who pushed (the person who merged a pull request, for a merge); SenderType
	// is GitHub's type of that account: User, or Bot for an App or a bot account.
	Sender, SenderType string
	InstallationID     int64
	// Private: the repository is private (a check run on a public one is public).
	Private bool
	// Files are the paths the push's commits added, modified or removed; Commits how many
	// commits the payload lists (GitHub lists at most 20: a longer push's files are in part).
	Files   []string
	Commits int
}

// Branch is the branch pushed to ("" when the ref is a tag).
func (ev PushEvent) Branch() string {
	b, ok := strings.CutPrefix(ev.Ref, "refs/heads/")
	if !ok {
		return ""
	}
	return b
}

// Push decodes a push payload; it needs its repository and the commit pushed to.
func Push(data []byte) (PushEvent, error) {
	var ev github.PushEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return PushEvent{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	repo := ev.GetRepo()
	out := PushEvent{Owner: repo.GetOwner().GetLogin(), Repo: repo.GetName(), Ref: ev.GetRef(), DefaultBranch: repo.GetDefaultBranch(),
		After: ev.GetAfter(), Deleted: ev.GetDeleted(), Forced: ev.GetForced(), Created: ev.GetCreated(),
		Sender: ev.GetSender().GetLogin(), SenderType: ev.GetSender().GetType(), InstallationID: ev.GetInstallation().GetID(),
		Private: repo.GetPrivate()}
	if out.Owner == "" {
		out.Owner = repo.GetOwner().GetName() // (a push payload's repository owner may carry name only)
	}
	if out.Owner == "" || out.Repo == "" || out.Ref == "" {
		return PushEvent{}, fmt.Errorf("%w: no repository or ref", ErrMalformed)
	}
	seen := map[string]bool{}
	out.Commits = len(ev.Commits)
	for _, c := range ev.Commits {
		for _, list := range [][]string{c.Added, c.Modified, c.Removed} {
			for _, f := range list {
				if !seen[f] {
					seen[f] = true
					out.Files = append(out.Files, f)
				}
			}
		}
	}
	return out, nil
}

// InstallationEvent is an installation or installation_repositories event, reduced to the
// organization it concerns.
type InstallationEvent struct {
	Action         string // created, deleted, suspend, unsuspend, new_permissions_accepted; added, removed
	InstallationID int64
	Account        string
	Sender         string
}

// Installation decodes an installation (or installation_repositories) payload; it needs the
// installation and its account.
func Installation(data []byte) (InstallationEvent, error) {
	var ev github.InstallationEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return InstallationEvent{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	inst := ev.GetInstallation()
	out := InstallationEvent{Action: ev.GetAction(), InstallationID: inst.GetID(), Account: inst.GetAccount().GetLogin(), Sender: ev.GetSender().GetLogin()}
	if out.InstallationID == 0 || out.Account == "" {
		return InstallationEvent{}, fmt.Errorf("%w: no installation or account", ErrMalformed)
	}
	return out, nil
}
