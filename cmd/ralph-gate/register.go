package main

// ralph-gate register: GitHub's App manifest flow
// (https://docs.github.com/en/apps/sharing-github-apps/registering-a-github-app-from-a-manifest),
// run from the admin's machine. A page on 127.0.0.1 POSTs the manifest (app.yml, with
// redirect_url pointing back at the page and a random state) to
// <github-url>/organizations/ORG/settings/apps/new; GitHub creates the App once the admin
// confirms and redirects the browser to /callback?code=…&state=…; the code is exchanged with
// POST /app-manifests/{code}/conversions (no authentication, within an hour, once) for the
// App's ID, private key and secrets, which are written to a mode-0600 file and never printed,
// with a random session key for the board health pages' sign-in.

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/ralph-gate/ralph-gate/app/config"
)

const (
	defaultEnvOut    = "ralph-gate-app.env"
	defaultSecretOut = "ralph-gate-app-secret.yaml"
	// manifestCodeTTL is how long GitHub lets a manifest code be exchanged.
	manifestCodeTTL = time.Hour
)

// The Secret keys the chart reads by default (charts/ralph-gate/values.yaml,
// github.existingSecretKeys): register writes exactly these.
const (
	secretKeyAppID             = "app-id"
	secretKeyWebhookSecret     = "webhook-secret"
	secretKeyPrivateKey        = "private-key"
	secretKeyOAuthClientSecret = "client-secret"
	secretKeySessionKey        = "session-key"
)

