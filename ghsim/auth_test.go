package ghsim

import (
	"strings"
	"testing"
	"time"
)

func TestAppAuthFlow(t *testing.T) {
	s := startSim(t, testSeed(t), Options{})
	jwt := "Bearer " + s.appJWT()

	r := s.do("GET", "/api/v3/app", jwt, nil)
	if r.status != 200 {
		t.Fatalf("GET /app: %d %s", r.status, r.body)
	}
	var app struct {
		ID          int64             `json:"id"`
		Slug        string            `json:"slug"`
		Permissions map[string]string `json:"permissions"`
		Events      []string          `json:"events"`
	}
	r.json(t, &app)
	if app.ID != 1001 || app.Slug != "ralph-gate" || app.Permissions["organization_projects"] != "write" || app.Permissions["contents"] != "read" || app.Permissions["checks"] != "write" || len(app.Events) != 6 {
		t.Fatalf("app = %+v", app)
	}

	for _, path := range []string{"/api/v3/app/installations", "/api/v3/orgs/acme/installation", "/api/v3/app/installations/2002", "/api/v3/repos/acme/app/installation"} {
		if r := s.do("GET", path, jwt, nil); r.status != 200 || !strings.Contains(string(r.body), `"id":2002`) {
			t.Fatalf("GET %s: %d %s", path, r.status, r.body)
		}
	}
	if r := s.do("GET", "/api/v3/orgs/other/installation", jwt, nil); r.status != 404 {
		t.Fatalf("other org installation: %d", r.status)
	}

	r = s.do("POST", "/api/v3/app/installations/2002/access_tokens", jwt, nil)
	var tok struct {
		Token       string            `json:"token"`
		ExpiresAt   time.Time         `json:"expires_at"`
		Permissions map[string]string `json:"permissions"`
	}
	r.json(t, &tok)
	if r.status != 201 || !strings.HasPrefix(tok.Token, "ghs_") || time.Until(tok.ExpiresAt) < 50*time.Minute || tok.Permissions["issues"] != "write" {
		t.Fatalf("access token: %d %s", r.status, r.body)
	}

	d := s.gqlOK(tok.Token, `{ viewer { login } rateLimit { limit remaining cost used } }`, nil)
	if got := dig(d, "viewer", "login"); got != "ralph-gate[bot]" {
		t.Fatalf("viewer = %v", got)
	}
	// A write with the installation token is attributed to the bot.
	r = s.do("POST", "/api/v3/repos/acme/app/issues/1/comments", "token "+tok.Token, map[string]any{"body": "hello"})
	if r.status != 201 || !strings.Contains(string(r.body), `"login":"ralph-gate[bot]"`) || !strings.Contains(string(r.body), `"type":"Bot"`) {
		t.Fatalf("comment as bot: %d %s", r.status, r.body)
	}
	// A user's token acts as the user.
	d = s.gqlOK("alice-token", `{ viewer { login } }`, nil)
	if dig(d, "viewer", "login") != "alice" {
		t.Fatalf("user viewer = %v", d)
	}
}

func TestAuthRefusals(t *testing.T) {
	s := startSim(t, testSeed(t), Options{})
	other, err := generateKeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	cases := []struct {
		name, method, path, auth, want string
	}{
		{"no auth REST", "GET", "/api/v3/repos/acme/app/issues/1", "", "Requires authentication"},
		{"bad token REST", "GET", "/api/v3/repos/acme/app/issues/1", "token nope", "Bad credentials"},
		{"bad token GraphQL", "POST", "/api/graphql", "bearer nope", "Bad credentials"},
		{"no auth GraphQL", "POST", "/api/graphql", "", "requires you to be authenticated"},
		{"user token on /app", "GET", "/api/v3/app", "bearer alice-token", "JSON web token could not be decoded"},
		{"JWT from another key", "GET", "/api/v3/app", "Bearer " + signJWT(t, other, 1001, now, now.Add(5*time.Minute)), "JSON web token could not be decoded"},
		{"expired JWT", "GET", "/api/v3/app", "Bearer " + signJWT(t, s.PrivateKeyPEM(), 1001, now.Add(-20*time.Minute), now.Add(-10*time.Minute)), "Expiration time"},
		{"JWT too long", "GET", "/api/v3/app", "Bearer " + signJWT(t, s.PrivateKeyPEM(), 1001, now, now.Add(time.Hour)), "too far in the future"},
		{"JWT wrong issuer", "GET", "/api/v3/app", "Bearer " + signJWT(t, s.PrivateKeyPEM(), 7, now, now.Add(5*time.Minute)), "Issuer"},
		{"JWT on a repo route", "GET", "/api/v3/repos/acme/app/issues/1", "Bearer " + s.appJWT(), "installation token"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := s.do(c.method, c.path, c.auth, map[string]any{"query": "{ viewer { login } }"})
			if r.status != 401 || !strings.Contains(string(r.body), c.want) || !strings.Contains(string(r.body), `"message"`) {
				t.Fatalf("%d %s", r.status, r.body)
			}
			if c.auth != "" && strings.Contains(c.want, "Bad credentials") && !strings.Contains(string(r.body), "documentation_url") {
				t.Fatalf("missing documentation_url: %s", r.body)
			}
		})
	}
}

func TestExpiredInstallationToken(t *testing.T) {
	now := time.Now()
	clock := &fakeClock{t: now}
	s := startSim(t, testSeed(t), Options{Clock: clock.Now})
	jwt := "Bearer " + signJWT(t, s.PrivateKeyPEM(), 1001, now, now.Add(5*time.Minute))
	r := s.do("POST", "/api/v3/app/installations/2002/access_tokens", jwt, nil)
	var tok struct {
		Token string `json:"token"`
	}
	r.json(t, &tok)
	if r := s.do("GET", "/api/v3/repos/acme/app/issues/1", "token "+tok.Token, nil); r.status != 200 {
		t.Fatalf("fresh token: %d", r.status)
	}
	clock.advance(61 * time.Minute)
	if r := s.do("GET", "/api/v3/repos/acme/app/issues/1", "token "+tok.Token, nil); r.status != 401 {
		t.Fatalf("expired token: %d", r.status)
	}
}
