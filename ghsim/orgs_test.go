package ghsim

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/google/go-github/v89/github"
)

// twoOrgsSeed is testdata/two-orgs.yaml: a deployment serving two organizations, acme (the
// top-level one) and beta, each with its own installation of the App, a .github repository
// with a policy, a project numbered 1 and an issue numbered 1.
func twoOrgsSeed(t testing.TB) Seed {
	t.Helper()
	s, err := ParseSeed(twoOrgsYAML(t))
	if err != nil {
		t.Fatal(err)
	}
	s.App.PrivateKeyFile, s.App.PrivateKeyPEM, s.App.WebhookURL = "", testKeyPEM(), ""
	return s
}

func twoOrgsYAML(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/two-orgs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (s *sim) tokenOf(installationID string) string {
	s.t.Helper()
	r := s.do("POST", "/api/v3/app/installations/"+installationID+"/access_tokens", "Bearer "+s.appJWT(), nil)
	if r.status != 201 {
		s.t.Fatalf("access token of %s: %d %s", installationID, r.status, r.body)
	}
	var out struct {
		Token string `json:"token"`
	}
	r.json(s.t, &out)
	return out.Token
}

func TestSeedOrgsValidation(t *testing.T) {
	for _, tc := range []struct{ name, orgs, want string }{
		{"login required", "[{installation_id: 3}]", "orgs[0].login: required"},
		{"installation required", "[{login: beta}]", "orgs[0].installation_id: required"},
		{"duplicate login", "[{login: ACME, installation_id: 3}]", `orgs[0].login: duplicate organization "ACME"`},
		{"duplicate installation", "[{login: beta, installation_id: 2}]", "orgs[0].installation_id: duplicate 2"},
		{"unknown member", "[{login: beta, installation_id: 3, members: [zed]}]", `orgs[0].members[0]: unknown user "zed"`},
		{"unknown key", "[{login: beta, installation_id: 3, repo: [x]}]", "field repo not found"},
		{"issue of another org's repo", "[{login: beta, installation_id: 3, issues: [{repo: app, number: 1, title: x}]}]", `orgs[0].issues[0].repo: unknown repo "app"`},
		{"selection", "[{login: beta, installation_id: 3, repos: [web], repositories: [app]}]", `orgs[0].repositories[0]: "app" is not in repos`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := "org: acme\napp: {id: 1, slug: s, installation_id: 2}\nusers: [{login: alice}]\nrepos: [app]\norgs: " + tc.orgs + "\n"
			if _, err := ParseSeed([]byte(doc)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseSeed: %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := ParseSeed(twoOrgsYAML(t)); err != nil {
		t.Fatalf("two orgs: %v", err)
	}
}

func TestTwoOrgsInstallations(t *testing.T) {
	s := startSim(t, twoOrgsSeed(t), Options{})
	app, err := github.NewClient(github.WithEnterpriseURLs(s.url+"/api/v3/", s.url+"/api/uploads/"), github.WithAuthToken(s.appJWT()))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	list, _, err := app.Apps.ListInstallations(ctx, nil)
	if err != nil || len(list) != 2 {
		t.Fatalf("installations: %v %v", list, err)
	}
	for i, want := range []struct {
		id    int64
		login string
	}{{2002, "acme"}, {3003, "beta"}} {
		in := list[i]
		if in.GetID() != want.id || in.GetAccount().GetLogin() != want.login || in.GetAccount().GetType() != "Organization" ||
			in.GetTargetType() != "Organization" || in.GetRepositorySelection() != "all" || in.GetPermissions().GetContents() != "read" ||
			in.GetPermissions().GetChecks() != "write" || len(in.Events) == 0 {
			t.Fatalf("installation %d: %+v", i, in)
		}
		byOrg, _, err := app.Apps.GetOrganizationInstallation(ctx, want.login)
		if err != nil || byOrg.GetID() != want.id {
			t.Fatalf("installation of %s: %v %v", want.login, byOrg, err)
		}
		byRepo, _, err := app.Apps.GetRepositoryInstallation(ctx, want.login, ".github")
		if err != nil || byRepo.GetID() != want.id {
			t.Fatalf("installation of %s/.github: %v %v", want.login, byRepo, err)
		}
	}
	tokB := s.tokenOf("3003")
	repos, _, err := s.client(tokB).Apps.ListRepos(ctx, nil)
	if err != nil || repos.GetTotalCount() != 2 || repos.Repositories[0].GetFullName() != "beta/web" {
		t.Fatalf("beta's repositories: %+v %v", repos, err)
	}
}

// An installation token of one organization reads and writes nothing of the other's, through
// REST or GraphQL; users see both. Each installation has its own rate-limit budget.
func TestOrgIsolation(t *testing.T) {
	rc := newReceiver(t)
	seed := twoOrgsSeed(t)
	seed.App.WebhookURL = rc.URL
	s := startSim(t, seed, Options{RateLimit: 40})
	tokA, tokB := s.tokenOf("2002"), s.tokenOf("3003")
	st := s.State()
	beta, ok := st.OrgState("beta")
	if !ok || len(beta.Issues) != 1 || beta.Issues[0].Title != "Beta issue" || beta.InstallationID != 3003 || !beta.Installed {
		t.Fatalf("beta's state: %+v", beta)
	}
	betaIssue := beta.Issues[0]
	betaRepo, _ := beta.Repo(".github")

	rest := []struct {
		name, method, path string
		body               any
		a, b               int // status for org A's token and org B's
	}{
		{"issue", "GET", "/api/v3/repos/beta/web/issues/1", nil, 404, 200},
		{"comments", "POST", "/api/v3/repos/beta/web/issues/1/comments", map[string]any{"body": "hi"}, 404, 201},
		{"contents", "GET", "/api/v3/repos/beta/.github/contents/ralph-gate.yml", nil, 404, 200},
		{"check run", "POST", "/api/v3/repos/beta/.github/check-runs", map[string]any{"name": "ralph-gate policy", "head_sha": betaRepo.Head, "conclusion": "success",
			"output": map[string]any{"title": "ok", "summary": "valid"}}, 404, 201},
		{"check runs", "GET", "/api/v3/repos/beta/.github/commits/main/check-runs", nil, 404, 200},
		{"acme's issue", "GET", "/api/v3/repos/acme/app/issues/1", nil, 200, 404},
		{"acme's contents", "GET", "/api/v3/repos/acme/.github/contents/ralph-gate.yml", nil, 200, 404},
	}
	for _, tc := range rest {
		t.Run("rest "+tc.name, func(t *testing.T) {
			if r := s.do(tc.method, tc.path, "token "+tokA, tc.body); r.status != tc.a {
				t.Fatalf("org A's token: %d %s", r.status, r.body)
			}
			if r := s.do(tc.method, tc.path, "token "+tokB, tc.body); r.status != tc.b {
				t.Fatalf("org B's token: %d %s", r.status, r.body)
			}
		})
	}
	file, _, _, err := s.client(tokB).Repositories.GetContents(context.Background(), "beta", ".github", "ralph-gate.yml", nil)
	if text, _ := file.GetContent(); err != nil || text != "owner: beta\n" {
		t.Fatalf("beta's policy: %q %v", text, err)
	}

	projectQ := `query($o: String!) { organization(login: $o) { login projectV2(number: 1) { title } } }`
	issueQ := `query { repository(owner: "beta", name: "web") { issue(number: 1) { title } } }`
	nodeQ := `query($id: ID!) { node(id: $id) { ... on Issue { title } } }`
	for _, tc := range []struct {
		name, query string
		vars        map[string]any
		errType     string // for org A's token
		path        string
	}{
		{"project", projectQ, map[string]any{"o": "beta"}, "FORBIDDEN", "organization.projectV2"},
		{"repository", issueQ, nil, "NOT_FOUND", "repository"},
		{"node", nodeQ, map[string]any{"id": betaIssue.NodeID}, "FORBIDDEN", "node"},
	} {
		t.Run("graphql "+tc.name, func(t *testing.T) {
			out := s.gql(tokA, tc.query, tc.vars)
			if len(out.Errors) != 1 || out.Errors[0]["type"] != tc.errType {
				t.Fatalf("org A's token: %s", out.raw.body)
			}
			if p, _ := out.Errors[0]["path"].([]any); len(p) == 0 {
				t.Fatalf("error without a path: %s", out.raw.body)
			}
			s.gqlOK(tokB, tc.query, tc.vars)
			s.gqlOK("alice-token", tc.query, tc.vars)
		})
	}
	if d := s.gqlOK(tokA, projectQ, map[string]any{"o": "acme"}); dig(d, "organization", "projectV2", "title") != "Acme board" {
		t.Fatalf("acme's board: %v", d)
	}

	// A field write on beta's board: refused to org A's token, done with org B's, whose webhook
	// names beta and its installation.
	d := s.gqlOK(tokB, `query { organization(login: "beta") { projectV2(number: 1) { id field(name: "Workflow State") {
  ... on ProjectV2SingleSelectField { id options { id name } } } } } }`, nil)
	project := dig(d, "organization", "projectV2", "id").(string)
	fieldID := dig(d, "organization", "projectV2", "field", "id").(string)
	done := dig(d, "organization", "projectV2", "field", "options", 1, "id").(string)
	vars := map[string]any{"p": project, "i": betaIssue.ItemID, "f": fieldID, "o": done}
	if out := s.gql(tokA, setStateMutation, vars); len(out.Errors) != 1 || out.Errors[0]["type"] != "FORBIDDEN" {
		t.Fatalf("org A's write: %s", out.raw.body)
	}
	if is, _ := mustOrg(t, s.State(), "beta").Issue("web", 1); is.Fields["Workflow State"] != "Backlog" {
		t.Fatalf("a refused write changed the board: %+v", is)
	}
	s.gqlOK(tokB, setStateMutation, vars)
	s.waitIdle()
	var edited []received
	for _, got := range rc.all() {
		if got.header.Get("X-GitHub-Event") == "projects_v2_item" {
			edited = append(edited, got)
		}
	}
	if len(edited) != 1 {
		t.Fatalf("%d projects_v2_item webhooks", len(edited))
	}
	ev, err := github.ParseWebHook("projects_v2_item", edited[0].body)
	if err != nil {
		t.Fatal(err)
	}
	pe := ev.(*github.ProjectV2ItemEvent)
	if pe.GetInstallation().GetID() != 3003 || pe.GetOrg().GetLogin() != "beta" || pe.GetSender().GetLogin() != "ralph-gate[bot]" {
		t.Fatalf("webhook of beta's edit: installation %d org %s", pe.GetInstallation().GetID(), pe.GetOrg().GetLogin())
	}
	// The deliveries API names each delivery's installation.
	for _, dl := range s.Deliveries() {
		if dl.Event == "projects_v2_item" && dl.InstallationID != 3003 {
			t.Fatalf("delivery %+v", dl)
		}
	}

	// Membership is per organization.
	for _, tc := range []struct {
		tok, org, login string
		status          int
	}{{tokB, "beta", "bob", 204}, {tokB, "beta", "alice", 404}, {tokA, "acme", "alice", 204}, {"bob-token", "beta", "alice", 404}, {"alice-token", "beta", "bob", 302}} {
		req, _ := http.NewRequest("GET", s.url+"/api/v3/orgs/"+tc.org+"/members/"+tc.login, nil)
		req.Header.Set("Authorization", "token "+tc.tok)
		noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		res, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != tc.status {
			t.Fatalf("membership of %s in %s: %d, want %d", tc.login, tc.org, res.StatusCode, tc.status)
		}
	}

	// Rate limits: one budget per installation.
	limited := func(tok string) (used string, status int) {
		r := s.do("GET", "/api/v3/rate_limit", "token "+tok, nil)
		return r.header.Get("X-Ratelimit-Used"), r.status
	}
	usedB, _ := limited(tokB)
	for {
		if _, status := limited(tokA); status == 403 {
			break
		}
	}
	if _, status := limited(tokA); status != 403 {
		t.Fatal("org A's budget is not spent")
	}
	usedB2, status := limited(tokB)
	if status != 200 || usedB2 == "" || usedB2 == "40" || usedB == usedB2 {
		t.Fatalf("org B's budget after org A spent its own: used %s then %s, status %d", usedB, usedB2, status)
	}
	if out := s.gql(tokB, `{ rateLimit { remaining } }`, nil); len(out.Errors) > 0 {
		t.Fatalf("org B's GraphQL: %s", out.raw.body)
	}

	// The state lists beta's check run under beta.
	if cr, ok := mustOrg(t, s.State(), "beta").LatestCheckRun(".github", "ralph-gate policy"); !ok || cr.Conclusion != "success" {
		t.Fatalf("beta's check run: %+v", cr)
	}
	if _, ok := s.State().LatestCheckRun(".github", "ralph-gate policy"); ok {
		t.Fatal("beta's check run listed under acme")
	}
}

func mustOrg(t testing.TB, st State, login string) State {
	t.Helper()
	o, ok := st.OrgState(login)
	if !ok {
		t.Fatalf("no organization %s in the state", login)
	}
	return o
}

// A push to beta's .github goes out as beta's installation; a merge of beta's pull request
// through /_sim/merge names the organization.
func TestSecondOrgPushAndSimAPI(t *testing.T) {
	rc := newReceiver(t)
	seed := twoOrgsSeed(t)
	seed.App.WebhookURL = rc.URL
	seed.Orgs[0].PullRequests = []SeedPR{{Repo: "web", Number: 2, Title: "Fix", Closes: []int{1}}}
	s := startSim(t, seed, Options{})
	res := s.do("POST", "/_sim/push", "", map[string]any{"org": "beta", "repo": ".github", "files": map[string]any{"ralph-gate.yml": "owner: beta, v2\n"}})
	if res.status != 200 {
		t.Fatalf("push: %d %s", res.status, res.body)
	}
	if res := s.do("POST", "/_sim/merge", "", map[string]any{"org": "beta", "repo": "web", "number": 2}); res.status != 200 {
		t.Fatalf("merge: %d %s", res.status, res.body)
	}
	if res := s.do("POST", "/_sim/merge", "", map[string]any{"repo": "web", "number": 2}); res.status != 404 {
		t.Fatalf("merge without org: %d %s", res.status, res.body)
	}
	s.waitIdle()
	got := rc.all()
	if len(got) != 3 {
		t.Fatalf("%d webhooks, want push, pull_request, issues", len(got))
	}
	for _, g := range got {
		if !strings.Contains(string(g.body), `"installation":{"id":3003`) || !strings.Contains(string(g.body), `"login":"beta"`) {
			t.Fatalf("%s webhook: %s", g.header.Get("X-GitHub-Event"), g.body)
		}
	}
	ev, err := github.ParseWebHook("push", got[0].body)
	if err != nil {
		t.Fatal(err)
	}
	if pe := ev.(*github.PushEvent); pe.GetRepo().GetFullName() != "beta/.github" || pe.GetOrganization().GetLogin() != "beta" {
		t.Fatalf("push %+v", pe.GetRepo())
	}
	beta := mustOrg(t, s.State(), "beta")
	if is, _ := beta.Issue("web", 1); is.State != "closed" {
		t.Fatalf("beta's issue after the merge: %+v", is)
	}
	if r, _ := beta.Repo(".github"); r.Files["ralph-gate.yml"] != "owner: beta, v2\n" || len(r.Commits) != 2 {
		t.Fatalf("beta's .github: %+v", r)
	}
	if r, _ := s.State().Repo(".github"); r.Files["ralph-gate.yml"] != "owner: acme\n" {
		t.Fatalf("acme's .github changed: %+v", r)
	}
}

// Uninstalling sends installation.deleted and refuses the installation's tokens; installing
// again sends installation.created with a new installation id; repositories removed and added
// send installation_repositories.
func TestInstallAndUninstall(t *testing.T) {
	rc := newReceiver(t)
	seed := twoOrgsSeed(t)
	seed.App.WebhookURL = rc.URL
	seed.App.Events = []string{"issues", "push"} // installation events are sent anyway
	s := startSim(t, seed, Options{})
	tokB := s.tokenOf("3003")
	jwt := "Bearer " + s.appJWT()

	res := s.do("POST", "/_sim/install", "", map[string]any{"org": "beta", "action": "deleted", "by": "bob"})
	if res.status != 200 || !strings.Contains(string(res.body), `"installed":false`) {
		t.Fatalf("uninstall: %d %s", res.status, res.body)
	}
	if r := s.do("GET", "/api/v3/repos/beta/web/issues/1", "token "+tokB, nil); r.status != 401 {
		t.Fatalf("a deleted installation's token: %d", r.status)
	}
	for _, path := range []string{"/api/v3/orgs/beta/installation", "/api/v3/app/installations/3003", "/api/v3/repos/beta/web/installation"} {
		if r := s.do("GET", path, jwt, nil); r.status != 404 {
			t.Fatalf("GET %s after uninstall: %d", path, r.status)
		}
	}
	if r := s.do("POST", "/api/v3/app/installations/3003/access_tokens", jwt, nil); r.status != 404 {
		t.Fatalf("token of a deleted installation: %d", r.status)
	}
	if r := s.do("GET", "/api/v3/app/installations", jwt, nil); r.status != 200 || strings.Contains(string(r.body), "3003") {
		t.Fatalf("installations after uninstall: %s", r.body)
	}
	if _, err := s.Push(Push{Org: "beta", Repo: ".github", Files: map[string]*string{"x": new(string)}}); err != nil {
		t.Fatal(err)
	}
	if st := mustOrg(t, s.State(), "beta"); st.Installed {
		t.Fatal("state says installed")
	}
	for _, tc := range []struct {
		body   map[string]any
		status int
	}{
		{map[string]any{"org": "beta", "action": "deleted"}, 422},
		{map[string]any{"org": "beta", "action": "added", "repositories": []string{"web"}}, 422},
		{map[string]any{"org": "nope", "action": "created"}, 404},
		{map[string]any{"org": "beta", "action": "suspend"}, 422},
		{map[string]any{"org": "beta", "action": "created", "installation_id": 2002}, 422},
	} {
		if r := s.do("POST", "/_sim/install", "", tc.body); r.status != tc.status {
			t.Fatalf("%v: %d %s", tc.body, r.status, r.body)
		}
	}

	res = s.do("POST", "/_sim/install", "", map[string]any{"org": "beta", "action": "created", "by": "bob"})
	var created InstallResult
	res.json(t, &created)
	if res.status != 200 || created.ID != 3004 || !created.Installed || created.RepositorySelection != "all" {
		t.Fatalf("reinstall: %d %s", res.status, res.body)
	}
	if r := s.do("GET", "/api/v3/repos/beta/web/issues/1", "token "+tokB, nil); r.status != 401 {
		t.Fatalf("the old token after reinstalling: %d", r.status)
	}
	tokB2 := s.tokenOf("3004")
	if r := s.do("GET", "/api/v3/repos/beta/web/issues/1", "token "+tokB2, nil); r.status != 200 {
		t.Fatalf("the new installation's token: %d %s", r.status, r.body)
	}
	res = s.do("POST", "/_sim/install", "", map[string]any{"org": "beta", "action": "removed", "repositories": []string{"web"}})
	if res.status != 200 || !strings.Contains(string(res.body), `"repository_selection":"selected"`) {
		t.Fatalf("remove a repository: %d %s", res.status, res.body)
	}
	if r := s.do("GET", "/api/v3/repos/beta/web/issues/1", "token "+tokB2, nil); r.status != 404 {
		t.Fatalf("a removed repository's issue: %d", r.status)
	}
	if r := s.do("POST", "/_sim/install", "", map[string]any{"org": "beta", "action": "added", "repositories": []string{"web"}}); r.status != 200 {
		t.Fatalf("add it back: %d %s", r.status, r.body)
	}
	s.waitIdle()

	var events []string
	var bodies [][]byte
	for _, g := range rc.all() {
		events = append(events, g.header.Get("X-GitHub-Event"))
		bodies = append(bodies, g.body)
	}
	if strings.Join(events, ",") != "installation,installation,installation_repositories,installation_repositories" {
		t.Fatalf("events %v (the push while uninstalled is not sent)", events)
	}
	ev, err := github.ParseWebHook("installation", bodies[0])
	if err != nil {
		t.Fatal(err)
	}
	del := ev.(*github.InstallationEvent)
	if del.GetAction() != "deleted" || del.GetInstallation().GetID() != 3003 || del.GetInstallation().GetAccount().GetLogin() != "beta" ||
		del.GetInstallation().GetAccount().GetType() != "Organization" || len(del.Repositories) != 2 || del.GetSender().GetLogin() != "bob" ||
		del.GetInstallation().GetPermissions().GetChecks() != "write" || del.GetInstallation().GetRepositorySelection() != "all" {
		t.Fatalf("installation.deleted %+v", del)
	}
	ev, _ = github.ParseWebHook("installation", bodies[1])
	if cr := ev.(*github.InstallationEvent); cr.GetAction() != "created" || cr.GetInstallation().GetID() != 3004 {
		t.Fatalf("installation.created %+v", cr)
	}
	ev, err = github.ParseWebHook("installation_repositories", bodies[2])
	if err != nil {
		t.Fatal(err)
	}
	rm := ev.(*github.InstallationRepositoriesEvent)
	if rm.GetAction() != "removed" || rm.GetRepositorySelection() != "selected" || len(rm.RepositoriesRemoved) != 1 ||
		rm.RepositoriesRemoved[0].GetFullName() != "beta/web" || len(rm.RepositoriesAdded) != 0 || rm.GetInstallation().GetID() != 3004 {
		t.Fatalf("installation_repositories.removed %+v", rm)
	}
	for _, dl := range s.Deliveries() {
		if (dl.Event == "installation" || dl.Event == "installation_repositories") && dl.InstallationID < 3003 {
			t.Fatalf("delivery %+v", dl)
		}
	}

	// Reset brings the seed's installation back.
	if err := s.Reset(); err != nil {
		t.Fatal(err)
	}
	if r := s.do("GET", "/api/v3/orgs/beta/installation", jwt, nil); r.status != 200 || !strings.Contains(string(r.body), `"id":3003`) {
		t.Fatalf("after reset: %d %s", r.status, r.body)
	}
}

// A seed organization may start without the App installed.
func TestSeedOrgNotInstalled(t *testing.T) {
	seed := twoOrgsSeed(t)
	no := false
	seed.Orgs[0].Installed = &no
	s := startSim(t, seed, Options{})
	if r := s.do("GET", "/api/v3/orgs/beta/installation", "Bearer "+s.appJWT(), nil); r.status != 404 {
		t.Fatalf("not installed: %d", r.status)
	}
	res, err := s.Install(Install{Org: "beta", Action: "created", Repositories: []string{".github"}})
	if err != nil || res.ID != 3003 || res.RepositorySelection != "selected" || strings.Join(res.Repositories, ",") != ".github" {
		t.Fatalf("install: %+v %v", res, err)
	}
}
