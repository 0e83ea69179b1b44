package ghsim

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

// Comment database ids are past 2^31 on GitHub, and in ghsim. IssueComment.databaseId is an Int
// (32 bits): ghsim answers it with a field error, as the GraphQL specification's result
// coercion does; fullDatabaseId (a BigInt, sent as a string) carries the id, which REST takes.
func TestCommentIDsPastInt32(t *testing.T) {
	s := startSim(t, testSeed(t), Options{})
	is7, _ := s.State().Issue("app", 7)
	seeded := is7.Comments[0]
	if seeded.ID <= math.MaxInt32 {
		t.Fatalf("seeded comment id %d fits an Int", seeded.ID)
	}
	d := s.gqlOK("alice-token", `query($id: ID!) { node(id: $id) { ... on IssueComment { fullDatabaseId url } } }`, map[string]any{"id": seeded.NodeID})
	if dig(d, "node", "fullDatabaseId") != strconv.FormatInt(seeded.ID, 10) ||
		!strings.HasSuffix(dig(d, "node", "url").(string), "#issuecomment-"+strconv.FormatInt(seeded.ID, 10)) {
		t.Fatalf("node: %v", d)
	}

	out := s.gql("alice-token", `query($id: ID!) { node(id: $id) { ... on IssueComment { id databaseId } } }`, map[string]any{"id": seeded.NodeID})
	if len(out.Errors) != 1 || !strings.Contains(out.Errors[0]["message"].(string), "Int cannot represent") ||
		dig(out.Data, "node", "databaseId") != nil || dig(out.Data, "node", "id") != seeded.NodeID {
		t.Fatalf("databaseId of comment %d: %s", seeded.ID, out.raw.body)
	}
	if p, _ := out.Errors[0]["path"].([]any); len(p) != 2 || p[0] != "node" || p[1] != "databaseId" {
		t.Fatalf("error path: %s", out.raw.body)
	}

	// A new comment: its fullDatabaseId is what REST addresses it by.
	issue1 := dig(s.gqlOK("alice-token", `{ repository(owner: "acme", name: "app") { issue(number: 1) { id } } }`, nil), "repository", "issue", "id")
	d = s.gqlOK("alice-token", `mutation($s: ID!) { addComment(input: {subjectId: $s, body: "hi"}) { commentEdge { node { id fullDatabaseId } } } }`,
		map[string]any{"s": issue1})
	full, _ := dig(d, "addComment", "commentEdge", "node", "fullDatabaseId").(string)
	id, err := strconv.ParseInt(full, 10, 64)
	if err != nil || id <= math.MaxInt32 {
		t.Fatalf("fullDatabaseId %q: %v", full, err)
	}
	if r := s.do("PATCH", "/api/v3/repos/acme/app/issues/comments/"+full, "bearer alice-token", map[string]any{"body": "edited"}); r.status != 200 {
		t.Fatalf("PATCH comment %s: %d %s", full, r.status, r.body)
	}
	is1, _ := s.State().Issue("app", 1)
	if last := is1.Comments[len(is1.Comments)-1]; last.ID != id || last.Body != "edited" {
		t.Fatalf("comment %+v, want id %d edited", last, id)
	}
}
