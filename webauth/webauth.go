// Package webauth signs people in to the board health pages (/ui/) with GitHub: the App's
// OAuth web flow (go-githubapp's oauth2 handler, as policy-bot uses it), a session in a signed
// cookie, and access only for members of the organizations that own the enforced projects.
//
// A signed-out visitor is sent to /ui/login; a signed-in person who belongs to none of those
// organizations gets 403. Neither reaches the pages. One who belongs to some of them gets in,
// and the pages learn which (Scope): they show that person those organizations' projects only.
// No GitHub token is kept: the user's token serves once, to learn who signed in, and
// membership is asked with the App's installation token.
package webauth

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/palantir/go-githubapp/githubapp"
	ghoauth "github.com/palantir/go-githubapp/oauth2"
	"github.com/rs/zerolog"
	"golang.org/x/oauth2"
)

// Routes the sign-in serves under /ui/.
const (
	LoginPath    = "/ui/login"
	CallbackPath = "/ui/oauth/callback"
	LogoutPath   = "/ui/logout"
	// CSRFField is the logout form's field holding CSRFToken(r).
	CSRFField = "csrf_token"
)

// Defaults of Options.
const (
	// DefaultSessionTTL matches the lifetime of a GitHub App's user access token.
	DefaultSessionTTL     = 8 * time.Hour
	DefaultMemberCacheTTL = 5 * time.Minute
	DefaultMemberCacheMax = 1024
	// stateTTL bounds a sign-in under way, as GitHub's codes live ten minutes.
	stateTTL = 10 * time.Minute
)

// Options configure the sign-in.
type Options struct {
	// GitHub is go-githubapp's configuration: WebURL (the OAuth endpoints), V3APIURL (GET
	// /user) and OAuth (the App's client id and secret).
	GitHub githubapp.Config
	// PublicURL is where people open ralph-gate (server.public_url); the callback is
	// PublicURL + CallbackPath, and cookies are Secure when it is https.
	PublicURL string
	// SessionKey signs the cookies (at least 32 bytes; config checks it).
	SessionKey []byte
	// Orgs are the organizations served: a viewer who belongs to at least one of them gets in,
	// and sees the projects of those they belong to (Scope).
	Orgs []string
	// OrgsNow, when set, gives them as they are at each check instead (the organizations whose
	// own policies are in force: they change with installs); none: nobody gets in.
	OrgsNow func() []string
	// Members answers membership; NewInstallationMembers in production.
	Members Members
	// SessionTTL, MemberCacheTTL and MemberCacheMax default to the constants above.
	SessionTTL     time.Duration
	MemberCacheTTL time.Duration
	MemberCacheMax int
	// HTTPClient calls GitHub for the token exchange and GET /user (default: 10 s timeout).
	HTTPClient *http.Client
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
	// Revocations, when set, keeps the sessions signed out: a cookie copied before its
	// session signed out is refused by every replica (store.Store implements it). Without
	// it, signing out clears the cookie only.
	Revocations Revocations
}

// Revocations keeps signed-out sessions until they would have expired.
type Revocations interface {
	RevokeSession(ctx context.Context, id string, until time.Time) error
	SessionRevoked(ctx context.Context, id string) (bool, error)
}

// Auth guards the pages.
type Auth struct {
	opts    Options
	cookies cookies
	cache   *memberCache
	oauth   http.Handler
	client  *http.Client
}

// New checks the options and prepares the OAuth handler.
func New(opts Options) (*Auth, error) {
	base := strings.TrimSuffix(opts.PublicURL, "/")
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("webauth: the public URL must be an absolute http(s) URL, got %q", opts.PublicURL)
	}
	switch {
	case len(opts.SessionKey) < 32:
		return nil, errors.New("webauth: the session key must be at least 32 bytes")
	case len(opts.Orgs) == 0 && opts.OrgsNow == nil:
		return nil, errors.New("webauth: no organization to check membership of")
	case opts.Members == nil:
		return nil, errors.New("webauth: no membership check")
	case opts.GitHub.OAuth.ClientID == "" || opts.GitHub.OAuth.ClientSecret == "":
		return nil, errors.New("webauth: the App's OAuth client id and secret are required")
	}
	if opts.SessionTTL <= 0 {
		opts.SessionTTL = DefaultSessionTTL
	}
	if opts.MemberCacheTTL <= 0 {
		opts.MemberCacheTTL = DefaultMemberCacheTTL
	}
	if opts.MemberCacheMax <= 0 {
		opts.MemberCacheMax = DefaultMemberCacheMax
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	a := &Auth{opts: opts, client: opts.HTTPClient,
		cookies: cookies{signer: newSigner(opts.SessionKey), secure: u.Scheme == "https", ttl: opts.SessionTTL, now: opts.Now},
		cache:   newMemberCache(opts.MemberCacheTTL, opts.MemberCacheMax, opts.Now)}
	a.oauth = ghoauth.NewHandler(ghoauth.GetConfig(opts.GitHub, nil),
		ghoauth.WithRedirectURL(base+CallbackPath),
		ghoauth.WithStore(stateStore{a}),
		ghoauth.OnLogin(a.onLogin),
		ghoauth.OnError(a.onError),
	)
	return a, nil
}