var (
	orgLogin     = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,37}[A-Za-z0-9])?$`)
	manifestCode = regexp.MustCompile(`^[A-Za-z0-9_-]{1,200}$`)
	shellSafe    = regexp.MustCompile(`^[A-Za-z0-9._/+-]+$`)
	k8sName      = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

func runRegister(ctx context.Context, args []string, s streams) int {
	fs := newFlags("register", s)
	org := fs.String("org", "", "the organization that will own the App (required)")
	manifestFile := fs.String("manifest", "app.yml", "the App manifest")
	webhookURL := fs.String("webhook-url", "", "where GitHub sends webhooks, https://YOUR-HOST/api/github/hook (default: the manifest's hook_attributes.url)")
	name := fs.String("name", "", "the App's name, unique on GitHub (default: the manifest's name)")
	githubURL := fs.String("github-url", "https://github.com", "GitHub's web address (GitHub Enterprise Server: https://HOST)")
	apiURL := fs.String("api-url", "", "the REST API address (default https://api.github.com/, or <github-url>/api/v3/ for GitHub Enterprise Server)")
	listen := fs.String("listen", "127.0.0.1:0", "where the local page listens (loopback only; port 0 picks a free port)")
	out := fs.String("out", "", "the file to write the credentials to, mode 0600 (default "+defaultEnvOut+", or "+defaultSecretOut+" with --k8s-secret)")
	k8sSecret := fs.String("k8s-secret", "", "write a Kubernetes Secret with this name (the chart's github.existingSecret) instead of an env file")
	force := fs.Bool("force", false, "overwrite --out if it exists")
	timeout := fs.Duration("timeout", manifestCodeTTL, "give up waiting for GitHub after this long")
	if code, ok := parseFlags(fs, args, s); !ok {
		return code
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(s.err, "ralph-gate register: "+format+"\n", a...)
		return exitUsage
	}
	if !orgLogin.MatchString(*org) {
		return usageErr("--org must name the GitHub organization that will own the App (got %q)", *org)
	}
	web, err := parseBaseURL(*githubURL)
	if err != nil {
		return usageErr("--github-url: %v", err)
	}
	api := *apiURL
	if api == "" {
		api = defaultAPIURL(web)
	}
	apiBase, err := parseBaseURL(api)
	if err != nil {
		return usageErr("--api-url: %v", err)
	}
	if *k8sSecret != "" && (len(*k8sSecret) > 253 || !k8sName.MatchString(*k8sSecret)) {
		return usageErr("--k8s-secret must be a Kubernetes object name (lower-case letters, digits, '-' and '.'), got %q", *k8sSecret)
	}
	if *out == "" {
		*out = defaultEnvOut
		if *k8sSecret != "" {
			*out = defaultSecretOut
		}
	}
	if *timeout <= 0 {
		return usageErr("--timeout must be positive")
	}
	if err := loopbackAddr(*listen); err != nil {
		return usageErr("--listen: %v", err)
	}

	r := &registration{
		out: &lockedWriter{w: s.out}, org: *org, web: web, api: apiBase,
		file: *out, k8sSecret: *k8sSecret, force: *force,
		client: &http.Client{Timeout: 30 * time.Second},
		result: make(chan error, 1),
	}
	// Everything that can fail before GitHub creates the App fails now.
	if err := checkWritable(r.file, r.force); err != nil {
		fmt.Fprintf(s.err, "ralph-gate register: %v\n", err)
		return exitError
	}
	manifest, err := loadManifest(*manifestFile, *name, *webhookURL)
	if err != nil {
		fmt.Fprintf(s.err, "ralph-gate register: %v\n", err)
		return exitError
	}
	if r.state, err = randomHex(32); err != nil {
		fmt.Fprintf(s.err, "ralph-gate register: %v\n", err)
		return exitError
	}
	// The board health pages' session key is ours, not GitHub's: drawn here so the file holds
	// everything serve reads with ui.enabled.
	if r.sessionKey, err = randomHex(config.MinSessionKeyBytes); err != nil {
		fmt.Fprintf(s.err, "ralph-gate register: %v\n", err)
		return exitError
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(s.err, "ralph-gate register: listen: %v\n", err)
		return exitError
	}
	r.addr = ln.Addr().String()
	base := "http://" + r.addr
	manifest["redirect_url"] = base + "/callback"
	if r.manifest, err = json.Marshal(manifest); err != nil {
		ln.Close()
		fmt.Fprintf(s.err, "ralph-gate register: manifest: %v\n", err)
		return exitError
	}
	r.appName, _ = manifest["name"].(string)
	r.hookURL = hookURLOf(manifest)
	r.ctx = ctx

	srv := &http.Server{Handler: r.handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer func() {
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()

	r.say("register: manifest %s: App %q for %s, webhooks to %s", *manifestFile, r.appName, r.org, r.hookURL)
	r.say("register: listening on %s", base)
	r.say("")
	r.say("Open %s/ in a browser signed in to %s as an owner of %s and press", base, web.Host, r.org)
	r.say("\"Create the App on GitHub\". GitHub asks you to confirm the App's name, creates it and")
	r.say("sends the browser back here; the App's credentials are then written to %s.", r.file)
	r.say("Waiting up to %s (Ctrl-C stops).", *timeout)
	r.say("")

	wait := time.NewTimer(*timeout)
	defer wait.Stop()
	select {
	case err = <-r.result:
	case <-ctx.Done():
		err = errors.New("interrupted before GitHub sent the browser back; nothing was written")
	case <-wait.C:
		err = fmt.Errorf("GitHub did not send the browser back within %s; nothing was written. Run register again", *timeout)
	}
	if err != nil {
		fmt.Fprintf(s.err, "ralph-gate register: %v\n", err)
		return exitError
	}
	r.nextSteps()
	return exitOK
}

// registration is one run of the manifest flow.
type registration struct {
	ctx       context.Context
	out       *lockedWriter
	org       string
	web, api  *url.URL
	file      string
	k8sSecret string
	force     bool
	client    *http.Client

	addr       string // the listening host:port
	state      string
	sessionKey string // RALPH_GATE_SESSION_KEY, hex
	manifest   []byte // JSON, with redirect_url
	appName    string
	hookURL    string

	mu       sync.Mutex
	opened   bool
	claimed  bool        // a callback with the right state is being (or was) handled
	created  *appCreated // the App, once converted
	result   chan error  // the outcome, sent once
	finished sync.Once
}

// appCreated is the answer of POST /app-manifests/{code}/conversions (the fields used).
type appCreated struct {
	ID            int64   `json:"id"`
	Slug          string  `json:"slug"`
	Name          string  `json:"name"`
	HTMLURL       string  `json:"html_url"`
	ClientID      string  `json:"client_id"`
	ClientSecret  string  `json:"client_secret"`
	WebhookSecret *string `json:"webhook_secret"`
	PEM           string  `json:"pem"`
	Owner         struct {
		Login string `json:"login"`
	} `json:"owner"`
}

// usableWebhookSecret reports whether GitHub handed out a webhook secret serve accepts
// (config.MinWebhookSecretLength characters or more). GitHub generates one for an App created
// from a manifest (40 hexadecimal characters in GitHub's documented answer), but the answer's
// schema allows none (null), and an answer that is not GitHub's (ghsim returns its seed's
// secret, whatever its length) may be shorter: register never writes a secret serve would
// refuse, and says what to do instead.
func (a *appCreated) usableWebhookSecret() bool {
	return a.WebhookSecret != nil && utf8.RuneCountInString(strings.TrimSpace(*a.WebhookSecret)) >= config.MinWebhookSecretLength
}

// webhookSecretProblem says why the file holds no webhook secret (never the secret, nor its
// length).
func (a *appCreated) webhookSecretProblem() string {
	if a.WebhookSecret == nil || strings.TrimSpace(*a.WebhookSecret) == "" {
		return "GitHub returned no webhook secret"
	}
	return fmt.Sprintf("GitHub returned a webhook secret shorter than the %d characters serve accepts, so it was not written", config.MinWebhookSecretLength)
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (r *registration) say(format string, a ...any) {
	r.out.mu.Lock()
	defer r.out.mu.Unlock()
	fmt.Fprintf(r.out.w, format+"\n", a...)
}

func (r *registration) finish(err error) {
	r.finished.Do(func() { r.result <- err })
}

func (r *registration) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", r.index)
	mux.HandleFunc("GET /callback", r.callback)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		// Only this address: a page elsewhere cannot reach the form through DNS rebinding.
		_, port, _ := net.SplitHostPort(r.addr)
		if req.Host != r.addr && req.Host != "localhost:"+port {
			http.Error(w, "wrong host", http.StatusMisdirectedRequest)
			return
		}
		h := w.Header()
		h.Set("Cache-Control", "no-store")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
		mux.ServeHTTP(w, req)
	})
}

var pageTemplate = template.Must(template.New("page").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>ralph-gate register</title>
<style>body{font-family:sans-serif;max-width:44em;margin:2em auto;line-height:1.4}pre{background:#f4f4f4;padding:1em;overflow:auto}</style>
</head><body>
<h1>{{.Title}}</h1>
{{range .Paragraphs}}<p>{{.}}</p>
{{end}}{{if .Action}}<form action="{{.Action}}" method="post">
<input type="hidden" name="manifest" value="{{.Manifest}}">
<button type="submit">Create the App on GitHub</button>
</form>
<details><summary>The manifest</summary><pre>{{.Pretty}}</pre></details>
{{end}}{{if .Link}}<p><a href="{{.Link}}">{{.LinkText}}</a></p>
{{end}}</body></html>
`))

