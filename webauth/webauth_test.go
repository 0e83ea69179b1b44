package webauth

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/palantir/go-githubapp/githubapp"
	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/ghsim"
)

const secretData = "secret board data"

var sessionKey = []byte("0123456789abcdef0123456789ABCDEF-test-key")

// clock is a settable clock shared by the app under test.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// countingMembers counts the membership calls that reach GitHub.
type countingMembers struct {
	next  Members
	calls atomic.Int32
}

func (m *countingMembers) IsMember(ctx context.Context, org, login string) (bool, error) {
	m.calls.Add(1)
	return m.next.IsMember(ctx, org, login)
}

type env struct {
	t       *testing.T
	sim     *ghsim.Server
	simURL  string
	appURL  string
	auth    *Auth
	members *countingMembers
	clock   *clock
	logs    *bytes.Buffer
	revoked *memRevocations
}

// memRevocations keeps revoked sessions in memory; broken makes it fail.
type memRevocations struct {
	mu     sync.Mutex
	ids    map[string]time.Time
	broken error
}

func (m *memRevocations) RevokeSession(_ context.Context, id string, until time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.broken != nil {
		return m.broken
	}
	m.ids[id] = until
	return nil
}

func (m *memRevocations) SessionRevoked(_ context.Context, id string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.ids[id]
	return ok, m.broken
}

// start runs ghsim and an app serving pages behind Auth, both over real HTTP.
func start(t *testing.T, perms map[string]string) *env {
	t.Helper()
	return startServing(t, perms, "", []string{"acme"})
}

// startServing is start with more of the seed (users, organizations) and the organizations
// served. The pages answer who is signed in and what they may see (Scope).
func startServing(t *testing.T, perms map[string]string, moreSeed string, orgs []string) *env {
	t.Helper()
	seed, err := ghsim.ParseSeed([]byte(`
org: acme
app: {id: 1001, slug: ralph-gate, installation_id: 2002, webhook_secret: webauth-test-secret}
users:
  - {login: alice, token: alice-token, kind: human}
  - {login: bob, token: bob-token, kind: human, org_role: admin}
  - {login: mallory, token: mallory-token, kind: human, org_role: none}
  - {login: carol, token: carol-token, kind: human, org_role: none}
repos: [app]
` + moreSeed))
	if err != nil {
		t.Fatal(err)
	}
	seed.App.Permissions = perms
	sim, err := ghsim.New(seed, ghsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	simURL, err := sim.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = sim.Close() })

	e := &env{t: t, sim: sim, simURL: simURL, clock: &clock{now: time.Now()}, logs: &bytes.Buffer{}, revoked: &memRevocations{ids: map[string]time.Time{}}}
	var handler http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	e.appURL = srv.URL

	var cfg githubapp.Config
	cfg.WebURL, cfg.V3APIURL, cfg.V4APIURL = simURL, simURL+"/api/v3/", simURL+"/api/graphql"
	cfg.App.IntegrationID = seed.App.ID
	cfg.App.PrivateKey = string(sim.PrivateKeyPEM())
	cfg.OAuth.ClientID, cfg.OAuth.ClientSecret = sim.OAuthClient()
	sim.SetOAuthCallbackURLs(srv.URL + CallbackPath)
	creator, err := githubapp.NewDefaultCachingClientCreator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.members = &countingMembers{next: NewInstallationMembers(creator)}
	e.auth, err = New(Options{GitHub: cfg, PublicURL: srv.URL, SessionKey: sessionKey, Orgs: orgs,
		Members: e.members, Now: e.clock.Now, Revocations: e.revoked})
	if err != nil {
		t.Fatal(err)
	}
	pages := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		orgs, all := Scope(r)
		fmt.Fprintf(w, "%s for %s at %s scope=%s all=%v csrf=%s", secretData, Viewer(r), r.URL.RequestURI(), strings.Join(orgs, ","), all, CSRFToken(r))
	})
	logger := zerolog.New(e.logs)
	mux := http.NewServeMux()
	mux.Handle("/ui/", e.auth.Wrap(pages))
	handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mux.ServeHTTP(w, r.WithContext(logger.WithContext(r.Context())))
	})
	return e
}

