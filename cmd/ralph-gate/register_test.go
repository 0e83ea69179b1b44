package main

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/ghsim"
	"github.com/ralph-gate/ralph-gate/sandbox"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// registerSim is ghsim with the demo seed, its App key in a temporary directory.
type registerSim struct {
	*ghsim.Server
	url  string
	seed ghsim.Seed
}

func startRegisterSim(t *testing.T) *registerSim {
	t.Helper()
	return startRegisterSimWith(t, nil)
}

// startRegisterSimWith is startRegisterSim with the seed changed by adjust first.
func startRegisterSimWith(t *testing.T, adjust func(*ghsim.Seed)) *registerSim {
	t.Helper()
	seed, err := ghsim.ParseSeed(sandbox.DemoSeed())
	if err != nil {
		t.Fatal(err)
	}
	if adjust != nil {
		adjust(&seed)
	}
	seed.App.PrivateKeyFile = filepath.Join(t.TempDir(), "app.pem")
	// Webhooks, should anything send one, stay on this machine.
	sim, err := ghsim.New(seed, ghsim.Options{WebhookURL: "http://127.0.0.1:9/api/github/hook"})
	if err != nil {
		t.Fatal(err)
	}
	u, err := sim.Start(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close() })
	return &registerSim{Server: sim, url: u, seed: seed}
}

func (s *registerSim) conversions() int {
	return s.Requests().Counts["rest:POST /app-manifests/{code}/conversions"]
}

// registerRun is `ralph-gate register` running in the background.
type registerRun struct {
	out, err syncBuffer
	done     chan int
	base     string // the page's URL
}

var listeningLine = regexp.MustCompile(`register: listening on (http://127\.0\.0\.1:\d+)\n`)

