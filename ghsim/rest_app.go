package ghsim

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// routes registers every REST route; the pattern (without /api/v3) names the operation in the
// request log.
func (s *Server) routes() {
	h := func(pattern string, f http.HandlerFunc) {
		method, path, _ := cut(pattern)
		s.rest.HandleFunc(method+" /api/v3"+path, f)
	}
	h("GET /app", s.getApp)
	h("GET /app/installations", s.listInstallations)
	h("GET /app/installations/{id}", s.getInstallation)
	h("POST /app/installations/{id}/access_tokens", s.createAccessToken)
	h("GET /app/hook/config", s.getHookConfig)
	h("GET /app/hook/deliveries", s.listDeliveries)
	h("GET /app/hook/deliveries/{id}", s.getDelivery)
	h("POST /app/hook/deliveries/{id}/attempts", s.redeliver)
	h("GET /orgs/{org}/installation", s.getOrgInstallation)
	h("GET /repos/{owner}/{repo}/installation", s.getRepoInstallation)
	h("GET /installation/repositories", s.listInstallationRepos)
	h("GET /rate_limit", s.getRateLimit)
	h("GET /repos/{owner}/{repo}/issues/{number}", s.getIssue)
	h("PATCH /repos/{owner}/{repo}/issues/{number}", s.patchIssue)
	h("GET /repos/{owner}/{repo}/issues/{number}/comments", s.listComments)
	h("POST /repos/{owner}/{repo}/issues/{number}/comments", s.createComment)
	h("PATCH /repos/{owner}/{repo}/issues/comments/{id}", s.updateComment)
	h("GET /repos/{owner}/{repo}/issues/{number}/sub_issues", s.listSubIssues)
	h("GET /repos/{owner}/{repo}/issues/{number}/parent", s.getParent)
	h("GET /repos/{owner}/{repo}/issues/{number}/dependencies/blocked_by", s.listBlockedBy)
	h("GET /repos/{owner}/{repo}/issues/{number}/dependencies/blocking", s.listBlocking)
	h("GET /repos/{owner}/{repo}/pulls/{number}", s.getPull)
	h("GET /repos/{owner}/{repo}/contents/{path...}", s.getContents)
	h("GET /repos/{owner}/{repo}/contents", s.getContents)
	h("POST /repos/{owner}/{repo}/check-runs", s.createCheckRun)
	h("GET /repos/{owner}/{repo}/check-runs/{id}", s.getCheckRun)
	h("PATCH /repos/{owner}/{repo}/check-runs/{id}", s.updateCheckRun)
	h("GET /repos/{owner}/{repo}/check-runs/{id}/annotations", s.listCheckRunAnnotations)
	h("GET /repos/{owner}/{repo}/commits/{ref}/check-runs", s.listCheckRunsForRef)
	h("GET /repos/{owner}/{repo}", s.getRepo)
	h("GET /repos/{owner}/{repo}/commits/{ref}", s.getCommit)
	h("GET /repos/{owner}/{repo}/compare/{basehead...}", s.compareCommits)
	h("GET /orgs/{org}/teams/{team_slug}/memberships/{username}", s.getTeamMembership)
	h("POST /app-manifests/{code}/conversions", s.convertManifest)
}

// anonymousRoute reports the REST routes GitHub serves without authentication.
func anonymousRoute(route string) bool {
	return route == "/app-manifests/{code}/conversions"
}

// webRoutes registers the github.com web pages ghsim models (outside /api/, so neither
// authenticated, rate-limited, fault-injected nor logged).
func (s *Server) webRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /organizations/{org}/settings/apps/new", s.newAppFromManifest)
}

func cut(pattern string) (method, path string, ok bool) {
	for i := 0; i < len(pattern); i++ {
		if pattern[i] == ' ' {
			return pattern[:i], pattern[i+1:], true
		}
	}
	return "", pattern, false
}

