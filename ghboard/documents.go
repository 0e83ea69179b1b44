package ghboard

import (
	"fmt"
	"strings"

	"github.com/ralph-gate/ralph-gate/enforce"
)

// Every GraphQL document the adapter sends. The simulator's schema test validates each one
// against GitHub's published schema (see Documents).

// issueEvents selects an issue's latest closes and reopens (decoded by eventsData): a close and
// a reopen no report has told of yet leave the issue open as it was, but not its timeline.
const issueEvents = `lifecycle: timelineItems(last: 3, itemTypes: [CLOSED_EVENT, REOPENED_EVENT]) {
      nodes { __typename ... on ClosedEvent { createdAt actor { login } } ... on ReopenedEvent { createdAt actor { login } } }
    }`

// itemContent is what every read selects of an item's content (decoded by contentData): enough
// to comment, to know the relatives exist, and to skip a second read for a leaf.
const itemContent = `__typename
  ... on Issue {
    id number title state repository { nameWithOwner }
    parent { id number }
    subIssuesSummary { total }
    issueDependenciesSummary { blockedBy }
    ` + issueEvents + `
  }
  ... on PullRequest { id number title prState: state repository { nameWithOwner } }
  ... on DraftIssue { id title }`

// requiredSlots selects the values of the fields workflow.requirements name, by name, in
// fixed slots r0…r3 ($r0…$r3: the names, the workflow field for a slot left over), only with
// $extra. Each is a field of the item, not a connection: it costs no rate-limit point, on an
// item read or on each relative of a family read.
var requiredSlots = func() string {
	var b strings.Builder
	for i := range enforce.MaxRequiredFields {
		fmt.Fprintf(&b, `r%d: fieldValueByName(name: $r%d) @include(if: $extra) { __typename
        ... on ProjectV2ItemFieldSingleSelectValue { name } ... on ProjectV2ItemFieldTextValue { text }
        ... on ProjectV2ItemFieldNumberValue { number } ... on ProjectV2ItemFieldDateValue { date }
        ... on ProjectV2ItemFieldIterationValue { title } }
      `, i, i)
	}
	return b.String()
}()

// requiredVars declares $extra and $r0…$r3; a document that selects closing pull requests
// declares $prs besides.
var requiredVars = func() string {
	s := "$extra: Boolean!"
	for i := range enforce.MaxRequiredFields {
		s += fmt.Sprintf(", $r%d: String!", i)
	}
	return s
}()

// itemNodeFields selects an item as itemNode decodes it (queryItem, queryItems). With $extra
// (workflow.requirements are configured) it selects too what a requirement checks: the values
// of the fields they name, the options of the project's single-select fields (for the
// Recovery), and whether a merged pull request closes the issue.
var itemNodeFields = `__typename
    ... on ProjectV2Item {
      id
      type
      isArchived
      project {
        id number owner { __typename ... on Organization { login } }
        fields(first: 50) @include(if: $extra) { nodes { __typename ... on ProjectV2SingleSelectField { name options { name } } } }
      }
      fieldValueByName(name: $field) {
        __typename
        ... on ProjectV2ItemFieldSingleSelectValue { name optionId updatedAt }
      }
      ` + requiredSlots + `
      content {
        ` + itemContent + `
        ... on Issue { closedBy: closedByPullRequestsReferences(first: 10, includeClosedPrs: true) @include(if: $prs) { nodes { merged mergedAt } } }
      }
    }`

var queryItem = `query RalphGateItem($id: ID!, $field: String!, $prs: Boolean!, ` + requiredVars + `) {
  node(id: $id) {
    ` + itemNodeFields + `
  }
}`

const queryProjectField = `query RalphGateProjectField($owner: String!, $number: Int!, $field: String!) {
  organization(login: $owner) {
    projectV2(number: $number) {
      id
      number
      title
      field(name: $field) {
        __typename
        ... on ProjectV2SingleSelectField { id name options { id name } }
      }
    }
  }
}`

const mutationSetState = `mutation RalphGateSetState($project: ID!, $item: ID!, $field: ID!, $option: String!) {
  updateProjectV2ItemFieldValue(input: {projectId: $project, itemId: $item, fieldId: $field, value: {singleSelectOptionId: $option}}) {
    projectV2Item { id }
  }
}`