type ctxKey int

const ctxViewer ctxKey = iota

type viewer struct {
	login, csrf string
	// orgs are the organizations served that the viewer belongs to; all says they belong to
	// every one.
	orgs []string
	all  bool
}

// Viewer is the login of the person a page is served to ("" outside Wrap).
func Viewer(r *http.Request) string {
	v, _ := r.Context().Value(ctxViewer).(viewer)
	return v.login
}

// Scope is what the person a page is served to may see: the organizations served that they
// belong to, and whether that is every one of them (then also what belongs to no single
// organization, such as the service's own queue). Outside Wrap: none.
func Scope(r *http.Request) (orgs []string, all bool) {
	v, _ := r.Context().Value(ctxViewer).(viewer)
	return slices.Clone(v.orgs), v.all
}

// CSRFToken is the token the logout form posts as CSRFField ("" outside Wrap).
func CSRFToken(r *http.Request) string {
	v, _ := r.Context().Value(ctxViewer).(viewer)
	return v.csrf
}

// Wrap serves the sign-in routes and lets through to pages only members who are signed in.
func (a *Auth) Wrap(pages http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+LoginPath, a.login)
	mux.HandleFunc("GET "+CallbackPath, a.callback)
	mux.HandleFunc("POST "+LogoutPath, a.logout)
	mux.HandleFunc(LogoutPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "sign out with POST", http.StatusMethodNotAllowed)
	})
	mux.Handle("/ui/", a.guard(pages))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Nothing under /ui/ is for a shared cache: every answer depends on who asks.
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Referrer-Policy", "same-origin")
		mux.ServeHTTP(w, r)
	})
}

// guard admits signed-in members only.
func (a *Auth) guard(pages http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sess, ok, err := a.signedIn(r)
		if err != nil {
			zerolog.Ctx(r.Context()).Warn().Err(err).Msg("ui: cannot tell whether a session was signed out")
			a.page(w, http.StatusServiceUnavailable, pageSessionUnknown)
			return
		}
		if !ok {
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				http.Redirect(w, r, LoginPath+"?"+url.Values{"next": {r.URL.RequestURI()}}.Encode(), http.StatusSeeOther)
				return
			}
			a.page(w, http.StatusUnauthorized, pageSignedOut)
			return
		}
		orgs, all, err := a.memberships(r.Context(), sess.Login)
		if err != nil {
			logger := zerolog.Ctx(r.Context())
			if len(orgs) == 0 {
				logger.Warn().Err(err).Str("login", sess.Login).Msg("ui: cannot check organization membership")
				a.page(w, http.StatusServiceUnavailable, pageUnavailable)
				return
			}
			// What is known lets them in to their organizations' pages; the others' are not shown.
			logger.Warn().Err(err).Str("login", sess.Login).Strs("orgs", orgs).
				Msg("ui: cannot check membership of every organization: shown the organizations known")
		}
		v := viewer{login: sess.Login, csrf: a.cookies.signer.csrfToken(sess), orgs: orgs, all: all}
		if len(orgs) == 0 {
			a.denied(w, r.WithContext(context.WithValue(r.Context(), ctxViewer, v)))
			return
		}
		pages.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxViewer, v)))
	})
}

// signedIn is the request's session when its cookie holds one that was not signed out; err
// when the store cannot tell.
func (a *Auth) signedIn(r *http.Request) (session, bool, error) {
	sess, ok := a.cookies.session(r)
	if !ok || a.opts.Revocations == nil {
		return sess, ok, nil
	}
	revoked, err := a.opts.Revocations.SessionRevoked(r.Context(), sess.ID)
	if err != nil {
		return session{}, false, err
	}
	return sess, !revoked, nil
}

