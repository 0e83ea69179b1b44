package ghsim

import (
	"fmt"
	"strings"
	"testing"
)

func bigSeed(t testing.TB, n int) Seed {
	s := testSeed(t)
	s.Issues, s.PullRequests, s.DraftItems = nil, nil, nil
	for i := 1; i <= n; i++ {
		s.Issues = append(s.Issues, SeedIssue{Repo: "app", Number: i, Title: fmt.Sprintf("Issue %d", i), Project: 1,
			Fields: map[string]string{"Workflow State": "Backlog"}})
	}
	return s
}

func TestProjectItemsPagination(t *testing.T) {
	s := startSim(t, bigSeed(t, 250), Options{})
	const q = `query($after: String) { organization(login: "acme") { projectV2(number: 1) {
	  items(first: 100, after: $after) { totalCount pageInfo { hasNextPage endCursor hasPreviousPage startCursor }
	    edges { cursor node { id } } nodes { content { ... on Issue { number } } } } } } }`
	var after any
	seen := map[int]bool{}
	sizes := []int{}
	for page := 0; ; page++ {
		if page > 3 {
			t.Fatal("too many pages")
		}
		d := s.gqlOK("alice-token", q, map[string]any{"after": after})
		items := dig(d, "organization", "projectV2", "items")
		if dig(items, "totalCount") != float64(250) {
			t.Fatalf("totalCount %v", dig(items, "totalCount"))
		}
		nodes := dig(items, "nodes").([]any)
		edges := dig(items, "edges").([]any)
		if len(nodes) != len(edges) {
			t.Fatal("nodes and edges differ")
		}
		sizes = append(sizes, len(nodes))
		for _, n := range nodes {
			seen[int(dig(n, "content", "number").(float64))] = true
		}
		pi := dig(items, "pageInfo")
		if dig(pi, "endCursor") != dig(edges[len(edges)-1], "cursor") || dig(pi, "startCursor") != dig(edges[0], "cursor") {
			t.Fatalf("pageInfo cursors: %v", pi)
		}
		if dig(pi, "hasPreviousPage") != (page > 0) {
			t.Fatalf("hasPreviousPage on page %d: %v", page, pi)
		}
		if dig(pi, "hasNextPage") == false {
			break
		}
		after = dig(pi, "endCursor")
	}
	if fmt.Sprint(sizes) != "[100 100 50]" || len(seen) != 250 {
		t.Fatalf("pages %v, %d distinct items", sizes, len(seen))
	}

	// last/before page backwards.
	d := s.gqlOK("alice-token", `{ organization(login: "acme") { projectV2(number: 1) { items(last: 10) { nodes { content { ... on Issue { number } } } pageInfo { hasPreviousPage hasNextPage } } } } }`, nil)
	if n := dig(d, "organization", "projectV2", "items", "nodes", 0, "content", "number"); n != float64(241) {
		t.Fatalf("last: first node %v", n)
	}
}

func TestConnectionLimits(t *testing.T) {
	s := startSim(t, testSeed(t), Options{})
	for _, c := range []struct{ doc, typ, msg string }{
		{`{ organization(login: "acme") { projectV2(number: 1) { items(first: 101) { totalCount } } } }`, "EXCESSIVE_PAGINATION", "exceeds the `first` limit of 100"},
		{`{ organization(login: "acme") { projectV2(number: 1) { items { totalCount } } } }`, "MISSING_PAGINATION_BOUNDARIES", "You must provide a `first` or `last`"},
		{`{ organization(login: "acme") { projectV2(number: 1) { items(first: 1, after: "bogus") { totalCount } } } }`, "INVALID_CURSOR_ARGUMENTS", "valid cursor"},
		{`{ organization(login: "nope") { login } }`, "NOT_FOUND", "Could not resolve to an Organization"},
		{`{ node(id: "PVTI_nope") { id } }`, "NOT_FOUND", "Could not resolve to a node"},
	} {
		out := s.gql("alice-token", c.doc, nil)
		if len(out.Errors) != 1 || out.Errors[0]["type"] != c.typ || !strings.Contains(out.Errors[0]["message"].(string), c.msg) || out.Errors[0]["path"] == nil {
			t.Fatalf("%s: %s", c.doc, out.raw.body)
		}
	}
}

