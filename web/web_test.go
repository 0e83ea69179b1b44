package web

import (
	"context"
	"encoding/xml"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/health"
	"github.com/ralph-gate/ralph-gate/policy"
)

func TestPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t, boardReport(), Options{})
	ids := e.ids
	tests := []struct {
		name    string
		path    string
		status  int
		want    []string
		notWant []string
	}{
		{"board: counts, WIP and runtime", "/ui/projects/acme/1", http.StatusOK, []string{
			`<h1>acme/1</h1>`, `50 items.`,
			`data-state="Backlog"`, `>12</text>`, `>4/3</text>`, // the diagram's counts, a state over its limit
			`<tr class="over"><td data-label="State">In Progress</td>`,
			`3 jobs waiting`, `4321 of 5000 left`, `2026-03-14 15:05:26 UTC (4m 0s ago)`, `(30s ago)`,
		}, nil},
		{"board: locks, stale and expired marked", "/ui/projects/acme/1", http.StatusOK, []string{
			`<tr class="stale"><td data-label="Item"><a href="https://github.com/acme/web/issues/7">acme/web#7</a>`,
			`<td data-label="Holder" class="holder">agent-research-7</td>`, `2d 2h <strong class="warn">stale</strong> <strong class="warn" title="held longer than workflow.locks.ttl: another agent of a role that owns the state may take it over">expired</strong>`,
			`<td data-label="Holder" class="holder">agent-impl-2</td>`,
			`<strong class="warn">1 stale</strong>`,
		}, nil},
		{"board: human needed with ages, the item's own URL", "/ui/projects/acme/1", http.StatusOK, []string{
			`acme/web#3</a> <span class="title">Decide the schema</span>`, `3d 0h <strong class="warn">long</strong>`,
			`<a href="https://github.example/acme/web/issues/4">acme/web#4</a>`, `2h 0m`,
		}, nil},
		{"board: no state, unblocked, hygiene", "/ui/projects/acme/1", http.StatusOK, []string{
			`acme/web#9</a>`, `acme/web#5</a> <span class="title">Waiting for nobody</span> <span class="muted">in Ready for Plan</span>`,
			`stale lock`, `over WIP limit`, `In Progress holds 4 items, its limit is 3`, `give it a Workflow State`,
		}, nil},
		{"board: a hostile title is escaped, its bidi controls dropped", "/ui/projects/acme/1", http.StatusOK,
			[]string{`&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; friends</span>`},
			[]string{`<script`, "\u202e", "\u2066"}},
		{"board: owner in any case", "/ui/projects/ACME/1", http.StatusOK, []string{`<h1>acme/1</h1>`}, nil},
		{"board: unknown project", "/ui/projects/acme/2", http.StatusNotFound, []string{`acme/2 is not an enforced project.`}, nil},
		{"board: bad number", "/ui/projects/acme/one", http.StatusBadRequest, []string{`The project number &#34;one&#34; is not a positive whole number.`}, nil},
		{"board: bad all", "/ui/projects/acme/1?all=yes", http.StatusBadRequest, []string{`all=&#34;yes&#34;: use all=1`}, nil},
		{"board: unknown parameter", "/ui/projects/acme/1?page=2", http.StatusBadRequest, []string{`Unknown parameter &#34;page&#34;`}, nil},
		{"decision: the move, verdict, rule, reason, recovery", "/ui/decisions/" + itoa(ids[1]), http.StatusOK, []string{
			`<strong>Backlog</strong> → <strong>In Progress</strong>`, `agent-1 <span class="muted">(agent)</span>`,
			`2026-03-14 11:09:26 UTC`, `<code>d-1</code>`, `<code>transition</code>`,
			`Backlog → In Progress is not a transition of the workflow &lt;b&gt;`,
			`move it to Research Needed first &lt;i&gt;then&lt;/i&gt; retry`,
			`<a href="https://github.com/acme/web/issues/12">acme/web#12</a>`,
			`<a href="/ui/decisions?issue=acme%2Fweb%2312">its decisions</a>`,
			`agent actors these moves: <strong>Research Needed</strong>, <strong>Ready for Plan</strong>, <strong>Human Needed</strong>, <strong>Done</strong>, <strong>Canceled</strong>.`,
		}, []string{`<i>then`, `<b>`}},
		{"decision: automated, with its cause and no recovery", "/ui/decisions/" + itoa(ids[2]), http.StatusOK,
			[]string{`cascade: parent #12 moved`, `none (the app's own move, or an adoption)`}, []string{`<dt>Recovery</dt>`}},
		// An agent's text shows without bidi overrides, isolates or control characters, as
		// comments show it.
		{"decision: an agent's reason is shown inert", "/ui/decisions/" + itoa(ids[4]), http.StatusOK,
			[]string{`claimed: txt.exe [31mnow`}, []string{"\u202e", "\u2066", "\x1b", "\x00"}},
		{"decision: unknown id", "/ui/decisions/999999", http.StatusNotFound, []string{`There is no decision 999999 in the audit log.`}, nil},
		{"decision: bad id", "/ui/decisions/abc", http.StatusBadRequest, []string{`The decision id &#34;abc&#34; is not a positive whole number.`}, nil},
		{"decision: id zero", "/ui/decisions/0", http.StatusBadRequest, []string{`is not a positive whole number`}, nil},
		{"unknown page", "/ui/nowhere", http.StatusNotFound, []string{`There is no page at this address.`}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := e.get(t, tt.path)
			if res.status != tt.status {
				t.Errorf("GET %s: status %d, want %d\n%s", tt.path, res.status, tt.status, res.body)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.body, w) {
					t.Errorf("GET %s: the page lacks %q", tt.path, w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(res.body, w) {
					t.Errorf("GET %s: the page contains %q", tt.path, w)
				}
			}
			if ct := res.header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
				t.Errorf("GET %s: Content-Type %q", tt.path, ct)
			}
			if cc := res.header.Get("Cache-Control"); cc != "no-store" {
				t.Errorf("GET %s: Cache-Control %q, want no-store", tt.path, cc)
			}
		})
	}
}

