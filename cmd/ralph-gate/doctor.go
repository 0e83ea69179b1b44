package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
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

// UIPermissions are what the board health pages add (ui.enabled): the sign-in asks whether a
// person is a member of the organizations with the installation's token. app.yml does not ask
// for them, since the pages are off by default (docs/INSTALL.md, step 7).
var UIPermissions = map[string]string{
	"members": "read",
}

// requiredPermissions are exactly what ralph-gate needs with cfg.
func requiredPermissions(cfg config.Config) map[string]string {
	want := maps.Clone(RequiredPermissions)
	if cfg.UI.Enabled {
		maps.Copy(want, UIPermissions)
	}
	return want
}

// permissionOrder is the order permissions are listed in, as GitHub's settings page shows them.
var permissionOrder = []string{"organization_projects", "members", "issues", "pull_requests", "metadata"}

// RequiredEvents are the webhook events ralph-gate subscribes to. "installation" is not
// listed: GitHub sends it to every App and it cannot be subscribed to.
var RequiredEvents = []string{"projects_v2_item", "issues", "pull_request"}

// implicitEvents are delivered to every App whether subscribed or not.
var implicitEvents = map[string]bool{"installation": true, "installation_repositories": true, "installation_target": true, "github_app_authorization": true, "meta": true}

var permissionLevel = map[string]int{"read": 1, "write": 2, "admin": 3}

// permissionNames are the names GitHub's settings page shows, for the fixes.
var permissionNames = map[string]string{
	"organization_projects": "Organization permissions → Projects",
	"members":               "Organization permissions → Members",
	"issues":                "Repository permissions → Issues",
	"pull_requests":         "Repository permissions → Pull requests",
	"metadata":              "Repository permissions → Metadata",
}

var eventNames = map[string]string{
	"projects_v2_item": "Projects v2 item",
	"issues":           "Issues",
	"pull_request":     "Pull request",
}

// doctorCheck is one line of doctor's report, and one item of `doctor --json`'s "checks"
// (docs/TROUBLESHOOTING.md documents the shape).
type doctorCheck struct {
	// Name is what was checked: "config", "app", "webhook", "installation on ORG",
	// "project ORG/N", "github".
	Name string `json:"name"`
	// Status is ok, warn, fail or skip.
	Status string `json:"status"`
	Detail string `json:"detail"`
	// Hint is the fix, for warn and fail.
	Hint string `json:"hint,omitempty"`
}

// doctorReport is `doctor --json`'s output.
type doctorReport struct {
	OK       bool          `json:"ok"`
	Failures int           `json:"failures"`
	Warnings int           `json:"warnings"`
	Checks   []doctorCheck `json:"checks"`
}

// doctor collects one check per line and counts the failures and warnings.
type doctor struct {
	checks           []doctorCheck
	failures, warned int
}

func (d *doctor) add(c doctorCheck) { d.checks = append(d.checks, c) }

func (d *doctor) ok(name, format string, args ...any) {
	d.add(doctorCheck{Name: name, Status: "ok", Detail: fmt.Sprintf(format, args...)})
}

func (d *doctor) warn(name, msg, fix string) {
	d.warned++
	d.add(doctorCheck{Name: name, Status: "warn", Detail: msg, Hint: fix})
}

func (d *doctor) fail(name, msg, fix string) {
	d.failures++
	d.add(doctorCheck{Name: name, Status: "fail", Detail: msg, Hint: fix})
}

func (d *doctor) skip(name, msg, fix string) {
	d.add(doctorCheck{Name: name, Status: "skip", Detail: msg, Hint: fix})
}

// print writes the report as text: one line per check, its fix below it.
func (d *doctor) print(w io.Writer) {
	label := map[string]string{"ok": "ok  ", "warn": "warn", "fail": "FAIL", "skip": "skip"}
	for _, c := range d.checks {
		fmt.Fprintf(w, "%s  %s: %s\n", label[c.Status], c.Name, c.Detail)
		if c.Hint != "" {
			fmt.Fprintf(w, "      fix: %s\n", c.Hint)
		}
	}
	fmt.Fprintf(w, "\n%d failure(s), %d warning(s)\n", d.failures, d.warned)
}

