package ghsim

import (
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// GET /repos/{owner}/{repo}/compare/{basehead}: GitHub's "Compare two commits"
// (https://docs.github.com/en/rest/commits/commits#compare-two-commits). A repository's history
// is one linear branch, so HEAD is BASE ("identical"), after it ("ahead") or before it
// ("behind"); never "diverged".

// Compare answers without paging parameters list at most compareMaxCommits commits (the most
// recent), and the files at most compareMaxFiles, as GitHub documents.
const (
	compareMaxCommits = 250
	compareMaxFiles   = 300
)

// commitIndex is the position of c in the repository's history (-1 when not there).
func (r *repo) commitIndex(c *commit) int { return slices.Index(r.commits, c) }

// compareCommits is GET /repos/{owner}/{repo}/compare/{basehead}: basehead is BASE...HEAD,
// each a branch name or a commit sha (full or an unambiguous prefix of 7+ hex digits). An
// installation needs the contents permission (read). 404 for a repository it may not see, a
// basehead without "...", or a side that names no commit.
func (s *Server) compareCommits(w http.ResponseWriter, r *http.Request) {
	s.w.mu.RLock()
	defer s.w.mu.RUnlock()
	rp := s.readableRepo(w, r)
	if rp == nil {
		return
	}
	basehead := r.PathValue("basehead")
	baseRef, headRef, ok := strings.Cut(basehead, "...")
	if !ok || baseRef == "" || headRef == "" {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	base, head := rp.commitByRef(baseRef), rp.commitByRef(headRef)
	if base == nil || head == nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	bi, hi := rp.commitIndex(base), rp.commitIndex(head)
	status, ahead, behind, mergeBase := "identical", 0, 0, base
	switch {
	case hi > bi:
		status, ahead = "ahead", hi-bi
	case hi < bi:
		status, behind, mergeBase = "behind", bi-hi, head
	}
	// The commits reachable from HEAD and not from BASE (git log BASE..HEAD), oldest first.
	between := []*commit{}
	if ahead > 0 {
		between = rp.commits[bi+1 : hi+1]
	}
	q := r.URL.Query()
	paged := q.Has("page") || q.Has("per_page")
	listed, firstPage := between, true
	if paged {
		lo, up, ok := page(w, r, s.w.baseURL, len(between))
		if !ok {
			return
		}
		listed, firstPage = between[lo:up], q.Get("page") == "" || q.Get("page") == "1"
	} else if len(listed) > compareMaxCommits {
		listed = listed[len(listed)-compareMaxCommits:]
	}
	commits := make([]any, 0, len(listed))
	for _, c := range listed {
		commits = append(commits, s.w.restCommitJSON(rp, c))
	}
	files := []any{}
	if firstPage {
		files = s.w.compareFilesJSON(rp, mergeBase, head)
	}
	full := rp.fullName()
	escaped := url.PathEscape(baseRef) + "..." + url.PathEscape(headRef)
	html := s.w.htmlURL("/%s/compare/%s", full, escaped)
	owner := rp.owner.login
	writeJSON(w, http.StatusOK, map[string]any{
		"url":               s.w.apiURL("/repos/%s/compare/%s", full, escaped),
		"html_url":          html,
		"permalink_url":     s.w.htmlURL("/%s/compare/%s:%s...%s:%s", full, owner, base.sha, owner, head.sha),
		"diff_url":          html + ".diff",
		"patch_url":         html + ".patch",
		"base_commit":       s.w.restCommitJSON(rp, base),
		"merge_base_commit": s.w.restCommitJSON(rp, mergeBase),
		"status":            status,
		"ahead_by":          ahead,
		"behind_by":         behind,
		"total_commits":     len(between),
		"commits":           commits,
		"files":             files,
	})
}

// restCommitJSON is a commit as the REST API's commit schema has it (the compare and commits
// APIs). Its author and committer are the seeded user who made it; it is unsigned.
func (w *world) restCommitJSON(r *repo, c *commit) map[string]any {
	full := r.fullName()
	person := map[string]any{"name": c.author.login, "email": noreplyEmail(c.author), "date": ts(c.at)}
	parents := []any{}
	if c.parent != nil {
		parents = append(parents, map[string]any{"sha": c.parent.sha, "url": w.apiURL("/repos/%s/commits/%s", full, c.parent.sha),
			"html_url": w.htmlURL("/%s/commit/%s", full, c.parent.sha)})
	}
	tree := treeSHA(c, "")
	return map[string]any{
		"sha":          c.sha,
		"url":          w.apiURL("/repos/%s/commits/%s", full, c.sha),
		"html_url":     w.htmlURL("/%s/commit/%s", full, c.sha),
		"comments_url": w.apiURL("/repos/%s/commits/%s/comments", full, c.sha),
		"commit": map[string]any{
			"url":           w.apiURL("/repos/%s/git/commits/%s", full, c.sha),
			"author":        person,
			"committer":     person,
			"message":       c.message,
			"tree":          map[string]any{"sha": tree, "url": w.apiURL("/repos/%s/git/trees/%s", full, tree)},
			"comment_count": 0,
			"verification":  map[string]any{"verified": false, "reason": "unsigned", "signature": nil, "payload": nil, "verified_at": nil},
		},
		"author":    w.userJSON(c.author),
		"committer": w.userJSON(c.author),
		"parents":   parents,
	}
}

// compareFilesJSON lists the files that differ between two commits (from's tree to to's), by
// path, at most compareMaxFiles: status added, removed or modified (renames are not detected),
// with the lines added and deleted.
func (w *world) compareFilesJSON(r *repo, from, to *commit) []any {
	full := r.fullName()
	paths := map[string]bool{}
	for p := range from.files {
		paths[p] = true
	}
	for p := range to.files {
		paths[p] = true
	}
	out := []any{}
	for _, path := range slices.Sorted(maps.Keys(paths)) {
		before, had := from.files[path]
		after, has := to.files[path]
		var status, sha, at string
		switch {
		case !had:
			status, sha, at = "added", blobSHA(after), to.sha
		case !has:
			status, sha, at = "removed", blobSHA(before), from.sha
		case before != after:
			status, sha, at = "modified", blobSHA(after), to.sha
		default:
			continue
		}
		if len(out) == compareMaxFiles {
			break
		}
		adds, dels := lineChanges(before, after)
		escaped := (&url.URL{Path: path}).EscapedPath()
		out = append(out, map[string]any{
			"sha": sha, "filename": path, "status": status,
			"additions": adds, "deletions": dels, "changes": adds + dels,
			"blob_url":     w.htmlURL("/%s/blob/%s/%s", full, at, escaped),
			"raw_url":      w.htmlURL("/%s/raw/%s/%s", full, at, escaped),
			"contents_url": w.apiURL("/repos/%s/contents/%s?ref=%s", full, escaped, at),
		})
	}
	return out
}

// lineChanges counts the lines a minimal line diff from a to b adds and deletes (what git's
// diff stat counts): the lines outside the longest common subsequence. Past a few million
// line pairs the differing middle counts as wholly replaced.
func lineChanges(a, b string) (adds, dels int) {
	x, y := splitLines(a), splitLines(b)
	for len(x) > 0 && len(y) > 0 && x[0] == y[0] {
		x, y = x[1:], y[1:]
	}
	for len(x) > 0 && len(y) > 0 && x[len(x)-1] == y[len(y)-1] {
		x, y = x[:len(x)-1], y[:len(y)-1]
	}
	if len(x) == 0 || len(y) == 0 || len(x)*len(y) > 4_000_000 {
		return len(y), len(x)
	}
	// One row of the LCS table at a time.
	prev, cur := make([]int, len(y)+1), make([]int, len(y)+1)
	for i := range x {
		for j := range y {
			switch {
			case x[i] == y[j]:
				cur[j+1] = prev[j] + 1
			case prev[j+1] >= cur[j]:
				cur[j+1] = prev[j+1]
			default:
				cur[j+1] = cur[j]
			}
		}
		prev, cur = cur, prev
	}
	lcs := prev[len(y)]
	return len(y) - lcs, len(x) - lcs
}

// splitLines splits text into its lines, each with its newline (the last may have none).
func splitLines(text string) []string {
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}