func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	e := newEnv(t, boardReport(), Options{})
	for _, path := range []string{"/ui/", "/ui/projects/acme/1", "/ui/decisions", "/ui/decisions/1", "/ui/decisions?since=yesterday",
		"/ui/nowhere", "/ui/static/style.css"} {
		res := e.get(t, path)
		want := map[string]string{
			"Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'",
			"X-Content-Type-Options":  "nosniff",
			"Referrer-Policy":         "same-origin",
		}
		for k, v := range want {
			if got := res.header.Get(k); got != v {
				t.Errorf("GET %s: %s = %q, want %q", path, k, got, v)
			}
		}
		if strings.Contains(res.body, "<script") || strings.Contains(res.body, " style=") || strings.Contains(res.body, "<style") {
			t.Errorf("GET %s: the page has a script or an inline style, which the policy forbids", path)
		}
	}
}

func TestStyleSheet(t *testing.T) {
	t.Parallel()
	e := newEnv(t, boardReport(), Options{})
	page := e.get(t, "/ui/decisions")
	href := regexpFind(t, page.body, `<link rel="stylesheet" href="([^"]+)">`)
	if !strings.HasPrefix(href, "/ui/static/style.css?v=") {
		t.Fatalf("style sheet link %q", href)
	}
	res := e.get(t, href)
	if res.status != http.StatusOK || res.header.Get("Content-Type") != "text/css; charset=utf-8" || !strings.Contains(res.body, "@media (max-width: 700px)") {
		t.Errorf("GET %s: %d %q, %d bytes", href, res.status, res.header.Get("Content-Type"), len(res.body))
	}
}