// appCredentialPaths are the problems that keep doctor from authenticating as the App.
var appCredentialPaths = []string{"github.app.integration_id", "github.app.private_key",
	"env " + config.EnvIntegrationID, "env " + config.EnvPrivateKeyFile, "env " + config.EnvPrivateKey}

func runDoctor(ctx context.Context, args []string, s streams) int {
	fs := newFlags("doctor", s)
	file := fs.String("config", "", "the configuration file serve uses (default: the embedded config.yml; secrets may come from GITHUB_APP_* variables)")
	timeout := fs.Duration("timeout", time.Minute, "give up on GitHub after this long")
	asJSON := fs.Bool("json", false, `print {"ok","failures","warnings","checks":[{"name","status","detail","hint"}]} as JSON`)
	if code, ok := parseFlags(fs, args, s); !ok {
		return code
	}
	if *file == "" {
		fmt.Fprintln(s.err, "ralph-gate doctor: no --config given: checking the embedded config.yml, which names no project (give --config FILE, the file serve uses)")
	}
	d := &doctor{}
	d.run(ctx, *file, *timeout)
	if *asJSON {
		enc := json.NewEncoder(s.out)
		enc.SetIndent("", "  ")
		rep := doctorReport{OK: d.failures == 0, Failures: d.failures, Warnings: d.warned, Checks: d.checks}
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintf(s.err, "ralph-gate doctor: %v\n", err)
			return exitError
		}
	} else {
		d.print(s.out)
	}
	if d.failures > 0 {
		return exitError
	}
	return exitOK
}

