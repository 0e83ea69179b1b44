package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/health"
	"github.com/ralph-gate/ralph-gate/mcpserver/toolspec"
	"github.com/ralph-gate/ralph-gate/policy"
)

// HealthReporter computes the board health report from the store (health.Reader implements
// it): board_health costs no GitHub request.
type HealthReporter interface {
	Report(ctx context.Context, now time.Time) (health.Report, error)
}

// boardHealth answers board_health: the report of every enforced project, of one organization's
// (owner), or of the one asked (project, a number as every tool takes it; owner when the
// enforced projects belong to several organizations and the number is on more than one).
func (s *server) boardHealth(ctx context.Context, _ string, in toolspec.HealthInput) (health.Report, error) {
	if s.opts.Health == nil {
		return health.Report{}, errors.New("the board health report is not wired into this server")
	}
	keep, err := s.healthProjects(in)
	if err != nil {
		return health.Report{}, err
	}
	if keep == nil && s.opts.Scope != nil {
		// An agent sees its organization's projects only (none when it works for none).
		keep = append([]enforce.ProjectRef{}, s.opts.Projects...)
	}
	rep, err := s.opts.Health.Report(ctx, s.now())
	if err != nil {
		return health.Report{}, err
	}
	if s.opts.Scope != nil {
		orgs := rep.Orgs[:0]
		for _, o := range rep.Orgs {
			if slices.ContainsFunc(s.opts.Projects, func(p enforce.ProjectRef) bool { return strings.EqualFold(p.Owner, o.Owner) }) {
				orgs = append(orgs, o)
			}
		}
		rep.Orgs = orgs
		// The façade's use by the organization's agents only (the calls per tool are every
		// organization's together, and name nobody).
		for _, w := range []*health.FacadeWindow{&rep.Facade.Hour, &rep.Facade.Day} {
			w.Agents = slices.DeleteFunc(slices.Clone(w.Agents), func(u health.Usage) bool {
				return !slices.ContainsFunc(s.opts.Agents, func(a Agent) bool { return strings.EqualFold(a.Name, u.Name) })
			})
		}
	}
	if keep != nil {
		kept := rep.Projects[:0]
		for _, p := range rep.Projects {
			if slices.ContainsFunc(keep, func(k enforce.ProjectRef) bool { return strings.EqualFold(k.Owner, p.Owner) && k.Number == p.Number }) {
				kept = append(kept, p)
			}
		}
		rep.Projects = kept
	}
	return rep, nil
}

// healthProjects are the projects board_health reports on: nil for every one.
func (s *server) healthProjects(in toolspec.HealthInput) ([]enforce.ProjectRef, error) {
	if in.Owner == "" && in.Project == 0 {
		return nil, nil
	}
	var owner string
	if in.Owner != "" {
		o, err := s.resolveOwner(in.Owner)
		if err != nil {
			return nil, err
		}
		owner = o
	}
	var keep []enforce.ProjectRef
	var numbers []string
	for _, p := range s.opts.Projects {
		if owner != "" && !strings.EqualFold(p.Owner, owner) {
			continue
		}
		numbers = append(numbers, strconv.Itoa(p.Number))
		if in.Project == 0 || p.Number == in.Project {
			keep = append(keep, p)
		}
	}
	if len(keep) == 0 {
		where := "is not enforced"
		if owner != "" {
			where = "of " + owner + " is not enforced"
		}
		return nil, policy.NewRetryRefusal(fmt.Sprintf("Project %d %s", in.Project, where),
			"the report covers only the configured projects",
			policy.Retry{With: []policy.Suggestion{{Arg: enforce.ArgProject, Kind: policy.Literal, Values: numbers, Optional: true}}}).Because(policy.RuleNotFound)
	}
	if in.Project != 0 && owner == "" && len(keep) > 1 {
		var orgs []string
		for _, p := range keep {
			orgs = append(orgs, p.Owner)
		}
		return nil, policy.NewRetryRefusal(fmt.Sprintf("Project %d is ambiguous", in.Project),
			"projects of several organizations have that number: "+strings.Join(orgs, ", "),
			policy.Retry{With: []policy.Suggestion{{Arg: "owner", Kind: policy.Text, Values: orgs}}}).Because(policy.RuleArguments)
	}
	return keep, nil
}
