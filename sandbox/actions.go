package sandbox

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/ghboard"
	"github.com/ralph-gate/ralph-gate/ghsim"
)

// bearer authenticates a seeded user on the simulator, as a personal token would on GitHub.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "bearer "+b.token)
	return b.next.RoundTrip(r)
}

// UserClient is an HTTP client that acts as the holder of token on the simulator, through
// transport (http.DefaultTransport when nil).
func UserClient(token string, transport http.RoundTripper) *http.Client {
	if transport == nil {
		transport = http.DefaultTransport
	}
	return &http.Client{Transport: bearer{token: token, next: transport}, Timeout: time.Minute}
}

// UserBoard is a board seen through a seeded user's token: what the user does with it is what
// that user would do in GitHub's UI, webhooks included.
func (sb *Sandbox) UserBoard(login string) (*ghboard.Board, error) {
	token, err := sb.Token(login)
	if err != nil {
		return nil, err
	}
	// A person in the web interface: not paced like the app (ghboard.Unpaced).
	return ghboard.New(ghboard.NewClient(UserClient(token, nil), sb.SimURL+"/api/graphql", ghboard.Unpaced()), sb.Config.Workflow.Field, ghboard.NewFieldCache()), nil
}

// Move sets an issue's Workflow State as login, through the simulator's GraphQL API.
func (sb *Sandbox) Move(ctx context.Context, login, repo string, number int, state string) error {
	b, err := sb.UserBoard(login)
	if err != nil {
		return err
	}
	items, err := b.IssueItems(ctx, sb.Org(), repo, number)
	if err != nil {
		return err
	}
	if len(items) == 0 {
		return fmt.Errorf("issue %s#%d is on no project", repo, number)
	}
	return b.SetState(ctx, items[0], state)
}

// settleLimit bounds one Settle: a bound on a hang, not a measure of speed (the test suites
// run many sandboxes at once, under the race detector, on two CPUs).
const settleLimit = 3 * time.Minute

// Settle waits until every webhook was delivered, every queued change processed and the work
// enforcement does beside the jobs ended (explanations, woken walks), twice in a row
// (processing may cause new webhooks, e.g. our own writes).
func (sb *Sandbox) Settle(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, settleLimit)
	defer cancel()
	quiet := 0
	for quiet < 2 {
		if err := sb.Sim.WaitIdle(ctx); err != nil {
			return fmt.Errorf("webhooks not delivered: %w", err)
		}
		if err := sb.App.DrainEnforcement(ctx); err != nil {
			return fmt.Errorf("enforcement's work beside the jobs did not end: %w", err)
		}
		depth, err := sb.App.QueueDepth(ctx)
		if err != nil {
			return err
		}
		if depth == 0 {
			quiet++
		} else {
			quiet = 0
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("queue did not drain: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// Issue returns the simulator's view of an issue.
func (sb *Sandbox) Issue(repo string, number int) (ghsim.IssueState, error) {
	for _, is := range sb.Sim.State().Issues {
		if is.Number == number && (is.Repo == repo || strings.HasSuffix(is.Repo, "/"+repo)) {
			return is, nil
		}
	}
	return ghsim.IssueState{}, fmt.Errorf("no issue %s#%d", repo, number)
}

// State returns an issue's Workflow State as the simulator holds it.
func (sb *Sandbox) State(repo string, number int) (string, error) {
	is, err := sb.Issue(repo, number)
	if err != nil {
		return "", err
	}
	return is.Fields[sb.Config.Workflow.Field], nil
}

var _ enforce.Board = (*ghboard.Board)(nil)