func (s *Server) appJSON() map[string]any {
	s.w.mu.RLock()
	defer s.w.mu.RUnlock()
	w := s.w
	count := 0
	for _, in := range w.installs {
		if in.installed {
			count++
		}
	}
	return map[string]any{
		"id": w.app.id, "slug": w.app.slug, "node_id": nodeID("A", w.app.id), "name": w.app.name,
		"owner": w.orgAsOwnerJSON(w.org), "description": "", "external_url": w.baseURL, "html_url": w.htmlURL("/apps/%s", w.app.slug),
		"created_at": ts(seedEpoch), "updated_at": ts(seedEpoch),
		"permissions": w.app.permissions, "events": w.app.events, "installations_count": count,
	}
}

// installationJSON is an installation as the REST API and the installation webhook show it.
// Callers hold the world's lock.
func (w *world) installationJSON(in *installation) map[string]any {
	id := in.id
	return map[string]any{
		"id": id, "node_id": installationNodeID(id), "account": w.orgAsOwnerJSON(in.org), "app_id": w.app.id, "app_slug": w.app.slug,
		"target_id": in.org.id, "target_type": "Organization", "repository_selection": in.selection(),
		"access_tokens_url": w.apiURL("/app/installations/%d/access_tokens", id),
		"repositories_url":  w.apiURL("/installation/repositories"),
		"html_url":          w.htmlURL("/organizations/%s/settings/installations/%d", in.org.login, id),
		"permissions":       in.permissions, "events": w.app.events,
		"created_at": ts(in.createdAt), "updated_at": ts(in.createdAt), "single_file_name": nil, "suspended_at": nil, "suspended_by": nil,
		"has_multiple_single_files": false, "single_file_paths": []string{},
	}
}

func (s *Server) getApp(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.appJSON())
}

