package ghsim

import (
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Repositories hold files: each has a default branch, main, with a linear history of commits
// (the seed's files are the first). GET /repos/{owner}/{repo}/contents/{path} reads them as
// GitHub's "Repository contents" API does, and POST /_sim/push (Server.Push) adds a commit and
// sends the push webhook.

const defaultBranch = "main"

// maxContentSize is the largest file the contents API answers with its content: bigger ones
// come with encoding "none" and no content, as GitHub documents for files over 1 MB.
const maxContentSize = 1 << 20

// commit is one commit of a repository's default branch; files is the whole tree at it.
type commit struct {
	sha     string
	parent  *commit
	message string
	author  *actor
	at      time.Time
	files   map[string]string
	// what it changed from its parent, each sorted
	added, removed, modified []string
}

// blobSHA is git's object id of a file's content: sha1("blob <len>\0<content>").
func blobSHA(content string) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(content))
	h.Write([]byte(content))
	return hex.EncodeToString(h.Sum(nil))
}

// newCommit makes a commit of r with the tree files on top of parent (nil for the first). Its
// sha is derived from the repository, the parent, the message, the time and the tree, so it is
// unique and the same in two worlds built alike.
func (w *world) newCommit(r *repo, parent *commit, message string, author *actor, at time.Time, files map[string]string) *commit {
	c := &commit{parent: parent, message: message, author: author, at: at, files: maps.Clone(files)}
	if c.files == nil {
		c.files = map[string]string{}
	}
	var before map[string]string
	parentSHA := ""
	if parent != nil {
		before, parentSHA = parent.files, parent.sha
	}
	for _, path := range slices.Sorted(maps.Keys(c.files)) {
		old, had := before[path]
		switch {
		case !had:
			c.added = append(c.added, path)
		case old != c.files[path]:
			c.modified = append(c.modified, path)
		}
	}
	for _, path := range slices.Sorted(maps.Keys(before)) {
		if _, kept := c.files[path]; !kept {
			c.removed = append(c.removed, path)
		}
	}
	h := sha1.New()
	fmt.Fprintf(h, "ghsim commit\x00%s\x00%d\x00%s\x00%s\x00%s\x00", r.fullName(), len(r.commits), parentSHA, message, at.Format(time.RFC3339))
	for _, path := range slices.Sorted(maps.Keys(c.files)) {
		fmt.Fprintf(h, "%s\x00%s\x00", path, blobSHA(c.files[path]))
	}
	c.sha = hex.EncodeToString(h.Sum(nil))
	return c
}

func (r *repo) head() *commit { return r.commits[len(r.commits)-1] }

// commitByRef resolves a ref as GitHub's contents and checks APIs take it: empty (the default
// branch), the branch's name (main, heads/main, refs/heads/main), or a commit sha (full, or
// an unambiguous prefix of at least 7 hex digits).
func (r *repo) commitByRef(ref string) *commit {
	switch strings.TrimPrefix(strings.TrimPrefix(ref, "refs/"), "heads/") {
	case "", defaultBranch:
		return r.head()
	}
	ref = strings.ToLower(ref)
	if len(ref) < 7 || len(ref) > 40 || strings.Trim(ref, "0123456789abcdef") != "" {
		return nil
	}
	var found *commit
	for _, c := range r.commits {
		if strings.HasPrefix(c.sha, ref) {
			if found != nil {
				return nil
			}
			found = c
		}
	}
	return found
}

// commitBySHA finds a commit by its full sha.
func (r *repo) commitBySHA(sha string) *commit {
	for _, c := range r.commits {
		if c.sha == sha {
			return c
		}
	}
	return nil
}

// base64Lines encodes content as GitHub's contents API does: standard base64, a newline after
// every 60 characters and at the end.
func base64Lines(content string) string {
	enc := base64.StdEncoding.EncodeToString([]byte(content))
	var b strings.Builder
	for len(enc) > 60 {
		b.WriteString(enc[:60])
		b.WriteByte('\n')
		enc = enc[60:]
	}
	if enc != "" {
		b.WriteString(enc)
		b.WriteByte('\n')
	}
	return b.String()
}

