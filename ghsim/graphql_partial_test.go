package ghsim

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/ghboard"
)

// GitHub answers a GraphQL document with its data and its errors together: a field it could
// not resolve is null, with an error naming its path and type ("partial results"). These tests
// hold ghsim to that, and ghboard's handling of it to ghsim.

type tokenTransport string

func (tok tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "token "+string(tok))
	return http.DefaultTransport.RoundTrip(r)
}

func (s *sim) ghboard(token string) *ghboard.Board {
	c := ghboard.NewClient(&http.Client{Transport: tokenTransport(token)}, s.url+"/api/graphql", ghboard.WithMinWriteGap(0))
	return ghboard.New(c, "Workflow State", ghboard.NewFieldCache())
}

// hiddenRepoSim is the test world plus a repository "secret" the app is not installed on
// (app.repositories: [app]): issue #1 of app gets secret#1 as a sub-issue and secret#2 as a
// blocker (made by alice, who sees both repositories).
func hiddenRepoSim(t *testing.T) (*sim, map[string]string) {
	t.Helper()
	seed := testSeed(t)
	seed.Repos = append(seed.Repos, SeedRepo{Name: "secret"})
	seed.App.Repositories = []string{"app"}
	seed.Issues = append(seed.Issues,
		SeedIssue{Repo: "secret", Number: 1, Title: "Hidden child"},
		SeedIssue{Repo: "secret", Number: 2, Title: "Hidden blocker"})
	s := startSim(t, seed, Options{})
	ids := map[string]string{}
	for _, is := range s.State().Issues {
		ids[fmt.Sprintf("%s#%d", is.Repo, is.Number)] = is.NodeID
	}
	s.gqlOK("alice-token", `mutation($p: ID!, $c: ID!, $b: ID!) {
	  addSubIssue(input: {issueId: $p, subIssueId: $c}) { issue { id } }
	  addBlockedBy(input: {issueId: $p, blockingIssueId: $b}) { issue { id } } }`,
		map[string]any{"p": ids["app#1"], "c": ids["secret#1"], "b": ids["secret#2"]})
	return s, ids
}

const familyProbe = `query($id: ID!) { node(id: $id) { ... on Issue { number
  subIssues(first: 10) { nodes { number repository { name } } }
  blockedBy(first: 10) { nodes { number } } } } }`

// An issue in a repository the installation cannot see is null in the data, with a FORBIDDEN
// "Resource not accessible by integration" error at its path; the rest of the data is there.
// Users who can see the repository get it all.
func TestHiddenRepositoryIsForbiddenToTheInstallation(t *testing.T) {
	s, ids := hiddenRepoSim(t)
	tok := s.installationToken()
	g := s.gql(tok, familyProbe, map[string]any{"id": ids["app#1"]})
	if g.raw.status != 200 || g.Data == nil {
		t.Fatalf("%d %s", g.raw.status, g.raw.body)
	}
	subs := dig(g.Data, "node", "subIssues", "nodes").([]any)
	if len(subs) != 4 || subs[3] != nil || dig(subs[0], "number") != float64(2) {
		t.Fatalf("sub-issues %v", subs)
	}
	blockers := dig(g.Data, "node", "blockedBy", "nodes").([]any)
	if len(blockers) != 1 || blockers[0] != nil {
		t.Fatalf("blockers %v", blockers)
	}
	paths := map[string]bool{}
	for _, e := range g.Errors {
		if e["type"] != "FORBIDDEN" || e["message"] != "Resource not accessible by integration" {
			t.Fatalf("error %v", e)
		}
		paths[fmt.Sprint(e["path"])] = true
	}
	if len(g.Errors) != 2 || !paths["[node subIssues nodes 3]"] || !paths["[node blockedBy nodes 0]"] {
		t.Fatalf("errors %v", g.Errors)
	}
	// The issue itself, read by id; its repository by name (GitHub: not found); a comment on it.
	if g := s.gql(tok, `query($id: ID!) { node(id: $id) { id } }`, map[string]any{"id": ids["secret#1"]}); len(g.Errors) != 1 || g.Errors[0]["type"] != "FORBIDDEN" || dig(g.Data, "node") != nil {
		t.Fatalf("by id: %s", g.raw.body)
	}
	if g := s.gql(tok, `{ repository(owner: "acme", name: "secret") { id } }`, nil); len(g.Errors) != 1 || g.Errors[0]["type"] != "NOT_FOUND" {
		t.Fatalf("repository: %s", g.raw.body)
	}
	if g := s.gql(tok, `mutation($id: ID!) { addComment(input: {subjectId: $id, body: "hi"}) { commentEdge { node { id } } } }`, map[string]any{"id": ids["secret#1"]}); len(g.Errors) != 1 || g.Errors[0]["type"] != "FORBIDDEN" {
		t.Fatalf("comment: %s", g.raw.body)
	}
	if is, _ := s.State().Issue("secret", 1); len(is.Comments) != 0 {
		t.Fatal("a forbidden comment was written")
	}
	// alice sees everything.
	if g := s.gql("alice-token", familyProbe, map[string]any{"id": ids["app#1"]}); len(g.Errors) != 0 {
		t.Fatalf("a user: %s", g.raw.body)
	}
}

