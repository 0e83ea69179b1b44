package ghsim

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// gqlInt serializes a database id as GraphQL's Int, a signed 32-bit integer: a larger one is a
// field error (the GraphQL specification's result coercion of Int), as the field's null and an
// entry in "errors". Comment ids are past 2^31 on GitHub (and in ghsim), which is why the schema
// also has fullDatabaseId, a BigInt sent as a string.
func gqlInt(id int64) (any, error) {
	if id > math.MaxInt32 || id < math.MinInt32 {
		return nil, fmt.Errorf("Int cannot represent non 32-bit signed integer value: %d; select fullDatabaseId (BigInt)", id)
	}
	return id, nil
}

func issueResolvers(rs resolverSet) {
	fieldsOf(rs, "Issue", map[string]func(*execCtx, *issue, args) (any, error){
		"id":             func(_ *execCtx, is *issue, _ args) (any, error) { return is.nodeID, nil },
		"databaseId":     func(_ *execCtx, is *issue, _ args) (any, error) { return is.id, nil },
		"fullDatabaseId": func(_ *execCtx, is *issue, _ args) (any, error) { return strconv.FormatInt(is.id, 10), nil },
		"number":         func(_ *execCtx, is *issue, _ args) (any, error) { return is.number, nil },
		"title":          func(_ *execCtx, is *issue, _ args) (any, error) { return is.title, nil },
		"body":           func(_ *execCtx, is *issue, _ args) (any, error) { return is.body, nil },
		"state":          func(_ *execCtx, is *issue, _ args) (any, error) { return gqlState(is.state), nil },
		"closed":         func(_ *execCtx, is *issue, _ args) (any, error) { return is.state == "closed", nil },
		"closedAt":       func(_ *execCtx, is *issue, _ args) (any, error) { return formatTime(is.closedAt), nil },
		"createdAt":      func(_ *execCtx, is *issue, _ args) (any, error) { return ts(is.createdAt), nil },
		"updatedAt":      func(_ *execCtx, is *issue, _ args) (any, error) { return ts(is.updatedAt), nil },
		"repository":     func(_ *execCtx, is *issue, _ args) (any, error) { return is.repo, nil },
		"author":         func(_ *execCtx, is *issue, _ args) (any, error) { return is.author, nil },
		"parent":         func(_ *execCtx, is *issue, _ args) (any, error) { return is.parent, nil },
		"url": func(ec *execCtx, is *issue, _ args) (any, error) {
			return ec.w.htmlURL("/%s/issues/%d", is.repo.fullName(), is.number), nil
		},
		"stateReason": func(_ *execCtx, is *issue, _ args) (any, error) {
			if is.stateReason == "" {
				return nil, nil
			}
			return strings.ToUpper(is.stateReason), nil
		},
		"assignees": func(_ *execCtx, is *issue, a args) (any, error) { return paginate("assignees", anys(is.assignees), a) },
		"subIssues": func(_ *execCtx, is *issue, a args) (any, error) { return paginate("subIssues", anys(is.subIssues), a) },
		"blockedBy": func(_ *execCtx, is *issue, a args) (any, error) { return paginate("blockedBy", anys(is.blockedBy), a) },
		"blocking":  func(_ *execCtx, is *issue, a args) (any, error) { return paginate("blocking", anys(is.blocking), a) },
		"comments":  func(_ *execCtx, is *issue, a args) (any, error) { return paginate("comments", anys(is.comments), a) },
		"projectItems": func(_ *execCtx, is *issue, a args) (any, error) {
			return projectItemsOf(is.items, a)
		},
		"timelineItems": func(_ *execCtx, is *issue, a args) (any, error) { return timelineItems(is, a) },
		"subIssuesSummary": func(_ *execCtx, is *issue, _ args) (any, error) {
			total, done := subIssueCounts(is)
			return valueObject{"total": total, "completed": done, "percentCompleted": percent(done, total)}, nil
		},
		"issueDependenciesSummary": func(_ *execCtx, is *issue, _ args) (any, error) {
			open := func(list []*issue) int {
				n := 0
				for _, x := range list {
					if x.state == "open" {
						n++
					}
				}
				return n
			}
			return valueObject{"blockedBy": open(is.blockedBy), "totalBlockedBy": len(is.blockedBy),
				"blocking": open(is.blocking), "totalBlocking": len(is.blocking)}, nil
		},
		"closedByPullRequestsReferences": func(_ *execCtx, is *issue, a args) (any, error) {
			includeClosed, _ := a["includeClosedPrs"].(bool)
			var out []any
			for _, pr := range is.closedBy {
				if includeClosed || pr.state == "open" {
					out = append(out, pr)
				}
			}
			return paginate("closedByPullRequestsReferences", out, a)
		},
	})

	fieldsOf(rs, "PullRequest", map[string]func(*execCtx, *pullRequest, args) (any, error){
		"id":             func(_ *execCtx, pr *pullRequest, _ args) (any, error) { return pr.nodeID, nil },
		"databaseId":     func(_ *execCtx, pr *pullRequest, _ args) (any, error) { return pr.id, nil },
		"fullDatabaseId": func(_ *execCtx, pr *pullRequest, _ args) (any, error) { return strconv.FormatInt(pr.id, 10), nil },
		"number":         func(_ *execCtx, pr *pullRequest, _ args) (any, error) { return pr.number, nil },
		"title":          func(_ *execCtx, pr *pullRequest, _ args) (any, error) { return pr.title, nil },
		"body":           func(_ *execCtx, pr *pullRequest, _ args) (any, error) { return pr.body, nil },
		"merged":         func(_ *execCtx, pr *pullRequest, _ args) (any, error) { return pr.merged, nil },
		"mergedAt":       func(_ *execCtx, pr *pullRequest, _ args) (any, error) { return formatTime(pr.mergedAt), nil },
		"closed":         func(_ *execCtx, pr *pullRequest, _ args) (any, error) { return pr.state == "closed", nil },
		"closedAt":       func(_ *execCtx, pr *pullRequest, _ args) (any, error) { return formatTime(pr.closedAt), nil },
		"createdAt":      func(_ *execCtx, pr *pullRequest, _ args) (any, error) { return ts(pr.createdAt), nil },
		"updatedAt":      func(_ *execCtx, pr *pullRequest, _ args) (any, error) { return ts(pr.updatedAt), nil },
		"author":         func(_ *execCtx, pr *pullRequest, _ args) (any, error) { return pr.author, nil },
		"repository":     func(_ *execCtx, pr *pullRequest, _ args) (any, error) { return pr.repo, nil },
		"url": func(ec *execCtx, pr *pullRequest, _ args) (any, error) {
			return ec.w.htmlURL("/%s/pull/%d", pr.repo.fullName(), pr.number), nil
		},
		"state": func(_ *execCtx, pr *pullRequest, _ args) (any, error) {
			if pr.merged {
				return "MERGED", nil
			}
			return gqlState(pr.state), nil
		},
		"closingIssuesReferences": func(_ *execCtx, pr *pullRequest, a args) (any, error) {
			return paginate("closingIssuesReferences", anys(pr.closes), a)
		},
		"projectItems": func(_ *execCtx, pr *pullRequest, a args) (any, error) { return projectItemsOf(pr.items, a) },
	})

	fieldsOf(rs, "IssueComment", map[string]func(*execCtx, *comment, args) (any, error){
		"id":             func(_ *execCtx, c *comment, _ args) (any, error) { return c.nodeID, nil },
		"databaseId":     func(_ *execCtx, c *comment, _ args) (any, error) { return gqlInt(c.id) },
		"fullDatabaseId": func(_ *execCtx, c *comment, _ args) (any, error) { return strconv.FormatInt(c.id, 10), nil },
		"body":           func(_ *execCtx, c *comment, _ args) (any, error) { return c.body, nil },
		"author":         func(_ *execCtx, c *comment, _ args) (any, error) { return c.author, nil },
		"createdAt":      func(_ *execCtx, c *comment, _ args) (any, error) { return ts(c.createdAt), nil },
		"updatedAt":      func(_ *execCtx, c *comment, _ args) (any, error) { return ts(c.updatedAt), nil },
		"issue":          func(_ *execCtx, c *comment, _ args) (any, error) { return c.issue, nil },
		"viewerDidAuthor": func(ec *execCtx, c *comment, _ args) (any, error) {
			return ec.who.actor != nil && c.author == ec.who.actor, nil
		},
		"url": func(ec *execCtx, c *comment, _ args) (any, error) {
			return ec.w.htmlURL("/%s/issues/%d#issuecomment-%d", c.issue.repo.fullName(), c.issue.number, c.id), nil
		},
	})
}