// listInstallations is GET /app/installations: every organization the App is installed on.
func (s *Server) listInstallations(w http.ResponseWriter, _ *http.Request) {
	s.w.mu.RLock()
	defer s.w.mu.RUnlock()
	out := []any{}
	for _, in := range s.w.installs {
		if in.installed {
			out = append(out, s.w.installationJSON(in))
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// installationFrom finds the installed installation of the path's {id}. Callers hold the lock.
func (s *Server) installationFrom(r *http.Request) *installation {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		return nil
	}
	if in := s.w.installation(id); in != nil && in.installed {
		return in
	}
	return nil
}

// answerInstallation answers an installed installation, 404 for none.
func (s *Server) answerInstallation(w http.ResponseWriter, find func() *installation) {
	s.w.mu.RLock()
	defer s.w.mu.RUnlock()
	in := find()
	if in == nil || !in.installed {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	writeJSON(w, http.StatusOK, s.w.installationJSON(in))
}

func (s *Server) getInstallation(w http.ResponseWriter, r *http.Request) {
	s.answerInstallation(w, func() *installation { return s.installationFrom(r) })
}

func (s *Server) getOrgInstallation(w http.ResponseWriter, r *http.Request) {
	s.answerInstallation(w, func() *installation {
		if o := s.w.orgNamed(r.PathValue("org")); o != nil {
			return o.inst
		}
		return nil
	})
}

// getRepoInstallation is GET /repos/{owner}/{repo}/installation: the installation that sees it.
func (s *Server) getRepoInstallation(w http.ResponseWriter, r *http.Request) {
	s.answerInstallation(w, func() *installation {
		if rp := s.w.repo(r.PathValue("owner"), r.PathValue("repo")); rp != nil && rp.owner.inst.sees(rp) {
			return rp.owner.inst
		}
		return nil
	})
}

func (s *Server) createAccessToken(w http.ResponseWriter, r *http.Request) {
	s.w.mu.RLock()
	in := s.installationFrom(r)
	if in == nil {
		s.w.mu.RUnlock()
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	perms, selection := in.permissions, in.selection()
	tok, exp := s.auth.issue(in)
	s.w.mu.RUnlock()
	writeJSON(w, http.StatusCreated, map[string]any{"token": tok, "expires_at": ts(exp), "permissions": perms, "repository_selection": selection})
}

func (s *Server) getHookConfig(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"url": s.hooks.getURL(), "content_type": "json", "insecure_ssl": "0", "secret": "********"})
}

// listInstallationRepos is GET /installation/repositories: the repositories the token's
// installation may see.
func (s *Server) listInstallationRepos(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	if p.kind != installationToken {
		writeError(w, http.StatusForbidden, "You must authenticate with an installation access token in order to list repositories for an installation.")
		return
	}
	s.w.mu.RLock()
	repos := []any{}
	for _, rp := range p.inst.org.repos {
		if p.inst.sees(rp) {
			repos = append(repos, s.w.repoJSON(rp))
		}
	}
	selection := p.inst.selection()
	s.w.mu.RUnlock()
	writeJSON(w, http.StatusOK, map[string]any{"total_count": len(repos), "repository_selection": selection, "repositories": repos})
}

func (s *Server) getRateLimit(w http.ResponseWriter, r *http.Request) {
	snap := rateFrom(r.Context())
	res := map[string]any{"limit": snap.Limit, "remaining": snap.Remaining, "used": snap.Used, "reset": snap.Reset.Unix(), "resource": snap.Resource}
	writeJSON(w, http.StatusOK, map[string]any{"resources": map[string]any{"core": res}, "rate": res})
}

// The GitHub App manifest flow
// (https://docs.github.com/en/apps/sharing-github-apps/registering-a-github-app-from-a-manifest):
// a form POSTs a manifest to /organizations/{org}/settings/apps/new, GitHub redirects the
// browser to the manifest's redirect_url with a temporary code (and the form's state), and
// POST /app-manifests/{code}/conversions exchanges the code, once and within an hour, for the
// App's id, keys and secrets.
//
// ghsim has exactly one App, the seed's, so registering "creates" that App: the conversion
// answers the seed's id, slug, private key and webhook secret (valid for ghsim's JWT auth and
// signed webhooks, and already installed on the organization), with the name, description,
// URL, permissions and events the manifest asked for. The manifest changes nothing else: GET
// /app, the webhook URL and the installation stay the seed's. ghsim skips GitHub's
// confirmation page and does not model the signed-in organization owner.

// manifestCodeTTL is how long a manifest code can be exchanged.
const manifestCodeTTL = time.Hour

// appManifest is a GitHub App manifest, decoded strictly: a key ghsim does not know is refused.
type appManifest struct {
	Name           string `json:"name"`
	URL            string `json:"url"`
	Description    string `json:"description"`
	HookAttributes *struct {
		URL    string `json:"url"`
		Active *bool  `json:"active"`
	} `json:"hook_attributes"`
	RedirectURL           string            `json:"redirect_url"`
	CallbackURLs          []string          `json:"callback_urls"`
	SetupURL              string            `json:"setup_url"`
	Public                bool              `json:"public"`
	DefaultEvents         []string          `json:"default_events"`
	DefaultPermissions    map[string]string `json:"default_permissions"`
	RequestOAuthOnInstall bool              `json:"request_oauth_on_install"`
	SetupOnUpdate         bool              `json:"setup_on_update"`
}

// manifestFlow holds the codes the manifest page issued and not yet exchanged.
type manifestFlow struct {
	mu    sync.Mutex
	n     uint64
	codes map[string]manifestGrant
}

type manifestGrant struct {
	manifest appManifest
	expires  time.Time
}

// derive hashes (seed, n, tag) into hex, for deterministic codes and client credentials.
func derive(seed, n uint64, tag byte) string {
	var in [17]byte
	binary.BigEndian.PutUint64(in[:8], seed)
	binary.BigEndian.PutUint64(in[8:16], n)
	in[16] = tag
	h := sha256.Sum256(in[:])
	return hex.EncodeToString(h[:])
}

func (f *manifestFlow) issue(seed uint64, m appManifest, now time.Time) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.codes == nil {
		f.codes = map[string]manifestGrant{}
	}
	f.n++
	code := derive(seed, f.n, 'm')[:40]
	f.codes[code] = manifestGrant{manifest: m, expires: now.Add(manifestCodeTTL)}
	return code
}

// redeem consumes a code: it is valid once, until it expires.
func (f *manifestFlow) redeem(code string, now time.Time) (appManifest, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	g, ok := f.codes[code]
	delete(f.codes, code)
	if !ok || !now.Before(g.expires) {
		return appManifest{}, false
	}
	return g.manifest, true
}

func absoluteHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// check validates a manifest as far as GitHub documents it; redirect_url is required by ghsim,
// which has no settings page to land on without it.
func (m appManifest) check() string {
	switch {
	case !absoluteHTTPURL(m.URL):
		return "url is required: the homepage of your GitHub App (a full http(s) URL)"
	case m.HookAttributes != nil && !absoluteHTTPURL(m.HookAttributes.URL):
		return "hook_attributes.url is required: the URL of the server that will receive the webhook POST requests"
	case !absoluteHTTPURL(m.RedirectURL):
		return "redirect_url is required by ghsim: the full URL to send the browser back to with the code"
	case len(m.CallbackURLs) > 10:
		return "callback_urls: at most 10"
	}
	for name, level := range m.DefaultPermissions {
		if level != "read" && level != "write" && level != "admin" {
			return fmt.Sprintf("default_permissions.%s: must be read, write or admin, got %q", name, level)
		}
	}
	return ""
}

// newAppFromManifest is github.com's "Create GitHub App" page for an organization, confirmed at
// once: it registers the manifest and redirects to its redirect_url with a code and the state.
func (s *Server) newAppFromManifest(w http.ResponseWriter, r *http.Request) {
	if !strings.EqualFold(r.PathValue("org"), s.seed.Org) { // the App is registered by the top-level organization
		http.Error(w, "Not Found", http.StatusNotFound)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "Invalid form: "+err.Error(), http.StatusBadRequest)
		return
	}
	raw := r.PostForm.Get("manifest")
	if raw == "" {
		http.Error(w, "Invalid GitHub App configuration: the manifest form field is missing", http.StatusUnprocessableEntity)
		return
	}
	var m appManifest
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		http.Error(w, "Invalid GitHub App configuration: the manifest is not valid JSON ghsim knows: "+err.Error(), http.StatusUnprocessableEntity)
		return
	}
	if msg := m.check(); msg != "" {
		http.Error(w, "Invalid GitHub App configuration: "+msg, http.StatusUnprocessableEntity)
		return
	}
	code := s.manifests.issue(s.opts.RandomSeed, m, s.now())
	to, _ := url.Parse(m.RedirectURL)
	q := to.Query()
	q.Set("code", code)
	if state := r.URL.Query().Get("state"); state != "" {
		q.Set("state", state)
	}
	to.RawQuery = q.Encode()
	http.Redirect(w, r, to.String(), http.StatusFound)
}

