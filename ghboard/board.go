package ghboard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
)

var _ enforce.Board = (*Board)(nil)

// ErrNotFound means GitHub has no such item, project or field (or the app cannot see it). It
// is enforcement's not-found (errors.Is(err, enforce.ErrNotFound) holds).
var ErrNotFound = fmt.Errorf("%w on github", enforce.ErrNotFound)

// Field is the workflow field of one project, with its option ids by name.
type Field struct {
	ProjectID string
	FieldID   string
	Options   map[string]string // option name -> option id
	Names     []string          // option names in board order
}

// FieldCache remembers each project's workflow field; it is shared by all installations'
// boards because field ids never change while options are stable between restarts.
type FieldCache struct {
	mu     sync.Mutex
	fields map[string]Field // project node id -> field
}

// NewFieldCache returns an empty cache.
func NewFieldCache() *FieldCache { return &FieldCache{fields: map[string]Field{}} }

func (c *FieldCache) get(projectID string) (Field, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.fields[projectID]
	return f, ok
}

func (c *FieldCache) put(f Field) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fields[f.ProjectID] = f
}

// Forget drops a project's field, e.g. after an option was renamed on the board.
func (c *FieldCache) Forget(projectID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.fields, projectID)
}

// Board is one installation's view of the boards.
type Board struct {
	gql       *Client
	fieldName string
	fields    *FieldCache
	reads     readBatcher
	guarded   guardBatcher
	// required, prs: what workflow.requirements check (Requiring).
	required []string
	prs      bool
}

// Requiring has the board's reads select what workflow.requirements check: the values of the
// fields they name (at most enforce.MaxRequiredFields), and whether a merged pull request
// closes an issue (prs). An item read selects besides the options of its project's
// single-select fields, for the Recovery (enforce.Item's Fields, FieldOptions, MergedPR); a
// family read, each relative's values (enforce.Relative's). A board with no requirements
// reads as before.
func (b *Board) Requiring(fields []string, prs bool) *Board {
	b.required, b.prs = slices.Clone(fields[:min(len(fields), enforce.MaxRequiredFields)]), prs
	return b
}

// extra: the reads select what requirements check.
func (b *Board) extra() bool { return len(b.required) > 0 || b.prs }

// requiredVars adds $extra and the slots' field names to a document's variables.
func (b *Board) requiredVars(vars map[string]any) map[string]any {
	vars["extra"] = b.extra()
	for i := range enforce.MaxRequiredFields {
		name := b.fieldName // a slot left over reads the workflow field again, unused
		if i < len(b.required) {
			name = b.required[i]
		}
		vars[fmt.Sprintf("r%d", i)] = name
	}
	return vars
}

// requiredValues are the slots r0…r3 as requiredSlots selects them.
type requiredValues struct {
	R0 *fieldValueNode `json:"r0"`
	R1 *fieldValueNode `json:"r1"`
	R2 *fieldValueNode `json:"r2"`
	R3 *fieldValueNode `json:"r3"`
}

// values maps the slots back to the required fields' names ("" for an unset value).
func (r requiredValues) values(names []string) map[string]string {
	if len(names) == 0 {
		return nil
	}
	slots := [...]*fieldValueNode{r.R0, r.R1, r.R2, r.R3}
	out := map[string]string{}
	for i, name := range names {
		if i < len(slots) && slots[i] != nil {
			out[name] = slots[i].value()
		} else {
			out[name] = ""
		}
	}
	return out
}

// New returns a Board that reads and writes through gql; fieldName is the workflow field.
func New(gql *Client, fieldName string, fields *FieldCache) *Board {
	return &Board{gql: gql, fieldName: fieldName, fields: fields}
}

// projectRef is an item's project as the documents select it.
type projectRef struct {
	ID     string `json:"id"`
	Number int    `json:"number"`
	Owner  struct {
		Login string `json:"login"`
	} `json:"owner"`
	// Fields: only with $extra (itemNodeFields).
	Fields *struct {
		Nodes []*struct {
			Typename string `json:"__typename"`
			Name     string `json:"name"`
			Options  []struct {
				Name string `json:"name"`
			} `json:"options"`
		} `json:"nodes"`
	} `json:"fields"`
}

// contentData is an item's content (issue, pull request or draft) as the documents select it.
type contentData struct {
	Typename   string `json:"__typename"`
	ID         string `json:"id"`
	Number     int    `json:"number"`
	Title      string `json:"title"`
	State      string `json:"state"`
	PRState    string `json:"prState"`
	Repository struct {
		NameWithOwner string `json:"nameWithOwner"`
	} `json:"repository"`
	Parent *struct {
		ID     string `json:"id"`
		Number int    `json:"number"`
	} `json:"parent"`
	SubIssuesSummary struct {
		Total int `json:"total"`
	} `json:"subIssuesSummary"`
	Dependencies struct {
		BlockedBy int `json:"blockedBy"`
	} `json:"issueDependenciesSummary"`
	Lifecycle eventsData  `json:"lifecycle"`
	ClosedBy  *closingPRs `json:"closedBy"` // only with $prs
}

