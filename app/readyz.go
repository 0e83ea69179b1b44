package app

import (
	"fmt"
	"strings"
)

// maxReadyProjects bounds the projects /readyz names; the others are counted.
const maxReadyProjects = 20

// readyText is /readyz's answer once the service is ready: what it enforces, each project
// with its mode. Nothing enforced — no organization's policy in force yet — is still ready
// (200): readiness says whether the pod may take webhooks, and the push that brings the first
// policy is one of them (docs/OPERATIONS.md).
func (a *App) readyText() string {
	projects := a.projects()
	if len(projects) == 0 {
		if a.orgs != nil {
			return "ready: no organization's policy is in force yet: nothing is enforced"
		}
		return "ready: nothing is enforced"
	}
	parts := make([]string, 0, min(len(projects), maxReadyProjects)+1)
	for _, p := range projects[:min(len(projects), maxReadyProjects)] {
		parts = append(parts, fmt.Sprintf("%s/%d (%s)", p.Owner, p.Number, a.modeNow(p.Owner, p.Number)))
	}
	if n := len(projects) - maxReadyProjects; n > 0 {
		parts = append(parts, fmt.Sprintf("and %d more", n))
	}
	return "ready: enforcing " + strings.Join(parts, ", ")
}
