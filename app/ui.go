package app

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/palantir/go-githubapp/githubapp"

	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/health"
	"github.com/ralph-gate/ralph-gate/web"
	"github.com/ralph-gate/ralph-gate/webauth"
)

// pageReportMaxAge is how old a health report the pages may show: computing it reads every
// item of every project, a page view only renders it (health.Cache).
const pageReportMaxAge = 5 * time.Second

// UIRoute is where the board health pages are served (ui.enabled), behind the GitHub sign-in.
const UIRoute = "/ui/"

// uiHandler builds /ui/: the pages (package web) over the health report and the audit log,
// behind the sign-in (package webauth), which admits only members of the organizations that
// own the enforced projects. A viewer who belongs to some of them sees those organizations'
// projects, the decisions on them and their agents' use of the façade, and nothing else.
func (a *App) uiHandler(now func() time.Time) (http.Handler, error) {
	cfg := a.cfg
	var gh githubapp.Config
	gh.WebURL, gh.V3APIURL, gh.V4APIURL = cfg.GitHub.WebURL, cfg.GitHub.V3APIURL, cfg.GitHub.V4APIURL
	gh.OAuth.ClientID, gh.OAuth.ClientSecret = cfg.GitHub.OAuth.ClientID, cfg.GitHub.OAuth.ClientSecret
	opts := webauth.Options{GitHub: gh, PublicURL: cfg.PublicBase(), SessionKey: []byte(cfg.UI.SessionKey),
		Orgs: a.servedOrgs(), Members: webauth.NewInstallationMembers(a.github), Now: now, Revocations: a.store}
	if a.orgs != nil {
		// The organizations whose policy is in force, as they are at each view (installs).
		opts.OrgsNow = a.servedOrgs
	}
	auth, err := webauth.New(opts)
	if err != nil {
		return nil, fmt.Errorf("ui: %w", err)
	}
	base := strings.TrimSuffix(UIRoute, "/")
	pages, err := web.New(web.Options{Reports: health.NewCache(HealthReader(cfg, a.store), pageReportMaxAge), Decisions: a.store, Machine: a.machine, BasePath: base,
		WebURL: cfg.GitHub.WebURL, Viewer: webauth.Viewer, CSRFToken: webauth.CSRFToken, CSRFField: webauth.CSRFField, Now: now,
		Scope: viewerScope, Facade: a.facadeOf})
	if err != nil {
		return nil, fmt.Errorf("ui: %w", err)
	}
	return auth.Wrap(http.StripPrefix(base, pages)), nil
}

// viewerScope is what the signed-in viewer may see: the organizations they belong to
// (webauth.Scope).
func viewerScope(r *http.Request) web.Scope {
	orgs, all := webauth.Scope(r)
	return web.Scope{All: all, Orgs: orgs}
}

// decisionLink is where violation comments link for a decision: its page under
// server.public_url, when the pages are served there; nil otherwise.
func decisionLink(cfg config.Config) func(deliveryID string) string {
	base := cfg.PublicBase()
	if !cfg.UI.Enabled || base == "" {
		return nil
	}
	return func(deliveryID string) string {
		return base + "/ui" + web.DeliveryPath + url.PathEscape(deliveryID)
	}
}
