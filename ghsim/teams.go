package ghsim

import (
	"fmt"
	"net/http"
	"strings"
)

// Teams of an organization (seed `teams:`, top level and in each of `orgs`) and GitHub's "Get
// team membership for a user"
// (https://docs.github.com/en/rest/teams/members#get-team-membership-for-a-user):
// GET /orgs/{org}/teams/{team_slug}/memberships/{username}.

// Team roles, as GitHub's team membership names them.
const (
	TeamRoleMember     = "member"
	TeamRoleMaintainer = "maintainer"
)

// team is one team of an organization; members holds each member's role by login.
type team struct {
	id      int64
	slug    string
	members map[string]string
}

// teamNamed finds a team of the organization by slug (case-insensitively).
func (o *organization) teamNamed(slug string) *team {
	for _, t := range o.teams {
		if strings.EqualFold(t.slug, slug) {
			return t
		}
	}
	return nil
}

// member finds a user on the team: the login as seeded and the role (both "" when not a member).
func (t *team) member(login string) (seeded, role string) {
	for l, role := range t.members {
		if strings.EqualFold(l, login) {
			return l, role
		}
	}
	return "", ""
}

// loadTeams builds an organization's teams; its members are known (o.members).
func (w *world) loadTeams(o *organization, teams []SeedTeam) {
	for _, st := range teams {
		t := &team{id: w.ids.take("team"), slug: st.Slug, members: map[string]string{}}
		for _, m := range st.Members {
			t.members[m] = TeamRoleMember
			if memberRole(o, m) == OrgRoleAdmin {
				t.members[m] = TeamRoleMaintainer
			}
		}
		for _, m := range st.Maintainers {
			t.members[m] = TeamRoleMaintainer
		}
		o.teams = append(o.teams, t)
	}
}

// validTeamSlug reports whether slug is one GitHub could have made from a team's name: lower-case
// letters, digits, "-" and "_".
func validTeamSlug(slug string) bool {
	return slug != "" && strings.Trim(slug, "abcdefghijklmnopqrstuvwxyz0123456789-_") == ""
}

// validateTeams reports the problems of an organization's teams: a slug is required, valid and
// unique; members and maintainers are seeded users who are members of the organization, each
// listed once.
func validateTeams(org string, teams []SeedTeam, users, orgMembers map[string]bool) []error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	slugs := map[string]bool{}
	for i, t := range teams {
		switch {
		case t.Slug == "":
			bad("teams[%d].slug: required", i)
		case !validTeamSlug(t.Slug):
			bad("teams[%d].slug: %q is not a team slug (lower-case letters, digits, - and _)", i, t.Slug)
		case slugs[t.Slug]:
			bad("teams[%d].slug: duplicate team %q", i, t.Slug)
		}
		slugs[t.Slug] = true
		seen := map[string]bool{}
		check := func(key string, logins []string) {
			for j, m := range logins {
				switch {
				case !users[m]:
					bad("teams[%d].%s[%d]: unknown user %q", i, key, j, m)
				case !orgMembers[m]:
					bad("teams[%d].%s[%d]: %q is not a member of the organization %s (a team's members must be)", i, key, j, m, org)
				case seen[m]:
					bad("teams[%d].%s[%d]: %q is listed twice", i, key, j, m)
				}
				seen[m] = true
			}
		}
		check("members", t.Members)
		check("maintainers", t.Maintainers)
	}
	return errs
}

// getTeamMembership is GET /orgs/{org}/teams/{team_slug}/memberships/{username}: 200 with
// {url, role, state: "active"} for a member of the team (role "member" or "maintainer"); 404
// for anyone else, a team or organization that does not exist, or a requester who cannot see
// the team (another organization's installation, a user outside the organization). An
// installation needs the Members organization permission (read): without it, 403.
func (s *Server) getTeamMembership(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	s.w.mu.RLock()
	defer s.w.mu.RUnlock()
	if p.kind == installationToken && !p.inst.can("members", "read") {
		writeError(w, http.StatusForbidden, "Resource not accessible by integration")
		return
	}
	notFound := func() {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Not Found",
			"documentation_url": "https://docs.github.com/rest/teams/members#get-team-membership-for-a-user", "status": "404"})
	}
	o := s.w.orgNamed(r.PathValue("org"))
	if o == nil {
		notFound()
		return
	}
	sees := (p.kind == installationToken && p.inst.org == o) || (p.kind == userToken && memberRole(o, p.actor.login) != OrgRoleNone)
	t := o.teamNamed(r.PathValue("team_slug"))
	if !sees || t == nil {
		notFound()
		return
	}
	login, role := t.member(r.PathValue("username"))
	if role == "" {
		notFound()
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"url":   s.w.apiURL("/organizations/%d/team/%d/memberships/%s", o.id, t.id, login),
		"role":  role,
		"state": "active",
	})
}
