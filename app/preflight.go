package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/go-github/v89/github"
	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/ghboard"
	"github.com/ralph-gate/ralph-gate/policy"
)

// BoardFinding is one way an enforced project's board disagrees with the workflow. doctor
// prints each with its fix; serve stays not ready while a blocking one remains.
type BoardFinding struct {
	// Project is "owner/number".
	Project string `json:"project"`
	// Option is the option missing from the field, or on it but not a workflow state.
	Option string `json:"option,omitempty"`
	// Rename is the near-miss option on the board that should be renamed to Option.
	Rename string `json:"rename,omitempty"`
	// Blocking findings keep the project from being enforced: the project or its field is
	// missing, or an option a workflow state needs. An extra option is not blocking: an item
	// moved into it is reverted like any illegal move.
	Blocking bool `json:"blocking"`
	// Problem says what is wrong, without the project; Fix what to do about it.
	Problem string `json:"problem"`
	Fix     string `json:"fix,omitempty"`
}

func (f BoardFinding) String() string { return "project " + f.Project + ": " + f.Problem }

// renameAdvice is why a near-miss option is renamed, never replaced.
const renameAdvice = "Rename it, never delete it and add a new one: deleting an option clears it on every item that holds it"

// CheckBoard reads one project's workflow field through board and compares its options with
// the workflow's states (m). It returns what is wrong with the board; err is a failure to ask
// (GitHub unreachable, a rate limit), after which nothing is known. doctor and serve share it.
func CheckBoard(ctx context.Context, board *ghboard.Board, p config.Project, m *policy.Machine) ([]BoardFinding, error) {
	name := fmt.Sprintf("%s/%d", p.Owner, p.Number)
	field, err := board.Field(ctx, p.Owner, p.Number)
	switch {
	case errors.Is(err, ghboard.ErrNotFound) && strings.Contains(err.Error(), "single-select field"):
		return []BoardFinding{{Project: name, Blocking: true,
			Problem: fmt.Sprintf("has no single-select field %q", m.Field()),
			Fix:     fmt.Sprintf("add a single-select field named %q to the project (Settings → Custom fields), with the options listed by `ralph-gate policy graph`, or set workflow.field to the field's name", m.Field()),
		}}, nil
	case errors.Is(err, ghboard.ErrNotFound):
		return []BoardFinding{{Project: name, Blocking: true,
			Problem: "the project does not exist, or the App cannot see it",
			Fix:     "check projects[].owner and number (the number is in the project's URL: /orgs/OWNER/projects/NUMBER) and that the App is installed on that organization with Projects access",
		}}, nil
	case err != nil:
		return nil, fmt.Errorf("project %s: %w", name, err)
	}
	want := m.States()
	var missing, extra []string
	for _, s := range want {
		if _, ok := field.Options[s]; !ok {
			missing = append(missing, s)
		}
	}
	for _, o := range field.Names {
		if !slices.Contains(want, o) {
			extra = append(extra, o)
		}
	}
	var out []BoardFinding
	renamed := map[string]bool{}
	for _, s := range missing {
		f := BoardFinding{Project: name, Option: s, Blocking: true,
			Problem: fmt.Sprintf("field %q lacks the option %q", m.Field(), s),
			Fix:     fmt.Sprintf("in the project's settings edit the field %q and add the option %q (names are exact and case-sensitive)", m.Field(), s),
		}
		if near, ok := config.Nearest(s, unclaimed(extra, renamed)); ok {
			renamed[near] = true
			f.Rename = near
			f.Fix = fmt.Sprintf("rename the option %q to %q in the field %q (the project's Settings → Custom fields → %s; names are exact and case-sensitive). %s",
				near, s, m.Field(), m.Field(), renameAdvice)
		}
		out = append(out, f)
	}
	for _, o := range extra {
		if renamed[o] {
			continue // reported with its rename above
		}
		out = append(out, BoardFinding{Project: name, Option: o,
			Problem: fmt.Sprintf("field %q has the option %q, which is not a workflow state", m.Field(), o),
			Fix: "add the state to workflow.states in the configuration, or move the items out of it and delete the option " +
				"(deleting an option clears it on every item that holds it; an item moved into it is reverted)",
		})
	}
	required, err := requiredFieldFindings(ctx, board, p, m)
	if err != nil {
		return nil, err
	}
	return append(out, required...), nil
}