func startRegister(t *testing.T, args ...string) *registerRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &registerRun{done: make(chan int, 1)}
	go func() {
		r.done <- run(ctx, append([]string{"register"}, args...), streams{in: strings.NewReader(""), out: &r.out, err: &r.err})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(10 * time.Second):
			t.Error("register did not stop")
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if m := listeningLine.FindStringSubmatch(r.out.String()); m != nil {
			r.base = m[1]
			return r
		}
		select {
		case code := <-r.done:
			t.Fatalf("register exited %d before listening\nstdout: %s\nstderr: %s", code, r.out.String(), r.err.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("register printed no listening address: %s", r.out.String())
	return nil
}

func (r *registerRun) wait(t *testing.T) int {
	t.Helper()
	select {
	case code := <-r.done:
		r.done <- code // for the cleanup
		return code
	case <-time.After(30 * time.Second):
		t.Fatalf("register did not finish\nstdout: %s\nstderr: %s", r.out.String(), r.err.String())
		return -1
	}
}

var (
	formAction    = regexp.MustCompile(`<form action="([^"]*)" method="post">`)
	formManifest  = regexp.MustCompile(`<input type="hidden" name="manifest" value="([^"]*)">`)
	stateInAction = regexp.MustCompile(`\?state=([0-9a-f]{64})$`)
)

// form GETs the page and returns the form's action and manifest, as a browser would see them.
func (r *registerRun) form(t *testing.T) (action, manifest string) {
	t.Helper()
	res, err := http.Get(r.base + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	a, m := formAction.FindSubmatch(body), formManifest.FindSubmatch(body)
	if res.StatusCode != http.StatusOK || a == nil || m == nil {
		t.Fatalf("page: %d %s", res.StatusCode, body)
	}
	return html.UnescapeString(string(a[1])), html.UnescapeString(string(m[1]))
}

// submit POSTs the form to GitHub (ghsim); follow=false stops at GitHub's redirect.
func submit(t *testing.T, action, manifest string, follow bool) (*http.Response, string) {
	t.Helper()
	c := &http.Client{Timeout: 30 * time.Second}
	if !follow {
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	}
	res, err := c.PostForm(action, url.Values{"manifest": {manifest}})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res, string(body)
}

func get(t *testing.T, u string) (int, string) {
	t.Helper()
	res, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body)
}

func assertNoSecrets(t *testing.T, printed string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if s != "" && strings.Contains(printed, s) {
			t.Errorf("a secret was printed (%.12s…):\n%s", s, printed)
		}
	}
	if strings.Contains(printed, "PRIVATE KEY") {
		t.Errorf("a private key was printed:\n%s", printed)
	}
}

func pemBody(pem []byte) string {
	lines := strings.Split(strings.TrimSpace(string(pem)), "\n")
	return strings.Join(lines[1:len(lines)-1], "\n")
}

func fileMode(t *testing.T, file string) os.FileMode {
	t.Helper()
	st, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

// loadEnvFile sources the env file in sh, as the next steps say, and returns the variables.
func loadEnvFile(t *testing.T, file string, names ...string) map[string]string {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh to source the env file")
	}
	vars := map[string]string{}
	for _, name := range names {
		out, err := exec.Command(sh, "-c", `set -a; . "$1"; set +a; printf %s "$`+name+`"`, "sh", file).Output()
		if err != nil {
			t.Fatalf("sourcing %s: %v", file, err)
		}
		vars[name] = string(out)
	}
	return vars
}

const testWebhookURL = "https://ralph-gate.test/api/github/hook"

// The whole flow against ghsim over HTTP: the page's form, GitHub's redirect to the local
// callback (a wrong state refused first), the exchange, the 0600 env file serve reads, and
// nothing secret printed; then doctor authenticates as the App with the file's variables.
func TestRegisterEndToEnd(t *testing.T) {
	sim := startRegisterSim(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "app.env")
	r := startRegister(t, "--org", "acme", "--github-url", sim.url, "--manifest", filepath.Join("..", "..", "app.yml"),
		"--webhook-url", testWebhookURL, "--out", out, "--timeout", "1m")

	action, manifestText := r.form(t)
	var manifest struct {
		Name           string            `json:"name"`
		RedirectURL    string            `json:"redirect_url"`
		HookAttributes map[string]any    `json:"hook_attributes"`
		Permissions    map[string]string `json:"default_permissions"`
		Events         []string          `json:"default_events"`
		Public         bool              `json:"public"`
	}
	if err := json.Unmarshal([]byte(manifestText), &manifest); err != nil {
		t.Fatalf("manifest %q: %v", manifestText, err)
	}
	if manifest.Name != "ralph-gate" || manifest.RedirectURL != r.base+"/callback" || manifest.HookAttributes["url"] != testWebhookURL ||
		manifest.HookAttributes["active"] != true || manifest.Public || !maps.Equal(manifest.Permissions, ManifestPermissions()) ||
		!slices.Equal(manifest.Events, RequiredEvents) {
		t.Errorf("manifest: %+v", manifest)
	}
	m := stateInAction.FindStringSubmatch(action)
	if m == nil || !strings.HasPrefix(action, sim.url+"/organizations/acme/settings/apps/new?state=") {
		t.Fatalf("form action %q", action)
	}

	// A callback with another state is refused and its code not exchanged.
	wrong := strings.Replace(action, m[1], strings.Repeat("0", 64), 1)
	res, _ := submit(t, wrong, manifestText, false)
	if res.StatusCode != http.StatusFound {
		t.Fatalf("ghsim form: %d", res.StatusCode)
	}
	foreignCode := func() string { u, _ := url.Parse(res.Header.Get("Location")); return u.Query().Get("code") }()
	if status, body := get(t, res.Header.Get("Location")); status != http.StatusBadRequest || !strings.Contains(body, "wrong state") {
		t.Errorf("wrong state: %d %s", status, body)
	}
	if status, _ := get(t, r.base+"/callback?code=abc"); status != http.StatusBadRequest {
		t.Errorf("no state: %d", status)
	}
	if n := sim.conversions(); n != 0 {
		t.Fatalf("%d conversions after refused callbacks", n)
	}
	if !strings.Contains(r.out.String(), "refused a callback whose state does not match") {
		t.Errorf("no progress line for the refusal:\n%s", r.out.String())
	}

	// The real submission: GitHub redirects the browser to the callback, which exchanges the code.
	res, body := submit(t, action, manifestText, true)
	if res.StatusCode != http.StatusOK || !strings.Contains(body, "Registered ralph-gate") || !strings.Contains(body, sim.url+"/apps/ralph-gate/installations/new") {
		t.Fatalf("callback page: %d %s", res.StatusCode, body)
	}
	if code := r.wait(t); code != exitOK {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, r.out.String(), r.err.String())
	}
	if n := sim.conversions(); n != 1 {
		t.Errorf("%d conversions, want 1", n)
	}

	if mode := fileMode(t, out); mode != 0o600 {
		t.Errorf("%s has mode %v, want 0600", out, mode)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	vars := loadEnvFile(t, out, "GITHUB_APP_INTEGRATION_ID", "GITHUB_APP_WEBHOOK_SECRET", "GITHUB_APP_PRIVATE_KEY",
		"GITHUB_APP_SLUG", "GITHUB_OAUTH_CLIENT_ID", "GITHUB_OAUTH_CLIENT_SECRET", "RALPH_GATE_SESSION_KEY")
	if vars["GITHUB_APP_INTEGRATION_ID"] != "1001" || vars["GITHUB_APP_WEBHOOK_SECRET"] != sim.seed.App.WebhookSecret ||
		vars["GITHUB_APP_PRIVATE_KEY"] != string(sim.PrivateKeyPEM()) || vars["GITHUB_APP_SLUG"] != "ralph-gate" ||
		!strings.HasPrefix(vars["GITHUB_OAUTH_CLIENT_ID"], "Iv1.") || len(vars["GITHUB_OAUTH_CLIENT_SECRET"]) != 40 ||
		len(vars["RALPH_GATE_SESSION_KEY"]) != 2*config.MinSessionKeyBytes {
		t.Errorf("env file:\n%s", data)
	}

	printed := r.out.String() + r.err.String()
	assertNoSecrets(t, printed, vars["GITHUB_APP_WEBHOOK_SECRET"], vars["GITHUB_OAUTH_CLIENT_SECRET"], vars["RALPH_GATE_SESSION_KEY"],
		pemBody(sim.PrivateKeyPEM()), foreignCode)
	for _, want := range []string{
		"register: manifest", "register: page opened", "register: GitHub sent the browser back with a code",
		"register: GitHub created the App ralph-gate (App ID 1001)", "register: wrote", out, "(mode 0600)",
		sim.url + "/apps/ralph-gate/installations/new", "set -a; . " + out + "; set +a", "helm upgrade --install",
		"github.v3_api_url: " + sim.url + "/api/v3/",
		"the App's Client ID is " + vars["GITHUB_OAUTH_CLIENT_ID"], "https://ralph-gate.test/ui/oauth/callback",
	} {
		if !strings.Contains(r.out.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.out.String())
		}
	}

	// serve's variables, as loaded from the file, authenticate as the App ghsim created.
	for k, v := range vars {
		t.Setenv(k, v)
	}
	cfg, _ := yaml.Marshal(map[string]any{
		"github":   map[string]any{"web_url": sim.url, "v3_api_url": sim.url + "/api/v3/", "v4_api_url": sim.url + "/api/graphql"},
		"projects": []map[string]any{{"owner": "acme", "number": 1}},
	})
	cfgFile := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cfgFile, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	_, doctorOut, doctorErr := runCLI(t, "", "doctor", "--config", cfgFile)
	if !strings.Contains(doctorOut, "ok    app: authenticated as ralph-gate (App ID 1001)") {
		t.Errorf("doctor with the registered credentials:\n%s%s", doctorOut, doctorErr)
	}
	// With the board health pages on, the file's variables are all serve asks for besides
	// the public address.
	editConfig(t, cfgFile, func(c map[string]any) {
		c["ui"] = map[string]any{"enabled": true}
		c["server"] = map[string]any{"public_url": "https://ralph-gate.test"}
	})
	loaded, problems, err := config.Preflight(cfgFile, config.ForServe, os.LookupEnv)
	if err != nil || len(problems) > 0 {
		t.Errorf("serve with ui.enabled and the registered variables: %v %v", err, problems)
	}
	if loaded.GitHub.OAuth.ClientID != vars["GITHUB_OAUTH_CLIENT_ID"] || loaded.GitHub.OAuth.ClientSecret != vars["GITHUB_OAUTH_CLIENT_SECRET"] ||
		loaded.UI.SessionKey != vars["RALPH_GATE_SESSION_KEY"] {
		t.Error("serve did not load the OAuth client and the session key register wrote")
	}

	// A second run refuses the existing file before anything is created.
	code, stdout, stderr := runCLI(t, "", "register", "--org", "acme", "--github-url", sim.url, "--manifest", filepath.Join("..", "..", "app.yml"),
		"--webhook-url", testWebhookURL, "--out", out)
	if code != exitError || !strings.Contains(stderr, "exists; refusing to overwrite") || strings.Contains(stdout, "listening") {
		t.Errorf("existing --out: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
}

// --k8s-secret writes the Secret the chart's github.existingSecret reads; --force replaces a
// file, world-readable before, with a 0600 one.
func TestRegisterK8sSecret(t *testing.T) {
	sim := startRegisterSim(t)
	out := filepath.Join(t.TempDir(), "secret.yaml")
	if err := os.WriteFile(out, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := startRegister(t, "--org", "acme", "--github-url", sim.url, "--manifest", filepath.Join("..", "..", "app.yml"),
		"--webhook-url", testWebhookURL, "--out", out, "--force", "--k8s-secret", "ralph-gate-github")
	action, manifest := r.form(t)
	if res, body := submit(t, action, manifest, true); res.StatusCode != http.StatusOK {
		t.Fatalf("callback page: %d %s", res.StatusCode, body)
	}
	if code := r.wait(t); code != exitOK {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, r.out.String(), r.err.String())
	}
	if mode := fileMode(t, out); mode != 0o600 {
		t.Errorf("%s has mode %v, want 0600", out, mode)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var secret struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Metadata   struct {
			Name string `yaml:"name"`
		} `yaml:"metadata"`
		Type       string            `yaml:"type"`
		StringData map[string]string `yaml:"stringData"`
	}
	if err := yaml.Unmarshal(data, &secret); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	keys := chartSecretKeys(t)
	if secret.APIVersion != "v1" || secret.Kind != "Secret" || secret.Metadata.Name != "ralph-gate-github" || secret.Type != "Opaque" ||
		secret.StringData[keys["appId"]] != "1001" || secret.StringData[keys["webhookSecret"]] != sim.seed.App.WebhookSecret ||
		secret.StringData[keys["privateKey"]] != string(sim.PrivateKeyPEM()) || len(secret.StringData[keys["oauthClientSecret"]]) != 40 ||
		len(secret.StringData[keys["sessionKey"]]) != 2*config.MinSessionKeyBytes {
		t.Errorf("secret:\n%s", data)
	}
	assertNoSecrets(t, r.out.String()+r.err.String(), sim.seed.App.WebhookSecret, secret.StringData[keys["oauthClientSecret"]],
		secret.StringData[keys["sessionKey"]], pemBody(sim.PrivateKeyPEM()))
	for _, want := range []string{"kubectl -n NAMESPACE apply -f " + out, "existingSecret: ralph-gate-github", "helm upgrade --install"} {
		if !strings.Contains(r.out.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.out.String())
		}
	}
}

// chartSecretKeys are the chart's default github.existingSecretKeys.
func chartSecretKeys(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "charts", "ralph-gate", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		GitHub struct {
			ExistingSecretKeys map[string]string `yaml:"existingSecretKeys"`
		} `yaml:"github"`
	}
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	return v.GitHub.ExistingSecretKeys
}

