package ghsim

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-github/v89/github"
)

func TestSeedTeamsValidation(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"valid", "teams: [{slug: platform, members: [alice, olive], maintainers: [bob]}, {slug: empty_team-2}]", ""},
		{"valid in another org", "orgs: [{login: beta, installation_id: 3, members: [bob], teams: [{slug: web, members: [bob]}]}]", ""},
		{"slug required", "teams: [{members: [alice]}]", "teams[0].slug: required"},
		{"duplicate slug", "teams: [{slug: platform}, {slug: platform}]", `teams[1].slug: duplicate team "platform"`},
		{"invalid slug", "teams: [{slug: Platform Team}]", `teams[0].slug: "Platform Team" is not a team slug`},
		{"slug with a slash", "teams: [{slug: a/b}]", `teams[0].slug: "a/b" is not a team slug`},
		{"unknown member", "teams: [{slug: platform, members: [zed]}]", `teams[0].members[0]: unknown user "zed"`},
		{"unknown maintainer", "teams: [{slug: platform, maintainers: [zed]}]", `teams[0].maintainers[0]: unknown user "zed"`},
		{"member outside the organization", "teams: [{slug: platform, members: [alice, mallory]}]",
			`teams[0].members[1]: "mallory" is not a member of the organization acme`},
		{"listed twice", "teams: [{slug: platform, members: [alice], maintainers: [alice]}]", `teams[0].maintainers[0]: "alice" is listed twice`},
		{"another org's member", "orgs: [{login: beta, installation_id: 3, members: [bob], teams: [{slug: web, members: [alice]}]}]",
			`orgs[0].teams[0].members[0]: "alice" is not a member of the organization beta`},
		{"unknown key", "teams: [{slug: platform, member: [alice]}]", "field member not found"},
		{"a team is a mapping", "teams: [platform]", "cannot unmarshal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := "org: acme\napp: {id: 1, slug: s, installation_id: 2}\nrepos: [app]\n" +
				"users: [{login: alice}, {login: bob}, {login: olive, org_role: admin}, {login: mallory, org_role: none}]\n" + tc.yaml + "\n"
			seed, err := ParseSeed([]byte(doc))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("ParseSeed: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("ParseSeed: %v, want %q", err, tc.want)
			case tc.want == "" && len(seed.Teams)+len(seed.Orgs) == 0:
				t.Fatal("no teams decoded")
			}
		})
	}
}

// teamsSeed is the two-organization seed with teams on both, an admin of acme and a user
// outside it.
func teamsSeed(t testing.TB) Seed {
	t.Helper()
	seed := twoOrgsSeed(t)
	seed.Users = append(seed.Users, SeedUser{Login: "olive", Token: "olive-token", OrgRole: OrgRoleAdmin},
		SeedUser{Login: "mallory", Token: "mallory-token", OrgRole: OrgRoleNone})
	seed.Teams = []SeedTeam{
		{Slug: "platform", Members: []string{"alice", "olive"}, Maintainers: []string{"bob"}},
		{Slug: "empty"},
	}
	seed.Orgs[0].Teams = []SeedTeam{{Slug: "web", Members: []string{"bob"}}}
	return seed
}