type page struct {
	Title            string
	Paragraphs       []string
	Action, Manifest string
	Pretty           string
	Link, LinkText   string
}

func writePage(w http.ResponseWriter, status int, p page) {
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, p); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// newAppURL is where the form goes: GitHub's "register a GitHub App" page for the organization.
func (r *registration) newAppURL() string {
	u := *r.web
	u.Path = strings.TrimRight(u.Path, "/") + "/organizations/" + r.org + "/settings/apps/new"
	u.RawQuery = url.Values{"state": {r.state}}.Encode()
	return u.String()
}

func (r *registration) index(w http.ResponseWriter, _ *http.Request) {
	r.mu.Lock()
	first := !r.opened
	r.opened = true
	r.mu.Unlock()
	if first {
		r.say("register: page opened; waiting for GitHub to send the browser back")
	}
	var pretty bytes.Buffer
	_ = json.Indent(&pretty, r.manifest, "", "  ")
	writePage(w, http.StatusOK, page{
		Title: "Register " + r.appName + " on " + r.org,
		Paragraphs: []string{
			"This registers a GitHub App owned by the organization " + r.org + " on " + r.web.Host +
				", with the permissions, events and webhook URL below. You must be signed in to " + r.web.Host + " as an owner of " + r.org + ".",
			"GitHub asks you to confirm the App's name (App names are unique on GitHub), creates the App and sends you back here; " +
				"ralph-gate register then saves the App's ID, private key and webhook secret to " + r.file + ".",
		},
		Action: r.newAppURL(), Manifest: string(r.manifest), Pretty: pretty.String(),
	})
}