// memberships are the organizations served that login belongs to, and whether that is every
// one of them. Each answer is remembered per person and organization, so that one more
// organization served asks about that one only. An organization whose answer cannot be had
// is left out (not remembered: the next view asks again) and err says why; all is then false.
func (a *Auth) memberships(ctx context.Context, login string) (orgs []string, all bool, err error) {
	served := a.opts.Orgs
	if a.opts.OrgsNow != nil {
		served = a.opts.OrgsNow() // none: nobody (an organization may install the App any moment)
	}
	var errs []error
	for _, org := range served {
		key := login + "\x00" + org
		member, ok := a.cache.get(key)
		if !ok {
			m, err := a.opts.Members.IsMember(ctx, org, login)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			a.cache.put(key, m)
			member = m
		}
		if member && !slices.ContainsFunc(orgs, func(o string) bool { return strings.EqualFold(o, org) }) {
			orgs = append(orgs, org)
		}
	}
	return orgs, len(served) > 0 && len(orgs) == len(served) && len(errs) == 0, errors.Join(errs...)
}

// login starts the OAuth flow (or goes straight on when already signed in).
func (a *Auth) login(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.URL.Query().Get("next"))
	if _, ok, _ := a.signedIn(r); ok { // (a store that cannot tell: sign in again)
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	// The handler starts a flow for a request without a code: give it none.
	start := r.Clone(r.Context())
	start.URL.RawQuery = url.Values{"next": {next}}.Encode()
	start.Form = nil
	a.oauth.ServeHTTP(w, start)
}

// callback finishes the flow: GitHub sends the browser back with code and state (or error).
func (a *Auth) callback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("code") == "" && q.Get("error") == "" {
		a.page(w, http.StatusBadRequest, pageBadState)
		return
	}
	a.oauth.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), oauth2.HTTPClient, a.client)))
}

// onLogin learns who signed in (GET /user with their token, used once and dropped) and
// starts the session.
func (a *Auth) onLogin(w http.ResponseWriter, r *http.Request, login *ghoauth.Login) {
	logger := zerolog.Ctx(r.Context())
	next := "/ui/"
	if p, ok := a.pending(r); ok {
		next = p.Next
	}
	a.cookies.clear(w, stateCookie, CallbackPath)
	user, err := a.user(r.Context(), login.Client)
	if err != nil {
		logger.Warn().Err(err).Msg("ui: sign-in: cannot read the GitHub user")
		a.page(w, http.StatusBadGateway, pageGitHubFailed)
		return
	}
	if err := a.cookies.startSession(w, user.Login, user.ID); err != nil {
		logger.Error().Err(err).Msg("ui: sign-in: cannot sign the session")
		a.page(w, http.StatusInternalServerError, pageGitHubFailed)
		return
	}
	logger.Info().Str("login", user.Login).Msg("ui: signed in")
	http.Redirect(w, r, next, http.StatusSeeOther)
}

type githubUser struct {
	Login string `json:"login"`
	ID    int64  `json:"id"`
}

