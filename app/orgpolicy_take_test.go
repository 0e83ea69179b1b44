package app

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v89/github"
	"github.com/palantir/go-githubapp/githubapp"

	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/ghsim"
	"github.com/ralph-gate/ralph-gate/store"
)

// teamSeed is an organization where owner is on the platform team, for team membership reads
// (with a member's token: the installation's would do the same).
const teamSeed = `org: acme
app: {id: 1, slug: ralph-gate, installation_id: 2}
repos: [app]
users: [{login: alice, token: alice-token}, {login: owner, token: owner-token}, {login: agent-1, token: agent-1-token}]
teams: [{slug: platform, members: [owner]}]
`

// Who may change an organization's policy: a bot never; with policy admins named, a named login
// or a member of a named team; else a person who is neither an agent nor a bot by the policy
// in force (the deployment's actors before any).
func TestMayChangePolicy(t *testing.T) {
	seed, err := ghsim.ParseSeed([]byte(teamSeed))
	if err != nil {
		t.Fatal(err)
	}
	sim, err := ghsim.New(seed, ghsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	client, err := github.NewClient(github.WithEnterpriseURLs(srv.URL+"/api/v3/", srv.URL+"/api/uploads/"), github.WithAuthToken("alice-token"))
	if err != nil {
		t.Fatal(err)
	}
	base, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	admins := base
	admins.Organizations = []config.Organization{{Login: "acme", PolicyAdmins: []string{"alice", "@acme/platform"}}}
	noAdmins := base
	noAdmins.Organizations = []config.Organization{{Login: "acme"}}
	// A policy in force that makes alice an agent.
	orgs := newOrgPolicies(base, "ralph-gate[bot]")
	aliceAgent, problems := orgs.compile("acme", 2, "x", []byte("projects: [{number: 1}]\nactors: {agents: [alice]}\n"), time.Now())
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	tests := []struct {
		name         string
		cfg          config.Config
		pusher, kind string
		cur          *orgPolicy
		want         string // "" may change; else a fragment of why not
	}{
		{"a named admin", admins, "alice", "User", nil, ""},
		{"a named admin, any case", admins, "ALICE", "User", nil, ""},
		{"a member of a named team", admins, "owner", "User", nil, ""},
		{"anyone else", admins, "agent-1", "User", nil, "agent-1 is not a policy admin of acme"},
		{"a bot named as an admin", admins, "alice", "Bot", nil, "alice is a bot"},
		{"a push without a pusher", admins, "", "", nil, "names no pusher"},
		{"no admins: a person", noAdmins, "alice", "User", nil, ""},
		{"no organizations at all: a person", base, "owner", "User", nil, ""},
		{"no admins: an agent by the deployment's actors", noAdmins, "agent-1", "User", nil, "agent-1 is an agent by the policy in force"},
		{"no admins: an agent by the policy in force", noAdmins, "alice", "User", &aliceAgent, "alice is an agent by the policy in force"},
		{"no admins: a bot", noAdmins, "dependabot[bot]", "Bot", nil, "is a bot"},
		{"no admins: this App", noAdmins, "ralph-gate[bot]", "User", nil, "is a bot"},
	}
	// The installation, which lacks the Members permission: a team's membership cannot be read,
	// and the push is refused saying so (not retried for ever, not lost).
	cc := githubapp.NewClientCreator(srv.URL+"/api/v3/", srv.URL+"/api/graphql", 1, sim.PrivateKeyPEM())
	installation, err := cc.NewInstallationClient(2)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("a member of a named team, the membership unreadable", func(t *testing.T) {
		a := &App{cfg: admins, orgs: newOrgPolicies(admins, "ralph-gate[bot]"), appLogin: "ralph-gate[bot]"}
		got, err := a.mayChangePolicy(context.Background(), policyFile{owner: "acme", client: installation, pusher: "owner", pusherType: "User"}, orgPolicy{}, false)
		if err != nil || !strings.Contains(got, "lacks the Members permission (read)") {
			t.Errorf("mayChangePolicy = %q, %v; want a refusal naming the permission", got, err)
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &App{cfg: tt.cfg, orgs: newOrgPolicies(tt.cfg, "ralph-gate[bot]"), appLogin: "ralph-gate[bot]"}
			f := policyFile{owner: "acme", client: client, pusher: tt.pusher, pusherType: tt.kind}
			var cur orgPolicy
			if tt.cur != nil {
				cur = *tt.cur
			}
			got, err := a.mayChangePolicy(context.Background(), f, cur, tt.cur != nil)
			if err != nil {
				t.Fatal(err)
			}
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("mayChangePolicy = %q, want %q", got, tt.want)
			}
		})
	}
}

