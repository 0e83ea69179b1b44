package ghsim

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

// oauthSeed is the test seed with a non-member, the Members permission and a callback URL.
func oauthSeed(t *testing.T, perms map[string]string) Seed {
	t.Helper()
	seed := testSeed(t)
	seed.Users = append(seed.Users, SeedUser{Login: "mallory", Token: "mallory-token", Kind: "human", OrgRole: OrgRoleNone},
		SeedUser{Login: "olive", Kind: "human", OrgRole: OrgRoleAdmin})
	seed.App.Permissions = perms
	seed.App.CallbackURLs = []string{"http://app.test/ui/oauth/callback"}
	return seed
}

var withMembers = map[string]string{"organization_projects": "write", "issues": "write", "members": "read", "metadata": "read"}

// noRedirect is a client that shows redirects instead of following them.
var noRedirect = &http.Client{Timeout: 10 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// authorizeAs submits the consent page as login and returns where GitHub redirects.
func (s *sim) authorizeAs(login, redirectURI, state string) *url.URL {
	s.t.Helper()
	clientID, _ := s.OAuthClient()
	page, err := noRedirect.Get(s.url + "/login/oauth/authorize?" + url.Values{"client_id": {clientID},
		"redirect_uri": {redirectURI}, "state": {state}}.Encode())
	if err != nil {
		s.t.Fatal(err)
	}
	body, _ := io.ReadAll(page.Body)
	page.Body.Close()
	if page.StatusCode != http.StatusOK || !strings.Contains(string(body), `id="login-`+login+`"`) {
		s.t.Fatalf("authorize page: %d %s", page.StatusCode, body)
	}
	res, err := noRedirect.PostForm(s.url+"/login/oauth/authorize", url.Values{"client_id": {clientID},
		"redirect_uri": {redirectURI}, "state": {state}, "login": {login}})
	if err != nil {
		s.t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusFound {
		s.t.Fatalf("authorize %s: %d", login, res.StatusCode)
	}
	to, err := url.Parse(res.Header.Get("Location"))
	if err != nil {
		s.t.Fatal(err)
	}
	return to
}

func (s *sim) exchange(form url.Values, accept string) (int, string, map[string]string) {
	s.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.url+"/login/oauth/access_token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	out := map[string]string{}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		var raw map[string]any
		if err := json.Unmarshal(b, &raw); err != nil {
			s.t.Fatalf("token answer %s: %v", b, err)
		}
		for k, v := range raw {
			out[k] = jsonString(v)
		}
	} else {
		vals, err := url.ParseQuery(string(b))
		if err != nil {
			s.t.Fatalf("token answer %s: %v", b, err)
		}
		for k := range vals {
			out[k] = vals.Get(k)
		}
	}
	return res.StatusCode, res.Header.Get("Content-Type"), out
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return strings.Trim(string(b), `"`)
}

func TestOAuthWebFlow(t *testing.T) {
	s := startSim(t, oauthSeed(t, withMembers), Options{})
	const cb = "http://app.test/ui/oauth/callback"
	id, secret := s.OAuthClient()
	if !strings.HasPrefix(id, "Iv1.") || len(secret) != 40 {
		t.Fatalf("client: %q, secret of %d characters", id, len(secret))
	}

	to := s.authorizeAs("alice", cb, "st4te")
	code := to.Query().Get("code")
	if to.Scheme+"://"+to.Host+to.Path != cb || to.Query().Get("state") != "st4te" || len(code) != 20 {
		t.Fatalf("redirect: %s", to)
	}

	// Form-encoded unless JSON is asked for, as GitHub answers.
	status, ctype, tok := s.exchange(url.Values{"client_id": {id}, "client_secret": {secret}, "code": {code}, "redirect_uri": {cb}}, "")
	if status != 200 || !strings.HasPrefix(ctype, "application/x-www-form-urlencoded") || !strings.HasPrefix(tok["access_token"], "ghu_") ||
		tok["token_type"] != "bearer" || tok["expires_in"] != "28800" || !strings.HasPrefix(tok["refresh_token"], "ghr_") {
		t.Fatalf("token: %d %s %v", status, ctype, tok)
	}
	// A code is exchanged once.
	if _, _, again := s.exchange(url.Values{"client_id": {id}, "client_secret": {secret}, "code": {code}}, "application/json"); again["error"] != "bad_verification_code" {
		t.Fatalf("second exchange: %v", again)
	}

	user := s.do("GET", "/api/v3/user", "Bearer "+tok["access_token"], nil)
	var u struct {
		Login string `json:"login"`
		Type  string `json:"type"`
	}
	user.json(t, &u)
	if user.status != 200 || u.Login != "alice" || u.Type != "User" {
		t.Fatalf("GET /user: %d %s", user.status, user.body)
	}
	if r := s.do("GET", "/api/v3/user", "Bearer ghu_"+strings.Repeat("0", 36), nil); r.status != 401 {
		t.Fatalf("unknown user token: %d", r.status)
	}
	if r := s.do("GET", "/api/v3/user", "Bearer "+s.installationToken(), nil); r.status != 403 {
		t.Fatalf("GET /user as an installation: %d", r.status)
	}
}

func TestOAuthTokenErrors(t *testing.T) {
	s := startSim(t, oauthSeed(t, withMembers), Options{})
	const cb = "http://app.test/ui/oauth/callback"
	id, secret := s.OAuthClient()
	code := func() string { return s.authorizeAs("bob", cb, "").Query().Get("code") }
	tests := []struct {
		name string
		form func() url.Values
		want string
	}{
		{"wrong secret", func() url.Values {
			return url.Values{"client_id": {id}, "client_secret": {"nope"}, "code": {code()}}
		}, "incorrect_client_credentials"},
		{"unknown client", func() url.Values {
			return url.Values{"client_id": {"Iv1.other"}, "client_secret": {secret}, "code": {code()}}
		}, "incorrect_client_credentials"},
		{"unknown code", func() url.Values {
			return url.Values{"client_id": {id}, "client_secret": {secret}, "code": {"0123456789abcdef0123"}}
		}, "bad_verification_code"},
		{"another redirect_uri", func() url.Values {
			return url.Values{"client_id": {id}, "client_secret": {secret}, "code": {code()}, "redirect_uri": {"http://evil.test/cb"}}
		}, "redirect_uri_mismatch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, _, out := s.exchange(tt.form(), "application/json")
			if status != 200 || out["error"] != tt.want || out["error_description"] == "" || !strings.HasPrefix(out["error_uri"], "https://docs.github.com/") || out["access_token"] != "" {
				t.Fatalf("got %d %v, want error %s", status, out, tt.want)
			}
		})
	}

	t.Run("expired code", func(t *testing.T) {
		now := time.Now()
		clock := &now
		s := startSim(t, oauthSeed(t, withMembers), Options{Clock: func() time.Time { return *clock }})
		c := s.authorizeAs("alice", cb, "").Query().Get("code")
		later := now.Add(oauthCodeTTL + time.Second)
		clock = &later
		if _, _, out := s.exchange(url.Values{"client_id": {id}, "client_secret": {secret}, "code": {c}}, "application/json"); out["error"] != "bad_verification_code" {
			t.Fatalf("expired code: %v", out)
		}
	})

	t.Run("unregistered redirect_uri at authorize", func(t *testing.T) {
		res, err := noRedirect.Get(s.url + "/login/oauth/authorize?" + url.Values{"client_id": {id}, "redirect_uri": {"http://evil.test/cb"}, "state": {"x"}}.Encode())
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		to, _ := url.Parse(res.Header.Get("Location"))
		if res.StatusCode != http.StatusFound || to.Host != "app.test" || to.Query().Get("error") != "redirect_uri_mismatch" || to.Query().Get("state") != "x" {
			t.Fatalf("got %d %s", res.StatusCode, to)
		}
	})

	t.Run("unknown client at authorize", func(t *testing.T) {
		res, err := noRedirect.Get(s.url + "/login/oauth/authorize?client_id=Iv1.other")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound {
			t.Fatalf("got %d", res.StatusCode)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		res, err := noRedirect.PostForm(s.url+"/login/oauth/authorize", url.Values{"client_id": {id}, "redirect_uri": {cb}, "state": {"s"}, "cancel": {"1"}})
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		to, _ := url.Parse(res.Header.Get("Location"))
		if to.Query().Get("error") != "access_denied" || to.Query().Get("code") != "" {
			t.Fatalf("cancel: %s", to)
		}
	})
}

// golang.org/x/oauth2 (what go-githubapp's oauth2 package drives) completes the exchange, and
// reads GitHub's 200-with-error answers as errors.
func TestOAuthWithGolangOAuth2(t *testing.T) {
	s := startSim(t, oauthSeed(t, withMembers), Options{})
	const cb = "http://app.test/ui/oauth/callback"
	id, secret := s.OAuthClient()
	conf := &oauth2.Config{ClientID: id, ClientSecret: secret, RedirectURL: cb,
		Endpoint: oauth2.Endpoint{AuthURL: s.url + "/login/oauth/authorize", TokenURL: s.url + "/login/oauth/access_token"}}
	ctx := context.Background()
	tok, err := conf.Exchange(ctx, s.authorizeAs("alice", cb, "s").Query().Get("code"))
	if err != nil || !strings.HasPrefix(tok.AccessToken, "ghu_") || tok.Expiry.IsZero() {
		t.Fatalf("exchange: %+v %v", tok, err)
	}
	_, err = conf.Exchange(ctx, "0123456789abcdef0123")
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.ErrorCode != "bad_verification_code" {
		t.Fatalf("bad code: %v", err)
	}
}

func TestOrgMembershipCheck(t *testing.T) {
	s := startSim(t, oauthSeed(t, withMembers), Options{})
	inst := s.installationToken()
	tests := []struct {
		name, auth, org, user string
		want                  int
	}{
		{"member", inst, "acme", "alice", 204},
		{"admin", inst, "acme", "olive", 204},
		{"non-member", inst, "acme", "mallory", 404},
		{"unknown user", inst, "acme", "nobody", 404},
		{"org name in another case", inst, "ACME", "alice", 204},
		{"another organization", inst, "other", "alice", 404},
		{"member asks", "alice-token", "acme", "mallory", 404},
		{"non-member asks", "mallory-token", "acme", "alice", 302},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, s.url+"/api/v3/orgs/"+tt.org+"/members/"+tt.user, nil)
			req.Header.Set("Authorization", "Bearer "+tt.auth)
			res, err := noRedirect.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != tt.want {
				t.Fatalf("got %d, want %d", res.StatusCode, tt.want)
			}
			if tt.want == 302 && !strings.HasSuffix(res.Header.Get("Location"), "/orgs/acme/public_members/"+tt.user) {
				t.Fatalf("Location %q", res.Header.Get("Location"))
			}
		})
	}

	t.Run("installation without the Members permission", func(t *testing.T) {
		s := startSim(t, oauthSeed(t, map[string]string{"organization_projects": "write", "issues": "write", "metadata": "read"}), Options{})
		if r := s.do("GET", "/api/v3/orgs/acme/members/alice", "Bearer "+s.installationToken(), nil); r.status != 403 {
			t.Fatalf("got %d %s", r.status, r.body)
		}
	})
}

func TestSeedOrgRole(t *testing.T) {
	seed := testSeed(t)
	seed.Users[0].OrgRole = "owner"
	if err := seed.Validate(); err == nil || !strings.Contains(err.Error(), "users[0].org_role") {
		t.Fatalf("got %v", err)
	}
}

// A user access token stops working after eight hours.
func TestUserTokenExpires(t *testing.T) {
	now := time.Now()
	clock := &now
	s := startSim(t, oauthSeed(t, withMembers), Options{Clock: func() time.Time { return *clock }})
	id, secret := s.OAuthClient()
	code := s.authorizeAs("alice", "http://app.test/ui/oauth/callback", "").Query().Get("code")
	_, _, tok := s.exchange(url.Values{"client_id": {id}, "client_secret": {secret}, "code": {code}}, "application/json")
	if r := s.do("GET", "/api/v3/user", "Bearer "+tok["access_token"], nil); r.status != 200 {
		t.Fatalf("fresh token: %d", r.status)
	}
	later := now.Add(userTokenTTL)
	clock = &later
	if r := s.do("GET", "/api/v3/user", "Bearer "+tok["access_token"], nil); r.status != 401 {
		t.Fatalf("expired token: %d", r.status)
	}
}