func (r *registration) callback(w http.ResponseWriter, req *http.Request) {
	q := req.URL.Query()
	if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(r.state)) != 1 {
		r.say("register: refused a callback whose state does not match this run's (a page from another run, or not from GitHub); still waiting")
		writePage(w, http.StatusBadRequest, page{
			Title: "Refused: wrong state",
			Paragraphs: []string{
				"This address was not reached from the page this run of ralph-gate register served (its state does not match), so its code was not exchanged.",
				"If you just created an App from an older page, that App has no saved credentials: delete it in the organization's settings (Developer settings → GitHub Apps), then press the button on this run's page.",
			},
			Link: "http://" + r.addr + "/", LinkText: "Back to this run's page",
		})
		return
	}
	code := q.Get("code")
	if !manifestCode.MatchString(code) {
		r.say("register: refused a callback without a valid code; still waiting")
		writePage(w, http.StatusBadRequest, page{Title: "Refused: no code",
			Paragraphs: []string{"GitHub sends the browser here with a code once the App is created; this request had none."},
			Link:       "http://" + r.addr + "/", LinkText: "Back to the registration page"})
		return
	}
	r.mu.Lock()
	claimed := r.claimed
	r.claimed = true
	r.mu.Unlock()
	if claimed {
		writePage(w, http.StatusConflict, page{Title: "Already handled",
			Paragraphs: []string{"This run has already received GitHub's code; see the terminal."}})
		return
	}

	r.say("register: GitHub sent the browser back with a code; exchanging it for the App's credentials")
	app, err := r.convert(code)
	if err != nil {
		r.say("register: the exchange failed")
		writePage(w, http.StatusBadGateway, page{Title: "Could not get the App's credentials", Paragraphs: []string{err.Error()}})
		r.finish(err)
		return
	}
	r.mu.Lock()
	r.created = app
	r.mu.Unlock()
	r.say("register: GitHub created the App %s (App ID %d) owned by %s", app.Slug, app.ID, app.Owner.Login)

	if err := writeSecretFile(r.file, r.render(app), r.force); err != nil {
		err = fmt.Errorf("the App %s (App ID %d) was created, but its credentials could not be saved: %v. "+
			"GitHub does not hand them out again: on %s generate a private key and set a new webhook secret by hand (docs/INSTALL.md, \"By hand\"), or delete the App and run register again",
			app.Slug, app.ID, err, r.settingsURL(app))
		writePage(w, http.StatusInternalServerError, page{Title: "Could not save the credentials", Paragraphs: []string{err.Error()}})
		r.finish(err)
		return
	}
	abs, _ := filepath.Abs(r.file)
	if app.usableWebhookSecret() {
		r.say("register: wrote the App ID, private key, webhook secret, OAuth client ID/secret and a session key to %s (mode 0600)", abs)
	} else {
		r.say("register: wrote the App ID, private key, OAuth client ID/secret and a session key to %s (mode 0600); %s", abs, app.webhookSecretProblem())
	}
	writePage(w, http.StatusOK, page{
		Title: "Registered " + app.Slug,
		Paragraphs: []string{
			fmt.Sprintf("GitHub created the App %s (App ID %d); its credentials are saved in %s. You can close this tab: the terminal shows the next steps.", app.Slug, app.ID, r.file),
			"Next: install the App on " + r.org + ".",
		},
		Link: r.installURL(app), LinkText: "Install " + app.Slug + " on " + r.org,
	})
	r.finish(nil)
}

