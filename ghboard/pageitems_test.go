package ghboard_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/ralph-gate/ralph-gate/ghboard"
	"github.com/ralph-gate/ralph-gate/ghsim"
)

// A project page reads each issue's blockers, open and closed, and its page URL: the health
// report's snapshot tells an issue whose blockers all closed from one that never had any.
func TestProjectItemsReadBlockersAndURL(t *testing.T) {
	seed, err := ghsim.ParseSeed([]byte(`org: acme
app: {id: 1001, slug: ralph-gate, installation_id: 2002, webhook_secret: s3cret}
users:
  - {login: alice, token: alice-token}
repos: [app]
projects:
  - number: 1
    title: Ralph
    fields:
      Workflow State: [Backlog, Ready for Plan, Done]
issues:
  - {repo: app, number: 1, title: Open blocker, project: 1, fields: {Workflow State: Backlog}}
  - {repo: app, number: 2, title: Closed blocker, state: closed, project: 1, fields: {Workflow State: Done}}
  - {repo: app, number: 3, title: Blocked by both, blocked_by: [1, 2], project: 1, fields: {Workflow State: Ready for Plan}}
  - {repo: app, number: 4, title: Unblocked, blocked_by: [2], project: 1, fields: {Workflow State: Ready for Plan}}
`))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ghsim.New(seed, ghsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url, err := srv.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	b := ghboard.New(ghboard.NewClient(&http.Client{Transport: bearer("alice-token")}, url+"/api/graphql"), "Workflow State", ghboard.NewFieldCache())

	page, err := b.ProjectItems(ctx, "acme", 1, "")
	if err != nil {
		t.Fatal(err)
	}
	want := map[int][2]int{1: {0, 0}, 2: {0, 0}, 3: {1, 2}, 4: {0, 1}} // number -> open, all blockers
	if len(page.Items) != len(want) {
		t.Fatalf("page has %d items, want %d", len(page.Items), len(want))
	}
	for _, it := range page.Items {
		if got := [2]int{it.OpenBlockers, it.Blockers}; got != want[it.Number] {
			t.Errorf("#%d: open, all blockers = %v, want %v", it.Number, got, want[it.Number])
		}
		if !strings.HasSuffix(it.URL, "/acme/app/issues/"+string(rune('0'+it.Number))) {
			t.Errorf("#%d: url %q", it.Number, it.URL)
		}
		if it.Title == "" || it.Open == (it.Number == 2) {
			t.Errorf("#%d: title %q, open %v", it.Number, it.Title, it.Open)
		}
	}
}