func TestSchemaValidationErrors(t *testing.T) {
	s := startSim(t, testSeed(t), Options{})
	cases := []struct{ doc, code, msg string }{
		{`{ viewer { login bogusField } }`, "undefinedField", "Field 'bogusField' doesn't exist on type 'User'"},
		{`{ organization(login: "acme") { projectV2(number: 1) { items(first: 1, colour: 2) { totalCount } } } }`, "argumentNotAccepted", "colour"},
		{`{ organization { login } }`, "missingRequiredArguments", "login"},
		{`query($x: Int!) { viewer { login } }`, "variableNotUsed", "x"},
	}
	for _, c := range cases {
		out := s.gql("alice-token", c.doc, nil)
		if out.raw.status != 200 || out.Data != nil || len(out.Errors) == 0 {
			t.Fatalf("%s: %d %s", c.doc, out.raw.status, out.raw.body)
		}
		e := out.Errors[0]
		if dig(e, "extensions", "code") != c.code || !strings.Contains(e["message"].(string), c.msg) || dig(e, "locations", 0, "line") == nil {
			t.Fatalf("%s: %s", c.doc, out.raw.body)
		}
	}
	if e := s.gql("alice-token", `{ viewer { login bogusField } }`, nil).Errors[0]; dig(e, "extensions", "typeName") != "User" || dig(e, "extensions", "fieldName") != "bogusField" {
		t.Fatalf("undefinedField extensions: %v", e)
	}
	// Syntax errors and bad variables are refused before anything runs.
	if out := s.gql("alice-token", `{ viewer { login }`, nil); len(out.Errors) != 1 || out.Errors[0]["locations"] == nil {
		t.Fatalf("parse error: %s", out.raw.body)
	}
	if out := s.gql("alice-token", `query($n: Int!) { organization(login: "acme") { projectV2(number: $n) { id } } }`, map[string]any{"n": "x"}); len(out.Errors) != 1 || out.Data != nil {
		t.Fatalf("bad variable: %s", out.raw.body)
	}
}

func TestUnimplementedFieldFailsLoudly(t *testing.T) {
	s := startSim(t, testSeed(t), Options{})
	out := s.gql("alice-token", `{ repository(owner: "acme", name: "app") { issue(number: 1) { title milestone { title } } } }`, nil)
	if len(out.Errors) != 1 || out.Errors[0]["message"] != "ghsim does not implement field Issue.milestone" ||
		fmt.Sprint(out.Errors[0]["path"]) != "[repository issue milestone]" {
		t.Fatalf("%s", out.raw.body)
	}
	// The rest of the document still resolves, as on GitHub for a nullable field.
	if dig(out.Data, "repository", "issue", "title") != "Epic" {
		t.Fatalf("%s", out.raw.body)
	}
	// A non-null unimplemented field nulls its parent.
	out = s.gql("alice-token", `{ repository(owner: "acme", name: "app") { issue(number: 1) { title viewerCanUpdate } } }`, nil)
	if len(out.Errors) != 1 || !strings.Contains(out.Errors[0]["message"].(string), "Issue.viewerCanUpdate") || dig(out.Data, "repository", "issue") != nil {
		t.Fatalf("%s", out.raw.body)
	}
}

