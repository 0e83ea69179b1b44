package ghsim

import (
	"net/http"
	"strings"
)

// getRepo is GET /repos/{owner}/{repo}: the repository, with its default branch (GitHub's
// "Get a repository"). Any installation that sees it may read it (metadata: read).
func (s *Server) getRepo(w http.ResponseWriter, r *http.Request) {
	s.w.mu.RLock()
	defer s.w.mu.RUnlock()
	rp := s.repoFrom(r)
	if rp == nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	writeJSON(w, http.StatusOK, s.w.repoJSON(rp))
}

// getCommit is GET /repos/{owner}/{repo}/commits/{ref} (GitHub's "Get a commit"): with the
// media type application/vnd.github.sha (go-github's GetCommitSHA1 sends
// application/vnd.github.v3.sha) the commit's SHA alone, as text; otherwise the commit as
// JSON. 422 for a ref that names no commit, as GitHub answers.
func (s *Server) getCommit(w http.ResponseWriter, r *http.Request) {
	s.w.mu.RLock()
	defer s.w.mu.RUnlock()
	rp := s.repoFrom(r)
	if rp == nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	ref := r.PathValue("ref")
	c := rp.commitByRef(ref)
	if ref == "" || c == nil {
		writeError(w, http.StatusUnprocessableEntity, "No commit found for SHA: "+ref)
		return
	}
	if accept := r.Header.Get("Accept"); strings.Contains(accept, "application/vnd.github.sha") || strings.Contains(accept, "application/vnd.github.v3.sha") {
		w.Header().Set("Content-Type", "application/vnd.github.sha; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(c.sha))
		return
	}
	parent := []any{}
	if c.parent != nil {
		parent = append(parent, map[string]any{"sha": c.parent.sha})
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"sha":     c.sha,
		"url":     s.w.apiURL("/repos/%s/commits/%s", rp.fullName(), c.sha),
		"commit":  map[string]any{"message": c.message, "author": map[string]any{"date": c.at.UTC().Format("2006-01-02T15:04:05Z")}},
		"parents": parent,
	})
}