// ghboard's family read keeps what the installation may see and leaves out the rest.
func TestGhboardFamilyWithAHiddenRelative(t *testing.T) {
	s, ids := hiddenRepoSim(t)
	b := s.ghboard(s.installationToken())
	project := s.board("alice-token").project
	fam, err := b.Family(context.Background(), ids["app#1"], project)
	if err != nil {
		t.Fatal(err)
	}
	var kids []string
	for _, c := range fam.Children {
		kids = append(kids, fmt.Sprintf("%s#%d", c.Repo, c.Number))
	}
	if fmt.Sprint(kids) != "[acme/app#2 acme/app#3 acme/app#4]" || len(fam.OpenBlockers) != 0 {
		t.Fatalf("children %v, blockers %+v", kids, fam.OpenBlockers)
	}
	// The child's own family: its parent is visible.
	fam, err = b.Family(context.Background(), ids["app#2"], project)
	if err != nil || fam.Parent == nil || fam.Parent.Number != 1 {
		t.Fatalf("%+v %v", fam, err)
	}
}

// A node deleted between two reads: data.node is null and a NOT_FOUND error names the path; the
// adapter reads it as enforcement's not-found.
func TestDeletedNodeIsNotFound(t *testing.T) {
	s := startSim(t, testSeed(t), Options{})
	b := s.board("alice-token")
	s.gqlOK("alice-token", `mutation($p: ID!, $i: ID!) { deleteProjectV2Item(input: {projectId: $p, itemId: $i}) { deletedItemId } }`,
		map[string]any{"p": b.project, "i": b.items[3]})
	g := s.gql("alice-token", `query($id: ID!) { node(id: $id) { id } }`, map[string]any{"id": b.items[3]})
	if g.raw.status != 200 || !strings.Contains(string(g.raw.body), `"data":{"node":null}`) || len(g.Errors) != 1 ||
		g.Errors[0]["type"] != "NOT_FOUND" || fmt.Sprint(g.Errors[0]["path"]) != "[node]" {
		t.Fatalf("%s", g.raw.body)
	}
	_, err := s.ghboard(s.installationToken()).Item(context.Background(), b.items[3])
	if !errors.Is(err, enforce.ErrNotFound) {
		t.Fatalf("item read: %v", err)
	}
}

// A batched mutation where one alias fails: the other aliases run and their data comes back
// with an error at the failed alias's path. ghboard reports the write that did not happen, and
// does not send the others again.
func TestBatchedMutationWithAFailedAlias(t *testing.T) {
	s := startSim(t, testSeed(t), Options{})
	ids := s.board("alice-token")
	s.gqlOK("alice-token", `mutation($p: ID!, $i: ID!) { deleteProjectV2Item(input: {projectId: $p, itemId: $i}) { deletedItemId } }`,
		map[string]any{"p": ids.project, "i": ids.items[3]})
	g := s.gql("alice-token", `mutation($p: ID!, $f: ID!, $o: String!, $a: ID!, $b: ID!) {
	  m0: updateProjectV2ItemFieldValue(input: {projectId: $p, itemId: $a, fieldId: $f, value: {singleSelectOptionId: $o}}) { projectV2Item { id } }
	  m1: updateProjectV2ItemFieldValue(input: {projectId: $p, itemId: $b, fieldId: $f, value: {singleSelectOptionId: $o}}) { projectV2Item { id } } }`,
		map[string]any{"p": ids.project, "f": ids.field, "o": ids.options["Ready for Plan"], "a": ids.items[2], "b": ids.items[3]})
	if dig(g.Data, "m0", "projectV2Item", "id") != ids.items[2] || g.Data["m1"] != nil || len(g.Errors) != 1 ||
		fmt.Sprint(g.Errors[0]["path"]) != "[m1]" || g.Errors[0]["type"] != "NOT_FOUND" {
		t.Fatalf("%s", g.raw.body)
	}
	if is, _ := s.State().Issue("app", 2); is.Fields["Workflow State"] != "Ready for Plan" {
		t.Fatalf("the other alias did not run: %v", is.Fields)
	}

	// Through ghboard, as the app writes a cascade.
	b := s.ghboard(s.installationToken())
	var writes []enforce.StateWrite
	for _, n := range []int{4, 3, 5} {
		it := enforce.Item{ID: ids.items[n], ProjectID: ids.project, ProjectNumber: 1, Owner: "acme", Number: n}
		writes = append(writes, enforce.StateWrite{Item: it, State: "In Progress"})
	}
	before := s.Requests().Counts["graphql:updateProjectV2ItemFieldValue"]
	err := b.SetStates(context.Background(), writes)
	var we *ghboard.WritesError
	if !errors.As(err, &we) || len(we.Failed) != 1 || we.Failed[0].Write.Item.Number != 3 || we.Failed[0].Type != "NOT_FOUND" || we.Written != 2 {
		t.Fatalf("%v", err)
	}
	if sent := s.Requests().Counts["graphql:updateProjectV2ItemFieldValue"] - before; sent != 3 {
		t.Fatalf("%d field writes sent; want the batch of 3 once (nothing to retry)", sent)
	}
	st := s.State()
	for _, n := range []int{4, 5} {
		if is, _ := st.Issue("app", n); is.Fields["Workflow State"] != "In Progress" {
			t.Fatalf("#%d: %v", n, is.Fields)
		}
	}
}

