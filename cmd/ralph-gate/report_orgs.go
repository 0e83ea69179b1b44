package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/health"
	"github.com/ralph-gate/ralph-gate/store"
)

// With no projects in config.yml, each organization's policy comes from its own repository
// (docs/CONFIGURATION.md "Policy in the organization's repository"), and the store keeps the
// one in force: report reads them there, as serve enforces them.

// orgPolicy is an organization's policy in force as report sees it: the configuration it
// makes of this deployment's (its projects, workflow and modes), and what the health report
// says of it.
type orgPolicy struct {
	cfg config.Config
	org health.Org
}

// keptOrgs are the organizations' policies the store keeps.
type keptOrgs struct {
	inForce []orgPolicy
	// unfit are the organizations whose policy in force does not validate against this
	// configuration (its first problem): not the configuration serve runs with, most likely.
	unfit map[string]string
}

// reportOrgs reads the policies in force from the store and compiles each against cfg.
func reportOrgs(ctx context.Context, cfg config.Config, st *store.Store) (keptOrgs, error) {
	kept, err := st.OrgPolicies(ctx)
	if err != nil {
		return keptOrgs{}, err
	}
	out := keptOrgs{unfit: map[string]string{}}
	for _, k := range kept {
		if k.SHA == "" {
			continue // nothing in force: only refused pushes
		}
		org, problems := cfg.ForOrganization(k.Owner, []byte(k.Text))
		if len(problems) > 0 {
			out.unfit[k.Owner] = problems[0].String()
			continue
		}
		out.inForce = append(out.inForce, orgPolicy{cfg: org, org: health.Org{Owner: k.Owner, Commit: k.SHA, Since: k.LoadedAt,
			Refused: k.RefusedSHA, RefusedAt: k.RefusedAt, RefusedWhy: k.RefusedWhy}})
	}
	return out, nil
}

// names are the projects of the policies in force, as owner/number.
func (k keptOrgs) names() []string {
	var out []string
	for _, o := range k.inForce {
		for _, p := range o.cfg.Projects {
			out = append(out, fmt.Sprintf("%s/%d", p.Owner, p.Number))
		}
	}
	return out
}

// of is the policy in force that lists a project, with only that project (the zero one when
// none does).
func (k keptOrgs) of(p enforce.ProjectRef) orgPolicy {
	for _, o := range k.inForce {
		for _, q := range o.cfg.Projects {
			if strings.EqualFold(q.Owner, p.Owner) && q.Number == p.Number {
				o.cfg.Projects = []config.Project{q}
				return o
			}
		}
	}
	return orgPolicy{}
}

// check fails when there is nothing to report on, or --project is none of the projects in
// force; policies that do not fit this configuration are named on stderr.
func (k keptOrgs) check(s streams, only *enforce.ProjectRef, flag string) (int, bool) {
	var unfit []string
	for _, owner := range slices.Sorted(maps.Keys(k.unfit)) {
		unfit = append(unfit, fmt.Sprintf("%s's (%s)", owner, k.unfit[owner]))
	}
	names := k.names()
	switch {
	case len(names) == 0 && len(unfit) > 0:
		return fail(s, "report", exitError, "the configuration names no project, and the organizations' policies in force do not validate against it: "+strings.Join(unfit, "; "),
			"give --config with the file the service runs with"), false
	case len(names) == 0:
		return fail(s, "report", exitError, "the configuration names no project, and no organization's policy is in force yet: nothing is enforced to report on",
			"give --config with the file the service runs with (its projects list), or have an organization push a valid policy file (docs/CONFIGURATION.md \"Policy in the organization's repository\"; ralph-gate doctor says which is in force)"), false
	}
	if len(unfit) > 0 {
		fmt.Fprintf(s.err, "ralph-gate report: left out: the policies in force of %s do not validate against this configuration; give --config with the file the service runs with\n", strings.Join(unfit, ", "))
	}
	if only != nil && k.of(*only).cfg.Projects == nil {
		return fail(s, "report", exitUsage, fmt.Sprintf("--project %s is not one of the projects of the organizations' policies in force", flag),
			"give one of "+strings.Join(names, ", ")+", or leave --project out for all"), false
	}
	return exitOK, true
}

// printOrgs says which commit's policy is in force for each organization, and the newest push
// refused.
func printOrgs(w io.Writer, orgs []health.Org) {
	for _, o := range orgs {
		fmt.Fprintf(w, "Policy of %s: ", o.Owner)
		if o.Commit == "" {
			fmt.Fprint(w, "none in force (none of its projects is enforced)")
		} else {
			fmt.Fprintf(w, "commit %s in force since %s", shortSHA(o.Commit), o.Since.UTC().Format(time.RFC3339))
		}
		if o.Refused != "" {
			fmt.Fprintf(w, "; push %s refused %s (%s)", shortSHA(o.Refused), o.RefusedAt.UTC().Format(time.RFC3339), firstLine(o.RefusedWhy))
		}
		fmt.Fprintln(w)
	}
	if len(orgs) > 0 {
		fmt.Fprintln(w)
	}
}
