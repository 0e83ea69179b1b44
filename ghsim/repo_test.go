package ghsim

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v89/github"
)

const policyYAML = "workflow:\n  field: Workflow State\n"

// longText is longer than one 60-character line of base64.
var longText = strings.Repeat("policy as code, read through the contents API. ", 5)

// filesSeed is the test seed with a .github repository holding files.
func filesSeed(t testing.TB) Seed {
	seed := testSeed(t)
	seed.Repos = append(seed.Repos, SeedRepo{Name: ".github", Files: map[string]string{
		"ralph-gate.yml": policyYAML, "hello.txt": "hello\n", "docs/long.md": longText, "docs/deep/x.txt": "x"}})
	return seed
}

func statusOf(err error) int {
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return er.Response.StatusCode
	}
	return 0
}

func TestSeedRepoShapes(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, wantErr string
	}{
		{"names and mappings", "repos: [app, {name: .github, files: {ralph-gate.yml: \"a: 1\\n\"}}]", ""},
		{"unknown key", "repos: [{name: .github, file: {}}]", "field file not found"},
		{"unclean path", "repos: [{name: .github, files: {../x: a}}]", "not a clean relative path"},
		{"file and directory", "repos: [{name: .github, files: {a: x, a/b: y}}]", "is a file and a directory"},
		{"a list is no repo", "repos: [[app]]", "a repo is a name or {name, files}"},
		{"check_run webhooks", "repos: [app]\napp: {id: 1, slug: s, installation_id: 2, events: [check_run]}", "ghsim does not send check_run webhooks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := "org: acme\nusers: [{login: alice}]\n" + tc.yaml + "\n"
			if !strings.Contains(tc.yaml, "app:") {
				doc += "app: {id: 1, slug: s, installation_id: 2}\n"
			}
			_, err := ParseSeed([]byte(doc))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("ParseSeed: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("ParseSeed: %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestContents(t *testing.T) {
	seed := filesSeed(t)
	seed.Repos = append(seed.Repos, SeedRepo{Name: "secret", Files: map[string]string{"a": "b"}})
	seed.App.Repositories = []string{"app", ".github"}
	s := startSim(t, seed, Options{})
	tok := s.installationToken()
	ctx := context.Background()
	first := s.State()
	ghRepo, _ := first.Repo(".github")

	// An installation whose permissions lack contents.
	noContents := seed
	noContents.App.Permissions = map[string]string{"metadata": "read", "issues": "write"}
	s2 := startSim(t, noContents, Options{})
	tok2 := s2.installationToken()

	for _, tc := range []struct {
		name, token, owner, repo, path, ref string
		sim                                 *sim
		status                              int
		want                                string // the file's text
		dir                                 []string
		message                             string
	}{
		{name: "file", token: tok, owner: "acme", repo: ".github", path: "ralph-gate.yml", status: 200, want: policyYAML},
		{name: "long file", token: tok, owner: "acme", repo: ".github", path: "docs/long.md", status: 200, want: longText},
		{name: "by branch", token: tok, owner: "acme", repo: ".github", path: "hello.txt", ref: "main", status: 200, want: "hello\n"},
		{name: "by sha", token: tok, owner: "acme", repo: ".github", path: "hello.txt", ref: ghRepo.Head, status: 200, want: "hello\n"},
		{name: "by short sha", token: tok, owner: "acme", repo: ".github", path: "hello.txt", ref: ghRepo.Head[:7], status: 200, want: "hello\n"},
		{name: "user token", token: "alice-token", owner: "acme", repo: ".github", path: "hello.txt", status: 200, want: "hello\n"},
		{name: "directory", token: tok, owner: "acme", repo: ".github", path: "docs", status: 200, dir: []string{"docs/deep", "docs/long.md"}},
		{name: "root", token: tok, owner: "acme", repo: ".github", path: "", status: 200, dir: []string{"docs", "hello.txt", "ralph-gate.yml"}},
		{name: "missing file", token: tok, owner: "acme", repo: ".github", path: "nope.yml", status: 404, message: "Not Found"},
		{name: "missing repo", token: tok, owner: "acme", repo: "nope", path: "ralph-gate.yml", status: 404, message: "Not Found"},
		{name: "missing org", token: tok, owner: "other", repo: ".github", path: "ralph-gate.yml", status: 404, message: "Not Found"},
		{name: "unknown ref", token: tok, owner: "acme", repo: ".github", path: "hello.txt", ref: "feature", status: 404, message: "No commit found for the ref feature"},
		{name: "repository not selected", token: tok, owner: "acme", repo: "secret", path: "a", status: 404, message: "Not Found"},
		{name: "user sees any repository", token: "alice-token", owner: "acme", repo: "secret", path: "a", status: 200, want: "b"},
		{name: "no contents permission", sim: s2, token: tok2, owner: "acme", repo: ".github", path: "hello.txt", status: 403, message: "Resource not accessible by integration"},
		{name: "bad token", token: "nope", owner: "acme", repo: ".github", path: "hello.txt", status: 401, message: "Bad credentials"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := s
			if tc.sim != nil {
				srv = tc.sim
			}
			file, dir, res, err := srv.client(tc.token).Repositories.GetContents(ctx, tc.owner, tc.repo, tc.path, &github.RepositoryContentGetOptions{Ref: tc.ref})
			if tc.status != 200 {
				var er *github.ErrorResponse
				if !errors.As(err, &er) || er.Response.StatusCode != tc.status || er.Message != tc.message {
					t.Fatalf("err = %v, want %d %q", err, tc.status, tc.message)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Header.Get("X-Ratelimit-Resource") != "core" || res.Header.Get("X-Ratelimit-Used") == "" {
				t.Errorf("rate-limit headers: %v", res.Header)
			}
			if tc.dir != nil {
				var got []string
				for _, e := range dir {
					got = append(got, e.GetPath())
				}
				if strings.Join(got, ",") != strings.Join(tc.dir, ",") {
					t.Fatalf("dir = %v, want %v", got, tc.dir)
				}
				return
			}
			text, err := file.GetContent()
			if err != nil || text != tc.want {
				t.Fatalf("content = %q, %v; want %q", text, err, tc.want)
			}
			if file.GetType() != "file" || file.GetEncoding() != "base64" || file.GetSize() != len(tc.want) || file.GetSHA() != blobSHA(tc.want) ||
				file.GetName() != tc.path[strings.LastIndex(tc.path, "/")+1:] || file.GetPath() != tc.path ||
				!strings.HasPrefix(file.GetURL(), s.url+"/api/v3/repos/acme/") || file.GetHTMLURL() == "" || file.GetGitURL() == "" || file.GetDownloadURL() == "" {
				t.Fatalf("file = %+v", file)
			}
			for _, line := range strings.Split(strings.TrimSuffix(*file.Content, "\n"), "\n") {
				if len(line) > 60 {
					t.Fatalf("base64 line of %d characters: GitHub wraps at 60", len(line))
				}
			}
		})
	}

	// The blob sha is git's: `printf 'hello\n' | git hash-object --stdin`.
	if got := blobSHA("hello\n"); got != "ce013625030ba8dba906f756967f9e9ca394464a" {
		t.Fatalf("blobSHA = %s", got)
	}
	if n := s.Requests().Counts["rest:GET /repos/{owner}/{repo}/contents/{path...}"]; n == 0 {
		t.Fatalf("contents reads not logged: %v", s.Requests().Counts)
	}
}

func TestPushSendsSignedPushWebhook(t *testing.T) {
	rc := newReceiver(t)
	seed := filesSeed(t)
	seed.App.WebhookURL = rc.URL + "/hook"
	seed.App.WebhookSecret = "push-s3cret-0123456789"
	s := startSim(t, seed, Options{})
	before := s.State()
	ghRepo, _ := before.Repo(".github")
	newPolicy := "workflow:\n  field: Status\n"

	res := s.do("POST", "/_sim/push", "", map[string]any{"repo": ".github", "by": "bob",
		"files": map[string]any{"ralph-gate.yml": newPolicy, "hello.txt": nil, "new/file.txt": "n"}})
	if res.status != 200 {
		t.Fatalf("push: %d %s", res.status, res.body)
	}
	var pushed PushResult
	res.json(t, &pushed)
	if pushed.Before != ghRepo.Head || len(pushed.SHA) != 40 || strings.Trim(pushed.SHA, "0123456789abcdef") != "" || pushed.SHA == pushed.Before {
		t.Fatalf("push answered %+v (head was %s)", pushed, ghRepo.Head)
	}
	s.waitIdle()
	got := rc.all()
	if len(got) != 1 {
		t.Fatalf("%d webhooks, want 1", len(got))
	}
	h := got[0].header
	mac := hmac.New(sha256.New, []byte(seed.App.WebhookSecret))
	mac.Write(got[0].body)
	if h.Get("X-GitHub-Event") != "push" || h.Get("X-Hub-Signature-256") != "sha256="+hex.EncodeToString(mac.Sum(nil)) {
		t.Fatalf("headers %v", h)
	}
	if err := github.ValidateSignature(h.Get("X-Hub-Signature-256"), got[0].body, []byte(seed.App.WebhookSecret)); err != nil {
		t.Fatalf("go-github rejects the signature: %v", err)
	}
	ev, err := github.ParseWebHook("push", got[0].body)
	if err != nil {
		t.Fatalf("ParseWebHook: %v", err)
	}
	pe, ok := ev.(*github.PushEvent)
	if !ok {
		t.Fatalf("parsed %T", ev)
	}
	hc := pe.GetHeadCommit()
	if pe.GetRef() != "refs/heads/main" || pe.GetBefore() != pushed.Before || pe.GetAfter() != pushed.SHA || pe.GetCreated() || pe.GetDeleted() || pe.GetForced() ||
		!strings.Contains(pe.GetCompare(), "/acme/.github/compare/") || len(pe.Commits) != 1 || hc.GetID() != pushed.SHA || !hc.GetDistinct() ||
		strings.Join(hc.Added, ",") != "new/file.txt" || strings.Join(hc.Removed, ",") != "hello.txt" || strings.Join(hc.Modified, ",") != "ralph-gate.yml" ||
		hc.GetAuthor().GetLogin() != "bob" || hc.GetTimestamp().IsZero() || hc.GetMessage() == "" {
		t.Fatalf("push event %+v, head commit %+v", pe, hc)
	}
	r := pe.GetRepo()
	if r.GetName() != ".github" || r.GetFullName() != "acme/.github" || r.GetOwner().GetLogin() != "acme" || r.GetDefaultBranch() != "main" ||
		r.GetID() == 0 || r.GetNodeID() == "" || r.GetPrivate() || r.GetPushedAt().IsZero() || r.GetCreatedAt().IsZero() {
		t.Fatalf("repository %+v", r)
	}
	if pe.GetPusher().GetName() != "bob" || pe.GetPusher().GetEmail() == "" || pe.GetSender().GetLogin() != "bob" ||
		pe.GetOrganization().GetLogin() != "acme" || pe.GetInstallation().GetID() != 2002 || pe.GetInstallation().GetNodeID() == "" {
		t.Fatalf("push event pusher %+v sender %+v org %+v installation %+v", pe.GetPusher(), pe.GetSender(), pe.GetOrganization(), pe.GetInstallation())
	}
	// No action: GitHub's push payload has none.
	var raw map[string]any
	_ = json.Unmarshal(got[0].body, &raw)
	if _, has := raw["action"]; has {
		t.Fatal("push payload has an action")
	}

	// The delivery is recorded like any other, and can be redelivered with its GUID.
	ds := s.Deliveries()
	if len(ds) != 1 || ds[0].Event != "push" || ds[0].InstallationID != 2002 || ds[0].RepositoryID == nil || !ds[0].Success() {
		t.Fatalf("deliveries %+v", ds)
	}
	if res := s.do("POST", "/api/v3/app/hook/deliveries/"+jsonNumber(ds[0].ID)+"/attempts", "Bearer "+s.appJWT(), nil); res.status != 202 {
		t.Fatalf("redeliver: %d %s", res.status, res.body)
	}
	s.waitIdle()
	if again := rc.all(); len(again) != 2 || again[1].header.Get("X-GitHub-Delivery") != h.Get("X-GitHub-Delivery") {
		t.Fatalf("redelivery: %d", len(again))
	}

	// The contents API reads the new head, and the old commit by its sha.
	c := s.client(s.installationToken())
	file, _, _, err := c.Repositories.GetContents(context.Background(), "acme", ".github", "ralph-gate.yml", nil)
	if text, _ := file.GetContent(); err != nil || text != newPolicy {
		t.Fatalf("after push: %q %v", text, err)
	}
	if _, _, _, err := c.Repositories.GetContents(context.Background(), "acme", ".github", "hello.txt", nil); statusOf(err) != 404 {
		t.Fatalf("deleted file: %v", err)
	}
	file, _, _, err = c.Repositories.GetContents(context.Background(), "acme", ".github", "hello.txt", &github.RepositoryContentGetOptions{Ref: pushed.Before})
	if text, _ := file.GetContent(); err != nil || text != "hello\n" {
		t.Fatalf("at the old commit: %q %v", text, err)
	}
	st, _ := s.State().Repo(".github")
	if st.Head != pushed.SHA || len(st.Commits) != 2 || st.Files["ralph-gate.yml"] != newPolicy || st.Commits[1].Author != "bob" {
		t.Fatalf("state %+v", st)
	}
}

func jsonNumber(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestPushRefusals(t *testing.T) {
	s := startSim(t, filesSeed(t), Options{})
	text := "x"
	for _, tc := range []struct {
		name   string
		body   map[string]any
		status int
		want   string
	}{
		{"unknown repo", map[string]any{"repo": "nope", "files": map[string]any{"a": text}}, 404, "no repository acme/nope"},
		{"unknown org", map[string]any{"org": "other", "repo": ".github", "files": map[string]any{"a": text}}, 404, "no repository other/.github"},
		{"unknown user", map[string]any{"repo": ".github", "by": "zed", "files": map[string]any{"a": text}}, 404, "no user"},
		{"delete a missing file", map[string]any{"repo": ".github", "files": map[string]any{"nope": nil}}, 422, "no such file"},
		{"unclean path", map[string]any{"repo": ".github", "files": map[string]any{"/a/../b": text}}, 422, "not a clean relative path"},
		{"file under a file", map[string]any{"repo": ".github", "files": map[string]any{"hello.txt/x": text}}, 422, "is a file and a directory"},
		{"unknown key", map[string]any{"repo": ".github", "branch": "dev"}, 400, "unknown field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := s.do("POST", "/_sim/push", "", tc.body)
			if res.status != tc.status || !strings.Contains(string(res.body), tc.want) {
				t.Fatalf("%d %s, want %d %q", res.status, res.body, tc.status, tc.want)
			}
		})
	}
}

// A push is sent only to an App subscribed to push, and only for a repository its installation
// sees.
func TestPushWebhookNeedsSubscriptionAndSelection(t *testing.T) {
	rc := newReceiver(t)
	seed := filesSeed(t)
	seed.App.WebhookURL = rc.URL
	seed.App.Events = []string{"issues"}
	s := startSim(t, seed, Options{})
	if _, err := s.Push(Push{Repo: ".github", Files: map[string]*string{"a": new(string)}}); err != nil {
		t.Fatal(err)
	}
	seed.App.Events = nil
	seed.App.Repositories = []string{"app"}
	s2 := startSim(t, seed, Options{})
	if _, err := s2.Push(Push{Repo: ".github", Files: map[string]*string{"a": new(string)}}); err != nil {
		t.Fatal(err)
	}
	s.waitIdle()
	s2.waitIdle()
	if n := len(rc.all()); n != 0 {
		t.Fatalf("%d webhooks, want none", n)
	}
}

func TestCheckRuns(t *testing.T) {
	seed := filesSeed(t)
	s := startSim(t, seed, Options{})
	tok := s.installationToken()
	ctx := context.Background()
	c := s.client(tok)
	head, _ := s.State().Repo(".github")
	sha := head.Head

	started := time.Date(2026, 2, 1, 10, 0, 0, 0, time.UTC)
	run, res, err := c.Checks.CreateCheckRun(ctx, "acme", ".github", github.CreateCheckRunOptions{
		Name: "ralph-gate policy", HeadSHA: sha, Status: github.Ptr("in_progress"), StartedAt: &github.Timestamp{Time: started},
		ExternalID: github.Ptr("policy-1"),
		Output: &github.CheckRunOutput{Title: github.Ptr("Validating"), Summary: github.Ptr("Reading ralph-gate.yml"),
			Annotations: []*github.CheckRunAnnotation{{Path: github.Ptr("ralph-gate.yml"), StartLine: github.Ptr(2), EndLine: github.Ptr(2),
				AnnotationLevel: github.Ptr("warning"), Message: github.Ptr("unknown field"), Title: github.Ptr("field")}}},
	})
	if err != nil || res.StatusCode != 201 {
		t.Fatalf("create: %v", err)
	}
	if run.GetID() == 0 || run.GetNodeID() == "" || run.GetHeadSHA() != sha || run.GetName() != "ralph-gate policy" || run.GetStatus() != "in_progress" ||
		run.Conclusion != nil || !run.GetStartedAt().Time.Equal(started) || run.CompletedAt != nil || run.GetOutput().GetAnnotationsCount() != 1 ||
		run.GetOutput().GetTitle() != "Validating" || run.GetApp().GetID() != 1001 || run.GetApp().GetSlug() != "ralph-gate" ||
		run.GetHTMLURL() == "" || run.GetURL() != s.url+"/api/v3/repos/acme/.github/check-runs/"+jsonNumber(run.GetID()) || run.GetCheckSuite().GetID() == 0 || run.GetExternalID() != "policy-1" {
		t.Fatalf("created %+v", run)
	}

	upd, _, err := c.Checks.UpdateCheckRun(ctx, "acme", ".github", run.GetID(), github.UpdateCheckRunOptions{
		Conclusion: github.Ptr("failure"),
		Output: &github.CheckRunOutput{Title: github.Ptr("1 problem"), Summary: github.Ptr("ralph-gate.yml is invalid"), Text: github.Ptr("details"),
			Annotations: []*github.CheckRunAnnotation{{Path: github.Ptr("ralph-gate.yml"), StartLine: github.Ptr(1), EndLine: github.Ptr(1),
				AnnotationLevel: github.Ptr("failure"), Message: github.Ptr("bad")}}},
	})
	if err != nil || upd.GetStatus() != "completed" || upd.GetConclusion() != "failure" || upd.CompletedAt == nil || upd.GetName() != "ralph-gate policy" ||
		upd.GetOutput().GetAnnotationsCount() != 2 || upd.GetOutput().GetSummary() != "ralph-gate.yml is invalid" {
		t.Fatalf("update: %+v %v", upd, err)
	}

	// A second run of the same name: "latest" lists only it, "all" both.
	if _, _, err := c.Checks.CreateCheckRun(ctx, "acme", ".github", github.CreateCheckRunOptions{Name: "ralph-gate policy", HeadSHA: sha,
		Conclusion: github.Ptr("success"), Output: &github.CheckRunOutput{Title: github.Ptr("OK"), Summary: github.Ptr("valid")}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ref, filter string
		want        int
	}{{"main", "", 1}, {sha, "all", 2}, {sha[:10], "latest", 1}} {
		opts := &github.ListCheckRunsOptions{}
		if tc.filter != "" {
			opts.Filter = github.Ptr(tc.filter)
		}
		list, _, err := s.client("alice-token").Checks.ListCheckRunsForRef(ctx, "acme", ".github", tc.ref, opts)
		if err != nil || list.GetTotal() != tc.want || len(list.CheckRuns) != tc.want {
			t.Fatalf("list %s %s: %+v %v", tc.ref, tc.filter, list, err)
		}
		if list.CheckRuns[0].GetConclusion() != "success" {
			t.Fatalf("newest first: %+v", list.CheckRuns[0])
		}
	}
	anns, _, err := c.Checks.ListCheckRunAnnotations(ctx, "acme", ".github", run.GetID(), nil)
	if err != nil || len(anns) != 2 || anns[1].GetMessage() != "bad" {
		t.Fatalf("annotations: %v %v", anns, err)
	}

	// /_sim/state lists the runs, oldest first, with their output and annotations.
	var st State
	s.do("GET", "/_sim/state", "", nil).json(t, &st)
	if len(st.CheckRuns) != 2 {
		t.Fatalf("state check runs: %+v", st.CheckRuns)
	}
	cr := st.CheckRuns[0]
	if cr.Repo != ".github" || cr.HeadSHA != sha || cr.Name != "ralph-gate policy" || cr.Status != "completed" || cr.Conclusion != "failure" ||
		cr.Output.Title != "1 problem" || cr.Output.Text != "details" || len(cr.Output.Annotations) != 2 || cr.Output.Annotations[0].StartLine != 2 ||
		cr.Output.Annotations[1].AnnotationLevel != "failure" || cr.ExternalID != "policy-1" {
		t.Fatalf("state check run %+v", cr)
	}
	if latest, ok := st.LatestCheckRun(".github", "ralph-gate policy"); !ok || latest.Conclusion != "success" {
		t.Fatalf("latest %+v", latest)
	}
}

func TestCheckRunRefusals(t *testing.T) {
	seed := filesSeed(t)
	s := startSim(t, seed, Options{})
	tok := s.installationToken()
	head, _ := s.State().Repo(".github")
	sha := head.Head
	noChecks := seed
	noChecks.App.Permissions = map[string]string{"metadata": "read", "contents": "read"}
	s2 := startSim(t, noChecks, Options{})
	tok2 := s2.installationToken()

	annotations := func(n int) []any {
		out := []any{}
		for range n {
			out = append(out, map[string]any{"path": "a", "start_line": 1, "end_line": 1, "annotation_level": "notice", "message": "m"})
		}
		return out
	}
	output := func(n int) map[string]any {
		return map[string]any{"title": "t", "summary": "s", "annotations": annotations(n)}
	}
	for _, tc := range []struct {
		name   string
		sim    *sim
		token  string
		repo   string
		body   map[string]any
		status int
		want   string
	}{
		{name: "name required", body: map[string]any{"head_sha": sha}, status: 422, want: `\"name\" wasn't supplied.`},
		{name: "empty name", body: map[string]any{"name": "", "head_sha": sha}, status: 422, want: `\"name\" wasn't supplied.`},
		{name: "head_sha required", body: map[string]any{"name": "n"}, status: 422, want: `\"head_sha\" wasn't supplied.`},
		{name: "unknown commit", body: map[string]any{"name": "n", "head_sha": strings.Repeat("ab", 20)}, status: 422, want: "No commit found for SHA: " + strings.Repeat("ab", 20)},
		{name: "commit of another repository", repo: "app", body: map[string]any{"name": "n", "head_sha": sha}, status: 422, want: "No commit found for SHA"},
		{name: "completed needs a conclusion", body: map[string]any{"name": "n", "head_sha": sha, "status": "completed"}, status: 422, want: `\"conclusion\" wasn't supplied.`},
		{name: "completed_at needs a conclusion", body: map[string]any{"name": "n", "head_sha": sha, "completed_at": "2026-01-01T00:00:00Z"}, status: 422, want: `\"conclusion\" wasn't supplied.`},
		{name: "unknown status", body: map[string]any{"name": "n", "head_sha": sha, "status": "done"}, status: 422, want: "is not a member of"},
		{name: "stale is GitHub's", body: map[string]any{"name": "n", "head_sha": sha, "conclusion": "stale"}, status: 422, want: "is not a member of"},
		{name: "bad time", body: map[string]any{"name": "n", "head_sha": sha, "started_at": "yesterday"}, status: 422, want: "is not a date-time"},
		{name: "output needs a summary", body: map[string]any{"name": "n", "head_sha": sha, "output": map[string]any{"title": "t"}}, status: 422, want: "output.summary"},
		{name: "50 annotations", body: map[string]any{"name": "n", "head_sha": sha, "output": output(50)}, status: 201},
		{name: "51 annotations", body: map[string]any{"name": "n", "head_sha": sha, "output": output(51)}, status: 422, want: "at most 50 per request"},
		{name: "annotation level", body: map[string]any{"name": "n", "head_sha": sha, "output": map[string]any{"title": "t", "summary": "s",
			"annotations": []any{map[string]any{"path": "a", "start_line": 1, "end_line": 1, "annotation_level": "error", "message": "m"}}}}, status: 422, want: "is not a member of"},
		{name: "annotation without message", body: map[string]any{"name": "n", "head_sha": sha, "output": map[string]any{"title": "t", "summary": "s",
			"annotations": []any{map[string]any{"path": "a", "start_line": 1, "end_line": 1, "annotation_level": "notice"}}}}, status: 422, want: "message"},
		{name: "actions are not modelled", body: map[string]any{"name": "n", "head_sha": sha, "actions": []any{map[string]any{"label": "x"}}}, status: 422, want: "ghsim does not model"},
		{name: "unknown key", body: map[string]any{"name": "n", "head_sha": sha, "colour": "red"}, status: 400, want: "unknown field"},
		{name: "unknown repo", repo: "nope", body: map[string]any{"name": "n", "head_sha": sha}, status: 404, want: "Not Found"},
		{name: "user token", token: "alice-token", body: map[string]any{"name": "n", "head_sha": sha}, status: 403, want: "You must authenticate via a GitHub App."},
		{name: "no checks permission", sim: s2, token: tok2, body: map[string]any{"name": "n", "head_sha": sha}, status: 403, want: "Resource not accessible by integration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, token, repo := s, tok, ".github"
			if tc.sim != nil {
				srv = tc.sim
			}
			if tc.token != "" {
				token = tc.token
			}
			if tc.repo != "" {
				repo = tc.repo
			}
			res := srv.do("POST", "/api/v3/repos/acme/"+repo+"/check-runs", "token "+token, tc.body)
			if res.status != tc.status || !strings.Contains(string(res.body), tc.want) {
				t.Fatalf("%d %s, want %d %q", res.status, res.body, tc.status, tc.want)
			}
		})
	}

	// PATCH and the reads refuse alike.
	if res := s.do("PATCH", "/api/v3/repos/acme/.github/check-runs/1", "token "+tok, map[string]any{"status": "completed", "conclusion": "success"}); res.status != 404 {
		t.Fatalf("patch unknown run: %d %s", res.status, res.body)
	}
	if res := s2.do("GET", "/api/v3/repos/acme/.github/commits/main/check-runs", "token "+tok2, nil); res.status != 403 {
		t.Fatalf("list without checks permission: %d %s", res.status, res.body)
	}
	if res := s.do("GET", "/api/v3/repos/acme/.github/commits/nope/check-runs", "token "+tok, nil); res.status != 404 {
		t.Fatalf("list for an unknown ref: %d %s", res.status, res.body)
	}
	created := s.do("POST", "/api/v3/repos/acme/.github/check-runs", "token "+tok, map[string]any{"name": "n", "head_sha": sha})
	var run struct {
		ID int64 `json:"id"`
	}
	created.json(t, &run)
	path := "/api/v3/repos/acme/.github/check-runs/" + jsonNumber(run.ID)
	if res := s.do("PATCH", path, "token "+tok, map[string]any{"status": "completed"}); res.status != 422 {
		t.Fatalf("patch completed without conclusion: %d %s", res.status, res.body)
	}
	if res := s.do("PATCH", path, "token alice-token", map[string]any{"conclusion": "success"}); res.status != 403 {
		t.Fatalf("patch with a user token: %d %s", res.status, res.body)
	}
	if res := s.do("GET", path, "token "+tok, nil); res.status != 200 || !strings.Contains(string(res.body), `"status":"queued"`) {
		t.Fatalf("a refused patch changed the run: %d %s", res.status, res.body)
	}
	if res := s.do("PATCH", "/api/v3/repos/acme/app/check-runs/"+jsonNumber(run.ID), "token "+tok, map[string]any{"conclusion": "success"}); res.status != 404 {
		t.Fatalf("patch through another repository: %d %s", res.status, res.body)
	}
	if res := s.do("GET", "/api/v3/repos/acme/.github/commits/main/check-runs", "token "+tok, nil); res.status != 200 {
		t.Fatalf("list: %d", res.status)
	}
	if n := s.Requests().Counts["rest:POST /repos/{owner}/{repo}/check-runs"]; n == 0 {
		t.Fatal("check run creations not logged")
	}
}
