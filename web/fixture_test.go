package web

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/health"
	"github.com/ralph-gate/ralph-gate/policy"
	"github.com/ralph-gate/ralph-gate/store"
)

// t0 is the tests' now.
var t0 = time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)

// fixedReports answers the same report every time.
type fixedReports struct{ rep health.Report }

func (f fixedReports) Report(context.Context, time.Time) (health.Report, error) { return f.rep, nil }

// hostileTitle must appear escaped wherever it is shown.
const hostileTitle = "<script>alert(\"x\")</script> & friends\u202e\u2066"

// boardReport is one project: a stale lock, two items waiting for a person, an item with
// no state whose title is hostile, an unblocked item, a state over its WIP limit.
func boardReport() health.Report {
	ref := func(n int, title, state string) health.ItemRef {
		return health.ItemRef{ItemID: fmt.Sprintf("PVTI_%d", n), Repo: "acme/web", Number: n, Title: title, State: state}
	}
	var states []health.StateCount
	counts := map[string]int{"Backlog": 12, "Research in Progress": 1, "In Progress": 4, "Human Needed": 2, "Done": 30}
	for _, s := range policy.DefaultMachine().States() {
		info, _ := policy.DefaultMachine().State(s)
		sc := health.StateCount{Name: s, Kind: info.Kind.String(), Count: counts[s]}
		if s == "In Progress" {
			sc.Limit, sc.Over = 3, true
		}
		states = append(states, sc)
	}
	stale := ref(7, "Research the webhook payloads", "Research in Progress")
	unset := ref(9, hostileTitle, "")
	return health.Report{
		GeneratedAt: t0,
		Projects: []health.Project{{
			ID: "PVT_1", Owner: "acme", Number: 1, SnapshotAt: t0.Add(-4 * time.Minute), Items: 50,
			States: states,
			Unset:  []health.ItemRef{unset},
			Locks: []health.Lock{
				{Item: stale, Holder: "agent-research-7", Since: t0.Add(-50 * time.Hour), Age: 50 * time.Hour, Stale: true, Expired: true},
				{Item: ref(8, "Build it", "In Progress"), Holder: "agent-impl-2", Since: t0.Add(-time.Hour), Age: time.Hour},
			},
			HumanNeeded: []health.Waiting{
				{Item: ref(3, "Decide the schema", "Human Needed"), Since: t0.Add(-72 * time.Hour), Age: 72 * time.Hour, Long: true},
				{Item: health.ItemRef{ItemID: "PVTI_4", Repo: "acme/web", Number: 4, Title: "Own URL", URL: "https://github.example/acme/web/issues/4", State: "Plan in Review"},
					Since: t0.Add(-2 * time.Hour), Age: 2 * time.Hour},
			},
			Unblocked: []health.ItemRef{ref(5, "Waiting for nobody", "Ready for Plan")},
			Runtime: health.Runtime{QueueDepth: 3, LastReconcile: t0.Add(-4 * time.Minute), LastSweep: t0.Add(-30 * time.Second),
				RateLimitKnown: true, RateRemaining: 4321, RateLimit: 5000, RateReset: t0.Add(20 * time.Minute)},
			Hygiene: []health.Finding{
				{Kind: health.FindingStaleLock, Item: &stale, Detail: "agent-research-7 has held it for 50h: release it or ask the agent"},
				{Kind: health.FindingWIPOverLimit, State: "In Progress", Detail: "In Progress holds 4 items, its limit is 3"},
				{Kind: health.FindingUnsetState, Item: &unset, Detail: "give it a Workflow State"},
			},
		}},
	}
}

// decisionFixture is the audit log of the tests, in the order appended. Entry 1 is a
// reverted move with its judged report (and so its Recovery text); ids follow the order.
func decisionFixture() []enforce.AuditEntry {
	return []enforce.AuditEntry{
		0: {At: t0.Add(-5 * time.Hour), DeliveryID: "d-0", ProjectID: "PVT_1", ItemID: "PVTI_12", IssueNumber: 12, Repo: "acme/web",
			Actor: "alice", ActorKind: "human", ToState: "Backlog", Verdict: enforce.VerdictAdopted},
		1: {At: t0.Add(-4 * time.Hour), DeliveryID: "d-1", ProjectID: "PVT_1", ItemID: "PVTI_12", IssueNumber: 12, Repo: "acme/web",
			Actor: "agent-1", ActorKind: "agent", FromState: "Backlog", ToState: "In Progress", Verdict: enforce.VerdictReverted,
			Rule: "transition", Reason: "Backlog → In Progress is not a transition of the workflow <b>"},
		2: {At: t0.Add(-3 * time.Hour), ProjectID: "PVT_1", ItemID: "PVTI_13", IssueNumber: 13, Repo: "acme/web",
			Actor: "ralph-gate[bot]", ActorKind: "app", FromState: "Backlog", ToState: "Research Needed",
			Verdict: enforce.VerdictAutomated, Rule: "app", Cause: "cascade: parent #12 moved"},
		3: {At: t0.Add(-2 * time.Hour), DeliveryID: "d-3", ProjectID: "PVT_1", ItemID: "PVTI_7", IssueNumber: 12, Repo: "acme/api",
			Actor: "Bob", ActorKind: "human", FromState: "Backlog", ToState: "Research Needed", Verdict: enforce.VerdictAllowed, Rule: "legal"},
		4: {At: t0.Add(-time.Hour), DeliveryID: "d-4", ProjectID: "PVT_1", ItemID: "PVTI_13", IssueNumber: 13, Repo: "acme/web",
			Actor: "agent-1", ActorKind: "agent", FromState: "Research Needed", ToState: "Research in Progress",
			Verdict: enforce.VerdictAllowed, Rule: "legal", Reason: "claimed: \u202etxt.exe\u2066 \x1b[31mnow\x00"},
	}
}

