// Package web is the board health UI: server-rendered HTML pages of each enforced project's
// health (health.Report) and of the decisions in the audit log, with no script and nothing
// loaded from another origin.
//
// Mounting: the handler serves paths relative to its mount point and is mounted with the
// prefix stripped, under the path given as Options.BasePath ("/ui" by default), which it uses
// to build every link:
//
//	mux.Handle("/ui/", http.StripPrefix("/ui", h))
//
// It then answers "/" (the projects), "/projects/{owner}/{number}" (a board),
// "/decisions" (the audit log), "/decisions/{id}" (one decision) and "/static/style.css".
// Signing in is not its business: the layer in front of it says who is signed in
// (Options.Viewer) and which organizations' projects they may see (Options.Scope; scope.go),
// and checks the CSRF token of the sign-out form that posts to BasePath+"/logout"
// (Options.CSRFToken).
package web

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/health"
	"github.com/ralph-gate/ralph-gate/policy"
	"github.com/ralph-gate/ralph-gate/store"
)

//go:embed templates/*.html static/style.css
var assets embed.FS

// Reports computes the health of every enforced project.
type Reports interface {
	Report(ctx context.Context, now time.Time) (health.Report, error)
}

// Decisions reads the audit log. GetAudit and GetObservation return an error wrapping
// enforce.ErrNotFound for what does not exist. *store.Store implements it.
type Decisions interface {
	ListAudit(ctx context.Context, q store.AuditQuery) (store.AuditPage, error)
	GetAudit(ctx context.Context, id int64) (enforce.AuditEntry, error)
	// GetObservation is the judged report behind a decision, for its Recovery text.
	GetObservation(ctx context.Context, deliveryID string) (enforce.Observation, error)
}

// Options configure the pages. Reports, Decisions and Machine are required.
type Options struct {
	Reports   Reports
	Decisions Decisions
	// Machine is the workflow, drawn on the board and decision pages.
	Machine *policy.Machine
	// BasePath is where the handler is mounted, without a trailing slash ("/ui" when empty).
	BasePath string
	// WebURL is GitHub's web address, for issue links an item does not carry itself
	// ("https://github.com" when empty).
	WebURL string
	// Viewer is the login signed in for a request ("" shows no sign-in line).
	Viewer func(*http.Request) string
	// Scope is what the request's viewer may see (nil: everything): a viewer who does not
	// belong to every organization served sees the projects of those they belong to, the
	// decisions on them and their agents' use of the façade, and nothing else (scope.go).
	Scope func(*http.Request) Scope
	// Facade is the façade's use by the agents that work for some organizations (nil: none is
	// shown to a viewer who does not see every organization).
	Facade func(ctx context.Context, now time.Time, orgs []string) (health.Facade, error)
	// CSRFToken is the token the sign-out form posts, in the field CSRFField ("csrf_token"
	// when empty).
	CSRFToken func(*http.Request) string
	CSRFField string
	// ListLimit bounds the rows of each list of a board page ("and N more" follows, and
	// ?all=1 shows them all); 200 when zero.
	ListLimit int
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Security headers of every answer. The pages need no script, no frame and nothing from
// another origin: the policy allows only the style sheet and images of this origin.
const contentSecurityPolicy = "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'"

type handler struct {
	o       Options
	scan    scanBounds // how a viewer's decisions are read (scope.go)
	mux     *http.ServeMux
	pages   map[string]*template.Template
	css     []byte
	cssPath string // with a content hash, so that it may be cached
}

// New returns the pages' handler (see the package comment for how to mount it).
func New(o Options) (http.Handler, error) {
	if o.Reports == nil || o.Decisions == nil || o.Machine == nil {
		return nil, errors.New("web: Reports, Decisions and Machine are required")
	}
	o.BasePath = strings.TrimRight(o.BasePath, "/")
	if o.BasePath == "" {
		o.BasePath = "/ui"
	}
	if !strings.HasPrefix(o.BasePath, "/") {
		return nil, fmt.Errorf("web: base path %q must start with a slash", o.BasePath)
	}
	o.WebURL = strings.TrimRight(o.WebURL, "/")
	if o.WebURL == "" {
		o.WebURL = "https://github.com"
	}
	if o.CSRFField == "" {
		o.CSRFField = "csrf_token"
	}
	if o.ListLimit <= 0 {
		o.ListLimit = 200
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	h := &handler{o: o, scan: scanBounds{read: store.MaxAuditPage, budget: maxScanned}, mux: http.NewServeMux(), pages: map[string]*template.Template{}}
	css, err := fs.ReadFile(assets, "static/style.css")
	if err != nil {
		return nil, fmt.Errorf("web: %w", err)
	}
	sum := sha256.Sum256(css)
	h.css, h.cssPath = css, o.BasePath+"/static/style.css?v="+hex.EncodeToString(sum[:6])
	for _, name := range []string{"index", "board", "decisions", "decision", "error"} {
		t, err := template.New(name).Funcs(h.funcs()).ParseFS(assets, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("web: parse %s: %w", name, err)
		}
		h.pages[name] = t
	}
	h.mux.HandleFunc("GET /{$}", h.index)
	h.mux.HandleFunc("GET /projects/{owner}/{number}", h.board)
	h.mux.HandleFunc("GET /decisions", h.decisions)
	h.mux.HandleFunc("GET /decisions/{id}", h.decision)
	h.mux.HandleFunc("GET /decisions/by-delivery/{delivery}", h.byDelivery)
	h.mux.HandleFunc("GET /static/style.css", h.style)
	h.mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		h.fail(w, r, http.StatusNotFound, "There is no page at this address.")
	})
	return h, nil
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", contentSecurityPolicy)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "same-origin")
	hd.Set("X-Frame-Options", "DENY")
	h.mux.ServeHTTP(w, r)
}