var (
	withMembers    = map[string]string{"organization_projects": "write", "issues": "write", "members": "read", "metadata": "read"}
	withoutMembers = map[string]string{"organization_projects": "write", "issues": "write", "metadata": "read"}
)

// browser is a cookie-keeping client that follows redirects, like a browser.
type browser struct {
	*http.Client
	e *env
}

func (e *env) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{Client: &http.Client{Jar: jar, Timeout: 10 * time.Second}, e: e}
}

type page struct {
	status int
	url    string
	body   string
}

func (b *browser) get(path string) page {
	b.e.t.Helper()
	res, err := b.Get(b.e.appURL + path)
	if err != nil {
		b.e.t.Fatal(err)
	}
	return read(b.e.t, res)
}

func (b *browser) post(path string, form url.Values) page {
	b.e.t.Helper()
	res, err := b.PostForm(b.e.appURL+path, form)
	if err != nil {
		b.e.t.Fatal(err)
	}
	return read(b.e.t, res)
}

func read(t *testing.T, res *http.Response) page {
	t.Helper()
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return page{status: res.StatusCode, url: res.Request.URL.String(), body: string(body)}
}

// signIn opens path signed out, lands on ghsim's consent page and authorizes as login.
func (b *browser) signIn(path, login string) page {
	b.e.t.Helper()
	p := b.get(path)
	if p.status != 200 || !strings.HasPrefix(p.url, b.e.simURL+"/login/oauth/authorize?") {
		b.e.t.Fatalf("signed out, %s led to %d %s", path, p.status, p.url)
	}
	u, _ := url.Parse(p.url)
	q := u.Query()
	res, err := b.PostForm(b.e.simURL+"/login/oauth/authorize", url.Values{"client_id": {q.Get("client_id")},
		"redirect_uri": {q.Get("redirect_uri")}, "state": {q.Get("state")}, "login": {login}})
	if err != nil {
		b.e.t.Fatal(err)
	}
	return read(b.e.t, res)
}

func (b *browser) cookie(name string) *http.Cookie {
	u, _ := url.Parse(b.e.appURL + "/ui/")
	for _, c := range b.Jar.Cookies(u) {
		if c.Name == name {
			return c
		}
	}
	return nil
}

func TestSignInFlow(t *testing.T) {
	e := start(t, withMembers)
	b := e.browser()
	p := b.signIn("/ui/decisions/7?page=2", "alice")
	if p.status != 200 || !strings.Contains(p.body, secretData+" for alice at /ui/decisions/7?page=2") {
		t.Fatalf("after sign-in: %d %s %q", p.status, p.url, p.body)
	}
	if b.cookie(sessionCookie) == nil {
		t.Fatal("no session cookie")
	}
	// Signed in, /ui/login goes straight on.
	if p := b.get(LoginPath + "?next=/ui/board"); p.status != 200 || !strings.Contains(p.body, "at /ui/board") {
		t.Fatalf("login while signed in: %d %s", p.status, p.url)
	}
	// Another person's browser is signed out.
	if p := e.browser().get("/ui/"); strings.Contains(p.body, secretData) {
		t.Fatal("a fresh browser saw the pages")
	}
	for _, secret := range []string{"ghu_", b.cookie(sessionCookie).Value, "client_secret"} {
		if strings.Contains(e.logs.String(), secret) {
			t.Errorf("the log holds %q:\n%s", secret, e.logs)
		}
	}
	if !strings.Contains(e.logs.String(), `"login":"alice","message":"ui: signed in"`) {
		t.Errorf("no sign-in line:\n%s", e.logs)
	}
}

