package ghboard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
)

// fakeGitHub answers each GraphQL request with the next canned answer and keeps what was asked.
type fakeGitHub struct {
	mu      sync.Mutex
	answers []string
	header  http.Header
	asked   []gqlRequest
}

func (f *fakeGitHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req gqlRequest
	_ = json.NewDecoder(r.Body).Decode(&req)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, req)
	for k, v := range f.header {
		w.Header()[k] = v
	}
	if len(f.answers) == 0 {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	a := f.answers[0]
	f.answers = f.answers[1:]
	w.Write([]byte(a))
}

func testBoard(t *testing.T, f *fakeGitHub, log *bytes.Buffer) *Board {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	var opts []Option
	if log != nil {
		opts = append(opts, WithLogger(slog.New(slog.NewTextHandler(log, nil))))
	}
	c := NewClient(srv.Client(), srv.URL, opts...)
	c.sleep = noSleep
	fields := NewFieldCache()
	fields.put(Field{ProjectID: "PVT_1", FieldID: "PVTSSF_1", Options: map[string]string{"Backlog": "o1", "In Progress": "o2"}})
	return New(c, "Workflow State", fields)
}

func rel(id string, number int, repo, state string) string {
	return fmt.Sprintf(`{"id":%q,"number":%d,"title":"t","state":"OPEN","repository":{"nameWithOwner":%q},"subIssuesSummary":{"total":0},
	  "projectItems":{"nodes":[{"id":"PVTI_%s","project":{"id":"PVT_1"},"fieldValueByName":{"__typename":"ProjectV2ItemFieldSingleSelectValue","name":%q},"estimate":null}]}}`,
		id, number, repo, id, state)
}

// A family read where the installation may not see some relatives (a repository the app is not
// installed on: FORBIDDEN, "Resource not accessible by integration") or one no longer exists
// (NOT_FOUND) keeps what GitHub returned: those relatives are left out and logged, the others
// are the family.
func TestFamilySkipsWhatTheInstallationMayNotSee(t *testing.T) {
	self := strings.TrimSuffix(rel("I_1", 1, "acme/app", "In Progress"), "}")
	body := `{"data":{"node":{"__typename":"Issue",` + strings.TrimPrefix(self, "{") + `,
	  "parent":null,
	  "subIssues":{"totalCount":3,"pageInfo":{"hasNextPage":false,"endCursor":"c"},"nodes":[` + rel("I_2", 2, "acme/app", "Backlog") + `,null,null]},
	  "blockedBy":{"nodes":[null,{"id":"I_5","number":5,"title":"b","state":"OPEN","repository":{"nameWithOwner":"acme/app"}}]}}},
	 "errors":[
	  {"type":"FORBIDDEN","path":["node","parent"],"message":"Resource not accessible by integration","extensions":{"saml_failure":false}},
	  {"type":"FORBIDDEN","path":["node","subIssues","nodes",1],"message":"Resource not accessible by integration"},
	  {"type":"NOT_FOUND","path":["node","subIssues","nodes",2],"message":"Could not resolve to a node"},
	  {"type":"FORBIDDEN","path":["node","blockedBy","nodes",0],"message":"Resource not accessible by integration"}]}`
	var log bytes.Buffer
	b := testBoard(t, &fakeGitHub{answers: []string{body}}, &log)
	fam, err := b.Family(context.Background(), "I_1", "PVT_1")
	if err != nil {
		t.Fatal(err)
	}
	if fam.Self.Number != 1 || fam.Parent != nil || len(fam.Children) != 1 || fam.Children[0].Number != 2 ||
		fam.Children[0].State != "Backlog" || len(fam.OpenBlockers) != 1 || fam.OpenBlockers[0].Number != 5 {
		t.Fatalf("family %+v", fam)
	}
	for _, want := range []string{"node.parent", "node.subIssues.nodes.1", "node.subIssues.nodes.2", "node.blockedBy.nodes.0", "FORBIDDEN", "NOT_FOUND"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log does not name %s:\n%s", want, log.String())
		}
	}

	// Any other error still fails the read, and the issue itself gone is ErrNotFound.
	other := `{"data":{"node":{"__typename":"Issue","id":"I_1","subIssues":null}},"errors":[{"type":"INTERNAL","path":["node","subIssues"],"message":"Something went wrong"}]}`
	gone := `{"data":{"node":null},"errors":[{"type":"NOT_FOUND","path":["node"],"message":"Could not resolve to a node with the global id of 'I_1'"}]}`
	b = testBoard(t, &fakeGitHub{answers: []string{other, gone}}, nil)
	if _, err := b.Family(context.Background(), "I_1", "PVT_1"); err == nil || errors.Is(err, enforce.ErrNotFound) {
		t.Fatalf("another error: %v", err)
	}
	if _, err := b.Family(context.Background(), "I_1", "PVT_1"); !errors.Is(err, enforce.ErrNotFound) {
		t.Fatalf("the issue gone: %v", err)
	}
}