func TestAliasedBatchMutations(t *testing.T) {
	rc := newReceiver(t)
	s := startSim(t, testSeed(t), Options{WebhookURL: rc.URL})
	tok := s.installationToken()
	b := s.board(tok)
	const doc = `mutation($p: ID!, $f: ID!, $i1: ID!, $i2: ID!, $i3: ID!, $o: String!) {
	  a: updateProjectV2ItemFieldValue(input: {projectId: $p, itemId: $i1, fieldId: $f, value: {singleSelectOptionId: $o}}) { projectV2Item { id } }
	  b: updateProjectV2ItemFieldValue(input: {projectId: $p, itemId: $i2, fieldId: $f, value: {singleSelectOptionId: $o}}) { projectV2Item { ...V } }
	  c: updateProjectV2ItemFieldValue(input: {projectId: $p, itemId: $i3, fieldId: $f, value: {singleSelectOptionId: $o}}) { projectV2Item { ...V } }
	}
	fragment V on ProjectV2Item { id state: fieldValueByName(name: "Workflow State") { __typename ... on ProjectV2ItemFieldSingleSelectValue { name } } }`
	d := s.gqlOK(tok, doc, map[string]any{"p": b.project, "f": b.field, "i1": b.items[2], "i2": b.items[3], "i3": b.items[4], "o": b.options["In Progress"]})
	if dig(d, "b", "projectV2Item", "state", "name") != "In Progress" || dig(d, "c", "projectV2Item", "state", "__typename") != "ProjectV2ItemFieldSingleSelectValue" || dig(d, "a", "projectV2Item", "id") != b.items[2] {
		t.Fatalf("%v", d)
	}
	st := s.State()
	for _, n := range []int{2, 3, 4} {
		if is, _ := st.Issue("app", n); is.Fields["Workflow State"] != "In Progress" {
			t.Fatalf("issue %d: %v", n, is.Fields)
		}
	}
	if c := s.Requests().Counts; c["graphql:updateProjectV2ItemFieldValue"] != 3 || c["graphql:request"] != 2 {
		t.Fatalf("counts %v", c)
	}
	s.waitIdle()
	if n := len(rc.all()); n != 3 {
		t.Fatalf("%d webhooks, want 3", n)
	}
	// A failing mutation in the batch does not undo the others; its error names its alias.
	out := s.gql(tok, `mutation($p: ID!, $f: ID!, $i: ID!) {
	  ok: clearProjectV2ItemFieldValue(input: {projectId: $p, itemId: $i, fieldId: $f}) { projectV2Item { id } }
	  bad: updateProjectV2ItemFieldValue(input: {projectId: $p, itemId: $i, fieldId: $f, value: {singleSelectOptionId: "nope"}}) { projectV2Item { id } } }`,
		map[string]any{"p": b.project, "f": b.field, "i": b.items[2]})
	if len(out.Errors) != 1 || fmt.Sprint(out.Errors[0]["path"]) != "[bad]" || dig(out.Data, "ok", "projectV2Item", "id") != b.items[2] {
		t.Fatalf("%s", out.raw.body)
	}
	if is, _ := s.State().Issue("app", 2); is.Fields["Workflow State"] != "" {
		t.Fatalf("cleared value still set: %v", is.Fields)
	}
}

func TestFragmentsUnionsAndNodes(t *testing.T) {
	s := startSim(t, testSeed(t), Options{})
	b := s.board("alice-token")
	const doc = `query($ids: [ID!]!, $withBody: Boolean!) {
	  nodes(ids: $ids) { __typename id ...I ... on ProjectV2Item { type content { __typename ... on DraftIssue { title } ...I } } }
	}
	fragment I on Issue { number body @include(if: $withBody) author { __typename login } repository { nameWithOwner owner { login } } }`
	issue1 := dig(s.gqlOK("alice-token", `{ repository(owner: "acme", name: "app") { issue(number: 1) { id } } }`, nil), "repository", "issue", "id")
	var draftItem string
	for _, it := range s.State().DraftItems {
		draftItem = it.ItemID
	}
	d := s.gqlOK("alice-token", doc, map[string]any{"ids": []string{issue1.(string), b.items[2], draftItem}, "withBody": false})
	nodes := d["nodes"].([]any)
	if dig(nodes[0], "__typename") != "Issue" || dig(nodes[0], "number") != float64(1) || dig(nodes[0], "repository", "nameWithOwner") != "acme/app" || dig(nodes[0], "author", "__typename") != "User" {
		t.Fatalf("issue node: %v", nodes[0])
	}
	if _, has := nodes[0].(map[string]any)["body"]; has {
		t.Fatal("@include(if: false) was ignored")
	}
	if dig(nodes[1], "type") != "ISSUE" || dig(nodes[1], "content", "number") != float64(2) {
		t.Fatalf("item node: %v", nodes[1])
	}
	if dig(nodes[2], "type") != "DRAFT_ISSUE" || dig(nodes[2], "content", "title") != "A draft idea" {
		t.Fatalf("draft node: %v", nodes[2])
	}
}