// closingPRs are the pull requests that close an issue, as the documents select them (with
// $prs).
type closingPRs struct {
	Nodes []*struct {
		Merged   bool       `json:"merged"`
		MergedAt *time.Time `json:"mergedAt"`
	} `json:"nodes"`
}

// merged reports whether one of them is merged (false for none, or not read), and when the
// first was (zero when GitHub did not say): a move is checked against the pull requests
// merged by its own second.
func (c *closingPRs) merged() (bool, time.Time) {
	if c == nil {
		return false, time.Time{}
	}
	merged, first := false, time.Time{}
	for _, pr := range c.Nodes {
		if pr == nil || !pr.Merged {
			continue
		}
		if !merged || (pr.MergedAt != nil && !first.IsZero() && pr.MergedAt.Before(first)) {
			first = time.Time{}
			if pr.MergedAt != nil {
				first = *pr.MergedAt
			}
		}
		merged = true
	}
	return merged, first
}

// eventsData is an issue's latest closes and reopens as issueEvents selects them.
type eventsData struct {
	Nodes []*struct {
		Typename  string    `json:"__typename"`
		CreatedAt time.Time `json:"createdAt"`
		Actor     *struct {
			Login string `json:"login"`
		} `json:"actor"`
	} `json:"nodes"`
}

// events lists them oldest first (a deleted actor is "").
func (e eventsData) events() []enforce.IssueEvent {
	var out []enforce.IssueEvent
	for _, n := range e.Nodes {
		if n == nil || (n.Typename != "ClosedEvent" && n.Typename != "ReopenedEvent") {
			continue
		}
		ev := enforce.IssueEvent{Closed: n.Typename == "ClosedEvent", At: n.CreatedAt}
		if n.Actor != nil {
			ev.Actor = n.Actor.Login
		}
		out = append(out, ev)
	}
	return out
}

// fill copies the content's fields into it.
func (c *contentData) fill(it *enforce.Item) {
	if c == nil {
		return
	}
	it.ContentType, it.ContentID, it.Number, it.Title = c.Typename, c.ID, c.Number, c.Title
	it.Repo = c.Repository.NameWithOwner
	it.Open = c.Typename == enforce.ContentDraftIssue || strings.EqualFold(c.State, "OPEN") || strings.EqualFold(c.PRState, "OPEN")
	if c.Parent != nil {
		it.ParentID, it.ParentNumber = c.Parent.ID, c.Parent.Number
	}
	it.SubIssues, it.OpenBlockers = c.SubIssuesSummary.Total, c.Dependencies.BlockedBy
	it.IssueEvents = c.Lifecycle.events()
}

// readItem reads one item with its Workflow State in one request (Item combines reads).
func (b *Board) readItem(ctx context.Context, itemID string) (enforce.Item, error) {
	var d struct {
		Node *itemNode `json:"node"`
	}
	if err := b.gql.Do(ctx, queryItem, b.requiredVars(map[string]any{"id": itemID, "field": b.fieldName, "prs": b.prs}), &d); err != nil {
		if _, other := skips(err, []any{"node"}); other == nil && !errors.Is(err, ErrNotFound) {
			// Only FORBIDDEN in the item: its issue is in a repository the installation may
			// not see, which the app cannot act on any more than on a deleted one.
			err = fmt.Errorf("%w (not accessible to the installation): %w", ErrNotFound, err)
		}
		return enforce.Item{}, fmt.Errorf("read item %s: %w", itemID, err)
	}
	it, ok := d.Node.item(b.required)
	if !ok {
		return enforce.Item{}, fmt.Errorf("read item %s: %w", itemID, ErrNotFound)
	}
	return it, nil
}

// FieldNames lists the names of a project's fields (at most 50: GitHub's limit per project).
func (b *Board) FieldNames(ctx context.Context, owner string, number int) ([]string, error) {
	var d struct {
		Organization *struct {
			ProjectV2 *struct {
				Fields struct {
					Nodes []*struct {
						Name string `json:"name"`
					} `json:"nodes"`
				} `json:"fields"`
			} `json:"projectV2"`
		} `json:"organization"`
	}
	if err := b.gql.Do(ctx, queryProjectFieldNames, map[string]any{"owner": owner, "number": number}, &d); err != nil {
		return nil, fmt.Errorf("read the fields of project %s/%d: %w", owner, number, err)
	}
	if d.Organization == nil || d.Organization.ProjectV2 == nil {
		return nil, fmt.Errorf("project %s/%d: %w", owner, number, ErrNotFound)
	}
	var out []string
	for _, n := range d.Organization.ProjectV2.Fields.Nodes {
		if n != nil && n.Name != "" {
			out = append(out, n.Name)
		}
	}
	return out, nil
}