// The cookies' attributes: HttpOnly, SameSite=Lax, an expiry, Secure and __Host- with https.
func TestCookieAttributes(t *testing.T) {
	for _, tt := range []struct {
		public, session string
		secure          bool
	}{
		{"http://127.0.0.1:8080", sessionCookie, false},
		{"https://ralph-gate.example.com/", secureSessionCookie, true},
	} {
		t.Run(tt.public, func(t *testing.T) {
			var cfg githubapp.Config
			cfg.WebURL = "https://github.example.com"
			cfg.OAuth.ClientID, cfg.OAuth.ClientSecret = "Iv1.0123456789abcdef", "s3cret"
			now := time.Unix(1_800_000_000, 0)
			a, err := New(Options{GitHub: cfg, PublicURL: tt.public, SessionKey: sessionKey, Orgs: []string{"acme"},
				Members: &countingMembers{}, Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			rec := httptest.NewRecorder()
			a.Wrap(http.NotFoundHandler()).ServeHTTP(rec, httptest.NewRequest("GET", LoginPath, nil))
			res := rec.Result()
			to, _ := url.Parse(res.Header.Get("Location"))
			wantCallback := strings.TrimSuffix(tt.public, "/") + CallbackPath
			if res.StatusCode != http.StatusFound || to.Host != "github.example.com" || to.Path != "/login/oauth/authorize" ||
				to.Query().Get("redirect_uri") != wantCallback || len(to.Query().Get("state")) != 40 {
				t.Fatalf("login: %d %s", res.StatusCode, to)
			}
			state := res.Cookies()[0]
			if state.Name != stateCookie || !state.HttpOnly || state.SameSite != http.SameSiteLaxMode || state.Secure != tt.secure ||
				state.Path != CallbackPath || state.MaxAge != int(stateTTL.Seconds()) {
				t.Fatalf("state cookie: %+v", state)
			}
			rec = httptest.NewRecorder()
			if err := a.cookies.startSession(rec, "alice", 1); err != nil {
				t.Fatal(err)
			}
			sess := rec.Result().Cookies()[0]
			if sess.Name != tt.session || !sess.HttpOnly || sess.SameSite != http.SameSiteLaxMode || sess.Secure != tt.secure ||
				sess.Path != "/" || sess.MaxAge != int(DefaultSessionTTL.Seconds()) || !sess.Expires.Equal(now.Add(DefaultSessionTTL).Truncate(time.Second)) {
				t.Fatalf("session cookie: %+v", sess)
			}
		})
	}
}

func TestBadState(t *testing.T) {
	e := start(t, withMembers)
	tests := []struct {
		name   string
		tamper func(b *browser, callback *url.URL)
		status int
	}{
		{"another state", func(_ *browser, cb *url.URL) {
			q := cb.Query()
			q.Set("state", strings.Repeat("ab", 20))
			cb.RawQuery = q.Encode()
		}, http.StatusBadRequest},
		{"no state", func(_ *browser, cb *url.URL) {
			q := cb.Query()
			q.Del("state")
			cb.RawQuery = q.Encode()
		}, http.StatusBadRequest},
		{"the state cookie of another browser (login CSRF)", func(b *browser, _ *url.URL) {
			jar, _ := cookiejar.New(nil)
			b.Jar = jar
		}, http.StatusBadRequest},
		{"a forged state cookie", func(b *browser, cb *url.URL) {
			u, _ := url.Parse(e.appURL + CallbackPath)
			forged, _ := seal(newSigner([]byte("another key, 32 bytes or more, ok!")).state, pending{State: cb.Query().Get("state"), Next: "/ui/", Expires: time.Now().Add(time.Hour).Unix()})
			b.Jar.SetCookies(u, []*http.Cookie{{Name: stateCookie, Value: forged, Path: CallbackPath}})
		}, http.StatusBadRequest},
		{"too late", func(*browser, *url.URL) { e.clock.Add(stateTTL + time.Second) }, http.StatusBadRequest},
		{"no code", func(_ *browser, cb *url.URL) { cb.RawQuery = url.Values{"state": {cb.Query().Get("state")}}.Encode() }, http.StatusBadRequest},
		{"declined on GitHub", func(_ *browser, cb *url.URL) {
			cb.RawQuery = url.Values{"error": {"access_denied"}, "state": {cb.Query().Get("state")}}.Encode()
		}, http.StatusForbidden},
		{"a code GitHub does not know", func(_ *browser, cb *url.URL) {
			q := cb.Query()
			q.Set("code", "0123456789abcdef0123")
			cb.RawQuery = q.Encode()
		}, http.StatusBadGateway},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := e.browser()
			stop := b.CheckRedirect
			var callback *url.URL
			b.CheckRedirect = func(r *http.Request, via []*http.Request) error {
				if r.URL.Path == CallbackPath {
					callback = r.URL
					return http.ErrUseLastResponse
				}
				return nil
			}
			b.signIn("/ui/", "alice")
			if callback == nil {
				t.Fatal("ghsim did not send the browser back")
			}
			tt.tamper(b, callback)
			b.CheckRedirect = stop
			res, err := b.Get(callback.String())
			if err != nil {
				t.Fatal(err)
			}
			p := read(t, res)
			if p.status != tt.status || strings.Contains(p.body, secretData) || b.cookie(sessionCookie) != nil {
				t.Fatalf("got %d at %s (want %d), session %v: %s", p.status, p.url, tt.status, b.cookie(sessionCookie), p.body)
			}
		})
	}
}

