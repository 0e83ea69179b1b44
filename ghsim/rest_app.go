package ghsim

import (
	"net/http"
	"strconv"
)

// routes registers every REST route; the pattern (without /api/v3) names the operation in the
// request log.
func (s *Server) routes() {
	h := func(pattern string, f http.HandlerFunc) {
		method, path, _ := cut(pattern)
		s.rest.HandleFunc(method+" /api/v3"+path, f)
	}
	h("GET /app", s.getApp)
	h("GET /app/installations", s.listInstallations)
	h("GET /app/installations/{id}", s.getInstallation)
	h("POST /app/installations/{id}/access_tokens", s.createAccessToken)
	h("GET /app/hook/config", s.getHookConfig)
	h("GET /app/hook/deliveries", s.listDeliveries)
	h("GET /app/hook/deliveries/{id}", s.getDelivery)
	h("POST /app/hook/deliveries/{id}/attempts", s.redeliver)
	h("GET /orgs/{org}/installation", s.getOrgInstallation)
	h("GET /repos/{owner}/{repo}/installation", s.getRepoInstallation)
	h("GET /installation/repositories", s.listInstallationRepos)
	h("GET /rate_limit", s.getRateLimit)
	h("GET /repos/{owner}/{repo}/issues/{number}", s.getIssue)
	h("PATCH /repos/{owner}/{repo}/issues/{number}", s.patchIssue)
	h("GET /repos/{owner}/{repo}/issues/{number}/comments", s.listComments)
	h("POST /repos/{owner}/{repo}/issues/{number}/comments", s.createComment)
	h("PATCH /repos/{owner}/{repo}/issues/comments/{id}", s.updateComment)
	h("GET /repos/{owner}/{repo}/issues/{number}/sub_issues", s.listSubIssues)
	h("GET /repos/{owner}/{repo}/issues/{number}/parent", s.getParent)
	h("GET /repos/{owner}/{repo}/issues/{number}/dependencies/blocked_by", s.listBlockedBy)
	h("GET /repos/{owner}/{repo}/issues/{number}/dependencies/blocking", s.listBlocking)
	h("GET /repos/{owner}/{repo}/pulls/{number}", s.getPull)
}

func cut(pattern string) (method, path string, ok bool) {
	for i := 0; i < len(pattern); i++ {
		if pattern[i] == ' ' {
			return pattern[:i], pattern[i+1:], true
		}
	}
	return "", pattern, false
}

func (s *Server) appJSON() map[string]any {
	s.w.mu.RLock()
	defer s.w.mu.RUnlock()
	w := s.w
	return map[string]any{
		"id": w.app.id, "slug": w.app.slug, "node_id": nodeID("A", w.app.id), "name": w.app.name,
		"owner": w.orgAsOwnerJSON(), "description": "", "external_url": w.baseURL, "html_url": w.htmlURL("/apps/%s", w.app.slug),
		"created_at": ts(seedEpoch), "updated_at": ts(seedEpoch),
		"permissions": w.app.permissions, "events": w.app.events, "installations_count": 1,
	}
}

func (s *Server) installationJSON() map[string]any {
	s.w.mu.RLock()
	defer s.w.mu.RUnlock()
	w := s.w
	id := w.app.installationID
	return map[string]any{
		"id": id, "node_id": installationNodeID(id), "account": w.orgAsOwnerJSON(), "app_id": w.app.id, "app_slug": w.app.slug,
		"target_id": w.org.id, "target_type": "Organization", "repository_selection": "all",
		"access_tokens_url": w.apiURL("/app/installations/%d/access_tokens", id),
		"repositories_url":  w.apiURL("/installation/repositories"),
		"html_url":          w.htmlURL("/organizations/%s/settings/installations/%d", w.org.login, id),
		"permissions":       w.app.permissions, "events": w.app.events,
		"created_at": ts(seedEpoch), "updated_at": ts(seedEpoch), "single_file_name": nil, "suspended_at": nil,
	}
}

func (s *Server) getApp(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.appJSON())
}

func (s *Server) listInstallations(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, []any{s.installationJSON()})
}

func (s *Server) installationIDMatches(r *http.Request) bool {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	return err == nil && id == s.seed.App.InstallationID
}

func (s *Server) getInstallation(w http.ResponseWriter, r *http.Request) {
	if !s.installationIDMatches(r) {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	writeJSON(w, http.StatusOK, s.installationJSON())
}

func (s *Server) getOrgInstallation(w http.ResponseWriter, r *http.Request) {
	if r.PathValue("org") != s.seed.Org {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	writeJSON(w, http.StatusOK, s.installationJSON())
}

func (s *Server) getRepoInstallation(w http.ResponseWriter, r *http.Request) {
	s.w.mu.RLock()
	ok := r.PathValue("owner") == s.seed.Org && s.w.repoByName[r.PathValue("repo")] != nil
	s.w.mu.RUnlock()
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	writeJSON(w, http.StatusOK, s.installationJSON())
}

func (s *Server) createAccessToken(w http.ResponseWriter, r *http.Request) {
	if !s.installationIDMatches(r) {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	tok, exp := s.auth.issue()
	s.w.mu.RLock()
	perms := s.w.app.permissions
	s.w.mu.RUnlock()
	writeJSON(w, http.StatusCreated, map[string]any{"token": tok, "expires_at": ts(exp), "permissions": perms, "repository_selection": "all"})
}

func (s *Server) getHookConfig(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"url": s.hooks.getURL(), "content_type": "json", "insecure_ssl": "0", "secret": "********"})
}

func (s *Server) listInstallationRepos(w http.ResponseWriter, _ *http.Request) {
	s.w.mu.RLock()
	repos := make([]any, 0, len(s.w.repos))
	for _, r := range s.w.repos {
		repos = append(repos, s.w.repoJSON(r))
	}
	s.w.mu.RUnlock()
	writeJSON(w, http.StatusOK, map[string]any{"total_count": len(repos), "repository_selection": "all", "repositories": repos})
}

func (s *Server) getRateLimit(w http.ResponseWriter, r *http.Request) {
	snap := rateFrom(r.Context())
	res := map[string]any{"limit": snap.Limit, "remaining": snap.Remaining, "used": snap.Used, "reset": snap.Reset.Unix(), "resource": snap.Resource}
	writeJSON(w, http.StatusOK, map[string]any{"resources": map[string]any{"core": res}, "rate": res})
}
