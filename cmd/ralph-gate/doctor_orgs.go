package main

import (
	"context"
	"fmt"
	"net/http"
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
// Checks to report a push of it), whether the organization has the file at all (GitHub's),
// and which commit's policy is in force (the store's).
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
	insts = d.organizationsServed(ctx, cfg, client, insts)
	for _, inst := range insts {
		owner := inst.GetAccount().GetLogin()
		who := "installation on " + owner
		accept := strings.TrimRight(cfg.GitHub.WebURL, "/") + "/organizations/" + owner + "/settings/installations/" + fmt.Sprint(inst.GetID())
		d.ok("installation", "%d on %s (repositories: %s)", inst.GetID(), owner, inst.GetRepositorySelection())
		d.permissions(who, want, permissionMap(inst.GetPermissions()), accept, false)
		var p store.OrgPolicy
		known := kept != nil
		if known {
			p = kept[strings.ToLower(owner)]
		}
		state := d.policyFile(ctx, cfg, gh, inst, p)
		if !known && state != fileMissing && state != repoMissing {
			continue // which policy is in force is not known (the store check above)
		}
		d.policyOf(cfg, inst, accept, p, state)
		if p.SHA != "" {
			d.orgBoards(ctx, cfg, gh, inst.GetID(), p)
		}
	}
}

// policyFileState is what GitHub says of an organization's policy file at the head of its
// policy repository's default branch.
type policyFileState int

const (
	fileUnknown policyFileState = iota // GitHub could not say
	fileFound
	fileMissing // the repository has no such file
	repoMissing // the organization has no such repository (that the installation sees)
)

// policyFile asks GitHub, with the installation's token as serve reads it, whether the
// organization has its policy file. When GitHub cannot say, what serve found at its last
// read (kept) decides: a read that found no file.
func (d *doctor) policyFile(ctx context.Context, cfg config.Config, gh orgClients, inst *github.Installation, kept store.OrgPolicy) policyFileState {
	owner, repo, path := inst.GetAccount().GetLogin(), cfg.Policy.Repository, cfg.Policy.Path
	unknown := func() policyFileState {
		if kept.SHA == "" && strings.Contains(kept.RefusedWhy, fmt.Sprintf("%s/%s has no %s", owner, repo, path)) {
			return fileMissing
		}
		return fileUnknown
	}
	client, err := gh.creator.NewInstallationClient(inst.GetID())
	if err != nil {
		return unknown() // (the board check says why)
	}
	fc, _, resp, err := client.Repositories.GetContents(ctx, owner, repo, path, nil)
	switch {
	case err == nil && fc != nil:
		return fileFound
	case err == nil:
		return fileMissing // a directory of that name
	case resp == nil || resp.StatusCode != http.StatusNotFound:
		f := explainGitHub(ctx, err, cfg.GitHub.V3APIURL)
		d.warn("policy of "+owner, f.trouble("reading "+owner+"/"+repo+"/"+path), f.troubleFix())
		return unknown()
	}
	if _, resp, err := client.Repositories.Get(ctx, owner, repo); err != nil {
		if resp != nil && resp.StatusCode == http.StatusNotFound {
			return repoMissing
		}
		return unknown()
	}
	return fileMissing
}