// The Secret register writes holds exactly the keys the chart reads from
// github.existingSecret, each under the chart's name for it.
func TestRegisterSecretKeysMatchChart(t *testing.T) {
	want := map[string]string{"appId": secretKeyAppID, "webhookSecret": secretKeyWebhookSecret, "privateKey": secretKeyPrivateKey,
		"oauthClientSecret": secretKeyOAuthClientSecret, "sessionKey": secretKeySessionKey}
	chart := chartSecretKeys(t)
	if !maps.Equal(chart, want) {
		t.Errorf("chart's github.existingSecretKeys %v, register writes %v", chart, want)
	}
	hook := strings.Repeat("5f", 20) // as long as the ones GitHub generates: 40 hex characters
	r := &registration{org: "acme", web: &url.URL{Scheme: "https", Host: "github.com"}, k8sSecret: "ralph-gate-github", sessionKey: "k"}
	var secret struct {
		StringData map[string]string `yaml:"stringData"`
	}
	if err := yaml.Unmarshal(r.render(&appCreated{ID: 1, Slug: "s", ClientID: "Iv1.x", ClientSecret: "c", WebhookSecret: &hook, PEM: "p"}), &secret); err != nil {
		t.Fatal(err)
	}
	written := slices.Sorted(maps.Keys(secret.StringData))
	read := slices.Sorted(maps.Values(chart))
	if !slices.Equal(written, read) {
		t.Errorf("register's Secret has the keys %v, the chart reads %v", written, read)
	}
}