func (a *Auth) user(ctx context.Context, client *http.Client) (githubUser, error) {
	api := a.opts.GitHub.V3APIURL
	if api == "" {
		api = "https://api.github.com/"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(api, "/")+"/user", nil)
	if err != nil {
		return githubUser{}, err
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	res, err := client.Do(req)
	if err != nil {
		return githubUser{}, fmt.Errorf("GET /user: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return githubUser{}, fmt.Errorf("GET /user: %s", res.Status)
	}
	var u githubUser
	if err := json.NewDecoder(http.MaxBytesReader(nil, res.Body, 1<<20)).Decode(&u); err != nil {
		return githubUser{}, fmt.Errorf("GET /user: %w", err)
	}
	if u.Login == "" {
		return githubUser{}, errors.New("GET /user: no login")
	}
	return u, nil
}

// onError answers a flow that did not finish: a bad or missing state, the person declining,
// GitHub refusing the code. The error never holds a token (none was issued).
func (a *Auth) onError(w http.ResponseWriter, r *http.Request, err error) {
	logger := zerolog.Ctx(r.Context())
	var le ghoauth.LoginError
	switch {
	case errors.Is(err, ghoauth.ErrInvalidState):
		logger.Info().Msg("ui: sign-in refused: missing or wrong state")
		a.page(w, http.StatusBadRequest, pageBadState)
	case errors.As(err, &le):
		logger.Info().Str("error", string(le)).Msg("ui: sign-in not completed on GitHub")
		a.page(w, http.StatusForbidden, pageDeclined)
	default:
		logger.Warn().Err(err).Msg("ui: sign-in failed")
		a.page(w, http.StatusBadGateway, pageGitHubFailed)
	}
}

// logout ends the session: POST with the session's CSRF token only.
func (a *Auth) logout(w http.ResponseWriter, r *http.Request) {
	sess, ok := a.cookies.session(r)
	if !ok {
		a.page(w, http.StatusOK, pageSignedOut)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	want := a.cookies.signer.csrfToken(sess)
	if subtle.ConstantTimeCompare([]byte(r.PostFormValue(CSRFField)), []byte(want)) != 1 {
		a.page(w, http.StatusForbidden, pageBadCSRF)
		return
	}
	if a.opts.Revocations != nil {
		// Kept until the cookie would have expired: a copy of it is refused meanwhile.
		if err := a.opts.Revocations.RevokeSession(r.Context(), sess.ID, time.Unix(sess.Expires, 0)); err != nil {
			zerolog.Ctx(r.Context()).Warn().Err(err).Str("login", sess.Login).Msg("ui: cannot sign out: the session could not be revoked")
			a.page(w, http.StatusServiceUnavailable, pageNotSignedOut)
			return
		}
	}
	a.cookies.clear(w, a.cookies.sessionName(), "/")
	zerolog.Ctx(r.Context()).Info().Str("login", sess.Login).Msg("ui: signed out")
	a.page(w, http.StatusOK, pageSignedOut)
}

// denied is the 403 of a signed-in non-member: who they are and a way out, nothing else.
func (a *Auth) denied(w http.ResponseWriter, r *http.Request) {
	zerolog.Ctx(r.Context()).Info().Str("login", Viewer(r)).Msg("ui: refused a non-member")
	a.pageFor(w, http.StatusForbidden, pageDenied, r)
}

// stateStore keeps the OAuth state in a signed, short-lived cookie scoped to the callback.
type stateStore struct{ a *Auth }

func (s stateStore) GenerateState(w http.ResponseWriter, r *http.Request) (string, error) {
	c := s.a.cookies
	p := pending{State: randomHex(20), Next: safeNext(r.URL.Query().Get("next")), Expires: c.now().Add(stateTTL).Unix()}
	v, err := seal(c.signer.state, p)
	if err != nil {
		return "", err
	}
	c.set(w, stateCookie, v, CallbackPath, stateTTL)
	return p.State, nil
}

func (s stateStore) VerifyState(r *http.Request, state string) (bool, error) {
	p, ok := s.a.pending(r)
	if !ok || state == "" {
		return false, nil
	}
	return subtle.ConstantTimeCompare([]byte(state), []byte(p.State)) == 1, nil
}

// pending reads an unexpired, signed state cookie.
func (a *Auth) pending(r *http.Request) (pending, bool) {
	ck, err := r.Cookie(stateCookie)
	if err != nil {
		return pending{}, false
	}
	var p pending
	if unseal(a.cookies.signer.state, ck.Value, &p) != nil || p.State == "" || a.cookies.now().Unix() >= p.Expires {
		return pending{}, false
	}
	return p, true
}

// safeNext keeps a return path only when it is a page of ours: /ui/…, no scheme, no host, no
// dot segments or control characters; anything else is /ui/.
func safeNext(next string) string {
	u, err := url.Parse(next)
	if err != nil || next == "" || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" ||
		strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\") || strings.ContainsFunc(u.Path, unicode.IsControl) {
		return "/ui/"
	}
	clean := path.Clean(u.Path)
	if strings.HasSuffix(u.Path, "/") && clean != "/" {
		clean += "/"
	}
	if clean != u.Path || !strings.HasPrefix(clean, "/ui/") {
		return "/ui/"
	}
	for _, own := range []string{LoginPath, CallbackPath, LogoutPath} {
		if strings.HasPrefix(clean, own) {
			return "/ui/"
		}
	}
	return u.RequestURI()
}
