package ghsim

import (
	"strings"
	"testing"
)

// Archived items follow GitHub's schema defaults: ProjectV2.items(archivedStates:
// [ProjectV2ItemArchivedState!] = [NOT_ARCHIVED]) leaves them out unless asked;
// Issue.projectItems and PullRequest.projectItems(includeArchived: Boolean = true) list them
// unless asked not to. What GitHub answers to an explicit null (or an empty list of states) is
// not documented: ghsim refuses it rather than guess.

const archiveMutation = `mutation($p: ID!, $i: ID!) { archiveProjectV2Item(input: {projectId: $p, itemId: $i}) { item { isArchived } } }`

// itemsOf runs a project items query (with the arguments args) and returns the issue numbers
// listed (0 for a draft), in order, and totalCount.
func itemsOf(t *testing.T, s *sim, args string, vars map[string]any) ([]int, int, gqlResult) {
	t.Helper()
	decl := ""
	if strings.Contains(args, "$s") {
		decl = "($s: [ProjectV2ItemArchivedState!])"
	}
	out := s.gql("alice-token", `query`+decl+` { organization(login: "acme") { projectV2(number: 1) {
  items(first: 100`+args+`) { totalCount nodes { isArchived content { ... on Issue { number } } } } } } }`, vars)
	if len(out.Errors) > 0 {
		return nil, 0, out
	}
	var nums []int
	for _, n := range dig(out.Data, "organization", "projectV2", "items", "nodes").([]any) {
		num, _ := dig(n, "content", "number").(float64)
		nums = append(nums, int(num))
	}
	total := dig(out.Data, "organization", "projectV2", "items", "totalCount").(float64)
	return nums, int(total), out
}

func has(nums []int, n int) bool {
	for _, x := range nums {
		if x == n {
			return true
		}
	}
	return false
}

func TestProjectItemsArchivedStates(t *testing.T) {
	s := startSim(t, testSeed(t), Options{})
	b := s.board("alice-token")
	all, total, _ := itemsOf(t, s, "", nil)
	if total != len(all) || !has(all, 1) {
		t.Fatalf("before archiving: %v (%d)", all, total)
	}
	s.gqlOK("alice-token", archiveMutation, map[string]any{"p": b.project, "i": b.items[1]})

	notArchived := len(all) - 1
	for _, tc := range []struct {
		name     string
		args     string
		vars     map[string]any
		archived bool // the archived item is listed
		others   bool // the other items are listed
	}{
		{"omitted: the default leaves archived items out", "", nil, false, true},
		{"variable not given: the default", ", archivedStates: $s", nil, false, true},
		{"NOT_ARCHIVED", ", archivedStates: [NOT_ARCHIVED]", nil, false, true},
		{"ARCHIVED", ", archivedStates: [ARCHIVED]", nil, true, false},
		{"a single value is a list of one", ", archivedStates: ARCHIVED", nil, true, false},
		{"both", ", archivedStates: [ARCHIVED, NOT_ARCHIVED]", nil, true, true},
		{"variable", ", archivedStates: $s", map[string]any{"s": []string{"ARCHIVED"}}, true, false},
		{"variable with a single value", ", archivedStates: $s", map[string]any{"s": "ARCHIVED"}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nums, total, out := itemsOf(t, s, tc.args, tc.vars)
			if len(out.Errors) > 0 {
				t.Fatalf("%s", out.raw.body)
			}
			want := 0
			if tc.archived {
				want++
			}
			if tc.others {
				want += notArchived
			}
			if has(nums, 1) != tc.archived || len(nums) != want || total != want {
				t.Fatalf("listed %v (totalCount %d); want the archived #1 listed: %v, %d items", nums, total, tc.archived, want)
			}
		})
	}
	for _, tc := range []struct {
		name string
		args string
		vars map[string]any
	}{
		{"null", ", archivedStates: null", nil},
		{"empty list", ", archivedStates: []", nil},
		{"variable null", ", archivedStates: $s", map[string]any{"s": nil}},
	} {
		t.Run(tc.name+" is refused", func(t *testing.T) {
			_, _, out := itemsOf(t, s, tc.args, tc.vars)
			if len(out.Errors) != 1 || out.Errors[0]["type"] != "GHSIM_NOT_IMPLEMENTED" {
				t.Fatalf("%s", out.raw.body)
			}
		})
	}
	// The archived item is still read by its id.
	d := s.gqlOK("alice-token", `query($i: ID!) { node(id: $i) { ... on ProjectV2Item { isArchived } } }`, map[string]any{"i": b.items[1]})
	if dig(d, "node", "isArchived") != true {
		t.Fatalf("node: %v", d)
	}
}

func TestIssueProjectItemsIncludeArchived(t *testing.T) {
	s := startSim(t, testSeed(t), Options{})
	b := s.board("alice-token")
	s.gqlOK("alice-token", archiveMutation, map[string]any{"p": b.project, "i": b.items[1]})
	// A pull request's item, archived too.
	pr := dig(s.gqlOK("alice-token", `{ repository(owner: "acme", name: "app") { pullRequest(number: 10) { id } } }`, nil), "repository", "pullRequest", "id")
	d := s.gqlOK("alice-token", `mutation($p: ID!, $c: ID!) { addProjectV2ItemById(input: {projectId: $p, contentId: $c}) { item { id } } }`,
		map[string]any{"p": b.project, "c": pr})
	s.gqlOK("alice-token", archiveMutation, map[string]any{"p": b.project, "i": dig(d, "addProjectV2ItemById", "item", "id")})

	for _, owner := range []string{"issue(number: 1)", "pullRequest(number: 10)"} {
		for _, tc := range []struct {
			args   string
			vars   map[string]any
			listed bool
		}{
			{"", nil, true}, // the default includes archived items
			{", includeArchived: $inc", nil, true},
			{", includeArchived: true", nil, true},
			{", includeArchived: false", nil, false},
			{", includeArchived: $inc", map[string]any{"inc": false}, false},
		} {
			t.Run(owner+tc.args, func(t *testing.T) {
				decl := ""
				if strings.Contains(tc.args, "$inc") {
					decl = "($inc: Boolean)"
				}
				out := s.gql("alice-token", `query`+decl+` { repository(owner: "acme", name: "app") { `+owner+` {
  projectItems(first: 10`+tc.args+`) { totalCount nodes { id isArchived } } } } }`, tc.vars)
				if len(out.Errors) > 0 {
					t.Fatalf("%s", out.raw.body)
				}
				var conn any
				if strings.HasPrefix(owner, "issue") {
					conn = dig(out.Data, "repository", "issue", "projectItems")
				} else {
					conn = dig(out.Data, "repository", "pullRequest", "projectItems")
				}
				nodes, _ := dig(conn, "nodes").([]any)
				n := 0
				if tc.listed {
					n = 1
				}
				if len(nodes) != n || dig(conn, "totalCount") != float64(n) || (n == 1 && dig(nodes[0], "isArchived") != true) {
					t.Fatalf("%s", out.raw.body)
				}
			})
		}
		t.Run(owner+" null is refused", func(t *testing.T) {
			out := s.gql("alice-token", `{ repository(owner: "acme", name: "app") { `+owner+` { projectItems(first: 10, includeArchived: null) { totalCount } } } }`, nil)
			if len(out.Errors) != 1 || out.Errors[0]["type"] != "GHSIM_NOT_IMPLEMENTED" {
				t.Fatalf("%s", out.raw.body)
			}
		})
	}
}