const mutationClearState = `mutation RalphGateClearState($project: ID!, $item: ID!, $field: ID!) {
  clearProjectV2ItemFieldValue(input: {projectId: $project, itemId: $item, fieldId: $field}) {
    projectV2Item { id }
  }
}`

const mutationAddComment = `mutation RalphGateAddComment($subject: ID!, $body: String!) {
  addComment(input: {subjectId: $subject, body: $body}) {
    commentEdge { node { id fullDatabaseId } }
  }
}`

const mutationUpdateComment = `mutation RalphGateUpdateComment($id: ID!, $body: String!) {
  updateIssueComment(input: {id: $id, body: $body}) {
    issueComment { id }
  }
}`

// mutationCloseIssue and mutationReopenIssue undo a close or a reopen the workflow refuses.
const mutationCloseIssue = `mutation RalphGateCloseIssue($id: ID!, $reason: IssueClosedStateReason!) {
  closeIssue(input: {issueId: $id, stateReason: $reason}) { issue { id } }
}`

const mutationReopenIssue = `mutation RalphGateReopenIssue($id: ID!) {
  reopenIssue(input: {issueId: $id}) { issue { id } }
}`

// familyFields is what the adapter reads of each related issue. projectItems lists archived
// items too (includeArchived defaults to true): a relative's archived item is known, and left
// alone, rather than taken for an issue that is not on the project.
var familyFields = `id number title state repository { nameWithOwner }
  subIssuesSummary { total }
  ` + issueEvents + `
  closedBy: closedByPullRequestsReferences(first: 10, includeClosedPrs: true) @include(if: $prs) { nodes { merged mergedAt } }
  projectItems(first: 20) { nodes { id isArchived updatedAt project { id } fieldValueByName(name: $field) { __typename ... on ProjectV2ItemFieldSingleSelectValue { name updatedAt } }
    estimate: fieldValueByName(name: $estimate) { __typename ... on ProjectV2ItemFieldSingleSelectValue { name } }
    ` + requiredSlots + ` } }`

var queryFamily = `query RalphGateFamily($id: ID!, $field: String!, $estimate: String!, $after: String, $prs: Boolean!, ` + requiredVars + `) {
  node(id: $id) {
    __typename
    ... on Issue {
      ` + familyFields + `
      parent { ` + familyFields + ` }
      subIssues(first: 100, after: $after) {
        totalCount
        pageInfo { hasNextPage endCursor }
        nodes { ` + familyFields + ` }
      }
      blockedBy(first: 100) { nodes { id number title state repository { nameWithOwner } } }
    }
  }
}`

var querySubIssuesPage = `query RalphGateSubIssues($id: ID!, $field: String!, $estimate: String!, $after: String, $prs: Boolean!, ` + requiredVars + `) {
  node(id: $id) {
    __typename
    ... on Issue {
      subIssues(first: 100, after: $after) {
        pageInfo { hasNextPage endCursor }
        nodes { ` + familyFields + ` }
      }
    }
  }
}`

const queryClosingIssues = `query RalphGateClosingIssues($owner: String!, $repo: String!, $number: Int!) {
  repository(owner: $owner, name: $repo) {
    pullRequest(number: $number) {
      merged
      closingIssuesReferences(first: 50) {
        nodes { number repository { name owner { login } } }
      }
    }
  }
}`

// queryProjectFieldNames lists a project's fields by name (doctor and serve check that every
// field workflow.requirements names exists).
const queryProjectFieldNames = `query RalphGateProjectFieldNames($owner: String!, $number: Int!) {
  organization(login: $owner) {
    projectV2(number: $number) {
      fields(first: 50) { nodes { __typename ... on ProjectV2FieldCommon { name } } }
    }
  }
}`

// Document is one GraphQL document with example variables, for schema tests.
type Document struct {
	Name      string
	Query     string
	Variables map[string]any
}

