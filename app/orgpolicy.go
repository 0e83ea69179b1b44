package app

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/handlers"
	"github.com/ralph-gate/ralph-gate/policy"
)

// orgPolicies is each organization's policy in force, when config.yml lists no projects
// (docs/CONFIGURATION.md "Policy in the organization's repository"): read from the
// organization's repository at start, when the App is installed, and on every push that
// changes the file. Only a valid file is put in force; the store keeps it (and the newest
// refused push), so a restart enforces it before GitHub is read again.
type orgPolicies struct {
	base     config.Config // the deployment's: what the organizations' files extend
	appLogin string
	mu       sync.RWMutex
	// by lower-case owner: the policies put in force, oldest first (the newest keptPolicies):
	// a change is judged by the one in force when it was made (enforce.Policies).
	by map[string][]orgPolicy
}

// keptPolicies is how many of an organization's policies stay known: a change is judged at
// most enforcement.gap_hold after it was made, and pushes come minutes apart.
const keptPolicies = 16

// orgPolicy is one organization's policy in force.
type orgPolicy struct {
	owner        string
	installation int64
	sha          string // the commit its file was read from
	loadedAt     time.Time
	cfg          config.Config // the deployment's configuration with the organization's sections
	machine      *policy.Machine
	actors       policy.Actors
}

func newOrgPolicies(base config.Config, appLogin string) *orgPolicies {
	return &orgPolicies{base: base, appLogin: appLogin, by: map[string][]orgPolicy{}}
}

// compile validates an organization's file against the deployment's configuration and
// builds its policy; the problems are the file's, by key path and line.
func (p *orgPolicies) compile(owner string, installation int64, sha string, text []byte, at time.Time) (orgPolicy, config.Problems) {
	cfg, problems := p.base.ForOrganization(owner, text)
	if len(problems) > 0 {
		return orgPolicy{}, problems
	}
	m, err := cfg.Machine()
	if err != nil {
		return orgPolicy{}, config.Problems{{Path: "workflow", Message: err.Error()}}
	}
	return orgPolicy{owner: owner, installation: installation, sha: sha, loadedAt: at, cfg: cfg, machine: m,
		actors: cfg.PolicyActors(p.appLogin)}, nil
}

// put puts an organization's policy in force, from its loadedAt on. The policies are kept in
// the order they were put in force, whatever order they come in (a replica's refresh may bring
// an older one after a newer): the newest is the one in force now.
func (p *orgPolicies) put(op orgPolicy) {
	p.mu.Lock()
	defer p.mu.Unlock()
	key := strings.ToLower(op.owner)
	list := p.by[key]
	i := len(list)
	for i > 0 && list[i-1].loadedAt.After(op.loadedAt) {
		i--
	}
	if i > 0 && list[i-1].loadedAt.Equal(op.loadedAt) && list[i-1].sha == op.sha {
		return // known already
	}
	list = slices.Insert(slices.Clone(list), i, op)
	if len(list) > keptPolicies {
		list = list[len(list)-keptPolicies:]
	}
	p.by[key] = list
}

// forget drops an organization's policy: none of its projects is enforced any more.
func (p *orgPolicies) forget(owner string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.by, strings.ToLower(owner))
}

// get is an organization's policy in force.
func (p *orgPolicies) get(owner string) (orgPolicy, bool) { return p.at(owner, time.Time{}) }

// at is the organization's policy in force at a time (zero: now): the newest in force by then
// (enforce.InForceFrom: from the second after it was put in force), or the oldest known for a
// time before it.
func (p *orgPolicies) at(owner string, at time.Time) (orgPolicy, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	list := p.by[strings.ToLower(owner)]
	if len(list) == 0 {
		return orgPolicy{}, false
	}
	if at.IsZero() {
		return list[len(list)-1], true
	}
	for i := len(list) - 1; i > 0; i-- {
		if !enforce.InForceFrom(list[i].loadedAt).After(at) {
			return list[i], true
		}
	}
	return list[0], true
}

