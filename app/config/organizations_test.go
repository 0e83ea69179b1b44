package config

import (
	"strings"
	"testing"
)

// The organizations section: which organizations a deployment serves and who may change each
// one's policy; every problem by its key path.
func TestOrganizations(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string // "path: message fragment"; none: valid
	}{
		{"none: every organization, any person", "organizations: []\n", nil},
		{"logins and a team of the organization", "organizations: [{login: acme, policy_admins: [alice, \"@acme/platform\"]}, {login: globex}]\n", nil},
		{"with projects in config.yml", "projects: [{owner: acme, number: 1}]\norganizations: [{login: acme}]\n",
			[]string{"organizations: lists the organizations whose own policy files"}},
		{"no login", "organizations: [{policy_admins: [alice]}]\n", []string{"organizations[0].login: is required"}},
		{"a login twice", "organizations: [{login: acme}, {login: ACME}]\n", []string{"organizations[1].login: duplicate organization"}},
		{"not a login", "organizations: [{login: \"acme corp\"}]\n", []string{"organizations[0].login: \"acme corp\" is not an organization's login"}},
		{"another organization's team", "organizations: [{login: acme, policy_admins: [\"@globex/admins\"]}]\n",
			[]string{"organizations[0].policy_admins[0]: @globex/admins is a team of another organization"}},
		{"a team without a slug", "organizations: [{login: acme, policy_admins: [\"@acme\"]}]\n",
			[]string{"organizations[0].policy_admins[0]: \"@acme\" is not a team"}},
		{"not a login (a pattern)", "organizations: [{login: acme, policy_admins: [\"agent-*\"]}]\n",
			[]string{"organizations[0].policy_admins[0]: \"agent-*\" is not a GitHub login"}},
		{"an admin twice", "organizations: [{login: acme, policy_admins: [alice, Alice]}]\n",
			[]string{"organizations[0].policy_admins[1]: duplicate policy admin"}},
		{"an unknown key", "organizations: [{login: acme, admins: [alice]}]\n", []string{"organizations[0].admins"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml))
			var got []string
			if ps, ok := err.(Problems); ok {
				for _, p := range ps {
					got = append(got, p.Path+": "+p.Message)
				}
			} else if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("problems %q, want %q", got, tt.want)
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(got[i], w) && !strings.Contains(got[i], w) {
					t.Errorf("problem %d is %q, want %q", i, got[i], w)
				}
			}
		})
	}
	cfg, err := Parse([]byte("organizations: [{login: acme, policy_admins: [alice, \"@acme/platform\"]}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Serves("ACME") || cfg.Serves("globex") {
		t.Error("Serves: acme is served, globex is not")
	}
	o, _ := cfg.OrganizationNamed("acme")
	if got := o.Admins(); len(got) != 2 || got[0].Login != "alice" || got[1].TeamOrg != "acme" || got[1].TeamSlug != "platform" || got[1].String() != "@acme/platform" {
		t.Errorf("Admins: %+v", got)
	}
	if all, _ := Parse([]byte("organizations: []\n")); !all.Serves("anyone") {
		t.Error("with no organizations listed every organization is served")
	}
}