func TestTeamMembership(t *testing.T) {
	seed := teamsSeed(t)
	s := startSim(t, seed, Options{})
	acme, beta := s.tokenOf("2002"), s.tokenOf("3003")

	// An installation whose permissions lack members.
	noMembers := seed
	noMembers.App.Permissions = map[string]string{"organization_projects": "write", "issues": "write", "metadata": "read", "contents": "read"}
	s2 := startSim(t, noMembers, Options{})
	tok2 := s2.installationToken()

	ctx := context.Background()
	for _, tc := range []struct {
		name, token, org, team, user string
		sim                          *sim
		status                       int
		role                         string
		message                      string
	}{
		{name: "member", token: acme, org: "acme", team: "platform", user: "alice", status: 200, role: "member"},
		{name: "maintainer", token: acme, org: "acme", team: "platform", user: "bob", status: 200, role: "maintainer"},
		{name: "an organization admin is a maintainer", token: acme, org: "acme", team: "platform", user: "olive", status: 200, role: "maintainer"},
		{name: "login in another case", token: acme, org: "ACME", team: "platform", user: "ALICE", status: 200, role: "member"},
		{name: "not on the team", token: acme, org: "acme", team: "empty", user: "alice", status: 404, message: "Not Found"},
		{name: "not in the organization", token: acme, org: "acme", team: "platform", user: "mallory", status: 404, message: "Not Found"},
		{name: "unknown user", token: acme, org: "acme", team: "platform", user: "nobody", status: 404, message: "Not Found"},
		{name: "unknown team", token: acme, org: "acme", team: "nope", user: "alice", status: 404, message: "Not Found"},
		{name: "unknown organization", token: acme, org: "other", team: "platform", user: "alice", status: 404, message: "Not Found"},
		{name: "another organization's team", token: acme, org: "beta", team: "web", user: "bob", status: 404, message: "Not Found"},
		{name: "the other installation's own team", token: beta, org: "beta", team: "web", user: "bob", status: 200, role: "member"},
		{name: "a member of the organization asks", token: "alice-token", org: "acme", team: "platform", user: "bob", status: 200, role: "maintainer"},
		{name: "a user outside the organization asks", token: "mallory-token", org: "acme", team: "platform", user: "alice", status: 404, message: "Not Found"},
		{name: "no members permission", sim: s2, token: tok2, org: "acme", team: "platform", user: "alice", status: 403, message: "Resource not accessible by integration"},
		{name: "bad token", token: "nope", org: "acme", team: "platform", user: "alice", status: 401, message: "Bad credentials"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := s
			if tc.sim != nil {
				srv = tc.sim
			}
			m, res, err := srv.client(tc.token).Teams.GetTeamMembershipBySlug(ctx, tc.org, tc.team, tc.user)
			if tc.status != 200 {
				var er *github.ErrorResponse
				if !errors.As(err, &er) || er.Response.StatusCode != tc.status || er.Message != tc.message {
					t.Fatalf("err = %v, want %d %q", err, tc.status, tc.message)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.GetRole() != tc.role || m.GetState() != "active" || !strings.HasPrefix(m.GetURL(), s.url+"/api/v3/organizations/") ||
				!strings.Contains(m.GetURL(), "/team/") || !strings.HasSuffix(strings.ToLower(m.GetURL()), "/memberships/"+strings.ToLower(tc.user)) {
				t.Fatalf("membership %+v", m)
			}
			if res.Header.Get("X-Ratelimit-Resource") != "core" || res.Header.Get("X-Ratelimit-Used") == "" {
				t.Errorf("rate-limit headers: %v", res.Header)
			}
		})
	}
	if n := s.Requests().Counts["rest:GET /orgs/{org}/teams/{team_slug}/memberships/{username}"]; n == 0 {
		t.Fatalf("team membership reads not logged: %v", s.Requests().Counts)
	}
}

// The App's default permissions leave members: read out (ralph-gate asks for it only for its
// pages and for teams of policy admins): a seed without app.permissions gets the 403, and one
// that names members: read can ask for team membership.
func TestTeamMembershipWithDefaultPermissions(t *testing.T) {
	seed := testSeed(t)
	seed.App.Permissions = nil
	seed.Teams = []SeedTeam{{Slug: "platform", Members: []string{"alice"}}}
	s := startSim(t, seed, Options{})
	ctx := context.Background()
	a, _, err := s.client(s.appJWT()).Apps.Get(ctx, "")
	if err != nil || a.GetPermissions().GetMembers() != "" {
		t.Fatalf("app permissions %+v %v", a.GetPermissions(), err)
	}
	if _, resp, err := s.client(s.installationToken()).Teams.GetTeamMembershipBySlug(ctx, "acme", "platform", "alice"); err == nil || resp.StatusCode != 403 {
		t.Fatalf("without members: read: %v", err)
	}
	seed.App.Permissions = map[string]string{"organization_projects": "write", "issues": "write", "metadata": "read", "members": "read"}
	s = startSim(t, seed, Options{})
	m, _, err := s.client(s.installationToken()).Teams.GetTeamMembershipBySlug(ctx, "acme", "platform", "alice")
	if err != nil || m.GetRole() != "member" {
		t.Fatalf("membership %+v %v", m, err)
	}
	// Reset rebuilds the teams from the seed.
	if err := s.Reset(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.client(s.installationToken()).Teams.GetTeamMembershipBySlug(ctx, "acme", "platform", "alice"); err != nil {
		t.Fatalf("after reset: %v", err)
	}
}