// "If you exceed a secondary rate limit, the response status will be 200 or 403": ghsim
// answers GraphQL in either shape (at random, or pinned), REST with 403, each with retry-after
// (or without, when asked: then the identity waits a minute).
func TestSecondaryRateLimitShapes(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	s := startSim(t, testSeed(t), Options{Clock: clock.Now})
	users := []string{"alice-token", "bob-token", "agent1-token", "agent2-token"}

	_ = s.SetFaults(Faults{SecondaryRateLimitRate: 1, RetryAfterS: 3, SecondaryRateLimitStatus: 200})
	g := s.gql("alice-token", `{ viewer { login } }`, nil)
	if g.raw.status != 200 || g.raw.header.Get("Retry-After") != "3" || len(g.Errors) != 1 || g.Errors[0]["type"] != "RATE_LIMITED" ||
		!strings.Contains(fmt.Sprint(g.Errors[0]["message"]), "secondary rate limit") || g.raw.header.Get("X-Ratelimit-Remaining") == "0" {
		t.Fatalf("200 shape: %d %v %s", g.raw.status, g.raw.header, g.raw.body)
	}
	_ = s.SetFaults(Faults{SecondaryRateLimitRate: 1, RetryAfterS: 3, SecondaryRateLimitStatus: 403})
	if g := s.gql("bob-token", `{ viewer { login } }`, nil); g.raw.status != 403 || !strings.Contains(string(g.raw.body), "secondary rate limit") {
		t.Fatalf("403 shape: %d %s", g.raw.status, g.raw.body)
	}

	// Unpinned: both shapes come up.
	clock.advance(time.Hour)
	_ = s.SetFaults(Faults{SecondaryRateLimitRate: 1, RetryAfterS: 1})
	seen := map[int]int{}
	for i := range 16 {
		clock.advance(2 * time.Second)
		seen[s.gql(users[i%4], `{ viewer { login } }`, nil).raw.status]++
	}
	if seen[200] == 0 || seen[403] == 0 || seen[200]+seen[403] != 16 {
		t.Fatalf("statuses %v", seen)
	}
	log := s.Requests()
	if last := log.Entries[len(log.Entries)-1]; last.Fault != "secondary_rate_limit" || last.RetryAfter != 1 {
		t.Fatalf("log %+v", last)
	}

	// Without retry-after: a minute, and a request within it is early.
	clock.advance(time.Hour)
	_ = s.SetFaults(Faults{SecondaryRateLimitRate: 1, NoRetryAfter: true, SecondaryRateLimitStatus: 200})
	if g := s.gql("alice-token", `{ viewer { login } }`, nil); g.raw.header.Get("Retry-After") != "" || len(g.Errors) != 1 {
		t.Fatalf("no retry-after: %v %s", g.raw.header, g.raw.body)
	}
	_ = s.SetFaults(Faults{})
	clock.advance(59 * time.Second)
	s.gql("alice-token", `{ viewer { login } }`, nil)
	if e := s.Requests().Entries[len(s.Requests().Entries)-1]; !e.EarlyRetry || e.Fault != "secondary_rate_limit" {
		t.Fatalf("within the minute: %+v", e)
	}
	clock.advance(2 * time.Second)
	if g := s.gql("alice-token", `{ viewer { login } }`, nil); len(g.Errors) != 0 {
		t.Fatalf("after the minute: %s", g.raw.body)
	}
	if err := (Faults{SecondaryRateLimitStatus: 429}).Validate(); err == nil {
		t.Fatal("a GraphQL secondary status GitHub does not document was accepted")
	}
}