// convert exchanges the code: POST /app-manifests/{code}/conversions, no authentication.
// Errors never show the code, which is as good as the private key until it is exchanged.
func (r *registration) convert(code string) (*appCreated, error) {
	endpoint := strings.TrimRight(r.api.String(), "/") + "/app-manifests/" + code + "/conversions"
	shown := strings.TrimRight(r.api.String(), "/") + "/app-manifests/…/conversions"
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		if attempt > 0 {
			select {
			case <-time.After(time.Duration(attempt) * time.Second):
			case <-r.ctx.Done():
				return nil, fmt.Errorf("POST %s: interrupted", shown)
			}
		}
		ctx, cancel := context.WithTimeout(r.ctx, 30*time.Second)
		app, retry, err := r.convertOnce(ctx, endpoint, shown)
		cancel()
		if err == nil {
			return app, nil
		}
		lastErr = err
		if !retry {
			break
		}
	}
	return nil, lastErr
}

func (r *registration) convertOnce(ctx context.Context, endpoint, shown string) (*appCreated, bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, nil)
	if err != nil {
		return nil, false, fmt.Errorf("POST %s: %v", shown, err)
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	req.Header.Set("User-Agent", "ralph-gate-register/"+version)
	resp, err := r.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, true, fmt.Errorf("POST %s: %v", shown, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, true, fmt.Errorf("POST %s: reading the answer: %v", shown, err)
	}
	if resp.StatusCode != http.StatusCreated {
		return nil, resp.StatusCode >= 500, conversionError(shown, resp.StatusCode, body)
	}
	var app appCreated
	if err := json.Unmarshal(body, &app); err != nil {
		return nil, false, fmt.Errorf("POST %s: GitHub's answer is not the App: %v", shown, err)
	}
	if app.ID <= 0 || app.Slug == "" || !strings.Contains(app.PEM, "PRIVATE KEY") {
		return nil, false, fmt.Errorf("POST %s: GitHub's answer lacks the App's id, slug or private key", shown)
	}
	return &app, false, nil
}

// conversionError explains a refused exchange with GitHub's own message.
func conversionError(shown string, status int, body []byte) error {
	var e struct {
		Message string            `json:"message"`
		Errors  []json.RawMessage `json:"errors"`
	}
	msg := ""
	if json.Unmarshal(body, &e) == nil && e.Message != "" {
		msg = e.Message
		for _, raw := range e.Errors {
			var s string
			if json.Unmarshal(raw, &s) != nil {
				var obj struct {
					Message, Field, Code string
				}
				_ = json.Unmarshal(raw, &obj)
				s = strings.TrimSpace(strings.Join([]string{obj.Field, obj.Code, obj.Message}, " "))
			}
			if s != "" {
				msg += "; " + s
			}
		}
	} else {
		msg = strings.TrimSpace(string(body))
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
	}
	hint := ""
	switch status {
	case http.StatusNotFound:
		hint = ": the code is unknown, was already exchanged, or is older than an hour. The App may exist without saved credentials: delete it in the organization's settings (Developer settings → GitHub Apps) and run register again"
	case http.StatusUnprocessableEntity:
		hint = ": GitHub refused the manifest; fix it and run register again"
	}
	return fmt.Errorf("GitHub refused to exchange the code (POST %s: HTTP %d, %q)%s", shown, status, msg, hint)
}

func (r *registration) installURL(app *appCreated) string {
	if app.HTMLURL != "" {
		return strings.TrimRight(app.HTMLURL, "/") + "/installations/new"
	}
	return strings.TrimRight(r.web.String(), "/") + "/apps/" + app.Slug + "/installations/new"
}

func (r *registration) settingsURL(app *appCreated) string {
	return strings.TrimRight(r.web.String(), "/") + "/organizations/" + r.org + "/settings/apps/" + app.Slug
}