// What a change changes, against the policy in force: projects and modes, bypass, agents,
// roles, the façade's agents, the workflow; with none in force, the projects that come into
// force.
func TestChangeSummary(t *testing.T) {
	base, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	base.MCP.Agents = []config.MCPAgent{{Name: "builder-1", Token: "builder-token-0123456789"}}
	orgs := newOrgPolicies(base, "ralph-gate[bot]")
	compile := func(text string) orgPolicy {
		t.Helper()
		op, problems := orgs.compile("acme", 2, "x", []byte(text), time.Now())
		if len(problems) > 0 {
			t.Fatal(problems)
		}
		return op
	}
	cur := compile("projects: [{number: 1}, {number: 2}]\nactors: {agents: [\"agent-*\"], bypass: [ops]}\n")
	next := compile("projects: [{number: 1, mode: evaluate}, {number: 3}]\nactors: {agents: [\"agent-*\"], bypass: [agent-1]}\n" +
		"mcp: {agents: [{name: builder-1}]}\nworkflow: {states: [{name: Done, description: Shipped.}]}\n")
	got := strings.Join(changeSummary(cur, true, next), "\n")
	for _, want := range []string{"~ project acme/1 mode: enforce → evaluate", "+ project acme/3 enforced (enforce)", "- project acme/2 no longer enforced",
		"+ actors.bypass: agent-1", "- actors.bypass: ops", "+ mcp.agents: builder-1", "~ workflow changed"} {
		if !strings.Contains(got, want) {
			t.Errorf("the summary lacks %q:\n%s", want, got)
		}
	}
	if got := changeSummary(cur, true, cur); len(got) != 0 {
		t.Errorf("an unchanged policy changes %q", got)
	}
	if got := strings.Join(changeSummary(orgPolicy{}, false, cur), "\n"); got != "+ project acme/1 enforced (enforce)\n+ project acme/2 enforced (enforce)" {
		t.Errorf("with none in force: %q", got)
	}
}

// A check run shows what comes from the file and from GitHub inert: problems and changes in a
// code block longer than any backtick run in them, logins and reasons escaped, invisible
// characters dropped; its conclusion says whether the policy was put in force.
func TestPolicyCheckOutputIsInert(t *testing.T) {
	hostile := "[click](https://evil.example) ![x](https://evil.example/x.png) ```` \u202eevil"
	d := policyDecision{
		file:       policyFile{owner: "acme", path: "ralph-gate.yml", sha: "0123456789abcdef", pusher: "mallory\u202e"},
		outcome:    store.PolicyRefused,
		refusedWhy: "mallory is not a policy admin of acme " + hostile,
		whoMay:     "a policy admin of acme (alice, in the deployment's config.yml)",
		problems:   config.Problems{{Path: "workflow.states[0].name" + hostile, Line: 3, Message: "unknown " + hostile}},
		changes:    []string{"+ actors.bypass: " + hostile},
	}
	out := policyCheckOutput(d)
	all := out.GetTitle() + out.GetSummary() + out.GetText()
	for _, a := range out.Annotations {
		all += a.GetTitle() + a.GetMessage()
	}
	if strings.Contains(all, "\u202e") {
		t.Error("an invisible character reached the check run")
	}
	if strings.Contains(out.GetSummary(), "[click](") || !strings.Contains(out.GetSummary(), `\[click\]\(`) {
		t.Errorf("the summary is not escaped: %s", out.GetSummary())
	}
	for _, block := range strings.Split(out.GetText(), "### ")[1:] {
		fence := "`````"
		if !strings.Contains(block, fence+"text\n") || strings.Count(block, fence) != 2 {
			t.Errorf("a section of the text is not one code block longer than its backtick runs:\n%s", block)
		}
	}
	if !strings.Contains(out.GetTitle(), "only a policy admin of acme") || out.Annotations[0].GetStartLine() != 3 {
		t.Errorf("title %q, annotations %+v", out.GetTitle(), out.Annotations)
	}
}