// A code GitHub will not exchange (here: already exchanged) fails the run with GitHub's
// message, and nothing is written.
func TestRegisterConversionRefused(t *testing.T) {
	sim := startRegisterSim(t)
	out := filepath.Join(t.TempDir(), "app.env")
	r := startRegister(t, "--org", "acme", "--github-url", sim.url, "--manifest", filepath.Join("..", "..", "app.yml"),
		"--webhook-url", testWebhookURL, "--out", out)
	action, manifest := r.form(t)
	res, _ := submit(t, action, manifest, false)
	callback := res.Header.Get("Location")
	u, _ := url.Parse(callback)
	code := u.Query().Get("code")
	req, _ := http.NewRequest(http.MethodPost, sim.url+"/api/v3/app-manifests/"+code+"/conversions", nil)
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusCreated {
		t.Fatalf("exchanging the code first: %v %v", res, err)
	} else {
		res.Body.Close()
	}
	if status, body := get(t, callback); status != http.StatusBadGateway || !strings.Contains(body, "Not Found") {
		t.Errorf("callback: %d %s", status, body)
	}
	if c := r.wait(t); c != exitError {
		t.Fatalf("exit %d", c)
	}
	stderr := r.err.String()
	for _, want := range []string{"GitHub refused to exchange the code", "HTTP 404", `"Not Found"`, "already exchanged", "app-manifests/…/conversions"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	assertNoSecrets(t, r.out.String()+stderr, code)
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("%s written after a failed exchange: %v", out, err)
	}
}