// render is the credentials file: shell variables serve reads, or a Kubernetes Secret.
func (r *registration) render(app *appCreated) []byte {
	var b bytes.Buffer
	origin := fmt.Sprintf("GitHub App %q (slug %s, App ID %d) of %s, registered with `ralph-gate register` on %s.",
		app.Name, app.Slug, app.ID, r.org, time.Now().UTC().Format("2006-01-02"))
	if r.k8sSecret != "" {
		fmt.Fprintf(&b, "# %s\n", origin)
		b.WriteString("# The Secret the Helm chart reads (github.existingSecret, default github.existingSecretKeys).\n")
		b.WriteString("# It holds the App's private key: apply it (kubectl -n NAMESPACE apply -f FILE), then delete\n")
		b.WriteString("# this file or keep it only in your secret manager. Never commit it.\n")
		fmt.Fprintf(&b, "# The App's Client ID, not a secret, goes in the chart's ui.oauthClientId: %s\n", app.ClientID)
		data := map[string]string{
			secretKeyAppID:             strconv.FormatInt(app.ID, 10),
			secretKeyPrivateKey:        app.PEM,
			secretKeyOAuthClientSecret: app.ClientSecret,
			secretKeySessionKey:        r.sessionKey,
		}
		if app.usableWebhookSecret() {
			data[secretKeyWebhookSecret] = *app.WebhookSecret
		} else {
			fmt.Fprintf(&b, "# %s: %s. Generate one (openssl rand -hex 32), set it as the App's webhook secret\n", secretKeyWebhookSecret, app.webhookSecretProblem())
			fmt.Fprintf(&b, "# on %s and add it below as stringData.%s before applying this file.\n", r.settingsURL(app), secretKeyWebhookSecret)
		}
		doc := k8sSecretDoc{APIVersion: "v1", Kind: "Secret", Type: "Opaque", StringData: data}
		doc.Metadata.Name = r.k8sSecret
		enc := yaml.NewEncoder(&b)
		enc.SetIndent(2)
		_ = enc.Encode(doc)
		_ = enc.Close()
		return b.Bytes()
	}
	fmt.Fprintf(&b, "# %s\n", origin)
	b.WriteString("# It holds the App's private key and secrets: never commit it; delete it once they are in your\n")
	b.WriteString("# secret manager. Load it into a POSIX shell before `ralph-gate serve` or `doctor`:\n")
	b.WriteString("#   set -a; . " + sourcePath(r.file) + "; set +a\n")
	b.WriteString("# serve reads them all but the slug, kept for reference; the OAuth client and the session key\n")
	b.WriteString("# sign people in to the board health pages (ui.enabled).\n")
	fmt.Fprintf(&b, "%s=%d\n", config.EnvIntegrationID, app.ID)
	if app.usableWebhookSecret() {
		fmt.Fprintf(&b, "%s=%s\n", config.EnvWebhookSecret, shellQuote(*app.WebhookSecret))
	} else {
		fmt.Fprintf(&b, "# %s: %s. Generate one (openssl rand -hex 32), set it as the App's\n", config.EnvWebhookSecret, app.webhookSecretProblem())
		fmt.Fprintf(&b, "# webhook secret on %s and add it here: %s='…'\n", r.settingsURL(app), config.EnvWebhookSecret)
	}
	fmt.Fprintf(&b, "%s=%s\n", config.EnvPrivateKey, shellQuote(app.PEM))
	fmt.Fprintf(&b, "%s=%s\n", config.EnvOAuthClientID, shellQuote(app.ClientID))
	fmt.Fprintf(&b, "%s=%s\n", config.EnvOAuthClientSecret, shellQuote(app.ClientSecret))
	fmt.Fprintf(&b, "%s=%s\n", config.EnvSessionKey, shellQuote(r.sessionKey))
	fmt.Fprintf(&b, "GITHUB_APP_SLUG=%s\n", shellQuote(app.Slug))
	return b.Bytes()
}

type k8sSecretDoc struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Type string `yaml:"type"`
	// StringData is keyed by the secretKey constants.
	StringData map[string]string `yaml:"stringData"`
}

// sourcePath is file as the shell's "." command finds it (a bare name is looked up in PATH).
func sourcePath(file string) string {
	if !strings.ContainsRune(file, '/') {
		file = "./" + file
	}
	if shellSafe.MatchString(file) {
		return file
	}
	return shellQuote(file)
}

