package enforce

import (
	"strings"
	"time"

	"github.com/ralph-gate/ralph-gate/policy"
)

// Policies gives each organization its own workflow, actors and modes (docs/CONFIGURATION.md
// "Policy in the organization's repository"): one deployment serves organizations whose
// policies differ, each read from its own repository, and changed by a push. A change is
// judged by the policy its organization had in force when the change was made (its time, as
// GitHub gives it): a policy put in force is a step of every item's history, as a field's
// edit is, so a change made before a push is judged as before it, however late its report.
// Automation is held to the policy of its cause's time, a façade call to the one in force.
type Policies interface {
	// Of is the workflow and actors of an organization's projects at a time: a policy put in
	// force during a second is in force for the changes made from the next second on
	// (GitHub dates changes to the second); false: the organization has none of its own, and
	// the deployment's are used (Options.Enforced decides whether its projects are enforced at
	// all).
	Of(owner string, at time.Time) (*policy.Machine, policy.Actors, bool)
	// Mode is a project's mode at a time, as Of; false: Options.Mode's.
	Mode(owner string, number int, at time.Time) (Mode, bool)
}

// machineAt is the workflow an organization's projects were held to at a time (zero: now).
func (c *core) machineAt(owner string, at time.Time) *policy.Machine {
	m, _ := c.policyAt(owner, at)
	return m
}

// classify is the kind of an actor of an organization at a time (zero: now).
func (c *core) classify(owner, login string, at time.Time) policy.ActorKind {
	_, a := c.policyAt(owner, at)
	return a.Classify(login)
}

// policyAt is an organization's workflow and actors at a time: its own (Options.Policies),
// else the deployment's. The app's own login is always the app.
func (c *core) policyAt(owner string, at time.Time) (*policy.Machine, policy.Actors) {
	if c.opts.Policies != nil && owner != "" {
		if at.IsZero() {
			at = c.now()
		}
		if m, a, ok := c.opts.Policies.Of(owner, at); ok && m != nil {
			a.App = c.opts.AppLogin
			return m, a
		}
	}
	return c.machine, c.actors
}

// modeAt is a project's mode at a time (zero: now).
func (c *core) modeAt(owner string, number int, at time.Time) Mode {
	if c.opts.Policies != nil && owner != "" {
		if at.IsZero() {
			at = c.now()
		}
		if m, ok := c.opts.Policies.Mode(owner, number, at); ok && m.Valid() {
			return m
		}
	}
	return ModeIn(c.opts.Mode, owner, number)
}

// ownerOfRepo is the owner part of "owner/name" ("" when repo names none).
func ownerOfRepo(repo string) string {
	owner, _, ok := strings.Cut(repo, "/")
	if !ok {
		return ""
	}
	return owner
}

// org is the organization whose project the walk's item is on: the change's owner, else the
// item's as read, else the owner of its issue's repository (an organization's project holds
// its own repositories' issues).
func (w *walk) org() string {
	switch {
	case w.owner != "":
		return w.owner
	case w.read && w.it.Owner != "":
		return w.it.Owner
	case w.pre != nil && w.pre.Owner != "":
		return w.pre.Owner
	}
	return ownerOfRepo(w.rec.Repo)
}

// InForceFrom is when a policy put in force at t starts to hold: the next second (GitHub dates
// changes to the second, so a change of t's own second may have been made before it).
func InForceFrom(t time.Time) time.Time { return t.Truncate(time.Second).Add(time.Second) }
