package policy

import (
	"fmt"
	"path"
	"strings"
)

// Actors says who is who (config.yml `actors:` plus the app's own login).
type Actors struct {
	// App is ralph-gate's own login, e.g. "ralph-gate[bot]".
	App string `yaml:"-" json:"app,omitempty"`
	// Agents are logins or glob patterns such as "agent-*" or "*[bot]": path.Match with `*` and
	// `?`, but brackets are literal (see globPattern).
	Agents []string `yaml:"agents" json:"agents"`
	// Bypass logins are never reverted.
	Bypass []string `yaml:"bypass" json:"bypass"`
}

// Classify returns the actor kind of a login. GitHub logins are case-insensitive, so every
// comparison is too. Order matters: the app's own "*[bot]" login must not become an agent.
// An empty login (a payload without a sender) is an unknown actor: it gets the least privilege
// a reverting actor kind has, an agent's, never a person's.
func (a Actors) Classify(login string) ActorKind {
	if login == "" {
		return ActorAgent
	}
	if a.App != "" && strings.EqualFold(a.App, login) {
		return ActorApp
	}
	for _, b := range a.Bypass {
		if strings.EqualFold(b, login) {
			return ActorBypass
		}
	}
	lower := strings.ToLower(login)
	for _, p := range a.Agents {
		if ok, err := path.Match(globPattern(strings.ToLower(p)), lower); err == nil && ok {
			return ActorAgent
		}
	}
	return ActorHuman
}

// Validate reports malformed agent patterns and empty logins, with key paths under `actors`.
func (a Actors) Validate() []Problem {
	var ps []Problem
	for i, p := range a.Agents {
		switch {
		case strings.TrimSpace(p) == "":
			ps = append(ps, Problem{Path: fmt.Sprintf("actors.agents[%d]", i), Message: "must not be empty"})
		default:
			if _, err := path.Match(globPattern(p), ""); err != nil {
				ps = append(ps, Problem{Path: fmt.Sprintf("actors.agents[%d]", i), Message: fmt.Sprintf("invalid pattern %q: %v", p, err)})
			}
		}
	}
	for i, b := range a.Bypass {
		if strings.TrimSpace(b) == "" {
			ps = append(ps, Problem{Path: fmt.Sprintf("actors.bypass[%d]", i), Message: "must not be empty"})
		}
	}
	return ps
}

// globPattern makes brackets literal. In path.Match "*[bot]" is a character class matching any
// login ending in b, o or t (and not "dependabot[bot]"); GitHub logins never contain brackets
// except the "[bot]" suffix of apps, so a literal bracket is always what a config author means.
func globPattern(p string) string {
	return strings.NewReplacer("[", `\[`, "]", `\]`).Replace(p)
}