func TestConversionErrorMessage(t *testing.T) {
	err := conversionError("https://api.github.com/app-manifests/…/conversions", 422,
		[]byte(`{"message":"Validation Failed","errors":["Name has already been taken"],"documentation_url":"x"}`))
	for _, want := range []string{"HTTP 422", "Validation Failed; Name has already been taken", "refused the manifest"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
}

func TestRegisterUsage(t *testing.T) {
	dir := t.TempDir()
	appYML := filepath.Join("..", "..", "app.yml")
	exists := filepath.Join(dir, "exists.env")
	if err := os.WriteFile(exists, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "new.env")
	for _, tc := range []struct {
		name string
		args []string
		code int
		says string
	}{
		{"no org", []string{"--manifest", appYML, "--webhook-url", testWebhookURL}, exitUsage, "--org"},
		{"bad org", []string{"--org", "a/b", "--manifest", appYML}, exitUsage, "--org"},
		{"not loopback", []string{"--org", "acme", "--listen", "0.0.0.0:0"}, exitUsage, "loopback"},
		{"bad secret name", []string{"--org", "acme", "--k8s-secret", "Ralph_Gate"}, exitUsage, "--k8s-secret"},
		{"bad github url", []string{"--org", "acme", "--github-url", "github.com"}, exitUsage, "--github-url"},
		{"example webhook URL", []string{"--org", "acme", "--manifest", appYML, "--out", out}, exitError, "--webhook-url https://YOUR-HOST/api/github/hook"},
		{"no manifest", []string{"--org", "acme", "--manifest", filepath.Join(dir, "none.yml"), "--out", out}, exitError, "--manifest PATH/app.yml"},
		{"existing out", []string{"--org", "acme", "--manifest", appYML, "--webhook-url", testWebhookURL, "--out", exists}, exitError, "pass --force"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "", append([]string{"register"}, tc.args...)...)
			if code != tc.code || !strings.Contains(stderr, tc.says) || strings.Contains(stdout, "listening") {
				t.Errorf("exit %d, want %d with %q\nstdout: %s\nstderr: %s", code, tc.code, tc.says, stdout, stderr)
			}
		})
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("%s was written", out)
	}
	if _, stdout, _ := runCLI(t, "", "help"); !strings.Contains(stdout, "ralph-gate register --org ORG") {
		t.Errorf("help lacks register:\n%s", stdout)
	}
}

