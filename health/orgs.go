package health

import (
	"context"
	"fmt"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/policy"
)

// Org is an organization whose policy is read from its own repository (docs/CONFIGURATION.md
// "Policy in the organization's repository"): which commit's policy is in force, and the
// newest push that was refused.
type Org struct {
	Owner string `json:"owner"`
	// Commit is the commit the policy in force was read from; "" when no valid file has been
	// read (none of the organization's projects is enforced).
	Commit string    `json:"commit"`
	Since  time.Time `json:"since"`
	// Refused is the newest pushed commit whose file was refused since, when and why (its
	// problems, one per line).
	Refused    string    `json:"refusedCommit,omitempty"`
	RefusedAt  time.Time `json:"refusedAt,omitzero"`
	RefusedWhy string    `json:"refusedWhy,omitempty"`
	// What the report needs of the policy in force: its projects, workflow and modes.
	Projects []enforce.ProjectRef                        `json:"-"`
	Spec     policy.Spec                                 `json:"-"`
	Mode     func(owner string, number int) enforce.Mode `json:"-"`
}

// orgs adds the organizations' policies to a report, and their projects' health.
func (r *Reader) orgs(ctx context.Context, rep *Report, now time.Time, rt Runtime) error {
	if r.opts.Orgs == nil {
		return nil
	}
	orgs, err := r.opts.Orgs(ctx)
	if err != nil {
		return fmt.Errorf("the organizations' policies: %w", err)
	}
	rep.Orgs = orgs
	for _, o := range orgs {
		sub := &Reader{src: r.src, opts: r.opts}
		sub.opts.Spec, sub.opts.Mode = o.Spec, o.Mode
		for _, ref := range o.Projects {
			p, err := sub.project(ctx, ref, now, rt)
			if err != nil {
				return fmt.Errorf("health of %s/%d: %w", ref.Owner, ref.Number, err)
			}
			rep.Projects = append(rep.Projects, p)
		}
	}
	return nil
}
