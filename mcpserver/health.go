package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ralph-gate/ralph-gate/health"
	"github.com/ralph-gate/ralph-gate/mcpserver/toolspec"
	"github.com/ralph-gate/ralph-gate/policy"
)

// HealthReporter computes the board health report from the store (health.Reader implements
// it): board_health costs no GitHub request.
type HealthReporter interface {
	Report(ctx context.Context, now time.Time) (health.Report, error)
}

// boardHealth answers board_health: the report of every enforced project, or of the one asked.
func (s *server) boardHealth(ctx context.Context, _ string, in toolspec.HealthInput) (health.Report, error) {
	if s.opts.Health == nil {
		return health.Report{}, errors.New("the board health report is not wired into this server")
	}
	var owner string
	var number int
	if in.Project != "" {
		o, n, _ := strings.Cut(in.Project, "/")
		owner, number = o, atoi(n)
		if !s.enforced(owner, number) {
			return health.Report{}, policy.NewRetryRefusal(fmt.Sprintf("Project %s is not enforced", in.Project),
				"the report covers only the configured projects",
				policy.Retry{With: []policy.Suggestion{{Arg: "project", Kind: policy.Text, Values: s.projectNames(), Optional: true}}}).Because(policy.RuleNotFound)
		}
	}
	rep, err := s.opts.Health.Report(ctx, s.now())
	if err != nil {
		return health.Report{}, err
	}
	if in.Project != "" {
		kept := rep.Projects[:0]
		for _, p := range rep.Projects {
			if strings.EqualFold(p.Owner, owner) && p.Number == number {
				kept = append(kept, p)
			}
		}
		rep.Projects = kept
	}
	return rep, nil
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// enforced reports whether owner/number is one of the configured projects.
func (s *server) enforced(owner string, number int) bool {
	for _, p := range s.opts.Projects {
		if strings.EqualFold(p.Owner, owner) && p.Number == number {
			return true
		}
	}
	return false
}

// projectNames lists the configured projects as owner/number.
func (s *server) projectNames() []string {
	out := make([]string, 0, len(s.opts.Projects))
	for _, p := range s.opts.Projects {
		out = append(out, p.Owner+"/"+strconv.Itoa(p.Number))
	}
	return out
}
