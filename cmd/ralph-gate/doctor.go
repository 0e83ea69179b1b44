package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/go-github/v89/github"
	"github.com/palantir/go-githubapp/githubapp"

	"github.com/ralph-gate/ralph-gate/app"
	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/ghboard"
	"github.com/ralph-gate/ralph-gate/policy"
)

// RequiredPermissions are exactly what ralph-gate needs (docs/INSTALL.md); app.yml asks for these.
var RequiredPermissions = map[string]string{
	"organization_projects": "write", // read and change Workflow State values
	"issues":                "write", // comments, sub-issues, dependencies, lifecycle sync
	"pull_requests":         "read",  // merge sync: which issues a merged pull request closes
	"metadata":              "read",  // mandatory for every App
}

// RequiredEvents are the webhook events ralph-gate subscribes to. "installation" is not
// listed: GitHub sends it to every App and it cannot be subscribed to.
var RequiredEvents = []string{"projects_v2_item", "issues", "pull_request"}

// implicitEvents are delivered to every App whether subscribed or not.
var implicitEvents = map[string]bool{"installation": true, "installation_repositories": true, "installation_target": true, "github_app_authorization": true, "meta": true}

var permissionLevel = map[string]int{"read": 1, "write": 2, "admin": 3}

// permissionNames are the names GitHub's settings page shows, for the fixes.
var permissionNames = map[string]string{
	"organization_projects": "Organization permissions → Projects",
	"issues":                "Repository permissions → Issues",
	"pull_requests":         "Repository permissions → Pull requests",
	"metadata":              "Repository permissions → Metadata",
}

var eventNames = map[string]string{
	"projects_v2_item": "Projects v2 item",
	"issues":           "Issues",
	"pull_request":     "Pull request",
}

// doctor prints one line per check and remembers how many failed.
type doctor struct {
	out              io.Writer
	failures, warned int
}

func (d *doctor) ok(format string, args ...any) {
	fmt.Fprintf(d.out, "ok    %s\n", fmt.Sprintf(format, args...))
}

func (d *doctor) warn(msg, fix string) {
	d.warned++
	fmt.Fprintf(d.out, "warn  %s\n", msg)
	if fix != "" {
		fmt.Fprintf(d.out, "      fix: %s\n", fix)
	}
}

func (d *doctor) fail(msg, fix string) {
	d.failures++
	fmt.Fprintf(d.out, "FAIL  %s\n", msg)
	if fix != "" {
		fmt.Fprintf(d.out, "      fix: %s\n", fix)
	}
}