// all lists the policies in force, by owner.
func (p *orgPolicies) all() []orgPolicy {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make([]orgPolicy, 0, len(p.by))
	for _, list := range p.by {
		out = append(out, list[len(list)-1])
	}
	slices.SortFunc(out, func(a, b orgPolicy) int { return strings.Compare(strings.ToLower(a.owner), strings.ToLower(b.owner)) })
	return out
}

// Of implements enforce.Policies.
func (p *orgPolicies) Of(owner string, at time.Time) (*policy.Machine, policy.Actors, bool) {
	op, ok := p.at(owner, at)
	return op.machine, op.actors, ok
}

// Mode implements enforce.Policies: the project's mode under the policy of the time; false
// when that policy did not list the project (then the policy in force's, Options.Mode).
func (p *orgPolicies) Mode(owner string, number int, at time.Time) (enforce.Mode, bool) {
	op, ok := p.at(owner, at)
	if !ok || !op.cfg.Enforces(owner, number) {
		return "", false
	}
	return enforce.Mode(op.cfg.ModeOf(owner, number)), true
}

var _ enforce.Policies = (*orgPolicies)(nil)

// enforces reports whether a project is one its organization's policy enforces.
func (p *orgPolicies) enforces(owner string, number int) bool {
	op, ok := p.get(owner)
	return ok && op.cfg.Enforces(owner, number)
}

// mode is a project's mode under its organization's policy.
func (p *orgPolicies) mode(owner string, number int) enforce.Mode {
	op, ok := p.get(owner)
	if !ok {
		return enforce.ModeEnforce
	}
	return enforce.Mode(op.cfg.ModeOf(owner, number))
}

// scope is what an organization's webhooks are taken in for.
func (p *orgPolicies) scope(owner string) (handlers.Scope, bool) {
	op, ok := p.get(owner)
	if !ok {
		return handlers.Scope{}, false
	}
	s := handlers.Scope{Field: op.machine.Field(), Required: op.machine.RequiredFields()}
	for _, pr := range op.cfg.Projects {
		s.Projects = append(s.Projects, handlers.Project{Owner: pr.Owner, Number: pr.Number})
	}
	return s, true
}

// projects lists every organization's enforced projects.
func (p *orgPolicies) projects() []config.Project {
	var out []config.Project
	for _, op := range p.all() {
		out = append(out, op.cfg.Projects...)
	}
	return out
}

// problemLines words problems one per line, with their lines in the file.
func problemLines(problems config.Problems) string {
	lines := make([]string, 0, len(problems))
	for _, pr := range problems {
		at := ""
		if pr.Line > 0 {
			at = fmt.Sprintf(" (line %d)", pr.Line)
		}
		lines = append(lines, pr.Path+at+": "+pr.Message)
	}
	return strings.Join(lines, "\n")
}

// projects lists the enforced projects: config.yml's, or every organization's own.
func (a *App) projects() []config.Project {
	if a.orgs != nil {
		return a.orgs.projects()
	}
	return a.cfg.Projects
}

// ofAgent is the organization an MCP agent works for: the one config.yml binds it to
// (mcp.agents[].org), else the one whose file names it under mcp.agents. An agent several
// organizations name works for none of them, so that no call of its reaches another
// organization's board by mistake: name each agent in one organization's file.
func (p *orgPolicies) ofAgent(agent string) (orgPolicy, bool) {
	bound := ""
	if a, ok := p.base.MCPAgentNamed(agent); ok {
		bound = a.Org
	}
	var found []orgPolicy
	for _, op := range p.all() {
		if bound != "" {
			if strings.EqualFold(op.owner, bound) {
				found = append(found, op)
			}
			continue
		}
		if _, ok := op.cfg.MCPAgentNamed(agent); ok {
			found = append(found, op)
		}
	}
	if len(found) != 1 {
		return orgPolicy{}, false
	}
	return found[0], true
}
