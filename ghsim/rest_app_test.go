package ghsim

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v89/github"
)

// manifestJSON is a manifest like app.yml's, redirecting to redirect.
func manifestJSON(t *testing.T, redirect string, edit func(map[string]any)) string {
	t.Helper()
	m := map[string]any{
		"name": "ralph-gate-test", "url": "https://github.com/ralph-gate/ralph-gate", "description": "test",
		"hook_attributes": map[string]any{"url": "https://ralph.test/api/github/hook", "active": true},
		"redirect_url":    redirect, "public": false,
		"default_permissions": map[string]any{"organization_projects": "write", "issues": "write", "pull_requests": "read"},
		"default_events":      []string{"projects_v2_item", "issues", "pull_request"},
	}
	if edit != nil {
		edit(m)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// submitManifest POSTs the manifest form as a browser would, without following the redirect.
func (s *sim) submitManifest(org, state, manifest string) (*http.Response, string) {
	s.t.Helper()
	action := s.url + "/organizations/" + org + "/settings/apps/new"
	if state != "" {
		action += "?state=" + url.QueryEscape(state)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.PostForm(action, url.Values{"manifest": {manifest}})
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return res, string(body)
}

func (s *sim) anonymousClient() *github.Client {
	s.t.Helper()
	c, err := github.NewClient(github.WithEnterpriseURLs(s.url+"/api/v3/", s.url+"/api/uploads/"), github.WithTimeout(10*time.Second))
	if err != nil {
		s.t.Fatal(err)
	}
	return c
}

// The manifest flow: the form redirects to redirect_url with a code and the state; the code
// converts once, without authentication, into the seeded App's id, key and webhook secret,
// which then authenticate as the App.
func TestManifestFlow(t *testing.T) {
	s := startSim(t, testSeed(t), Options{})
	ctx := context.Background()

	res, body := s.submitManifest("acme", "st4te", manifestJSON(t, "http://127.0.0.1:9/callback?keep=1", nil))
	if res.StatusCode != http.StatusFound {
		t.Fatalf("form: %d %s", res.StatusCode, body)
	}
	loc, err := url.Parse(res.Header.Get("Location"))
	if err != nil || loc.Host != "127.0.0.1:9" || loc.Path != "/callback" {
		t.Fatalf("redirect to %q", res.Header.Get("Location"))
	}
	q := loc.Query()
	code := q.Get("code")
	if len(code) != 40 || q.Get("state") != "st4te" || q.Get("keep") != "1" {
		t.Fatalf("redirect query %v", q)
	}

	cfg, _, err := s.anonymousClient().Apps.CompleteAppManifest(ctx, code)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.GetID() != 1001 || cfg.GetSlug() != "ralph-gate" || cfg.GetName() != "ralph-gate-test" || cfg.GetNodeID() == "" ||
		cfg.GetOwner().GetLogin() != "acme" || cfg.GetExternalURL() != "https://github.com/ralph-gate/ralph-gate" ||
		!strings.HasPrefix(cfg.GetClientID(), "Iv1.") || len(cfg.GetClientSecret()) != 40 ||
		cfg.GetWebhookSecret() != "ghsim-webhook-s3cret" || cfg.GetPEM() != string(s.PrivateKeyPEM()) || cfg.GetHTMLURL() != s.url+"/apps/ralph-gate" {
		t.Errorf("conversion: %+v", cfg)
	}
	// The documented fields, with the manifest's permissions (metadata added) and events.
	var raw map[string]any
	r := s.do("POST", "/api/v3/app-manifests/"+code+"/conversions", "", nil)
	if r.status != http.StatusNotFound {
		t.Errorf("second conversion of a code: %d, want 404", r.status)
	}
	res, _ = s.submitManifest("acme", "", manifestJSON(t, "http://127.0.0.1:9/callback", nil))
	loc, _ = url.Parse(res.Header.Get("Location"))
	if loc.Query().Has("state") {
		t.Errorf("no state given, yet the redirect has one: %s", loc)
	}
	r = s.do("POST", "/api/v3/app-manifests/"+loc.Query().Get("code")+"/conversions", "", nil)
	r.json(t, &raw)
	if r.status != http.StatusCreated {
		t.Fatalf("conversion: %d %s", r.status, r.body)
	}
	for _, k := range []string{"id", "slug", "node_id", "owner", "name", "description", "external_url", "html_url", "created_at", "updated_at",
		"permissions", "events", "client_id", "client_secret", "webhook_secret", "pem"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("conversion lacks %q", k)
		}
	}
	perms, _ := raw["permissions"].(map[string]any)
	if perms["metadata"] != "read" || perms["organization_projects"] != "write" || len(perms) != 4 {
		t.Errorf("permissions %v", raw["permissions"])
	}

	// The App it hands out is usable: its key signs a JWT ghsim accepts as that App.
	jwt := signJWT(t, []byte(cfg.GetPEM()), cfg.GetID(), time.Now().Add(-30*time.Second), time.Now().Add(9*time.Minute))
	a, _, err := s.client(jwt).Apps.Get(ctx, "")
	if err != nil || a.GetID() != cfg.GetID() {
		t.Fatalf("GET /app with the converted key: %+v %v", a, err)
	}
	if got := s.Requests().Counts["rest:POST /app-manifests/{code}/conversions"]; got != 3 {
		t.Errorf("conversions logged: %d, want 3", got)
	}
}

func TestManifestFlowRefusals(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s := startSim(t, testSeed(t), Options{Clock: clock})
	const cb = "http://127.0.0.1:9/callback"

	for _, tc := range []struct {
		name, org, manifest string
		status              int
		says                string
	}{
		{"unknown organization", "other", manifestJSON(t, cb, nil), http.StatusNotFound, "Not Found"},
		{"no manifest", "acme", "", http.StatusUnprocessableEntity, "manifest form field is missing"},
		{"not JSON", "acme", "{", http.StatusUnprocessableEntity, "not valid JSON"},
		{"unknown key", "acme", manifestJSON(t, cb, func(m map[string]any) { m["colour"] = "blue" }), http.StatusUnprocessableEntity, "colour"},
		{"no url", "acme", manifestJSON(t, cb, func(m map[string]any) { delete(m, "url") }), http.StatusUnprocessableEntity, "url is required"},
		{"no hook url", "acme", manifestJSON(t, cb, func(m map[string]any) { m["hook_attributes"] = map[string]any{"active": true} }), http.StatusUnprocessableEntity, "hook_attributes.url"},
		{"no redirect_url", "acme", manifestJSON(t, "", nil), http.StatusUnprocessableEntity, "redirect_url"},
		{"bad permission", "acme", manifestJSON(t, cb, func(m map[string]any) { m["default_permissions"] = map[string]any{"issues": "all"} }), http.StatusUnprocessableEntity, "default_permissions.issues"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, body := s.submitManifest(tc.org, "x", tc.manifest)
			if res.StatusCode != tc.status || !strings.Contains(body, tc.says) {
				t.Errorf("%d %q, want %d with %q", res.StatusCode, body, tc.status, tc.says)
			}
		})
	}

	anon := s.anonymousClient()
	_, _, err := anon.Apps.CompleteAppManifest(context.Background(), "0000000000000000000000000000000000000000")
	var ge *github.ErrorResponse
	if !errors.As(err, &ge) || ge.Response.StatusCode != http.StatusNotFound || ge.Message != "Not Found" {
		t.Errorf("unknown code: %v", err)
	}
	// A code lasts an hour.
	res, _ := s.submitManifest("acme", "", manifestJSON(t, cb, nil))
	loc, _ := url.Parse(res.Header.Get("Location"))
	mu.Lock()
	now = now.Add(time.Hour)
	mu.Unlock()
	if _, _, err := anon.Apps.CompleteAppManifest(context.Background(), loc.Query().Get("code")); !errors.As(err, &ge) || ge.Response.StatusCode != http.StatusNotFound {
		t.Errorf("code older than an hour: %v", err)
	}
	// Only the conversion is served without authentication.
	if r := s.do("GET", "/api/v3/repos/acme/app/issues/1", "", nil); r.status != http.StatusUnauthorized {
		t.Errorf("anonymous issue read: %d, want 401", r.status)
	}
}