// An item deleted between two reads: GitHub answers data.node null with NOT_FOUND at its path.
// It stays enforcement's not-found; so does an item whose issue the installation may not see.
func TestItemNotFoundStaysNotFound(t *testing.T) {
	gone := `{"data":{"node":null},"errors":[{"type":"NOT_FOUND","path":["node"],"locations":[{"line":2,"column":3}],"message":"Could not resolve to a node with the global id of 'PVTI_1'"}]}`
	hidden := `{"data":{"node":{"__typename":"ProjectV2Item","id":"PVTI_1","type":"ISSUE","isArchived":false,"project":{"id":"PVT_1","number":1,"owner":{"__typename":"Organization","login":"acme"}},"fieldValueByName":null,"content":null}},
	  "errors":[{"type":"FORBIDDEN","path":["node","content"],"message":"Resource not accessible by integration"}]}`
	b := testBoard(t, &fakeGitHub{answers: []string{gone, hidden}}, nil)
	for _, what := range []string{"deleted", "not accessible"} {
		var ge *GraphQLError
		if _, err := b.Item(context.Background(), "PVTI_1"); !errors.Is(err, enforce.ErrNotFound) || !errors.Is(err, ErrNotFound) || !errors.As(err, &ge) {
			t.Fatalf("%s: %v", what, err)
		}
	}
}

// One batched mutation of up to 50 aliases where some fail: GitHub applies the others and
// answers their data with an error per failed alias. SetStates sends again only the failed
// writes a retry may fix (never one that succeeded), and its error names exactly the writes
// that did not happen.
func TestSetStatesPartialBatch(t *testing.T) {
	ok := func(i int) string { return fmt.Sprintf(`"m%d":{"projectV2Item":{"id":"PVTI_%d"}}`, i, i) }
	first := `{"data":{` + ok(0) + `,"m1":null,"m2":null,` + ok(3) + `},"errors":[
	  {"type":"NOT_FOUND","path":["m1"],"message":"Could not resolve to a node with the global id of 'PVTI_gone'"},
	  {"path":["m2"],"message":"Something went wrong while executing your query. Please include request ID X."}]}`
	retry := `{"data":{` + ok(0) + `}}`
	f := &fakeGitHub{answers: []string{first, retry}}
	b := testBoard(t, f, nil)
	item := func(id string, n int) enforce.Item {
		return enforce.Item{ID: id, ProjectID: "PVT_1", ProjectNumber: 1, Owner: "acme", Number: n}
	}
	writes := []enforce.StateWrite{
		{Item: item("PVTI_a", 1), State: "In Progress"},
		{Item: item("PVTI_gone", 2), State: "In Progress"},
		{Item: item("PVTI_flaky", 3), State: "In Progress"},
		{Item: item("PVTI_d", 4), State: "Backlog"},
	}
	err := b.SetStates(context.Background(), writes)
	var we *WritesError
	if !errors.As(err, &we) || len(we.Failed) != 1 || we.Failed[0].Write.Item.ID != "PVTI_gone" || we.Failed[0].Type != "NOT_FOUND" || we.Written != 3 {
		t.Fatalf("err %v (%+v)", err, we)
	}
	if !errors.Is(err, enforce.ErrNotFound) || !strings.Contains(err.Error(), "PVTI_gone") || strings.Contains(err.Error(), "PVTI_a") {
		t.Fatalf("err %v", err)
	}
	if len(f.asked) != 2 {
		t.Fatalf("%d requests, want the batch and one retry", len(f.asked))
	}
	if n := strings.Count(f.asked[1].Query, "updateProjectV2ItemFieldValue"); n != 1 || f.asked[1].Variables["i0"] != "PVTI_flaky" {
		t.Fatalf("the retry wrote %d items (%v); want only the failed one", n, f.asked[1].Variables)
	}

	// A batch refused as a whole (a rate limit) names every write, and stays a rate limit.
	f = &fakeGitHub{answers: []string{`{"errors":[{"type":"RATE_LIMITED","message":"You have exceeded a secondary rate limit."}]}`},
		header: http.Header{"Retry-After": {"5"}}}
	b = testBoard(t, f, nil)
	err = b.SetStates(context.Background(), writes)
	var rl *RateLimitError
	if !errors.As(err, &we) || len(we.Failed) != 4 || we.Written != 0 || !errors.As(err, &rl) || rl.RetryAfter != 5*time.Second || !IsRetryable(err) {
		t.Fatalf("rate limited: %v", err)
	}

	// Every write done: no error, one request.
	f = &fakeGitHub{answers: []string{`{"data":{` + ok(0) + `,` + ok(1) + `}}`}}
	b = testBoard(t, f, nil)
	if err := b.SetStates(context.Background(), writes[:2]); err != nil || len(f.asked) != 1 {
		t.Fatalf("%v after %d requests", err, len(f.asked))
	}
}

