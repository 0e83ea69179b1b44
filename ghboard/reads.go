package ghboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/ralph-gate/ralph-gate/enforce"
	meters "github.com/ralph-gate/ralph-gate/internal/spend"
	"github.com/ralph-gate/ralph-gate/payload"
)

// Batched item reads. Every reported change starts with a read of its item; under a burst
// (a column bulk-edited, a busy morning) the workers of one installation read many items at
// once, and one request each would bound throughput by workers ÷ round-trip time and spend a
// request per change. Reads of one Board are therefore combined: a read goes out at once
// while fewer than maxReadsInFlight requests are on their way, else it waits for the next
// request, which carries every waiting read (up to maxBatchReads, GitHub's limit for
// nodes(ids:)). An idle board reads as before — one request, no delay — and each item's
// changes are still judged one at a time, in order, under its lock.

// maxBatchReads is the most ids one nodes(ids:) request may carry (GitHub's documented limit).
const maxBatchReads = 100

// maxReadsInFlight is how many combined read requests one Board keeps on their way at once.
const maxReadsInFlight = 2

// queryItems reads several items by id, each as queryItem reads one.
var queryItems = `query RalphGateItems($ids: [ID!]!, $field: String!, $prs: Boolean!, ` + requiredVars + `) {
  nodes(ids: $ids) {
    ` + itemNodeFields + `
  }
}`

// itemNode is an item as queryItem and queryItems select it.
type itemNode struct {
	Typename   string       `json:"__typename"`
	ID         string       `json:"id"`
	IsArchived bool         `json:"isArchived"`
	Project    projectRef   `json:"project"`
	FieldValue *selectValue `json:"fieldValueByName"`
	Content    *contentData `json:"content"`
	// The required fields' values: only with $extra.
	requiredValues
}

// fieldValueNode is one field value of an item, of any type, with its field's name.
type fieldValueNode struct {
	Typename string   `json:"__typename"`
	Name     string   `json:"name"`   // single select
	Text     string   `json:"text"`   // text
	Number   *float64 `json:"number"` // number
	Date     string   `json:"date"`   // date
	Title    string   `json:"title"`  // iteration
}

// value is the value as text ("" when it has none).
func (v *fieldValueNode) value() string {
	switch v.Typename {
	case "ProjectV2ItemFieldSingleSelectValue":
		return v.Name
	case "ProjectV2ItemFieldTextValue":
		return v.Text
	case "ProjectV2ItemFieldNumberValue":
		if v.Number != nil {
			return strconv.FormatFloat(*v.Number, 'f', -1, 64)
		}
	case "ProjectV2ItemFieldDateValue":
		return v.Date
	case "ProjectV2ItemFieldIterationValue":
		return v.Title
	}
	return ""
}

// requirementInputs copies what $extra selected into it: the required fields' values, the
// single-select fields' options, a merged pull request closing the issue.
func (n *itemNode) requirementInputs(it *enforce.Item, required []string) {
	it.Fields = n.values(required)
	if fs := n.Project.Fields; fs != nil {
		it.FieldOptions = map[string][]string{}
		for _, f := range fs.Nodes {
			if f == nil || f.Typename != "ProjectV2SingleSelectField" {
				continue
			}
			for _, o := range f.Options {
				it.FieldOptions[f.Name] = append(it.FieldOptions[f.Name], o.Name)
			}
		}
	}
	if c := n.Content; c != nil {
		it.MergedPR, it.MergedAt = c.ClosedBy.merged()
	}
}

// item converts a node into an enforce.Item; false when it is not a project item.
func (n *itemNode) item(required []string) (enforce.Item, bool) {
	if n == nil || n.Typename != "ProjectV2Item" {
		return enforce.Item{}, false
	}
	it := enforce.Item{
		ID: n.ID, ProjectID: n.Project.ID, ProjectNumber: n.Project.Number, Owner: n.Project.Owner.Login,
		Archived: n.IsArchived, State: n.FieldValue.name(),
	}
	if n.FieldValue != nil {
		// When the value last changed: the sequencer dates a change no webhook reported by it.
		it.StateUpdatedAt = n.FieldValue.UpdatedAt
	}
	n.Content.fill(&it)
	n.requirementInputs(&it, required)
	return it, true
}

// pendingRead is one caller's read, waiting for a request to carry it.
type pendingRead struct {
	id    string
	meter *meters.Meter // the caller's: a request is counted by the first read it carries
	done  chan struct{} // closed when it and err are set
	it    enforce.Item
	err   error
}

// readBatcher combines the concurrent item reads of one Board.
type readBatcher struct {
	mu       sync.Mutex
	queue    []*pendingRead
	inFlight int
	requests int64 // combined requests sent (tests, diagnostics)
	carried  int64 // reads they carried
}

// Item reads an item with its Workflow State; concurrent reads of one Board share requests.
func (b *Board) Item(ctx context.Context, itemID string) (enforce.Item, error) {
	r := &pendingRead{id: itemID, meter: meters.From(ctx), done: make(chan struct{})}
	rb := &b.reads
	rb.mu.Lock()
	rb.queue = append(rb.queue, r)
	rb.mu.Unlock()
	b.pumpReads(ctx)
	select {
	case <-r.done:
		return r.it, r.err
	case <-ctx.Done():
		rb.mu.Lock()
		for i, q := range rb.queue {
			if q == r {
				rb.queue = append(rb.queue[:i], rb.queue[i+1:]...)
				break
			}
		}
		rb.mu.Unlock()
		return enforce.Item{}, fmt.Errorf("read item %s: %w", itemID, ctx.Err())
	}
}