func TestTamperedOrExpiredSession(t *testing.T) {
	e := start(t, withMembers)
	b := e.browser()
	b.signIn("/ui/", "alice")
	good := b.cookie(sessionCookie).Value
	body, sig, _ := strings.Cut(good, ".")
	raw, _ := base64.RawURLEncoding.DecodeString(body)
	asBob := base64.RawURLEncoding.EncodeToString(bytes.Replace(raw, []byte(`"alice"`), []byte(`"bob"`), 1))
	otherKey, _ := seal(newSigner([]byte("another key, 32 bytes or more, ok!")).session, session{Login: "alice", ID: "x", Expires: time.Now().Add(time.Hour).Unix()})

	tests := []struct {
		name  string
		value string
		later time.Duration
		ok    bool
	}{
		{"as issued", good, 0, true},
		{"another login, same signature", asBob + "." + sig, 0, false},
		{"signature cut", body + "." + sig[:10], 0, false},
		{"no signature", body, 0, false},
		{"signed with another key", otherKey, 0, false},
		{"garbage", "!!!", 0, false},
		{"expired", good, DefaultSessionTTL + time.Second, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.clock.Add(tt.later)
			defer e.clock.Add(-tt.later)
			req, _ := http.NewRequest("GET", e.appURL+"/ui/board", nil)
			req.AddCookie(&http.Cookie{Name: sessionCookie, Value: tt.value})
			res, err := noRedirect.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			p := read(t, res)
			switch {
			case tt.ok && (p.status != 200 || !strings.Contains(p.body, secretData+" for alice")):
				t.Fatalf("got %d %q", p.status, p.body)
			case !tt.ok && (p.status != http.StatusSeeOther || res.Header.Get("Location") != LoginPath+"?next=%2Fui%2Fboard" || strings.Contains(p.body, secretData)):
				t.Fatalf("got %d to %q: %q", p.status, res.Header.Get("Location"), p.body)
			}
		})
	}
}

var noRedirect = &http.Client{Timeout: 10 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func TestSignedOutGetsNoData(t *testing.T) {
	e := start(t, withMembers)
	for _, tt := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/ui/", http.StatusSeeOther},
		{"GET", "/ui/decisions/1", http.StatusSeeOther},
		{"HEAD", "/ui/", http.StatusSeeOther},
		{"POST", "/ui/", http.StatusUnauthorized},
		{"GET", CallbackPath, http.StatusBadRequest},
		{"GET", LogoutPath, http.StatusMethodNotAllowed},
	} {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, e.appURL+tt.path, nil)
			res, err := noRedirect.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			p := read(t, res)
			if p.status != tt.status || strings.Contains(p.body, secretData) || res.Header.Get("Cache-Control") != "no-store" {
				t.Fatalf("got %d %q (cache %q)", p.status, p.body, res.Header.Get("Cache-Control"))
			}
		})
	}
}