// Documents lists every document the adapter sends.
func Documents() []Document {
	return []Document{
		{"item", queryItem, withRequired(map[string]any{"id": "PVTI_x", "field": "Workflow State", "prs": false}, false)},
		{"items", queryItems, withRequired(map[string]any{"ids": []string{"PVTI_x", "PVTI_y"}, "field": "Workflow State", "prs": true}, true)},
		{"project field", queryProjectField, map[string]any{"owner": "acme", "number": 1, "field": "Workflow State"}},
		{"project field names", queryProjectFieldNames, map[string]any{"owner": "acme", "number": 1}},
		{"set state", mutationSetState, map[string]any{"project": "PVT_x", "item": "PVTI_x", "field": "PVTSSF_x", "option": "abc"}},
		{"clear state", mutationClearState, map[string]any{"project": "PVT_x", "item": "PVTI_x", "field": "PVTSSF_x"}},
		{"add comment", mutationAddComment, map[string]any{"subject": "I_x", "body": "hi"}},
		{"update comment", mutationUpdateComment, map[string]any{"id": "IC_x", "body": "hi"}},
		{"family", queryFamily, withRequired(map[string]any{"id": "I_x", "field": "Workflow State", "estimate": EstimateField, "after": nil, "prs": true}, true)},
		{"sub-issues page", querySubIssuesPage, withRequired(map[string]any{"id": "I_x", "field": "Workflow State", "estimate": EstimateField, "after": nil, "prs": false}, false)},
		{"closing issues", queryClosingIssues, map[string]any{"owner": "acme", "repo": "app", "number": 10}},
		{"set states (batch of 2)", batchSetStates(2), batchVars(2)},
		{"project items", queryProjectItems, withRequired(map[string]any{"owner": "acme", "number": 1, "after": nil, "field": "Workflow State", "estimate": "Estimate", "priority": "Priority"}, true)},
		{"find comment", queryFindComment, map[string]any{"id": "I_x"}},
		{"issue items", queryIssueItems, map[string]any{"owner": "acme", "repo": "app", "number": 1, "field": "Workflow State"}},
		{"close issue", mutationCloseIssue, map[string]any{"id": "I_x", "reason": "NOT_PLANNED"}},
		{"reopen issue", mutationReopenIssue, map[string]any{"id": "I_x"}},
	}
}

// queryIssueItems reads an issue's items, one per project it is on. projectItems lists
// archived items too (the schema's includeArchived defaults to true), so each says whether it
// is archived: the app never moves an archived item.
const queryIssueItems = `query RalphGateIssueItems($owner: String!, $repo: String!, $number: Int!, $field: String!) {
  repository(owner: $owner, name: $repo) {
    issue(number: $number) {
      id
      number
      title
      state
      projectItems(first: 20) {
        nodes {
          id
          isArchived
          project { id number owner { __typename ... on Organization { login } } }
          fieldValueByName(name: $field) {
            __typename
            ... on ProjectV2ItemFieldSingleSelectValue { name optionId }
          }
        }
      }
    }
  }
}`

// queryProjectItems pages through a project's items with every value the app reads: the
// workflow state, estimate and priority (by field name), and the issue's relations summary.
// Archived items are not listed (the schema's archivedStates defaults to [NOT_ARCHIVED]).
var queryProjectItems = `query RalphGateProjectItems($owner: String!, $number: Int!, $after: String, $field: String!, $estimate: String!, $priority: String!, ` + requiredVars + `) {
  organization(login: $owner) {
    projectV2(number: $number) {
      id
      items(first: 100, after: $after) {
        totalCount
        pageInfo { hasNextPage endCursor }
        nodes {
          id
          type
          isArchived
          state: fieldValueByName(name: $field) { __typename ... on ProjectV2ItemFieldSingleSelectValue { name updatedAt } }
          estimate: fieldValueByName(name: $estimate) { __typename ... on ProjectV2ItemFieldSingleSelectValue { name } }
          priority: fieldValueByName(name: $priority) { __typename ... on ProjectV2ItemFieldSingleSelectValue { name } }
          ` + requiredSlots + `
          content { ` + projectItemContent + ` }
        }
      }
    }
  }
}`

// withRequired adds to a document's variables $extra and the required fields' slots (example
// names for the schema tests).
func withRequired(vars map[string]any, extra bool) map[string]any {
	vars["extra"] = extra
	for i := range enforce.MaxRequiredFields {
		vars[fmt.Sprintf("r%d", i)] = fmt.Sprintf("Field %d", i)
	}
	return vars
}
