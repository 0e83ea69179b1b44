package webauth

import (
	"html/template"
	"net/http"
)

// The sign-in's own pages: small, self-contained, and without any board data.
type pageKind int

const (
	pageSignedOut pageKind = iota
	pageDenied
	pageBadState
	pageDeclined
	pageGitHubFailed
	pageUnavailable
	pageBadCSRF
	pageSessionUnknown
	pageNotSignedOut
)

var pageText = map[pageKind]struct{ title, body string }{
	pageSignedOut:      {"Signed out", "You are signed out of ralph-gate."},
	pageDenied:         {"Not a member", "The board health pages are for members of the organizations whose boards ralph-gate enforces."},
	pageBadState:       {"Sign-in expired", "This sign-in was not started here or took too long. Start again."},
	pageDeclined:       {"Sign-in not completed", "GitHub did not complete the sign-in."},
	pageGitHubFailed:   {"Sign-in failed", "GitHub could not confirm who you are. Try again in a moment."},
	pageUnavailable:    {"Membership unknown", "ralph-gate cannot reach GitHub to check your organization membership. Try again in a moment."},
	pageBadCSRF:        {"Sign-out refused", "The sign-out form was not sent from this page. Sign out from a page of ralph-gate."},
	pageSessionUnknown: {"Session unknown", "ralph-gate cannot reach its database to check your session. Try again in a moment."},
	pageNotSignedOut:   {"Not signed out", "ralph-gate could not record your sign-out in its database, so your session is still open. Try again in a moment."},
}

var pageTmpl = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} · ralph-gate</title>
<style>body{font-family:system-ui,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem;line-height:1.5;color:#1f2328}
a,button{font:inherit}button{padding:.4rem .9rem;cursor:pointer}</style></head>
<body><main>
<h1>{{.Title}}</h1>
<p>{{.Body}}</p>
{{if .Viewer}}<p>Signed in as <strong id="viewer">{{.Viewer}}</strong>.</p>
<form method="post" action="{{.LogoutPath}}"><input type="hidden" name="{{.CSRFField}}" value="{{.CSRF}}"><button type="submit">Sign out</button></form>
{{else}}<p><a href="{{.LoginPath}}" id="sign-in">Sign in with GitHub</a></p>{{end}}
</main></body></html>
`))

func (a *Auth) page(w http.ResponseWriter, status int, kind pageKind) {
	a.render(w, status, kind, viewer{})
}

func (a *Auth) pageFor(w http.ResponseWriter, status int, kind pageKind, r *http.Request) {
	a.render(w, status, kind, viewer{login: Viewer(r), csrf: CSRFToken(r)})
}

func (a *Auth) render(w http.ResponseWriter, status int, kind pageKind, v viewer) {
	t := pageText[kind]
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = pageTmpl.Execute(w, struct {
		Title, Body, Viewer, CSRF, CSRFField, LoginPath, LogoutPath string
	}{t.title, t.body, v.login, v.csrf, CSRFField, LoginPath, LogoutPath})
}
