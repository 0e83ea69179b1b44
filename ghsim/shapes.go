package ghsim

import (
	"fmt"
	"time"
)

// The REST and webhook JSON shapes, shared by both so they cannot drift apart. They follow
// GitHub's REST descriptions closely enough for go-github v89 and the published webhook schema.

func formatTime(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UTC().Format(time.RFC3339)
}

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func (w *world) apiURL(format string, a ...any) string {
	return w.baseURL + "/api/v3" + fmt.Sprintf(format, a...)
}

func (w *world) htmlURL(format string, a ...any) string { return w.baseURL + fmt.Sprintf(format, a...) }

func (w *world) userJSON(a *actor) map[string]any {
	if a == nil {
		return nil
	}
	api := w.apiURL("/users/%s", a.login)
	return map[string]any{
		"login": a.login, "id": a.id, "node_id": a.nodeID,
		"avatar_url":          w.htmlURL("/avatars/u/%d", a.id),
		"gravatar_id":         "",
		"url":                 api,
		"html_url":            w.htmlURL("/%s", a.login),
		"followers_url":       api + "/followers",
		"following_url":       api + "/following{/other_user}",
		"gists_url":           api + "/gists{/gist_id}",
		"starred_url":         api + "/starred{/owner}{/repo}",
		"subscriptions_url":   api + "/subscriptions",
		"organizations_url":   api + "/orgs",
		"repos_url":           api + "/repos",
		"events_url":          api + "/events{/privacy}",
		"received_events_url": api + "/received_events",
		"type":                a.typ,
		"site_admin":          false,
	}
}

func (w *world) orgJSON(o *organization) map[string]any {
	api := w.apiURL("/orgs/%s", o.login)
	return map[string]any{
		"login": o.login, "id": o.id, "node_id": o.nodeID,
		"url": api, "repos_url": api + "/repos", "events_url": api + "/events", "hooks_url": api + "/hooks",
		"issues_url": api + "/issues", "members_url": api + "/members{/member}",
		"public_members_url": api + "/public_members{/member}",
		"avatar_url":         w.htmlURL("/avatars/u/%d", o.id),
		"description":        "",
	}
}

func (w *world) orgAsOwnerJSON(o *organization) map[string]any {
	api := w.apiURL("/users/%s", o.login)
	return map[string]any{
		"login": o.login, "id": o.id, "node_id": o.nodeID, "type": "Organization", "site_admin": false,
		"avatar_url": w.htmlURL("/avatars/u/%d", o.id), "gravatar_id": "", "url": api,
		"html_url": w.htmlURL("/%s", o.login), "repos_url": api + "/repos",
	}
}

func (w *world) repoJSON(r *repo) map[string]any {
	full := r.fullName()
	api := w.apiURL("/repos/%s", full)
	return map[string]any{
		"id": r.id, "node_id": r.nodeID, "name": r.name, "full_name": full, "private": false,
		"owner": w.orgAsOwnerJSON(r.owner), "html_url": w.htmlURL("/%s", full), "description": nil, "fork": false,
		"url": api, "issues_url": api + "/issues{/number}", "pulls_url": api + "/pulls{/number}",
		"created_at": ts(r.createdAt), "updated_at": ts(r.createdAt), "pushed_at": ts(r.createdAt),
		"default_branch": "main", "visibility": "public", "archived": false, "disabled": false,
		"has_issues": true, "has_projects": true, "open_issues_count": 0,
	}
}