// Items reads several items (enforce.ItemsReader): queued together, they go out in as few
// requests as nodes(ids:) allows, with the reads other callers are waiting for.
func (b *Board) Items(ctx context.Context, ids []string) ([]enforce.Item, []error) {
	reads := make([]*pendingRead, len(ids))
	rb := &b.reads
	rb.mu.Lock()
	for i, id := range ids {
		reads[i] = &pendingRead{id: id, meter: meters.From(ctx), done: make(chan struct{})}
	}
	rb.queue = append(rb.queue, reads...)
	rb.mu.Unlock()
	b.pumpReads(ctx)
	items, errs := make([]enforce.Item, len(ids)), make([]error, len(ids))
	for i, r := range reads {
		select {
		case <-r.done:
			items[i], errs[i] = r.it, r.err
		case <-ctx.Done():
			rb.mu.Lock()
			rb.queue = slices.DeleteFunc(rb.queue, func(q *pendingRead) bool { return slices.Contains(reads[i:], q) })
			rb.mu.Unlock()
			for j := i; j < len(ids); j++ {
				errs[j] = fmt.Errorf("read item %s: %w", ids[j], ctx.Err())
			}
			return items, errs
		}
	}
	return items, errs
}

// pumpReads sends waiting reads while fewer than maxReadsInFlight requests are on their way.
// A request belongs to every read it carries, not to the caller that happened to send it: it
// is sent under a context that the caller's cancellation does not end.
func (b *Board) pumpReads(ctx context.Context) {
	rb := &b.reads
	for {
		rb.mu.Lock()
		if rb.inFlight >= maxReadsInFlight || len(rb.queue) == 0 {
			rb.mu.Unlock()
			return
		}
		n := min(len(rb.queue), maxBatchReads)
		batch := append([]*pendingRead(nil), rb.queue[:n]...)
		rb.queue = append(rb.queue[:0], rb.queue[n:]...)
		rb.inFlight++
		rb.requests++
		rb.carried += int64(n)
		rb.mu.Unlock()
		go func() {
			b.readBatch(context.WithoutCancel(ctx), batch)
			rb.mu.Lock()
			rb.inFlight--
			rb.mu.Unlock()
			// What queued meanwhile goes in the next request.
			b.pumpReads(context.WithoutCancel(ctx))
		}()
	}
}

// ReadRequests reports how many item-read requests the Board sent and how many reads they
// carried (carried ÷ requests is the mean batch).
func (b *Board) ReadRequests() (requests, carried int64) {
	b.reads.mu.Lock()
	defer b.reads.mu.Unlock()
	return b.reads.requests, b.reads.carried
}

// readBatch reads a batch in one request and hands each read its item or its own error.
func (b *Board) readBatch(ctx context.Context, batch []*pendingRead) {
	ids := make([]string, len(batch))
	for i, r := range batch {
		ids[i] = r.id
	}
	items, errs := b.readItems(meters.With(ctx, batch[0].meter), ids)
	for i, r := range batch {
		r.it, r.err = items[i], errs[i]
		close(r.done)
	}
}

// readItems reads items in one request (node for one, nodes for several): each id gets its
// item or its own error.
func (b *Board) readItems(ctx context.Context, ids []string) ([]enforce.Item, []error) {
	items, errs := make([]enforce.Item, len(ids)), make([]error, len(ids))
	if len(ids) == 1 {
		items[0], errs[0] = b.readItem(ctx, ids[0])
		return items, errs
	}
	var d struct {
		Nodes []json.RawMessage `json:"nodes"`
	}
	err := b.gql.Do(ctx, queryItems, b.requiredVars(map[string]any{"ids": ids, "field": b.fieldName, "prs": b.prs}), &d)
	var ge *GraphQLError
	if err != nil && (!errors.As(err, &ge) || !ge.Partial) {
		// Nothing came back: every read fails as the request did (a rate limit, an outage).
		for i, id := range ids {
			errs[i] = fmt.Errorf("read item %s: %w", id, err)
		}
		return items, errs
	}
	for i, id := range ids {
		items[i], errs[i] = batchedItem(d.Nodes, ge, i, id, b.required)
	}
	return items, errs
}

// batchedItem is the i-th item of a nodes(ids:) answer, or its own error: the errors GitHub
// gave at or inside nodes[i] decide it as Item decides a single read's.
func batchedItem(nodes []json.RawMessage, ge *GraphQLError, i int, id string, required []string) (enforce.Item, error) {
	var own []payload.FieldError
	if ge != nil {
		for _, fe := range ge.Errors {
			if fe.Under("nodes", i) {
				own = append(own, fe)
			} else if len(fe.Path) == 0 || !fe.Under("nodes") {
				// About the whole document: no item of it can be trusted.
				return enforce.Item{}, fmt.Errorf("read item %s: %w", id, ge)
			}
		}
	}
	if len(own) > 0 {
		for _, fe := range own {
			if fe.Type != "FORBIDDEN" && fe.Type != "NOT_FOUND" {
				return enforce.Item{}, fmt.Errorf("read item %s: %s: %s", id, fe.Type, fe.Message)
			}
		}
		// Gone, or in a repository the installation may not see: the app can act on it no
		// more than on a deleted one (as Item says of a single read).
		return enforce.Item{}, fmt.Errorf("read item %s: %w (%s: %s)", id, ErrNotFound, own[0].Type, own[0].Message)
	}
	if i >= len(nodes) {
		return enforce.Item{}, fmt.Errorf("read item %s: the answer has %d nodes for %d ids", id, len(nodes), i+1)
	}
	var n *itemNode
	if err := json.Unmarshal(nodes[i], &n); err != nil {
		return enforce.Item{}, fmt.Errorf("read item %s: decode: %w", id, err)
	}
	it, ok := n.item(required)
	if !ok {
		return enforce.Item{}, fmt.Errorf("read item %s: %w", id, ErrNotFound)
	}
	return it, nil
}