// convertManifest is POST /app-manifests/{code}/conversions: 201 with the App and its
// credentials, 404 for a code ghsim did not issue, already exchanged or older than an hour.
func (s *Server) convertManifest(w http.ResponseWriter, r *http.Request) {
	m, ok := s.manifests.redeem(r.PathValue("code"), s.now())
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	app := s.appJSON()
	if m.Name != "" {
		app["name"] = m.Name
	}
	app["description"] = m.Description
	app["external_url"] = m.URL
	perms := map[string]string{"metadata": "read"}
	for k, v := range m.DefaultPermissions {
		perms[k] = v
	}
	events := m.DefaultEvents
	if events == nil {
		events = []string{}
	}
	now := ts(s.now())
	app["permissions"], app["events"] = perms, events
	app["created_at"], app["updated_at"] = now, now
	app["installations_count"] = 1
	id := s.seed.App.ID
	app["client_id"] = "Iv1." + derive(s.opts.RandomSeed, uint64(id), 'c')[:16]
	app["client_secret"] = derive(s.opts.RandomSeed, uint64(id), 's')[:40]
	var secret any
	if s.seed.App.WebhookSecret != "" {
		secret = s.seed.App.WebhookSecret
	}
	app["webhook_secret"] = secret
	app["pem"] = string(s.keyPEM)
	writeJSON(w, http.StatusCreated, app)
}