func (w *world) issueJSON(is *issue) map[string]any {
	full := is.repo.fullName()
	api := w.apiURL("/repos/%s/issues/%d", full, is.number)
	assignees := []any{}
	for _, a := range is.assignees {
		assignees = append(assignees, w.userJSON(a))
	}
	var assignee any
	if len(is.assignees) > 0 {
		assignee = w.userJSON(is.assignees[0])
	}
	var reason any
	if is.stateReason != "" {
		reason = is.stateReason
	}
	total, done := subIssueCounts(is)
	openBlockedBy, openBlocking := 0, 0
	for _, b := range is.blockedBy {
		if b.state == "open" {
			openBlockedBy++
		}
	}
	for _, b := range is.blocking {
		if b.state == "open" {
			openBlocking++
		}
	}
	return map[string]any{
		"url": api, "repository_url": w.apiURL("/repos/%s", full), "labels_url": api + "/labels{/name}",
		"comments_url": api + "/comments", "events_url": api + "/events", "timeline_url": api + "/timeline",
		"html_url": w.htmlURL("/%s/issues/%d", full, is.number),
		"id":       is.id, "node_id": is.nodeID, "number": is.number, "title": is.title, "body": is.body,
		"user": w.userJSON(is.author), "labels": []any{}, "state": is.state, "state_reason": reason, "locked": false,
		"assignee": assignee, "assignees": assignees, "milestone": nil, "comments": len(is.comments),
		"created_at": ts(is.createdAt), "updated_at": ts(is.updatedAt), "closed_at": formatTime(is.closedAt),
		"author_association": "MEMBER", "active_lock_reason": nil,
		"sub_issues_summary": map[string]any{"total": total, "completed": done, "percent_completed": percent(done, total)},
		"issue_dependencies_summary": map[string]any{"blocked_by": openBlockedBy, "total_blocked_by": len(is.blockedBy),
			"blocking": openBlocking, "total_blocking": len(is.blocking)},
	}
}

func subIssueCounts(is *issue) (total, done int) {
	for _, c := range is.subIssues {
		total++
		if c.state == "closed" {
			done++
		}
	}
	return total, done
}

func percent(done, total int) int {
	if total == 0 {
		return 0
	}
	return done * 100 / total
}

func (w *world) commentJSON(c *comment) map[string]any {
	full := c.issue.repo.fullName()
	return map[string]any{
		"id": c.id, "node_id": c.nodeID, "body": c.body, "user": w.userJSON(c.author),
		"url":        w.apiURL("/repos/%s/issues/comments/%d", full, c.id),
		"html_url":   w.htmlURL("/%s/issues/%d#issuecomment-%d", full, c.issue.number, c.id),
		"issue_url":  w.apiURL("/repos/%s/issues/%d", full, c.issue.number),
		"created_at": ts(c.createdAt), "updated_at": ts(c.updatedAt), "author_association": "MEMBER",
	}
}

func (w *world) prJSON(pr *pullRequest) map[string]any {
	full := pr.repo.fullName()
	api := w.apiURL("/repos/%s/pulls/%d", full, pr.number)
	sha := fmt.Sprintf("%040x", pr.id)
	branch := func(ref string) map[string]any {
		return map[string]any{"label": pr.repo.owner.login + ":" + ref, "ref": ref, "sha": sha, "user": w.orgAsOwnerJSON(pr.repo.owner), "repo": w.repoJSON(pr.repo)}
	}
	var mergedBy any
	if pr.mergedBy != nil {
		mergedBy = w.userJSON(pr.mergedBy)
	}
	var mergeSHA any
	if pr.merged {
		mergeSHA = sha
	}
	return map[string]any{
		"url": api, "id": pr.id, "node_id": pr.nodeID, "html_url": w.htmlURL("/%s/pull/%d", full, pr.number),
		"issue_url": w.apiURL("/repos/%s/issues/%d", full, pr.number),
		"number":    pr.number, "state": pr.state, "locked": false, "title": pr.title, "body": pr.body,
		"user": w.userJSON(pr.author), "labels": []any{}, "assignees": []any{}, "requested_reviewers": []any{},
		"created_at": ts(pr.createdAt), "updated_at": ts(pr.updatedAt), "closed_at": formatTime(pr.closedAt),
		"merged_at": formatTime(pr.mergedAt), "merge_commit_sha": mergeSHA, "draft": false,
		"head": branch(fmt.Sprintf("pr-%d", pr.number)), "base": branch("main"),
		"merged": pr.merged, "merged_by": mergedBy, "mergeable": nil, "comments": 0, "commits": 1,
		"additions": 1, "deletions": 0, "changed_files": 1, "author_association": "MEMBER",
	}
}

func (w *world) itemJSON(it *item) map[string]any {
	return map[string]any{
		"id": it.id, "node_id": it.nodeID, "project_node_id": it.project.nodeID,
		"content_node_id": it.contentNodeID(), "content_type": it.contentType(),
		"creator":    w.userJSON(it.creator),
		"created_at": ts(it.createdAt), "updated_at": ts(it.updatedAt), "archived_at": formatTime(it.archivedAt),
	}
}

func optionJSON(o *option) any {
	if o == nil {
		return nil
	}
	return map[string]any{"id": o.id, "name": o.name, "color": o.color, "description": o.description}
}