func TestIndex(t *testing.T) {
	t.Parallel()
	t.Run("one project: straight to its board", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, boardReport(), Options{})
		res := e.get(t, "/ui/")
		if res.status != http.StatusSeeOther || res.header.Get("Location") != "/ui/projects/acme/1" {
			t.Errorf("GET /ui/: %d to %q, want 303 to /ui/projects/acme/1", res.status, res.header.Get("Location"))
		}
	})
	t.Run("several: a list of links", func(t *testing.T) {
		t.Parallel()
		rep := boardReport()
		rep.Projects = append(rep.Projects, health.Project{Owner: "acme org", Number: 7})
		e := newEnv(t, rep, Options{})
		res := e.get(t, "/ui/")
		for _, w := range []string{`<a href="/ui/projects/acme/1">acme/1</a>`, `<a href="/ui/projects/acme%20org/7">acme org/7</a>`, `no reconciler pass yet`} {
			if !strings.Contains(res.body, w) {
				t.Errorf("the index lacks %q:\n%s", w, res.body)
			}
		}
	})
	t.Run("none", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, health.Report{}, Options{})
		if res := e.get(t, "/ui/"); res.status != http.StatusOK || !strings.Contains(res.body, "No project is enforced yet") {
			t.Errorf("GET /ui/: %d\n%s", res.status, res.body)
		}
	})
}

func TestDecisionFilters(t *testing.T) {
	t.Parallel()
	e := newEnv(t, boardReport(), Options{})
	id := e.ids
	tests := []struct {
		query string
		want  []int64 // newest first
	}{
		{"", []int64{id[4], id[3], id[2], id[1], id[0]}},
		{"actor=AGENT-1", []int64{id[4], id[1]}},
		{"actor=bob", []int64{id[3]}},
		{"verdict=reverted", []int64{id[1]}},
		{"verdict=Allowed", []int64{id[4], id[3]}},
		{"rule=legal", []int64{id[4], id[3]}},
		{"issue=12", []int64{id[3], id[1], id[0]}},
		{"issue=%2312", []int64{id[3], id[1], id[0]}},
		{"issue=acme%2Fweb%2312", []int64{id[1], id[0]}},
		{"issue=acme%2Fapi", []int64{id[3]}},
		{"since=2026-03-14T12:09", []int64{id[4], id[3], id[2]}},
		{"until=2026-03-14T12:09:26Z", []int64{id[1], id[0]}},
		{"since=2026-03-14T13:09:26%2B01:00&until=2026-03-14T14:00", []int64{id[3], id[2]}},
		{"until=2026-03-14", []int64{id[4], id[3], id[2], id[1], id[0]}}, // a date alone includes its day
		{"until=2026-03-13", nil},
		{"actor=agent-1&verdict=allowed&issue=13", []int64{id[4]}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			res := e.get(t, "/ui/decisions?"+tt.query)
			if res.status != http.StatusOK {
				t.Fatalf("status %d\n%s", res.status, res.body)
			}
			if got := listedIDs(t, res.body); !slices.Equal(got, tt.want) {
				t.Errorf("listed %v, want %v", got, tt.want)
			}
			if len(tt.want) == 0 && !strings.Contains(res.body, "No decision matches these filters.") {
				t.Error("an empty result does not say so")
			}
		})
	}
}

func TestDecisionFiltersRedisplayed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, boardReport(), Options{})
	res := e.get(t, `/ui/decisions?actor=%22%3E%3Cscript%3E&verdict=reverted&issue=12`)
	for _, w := range []string{`name="actor" value="&#34;&gt;&lt;script&gt;"`, `<option value="reverted" selected>`, `name="issue" value="12"`,
		`<a href="/ui/decisions">Clear</a>`} {
		if !strings.Contains(res.body, w) {
			t.Errorf("the form lacks %q", w)
		}
	}
	if strings.Contains(res.body, "<script") {
		t.Error("a filter value reached the page unescaped")
	}
}

func TestDecisionPaging(t *testing.T) {
	t.Parallel()
	e := newEnv(t, boardReport(), Options{})
	id := e.ids
	first := e.get(t, "/ui/decisions?limit=2&actor=")
	if got := listedIDs(t, first.body); !slices.Equal(got, []int64{id[4], id[3]}) {
		t.Fatalf("first page %v", got)
	}
	if link(first.body, "‹ Newer") != "" || link(first.body, "« Newest") != "" {
		t.Error("the first page links to newer entries")
	}
	pages := [][]int64{{id[2], id[1]}, {id[0]}}
	cur := first
	for i, want := range pages {
		older := link(cur.body, "Older ›")
		if older == "" {
			t.Fatalf("page %d has no Older link", i+1)
		}
		if u, _ := url.Parse(older); u.Query().Get("limit") != "2" {
			t.Errorf("the Older link %q forgets the page size", older)
		}
		cur = e.get(t, older)
		if got := listedIDs(t, cur.body); !slices.Equal(got, want) {
			t.Fatalf("page %d: %v, want %v", i+2, got, want)
		}
		if link(cur.body, "« Newest") == "" {
			t.Errorf("page %d has no link to the newest", i+2)
		}
	}
	if link(cur.body, "Older ›") != "" {
		t.Error("the last page links to older entries")
	}
	back := e.get(t, link(cur.body, "‹ Newer"))
	if got := listedIDs(t, back.body); !slices.Equal(got, pages[0]) {
		t.Errorf("back from the last page: %v, want %v", got, pages[0])
	}
}