// treeSHA names a directory of a commit (derived from its entries; ghsim keeps no git trees).
func treeSHA(c *commit, dir string) string {
	h := sha1.New()
	fmt.Fprintf(h, "ghsim tree\x00%s\x00", dir)
	for _, path := range slices.Sorted(maps.Keys(c.files)) {
		if dir == "" || strings.HasPrefix(path, dir+"/") {
			fmt.Fprintf(h, "%s\x00%s\x00", path, blobSHA(c.files[path]))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// contentJSON is one entry of the contents API: a file (with its content when withContent) or a
// directory. ref is the ref the links name.
func (w *world) contentJSON(r *repo, c *commit, path, ref string, dir, withContent bool) map[string]any {
	full := r.fullName()
	escaped := (&url.URL{Path: path}).EscapedPath()
	self := w.apiURL("/repos/%s/contents/%s?ref=%s", full, escaped, url.QueryEscape(ref))
	kind, sha, size, gitURL, html := "file", "", 0, "", w.htmlURL("/%s/blob/%s/%s", full, ref, escaped)
	var download any
	if dir {
		kind, sha = "dir", treeSHA(c, path)
		gitURL = w.apiURL("/repos/%s/git/trees/%s", full, sha)
		html = w.htmlURL("/%s/tree/%s/%s", full, ref, escaped)
	} else {
		content := c.files[path]
		sha, size = blobSHA(content), len(content)
		gitURL = w.apiURL("/repos/%s/git/blobs/%s", full, sha)
		download = w.htmlURL("/%s/raw/%s/%s", full, ref, escaped)
	}
	out := map[string]any{
		"type": kind, "size": size, "name": path[strings.LastIndex(path, "/")+1:], "path": path, "sha": sha,
		"url": self, "git_url": gitURL, "html_url": html, "download_url": download,
		"_links": map[string]any{"self": self, "git": gitURL, "html": html},
	}
	if withContent {
		out["encoding"], out["content"] = "base64", base64Lines(c.files[path])
		if size > maxContentSize {
			out["encoding"], out["content"] = "none", ""
		}
	}
	return out
}

// getContents is GET /repos/{owner}/{repo}/contents/{path}?ref=: a file's content (base64) and
// metadata, or a directory's entries (the repository's root for an empty path). An installation
// needs the contents permission (read); 404 for a repository it may not see, a path that is
// not there, or a ref that names no commit.
// readableRepo is the request's repository when its caller may read its contents (an
// installation needs contents: read); otherwise nil, the answer written (404, or 403). The
// caller holds the world's lock.
func (s *Server) readableRepo(w http.ResponseWriter, r *http.Request) *repo {
	rp := s.repoFrom(r)
	if rp == nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return nil
	}
	if p := principalFrom(r.Context()); p.kind == installationToken && !p.inst.can("contents", "read") {
		writeError(w, http.StatusForbidden, "Resource not accessible by integration")
		return nil
	}
	return rp
}

func (s *Server) getContents(w http.ResponseWriter, r *http.Request) {
	s.w.mu.RLock()
	defer s.w.mu.RUnlock()
	rp := s.readableRepo(w, r)
	if rp == nil {
		return
	}
	ref := r.URL.Query().Get("ref")
	c := rp.commitByRef(ref)
	if c == nil {
		writeError(w, http.StatusNotFound, "No commit found for the ref "+ref)
		return
	}
	if ref == "" {
		ref = defaultBranch
	}
	raw := strings.Trim(r.PathValue("path"), "/")
	path := cleanPath(raw)
	if path != raw {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	if _, ok := c.files[path]; ok {
		writeJSON(w, http.StatusOK, s.w.contentJSON(rp, c, path, ref, false, true))
		return
	}
	entries := []any{}
	seen := map[string]bool{}
	prefix := ""
	if path != "" {
		prefix = path + "/"
	}
	for _, f := range slices.Sorted(maps.Keys(c.files)) {
		rest, ok := strings.CutPrefix(f, prefix)
		if !ok {
			continue
		}
		name, _, isDir := strings.Cut(rest, "/")
		if seen[name] {
			continue
		}
		seen[name] = true
		entries = append(entries, s.w.contentJSON(rp, c, prefix+name, ref, isDir, false))
	}
	if len(entries) == 0 && path != "" {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	writeJSON(w, http.StatusOK, entries)
}

// Push is a push of one commit to a repository's default branch (POST /_sim/push).
type Push struct {
	// Org owns the repository; empty: the seed's top-level organization.
	Org  string `json:"org"`
	Repo string `json:"repo"`
	// Files are the changes: path → new content, or nil (JSON null) to delete the file.
	Files map[string]*string `json:"files"`
	// By is the seeded user who pushes (empty: the first).
	By string `json:"by"`
	// Message is the commit message (empty: "Update <paths>").
	Message string `json:"message"`
}

// PushResult names the new commit and the one before it.
type PushResult struct {
	SHA    string `json:"sha"`
	Before string `json:"before"`
}

// Push makes a commit on a repository's default branch and sends the push webhook, as a git
// push of one commit would (POST /_sim/push).
func (s *Server) Push(p Push) (PushResult, error) {
	s.w.mu.Lock()
	defer s.flushLocked()
	return s.w.push(p)
}

func (w *world) push(p Push) (PushResult, error) {
	owner := p.Org
	if owner == "" {
		owner = w.org.login
	}
	r := w.repo(owner, p.Repo)
	if r == nil {
		return PushResult{}, errNotFound("no repository %s/%s", owner, p.Repo)
	}
	by := w.users[0]
	if p.By != "" {
		if by = w.byLogin[p.By]; by == nil || by.typ != "User" {
			return PushResult{}, errNotFound("no user %q", p.By)
		}
	}
	before := r.head()
	files := maps.Clone(before.files)
	for _, path := range slices.Sorted(maps.Keys(p.Files)) {
		if cleanPath(path) != path || path == "" {
			return PushResult{}, errInvalid("%q is not a clean relative path", path)
		}
		content := p.Files[path]
		if content == nil {
			if _, ok := files[path]; !ok {
				return PushResult{}, errInvalid("cannot delete %s: no such file", path)
			}
			delete(files, path)
			continue
		}
		files[path] = *content
	}
	for path := range files {
		for dir := path; strings.Contains(dir, "/"); {
			dir = dir[:strings.LastIndex(dir, "/")]
			if _, isFile := files[dir]; isFile {
				return PushResult{}, errInvalid("%s is a file and a directory", dir)
			}
		}
	}
	msg := p.Message
	if msg == "" {
		msg = "Update " + strings.Join(slices.Sorted(maps.Keys(p.Files)), ", ")
	}
	c := w.newCommit(r, before, msg, by, w.clock(), files)
	r.commits = append(r.commits, c)
	if in := r.owner.inst; in.sees(r) {
		w.emitPush(r, before, c, by)
	}
	return PushResult{SHA: c.sha, Before: before.sha}, nil
}

// emitPush sends GitHub's push payload for one pushed commit on the default branch. Unlike the
// other events it has no action.
func (w *world) emitPush(r *repo, before, c *commit, by *actor) {
	o := r.owner
	if !w.subscribed("push") {
		return
	}
	full := r.fullName()
	short := func(sha string) string { return sha[:12] }
	commitJSON := w.pushCommitJSON(r, c)
	repoJSON := w.repoJSON(r)
	// The push payload's repository dates creation and the push as Unix times, and names its
	// owner with name and email.
	repoJSON["created_at"] = r.createdAt.Unix()
	repoJSON["pushed_at"] = c.at.Unix()
	repoJSON["updated_at"] = ts(c.at)
	repoJSON["master_branch"] = defaultBranch
	repoJSON["stargazers"] = 0
	owner := w.orgAsOwnerJSON(o)
	owner["name"], owner["email"] = o.login, nil
	repoJSON["owner"] = owner
	id := r.id
	w.queue(event{name: "push", installationID: o.inst.id, repositoryID: &id}, map[string]any{
		"ref": "refs/heads/" + defaultBranch, "before": before.sha, "after": c.sha,
		"created": false, "deleted": false, "forced": false, "base_ref": nil,
		"compare":      w.htmlURL("/%s/compare/%s...%s", full, short(before.sha), short(c.sha)),
		"commits":      []any{commitJSON},
		"head_commit":  commitJSON,
		"repository":   repoJSON,
		"pusher":       map[string]any{"name": by.login, "email": noreplyEmail(by)},
		"sender":       w.userJSON(by),
		"organization": w.orgJSON(o),
		"installation": map[string]any{"id": o.inst.id, "node_id": installationNodeID(o.inst.id)},
	})
}

func noreplyEmail(a *actor) string {
	return strconv.FormatInt(a.id, 10) + "+" + a.login + "@users.noreply.github.com"
}

// pushCommitJSON is a commit as the push payload lists it.
func (w *world) pushCommitJSON(r *repo, c *commit) map[string]any {
	person := map[string]any{"name": c.author.login, "email": noreplyEmail(c.author), "username": c.author.login}
	list := func(l []string) []string {
		if l == nil {
			return []string{}
		}
		return l
	}
	return map[string]any{
		"id": c.sha, "tree_id": treeSHA(c, ""), "distinct": true, "message": c.message, "timestamp": ts(c.at),
		"url": w.htmlURL("/%s/commit/%s", r.fullName(), c.sha), "author": person, "committer": person,
		"added": list(c.added), "removed": list(c.removed), "modified": list(c.modified),
	}
}
