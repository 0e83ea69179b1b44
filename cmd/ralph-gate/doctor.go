package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-github/v89/github"
	"github.com/palantir/go-githubapp/githubapp"

	"github.com/ralph-gate/ralph-gate/app"
	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/ghboard"
	"github.com/ralph-gate/ralph-gate/policy"
	"github.com/ralph-gate/ralph-gate/store"
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

// PolicyPermissions are what reading each organization's policy from its repository adds
// (config.yml lists no projects: docs/CONFIGURATION.md "Policy in the organization's
// repository"): the file, and the check run a push of it gets.
var PolicyPermissions = map[string]string{
	"contents": "read",  // read .github/ralph-gate.yml
	"checks":   "write", // the "ralph-gate policy" check run on each push of it
}

// ManifestPermissions are what app.yml asks for: what ralph-gate needs, with the
// organizations' policy files (the embedded config.yml lists no projects).
func ManifestPermissions() map[string]string {
	want := maps.Clone(RequiredPermissions)
	maps.Copy(want, PolicyPermissions)
	return want
}

// requiredPermissions are exactly what ralph-gate needs with cfg.
func requiredPermissions(cfg config.Config) map[string]string {
	want := maps.Clone(RequiredPermissions)
	if cfg.UI.Enabled {
		maps.Copy(want, UIPermissions)
	}
	if cfg.OrgPolicies() {
		maps.Copy(want, PolicyPermissions)
	}
	for _, o := range cfg.Organizations {
		for _, a := range o.Admins() {
			if a.TeamSlug != "" {
				maps.Copy(want, UIPermissions) // a team's membership is read on each push of the policy
			}
		}
	}
	return want
}

// permissionOrder is the order permissions are listed in, as GitHub's settings page shows them.
var permissionOrder = []string{"organization_projects", "members", "checks", "contents", "issues", "pull_requests", "metadata"}

// RequiredEvents are the webhook events ralph-gate subscribes to (push: a change of an
// organization's policy file is validated at once). "installation" is not listed: GitHub
// sends it to every App and it cannot be subscribed to.
var RequiredEvents = []string{"projects_v2_item", "issues", "pull_request", "push"}

// implicitEvents are delivered to every App whether subscribed or not.
var implicitEvents = map[string]bool{"installation": true, "installation_repositories": true, "installation_target": true, "github_app_authorization": true, "meta": true}

var permissionLevel = map[string]int{"read": 1, "write": 2, "admin": 3}

// permissionNames are the names GitHub's settings page shows, for the fixes.
var permissionNames = map[string]string{
	"organization_projects": "Organization permissions → Projects",
	"members":               "Organization permissions → Members",
	"checks":                "Repository permissions → Checks",
	"contents":              "Repository permissions → Contents",
	"issues":                "Repository permissions → Issues",
	"pull_requests":         "Repository permissions → Pull requests",
	"metadata":              "Repository permissions → Metadata",
}

var eventNames = map[string]string{
	"projects_v2_item": "Projects v2 item",
	"issues":           "Issues",
	"pull_request":     "Pull request",
	"push":             "Push",
}

