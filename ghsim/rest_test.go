package ghsim

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-github/v89/github"
)

func (s *sim) client(token string) *github.Client {
	s.t.Helper()
	c, err := github.NewClient(github.WithEnterpriseURLs(s.url+"/api/v3/", s.url+"/api/uploads/"), github.WithAuthToken(token),
		github.WithTimeout(10*time.Second))
	if err != nil {
		s.t.Fatal(err)
	}
	return c
}

// The REST surface decodes with go-github v89, the client go-githubapp hands to the app.
func TestRESTWithGoGitHub(t *testing.T) {
	s := startSim(t, testSeed(t), Options{})
	ctx := context.Background()

	app := s.client(s.appJWT())
	a, _, err := app.Apps.Get(ctx, "")
	if err != nil || a.GetSlug() != "ralph-gate" || a.GetPermissions().GetOrganizationProjects() != "write" {
		t.Fatalf("app: %+v %v", a, err)
	}
	inst, _, err := app.Apps.GetOrganizationInstallation(ctx, "acme")
	if err != nil || inst.GetID() != 2002 {
		t.Fatalf("installation: %+v %v", inst, err)
	}
	tok, _, err := app.Apps.CreateInstallationToken(ctx, inst.GetID(), nil)
	if err != nil || tok.GetToken() == "" || tok.GetExpiresAt().IsZero() {
		t.Fatalf("token: %+v %v", tok, err)
	}

	bot := s.client(tok.GetToken())
	for i := range 5 {
		if _, _, err := bot.Issues.CreateComment(ctx, "acme", "app", 1, &github.IssueComment{Body: github.Ptr(fmt.Sprint("c", i))}); err != nil {
			t.Fatal(err)
		}
	}
	var bodies []string
	opt := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 2}}
	pages := 0
	for {
		cs, res, err := bot.Issues.ListComments(ctx, "acme", "app", 1, opt)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, c := range cs {
			bodies = append(bodies, c.GetBody())
			if c.GetUser().GetLogin() != "ralph-gate[bot]" || c.GetUser().GetType() != "Bot" || c.GetID() == 0 || c.GetNodeID() == "" {
				t.Fatalf("comment: %+v", c)
			}
		}
		if res.NextPage == 0 {
			break
		}
		opt.Page = res.NextPage
	}
	if pages != 3 || fmt.Sprint(bodies) != "[c0 c1 c2 c3 c4]" {
		t.Fatalf("%d pages: %v", pages, bodies)
	}

	cs, _, _ := bot.Issues.ListComments(ctx, "acme", "app", 1, nil)
	edited, _, err := bot.Issues.EditComment(ctx, "acme", "app", cs[0].GetID(), &github.IssueComment{Body: github.Ptr("edited")})
	if err != nil || edited.GetBody() != "edited" {
		t.Fatalf("edit: %+v %v", edited, err)
	}

	is, _, err := bot.Issues.Get(ctx, "acme", "app", 2)
	if err != nil || is.GetTitle() != "Child" || is.GetState() != "open" || is.GetIssueDependenciesSummary().GetBlockedBy() != 1 || is.GetUser().GetLogin() != "alice" {
		t.Fatalf("issue: %+v %v", is, err)
	}
	epic, _, _ := bot.Issues.Get(ctx, "acme", "app", 1)
	if epic.GetSubIssuesSummary().GetTotal() != 3 || epic.GetComments() != 5 {
		t.Fatalf("epic: %+v", epic)
	}
	subs, _, err := bot.SubIssue.ListByIssue(ctx, "acme", "app", 1, nil)
	if err != nil || len(subs) != 3 || *subs[0].Number != 2 {
		t.Fatalf("sub-issues: %v %v", subs, err)
	}
	parent, _, err := bot.SubIssue.GetParentIssue(ctx, "acme", "app", 5)
	if err != nil || parent.GetNumber() != 4 {
		t.Fatalf("parent: %v %v", parent, err)
	}
	blockers, _, err := bot.Issues.ListBlockedBy(ctx, "acme", "app", 2, nil)
	if err != nil || len(blockers) != 1 || blockers[0].GetNumber() != 3 {
		t.Fatalf("blocked by: %v %v", blockers, err)
	}
	closed, _, err := bot.Issues.Edit(ctx, "acme", "app", 4, &github.IssueRequest{State: github.Ptr("closed"), StateReason: github.Ptr("not_planned")})
	if err != nil || closed.GetState() != "closed" || closed.GetStateReason() != "not_planned" || closed.ClosedAt == nil {
		t.Fatalf("close: %+v %v", closed, err)
	}
	// Closing sent issues.closed; with no webhook URL configured it is recorded as failed.
	s.waitIdle()
	ds, res, err := app.Apps.ListHookDeliveries(ctx, &github.ListCursorOptions{PerPage: 1})
	if err != nil || len(ds) != 1 || ds[0].GetEvent() != "issues" || ds[0].GetAction() != "closed" || ds[0].GetStatusCode() != 0 || res.Cursor != "" {
		t.Fatalf("deliveries: %v %+v %v", ds, res, err)
	}
	// GitHub answers 202, which go-github reports as an *AcceptedError, as it would on GitHub.
	var accepted *github.AcceptedError
	if _, _, err := app.Apps.RedeliverHookDelivery(ctx, ds[0].GetID()); !asErr(err, &accepted) {
		t.Fatalf("redeliver: %v", err)
	}
	s.waitIdle()
	ds, res, err = app.Apps.ListHookDeliveries(ctx, &github.ListCursorOptions{PerPage: 1})
	if err != nil || len(ds) != 1 || !ds[0].GetRedelivery() || res.Cursor == "" {
		t.Fatalf("after redelivery: %v %+v %v", ds, res, err)
	}
	more, _, err := app.Apps.ListHookDeliveries(ctx, &github.ListCursorOptions{PerPage: 1, Cursor: res.Cursor})
	if err != nil || len(more) != 1 || more[0].GetRedelivery() || more[0].GetGUID() != ds[0].GetGUID() {
		t.Fatalf("second page: %v %v", more, err)
	}
	pr, _, err := bot.PullRequests.Get(ctx, "acme", "app", 10)
	if err != nil || pr.GetTitle() != "Fix" || pr.GetMerged() {
		t.Fatalf("pull: %+v %v", pr, err)
	}
	_, _, err = bot.Issues.Get(ctx, "acme", "app", 999)
	var ghErr *github.ErrorResponse
	if !asErr(err, &ghErr) || ghErr.Response.StatusCode != 404 || ghErr.Message != "Not Found" {
		t.Fatalf("missing issue: %v", err)
	}
	if r := s.do("POST", "/api/v3/repos/acme/app/issues/1/comments", "bearer alice-token", map[string]any{"body": ""}); r.status != 422 {
		t.Fatalf("empty comment: %d", r.status)
	}

	counts := s.Requests().Counts
	if counts["rest:POST /repos/{owner}/{repo}/issues/{number}/comments"] != 6 || counts["rest:GET /repos/{owner}/{repo}/issues/{number}/comments"] != 4 ||
		counts["rest:PATCH /repos/{owner}/{repo}/issues/comments/{id}"] != 1 || counts["rest:GET /app"] != 1 {
		t.Fatalf("counts: %v", counts)
	}
}

