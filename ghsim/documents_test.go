package ghsim

import (
	"testing"
)

// The GraphQL documents ralph-gate's adapter sends. Each must validate against GitHub's schema and
// run on ghsim without errors. As the adapter grows, its documents join this table (copy them
// verbatim, or better, export them from the adapter and list them here).

const fragSingleSelect = `
fragment SingleSelect on ProjectV2ItemFieldSingleSelectValue { name optionId field { ... on ProjectV2SingleSelectField { id name } } }`

var adapterDocuments = []struct {
	name string
	doc  string
	vars func(ids docIDs) map[string]any
}{
	{"viewer and rate limit", `query { viewer { login } rateLimit { limit cost remaining used resetAt nodeCount } }`, nil},
	{"read item with content, relatives and state", `query ReadItem($item: ID!, $field: String!) {
  node(id: $item) { __typename ... on ProjectV2Item {
    id databaseId type isArchived createdAt updatedAt creator { login }
    project { id number }
    state: fieldValueByName(name: $field) { __typename ...SingleSelect }
    fieldValues(first: 20) { nodes { __typename ...SingleSelect } }
    content { __typename
      ... on DraftIssue { id title }
      ... on PullRequest { id number merged prState: state }
      ... on Issue { id databaseId number title state stateReason closed url
        repository { name nameWithOwner owner { login } }
        author { login } assignees(first: 10) { nodes { login } }
        parent { id number projectItems(first: 10) { nodes { id project { number } state: fieldValueByName(name: $field) { ...SingleSelect } } } }
        subIssuesSummary { total completed percentCompleted }
        subIssues(first: 50) { totalCount pageInfo { hasNextPage endCursor }
          nodes { id number state projectItems(first: 10) { nodes { id project { number } state: fieldValueByName(name: $field) { ...SingleSelect } } } } }
        issueDependenciesSummary { blockedBy totalBlockedBy blocking totalBlocking }
        blockedBy(first: 50) { pageInfo { hasNextPage endCursor } nodes { id number state title } }
        blocking(first: 50) { pageInfo { hasNextPage endCursor } nodes { id number state } }
        closedByPullRequestsReferences(first: 10, includeClosedPrs: true) { nodes { number merged } }
      }
    }
  } }
}` + fragSingleSelect, func(ids docIDs) map[string]any { return map[string]any{"item": ids.item2, "field": "Workflow State"} }},
	{"project field and options lookup", `query ProjectField($org: String!, $number: Int!, $field: String!) {
  organization(login: $org) { projectV2(number: $number) { id number title url
    field(name: $field) { __typename ... on ProjectV2SingleSelectField { id name dataType options { id name color description } } }
    fields(first: 50) { totalCount nodes { __typename ... on ProjectV2FieldCommon { id name dataType } ... on ProjectV2SingleSelectField { options { id name } } } }
  } }
}`, func(docIDs) map[string]any {
		return map[string]any{"org": "acme", "number": 1, "field": "Workflow State"}
	}},
	{"project items page", `query ItemsPage($org: String!, $number: Int!, $field: String!, $after: String) {
  organization(login: $org) { projectV2(number: $number) {
    items(first: 100, after: $after) { totalCount pageInfo { hasNextPage endCursor }
      nodes { id databaseId type isArchived updatedAt
        state: fieldValueByName(name: $field) { ...SingleSelect }
        content { __typename ... on Issue { id number state stateReason repository { nameWithOwner } parent { number } } ... on PullRequest { number } ... on DraftIssue { title } } } }
  } }
}` + fragSingleSelect, func(docIDs) map[string]any {
		return map[string]any{"org": "acme", "number": 1, "field": "Workflow State", "after": nil}
	}},
	{"issue by number with its items", `query Issue($owner: String!, $repo: String!, $number: Int!, $field: String!) {
  repository(owner: $owner, name: $repo) { issue(number: $number) { id number title state stateReason
    projectItems(first: 10) { nodes { id isArchived project { id number } state: fieldValueByName(name: $field) { ...SingleSelect } } } } }
}` + fragSingleSelect, func(docIDs) map[string]any {
		return map[string]any{"owner": "acme", "repo": "app", "number": 1, "field": "Workflow State"}
	}},
	{"read several items at once", `query Items($ids: [ID!]!, $field: String!) {
  nodes(ids: $ids) { ... on ProjectV2Item { id state: fieldValueByName(name: $field) { ...SingleSelect } content { ... on Issue { number } } } }
}` + fragSingleSelect, func(ids docIDs) map[string]any {
		return map[string]any{"ids": []string{ids.item1, ids.item2}, "field": "Workflow State"}
	}},
	{"sub-issues next page", `query SubIssues($id: ID!, $after: String) {
  node(id: $id) { ... on Issue { subIssues(first: 100, after: $after) { totalCount pageInfo { hasNextPage endCursor } nodes { id number state } } } }
}`, func(ids docIDs) map[string]any { return map[string]any{"id": ids.issue1, "after": nil} }},
	{"pull request with closing issues", `query PR($owner: String!, $repo: String!, $number: Int!) {
  repository(owner: $owner, name: $repo) { pullRequest(number: $number) { id number title merged state
    closingIssuesReferences(first: 50) { nodes { id number state projectItems(first: 10) { nodes { id project { number } } } } } } }
}`, func(docIDs) map[string]any { return map[string]any{"owner": "acme", "repo": "app", "number": 10} }},
	{"list issue comments (newest)", `query Comments($id: ID!) {
  node(id: $id) { ... on Issue { comments(last: 100) { totalCount nodes { id fullDatabaseId body author { login } createdAt } } } }
}`, func(ids docIDs) map[string]any { return map[string]any{"id": ids.issue1} }},
	{"list issue comments (paged)", `query CommentsPage($owner: String!, $repo: String!, $number: Int!, $after: String) {
  repository(owner: $owner, name: $repo) { issue(number: $number) {
    comments(first: 100, after: $after) { pageInfo { hasNextPage endCursor } nodes { id fullDatabaseId body author { login } createdAt } } } }
}`, func(docIDs) map[string]any {
		return map[string]any{"owner": "acme", "repo": "app", "number": 1, "after": nil}
	}},
	{"set field value", `mutation SetState($project: ID!, $item: ID!, $field: ID!, $option: String!) {
  updateProjectV2ItemFieldValue(input: {projectId: $project, itemId: $item, fieldId: $field, value: {singleSelectOptionId: $option}}) {
    projectV2Item { id updatedAt } }
}`, func(ids docIDs) map[string]any {
		return map[string]any{"project": ids.project, "item": ids.item2, "field": ids.field, "option": ids.options["Research Needed"]}
	}},
	{"batch aliased set", `mutation Batch($project: ID!, $field: ID!, $i0: ID!, $o0: String!, $i1: ID!, $o1: String!) {
  m0: updateProjectV2ItemFieldValue(input: {projectId: $project, itemId: $i0, fieldId: $field, value: {singleSelectOptionId: $o0}}) { projectV2Item { id } }
  m1: updateProjectV2ItemFieldValue(input: {projectId: $project, itemId: $i1, fieldId: $field, value: {singleSelectOptionId: $o1}}) { projectV2Item { id } }
}`, func(ids docIDs) map[string]any {
		return map[string]any{"project": ids.project, "field": ids.field, "i0": ids.item1, "o0": ids.options["Ready for Plan"],
			"i1": ids.item2, "o1": ids.options["Ready for Plan"]}
	}},
	{"clear field value", `mutation Clear($project: ID!, $item: ID!, $field: ID!) {
  clearProjectV2ItemFieldValue(input: {projectId: $project, itemId: $item, fieldId: $field}) { projectV2Item { id } }
}`, func(ids docIDs) map[string]any {
		return map[string]any{"project": ids.project, "item": ids.item6, "field": ids.field}
	}},
	{"add comment", `mutation AddComment($subject: ID!, $body: String!) {
  addComment(input: {subjectId: $subject, body: $body}) { commentEdge { node { id fullDatabaseId body url } } subject { id } }
}`, func(ids docIDs) map[string]any {
		return map[string]any{"subject": ids.issue1, "body": "<!-- ralph-transition: {\"from\":\"Backlog\",\"to\":\"Done\"} -->\nReverted."}
	}},
	{"update comment", `mutation UpdateComment($id: ID!, $body: String!) {
  updateIssueComment(input: {id: $id, body: $body}) { issueComment { id fullDatabaseId body } }
}`, func(ids docIDs) map[string]any { return map[string]any{"id": ids.comment7, "body": "updated"} }},
	{"add item to project", `mutation AddItem($project: ID!, $content: ID!) {
  addProjectV2ItemById(input: {projectId: $project, contentId: $content}) { item { id type } }
}`, func(ids docIDs) map[string]any { return map[string]any{"project": ids.project, "content": ids.issue8} }},
	{"close and reopen issue", `mutation CloseReopen($id: ID!) {
  close: closeIssue(input: {issueId: $id, stateReason: NOT_PLANNED}) { issue { state stateReason } }
  reopen: reopenIssue(input: {issueId: $id}) { issue { state stateReason } }
}`, func(ids docIDs) map[string]any { return map[string]any{"id": ids.issue8} }},
}

type docIDs struct {
	project, field           string
	options                  map[string]string
	item1, item2, item6      string
	issue1, issue8, comment7 string
}

func TestAdapterDocuments(t *testing.T) {
	s := startSim(t, testSeed(t), Options{})
	tok := s.installationToken()
	b := s.board(tok)
	st := s.State()
	is1, _ := st.Issue("app", 1)
	is7, _ := st.Issue("app", 7)
	is8, _ := st.Issue("app", 8)
	ids := docIDs{project: b.project, field: b.field, options: b.options, item1: b.items[1], item2: b.items[2], item6: b.items[6],
		issue1: is1.NodeID, issue8: is8.NodeID, comment7: is7.Comments[0].NodeID}
	for _, d := range adapterDocuments {
		t.Run(d.name, func(t *testing.T) {
			var vars map[string]any
			if d.vars != nil {
				vars = d.vars(ids)
			}
			out := s.gql(tok, d.doc, vars)
			if out.raw.status != 200 || len(out.Errors) > 0 || out.Data == nil {
				t.Fatalf("%d %s", out.raw.status, out.raw.body)
			}
			for k, v := range out.Data {
				if v == nil {
					t.Fatalf("%s is null: %s", k, out.raw.body)
				}
			}
		})
	}
}
