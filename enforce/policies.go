package enforce

import (
	"strings"

	"github.com/ralph-gate/ralph-gate/policy"
)

// Policies gives each organization its own workflow and actors (docs/CONFIGURATION.md
// "Policy in the organization's repository"): one deployment serves organizations whose
// policies differ, each read from its own repository. A change is judged by the policy of
// the organization that owns its project, as that policy stands when the change is judged.
type Policies interface {
	// Of is the workflow and actors of an organization's projects; false: the organization
	// has none of its own, and the deployment's are used (Options.Enforced decides whether
	// its projects are enforced at all).
	Of(owner string) (*policy.Machine, policy.Actors, bool)
}

// machineOf is the workflow an organization's projects are held to.
func (c *core) machineOf(owner string) *policy.Machine {
	m, _ := c.policyOf(owner)
	return m
}

// classify is the kind of an actor of an organization.
func (c *core) classify(owner, login string) policy.ActorKind {
	_, a := c.policyOf(owner)
	return a.Classify(login)
}

// policyOf is an organization's workflow and actors: its own (Options.Policies), else the
// deployment's. The app's own login is always the app.
func (c *core) policyOf(owner string) (*policy.Machine, policy.Actors) {
	if c.opts.Policies != nil && owner != "" {
		if m, a, ok := c.opts.Policies.Of(owner); ok && m != nil {
			a.App = c.opts.AppLogin
			return m, a
		}
	}
	return c.machine, c.actors
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