func TestBadDecisionQueries(t *testing.T) {
	t.Parallel()
	e := newEnv(t, boardReport(), Options{})
	tests := []struct{ query, want string }{
		{"since=yesterday", `Since &#34;yesterday&#34;: use 2006-01-02`},
		{"until=2026-13-01", `Until &#34;2026-13-01&#34;`},
		{"page=-1", `Unknown parameter &#34;page&#34;`},
		{"verdict=maybe", `Verdict &#34;maybe&#34; is not one the audit log records: use one of allowed, reverted, would_revert, automated, handoff, adopted, ignored, withdrawn.`},
		{"issue=acme%23x", `Issue &#34;acme#x&#34;: write owner/repo#12`},
		{"issue=-3", `Issue &#34;-3&#34;`},
		{"limit=-1", `Limit &#34;-1&#34;: the number of decisions per page is a whole number from 1 to 500.`},
		{"limit=100000", `Limit &#34;100000&#34;`},
		{"before=12", `before=&#34;12&#34; is not a page of this list`},
		{"before=1.2&after=1.3", `Use before or after to page, not both.`},
		{"since=2026-03-14&until=2026-03-13", `must be before until`},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			res := e.get(t, "/ui/decisions?"+tt.query)
			if res.status != http.StatusBadRequest {
				t.Errorf("status %d, want 400", res.status)
			}
			if !strings.Contains(res.body, tt.want) || !strings.Contains(res.body, `role="alert"`) {
				t.Errorf("the page lacks %q and an alert:\n%s", tt.want, res.body)
			}
			if ids := listedIDs(t, res.body); len(ids) > 0 {
				t.Errorf("a bad query listed decisions %v", ids)
			}
		})
	}
}

func TestDecisionDiagram(t *testing.T) {
	t.Parallel()
	e := newEnv(t, boardReport(), Options{})
	res := e.get(t, "/ui/decisions/"+itoa(e.ids[1])) // agent-1: Backlog → In Progress, reverted
	doc := parseSVG(t, svgOf(t, res.body))
	var hlStates []string
	for _, g := range doc.Groups {
		if g.has("hl") {
			hlStates = append(hlStates, g.State)
		}
		if g.has("target") && g.State != "In Progress" {
			t.Errorf("the ringed state is %q, want In Progress", g.State)
		}
	}
	// The from-state, and the from-anywhere box ("") whose rule allows Human Needed.
	if !slices.Equal(hlStates, []string{"", "Backlog"}) {
		t.Errorf("highlighted states %q, want the from-anywhere box and the from-state", hlStates)
	}
	var moves []string
	for _, p := range doc.Paths {
		if p.has("hl") {
			moves = append(moves, p.From+" → "+p.To)
		}
	}
	// An agent may leave Backlog by its own transitions (Canceled among them, so the
	// humans-only from-anywhere rule to Canceled is not what allows it) and by the
	// from-anywhere rule to Human Needed.
	want := []string{" → Human Needed", "Backlog → Canceled", "Backlog → Done", "Backlog → Ready for Plan", "Backlog → Research Needed"}
	if slices.Sort(moves); !slices.Equal(moves, want) {
		t.Errorf("highlighted moves %q, want %q", moves, want)
	}
}