const recoveryText = `move it to Research Needed first <i>then</i> retry`

// env is the handler under test, mounted as the service mounts it, over a real store.
type env struct {
	h   http.Handler // as New returns it, to be mounted under /ui
	srv *httptest.Server
	st  *store.Store
	ids []int64 // the fixture's audit ids, in fixture order
}

func newEnv(t testing.TB, rep health.Report, o Options) *env {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, store.DriverSQLite, filepath.Join(t.TempDir(), "ralph-gate.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	e := &env{st: st}
	for _, a := range decisionFixture() {
		if a.DeliveryID == "d-1" {
			// A refused move as enforcement commits it: the item, its judged report, the entry.
			o := enforce.Observation{DeliveryID: a.DeliveryID, ItemID: a.ItemID, From: a.FromState, To: a.ToState, Actor: a.Actor,
				At: a.At, ReceivedAt: a.At, Status: enforce.ObservationJudged, JudgedAt: a.At, Verdict: a.Verdict,
				ActorKind: a.ActorKind, LegalFrom: a.FromState, Rule: a.Rule, Reason: a.Reason, Recovery: recoveryText}
			rec := enforce.Record{ProjectID: a.ProjectID, ItemID: a.ItemID, IssueNumber: a.IssueNumber, Repo: a.Repo, LastLegalState: a.FromState}
			if ok, err := st.CommitStep(ctx, enforce.Step{Record: rec, Observation: &o, Audit: &a}); !ok || err != nil {
				t.Fatalf("commit step: %v, %v", ok, err)
			}
			page, err := st.ListAudit(ctx, store.AuditQuery{Limit: 1})
			if err != nil {
				t.Fatal(err)
			}
			e.ids = append(e.ids, page.Entries[0].ID)
			continue
		}
		id, err := st.AppendAudit(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		e.ids = append(e.ids, id)
	}
	o.Reports, o.Decisions = fixedReports{rep}, st
	if o.Machine == nil {
		o.Machine = policy.DefaultMachine()
	}
	if o.Now == nil {
		o.Now = func() time.Time { return t0 }
	}
	h, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	e.h = h
	mux := http.NewServeMux()
	mux.Handle("/ui/", http.StripPrefix("/ui", h))
	e.srv = httptest.NewServer(mux)
	t.Cleanup(e.srv.Close)
	return e
}

// response is one answer, read whole.
type response struct {
	status int
	header http.Header
	body   string
}

func (e *env) get(t testing.TB, path string) response {
	t.Helper()
	c := e.srv.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res, err := c.Get(e.srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: res.StatusCode, header: res.Header, body: string(b)}
}

var decisionLink = regexp.MustCompile(`href="/ui/decisions/(\d+)"`)

// listedIDs are the decisions a page links to, in order.
func listedIDs(t testing.TB, body string) []int64 {
	t.Helper()
	var out []int64
	for _, m := range decisionLink.FindAllStringSubmatch(body, -1) {
		id, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, id)
	}
	return out
}

// link is the href of the anchor whose text is text ("" when there is none), unescaped.
func link(body, text string) string {
	re := regexp.MustCompile(`<a href="([^"]*)"[^>]*>` + regexp.QuoteMeta(text) + `</a>`)
	m := re.FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return strings.ReplaceAll(m[1], "&amp;", "&")
}

// svgOf is the first inline SVG of a page.
func svgOf(t testing.TB, body string) string {
	t.Helper()
	i, j := strings.Index(body, "<svg"), strings.Index(body, "</svg>")
	if i < 0 || j < i {
		t.Fatalf("no inline SVG in the page")
	}
	return body[i : j+len("</svg>")]
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// regexpFind is the first submatch of pattern in s.
func regexpFind(t testing.TB, s, pattern string) string {
	t.Helper()
	m := regexp.MustCompile(pattern).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no match for %s", pattern)
	}
	return m[1]
}