// shellQuote single-quotes s for a POSIX shell (newlines included).
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// nextSteps prints what to do once the credentials are saved; never a secret.
func (r *registration) nextSteps() {
	r.mu.Lock()
	app := r.created
	r.mu.Unlock()
	if app == nil {
		return
	}
	r.say("")
	r.say("Done. Next steps (docs/INSTALL.md):")
	if !app.usableWebhookSecret() {
		// Before anything that loads the file: serve and doctor refuse it without a secret.
		where := fmt.Sprintf("add it to %s as %s", r.file, config.EnvWebhookSecret)
		if r.k8sSecret != "" {
			where = fmt.Sprintf("add it to %s as stringData.%s", r.file, secretKeyWebhookSecret)
		}
		r.say("  First: %s, and serve and doctor refuse the file without one.", app.webhookSecretProblem())
		r.say("     Generate a secret (openssl rand -hex 32), set it as the webhook secret on")
		r.say("     %s, and %s.", r.settingsURL(app), where)
	}
	r.say("  1. Install the App on %s (All repositories, or every repository whose issues are on the", r.org)
	r.say("     enforced boards):  %s", r.installURL(app))
	if r.k8sSecret != "" {
		r.say("  2. Create the Secret, then delete %s (or keep it only in your secret manager):", r.file)
		r.say("       kubectl -n NAMESPACE apply -f %s", r.file)
		r.say("  3. Deploy with `github: {existingSecret: %s}` in values.yaml:", r.k8sSecret)
		r.say("       helm upgrade --install ralph-gate charts/ralph-gate -n NAMESPACE -f values.yaml")
		r.say("  4. Check: kubectl -n NAMESPACE exec deploy/ralph-gate -- /ralph-gate doctor --config /etc/ralph-gate/config.yml")
	} else {
		r.say("  2. Check it from here (config.yml lists the projects to enforce):")
		r.say("       set -a; . %s; set +a", sourcePath(r.file))
		r.say("       ralph-gate doctor --config config.yml")
		r.say("  3. Deploy: put %s, %s, %s, %s and %s in the Secret the chart reads", config.EnvIntegrationID, config.EnvWebhookSecret, config.EnvPrivateKey,
			config.EnvOAuthClientSecret, config.EnvSessionKey)
		r.say("     (keys %s, %s, %s, %s, %s; `ralph-gate register --k8s-secret NAME` writes one), then",
			secretKeyAppID, secretKeyWebhookSecret, secretKeyPrivateKey, secretKeyOAuthClientSecret, secretKeySessionKey)
		r.say("       helm upgrade --install ralph-gate charts/ralph-gate -n NAMESPACE -f values.yaml")
	}
	r.say("  GitHub sends webhooks to %s: ralph-gate must be reachable there.", r.hookURL)
	r.say("  Optional, the board health pages at /ui/ (docs/INSTALL.md, step 7): the file holds their OAuth client")
	r.say("  secret and session key; the App's Client ID is %s (ui.oauthClientId), and the App then needs", app.ClientID)
	r.say("  the Callback URL %s and the Members organization permission (read).", callbackGuess(r.hookURL))
	if !strings.EqualFold(r.web.Host, "github.com") {
		api := strings.TrimRight(r.api.String(), "/")
		r.say("  This is not github.com: the configuration needs github.web_url: %s,", strings.TrimRight(r.web.String(), "/"))
		r.say("  github.v3_api_url: %s/ and github.v4_api_url: %s.", api, graphQLURL(r.web, r.api))
	}
}

// callbackGuess is the pages' callback URL on the webhook's host, where the chart serves both.
func callbackGuess(hookURL string) string {
	u, err := url.Parse(hookURL)
	if err != nil || u.Host == "" {
		return "{server.public_url}" + config.CallbackPath
	}
	return u.Scheme + "://" + u.Host + config.CallbackPath
}

