package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/ghboard"
	"github.com/ralph-gate/ralph-gate/ghsim"
	"github.com/ralph-gate/ralph-gate/sandbox"
)

// receipts records when each webhook reached the app (before the signature check).
type receipts struct {
	mu   sync.Mutex
	list []receipt
}

type receipt struct {
	delivery, event string
	at              time.Time
}

func (r *receipts) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		at := time.Now()
		r.mu.Lock()
		r.list = append(r.list, receipt{delivery: req.Header.Get("X-GitHub-Delivery"), event: req.Header.Get("X-GitHub-Event"), at: at})
		r.mu.Unlock()
		next.ServeHTTP(w, req)
	})
}

// since returns the receipts from i on, and the next index.
func (r *receipts) since(i int) ([]receipt, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.list[min(i, len(r.list)):]), len(r.list)
}

var userTransport = &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute}

// board is a seeded user's view of the project (what they do with it is what they would do in
// GitHub's UI, webhooks included).
func (h *harness) board(login string) *ghboard.Board {
	h.mu.Lock()
	defer h.mu.Unlock()
	if b, ok := h.boards[login]; ok {
		return b
	}
	// A person in the web interface: not paced like the app (ghboard.Unpaced).
	b := ghboard.New(ghboard.NewClient(sandbox.UserClient(token(login), userTransport), h.sb.SimURL+"/api/graphql", ghboard.Unpaced()), h.sb.Config.Workflow.Field, h.fields)
	h.boards[login] = b
	return b
}

// loadItems pages through the project once (before any latency is injected) so that a move
// later is exactly one mutation.
func (h *harness) loadItems(ctx context.Context) error {
	items, _, err := allItems(ctx, h.board(humans[0]))
	if err != nil {
		return err
	}
	for _, it := range items {
		h.items[it.Number] = it
	}
	return nil
}

func allItems(ctx context.Context, b *ghboard.Board) ([]enforce.Item, int, error) {
	var out []enforce.Item
	after, pages := "", 0
	for {
		page, err := b.ProjectItems(ctx, org, 1, after)
		if err != nil {
			return nil, pages, err
		}
		pages++
		out = append(out, page.Items...)
		if !page.HasNext {
			return out, pages, nil
		}
		after = page.EndCursor
	}
}

// move sets an issue's Workflow State as login: one GraphQL mutation, as in GitHub's UI.
func (h *harness) move(ctx context.Context, login string, number int, state string) error {
	h.mu.Lock()
	it, ok := h.items[number]
	h.mu.Unlock()
	if !ok {
		return fmt.Errorf("issue #%d is not on the project", number)
	}
	if err := h.board(login).SetState(ctx, it, state); err != nil {
		return fmt.Errorf("%s moves #%d to %s: %w", login, number, state, err)
	}
	return nil
}

// settle waits until every webhook is delivered and every queued change processed.
func (h *harness) settle(ctx context.Context) error {
	return settle(ctx, h.sb, 10*time.Minute)
}

func settle(ctx context.Context, sb *sandbox.Sandbox, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		err := sb.Settle(ctx)
		if err == nil || ctx.Err() != nil || time.Now().After(deadline) {
			return err
		}
	}
}

// appRequests are the app's GitHub requests (installation token) after seq.
func appRequests(sim *ghsim.Server, seq int) []ghsim.RequestEntry {
	var out []ghsim.RequestEntry
	for _, e := range sim.Requests().Entries {
		if e.Seq > seq && e.TokenKind == "installation" {
			out = append(out, e)
		}
	}
	return out
}

func lastSeq(sim *ghsim.Server) int { return sim.Requests().Total }

// end is when a request was answered: arrival plus its duration (injected latency included).
func end(e ghsim.RequestEntry) time.Time {
	return e.Time.Add(time.Duration(e.DurationMS * float64(time.Millisecond)))
}

func hasOp(e ghsim.RequestEntry, ops ...string) bool {
	for _, op := range e.Operations {
		if slices.Contains(ops, op) {
			return true
		}
	}
	return false
}

// isRead says whether a GraphQL request only reads (no mutation among its fields).
func isGraphQLRead(e ghsim.RequestEntry) bool {
	if e.Path != "/api/graphql" {
		return false
	}
	for _, op := range e.Operations {
		if op == "graphql:request" {
			continue
		}
		name := strings.TrimPrefix(op, "graphql:")
		for _, m := range mutationFields {
			if name == m {
				return false
			}
		}
	}
	return true
}

// mutationFields are the GraphQL mutations ralph-gate sends.
var mutationFields = []string{"updateProjectV2ItemFieldValue", "clearProjectV2ItemFieldValue", "addComment", "updateIssueComment"}

const (
	opSetState      = "graphql:updateProjectV2ItemFieldValue"
	opAddComment    = "graphql:addComment"
	opUpdateComment = "graphql:updateIssueComment"
)

// warmup makes the moves that fill per-process caches (the installation token, the project's
// field) before anything is counted: those are paid once per process, not per event.
func (h *harness) warmup(ctx context.Context) error {
	// As after installing: the reconciler's first pass has taken every item's value as legal
	// (an item never seen is judged on first sight, once its proof comes).
	if _, err := h.sb.App.ReconcileNow(ctx); err != nil {
		return fmt.Errorf("first reconciliation pass: %w", err)
	}
	// A person's legal move, then an agent's illegal one (the first revert looks up the
	// project's field once per process).
	if err := h.move(ctx, humans[0], h.l.warmup[0], "Ready for Plan"); err != nil {
		return err
	}
	if err := h.settle(ctx); err != nil {
		return err
	}
	if err := h.move(ctx, agents[0], h.l.warmup[1], "In Progress"); err != nil {
		return err
	}
	if err := h.settle(ctx); err != nil {
		return err
	}
	if len(appRequests(h.sb.Sim, 0)) == 0 {
		return errors.New("the app made no GitHub request for the warm-up moves: is it enforcing the project?")
	}
	return nil
}
