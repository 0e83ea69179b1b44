package ghsim

import (
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// The web application flow of a GitHub App's user access tokens
// (https://docs.github.com/en/apps/creating-github-apps/authenticating-with-a-github-app/generating-a-user-access-token-for-a-github-app):
//
//  1. the browser is sent to GET /login/oauth/authorize?client_id&redirect_uri&state; GitHub
//     asks the signed-in user to authorize the App and redirects to redirect_uri?code&state;
//  2. the App exchanges the code (once, within ten minutes) at POST /login/oauth/access_token
//     with its client id and secret for a user access token (ghu_…, valid eight hours);
//  3. the App calls the REST API with that token as the user: GET /user.
//
// ghsim has no signed-in browser user: its authorize page lists the seeded users, one button
// each, and the one pressed is who authorizes. Organization membership is the seed's org_role,
// answered by GET /orgs/{org}/members/{username}
// (https://docs.github.com/en/rest/orgs/members#check-organization-membership-for-a-user).

const (
	// oauthCodeTTL: GitHub's codes expire after ten minutes.
	oauthCodeTTL = 10 * time.Minute
	// userTokenTTL: a GitHub App's user access token expires after eight hours.
	userTokenTTL = 8 * time.Hour
	// refreshTokenTTL: its refresh token after six months (GitHub answers 15897600 s).
	refreshTokenTTL = 15897600 * time.Second
	// Troubleshooting page of the token endpoint's errors.
	oauthErrorDocs = "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors/"
)

// Org roles a seeded user may have (SeedUser.OrgRole).
const (
	OrgRoleMember = "member"
	OrgRoleAdmin  = "admin"
	OrgRoleNone   = "none"
)

// oauthState holds the App's OAuth client, the codes and the user access tokens issued.
type oauthState struct {
	clientID, clientSecret string
	seed                   uint64
	now                    func() time.Time

	mu        sync.Mutex
	callbacks []string
	n         uint64
	codes     map[string]oauthCode
	tokens    map[string]userGrant // user access token → grant
}

type oauthCode struct {
	login, redirectURI string
	expires            time.Time
}

type userGrant struct {
	login   string
	expires time.Time
}

func newOAuthState(seed Seed, opts Options) *oauthState {
	o := &oauthState{clientID: seed.App.ClientID, clientSecret: seed.App.ClientSecret, seed: opts.RandomSeed, now: opts.Clock,
		callbacks: slices.Clone(seed.App.CallbackURLs), codes: map[string]oauthCode{}, tokens: map[string]userGrant{}}
	// The defaults are what the manifest conversion answers for the App (rest_app.go).
	if o.clientID == "" {
		o.clientID = "Iv1." + derive(opts.RandomSeed, uint64(seed.App.ID), 'c')[:16]
	}
	if o.clientSecret == "" {
		o.clientSecret = derive(opts.RandomSeed, uint64(seed.App.ID), 's')[:40]
	}
	return o
}

// OAuthClient is the App's OAuth client id and secret (the seed's, or derived from the App id).
func (s *Server) OAuthClient() (id, secret string) { return s.oauth.clientID, s.oauth.clientSecret }

// SetOAuthCallbackURLs replaces the App's registered callback URLs. With none, any redirect_uri
// is accepted (the app under test often learns its port after the simulator starts).
func (s *Server) SetOAuthCallbackURLs(urls ...string) {
	s.oauth.mu.Lock()
	defer s.oauth.mu.Unlock()
	s.oauth.callbacks = slices.Clone(urls)
}

// oauthRoutes registers the OAuth web pages (outside /api/) and the REST calls a signed-in
// user's token makes.
func (s *Server) oauthRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /login/oauth/authorize", s.authorizePage)
	mux.HandleFunc("POST /login/oauth/authorize", s.authorize)
	mux.HandleFunc("POST /login/oauth/access_token", s.accessToken)
	s.rest.HandleFunc("GET /api/v3/user", s.getAuthenticatedUser)
	s.rest.HandleFunc("GET /api/v3/orgs/{org}/members/{username}", s.checkMembership)
}

// identify resolves the Authorization header: a user access token issued here, or whatever
// the authenticator knows. Callers hold the world's read lock.
func (s *Server) identify(header string) (principal, error) {
	cred := bearer(header)
	s.oauth.mu.Lock()
	g, ok := s.oauth.tokens[cred]
	s.oauth.mu.Unlock()
	if !ok {
		return s.auth.identify(s.w, header)
	}
	if !s.now().Before(g.expires) {
		return principal{}, errBadCredentials
	}
	u := s.w.byLogin[g.login]
	if u == nil {
		return principal{}, errBadCredentials
	}
	return principal{kind: userToken, actor: u, key: "user:" + u.login}, nil
}

// redirectFor checks redirect_uri against the registered callback URLs, as GitHub does for a
// GitHub App: it must be one of them exactly; empty means the first. ok is false when it is not.
func (o *oauthState) redirectFor(uri string) (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case len(o.callbacks) == 0:
		return uri, uri != ""
	case uri == "":
		return o.callbacks[0], true
	}
	return uri, slices.Contains(o.callbacks, uri)
}

