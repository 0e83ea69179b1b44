package ghsim

import (
	"net/http"
	"strconv"
)

// repoFrom resolves {owner}/{repo} for the requester: nil when there is no such repository or
// the requester's installation may not see it (another organization's, or one outside its
// selected repositories), which GitHub answers 404. Callers hold the world's lock.
func (s *Server) repoFrom(r *http.Request) *repo {
	rp := s.w.repo(r.PathValue("owner"), r.PathValue("repo"))
	if rp == nil {
		return nil
	}
	if p := principalFrom(r.Context()); p.kind == installationToken && !p.inst.sees(rp) {
		return nil
	}
	return rp
}

// issueFrom resolves {owner}/{repo}/{number} (callers hold the lock); nil is 404.
func (s *Server) issueFrom(r *http.Request) *issue {
	rp := s.repoFrom(r)
	n, err := strconv.Atoi(r.PathValue("number"))
	if rp == nil || err != nil {
		return nil
	}
	return s.w.issue(rp.owner.login, rp.name, n)
}

func (s *Server) publicURL() string {
	s.w.mu.RLock()
	defer s.w.mu.RUnlock()
	return s.w.baseURL
}

func (s *Server) getIssue(w http.ResponseWriter, r *http.Request) {
	s.w.mu.RLock()
	defer s.w.mu.RUnlock()
	is := s.issueFrom(r)
	if is == nil {
		if pr := s.prFrom(r); pr != nil { // GitHub serves pull requests as issues too
			body := s.w.prJSON(pr)
			body["pull_request"] = map[string]any{"url": body["url"], "html_url": body["html_url"], "merged_at": body["merged_at"]}
			writeJSON(w, http.StatusOK, body)
			return
		}
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	writeJSON(w, http.StatusOK, s.w.issueJSON(is))
}

func (s *Server) prFrom(r *http.Request) *pullRequest {
	rp := s.repoFrom(r)
	n, err := strconv.Atoi(r.PathValue("number"))
	if rp == nil || err != nil {
		return nil
	}
	return s.w.pr(rp.owner.login, rp.name, n)
}

func (s *Server) getPull(w http.ResponseWriter, r *http.Request) {
	s.w.mu.RLock()
	defer s.w.mu.RUnlock()
	pr := s.prFrom(r)
	if pr == nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	writeJSON(w, http.StatusOK, s.w.prJSON(pr))
}

func (s *Server) patchIssue(w http.ResponseWriter, r *http.Request) {
	var in struct {
		State       *string `json:"state"`
		StateReason *string `json:"state_reason"`
		Title       *string `json:"title"`
		Body        *string `json:"body"`
	}
	if err := decodeBody(r, &in); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	by := principalFrom(r.Context()).actor
	s.w.mu.Lock()
	defer s.flushLocked()
	is := s.issueFrom(r)
	if is == nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	if err := s.w.editIssue(by, is, in.Title, in.Body); err != nil {
		writeWorldError(w, err)
		return
	}
	reason := ""
	if in.StateReason != nil {
		reason = *in.StateReason
	}
	if in.State != nil {
		var err error
		switch *in.State {
		case "closed":
			err = s.w.closeIssue(by, is, reason)
		case "open":
			if reason != "" && reason != "reopened" {
				err = errInvalid("state_reason %q is not valid for reopening", reason)
			} else {
				err = s.w.reopenIssue(by, is)
			}
		default:
			err = errInvalid("state must be open or closed")
		}
		if err != nil {
			writeWorldError(w, err)
			return
		}
	} else if reason != "" {
		if is.state != "closed" {
			writeWorldError(w, errInvalid("state_reason requires state closed"))
			return
		}
		if err := s.w.closeIssue(by, is, reason); err != nil {
			writeWorldError(w, err)
			return
		}
	}
	writeJSON(w, http.StatusOK, s.w.issueJSON(is))
}

func (s *Server) listComments(w http.ResponseWriter, r *http.Request) {
	base := s.publicURL()
	s.w.mu.RLock()
	defer s.w.mu.RUnlock()
	is := s.issueFrom(r)
	if is == nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	lo, hi, ok := page(w, r, base, len(is.comments))
	if !ok {
		return
	}
	out := make([]any, 0, hi-lo)
	for _, c := range is.comments[lo:hi] {
		out = append(out, s.w.commentJSON(c))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) createComment(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Body string `json:"body"`
	}
	if err := decodeBody(r, &in); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	by := principalFrom(r.Context()).actor
	s.w.mu.Lock()
	defer s.flushLocked()
	is := s.issueFrom(r)
	if is == nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	c, err := s.w.addComment(by, is, in.Body)
	if err != nil {
		writeWorldError(w, err)
		return
	}
	w.Header().Set("Location", s.w.apiURL("/repos/%s/issues/comments/%d", is.repo.fullName(), c.id))
	writeJSON(w, http.StatusCreated, s.w.commentJSON(c))
}

func (s *Server) updateComment(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Body string `json:"body"`
	}
	if err := decodeBody(r, &in); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	by := principalFrom(r.Context()).actor
	s.w.mu.Lock()
	defer s.flushLocked()
	c := s.w.comment(id)
	if err != nil || c == nil || c.issue.repo != s.repoFrom(r) {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	if _, err := s.w.updateComment(by, c, in.Body); err != nil {
		writeWorldError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, s.w.commentJSON(c))
}

func (s *Server) listIssues(w http.ResponseWriter, r *http.Request, pick func(*issue) []*issue) {
	base := s.publicURL()
	s.w.mu.RLock()
	defer s.w.mu.RUnlock()
	is := s.issueFrom(r)
	if is == nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	list := pick(is)
	lo, hi, ok := page(w, r, base, len(list))
	if !ok {
		return
	}
	out := make([]any, 0, hi-lo)
	for _, x := range list[lo:hi] {
		out = append(out, s.w.issueJSON(x))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) listSubIssues(w http.ResponseWriter, r *http.Request) {
	s.listIssues(w, r, func(is *issue) []*issue { return is.subIssues })
}

func (s *Server) listBlockedBy(w http.ResponseWriter, r *http.Request) {
	s.listIssues(w, r, func(is *issue) []*issue { return is.blockedBy })
}

func (s *Server) listBlocking(w http.ResponseWriter, r *http.Request) {
	s.listIssues(w, r, func(is *issue) []*issue { return is.blocking })
}

func (s *Server) getParent(w http.ResponseWriter, r *http.Request) {
	s.w.mu.RLock()
	defer s.w.mu.RUnlock()
	is := s.issueFrom(r)
	if is == nil || is.parent == nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	writeJSON(w, http.StatusOK, s.w.issueJSON(is.parent))
}