func TestNonMemberGets403(t *testing.T) {
	e := start(t, withMembers)
	b := e.browser()
	p := b.signIn("/ui/", "mallory")
	if p.status != http.StatusForbidden || strings.Contains(p.body, secretData) || !strings.Contains(p.body, `<strong id="viewer">mallory</strong>`) ||
		!strings.Contains(p.body, `name="csrf_token"`) {
		t.Fatalf("non-member: %d %s", p.status, p.body)
	}
	// An admin of the organization is a member.
	if p := e.browser().signIn("/ui/", "bob"); p.status != 200 || !strings.Contains(p.body, secretData+" for bob") {
		t.Fatalf("admin: %d %s", p.status, p.body)
	}
}

// Without the Members permission GitHub refuses to say: nobody gets in, and nothing is cached.
func TestMembershipUnknownIsRefused(t *testing.T) {
	e := start(t, withoutMembers)
	b := e.browser()
	for i, p := range []page{b.signIn("/ui/", "alice"), b.get("/ui/")} {
		if p.status != http.StatusServiceUnavailable || strings.Contains(p.body, secretData) {
			t.Fatalf("view %d: %d %s", i, p.status, p.body)
		}
	}
	if got := e.members.calls.Load(); got != 2 {
		t.Fatalf("%d membership calls, want 2 (errors are not cached)", got)
	}
}

func TestLogoutNeedsPOSTAndTheCSRFToken(t *testing.T) {
	e := start(t, withMembers)
	alice := e.browser()
	p := alice.signIn("/ui/", "alice")
	_, token, _ := strings.Cut(p.body, "csrf=")
	bob := e.browser()
	_, bobToken, _ := strings.Cut(bob.signIn("/ui/", "bob").body, "csrf=")
	if token == "" || bobToken == "" || token == bobToken {
		t.Fatalf("tokens %q and %q", token, bobToken)
	}
	tests := []struct {
		name   string
		form   url.Values
		status int
		out    bool
	}{
		{"no token", url.Values{}, http.StatusForbidden, false},
		{"a wrong token", url.Values{CSRFField: {"AAAA"}}, http.StatusForbidden, false},
		{"another session's token", url.Values{CSRFField: {bobToken}}, http.StatusForbidden, false},
		{"its own token", url.Values{CSRFField: {token}}, http.StatusOK, true},
	}
	if p := alice.get(LogoutPath); p.status != http.StatusMethodNotAllowed {
		t.Fatalf("GET logout: %d", p.status)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := alice.post(LogoutPath, tt.form)
			if p.status != tt.status {
				t.Fatalf("got %d %s", p.status, p.body)
			}
			after := alice.get("/ui/")
			if signedIn := strings.Contains(after.body, secretData); signedIn == tt.out {
				t.Fatalf("signed in after: %v", signedIn)
			}
		})
	}
	if p := bob.get("/ui/"); !strings.Contains(p.body, secretData+" for bob") {
		t.Fatal("alice's sign-out signed bob out")
	}
}

// Signing out revokes the session for every replica: a copy of its cookie taken before is
// refused afterwards (it stayed valid for the rest of its 8 hours). When the sign-out cannot be
// recorded, the page says so and the session stays open, rather than pretending.
func TestSignOutRevokesACopiedCookie(t *testing.T) {
	e := start(t, withMembers)
	alice := e.browser()
	p := alice.signIn("/ui/", "alice")
	_, token, _ := strings.Cut(p.body, "csrf=")
	u, _ := url.Parse(e.appURL + "/ui/")
	copied := e.browser()
	copied.Jar.SetCookies(u, alice.Jar.Cookies(u))
	if p := copied.get("/ui/"); !strings.Contains(p.body, secretData+" for alice") {
		t.Fatalf("the copied cookie does not sign in: %d %s", p.status, p.body)
	}

	e.revoked.broken = errors.New("database is locked")
	if p := alice.post(LogoutPath, url.Values{CSRFField: {token}}); p.status != http.StatusServiceUnavailable || !strings.Contains(p.body, "Not signed out") {
		t.Fatalf("sign-out with the store failing: %d %s", p.status, p.body)
	}
	e.revoked.broken = nil
	if p := alice.get("/ui/"); !strings.Contains(p.body, secretData+" for alice") {
		t.Fatalf("the session closed though its sign-out failed: %s", p.body)
	}

	if p := alice.post(LogoutPath, url.Values{CSRFField: {token}}); p.status != http.StatusOK || !strings.Contains(p.body, "Signed out") {
		t.Fatalf("sign-out: %d %s", p.status, p.body)
	}
	if p := copied.get("/ui/"); strings.Contains(p.body, secretData) || !strings.HasPrefix(p.url, e.simURL+"/login/oauth/authorize?") {
		t.Fatalf("the copied cookie still signs in after sign-out: %d %s %s", p.status, p.url, p.body)
	}
	if p := copied.post(LogoutPath, url.Values{CSRFField: {token}}); strings.Contains(p.body, secretData) {
		t.Fatalf("%s", p.body)
	}
}