func graphQLURL(web, api *url.URL) string {
	if strings.EqualFold(web.Host, "github.com") {
		return "https://api.github.com/graphql"
	}
	u := *web
	u.Path = strings.TrimRight(u.Path, "/") + "/api/graphql"
	return u.String()
}

// loadManifest reads the manifest (YAML, as app.yml) and applies --name and --webhook-url.
func loadManifest(file, name, webhookURL string) (map[string]any, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("read the manifest: %v (run register from a ralph-gate checkout, or pass --manifest PATH/app.yml)", err)
		}
		return nil, fmt.Errorf("read the manifest: %v", err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("manifest %s: %v", file, err)
	}
	if m == nil {
		return nil, fmt.Errorf("manifest %s is empty", file)
	}
	if name != "" {
		m["name"] = name
	}
	if n, _ := m["name"].(string); strings.TrimSpace(n) == "" {
		return nil, fmt.Errorf("manifest %s: name is missing (or pass --name)", file)
	}
	if u, _ := m["url"].(string); !isHTTPURL(u) {
		return nil, fmt.Errorf("manifest %s: url (the App's homepage) must be an http(s) URL", file)
	}
	hook, _ := m["hook_attributes"].(map[string]any)
	if hook == nil {
		hook = map[string]any{}
		m["hook_attributes"] = hook
	}
	if webhookURL != "" {
		hook["url"] = webhookURL
	}
	u, _ := hook["url"].(string)
	if !isHTTPURL(u) {
		return nil, fmt.Errorf("manifest %s: hook_attributes.url must be the webhook URL, https://YOUR-HOST/api/github/hook (or pass --webhook-url)", file)
	}
	if pu, _ := url.Parse(u); pu.Hostname() == "example.com" || strings.HasSuffix(pu.Hostname(), ".example.com") {
		return nil, fmt.Errorf("the webhook URL %s is app.yml's example: pass --webhook-url https://YOUR-HOST/api/github/hook (the public host that reaches ralph-gate), or edit hook_attributes.url", u)
	}
	return m, nil
}

func hookURLOf(m map[string]any) string {
	hook, _ := m["hook_attributes"].(map[string]any)
	u, _ := hook["url"].(string)
	return u
}

func isHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

func parseBaseURL(s string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("must be an http(s) URL without query, got %q", s)
	}
	return u, nil
}

// defaultAPIURL is the REST API of a GitHub web address: api.github.com for github.com, the
// /api/v3/ path on GitHub Enterprise Server.
func defaultAPIURL(web *url.URL) string {
	if strings.EqualFold(web.Host, "github.com") {
		return "https://api.github.com/"
	}
	return strings.TrimRight(web.String(), "/") + "/api/v3/"
}

func loopbackAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("the page must listen on a loopback address (127.0.0.1 or ::1), got %q", addr)
	}
	return nil
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random state: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// checkWritable refuses an existing file (unless force) and a directory that cannot take the
// file, before anything is created on GitHub: GitHub hands the credentials out only once.
func checkWritable(file string, force bool) error {
	st, err := os.Lstat(file)
	switch {
	case err == nil && st.IsDir():
		return fmt.Errorf("--out %s is a directory", file)
	case err == nil && !force:
		return fmt.Errorf("%s exists; refusing to overwrite it (it may hold another App's credentials): pass --force, or choose another --out", file)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("--out %s: %v", file, err)
	}
	probe, err := os.CreateTemp(filepath.Dir(file), ".ralph-gate-register-*")
	if err != nil {
		return fmt.Errorf("cannot write beside %s: %v", file, err)
	}
	probe.Close()
	return os.Remove(probe.Name())
}

// writeSecretFile writes data with mode 0600: a new file only, unless force, which replaces
// the file atomically.
func writeSecretFile(file string, data []byte, force bool) error {
	if !force {
		f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		if err := finishFile(f, data); err != nil {
			os.Remove(file)
			return err
		}
		return nil
	}
	f, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".tmp-*")
	if err != nil {
		return err
	}
	if err := finishFile(f, data); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), file); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}

func finishFile(f *os.File, data []byte) error {
	err := f.Chmod(0o600)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
