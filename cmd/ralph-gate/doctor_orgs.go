package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-github/v89/github"
	"github.com/palantir/go-githubapp/githubapp"

	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/ghboard"
	"github.com/ralph-gate/ralph-gate/store"
)

// orgPolicies checks every organization the App is installed on when the policy lives in the
// organizations' repositories: the installation's permissions (Contents to read the file,
// Checks to report a push of it), and which commit's policy is in force (the store's).
func (d *doctor) orgPolicies(ctx context.Context, cfg config.Config, gh orgClients, want map[string]string) {
	client := gh.app
	kept := map[string]store.OrgPolicy{}
	if st, err := store.OpenReadOnly(ctx, cfg.Store.Driver, cfg.Store.DSN); err != nil {
		d.skip("policies", fmt.Sprintf("which policy is in force was not read: %v", err), "fix the store check above")
		kept = nil
	} else {
		ps, err := st.OrgPolicies(ctx)
		st.Close()
		if err != nil {
			d.skip("policies", fmt.Sprintf("which policy is in force was not read: %v", err), "fix the store check above")
			kept = nil
		}
		for _, p := range ps {
			kept[strings.ToLower(p.Owner)] = p
		}
	}
	var insts []*github.Installation
	for opts := (&github.ListOptions{PerPage: 100}); ; {
		page, resp, err := client.Apps.ListInstallations(ctx, opts)
		if err != nil {
			f := explainGitHub(ctx, err, cfg.GitHub.V3APIURL)
			d.fail("installation", f.trouble("listing the App's installations"), f.troubleFix())
			return
		}
		insts = append(insts, page...)
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	if len(insts) == 0 {
		d.fail("installation", "the App is installed on no organization, and config.yml lists no projects: nothing is enforced",
			"an organization owner installs the App, then pushes "+cfg.Policy.Path+" to its "+cfg.Policy.Repository+" repository (docs/CONFIGURATION.md)")
		return
	}
	for _, inst := range insts {
		owner := inst.GetAccount().GetLogin()
		who := "installation on " + owner
		accept := strings.TrimRight(cfg.GitHub.WebURL, "/") + "/organizations/" + owner + "/settings/installations/" + fmt.Sprint(inst.GetID())
		d.ok("installation", "%d on %s (repositories: %s)", inst.GetID(), owner, inst.GetRepositorySelection())
		d.permissions(who, want, permissionMap(inst.GetPermissions()), accept, false)
		if kept == nil {
			continue
		}
		file := owner + "/" + cfg.Policy.Repository + "/" + cfg.Policy.Path
		p, ok := kept[strings.ToLower(owner)]
		switch {
		case !ok || p.SHA == "":
			d.warn("policy of "+owner, "no valid policy has been read: none of "+owner+"'s projects is enforced",
				"push a valid "+file+" (ralph-gate validate checks the same sections); its check run \"ralph-gate policy\" lists every problem")
		default:
			d.ok("policy of "+owner, "%s at %s in force since %s", file, shortSHA(p.SHA), p.LoadedAt.UTC().Format(time.RFC3339))
		}
		if ok && p.RefusedSHA != "" {
			d.warn("policy of "+owner, fmt.Sprintf("the push of %s at %s was refused (%s): the policy above stays in force", file, shortSHA(p.RefusedSHA), firstLine(p.RefusedWhy)),
				"fix the problems its check run \"ralph-gate policy\" lists and push again")
		}
		if ok && p.SHA != "" {
			d.orgBoards(ctx, cfg, gh, inst.GetID(), p)
		}
	}
}

// orgClients are the App's client and the creator of its installations' clients.
type orgClients struct {
	app     *github.Client
	creator githubapp.ClientCreator
}

// orgBoards checks each project of an organization's policy in force, as serve's board check
// does for config.yml's projects: the project, its workflow field and an option per state.
func (d *doctor) orgBoards(ctx context.Context, cfg config.Config, gh orgClients, installation int64, p store.OrgPolicy) {
	org, problems := cfg.ForOrganization(p.Owner, []byte(p.Text))
	if len(problems) > 0 {
		d.warn("policy of "+p.Owner, fmt.Sprintf("the policy in force no longer validates against this configuration (%s)", firstLine(problems.Error())),
			"fix config.yml, or have the organization push a file that fits it")
		return
	}
	m, err := org.Machine()
	if err != nil {
		d.warn("policy of "+p.Owner, fmt.Sprintf("the policy in force has no workflow: %v", err), "")
		return
	}
	ic, err := gh.creator.NewInstallationClient(installation)
	if err != nil {
		d.fail("installation on "+p.Owner, fmt.Sprintf("cannot build a client for the installation %d: %v", installation, err), "")
		return
	}
	board := ghboard.New(ghboard.NewClient(ic.Client(), cfg.GitHub.V4APIURL), m.Field(), ghboard.NewFieldCache())
	for _, pr := range org.Projects {
		d.project(ctx, board, pr, m, org)
	}
}

func shortSHA(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// firstLine is a text's first line, with how many more there are.
func firstLine(s string) string {
	first, rest, more := strings.Cut(s, "\n")
	if !more {
		return first
	}
	return fmt.Sprintf("%s; and %d more", first, strings.Count(rest, "\n")+1)
}