// Field returns (and caches) the workflow field of a project.
func (b *Board) Field(ctx context.Context, owner string, number int) (Field, error) {
	var d struct {
		Organization *struct {
			ProjectV2 *struct {
				ID    string `json:"id"`
				Field *struct {
					Typename string `json:"__typename"`
					ID       string `json:"id"`
					Options  []struct {
						ID   string `json:"id"`
						Name string `json:"name"`
					} `json:"options"`
				} `json:"field"`
			} `json:"projectV2"`
		} `json:"organization"`
	}
	vars := map[string]any{"owner": owner, "number": number, "field": b.fieldName}
	if err := b.gql.Do(ctx, queryProjectField, vars, &d); err != nil {
		return Field{}, fmt.Errorf("read project %s/%d: %w", owner, number, err)
	}
	if d.Organization == nil || d.Organization.ProjectV2 == nil {
		return Field{}, fmt.Errorf("project %s/%d: %w", owner, number, ErrNotFound)
	}
	p := d.Organization.ProjectV2
	if p.Field == nil || p.Field.Typename != "ProjectV2SingleSelectField" {
		return Field{}, fmt.Errorf("project %s/%d has no single-select field %q: %w", owner, number, b.fieldName, ErrNotFound)
	}
	f := Field{ProjectID: p.ID, FieldID: p.Field.ID, Options: map[string]string{}}
	for _, o := range p.Field.Options {
		f.Options[o.Name] = o.ID
		f.Names = append(f.Names, o.Name)
	}
	b.fields.put(f)
	return f, nil
}

func (b *Board) fieldFor(ctx context.Context, it enforce.Item) (Field, error) {
	if f, ok := b.fields.get(it.ProjectID); ok {
		return f, nil
	}
	return b.Field(ctx, it.Owner, it.ProjectNumber)
}

// SetState writes the Workflow State; "" clears it.
func (b *Board) SetState(ctx context.Context, it enforce.Item, state string) error {
	f, err := b.fieldFor(ctx, it)
	if err != nil {
		return err
	}
	if state == "" {
		vars := map[string]any{"project": f.ProjectID, "item": it.ID, "field": f.FieldID}
		if err := b.gql.Do(ctx, mutationClearState, vars, nil); err != nil {
			return fmt.Errorf("clear state of %s: %w", it.ID, err)
		}
		return nil
	}
	option, ok := f.Options[state]
	if !ok {
		b.fields.Forget(it.ProjectID)
		return fmt.Errorf("project %s/%d has no option %q in %q", it.Owner, it.ProjectNumber, state, b.fieldName)
	}
	vars := map[string]any{"project": f.ProjectID, "item": it.ID, "field": f.FieldID, "option": option}
	if err := b.gql.Do(ctx, mutationSetState, vars, nil); err != nil {
		return fmt.Errorf("set state of %s to %q: %w", it.ID, state, err)
	}
	return nil
}

// SetStatesIf writes each state only where its guard lets it when the write's turn comes
// (enforce.StateWrite.Guard): the item is read again then (writes are paced, so the caller's
// read may be seconds old), and the mutation follows at once. A card moved meanwhile is left
// alone: an error wrapping enforce.ErrBoardMoved. Writes queued together, by one call or by
// many, share turns (one read of up to 50 items and one aliased mutation each: guarded.go).
// Clearing a value is rare and not batched.
func (b *Board) SetStatesIf(ctx context.Context, writes []enforce.StateWrite) []error {
	errs := make([]error, len(writes))
	var guarded []guardedWrite
	var at []int
	for i, w := range writes {
		if w.State == "" {
			errs[i] = b.clearIf(ctx, w)
			continue
		}
		guarded = append(guarded, guardedWrite{w: w})
		at = append(at, i)
	}
	for k, err := range b.guarded.writeAll(ctx, b, guarded) {
		errs[at[k]] = err
	}
	return errs
}

// clearIf clears an item's state in a write turn of its own, when its guard lets it.
func (b *Board) clearIf(ctx context.Context, w enforce.StateWrite) error {
	return b.gql.WithWriteTurn(ctx, func(ctx context.Context) error {
		cur, err := b.readItem(ctx, w.Item.ID)
		if err != nil {
			return fmt.Errorf("read %s before writing it: %w", w.Item.ID, err)
		}
		if err := w.Guard(ctx, cur); err != nil {
			return err
		}
		return b.SetState(ctx, cur, "")
	})
}

// RateLimit is GitHub's GraphQL budget for this installation as last reported.
func (b *Board) RateLimit() (enforce.RateLimit, bool) { return b.gql.RateLimit() }