func TestRateLimitHeaders(t *testing.T) {
	s := startSim(t, testSeed(t), Options{RateLimit: 3})
	tok := s.installationToken()
	var used []int
	for range 3 {
		r := s.do("GET", "/api/v3/repos/acme/app/issues/1", "token "+tok, nil)
		h := r.header
		for _, k := range []string{"X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Used", "X-Ratelimit-Reset", "X-Ratelimit-Resource"} {
			if h.Get(k) == "" {
				t.Fatalf("missing %s", k)
			}
		}
		if h.Get("X-Ratelimit-Resource") != "core" || h.Get("X-Ratelimit-Limit") != "3" {
			t.Fatalf("headers %v", h)
		}
		n, _ := strconv.Atoi(h.Get("X-Ratelimit-Used"))
		used = append(used, n)
	}
	if fmt.Sprint(used) != "[1 2 3]" {
		t.Fatalf("used %v", used)
	}
	// The budget is spent: GitHub's primary rate limit answer.
	r := s.do("GET", "/api/v3/repos/acme/app/issues/1", "token "+tok, nil)
	if r.status != http.StatusForbidden || r.header.Get("X-Ratelimit-Remaining") != "0" {
		t.Fatalf("exhausted: %d %v", r.status, r.header)
	}
	// GraphQL has its own budget per identity; users have their own.
	g := s.gql(tok, `{ rateLimit { remaining used limit cost } }`, nil)
	if g.raw.header.Get("X-Ratelimit-Resource") != "graphql" || dig(g.Data, "rateLimit", "used") != float64(1) || dig(g.Data, "rateLimit", "remaining") != float64(2) {
		t.Fatalf("graphql: %v %s", g.raw.header, g.raw.body)
	}
	if r := s.do("GET", "/api/v3/repos/acme/app/issues/1", "bearer alice-token", nil); r.status != 200 || r.header.Get("X-Ratelimit-Used") != "1" {
		t.Fatalf("user budget: %d %v", r.status, r.header)
	}
	// Every API answer carries the headers, errors included.
	if r := s.do("GET", "/api/v3/repos/acme/app/issues/999", "bearer alice-token", nil); r.status != 404 || r.header.Get("X-Ratelimit-Remaining") == "" {
		t.Fatalf("404: %d %v", r.status, r.header)
	}
}
