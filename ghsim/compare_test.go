package ghsim

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-github/v89/github"
)

func TestLineChanges(t *testing.T) {
	for _, tc := range []struct {
		a, b       string
		adds, dels int
	}{
		{"", "", 0, 0},
		{"", "a\nb\n", 2, 0},
		{"a\nb\n", "", 0, 2},
		{"a\nb\nc\n", "a\nB\nc\n", 1, 1},
		{"a\nb\nc\n", "a\nc\n", 0, 1},
		{"a\nb\n", "a\nb\nc\nd\n", 2, 0},
		{"a\nb", "a\nb\n", 1, 1}, // a newline added at the end changes the last line
		{"x\na\ny\nb\nz\n", "a\nb\n", 0, 3},
	} {
		if adds, dels := lineChanges(tc.a, tc.b); adds != tc.adds || dels != tc.dels {
			t.Errorf("lineChanges(%q, %q) = +%d -%d, want +%d -%d", tc.a, tc.b, adds, dels, tc.adds, tc.dels)
		}
	}
}

func TestCompareCommits(t *testing.T) {
	seed := filesSeed(t)
	seed.Repos = append(seed.Repos, SeedRepo{Name: "secret", Files: map[string]string{"a": "b"}})
	seed.App.Repositories = []string{"app", ".github"}
	s := startSim(t, seed, Options{})
	first, _ := s.State().Repo(".github")
	c0 := first.Head
	str := func(s string) *string { return &s }
	// Three more commits on main: c1 modifies and adds, c2 removes, c3 modifies again.
	c1, err := s.Push(Push{Repo: ".github", By: "bob", Message: "Tighten the policy",
		Files: map[string]*string{"ralph-gate.yml": str(policyYAML + "strict: true\n"), "new.txt": str("one\ntwo\n")}})
	if err != nil {
		t.Fatal(err)
	}
	c2, err := s.Push(Push{Repo: ".github", Files: map[string]*string{"hello.txt": nil}})
	if err != nil {
		t.Fatal(err)
	}
	c3, err := s.Push(Push{Repo: ".github", Files: map[string]*string{"new.txt": str("one\n2\n")}})
	if err != nil {
		t.Fatal(err)
	}

	noContents := seed
	noContents.App.Permissions = map[string]string{"metadata": "read", "issues": "write"}
	s2 := startSim(t, noContents, Options{})
	tok2 := s2.installationToken()
	tok := s.installationToken()

	type file struct{ name, status string }
	ctx := context.Background()
	for _, tc := range []struct {
		name, token, repo, base, head string
		sim                           *sim
		status                        int
		message                       string
		want                          string // status of the comparison
		ahead, behind                 int
		commits                       []string // shas, oldest first
		files                         []file
		mergeBase                     string
	}{
		{name: "identical", token: tok, repo: ".github", base: c3.SHA, head: c3.SHA, status: 200, want: "identical", mergeBase: c3.SHA},
		{name: "ahead by one", token: tok, repo: ".github", base: c0, head: c1.SHA, status: 200, want: "ahead", ahead: 1, commits: []string{c1.SHA},
			files: []file{{"new.txt", "added"}, {"ralph-gate.yml", "modified"}}, mergeBase: c0},
		{name: "ahead by three", token: tok, repo: ".github", base: c0, head: c3.SHA, status: 200, want: "ahead", ahead: 3,
			commits: []string{c1.SHA, c2.SHA, c3.SHA}, files: []file{{"hello.txt", "removed"}, {"new.txt", "added"}, {"ralph-gate.yml", "modified"}}, mergeBase: c0},
		{name: "ahead, a file modified twice", token: tok, repo: ".github", base: c1.SHA, head: c3.SHA, status: 200, want: "ahead", ahead: 2,
			commits: []string{c2.SHA, c3.SHA}, files: []file{{"hello.txt", "removed"}, {"new.txt", "modified"}}, mergeBase: c1.SHA},
		{name: "behind", token: tok, repo: ".github", base: c3.SHA, head: c1.SHA, status: 200, want: "behind", behind: 2, mergeBase: c1.SHA},
		{name: "short shas", token: tok, repo: ".github", base: c0[:7], head: c2.SHA[:10], status: 200, want: "ahead", ahead: 2,
			commits: []string{c1.SHA, c2.SHA}, files: []file{{"hello.txt", "removed"}, {"new.txt", "added"}, {"ralph-gate.yml", "modified"}}, mergeBase: c0},
		{name: "branch name as head", token: tok, repo: ".github", base: c2.SHA, head: "main", status: 200, want: "ahead", ahead: 1,
			commits: []string{c3.SHA}, files: []file{{"new.txt", "modified"}}, mergeBase: c2.SHA},
		{name: "branch name as base", token: tok, repo: ".github", base: "main", head: c0, status: 200, want: "behind", behind: 3, mergeBase: c0},
		{name: "refs/heads/main", token: tok, repo: ".github", base: c3.SHA, head: "refs/heads/main", status: 200, want: "identical", mergeBase: c3.SHA},
		{name: "user token", token: "alice-token", repo: ".github", base: c0, head: c1.SHA, status: 200, want: "ahead", ahead: 1, commits: []string{c1.SHA},
			files: []file{{"new.txt", "added"}, {"ralph-gate.yml", "modified"}}, mergeBase: c0},
		{name: "unknown base", token: tok, repo: ".github", base: "0123456789abcdef", head: "main", status: 404, message: "Not Found"},
		{name: "unknown head", token: tok, repo: ".github", base: c0, head: "feature", status: 404, message: "Not Found"},
		{name: "prefix too short", token: tok, repo: ".github", base: c0[:6], head: "main", status: 404, message: "Not Found"},
		{name: "another repository's commit", token: tok, repo: "app", base: c0, head: "main", status: 404, message: "Not Found"},
		{name: "unknown repository", token: tok, repo: "nope", base: c0, head: "main", status: 404, message: "Not Found"},
		{name: "repository not selected", token: tok, repo: "secret", base: "main", head: "main", status: 404, message: "Not Found"},
		{name: "no contents permission", sim: s2, token: tok2, repo: ".github", base: "main", head: "main", status: 403, message: "Resource not accessible by integration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := s
			if tc.sim != nil {
				srv = tc.sim
			}
			cmp, res, err := srv.client(tc.token).Repositories.CompareCommits(ctx, "acme", tc.repo, tc.base, tc.head, nil)
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
			if cmp.GetStatus() != tc.want || cmp.GetAheadBy() != tc.ahead || cmp.GetBehindBy() != tc.behind || cmp.GetTotalCommits() != len(tc.commits) {
				t.Fatalf("status %s ahead %d behind %d total %d, want %s %d %d %d", cmp.GetStatus(), cmp.GetAheadBy(), cmp.GetBehindBy(),
					cmp.GetTotalCommits(), tc.want, tc.ahead, tc.behind, len(tc.commits))
			}
			if cmp.GetMergeBaseCommit().GetSHA() != tc.mergeBase || cmp.GetBaseCommit().GetSHA() == "" ||
				!strings.HasPrefix(cmp.GetURL(), s.url+"/api/v3/repos/acme/.github/compare/") || !strings.Contains(cmp.GetHTMLURL(), "/acme/.github/compare/") ||
				cmp.GetPermalinkURL() == "" || cmp.GetDiffURL() == "" || cmp.GetPatchURL() == "" {
				t.Fatalf("comparison %+v", cmp)
			}
			var got []string
			for _, c := range cmp.Commits {
				got = append(got, c.GetSHA())
				if c.GetCommit().GetMessage() == "" || c.GetCommit().GetAuthor().GetName() == "" || c.GetCommit().GetAuthor().GetEmail() == "" ||
					c.GetCommit().GetAuthor().GetDate().IsZero() || c.GetAuthor().GetLogin() == "" || len(c.Parents) != 1 || c.GetHTMLURL() == "" {
					t.Fatalf("commit %+v", c)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.commits, ",") {
				t.Fatalf("commits %v, want %v", got, tc.commits)
			}
			var files []file
			for _, f := range cmp.Files {
				files = append(files, file{f.GetFilename(), f.GetStatus()})
				if f.GetSHA() == "" || f.GetChanges() != f.GetAdditions()+f.GetDeletions() || f.GetChanges() == 0 || f.GetBlobURL() == "" || f.GetContentsURL() == "" {
					t.Fatalf("file %+v", f)
				}
			}
			if len(files) != len(tc.files) || (len(files) > 0 && !slices.Equal(files, tc.files)) {
				t.Fatalf("files %v, want %v", files, tc.files)
			}
		})
	}

	// The first commit's details: message, author, a file's line counts.
	cmp, _, err := s.client(tok).Repositories.CompareCommits(ctx, "acme", ".github", c0, c1.SHA, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := cmp.Commits[0]; c.GetCommit().GetMessage() != "Tighten the policy" || c.GetCommit().GetAuthor().GetName() != "bob" ||
		c.GetAuthor().GetLogin() != "bob" || c.Parents[0].GetSHA() != c0 {
		t.Fatalf("commit %+v", c)
	}
	for _, f := range cmp.Files {
		if f.GetFilename() == "ralph-gate.yml" && (f.GetAdditions() != 1 || f.GetDeletions() != 0 || f.GetSHA() != blobSHA(policyYAML+"strict: true\n")) {
			t.Fatalf("ralph-gate.yml %+v", f)
		}
	}

	// Paging: commits by page, the files on the first page only.
	p1, r1, err := s.client(tok).Repositories.CompareCommits(ctx, "acme", ".github", c0, "main", &github.ListOptions{PerPage: 2})
	if err != nil || len(p1.Commits) != 2 || p1.GetTotalCommits() != 3 || len(p1.Files) != 3 || r1.NextPage != 2 {
		t.Fatalf("page 1: %d commits, %d files, next %d, %v", len(p1.Commits), len(p1.Files), r1.NextPage, err)
	}
	p2, _, err := s.client(tok).Repositories.CompareCommits(ctx, "acme", ".github", c0, "main", &github.ListOptions{PerPage: 2, Page: 2})
	if err != nil || len(p2.Commits) != 1 || p2.Commits[0].GetSHA() != c3.SHA || len(p2.Files) != 0 {
		t.Fatalf("page 2: %+v %v", p2, err)
	}

	// Only BASE...HEAD, as GitHub documents it.
	for _, basehead := range []string{c0 + ".." + c1.SHA, c0, "..." + c1.SHA} {
		if r := s.do("GET", "/api/v3/repos/acme/.github/compare/"+basehead, "token "+tok, nil); r.status != 404 {
			t.Fatalf("%s: %d %s", basehead, r.status, r.body)
		}
	}
	// A branch written with slashes, unescaped.
	if r := s.do("GET", "/api/v3/repos/acme/.github/compare/"+c2.SHA+"...refs/heads/main", "token "+tok, nil); r.status != 200 {
		t.Fatalf("refs/heads/main unescaped: %d %s", r.status, r.body)
	}
	if n := s.Requests().Counts["rest:GET /repos/{owner}/{repo}/compare/{basehead...}"]; n == 0 {
		t.Fatalf("compare reads not logged: %v", s.Requests().Counts)
	}
}