// requiredFieldFindings: a field workflow.requirements names that the project lacks is never
// set, so every move the requirement binds would be refused with a Recovery nobody can follow.
func requiredFieldFindings(ctx context.Context, board *ghboard.Board, p config.Project, m *policy.Machine) ([]BoardFinding, error) {
	required := m.RequiredFields()
	if len(required) == 0 {
		return nil, nil
	}
	name := fmt.Sprintf("%s/%d", p.Owner, p.Number)
	have, err := board.FieldNames(ctx, p.Owner, p.Number)
	if err != nil {
		return nil, fmt.Errorf("project %s: %w", name, err)
	}
	var out []BoardFinding
	for _, f := range required {
		if slices.Contains(have, f) {
			continue
		}
		fix := fmt.Sprintf("add a field named %q to the project (Settings → Custom fields), or name one it has under workflow.requirements", f)
		if near, ok := config.Nearest(f, have); ok {
			fix = fmt.Sprintf("the project has a field %q: write that name under workflow.requirements, or rename the field to %q (names are exact and case-sensitive)", near, f)
		}
		out = append(out, BoardFinding{Project: name, Blocking: true,
			Problem: fmt.Sprintf("has no field %q, which workflow.requirements names", f), Fix: fix})
	}
	return out, nil
}

// unclaimed are the options not yet matched to a missing state.
func unclaimed(options []string, claimed map[string]bool) []string {
	var out []string
	for _, o := range options {
		if !claimed[o] {
			out = append(out, o)
		}
	}
	return out
}

// CheckBoards checks every enforced project's board, finding each organization's
// installation first: an organization the App is not installed on is a blocking finding.
// err is the first failure to ask GitHub; the findings of the other projects are returned
// with it.
func (a *App) CheckBoards(ctx context.Context) ([]BoardFinding, error) {
	var (
		out   []BoardFinding
		first error
	)
	for _, p := range a.cfg.Projects {
		board, err := a.boards.get(ctx, 0, p.Owner)
		if err != nil {
			if isNotFound(err) {
				out = append(out, BoardFinding{Project: fmt.Sprintf("%s/%d", p.Owner, p.Number), Blocking: true,
					Problem: fmt.Sprintf("the App is not installed on the organization %s", p.Owner),
					Fix:     "an owner of " + p.Owner + " installs the App (`ralph-gate doctor` prints the link)",
				})
				continue
			}
			if first == nil {
				first = err
			}
			continue
		}
		findings, err := CheckBoard(ctx, board, p, a.machine)
		out = append(out, findings...)
		if err != nil && first == nil {
			first = err
		}
	}
	return out, first
}

func isNotFound(err error) bool {
	var er *github.ErrorResponse
	return errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == http.StatusNotFound
}

// boardGate holds /readyz until every enforced board has what the workflow needs. Without
// it serve reported ready against a project that did not exist, or a board missing an option
// the app must write (Human Needed, Canceled), and the reconciler then failed every pass.
type boardGate struct {
	mu     sync.Mutex
	passed bool
	reason string // why not ready, for /readyz
}

func newBoardGate(enabled bool) *boardGate {
	return &boardGate{passed: !enabled, reason: "checking the project boards"}
}

// pending returns why the app is not ready yet, or false once the boards passed.
func (g *boardGate) pending() (string, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.reason, !g.passed
}

func (g *boardGate) set(passed bool, reason string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.passed, g.reason = passed, reason
}

// Preflight retry bounds: the first retry comes quickly (a board fixed while the pod starts),
// later ones every half minute.
const (
	preflightFirstRetry = time.Second
	preflightMaxRetry   = 30 * time.Second
)

// runPreflight checks the boards until they pass or ctx ends. While a blocking finding
// remains the app stays not ready, and one log line names every project and option at fault
// (logged again only when that changes); a renamed option is picked up at the next check,
// without a restart. Extra options are logged once, as a warning.
func (a *App) runPreflight(ctx context.Context) {
	logger := zerolog.Ctx(ctx)
	wait, last := preflightFirstRetry, ""
	for {
		findings, err := a.CheckBoards(ctx)
		var blocking, other []BoardFinding
		for _, f := range findings {
			if f.Blocking {
				blocking = append(blocking, f)
			} else {
				other = append(other, f)
			}
		}
		var reason string
		switch {
		case len(blocking) > 0:
			parts := make([]string, len(blocking))
			for i, f := range blocking {
				parts[i] = f.String()
			}
			reason = "not ready: " + strings.Join(parts, "; ")
			if reason != last {
				detail := make([]string, len(blocking))
				for i, f := range blocking {
					detail[i] = f.String() + ": " + f.Fix
				}
				logger.Error().Interface("boards", blocking).Msg("ralph-gate is not ready: " + strings.Join(detail, "; "))
			}
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			reason = "not ready: cannot check the project boards"
			if reason != last {
				logger.Warn().Err(err).Msg("ralph-gate is not ready: cannot check the project boards yet; retrying")
			}
		default:
			for _, f := range other {
				logger.Warn().Str("project", f.Project).Str("option", f.Option).Str("fix", f.Fix).Msg(f.String())
			}
			if last != "" {
				logger.Info().Msg("the project boards have what the workflow needs: ralph-gate is ready")
			}
			a.preflight.set(true, "")
			return
		}
		a.preflight.set(false, reason)
		last = reason
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, preflightMaxRetry)
	}
}