func TestViewerAndSignOut(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		o       Options
		want    []string
		notWant []string
	}{
		{"signed in", Options{
			Viewer:    func(*http.Request) string { return "octo<cat>" },
			CSRFToken: func(*http.Request) string { return `tok"en` },
		}, []string{`signed in as <strong>octo&lt;cat&gt;</strong>`, `<form method="post" action="/ui/logout">`,
			`<input type="hidden" name="csrf_token" value="tok&#34;en">`}, nil},
		{"another mount point and field", Options{
			BasePath: "/board/", CSRFField: "gorilla.csrf.Token",
			Viewer:    func(*http.Request) string { return "octocat" },
			CSRFToken: func(*http.Request) string { return "t" },
		}, []string{`action="/board/logout"`, `name="gorilla.csrf.Token" value="t"`, `href="/board/decisions"`}, nil},
		{"nobody", Options{}, nil, []string{"signed in as", "/logout"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, boardReport(), tt.o)
			res := e.get(t, "/ui/decisions")
			for _, w := range tt.want {
				if !strings.Contains(res.body, w) {
					t.Errorf("the page lacks %q", w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(res.body, w) {
					t.Errorf("the page contains %q", w)
				}
			}
		})
	}
}

func TestBoardListsAreCapped(t *testing.T) {
	t.Parallel()
	rep := boardReport()
	p := &rep.Projects[0]
	for i := range 5 {
		p.Unset = append(p.Unset, health.ItemRef{Repo: "acme/web", Number: 100 + i})
	}
	e := newEnv(t, rep, Options{ListLimit: 2})
	res := e.get(t, "/ui/projects/acme/1")
	if !strings.Contains(res.body, "… and 4 more.") || strings.Contains(res.body, "acme/web#104") {
		t.Errorf("the capped list does not say how many it leaves out")
	}
	all := e.get(t, link(res.body, "show every row"))
	if !strings.Contains(all.body, "acme/web#104") || strings.Contains(all.body, "more.</p>") {
		t.Errorf("?all=1 does not list every row")
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	if _, err := New(Options{}); err == nil {
		t.Error("New without its ports succeeded")
	}
	if _, err := New(Options{Reports: fixedReports{}, Decisions: nil, Machine: policy.DefaultMachine()}); err == nil {
		t.Error("New without Decisions succeeded")
	}
}

// svgDoc is the part of a diagram the tests read.
type svgDoc struct {
	XMLName xml.Name   `xml:"svg"`
	Paths   []svgPath  `xml:"path"`
	Groups  []svgGroup `xml:"g"`
}

type svgPath struct {
	Class string `xml:"class,attr"`
	From  string `xml:"data-from,attr"`
	To    string `xml:"data-to,attr"`
	D     string `xml:"d,attr"`
}

type svgGroup struct {
	Class string    `xml:"class,attr"`
	State string    `xml:"data-state,attr"`
	Rects []svgRect `xml:"rect"`
	Texts []svgText `xml:"text"`
}

type svgRect struct {
	Y string `xml:"y,attr"`
}

type svgText struct {
	Class string `xml:"class,attr"`
	Fill  string `xml:"fill,attr"`
	Body  string `xml:",chardata"`
}

func (p svgPath) has(c string) bool  { return slices.Contains(strings.Fields(p.Class), c) }
func (g svgGroup) has(c string) bool { return slices.Contains(strings.Fields(g.Class), c) }

func parseSVG(t testing.TB, s string) svgDoc {
	t.Helper()
	var doc svgDoc
	if err := xml.Unmarshal([]byte(s), &doc); err != nil {
		t.Fatalf("the diagram is not XML: %v\n%s", err, s)
	}
	return doc
}

type failingReports struct{}

func (failingReports) Report(context.Context, time.Time) (health.Report, error) {
	return health.Report{}, errors.New("secret database detail")
}

func TestInternalErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, boardReport(), Options{})
	h, err := New(Options{Reports: failingReports{}, Decisions: e.st, Machine: policy.DefaultMachine()})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.Close(); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/", "/projects/acme/1", "/decisions", "/decisions/1"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), "the service log has the details") {
			t.Errorf("GET %s: %d, want 500 with a pointer to the log\n%s", path, rec.Code, rec.Body.String())
		}
		if strings.Contains(rec.Body.String(), "secret database detail") || strings.Contains(rec.Body.String(), "sql") {
			t.Errorf("GET %s: the page tells the error's details", path)
		}
	}
}