// "If you exceed a secondary rate limit, the response status will be 200 or 403": a 200 with a
// secondary-limit error is waited out like a 403 — its retry-after, or at least a minute
// without one — not until the primary reset, and no request of that identity goes out before.
func TestSecondaryRateLimitAnswered200(t *testing.T) {
	for _, c := range []struct {
		name       string
		retryAfter string
		want       time.Duration
	}{{"with retry-after", "30", 30 * time.Second}, {"without retry-after", "", time.Minute}} {
		t.Run(c.name, func(t *testing.T) {
			now := time.Unix(1_700_000_000, 0)
			var calls int
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls++
				w.Header().Set("X-Ratelimit-Limit", "5000")
				w.Header().Set("X-Ratelimit-Remaining", "4321")
				w.Header().Set("X-Ratelimit-Reset", "1700003000") // 50 minutes away
				if c.retryAfter != "" {
					w.Header().Set("Retry-After", c.retryAfter)
				}
				w.Write([]byte(`{"errors":[{"type":"RATE_LIMITED","message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}]}`))
			}))
			defer srv.Close()

			// The client waits as GitHub asks…
			cl := NewClient(srv.Client(), srv.URL+"/graphql")
			cl.now, cl.sleep = func() time.Time { return now }, noSleep
			var rl *RateLimitError
			if err := cl.Do(context.Background(), queryItem, nil, nil); !errors.As(err, &rl) || !rl.Secondary || rl.RetryAfter != c.want {
				t.Fatalf("%v; want a secondary limit of %s", err, c.want)
			}

			// …and so does the gate below every client of that identity.
			g := NewGate(srv.Client().Transport)
			g.now = func() time.Time { return now }
			hc := &http.Client{Transport: g}
			post := func() *http.Response {
				req, _ := http.NewRequest(http.MethodPost, srv.URL+"/graphql", strings.NewReader(`{"query":"{ viewer { login } }"}`))
				req.Header.Set("Authorization", "token ghs_one")
				resp, err := hc.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				return resp
			}
			calls = 0
			resp := post()
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(body), "secondary rate limit") {
				t.Fatalf("the gate did not hand the body on: %q", body)
			}
			waits := g.Waits()
			if len(waits) != 1 || waits[0].Until.Sub(waits[0].Learnt) != c.want {
				t.Fatalf("gate waits %+v; want one of %s", waits, c.want)
			}
			now = now.Add(c.want - time.Second)
			if resp := post(); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get(HeldHeader) == "" || calls != 1 {
				t.Fatalf("inside the wait: %d after %d calls; want it held", resp.StatusCode, calls)
			}
		})
	}
}

// A 403 secondary limit without retry-after holds the identity at least a minute in the gate.
func TestGateHolds403SecondaryWithoutRetryAfter(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Ratelimit-Remaining", "4000")
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte(`{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}`))
	}))
	defer srv.Close()
	now := time.Unix(1_700_000_000, 0)
	g := NewGate(srv.Client().Transport)
	g.now = func() time.Time { return now }
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/repos/acme/app/issues/1", nil)
	req.Header.Set("Authorization", "token ghs_one")
	resp, err := (&http.Client{Transport: g}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if w := g.Waits(); len(w) != 1 || w[0].Until.Sub(w[0].Learnt) != time.Minute {
		t.Fatalf("waits %+v", w)
	}
}