// register never hands out a webhook secret that serve and doctor refuse. GitHub generates a
// 40-character one for an App created from a manifest, but its answer may carry none, and the
// simulator answers its seed's secret whatever its length (ghsim/testdata/seed.yaml, which the
// README's `ghsim serve` uses, had "s3cret"): register once wrote it, and the next printed step,
// doctor, refused it as too short. Now the file holds no secret, says why, and the next steps
// begin with setting one.
func TestRegisterShortWebhookSecret(t *testing.T) {
	for _, tt := range []struct {
		name, secret, problem string
	}{
		{"too short", "s3cret", "GitHub returned a webhook secret shorter than the 16 characters serve accepts, so it was not written"},
		{"none", "", "GitHub returned no webhook secret"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sim := startRegisterSimWith(t, func(s *ghsim.Seed) { s.App.WebhookSecret = tt.secret })
			dir := t.TempDir()
			out := filepath.Join(dir, "app.env")
			r := startRegister(t, "--org", "acme", "--github-url", sim.url, "--manifest", filepath.Join("..", "..", "app.yml"),
				"--webhook-url", testWebhookURL, "--out", out, "--timeout", "1m")
			action, manifest := r.form(t)
			if res, body := submit(t, action, manifest, true); res.StatusCode != http.StatusOK {
				t.Fatalf("callback page: %d %s", res.StatusCode, body)
			}
			if code := r.wait(t); code != exitOK {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, r.out.String(), r.err.String())
			}
			data, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			settings := sim.url + "/organizations/acme/settings/apps/ralph-gate"
			vars := loadEnvFile(t, out, "GITHUB_APP_WEBHOOK_SECRET", "GITHUB_APP_INTEGRATION_ID", "GITHUB_APP_PRIVATE_KEY")
			if vars["GITHUB_APP_WEBHOOK_SECRET"] != "" || vars["GITHUB_APP_INTEGRATION_ID"] != "1001" ||
				!strings.Contains(string(data), "# GITHUB_APP_WEBHOOK_SECRET: "+tt.problem) || !strings.Contains(string(data), settings) {
				t.Errorf("env file:\n%s", data)
			}
			stdout := r.out.String()
			for _, want := range []string{tt.problem, "First: " + tt.problem + ", and serve and doctor refuse the file without one.",
				"Generate a secret (openssl rand -hex 32), set it as the webhook secret on", settings + ", and add it to " + out + " as GITHUB_APP_WEBHOOK_SECRET."} {
				if !strings.Contains(stdout, want) {
					t.Errorf("stdout lacks %q:\n%s", want, stdout)
				}
			}
			if strings.Index(stdout, "First: ") > strings.Index(stdout, "ralph-gate doctor --config") {
				t.Errorf("setting the secret comes after the doctor step:\n%s", stdout)
			}
			assertNoSecrets(t, stdout+r.err.String(), tt.secret)
			// What the file holds is all serve would be missing: the secret, required, named.
			for k, v := range vars {
				t.Setenv(k, v)
			}
			cfgFile := filepath.Join(dir, "config.yml")
			cfg, _ := yaml.Marshal(map[string]any{"projects": []map[string]any{{"owner": "acme", "number": 1}}})
			if err := os.WriteFile(cfgFile, cfg, 0o600); err != nil {
				t.Fatal(err)
			}
			_, problems, err := config.Preflight(cfgFile, config.ForServe, os.LookupEnv)
			if err != nil || len(problems) != 1 || problems[0].Path != "github.app.webhook_secret" || !strings.Contains(problems[0].Message, "is required") {
				t.Errorf("serve with the file: %v %v", err, problems)
			}
		})
	}

	// The Kubernetes Secret leaves the key out and says how to add it.
	sim := startRegisterSimWith(t, func(s *ghsim.Seed) { s.App.WebhookSecret = "s3cret" })
	out := filepath.Join(t.TempDir(), "secret.yaml")
	r := startRegister(t, "--org", "acme", "--github-url", sim.url, "--manifest", filepath.Join("..", "..", "app.yml"),
		"--webhook-url", testWebhookURL, "--out", out, "--k8s-secret", "ralph-gate-github")
	action, manifest := r.form(t)
	if res, body := submit(t, action, manifest, true); res.StatusCode != http.StatusOK {
		t.Fatalf("callback page: %d %s", res.StatusCode, body)
	}
	if code := r.wait(t); code != exitOK {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, r.out.String(), r.err.String())
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var secret struct {
		StringData map[string]string `yaml:"stringData"`
	}
	if err := yaml.Unmarshal(data, &secret); err != nil {
		t.Fatal(err)
	}
	if _, ok := secret.StringData[secretKeyWebhookSecret]; ok || secret.StringData[secretKeyAppID] != "1001" ||
		!strings.Contains(string(data), "# webhook-secret: GitHub returned a webhook secret shorter than") {
		t.Errorf("secret:\n%s", data)
	}
	if !strings.Contains(r.out.String(), "and add it to "+out+" as stringData.webhook-secret.") {
		t.Errorf("stdout:\n%s", r.out.String())
	}
}