func (o *oauthState) firstCallback() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.callbacks) == 0 {
		return ""
	}
	return o.callbacks[0]
}

// next draws a token-like string, deterministic for a simulator's RandomSeed.
func (o *oauthState) next(tag byte, n int) string {
	o.n++
	s := derive(o.seed, o.n, tag)
	for len(s) < n {
		o.n++
		s += derive(o.seed, o.n, tag)
	}
	return s[:n]
}

var authorizeTmpl = template.Must(template.New("authorize").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>Authorize {{.App}}</title></head>
<body><main>
<h1>Authorize {{.App}}</h1>
<p>{{.App}} would like to verify your GitHub identity. Sign in as:</p>
<form method="post" action="/login/oauth/authorize">
<input type="hidden" name="client_id" value="{{.ClientID}}">
<input type="hidden" name="redirect_uri" value="{{.RedirectURI}}">
<input type="hidden" name="state" value="{{.State}}">
{{range .Users}}<p><button type="submit" name="login" value="{{.}}" id="login-{{.}}">Authorize as {{.}}</button></p>
{{end}}<p><button type="submit" name="cancel" value="1" id="cancel">Cancel</button></p>
</form>
</main></body></html>
`))

// authorizePage is GET /login/oauth/authorize: the App's consent page.
func (s *Server) authorizePage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("client_id") != s.oauth.clientID {
		http.Error(w, "Not Found", http.StatusNotFound) // GitHub's 404 page for an unknown client
		return
	}
	redirect, ok := s.oauth.redirectFor(q.Get("redirect_uri"))
	if !ok {
		s.redirectMismatch(w, r, q.Get("state"))
		return
	}
	s.w.mu.RLock()
	data := struct {
		App, ClientID, RedirectURI, State string
		Users                             []string
	}{App: s.w.app.name, ClientID: s.oauth.clientID, RedirectURI: redirect, State: q.Get("state")}
	for _, u := range s.w.users {
		data.Users = append(data.Users, u.login)
	}
	s.w.mu.RUnlock()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = authorizeTmpl.Execute(w, data)
}

// redirectMismatch answers an authorize request whose redirect_uri is not registered: GitHub
// sends the browser to the first callback URL with error=redirect_uri_mismatch.
func (s *Server) redirectMismatch(w http.ResponseWriter, r *http.Request, state string) {
	first := s.oauth.firstCallback()
	if first == "" {
		http.Error(w, "The redirect_uri MUST match the registered callback URL for this application.", http.StatusBadRequest)
		return
	}
	redirectWith(w, r, first, url.Values{"error": {"redirect_uri_mismatch"},
		"error_description": {"The redirect_uri MUST match the registered callback URL for this application."},
		"error_uri":         {oauthErrorDocs + "#redirect-uri-mismatch"}}, state)
}

func redirectWith(w http.ResponseWriter, r *http.Request, to string, params url.Values, state string) {
	u, err := url.Parse(to)
	if err != nil {
		http.Error(w, "bad redirect_uri", http.StatusBadRequest)
		return
	}
	q := u.Query()
	for k, vs := range params {
		q[k] = vs
	}
	if state != "" {
		q.Set("state", state)
	}
	u.RawQuery = q.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

// authorize is the consent form's submission: a code for the chosen user, or access_denied.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	if r.PostForm.Get("client_id") != s.oauth.clientID {
		http.Error(w, "Not Found", http.StatusNotFound)
		return
	}
	state := r.PostForm.Get("state")
	redirect, ok := s.oauth.redirectFor(r.PostForm.Get("redirect_uri"))
	if !ok {
		s.redirectMismatch(w, r, state)
		return
	}
	if r.PostForm.Get("cancel") != "" {
		redirectWith(w, r, redirect, url.Values{"error": {"access_denied"},
			"error_description": {"The user has denied your application access."},
			"error_uri":         {oauthErrorDocs + "#access-denied"}}, state)
		return
	}
	login := r.PostForm.Get("login")
	s.w.mu.RLock()
	u := s.w.byLogin[login]
	s.w.mu.RUnlock()
	if u == nil || u.typ != "User" {
		http.Error(w, fmt.Sprintf("no user %q", login), http.StatusUnprocessableEntity)
		return
	}
	s.oauth.mu.Lock()
	code := s.oauth.next('o', 20)
	s.oauth.codes[code] = oauthCode{login: u.login, redirectURI: redirect, expires: s.now().Add(oauthCodeTTL)}
	s.oauth.mu.Unlock()
	redirectWith(w, r, redirect, url.Values{"code": {code}}, state)
}

// accessToken is POST /login/oauth/access_token. Like GitHub it takes the parameters as a form
// or query (client credentials may also come as HTTP Basic auth), answers form-encoded unless
// the client accepts JSON, and answers its errors with 200 and an error field.
func (s *Server) accessToken(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	id, secret := r.Form.Get("client_id"), r.Form.Get("client_secret")
	if u, p, ok := r.BasicAuth(); ok && id == "" {
		id, secret = u, p
	}
	jsonOut := strings.Contains(r.Header.Get("Accept"), "application/json")
	fail := func(code, desc, anchor string) {
		writeOAuth(w, jsonOut, map[string]any{"error": code, "error_description": desc, "error_uri": oauthErrorDocs + "#" + anchor})
	}
	if id != s.oauth.clientID || secret != s.oauth.clientSecret {
		fail("incorrect_client_credentials", "The client_id and/or client_secret passed are incorrect.", "incorrect-client-credentials")
		return
	}
	if gt := r.Form.Get("grant_type"); gt != "" && gt != "authorization_code" {
		fail("unsupported_grant_type", "The grant type is not supported.", "unsupported-grant-type")
		return
	}
	now := s.now()
	s.oauth.mu.Lock()
	c, ok := s.oauth.codes[r.Form.Get("code")]
	if ok && !now.Before(c.expires) {
		delete(s.oauth.codes, r.Form.Get("code"))
		ok = false
	}
	if !ok {
		s.oauth.mu.Unlock()
		fail("bad_verification_code", "The code passed is incorrect or expired.", "bad-verification-code")
		return
	}
	if ru := r.Form.Get("redirect_uri"); ru != "" && ru != c.redirectURI {
		s.oauth.mu.Unlock()
		fail("redirect_uri_mismatch", "The redirect_uri MUST match the registered callback URL for this application.", "redirect-uri-mismatch2")
		return
	}
	delete(s.oauth.codes, r.Form.Get("code")) // a code is exchanged once
	tok := "ghu_" + s.oauth.next('u', 36)
	refresh := "ghr_" + s.oauth.next('r', 76)
	s.oauth.tokens[tok] = userGrant{login: c.login, expires: now.Add(userTokenTTL)}
	s.oauth.mu.Unlock()
	writeOAuth(w, jsonOut, map[string]any{"access_token": tok, "expires_in": int(userTokenTTL.Seconds()),
		"refresh_token": refresh, "refresh_token_expires_in": int(refreshTokenTTL.Seconds()), "scope": "", "token_type": "bearer"})
}

func writeOAuth(w http.ResponseWriter, jsonOut bool, v map[string]any) {
	if jsonOut {
		writeJSON(w, http.StatusOK, v)
		return
	}
	q := url.Values{}
	for k, x := range v {
		q.Set(k, fmt.Sprint(x))
	}
	w.Header().Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	_, _ = w.Write([]byte(q.Encode()))
}

// getAuthenticatedUser is GET /user: the user a user access token (or a seeded token) acts for.
func (s *Server) getAuthenticatedUser(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	if p.kind != userToken {
		writeError(w, http.StatusForbidden, "Resource not accessible by integration")
		return
	}
	s.w.mu.RLock()
	out := s.w.userJSON(p.actor)
	s.w.mu.RUnlock()
	out["name"], out["email"], out["company"], out["blog"], out["location"], out["bio"] = nil, nil, nil, "", nil, nil
	out["created_at"], out["updated_at"] = ts(seedEpoch), ts(seedEpoch)
	writeJSON(w, http.StatusOK, out)
}

// checkMembership is GET /orgs/{org}/members/{username}: 204 for a member, 404 for anyone
// else (or an organization ghsim does not know); 302 to the public-membership check when the
// requester is a user outside the organization, or another organization's installation. An
// installation needs the Members permission (read).
func (s *Server) checkMembership(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	org, login := r.PathValue("org"), r.PathValue("username")
	s.w.mu.RLock()
	o := s.w.orgNamed(org)
	member := func(l string) bool { return o != nil && memberRole(o, l) != OrgRoleNone }
	outsider := (p.kind == userToken && !member(p.actor.login)) || (p.kind == installationToken && p.inst.org != o)
	isMember := member(login)
	s.w.mu.RUnlock()
	switch {
	case p.kind == installationToken && !p.inst.can("members", "read"):
		writeError(w, http.StatusForbidden, "Resource not accessible by integration")
		return
	case o == nil:
		writeError(w, http.StatusNotFound, "Not Found")
		return
	case outsider:
		w.Header().Set("Location", fmt.Sprintf("%s/api/v3/orgs/%s/public_members/%s", s.baseURL(r), o.login, url.PathEscape(login)))
		w.WriteHeader(http.StatusFound)
		return
	case !isMember:
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "User does not exist or is not a member of the organization",
			"documentation_url": "https://docs.github.com/rest/orgs/members#check-organization-membership-for-a-user", "status": "404"})
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// memberRole is a seeded user's role in an organization (OrgRoleNone for anyone else).
func memberRole(o *organization, login string) string {
	for l, role := range o.members {
		if strings.EqualFold(l, login) {
			return role
		}
	}
	return OrgRoleNone
}

func (s *Server) baseURL(r *http.Request) string {
	s.w.mu.RLock()
	b := s.w.baseURL
	s.w.mu.RUnlock()
	if b == "" {
		b = "http://" + r.Host
	}
	return b
}