// policyOf says which commit's policy is in force for an organization, that it has no policy
// file yet and which to create, or that a push of it was refused — only when one was: serve
// records a read that found no file as refused too, which no push was.
func (d *doctor) policyOf(cfg config.Config, inst *github.Installation, accept string, p store.OrgPolicy, state policyFileState) {
	owner, repo, path := inst.GetAccount().GetLogin(), cfg.Policy.Repository, cfg.Policy.Path
	who, file := "policy of "+owner, owner+"/"+repo+"/"+path
	noFile := strings.Contains(p.RefusedWhy, fmt.Sprintf("%s/%s has no %s", owner, repo, path))
	refused := p.RefusedSHA != "" && !noFile && state != fileMissing && state != repoMissing
	const doc = " (docs/CONFIGURATION.md \"Policy in the organization's repository\"; ralph-gate validate checks it first)"
	switch {
	case p.SHA == "" && state == repoMissing:
		what := fmt.Sprintf("no policy file yet: %s has no repository %s, so none of %s's projects is enforced", owner, repo, owner)
		fix := fmt.Sprintf("create the repository %s/%s, and in it %s listing the projects to enforce%s", owner, repo, path, doc)
		if inst.GetRepositorySelection() == "selected" {
			what = fmt.Sprintf("no policy file yet: %s has no repository %s that the installation sees (it is installed on selected repositories), so none of %s's projects is enforced", owner, repo, owner)
			fix += fmt.Sprintf("; if %s/%s exists, add it to the installation's repositories at %s", owner, repo, accept)
		}
		d.warn(who, what, fix)
	case p.SHA == "" && state == fileMissing:
		d.warn(who, fmt.Sprintf("no policy file yet: %s/%s has no %s, so none of %s's projects is enforced", owner, repo, path, owner),
			fmt.Sprintf("create %s in the repository %s/%s, on its default branch, listing the projects to enforce%s", path, owner, repo, doc))
	case p.SHA == "" && state == fileFound && !refused:
		d.warn(who, fmt.Sprintf("%s exists, but serve has not read it yet: none of %s's projects is enforced", file, owner),
			"serve reads it when it starts, when the App is installed and on every push that changes it: start serve, or push the file again")
	case p.SHA == "":
		d.warn(who, "no valid policy has been read: none of "+owner+"'s projects is enforced",
			"push a valid "+file+" (ralph-gate validate checks the same sections); its check run \"ralph-gate policy\" lists every problem")
	default:
		d.ok(who, "%s at %s in force since %s", file, shortSHA(p.SHA), p.LoadedAt.UTC().Format(time.RFC3339))
		if state == fileMissing || state == repoMissing {
			d.warn(who, fmt.Sprintf("%s is gone from the default branch: the policy above stays in force", file),
				"push a valid "+file+" again: removing the file does not stop the enforcement of the organization's projects (uninstalling the App does)")
		}
	}
	if refused {
		stays := "the policy above stays in force"
		if p.SHA == "" {
			stays = "none of " + owner + "'s projects is enforced"
		}
		d.warn(who, fmt.Sprintf("the push of %s at %s was refused (%s): %s", file, shortSHA(p.RefusedSHA), firstLine(p.RefusedWhy), stays),
			"fix the problems its check run \"ralph-gate policy\" lists and push again")
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

// organizationsServed checks config.yml's organizations against the App's installations and
// returns the installations served. With none listed, every organization that installs the App
// is served and changes its own policy: a warning when the App is installed beyond its owner's
// organization (it is public). With a list, an installation it does not name is ignored by
// serve (said here), and an organization it names without an installation is a warning.
func (d *doctor) organizationsServed(ctx context.Context, cfg config.Config, client *github.Client, insts []*github.Installation) []*github.Installation {
	fix := "list the organizations this deployment serves in config.yml's organizations, each with its policy_admins (docs/CONFIGURATION.md, \"Who may change an organization's policy\")"
	if len(cfg.Organizations) == 0 {
		app, _, err := client.Apps.Get(ctx, "")
		if err != nil {
			d.warn("organizations", "config.yml lists no organizations: every organization that installs the App is served (whether the App is public was not read: "+err.Error()+")", fix)
			return insts
		}
		var others []string
		for _, inst := range insts {
			if login := inst.GetAccount().GetLogin(); !strings.EqualFold(login, app.GetOwner().GetLogin()) {
				others = append(others, login)
			}
		}
		if len(others) > 0 {
			d.warn("organizations", fmt.Sprintf("the App is installed on %s besides its owner %s (it is public), and config.yml lists no organizations: every organization that installs it is served, and any person who is not an agent by its own policy changes that policy",
				strings.Join(others, ", "), app.GetOwner().GetLogin()), fix)
			return insts
		}
		d.ok("organizations", "config.yml lists no organizations: every organization that installs the App is served (today only its owner, %s)", app.GetOwner().GetLogin())
		return insts
	}
	var served []*github.Installation
	installed := map[string]bool{}
	for _, inst := range insts {
		login := inst.GetAccount().GetLogin()
		installed[strings.ToLower(login)] = true
		if !cfg.Serves(login) {
			d.ok("organizations", "installed on %s, which config.yml's organizations does not list: serve ignores it (its policy is not read)", login)
			continue
		}
		served = append(served, inst)
	}
	for _, o := range cfg.Organizations {
		if !installed[strings.ToLower(o.Login)] {
			d.warn("organizations", fmt.Sprintf("%s is listed in config.yml's organizations, but the App is not installed there: none of its projects is enforced", o.Login),
				"an owner of "+o.Login+" installs the App (ralph-gate register prints the link), then pushes "+cfg.Policy.Path+" to its "+cfg.Policy.Repository+" repository")
		}
	}
	return served
}