func (h *handler) style(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	w.Header().Set("Cache-Control", "private, max-age=86400")
	_, _ = w.Write(h.css)
}

// view is what every page template gets.
type view struct {
	Title     string
	Base      string
	CSS       string
	Viewer    string
	CSRF      string
	CSRFField string
	Nav       string // the navigation entry of this page
	Now       time.Time
	Status    int
	Problem   string // what went wrong (4xx, 5xx)
	Data      any
}

func (h *handler) view(r *http.Request, title, nav string, data any) view {
	v := view{Title: title, Base: h.o.BasePath, CSS: h.cssPath, CSRFField: h.o.CSRFField, Nav: nav,
		Now: h.o.Now().UTC(), Status: http.StatusOK, Data: data}
	if h.o.Viewer != nil {
		v.Viewer = h.o.Viewer(r)
	}
	if v.Viewer != "" && h.o.CSRFToken != nil {
		v.CSRF = h.o.CSRFToken(r)
	}
	return v
}

// render writes a page whole, or a plain 500 if its template fails (nothing is sent before).
func (h *handler) render(w http.ResponseWriter, r *http.Request, page string, v view) {
	var buf bytes.Buffer
	if err := h.pages[page].ExecuteTemplate(&buf, "layout", v); err != nil {
		zerolog.Ctx(r.Context()).Error().Err(err).Str("page", page).Msg("rendering a page failed")
		w.Header().Set("Cache-Control", "no-store")
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(v.Status)
	_, _ = w.Write(buf.Bytes())
}

// fail answers an error page with a message a person can act on.
func (h *handler) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	v := h.view(r, http.StatusText(status), "", nil)
	v.Status, v.Problem = status, msg
	h.render(w, r, "error", v)
}

// internal logs err and answers 500 without telling its details.
func (h *handler) internal(w http.ResponseWriter, r *http.Request, what string, err error) {
	zerolog.Ctx(r.Context()).Error().Err(err).Str("path", r.URL.Path).Msg(what)
	h.fail(w, r, http.StatusInternalServerError, "Something went wrong on our side ("+what+"); the service log has the details.")
}

// index lists the enforced projects the viewer sees, or goes straight to the only one.
func (h *handler) index(w http.ResponseWriter, r *http.Request) {
	rep, _, err := h.report(r)
	if err != nil {
		h.internal(w, r, "reading the board health failed", err)
		return
	}
	if len(rep.Projects) == 1 {
		p := rep.Projects[0]
		http.Redirect(w, r, h.projectPath(p.Owner, p.Number), http.StatusSeeOther)
		return
	}
	h.render(w, r, "index", h.view(r, "Projects", "projects", rep))
}

// projectPath is a board page's address.
func (h *handler) projectPath(owner string, number int) string {
	return fmt.Sprintf("%s/projects/%s/%d", h.o.BasePath, pathEscape(owner), number)
}
