// Package handlers holds one thin handler per webhook event. Each decodes the payload,
// enriches the logger, returns early for "not for us" (with a debug line saying why) and
// hands the rest to a durable queue; the work itself happens in package enforce.
package handlers

import (
	"context"
	"strings"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/payload"
)

// Event names this package handles.
const (
	EventProjectsV2Item = "projects_v2_item"
	EventIssues         = "issues"
	EventPullRequest    = "pull_request"
)

// Log keys used on every line about one webhook.
const (
	LogKeyOrg      = "org"
	LogKeyProject  = "project"
	LogKeyItem     = "item"
	LogKeyActor    = "actor"
	LogKeyDelivery = "delivery"
)

// ErrMalformed marks a payload that is not what its event says; the intake answers 400.
// Decoding lives in package payload (fuzzed there); this is the same error.
var ErrMalformed = payload.ErrMalformed

// Enqueuer stores work durably; it returns only when the work will survive a crash.
type Enqueuer interface {
	EnqueueChange(ctx context.Context, ch enforce.Change) error
	EnqueueLifecycle(ctx context.Context, ev enforce.Lifecycle) error
}

// Project names an enforced project.
type Project struct {
	Owner  string
	Number int
}

// Scope says which changes are enforced.
type Scope struct {
	Projects []Project
	Field    string // the workflow field's name
	AppLogin string // our own "<slug>[bot]"
	// Required names the fields workflow.requirements check: their edits are recorded in
	// their items' histories too (a move is checked against them as they were when it was
	// made).
	Required []string
	// ByOwner, when set, gives each organization its own projects, workflow field and
	// required fields (its policy, read from its repository: docs/CONFIGURATION.md "Policy in
	// the organization's repository"); false: none of its projects is enforced. Projects,
	// Field and Required are then not used.
	ByOwner func(owner string) (Scope, bool)
}

// of is an organization's scope: false when none of its projects is enforced.
func (s Scope) of(owner string) (Scope, bool) {
	if s.ByOwner == nil {
		for _, p := range s.Projects {
			if strings.EqualFold(p.Owner, owner) {
				return s, true
			}
		}
		return s, false
	}
	o, ok := s.ByOwner(owner)
	o.AppLogin = s.AppLogin
	return o, ok && len(o.Projects) > 0
}

func (s Scope) enforced(owner string, number int) bool {
	for _, p := range s.Projects {
		if strings.EqualFold(p.Owner, owner) && p.Number == number {
			return true
		}
	}
	return false
}