func runDoctor(ctx context.Context, args []string, s streams) int {
	fs := newFlags("doctor", s)
	file := fs.String("config", "", "the configuration file serve uses (secrets may come from GITHUB_APP_* variables)")
	timeout := fs.Duration("timeout", time.Minute, "give up on GitHub after this long")
	if code, ok := parseFlags(fs, args, s); !ok {
		return code
	}
	cfg, err := config.LoadForServe(*file)
	if err != nil {
		printProblems(s, err, *file)
		return exitError
	}
	m, err := cfg.Machine()
	if err != nil {
		fmt.Fprintf(s.err, "doctor: %v\n", err)
		return exitError
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	d := &doctor{out: s.out}
	d.check(ctx, cfg, m)
	fmt.Fprintf(s.out, "\n%d failure(s), %d warning(s)\n", d.failures, d.warned)
	if d.failures > 0 {
		return exitError
	}
	return exitOK
}

func (d *doctor) check(ctx context.Context, cfg config.Config, m *policy.Machine) {
	creator := githubapp.NewClientCreator(cfg.GitHub.V3APIURL, cfg.GitHub.V4APIURL, cfg.GitHub.App.IntegrationID,
		[]byte(cfg.GitHub.App.PrivateKey),
		githubapp.WithClientUserAgent("ralph-gate-doctor/"+version),
		githubapp.WithClientTimeout(20*time.Second),
	)
	client, err := creator.NewAppClient()
	if err != nil {
		d.fail(fmt.Sprintf("app: cannot use the private key: %v", err),
			"github.app.private_key (or GITHUB_APP_PRIVATE_KEY) must be the PEM key generated on the App's settings page")
		return
	}
	ghApp, _, err := client.Apps.Get(ctx, "")
	if err != nil {
		d.fail(fmt.Sprintf("app: cannot authenticate as App %d: %v", cfg.GitHub.App.IntegrationID, err),
			"check github.app.integration_id (the App ID on the App's settings page) and that the private key belongs to that App; generate a new key if unsure")
		return
	}
	d.ok("app: authenticated as %s (App ID %d)", ghApp.GetSlug(), ghApp.GetID())
	settings := strings.TrimRight(cfg.GitHub.WebURL, "/") + "/settings/apps/" + ghApp.GetSlug() + "/permissions"
	d.permissions("app", permissionMap(ghApp.GetPermissions()), settings, true)
	d.events("app", ghApp.Events, settings)
	d.webhook(ctx, client)

	byOwner := map[string][]config.Project{}
	var owners []string
	for _, p := range cfg.Projects {
		key := strings.ToLower(p.Owner)
		if _, seen := byOwner[key]; !seen {
			owners = append(owners, key)
		}
		byOwner[key] = append(byOwner[key], p)
	}
	for _, key := range owners {
		projects := byOwner[key]
		owner := projects[0].Owner
		inst, _, err := client.Apps.GetOrganizationInstallation(ctx, owner)
		if err != nil {
			install := strings.TrimRight(cfg.GitHub.WebURL, "/") + "/apps/" + ghApp.GetSlug() + "/installations/new"
			d.fail(fmt.Sprintf("installation: %s is not installed on the organization %s: %v", ghApp.GetSlug(), owner, err),
				"an owner of "+owner+" installs it from "+install+" (projects_v2_item webhooks exist only for organization-owned projects)")
			continue
		}
		d.ok("installation: %d on %s (repositories: %s)", inst.GetID(), owner, inst.GetRepositorySelection())
		accept := strings.TrimRight(cfg.GitHub.WebURL, "/") + "/organizations/" + owner + "/settings/installations/" + fmt.Sprint(inst.GetID())
		d.permissions("installation on "+owner, permissionMap(inst.GetPermissions()), accept, false)
		d.events("installation on "+owner, inst.Events, accept)
		if inst.GetRepositorySelection() == "selected" {
			d.warn(fmt.Sprintf("installation on %s: only selected repositories: issues in other repositories cannot be explained or synced", owner),
				"choose \"All repositories\" at "+accept+", or add every repository whose issues are on the enforced projects")
		}
		ic, err := creator.NewInstallationClient(inst.GetID())
		if err != nil {
			d.fail(fmt.Sprintf("installation on %s: cannot build a client: %v", owner, err), "")
			continue
		}
		board := ghboard.New(ghboard.NewClient(ic.Client(), cfg.GitHub.V4APIURL), m.Field(), ghboard.NewFieldCache())
		for _, p := range projects {
			d.project(ctx, board, p, m)
		}
	}
}

// permissionMap turns go-github's struct into name → level, as GitHub's JSON spells them.
func permissionMap(p *github.InstallationPermissions) map[string]string {
	out := map[string]string{}
	if p == nil {
		return out
	}
	data, err := json.Marshal(p)
	if err != nil {
		return out
	}
	_ = json.Unmarshal(data, &out)
	return out
}

func (d *doctor) permissions(who string, have map[string]string, where string, warnExcess bool) {
	missing := false
	for _, name := range sortedKeys(RequiredPermissions) {
		want := RequiredPermissions[name]
		got := have[name]
		if permissionLevel[got] < permissionLevel[want] {
			missing = true
			fix := fmt.Sprintf("at %s set %s to %s", where, permissionNames[name], levelName(want))
			if !warnExcess {
				fix = fmt.Sprintf("an organization owner accepts the App's updated permissions at %s (the App asks for %s: %s)", where, name, want)
			}
			d.fail(fmt.Sprintf("%s: permission %s is %q, ralph-gate needs %s", who, name, levelOrNone(got), want), fix)
		}
	}
	if !missing {
		d.ok("%s: permissions organization_projects=write issues=write pull_requests=read metadata=read", who)
	}
	if !warnExcess {
		return
	}
	for _, name := range sortedKeys(have) {
		want, needed := RequiredPermissions[name]
		switch {
		case !needed:
			d.warn(fmt.Sprintf("%s: permission %s=%s is more than ralph-gate needs", who, name, have[name]),
				fmt.Sprintf("at %s set it to \"No access\"", where))
		case permissionLevel[have[name]] > permissionLevel[want]:
			d.warn(fmt.Sprintf("%s: permission %s=%s is more than ralph-gate needs (%s)", who, name, have[name], want),
				fmt.Sprintf("at %s lower %s to %s", where, permissionNames[name], levelName(want)))
		}
	}
}

func (d *doctor) events(who string, have []string, where string) {
	missing := false
	for _, e := range RequiredEvents {
		if !slices.Contains(have, e) {
			missing = true
			d.fail(fmt.Sprintf("%s: not subscribed to the %s webhook event", who, e),
				fmt.Sprintf("at %s tick \"%s\" under \"Subscribe to events\" (the permissions above must be granted first)", where, eventNames[e]))
		}
	}
	if !missing {
		d.ok("%s: subscribed to %s (installation events come to every App)", who, strings.Join(RequiredEvents, ", "))
	}
	for _, e := range have {
		if !slices.Contains(RequiredEvents, e) && !implicitEvents[e] {
			d.warn(fmt.Sprintf("%s: subscribed to %s, which ralph-gate ignores", who, e),
				fmt.Sprintf("untick it at %s: every delivery costs a request", where))
		}
	}
}

func (d *doctor) webhook(ctx context.Context, client *github.Client) {
	hook, _, err := client.Apps.GetHookConfig(ctx)
	if err != nil {
		d.warn(fmt.Sprintf("webhook: cannot read the App's webhook configuration: %v", err), "")
		return
	}
	u := hook.GetURL()
	if u == "" {
		d.fail("webhook: the App has no webhook URL", "set it to https://<your host>"+app.WebhookRoute+" on the App's settings page and tick \"Active\"")
		return
	}
	parsed, err := url.Parse(u)
	switch {
	case err != nil:
		d.fail(fmt.Sprintf("webhook: URL %q does not parse: %v", u, err), "")
	case parsed.Path != app.WebhookRoute:
		d.warn(fmt.Sprintf("webhook: URL %s does not end in %s, where ralph-gate listens", u, app.WebhookRoute),
			"change the path unless a proxy in front of ralph-gate rewrites it")
	default:
		d.ok("webhook: %s (content type %s)", u, hook.GetContentType())
	}
	if parsed != nil && parsed.Scheme == "http" && !isLoopback(parsed.Hostname()) {
		d.warn("webhook: the URL is plain http: payloads travel unencrypted", "serve it over https (the chart's Ingress does, with a TLS secret)")
	}
}

func isLoopback(host string) bool {
	return host == "localhost" || host == "127.0.0.1" || host == "::1"
}

func (d *doctor) project(ctx context.Context, board *ghboard.Board, p config.Project, m *policy.Machine) {
	name := fmt.Sprintf("project %s/%d", p.Owner, p.Number)
	field, err := board.Field(ctx, p.Owner, p.Number)
	if err != nil {
		var fix string
		switch {
		case errors.Is(err, ghboard.ErrNotFound) && strings.Contains(err.Error(), "field"):
			fix = fmt.Sprintf("add a single-select field named %q to the project (Settings → Custom fields), with the options listed by `ralph-gate policy graph`, or set workflow.field to the field's name", m.Field())
		case errors.Is(err, ghboard.ErrNotFound):
			fix = "check projects[].owner and number (the number is in the project's URL: /orgs/OWNER/projects/NUMBER) and that the App is installed on that organization with Projects access"
		}
		d.fail(fmt.Sprintf("%s: %v", name, err), fix)
		return
	}
	want := m.States()
	var missing, extra []string
	for _, s := range want {
		if _, ok := field.Options[s]; !ok {
			missing = append(missing, s)
		}
	}
	for _, o := range field.Names {
		if !slices.Contains(want, o) {
			extra = append(extra, o)
		}
	}
	if len(missing) == 0 && len(extra) == 0 {
		d.ok("%s: field %q has exactly the workflow's %d states", name, m.Field(), len(want))
		return
	}
	for _, s := range missing {
		fix := fmt.Sprintf("in the project's settings edit the field %q and add the option %q (names are exact and case-sensitive)", m.Field(), s)
		if near := nearMiss(s, extra); near != "" {
			fix = fmt.Sprintf("rename the option %q to %q in the field %q (names are exact and case-sensitive)", near, s, m.Field())
		}
		d.fail(fmt.Sprintf("%s: field %q lacks the option %q", name, m.Field(), s), fix)
	}
	for _, o := range extra {
		if nearMiss(o, missing) != "" {
			continue // reported with its rename above
		}
		d.fail(fmt.Sprintf("%s: field %q has the option %q, which is not a workflow state", name, m.Field(), o),
			"delete the option (items in it would be reverted), or add the state to workflow.states in the configuration")
	}
}

// nearMiss finds a name in candidates that differs from s only by case or spacing.
func nearMiss(s string, candidates []string) string {
	norm := func(v string) string { return strings.Join(strings.Fields(strings.ToLower(v)), " ") }
	for _, c := range candidates {
		if norm(c) == norm(s) {
			return c
		}
	}
	return ""
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func levelName(level string) string {
	if level == "write" {
		return "\"Read and write\""
	}
	return "\"Read-only\""
}

func levelOrNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