// run checks the configuration as serve would (config.Preflight), then, when it can act as
// the App, GitHub: the App, its webhook, each installation and each project board.
func (d *doctor) run(ctx context.Context, file string, timeout time.Duration) {
	cfg, problems, err := config.Preflight(file, config.ForServe, os.LookupEnv)
	if err != nil {
		d.fail("config", err.Error(), "give --config the file serve uses")
		d.skip("github", "not checked: the configuration could not be read", "")
		return
	}
	canAuth := true
	for _, p := range problems {
		d.fail("config", p.String(), "")
		if slices.Contains(appCredentialPaths, p.Path) || p.Path == "(file)" {
			canAuth = false
		}
	}
	if len(problems) == 0 {
		d.ok("config", "%s has everything serve needs", describe(file))
	}
	m, err := cfg.Machine()
	if err != nil {
		canAuth = false
	} else {
		d.roles(m)
	}
	if !canAuth {
		d.skip("github", "not checked: doctor authenticates as the App with github.app.integration_id and the private key, and checks the boards against a valid workflow",
			"fix the configuration problems above")
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	d.check(ctx, cfg, m)
}

// roles warns about the gaps of the state ownership map: a role that owns no state has agents
// that may only escalate; a state no role owns leaves its items to people.
func (d *doctor) roles(m *policy.Machine) {
	roles := m.Roles()
	if roles == nil {
		return
	}
	for _, name := range roles.Idle() {
		d.warn("roles", fmt.Sprintf("the %s role owns no state: its agents may only escalate", name),
			fmt.Sprintf("list the states it works on under actors.roles.%s.owns", name))
	}
	for _, state := range roles.Unowned(m) {
		d.warn("roles", fmt.Sprintf("no role owns %s: only people and agents without a role may move items out of it", state),
			"add it to the owns list of the role that works on it (actors.roles)")
	}
	if len(roles.Idle()) == 0 && len(roles.Unowned(m)) == 0 {
		d.ok("roles", "%d roles; every state an agent works on has an owner (review mode %s)", len(roles.Names()), m.ReviewMode())
	}
}

func (d *doctor) check(ctx context.Context, cfg config.Config, m *policy.Machine) {
	creator := githubapp.NewClientCreator(cfg.GitHub.V3APIURL, cfg.GitHub.V4APIURL, cfg.GitHub.App.IntegrationID,
		[]byte(cfg.GitHub.App.PrivateKey),
		githubapp.WithClientUserAgent("ralph-gate-doctor/"+version),
		githubapp.WithClientTimeout(20*time.Second),
	)
	client, err := creator.NewAppClient()
	if err != nil {
		d.fail("app", fmt.Sprintf("cannot use the private key: %v", err),
			"github.app.private_key (or "+config.EnvPrivateKeyFile+") must be the PEM key generated on the App's settings page")
		return
	}
	ghApp, _, err := client.Apps.Get(ctx, "")
	if err != nil {
		d.fail("app", fmt.Sprintf("cannot authenticate as App %d: %v", cfg.GitHub.App.IntegrationID, err),
			"check github.app.integration_id (the App ID on the App's settings page) and that the private key belongs to that App; generate a new key if unsure")
		return
	}
	d.ok("app", "authenticated as %s (App ID %d)", ghApp.GetSlug(), ghApp.GetID())
	settings := strings.TrimRight(cfg.GitHub.WebURL, "/") + "/settings/apps/" + ghApp.GetSlug() + "/permissions"
	want := requiredPermissions(cfg)
	d.permissions("app", want, permissionMap(ghApp.GetPermissions()), settings, true)
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
			d.fail("installation", fmt.Sprintf("%s is not installed on the organization %s: %v", ghApp.GetSlug(), owner, err),
				"an owner of "+owner+" installs it from "+install+" (projects_v2_item webhooks exist only for organization-owned projects)")
			continue
		}
		d.ok("installation", "%d on %s (repositories: %s)", inst.GetID(), owner, inst.GetRepositorySelection())
		accept := strings.TrimRight(cfg.GitHub.WebURL, "/") + "/organizations/" + owner + "/settings/installations/" + fmt.Sprint(inst.GetID())
		who := "installation on " + owner
		d.permissions(who, want, permissionMap(inst.GetPermissions()), accept, false)
		d.events(who, inst.Events, accept)
		if inst.GetRepositorySelection() == "selected" {
			d.warn(who, "only selected repositories: issues in other repositories cannot be explained or synced",
				"choose \"All repositories\" at "+accept+", or add every repository whose issues are on the enforced projects")
		}
		ic, err := creator.NewInstallationClient(inst.GetID())
		if err != nil {
			d.fail(who, fmt.Sprintf("cannot build a client: %v", err), "")
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

// permissions checks have against required: each one missing fails; with warnExcess (the App,
// whose settings an admin changes), each one beyond is a warning.
func (d *doctor) permissions(who string, required, have map[string]string, where string, warnExcess bool) {
	missing := false
	for _, name := range sortedKeys(required) {
		want := required[name]
		got := have[name]
		if permissionLevel[got] < permissionLevel[want] {
			missing = true
			fix := fmt.Sprintf("at %s set %s to %s", where, permissionNames[name], levelName(want))
			if !warnExcess {
				fix = fmt.Sprintf("an organization owner accepts the App's updated permissions at %s (the App asks for %s: %s)", where, name, want)
			}
			why := ""
			if _, ui := UIPermissions[name]; ui {
				why = " for the board health pages' sign-in (ui.enabled)"
			}
			d.fail(who, fmt.Sprintf("permission %s is %q, ralph-gate needs %s%s", name, levelOrNone(got), want, why), fix)
		}
	}
	if !missing {
		var granted []string
		for _, name := range permissionOrder {
			if want, ok := required[name]; ok {
				granted = append(granted, name+"="+want)
			}
		}
		d.ok(who, "permissions %s", strings.Join(granted, " "))
	}
	if !warnExcess {
		return
	}
	for _, name := range sortedKeys(have) {
		want, needed := required[name]
		switch {
		case !needed && UIPermissions[name] != "" && permissionLevel[have[name]] <= permissionLevel[UIPermissions[name]]:
			d.warn(who, fmt.Sprintf("permission %s=%s is more than ralph-gate needs with ui.enabled false (the board health pages need it)", name, have[name]),
				fmt.Sprintf("at %s set it to \"No access\", or keep it for when the pages are enabled", where))
		case !needed:
			d.warn(who, fmt.Sprintf("permission %s=%s is more than ralph-gate needs", name, have[name]),
				fmt.Sprintf("at %s set it to \"No access\"", where))
		case permissionLevel[have[name]] > permissionLevel[want]:
			d.warn(who, fmt.Sprintf("permission %s=%s is more than ralph-gate needs (%s)", name, have[name], want),
				fmt.Sprintf("at %s lower %s to %s", where, permissionNames[name], levelName(want)))
		}
	}
}

func (d *doctor) events(who string, have []string, where string) {
	missing := false
	for _, e := range RequiredEvents {
		if !slices.Contains(have, e) {
			missing = true
			d.fail(who, fmt.Sprintf("not subscribed to the %s webhook event", e),
				fmt.Sprintf("at %s tick \"%s\" under \"Subscribe to events\" (the permissions above must be granted first)", where, eventNames[e]))
		}
	}
	if !missing {
		d.ok(who, "subscribed to %s (installation events come to every App)", strings.Join(RequiredEvents, ", "))
	}
	for _, e := range have {
		if !slices.Contains(RequiredEvents, e) && !implicitEvents[e] {
			d.warn(who, fmt.Sprintf("subscribed to %s, which ralph-gate ignores", e),
				fmt.Sprintf("untick it at %s: every delivery costs a request", where))
		}
	}
}

func (d *doctor) webhook(ctx context.Context, client *github.Client) {
	hook, _, err := client.Apps.GetHookConfig(ctx)
	if err != nil {
		d.warn("webhook", fmt.Sprintf("cannot read the App's webhook configuration: %v", err), "")
		return
	}
	u := hook.GetURL()
	if u == "" {
		d.fail("webhook", "the App has no webhook URL", "set it to https://<your host>"+app.WebhookRoute+" on the App's settings page and tick \"Active\"")
		return
	}
	parsed, err := url.Parse(u)
	switch {
	case err != nil:
		d.fail("webhook", fmt.Sprintf("URL %q does not parse: %v", u, err), "")
	case parsed.Path != app.WebhookRoute:
		d.warn("webhook", fmt.Sprintf("URL %s does not end in %s, where ralph-gate listens", u, app.WebhookRoute),
			"change the path unless a proxy in front of ralph-gate rewrites it")
	default:
		d.ok("webhook", "%s (content type %s)", u, hook.GetContentType())
	}
	if parsed != nil && parsed.Scheme == "http" && !isLoopback(parsed.Hostname()) {
		d.warn("webhook", "the URL is plain http: payloads travel unencrypted", "serve it over https (the chart's Ingress does, with a TLS secret)")
	}
}

func isLoopback(host string) bool {
	return host == "localhost" || host == "127.0.0.1" || host == "::1"
}

// project checks one board with the check serve runs before it reports ready
// (app.CheckBoard): every finding fails, with its fix.
func (d *doctor) project(ctx context.Context, board *ghboard.Board, p config.Project, m *policy.Machine) {
	name := fmt.Sprintf("project %s/%d", p.Owner, p.Number)
	findings, err := app.CheckBoard(ctx, board, p, m)
	if err != nil {
		d.fail(name, err.Error(), "")
		return
	}
	if len(findings) == 0 {
		d.ok(name, "field %q has exactly the workflow's %d states", m.Field(), len(m.States()))
		return
	}
	for _, f := range findings {
		d.fail(name, f.Problem, f.Fix)
	}
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