// doctorCheck is one line of doctor's report, and one item of `doctor --json`'s "checks"
// (docs/TROUBLESHOOTING.md documents the shape).
type doctorCheck struct {
	// Name is what was checked: "config", "roles", "store", "app", "webhook", "installation",
	// "installation on ORG", "project ORG/N", "github".
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

// run checks the configuration as serve would (config.Preflight), the store serve would open,
// then, when it can act as the App, GitHub: the App, its webhook, each installation and each
// project board.
func (d *doctor) run(ctx context.Context, file string, timeout time.Duration) {
	cfg, problems, err := config.Preflight(file, config.ForServe, os.LookupEnv)
	if err != nil {
		d.fail("config", err.Error(), "give --config the file serve uses")
		d.skip("store", "not checked: the configuration could not be read", "")
		d.skip("github", "not checked: the configuration could not be read", "")
		return
	}
	canAuth, storeKnown := true, true
	for _, p := range problems {
		d.fail("config", p.String(), "")
		if slices.Contains(appCredentialPaths, p.Path) || p.Path == "(file)" {
			canAuth = false
		}
		if strings.HasPrefix(p.Path, "store.") || p.Path == "(file)" {
			storeKnown = false
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
	if storeKnown {
		d.store(ctx, cfg.Store.Driver, cfg.Store.DSN, timeout)
	} else {
		d.skip("store", "not checked: store.driver and store.dsn must be fixed first", "fix the configuration problems above")
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
		const credentials = "check github.app.integration_id (the App ID on the App's settings page) and that the private key belongs to that App; generate a new key if unsure"
		f := explainGitHub(ctx, err, cfg.GitHub.V3APIURL)
		switch {
		case f.unreached():
			d.fail("app", f.cannotReach("GitHub was not asked who the App is"), networkFix(cfg))
		case f.status == http.StatusUnauthorized:
			d.fail("app", fmt.Sprintf("GitHub refused to authenticate as App %d (%s)", cfg.GitHub.App.IntegrationID, f.answer()), credentials)
		case f.status == http.StatusNotFound:
			d.fail("app", fmt.Sprintf("%s knows no App behind GET /app (%s)", f.host, f.answer()),
				fmt.Sprintf("check github.v3_api_url (%s: https://api.github.com/ for github.com, https://HOST/api/v3/ for GitHub Enterprise Server), then %s", cfg.GitHub.V3APIURL, credentials))
		case f.status == http.StatusForbidden && !f.limited:
			d.fail("app", fmt.Sprintf("GitHub refused the App %d's request (%s)", cfg.GitHub.App.IntegrationID, f.answer()),
				"if the organization restricts access with an IP allow list, run doctor where serve runs or allow this machine's address; otherwise "+credentials)
		default:
			d.fail("app", f.trouble("authenticating as App "+fmt.Sprint(cfg.GitHub.App.IntegrationID)), f.troubleFix())
		}
		return
	}
	d.ok("app", "authenticated as %s (App ID %d)", ghApp.GetSlug(), ghApp.GetID())
	settings := strings.TrimRight(cfg.GitHub.WebURL, "/") + "/settings/apps/" + ghApp.GetSlug() + "/permissions"
	want := requiredPermissions(cfg)
	d.permissions("app", want, permissionMap(ghApp.GetPermissions()), settings, true)
	d.events("app", ghApp.Events, settings)
	d.webhook(ctx, client, cfg)

	if cfg.OrgPolicies() {
		d.orgPolicies(ctx, cfg, orgClients{app: client, creator: creator}, want)
		return
	}
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
			f := explainGitHub(ctx, err, cfg.GitHub.V3APIURL)
			switch {
			case f.unreached():
				d.fail("installation", f.cannotReach("the installation on "+owner+" was not checked"), networkFix(cfg))
			case f.status == http.StatusNotFound:
				d.fail("installation", fmt.Sprintf("the App %s is not installed on the organization %s (or %s is not an organization GitHub knows)", ghApp.GetSlug(), owner, owner),
					"an owner of "+owner+" installs it from "+install+"; if "+owner+" is misspelt, fix projects[].owner (projects_v2_item webhooks exist only for organization-owned projects)")
			default:
				d.fail("installation", f.trouble("looking for the App's installation on "+owner), f.troubleFix())
			}
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
		// The installation's token first: a suspended installation, or one that is gone,
		// fails here with what to do rather than inside every board read.
		if _, _, err := client.Apps.CreateInstallationToken(ctx, inst.GetID(), nil); err != nil {
			f := explainGitHub(ctx, err, cfg.GitHub.V3APIURL)
			switch {
			case f.unreached():
				d.fail(who, f.cannotReach("no installation token was asked for"), networkFix(cfg))
			case f.status == http.StatusForbidden && !f.limited:
				d.fail(who, fmt.Sprintf("GitHub refused a token for the installation %d on %s (%s): the installation is probably suspended", inst.GetID(), owner, f.answer()),
					"an owner of "+owner+" unsuspends the App's installation at "+accept)
			case f.status == http.StatusNotFound:
				d.fail(who, fmt.Sprintf("the installation %d on %s is gone (%s)", inst.GetID(), owner, f.answer()),
					"an owner of "+owner+" installs the App again from "+strings.TrimRight(cfg.GitHub.WebURL, "/")+"/apps/"+ghApp.GetSlug()+"/installations/new")
			default:
				d.fail(who, f.trouble("asking for a token of the installation on "+owner), f.troubleFix())
			}
			continue
		}
		ic, err := creator.NewInstallationClient(inst.GetID())
		if err != nil {
			d.fail(who, fmt.Sprintf("cannot build a client for the installation %d: %v", inst.GetID(), err), "")
			continue
		}
		board := ghboard.New(ghboard.NewClient(ic.Client(), cfg.GitHub.V4APIURL), m.Field(), ghboard.NewFieldCache())
		for _, p := range projects {
			d.project(ctx, board, p, m, cfg)
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
				why = " for the board health pages' sign-in (ui.enabled) and the teams named as policy admins (organizations[].policy_admins)"
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
		case !needed && PolicyPermissions[name] != "" && permissionLevel[have[name]] <= permissionLevel[PolicyPermissions[name]]:
			// app.yml asks for it: reading the organizations' policy files needs it.
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

func (d *doctor) webhook(ctx context.Context, client *github.Client, cfg config.Config) {
	hook, _, err := client.Apps.GetHookConfig(ctx)
	if err != nil {
		f := explainGitHub(ctx, err, cfg.GitHub.V3APIURL)
		switch {
		case f.unreached():
			d.warn("webhook", f.cannotReach("the App's webhook was not checked"), networkFix(cfg))
		case f.status == http.StatusNotFound:
			d.warn("webhook", fmt.Sprintf("GitHub has no webhook configuration for the App (%s)", f.answer()),
				"on the App's settings page set the webhook URL to https://<your host>"+app.WebhookRoute+", tick \"Active\" and set the webhook secret serve uses")
		default:
			d.warn("webhook", f.trouble("reading the App's webhook configuration"), f.troubleFix())
		}
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
func (d *doctor) project(ctx context.Context, board *ghboard.Board, p config.Project, m *policy.Machine, cfg config.Config) {
	name := fmt.Sprintf("project %s/%d", p.Owner, p.Number)
	findings, err := app.CheckBoard(ctx, board, p, m)
	if err != nil {
		f := explainGitHub(ctx, err, cfg.GitHub.V4APIURL)
		var (
			rl *ghboard.RateLimitError
			se *ghboard.ServerError
		)
		switch {
		case f.unreached():
			d.fail(name, f.cannotReach("the board was not checked"), networkFix(cfg))
		case errors.As(err, &rl):
			d.fail(name, fmt.Sprintf("GitHub's rate limit held the board check back (GitHub asks to wait %s)", rl.RetryAfter.Round(time.Second)),
				"run doctor again after that: serve and doctor share the App's rate limits")
		case errors.As(err, &se):
			d.fail(name, fmt.Sprintf("GitHub failed while the board was read (HTTP %d)", se.Status), githubDownFix)
		default:
			why := strings.TrimPrefix(err.Error(), fmt.Sprintf("project %s/%d: ", p.Owner, p.Number))
			d.fail(name, "GitHub refused to read the project's board: "+why,
				fmt.Sprintf("check that the installation on %s has Organization permissions → Projects: Read and write (the permission checks above), and that projects[].owner and number name an organization project (/orgs/%s/projects/%d)", p.Owner, p.Owner, p.Number))
		}
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

// githubFailure is a failed GitHub request as doctor explains it: either it never reached
// GitHub (reason says why: DNS, a refused connection, a timeout, a certificate) or GitHub
// answered with status and message. doctor prints a sentence and a fix from it, never the
// client library's raw text ("GET …: 404 Not Found []").
type githubFailure struct {
	host    string // where the request went
	reason  string // why it did not get there; "" when GitHub answered
	status  int    // GitHub's HTTP status; 0 when none came
	text    string // http.StatusText(status), or the library's error when no status came
	message string // GitHub's own message, with its errors' messages
	limited bool   // a rate limit (primary or secondary)
	reset   time.Time
}

// explainGitHub sorts err, the error of a request to base (the API URL the request went to,
// for its host when the error does not name one).
func explainGitHub(ctx context.Context, err error, base string) githubFailure {
	f := githubFailure{host: requestHost(err, base)}
	var (
		er *github.ErrorResponse
		rl *github.RateLimitError
		ab *github.AbuseRateLimitError
		gl *ghboard.RateLimitError
	)
	switch {
	case errors.As(err, &rl):
		f.limited, f.message, f.reset = true, rl.Message, rl.Rate.Reset.Time
		if rl.Response != nil {
			f.status = rl.Response.StatusCode
		}
	case errors.As(err, &ab):
		f.limited, f.message = true, ab.Message
		if ab.Response != nil {
			f.status = ab.Response.StatusCode
		}
	case errors.As(err, &gl):
		f.limited, f.message = true, gl.Message
	case errors.As(err, &er):
		f.message = er.Message
		for _, e := range er.Errors {
			if e.Message != "" {
				f.message += "; " + e.Message
			} else if e.Field != "" || e.Code != "" {
				f.message += "; " + strings.TrimSpace(e.Field+" "+e.Code)
			}
		}
		if er.Response != nil {
			f.status = er.Response.StatusCode
			f.limited = f.status == http.StatusTooManyRequests
		}
	default:
		f.reason = networkReason(err)
		if f.reason == "" {
			f.text = strings.Join(strings.Fields(err.Error()), " ")
		}
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			f.reason = "no answer before doctor's --timeout"
		}
	}
	if f.status != 0 {
		f.text = http.StatusText(f.status)
	}
	return f
}

// unreached reports a request that never got an answer from GitHub.
func (f githubFailure) unreached() bool { return f.reason != "" }

// cannotReach is the sentence for a request that never reached GitHub.
func (f githubFailure) cannotReach(consequence string) string {
	return fmt.Sprintf("cannot reach %s (%s): %s", f.host, f.reason, consequence)
}

// answer is GitHub's answer in words: "404 Not Found: Not Found" shortened to what it adds.
func (f githubFailure) answer() string {
	a := fmt.Sprintf("GitHub answered %d %s", f.status, f.text)
	if f.message != "" && !strings.EqualFold(f.message, f.text) {
		a += ": " + f.message
	}
	return a
}

// trouble is the sentence for any other failure while doing what.
func (f githubFailure) trouble(what string) string {
	switch {
	case f.limited && !f.reset.IsZero():
		return fmt.Sprintf("GitHub's rate limit stopped doctor while %s (it resets at %s)", what, f.reset.Format(time.RFC3339))
	case f.limited:
		return fmt.Sprintf("GitHub's rate limit stopped doctor while %s (%s)", what, f.answer())
	case f.status >= 500:
		return fmt.Sprintf("GitHub failed while %s (%s)", what, f.answer())
	case f.status != 0:
		return fmt.Sprintf("GitHub refused %s (%s)", what, f.answer())
	}
	return fmt.Sprintf("%s failed: %s", what, f.text)
}

func (f githubFailure) troubleFix() string {
	switch {
	case f.limited:
		return "run doctor again once the limit resets: serve and doctor share the App's rate limits"
	case f.status >= 500 || f.status == 0:
		return githubDownFix
	case f.status == http.StatusUnauthorized:
		return "check github.app.integration_id and the private key (GITHUB_APP_PRIVATE_KEY_FILE): GitHub does not accept them"
	case f.status == http.StatusForbidden:
		return "check the App's permissions above; if the organization has an IP allow list, run doctor where serve runs or allow this machine's address"
	}
	return "check the configuration's github section against the App's settings page"
}

// githubDownFix is the fix when GitHub itself failed.
const githubDownFix = "try again in a few minutes; https://www.githubstatus.com says whether GitHub is having trouble"

// networkFix is the fix for GitHub not reached: the URLs, the network, a proxy.
func networkFix(cfg config.Config) string {
	return fmt.Sprintf("check the URL (github.v3_api_url %s, github.v4_api_url %s: leave both out for github.com; https://HOST/api/v3/ and https://HOST/api/graphql for GitHub Enterprise Server), "+
		"that this machine resolves and reaches the host (DNS, firewall, Kubernetes NetworkPolicy), and the proxy it needs, if any (HTTPS_PROXY, NO_PROXY)",
		cfg.GitHub.V3APIURL, cfg.GitHub.V4APIURL)
}

// requestHost is the host a failed request went to: the URL the error names, else base's.
func requestHost(err error, base string) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil && u.Host != "" {
			return u.Host
		}
	}
	if u, perr := url.Parse(base); perr == nil && u.Host != "" {
		return u.Host
	}
	return base
}

// networkReason says in a few words why a request got no answer (DNS, a refused or reset
// connection, a timeout, an untrusted certificate); "" when err is not a network error (the
// server answered).
func networkReason(err error) string {
	var (
		dnsErr    *net.DNSError
		certErr   *tls.CertificateVerificationError
		unknownCA x509.UnknownAuthorityError
		hostErr   x509.HostnameError
		opErr     *net.OpError
		netErr    net.Error
	)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "no answer in time"
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return "no such host"
	case errors.As(err, &dnsErr):
		return "DNS lookup failed: " + dnsErr.Err
	case errors.As(err, &certErr), errors.As(err, &unknownCA), errors.As(err, &hostErr):
		return "its TLS certificate is not trusted here"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "no route to the host"
	case errors.As(err, &netErr) && netErr.Timeout():
		return "timed out"
	case errors.As(err, &opErr):
		return opErr.Err.Error()
	}
	return ""
}

// storeCheckTimeout bounds the store check: a database server that does not answer fails
// within it.
const storeCheckTimeout = 10 * time.Second

// store checks the store serve would open, reading only (store.OpenReadOnly: nothing is
// created, nothing migrated): a failure is what would stop serve at once (an unreachable
// server, refused credentials, a database or a directory that does not exist). A store that
// does not exist yet where serve may create it, or is not migrated yet, is fine: serve
// creates and migrates it when it starts.
func (d *doctor) store(ctx context.Context, driver, dsn string, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, min(timeout, storeCheckTimeout))
	defer cancel()
	if driver == store.DriverPostgres {
		d.postgresStore(ctx, dsn)
		return
	}
	d.sqliteStore(ctx, dsn)
}

// storeWhere is where the store's DSN is set, for the fixes.
const storeWhere = "store.dsn (or " + config.EnvStoreDSN + ")"

func (d *doctor) sqliteStore(ctx context.Context, dsn string) {
	path := store.SQLitePath(dsn)
	if path == "" {
		d.fail("store", "store.dsn names no SQLite database file", "give "+storeWhere+" a file path, such as /data/ralph-gate.db")
		return
	}
	abs := path
	if a, err := filepath.Abs(path); err == nil {
		abs = a
	}
	dir := filepath.Dir(abs)
	fi, err := os.Stat(abs)
	if err != nil {
		dfi, derr := os.Stat(dir)
		switch {
		case derr != nil && !errors.Is(derr, fs.ErrNotExist) && !errors.Is(derr, syscall.ENOTDIR):
			d.fail("store", fmt.Sprintf("cannot look into %s, the directory of the SQLite store: %v", dir, derr),
				"let the user serve runs as read and write that directory, or fix "+storeWhere)
		case derr != nil || !dfi.IsDir():
			d.fail("store", fmt.Sprintf("the directory %s of the SQLite store %s does not exist: serve refuses to start", dir, abs),
				fmt.Sprintf("fix %s if the path is mistyped; otherwise create the directory (mkdir -p %s), writable by the user serve runs as: serve creates the database file on its first start, never its directory", storeWhere, dir))
		case errors.Is(err, fs.ErrNotExist):
			d.ok("store", "sqlite %s does not exist yet: serve creates it on its first start (its directory exists)", abs)
		default:
			d.fail("store", fmt.Sprintf("cannot look at the SQLite store %s: %v", abs, err), "let the user serve runs as read and write it, or fix "+storeWhere)
		}
		return
	}
	if fi.IsDir() {
		d.fail("store", fmt.Sprintf("%s is a directory, not an SQLite database file", abs),
			fmt.Sprintf("give %s a file in it, such as %s", storeWhere, filepath.Join(abs, "ralph-gate.db")))
		return
	}
	st, err := store.OpenReadOnly(ctx, store.DriverSQLite, dsn)
	switch {
	case errors.Is(err, store.ErrNoStore):
		d.ok("store", "sqlite %s has no ralph-gate tables yet: serve creates them on its first start", abs)
		return
	case err != nil:
		d.fail("store", "cannot read the SQLite store: "+storeProblem(err),
			fmt.Sprintf("check that %s is ralph-gate's database file, readable and writable by the user serve runs as, or fix %s", abs, storeWhere))
		return
	}
	defer st.Close()
	d.schema(ctx, st, "sqlite "+abs)
}

func (d *doctor) postgresStore(ctx context.Context, dsn string) {
	database, server, user, ok := store.PostgresTarget(dsn)
	target := fmt.Sprintf("database %q on %s as %q", database, server, user)
	if !ok {
		target = "the PostgreSQL database of " + storeWhere
	}
	st, err := store.OpenReadOnly(ctx, store.DriverPostgres, dsn)
	if errors.Is(err, store.ErrNoStore) {
		d.ok("store", "postgres %s has no ralph-gate tables yet: serve creates them on its first start", target)
		return
	}
	if err != nil {
		kind, why := store.ClassifyOpenError(err)
		switch kind {
		case store.ProblemUnreachable:
			d.fail("store", fmt.Sprintf("cannot reach the PostgreSQL server %s (%s): serve cannot start", server, why),
				"check the host and port in "+storeWhere+", that PostgreSQL runs there, and that this machine may reach it (DNS, firewall, Kubernetes NetworkPolicy)")
		case store.ProblemCredentials:
			d.fail("store", fmt.Sprintf("PostgreSQL refused the user %q on %s (database %q): %s", user, server, database, why),
				"check the user and password in "+storeWhere+"; keep the password in a Secret, given as "+config.EnvStoreDSN+"; and check that pg_hba.conf lets that user in from this host")
		case store.ProblemNoDatabase:
			d.fail("store", fmt.Sprintf("the PostgreSQL server %s has no database %q: %s", server, database, why),
				fmt.Sprintf("create it (CREATE DATABASE %s OWNER %s;) or fix the database name in %s; serve creates its tables, not the database", database, user, storeWhere))
		case store.ProblemPrivileges:
			d.fail("store", fmt.Sprintf("PostgreSQL does not let %q read %s: %s", user, target, why),
				"grant the user CONNECT on the database and the rights to create and use its tables (serve migrates them), or give "+storeWhere+" the database's owner")
		default:
			d.fail("store", "cannot open the PostgreSQL store: "+storeProblem(err), storeHint(err, store.DriverPostgres, dsn, false))
		}
		return
	}
	defer st.Close()
	d.schema(ctx, st, "postgres "+target)
}

// schema reports the store's schema: as new as this ralph-gate's, or older (serve migrates it).
func (d *doctor) schema(ctx context.Context, st *store.Store, where string) {
	err := st.CheckSchema(ctx)
	var behind *store.SchemaBehindError
	switch {
	case errors.As(err, &behind):
		d.ok("store", "%s: schema at version %d, older than this ralph-gate's %d: serve migrates it when it starts", where, behind.Applied, behind.Known)
	case err != nil:
		d.fail("store", fmt.Sprintf("%s: cannot read its schema version: %s", where, storeProblem(err)),
			"check that "+storeWhere+" names the store the service writes, readable by this user")
	default:
		d.ok("store", "%s: ralph-gate's store, schema up to date", where)
	}
}
