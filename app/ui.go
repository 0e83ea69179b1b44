package app

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
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
// own the enforced projects.
func (a *App) uiHandler(now func() time.Time) (http.Handler, error) {
	cfg := a.cfg
	var gh githubapp.Config
	gh.WebURL, gh.V3APIURL, gh.V4APIURL = cfg.GitHub.WebURL, cfg.GitHub.V3APIURL, cfg.GitHub.V4APIURL
	gh.OAuth.ClientID, gh.OAuth.ClientSecret = cfg.GitHub.OAuth.ClientID, cfg.GitHub.OAuth.ClientSecret
	var orgs []string
	for _, p := range cfg.Projects {
		if !slices.ContainsFunc(orgs, func(o string) bool { return strings.EqualFold(o, p.Owner) }) {
			orgs = append(orgs, p.Owner)
		}
	}
	opts := webauth.Options{GitHub: gh, PublicURL: cfg.PublicBase(), SessionKey: []byte(cfg.UI.SessionKey),
		Orgs: orgs, Members: webauth.NewInstallationMembers(a.github), Now: now, Revocations: a.store}
	if a.orgs != nil {
		// The pages show every organization's projects: a viewer belongs to every one of them.
		opts.OrgsNow = func() []string {
			var out []string
			for _, op := range a.orgs.all() {
				out = append(out, op.owner)
			}
			return out
		}
	}
	auth, err := webauth.New(opts)
	if err != nil {
		return nil, fmt.Errorf("ui: %w", err)
	}
	base := strings.TrimSuffix(UIRoute, "/")
	pages, err := web.New(web.Options{Reports: health.NewCache(HealthReader(cfg, a.store), pageReportMaxAge), Decisions: a.store, Machine: a.machine, BasePath: base,
		WebURL: cfg.GitHub.WebURL, Viewer: webauth.Viewer, CSRFToken: webauth.CSRFToken, CSRFField: webauth.CSRFField, Now: now})
	if err != nil {
		return nil, fmt.Errorf("ui: %w", err)
	}
	return auth.Wrap(http.StripPrefix(base, pages)), nil
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