// timelineItems pages through an issue's timeline, which ghsim keeps for closes and reopens
// only: asked for other kinds (or for every kind, without itemTypes), it says so rather than
// answer with a timeline that would look complete.
func timelineItems(is *issue, a args) (any, error) {
	kinds, ok := a["itemTypes"].([]any)
	if !ok || len(kinds) == 0 {
		return nil, &typedError{typ: "GHSIM_NOT_IMPLEMENTED", msg: "ghsim keeps only closes and reopens: give timelineItems itemTypes [CLOSED_EVENT, REOPENED_EVENT]"}
	}
	want := map[string]bool{}
	for _, k := range kinds {
		s, _ := k.(string)
		if s != "CLOSED_EVENT" && s != "REOPENED_EVENT" {
			return nil, &typedError{typ: "GHSIM_NOT_IMPLEMENTED", msg: fmt.Sprintf("ghsim keeps no %s timeline items", s)}
		}
		want[s] = true
	}
	if _, since := a["since"]; since {
		return nil, &typedError{typ: "GHSIM_NOT_IMPLEMENTED", msg: "ghsim does not implement argument Issue.timelineItems(since)"}
	}
	var out []any
	for _, ev := range is.timeline {
		if want[ev.kind] {
			out = append(out, ev)
		}
	}
	return paginate("timelineItems", out, a)
}

func issueEventResolvers(rs resolverSet) {
	for _, typ := range []string{"ClosedEvent", "ReopenedEvent"} {
		fieldsOf(rs, typ, map[string]func(*execCtx, *issueEvent, args) (any, error){
			"id":        func(_ *execCtx, e *issueEvent, _ args) (any, error) { return e.nodeID, nil },
			"createdAt": func(_ *execCtx, e *issueEvent, _ args) (any, error) { return ts(e.createdAt), nil },
			"actor":     func(_ *execCtx, e *issueEvent, _ args) (any, error) { return e.actor, nil },
			"stateReason": func(_ *execCtx, e *issueEvent, _ args) (any, error) {
				if e.reason == "" {
					return nil, nil
				}
				return strings.ToUpper(e.reason), nil
			},
		})
	}
}