func TestMembershipCache(t *testing.T) {
	e := start(t, withMembers)
	b := e.browser()
	b.signIn("/ui/", "alice")
	for range 3 {
		b.get("/ui/")
	}
	if got := e.members.calls.Load(); got != 1 {
		t.Fatalf("%d membership calls for 4 views, want 1", got)
	}
	e.clock.Add(DefaultMemberCacheTTL + time.Second)
	b.get("/ui/")
	if got := e.members.calls.Load(); got != 2 {
		t.Fatalf("%d membership calls after the cache expired, want 2", got)
	}

	t.Run("bounded", func(t *testing.T) {
		now := time.Unix(1_800_000_000, 0)
		c := newMemberCache(time.Minute, 2, func() time.Time { return now })
		c.put("a", true)
		now = now.Add(time.Second)
		c.put("b", false)
		c.put("c", true) // full: a, the oldest, goes
		if _, ok := c.get("a"); ok || c.len() != 2 {
			t.Fatalf("a kept, %d entries", c.len())
		}
		if m, ok := c.get("B"); !ok || m {
			t.Fatal("b lost (logins are case-insensitive)")
		}
		now = now.Add(time.Minute)
		c.put("d", true) // full of expired entries: they all go
		if _, ok := c.get("d"); !ok || c.len() != 1 {
			t.Fatalf("%d entries", c.len())
		}
	})
}

func TestSafeNext(t *testing.T) {
	for in, want := range map[string]string{
		"":                        "/ui/",
		"/ui/board?x=1":           "/ui/board?x=1",
		"/ui/decisions/7":         "/ui/decisions/7",
		"https://evil.test/ui/":   "/ui/",
		"//evil.test/ui/":         "/ui/",
		"/\\evil.test":            "/ui/",
		"/api/github/hook":        "/ui/",
		"/ui/login?next=/ui/":     "/ui/",
		"/ui/logout":              "/ui/",
		"javascript:alert(1)":     "/ui/",
		"/ui/../metrics":          "/ui/",
		"/ui/%0d%0aSet-Cookie:x=": "/ui/",
		"/ui/board%3Fx":           "/ui/board%3Fx",
	} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	var cfg githubapp.Config
	cfg.OAuth.ClientID, cfg.OAuth.ClientSecret = "id", "secret"
	ok := Options{GitHub: cfg, PublicURL: "https://x.example", SessionKey: sessionKey, Orgs: []string{"acme"}, Members: &countingMembers{}}
	for name, edit := range map[string]func(*Options){
		"relative public URL": func(o *Options) { o.PublicURL = "/ui" },
		"short key":           func(o *Options) { o.SessionKey = []byte("short") },
		"no organization":     func(o *Options) { o.Orgs = nil },
		"no membership check": func(o *Options) { o.Members = nil },
		"no client secret":    func(o *Options) { o.GitHub.OAuth.ClientSecret = "" },
	} {
		o := ok
		edit(&o)
		if _, err := New(o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := New(ok); err != nil {
		t.Fatal(err)
	}
}
