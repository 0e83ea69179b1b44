package config

import (
	"fmt"
	"regexp"
	"strings"
)

// Organization is one organization this deployment serves, when the policies come from the
// organizations' repositories (docs/CONFIGURATION.md "Who may change an organization's
// policy"): its login, and the people whose pushes may change its policy.
type Organization struct {
	Login string `yaml:"login"`
	// PolicyAdmins are logins, or teams of the organization as "@org/team-slug", whose pushes
	// may change the organization's policy file. Empty: any person who is neither an agent
	// nor a bot by the policy in force.
	PolicyAdmins []string `yaml:"policy_admins"`
}

// PolicyAdmin is one entry of policy_admins: a login, or a team of the organization.
type PolicyAdmin struct {
	Login    string // a person's login; "" for a team
	TeamOrg  string // the team's organization ("" for a login)
	TeamSlug string
}

// String is the entry as written.
func (a PolicyAdmin) String() string {
	if a.Login != "" {
		return a.Login
	}
	return "@" + a.TeamOrg + "/" + a.TeamSlug
}

// loginPattern is a GitHub login: letters, digits and single hyphens, at most 39.
var loginPattern = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9]|-[A-Za-z0-9]){0,38}$`)

// teamSlugPattern is a team's slug as GitHub makes it from its name.
var teamSlugPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,99}$`)

// ParsePolicyAdmin reads one policy_admins entry.
func ParsePolicyAdmin(s string) (PolicyAdmin, error) {
	if team, ok := strings.CutPrefix(s, "@"); ok {
		org, slug, found := strings.Cut(team, "/")
		if !found || !loginPattern.MatchString(org) || !teamSlugPattern.MatchString(slug) {
			return PolicyAdmin{}, fmt.Errorf("%q is not a team: write it @org/team-slug (the slug in lower case, as in the team's URL)", s)
		}
		return PolicyAdmin{TeamOrg: org, TeamSlug: slug}, nil
	}
	if !loginPattern.MatchString(s) {
		return PolicyAdmin{}, fmt.Errorf("%q is not a GitHub login (letters, digits and single hyphens; a team is @org/team-slug)", s)
	}
	return PolicyAdmin{Login: s}, nil
}

// Admins are the organization's policy admins, parsed (the configuration was validated).
func (o Organization) Admins() []PolicyAdmin {
	out := make([]PolicyAdmin, 0, len(o.PolicyAdmins))
	for _, s := range o.PolicyAdmins {
		if a, err := ParsePolicyAdmin(s); err == nil {
			out = append(out, a)
		}
	}
	return out
}

// Serves reports whether this deployment serves an organization: every one when
// organizations lists none, else the ones it lists.
func (c Config) Serves(org string) bool {
	if len(c.Organizations) == 0 {
		return true
	}
	_, ok := c.OrganizationNamed(org)
	return ok
}

// OrganizationNamed is the organizations entry of an organization.
func (c Config) OrganizationNamed(org string) (Organization, bool) {
	for _, o := range c.Organizations {
		if strings.EqualFold(o.Login, org) {
			return o, true
		}
	}
	return Organization{}, false
}

// validateOrganizations checks the organizations section: only where the policies come from
// the organizations, each login once, each admin a login or a team of that organization.
func (c Config) validateOrganizations() Problems {
	var problems Problems
	if len(c.Organizations) > 0 && !c.OrgPolicies() {
		problems = append(problems, Problem{Path: "organizations",
			Message: "lists the organizations whose own policy files this deployment reads; with projects listed in config.yml no policy file is read: remove one of the two"})
	}
	seen := map[string]bool{}
	for i, o := range c.Organizations {
		at := fmt.Sprintf("organizations[%d]", i)
		switch key := strings.ToLower(o.Login); {
		case o.Login == "":
			problems = append(problems, Problem{Path: at + ".login", Message: "is required: the organization's login, as in its URL"})
		case !loginPattern.MatchString(o.Login):
			problems = append(problems, Problem{Path: at + ".login", Message: fmt.Sprintf("%q is not an organization's login", o.Login)})
		case seen[key]:
			problems = append(problems, Problem{Path: at + ".login", Message: fmt.Sprintf("duplicate organization %q", o.Login)})
		default:
			seen[key] = true
		}
		admins := map[string]bool{}
		for j, s := range o.PolicyAdmins {
			p := fmt.Sprintf("%s.policy_admins[%d]", at, j)
			a, err := ParsePolicyAdmin(s)
			switch {
			case err != nil:
				problems = append(problems, Problem{Path: p, Message: err.Error()})
			case a.TeamOrg != "" && o.Login != "" && !strings.EqualFold(a.TeamOrg, o.Login):
				problems = append(problems, Problem{Path: p,
					Message: fmt.Sprintf("%s is a team of another organization: name a team of %s (@%s/team-slug) or a login", s, o.Login, o.Login)})
			case admins[strings.ToLower(s)]:
				problems = append(problems, Problem{Path: p, Message: fmt.Sprintf("duplicate policy admin %q", s)})
			default:
				admins[strings.ToLower(s)] = true
			}
		}
	}
	return problems
}
