package handlers

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/payload"
)

// ProjectsV2Item takes in projects_v2_item events.
//
// Every field edit of every project of the organization arrives here, and GitHub marks
// everything that names the field and the project optional (field_name, project_number, from,
// to), so routing reads what the payload has:
//
//   - a field whose type or values say it is not a single-select field (field_type text,
//     number, date or iteration; a string, number or iteration value) is not the workflow
//     field: ignored;
//   - field_name names the field when present; without it, field_node_id does when an
//     earlier payload named that node id (remembered below); project_number likewise names
//     the project, or project_node_id does when an earlier payload paired it with a number;
//   - a change of the workflow field on an enforced (or not yet identified) project whose to
//     value is an option or null is recorded in its item's history and enqueued: a report;
//   - a change that may be one of the workflow field but whose field, or whose to value, the
//     payload does not name is enqueued as a re-read (see reread): never recorded as a
//     report, since a guessed value would be judged as a move, and never dropped;
//   - an edit of a field workflow.requirements names (by field_name, or a field node id an
//     earlier payload named), of any type, on an enforced (or not yet identified) project, is
//     recorded in its item's history as the field's edit and enqueued: the moves after it are
//     checked against its value (one whose payload does not say the new value is logged and
//     left: no value can be recorded).
type ProjectsV2Item struct {
	Scope Scope
	Queue Enqueuer
	// History records the change in its item's history before GitHub is answered, so that a
	// delivery GitHub lists as successful is known to enforcement (nil: the job records it).
	History Recorder
	Now     func() time.Time
	// Projects, when set, is the number of each project node id, as payloads name it and as
	// enforcement learns it reading items back (shared): a delivery whose payload names no
	// project number, for an item of a project that is not enforced, is dropped here once any
	// item of that project was read back, so such traffic costs GitHub a read per project,
	// not one per delivery. Nil: this handler's own, from payloads alone.
	Projects *ProjectNumbers

	// fields and projects remember what payloads that named them said of node ids: a field
	// node id's field name, which number a project node id has (zero values ready).
	fields   learned[string]
	projects ProjectNumbers
}

// ProjectNumbers remembers the number of each project node id (node ids are global and stable;
// bounded as learned is).
type ProjectNumbers struct{ l learned[int] }

// Learn remembers a project node id's number.
func (p *ProjectNumbers) Learn(nodeID string, number int) {
	if number > 0 {
		p.l.remember(nodeID, number)
	}
}

// Number is a project node id's number, when known.
func (p *ProjectNumbers) Number(nodeID string) (int, bool) { return p.l.lookup(nodeID) }

func (h *ProjectsV2Item) projectNumbers() *ProjectNumbers {
	if h.Projects != nil {
		return h.Projects
	}
	return &h.projects
}

// Recorder records a reported change (enforce.Enforcer.Observe) and says when its job first
// has work to do (zero: at once).
type Recorder interface {
	Observe(ctx context.Context, ch enforce.Change) (runAt time.Time, err error)
}

// route is what becomes of a field value change.
type route int

const (
	routeIgnore route = iota
	// routeReport: a Workflow State change with its values: recorded and enqueued.
	routeReport
	// routeReread: possibly a Workflow State change, without a value to record: the item is
	// walked (read back and compared with its history) without a report.
	routeReread
	// routeField: an edit of a required field with its value: recorded and enqueued.
	routeField
)

// Handles implements githubapp.EventHandler.
func (h *ProjectsV2Item) Handles() []string { return []string{EventProjectsV2Item} }

// Handle implements githubapp.EventHandler.
func (h *ProjectsV2Item) Handle(ctx context.Context, eventType, deliveryID string, data []byte) error {
	fc, err := payload.ProjectsV2Item(data)
	if err != nil {
		return err
	}
	logger := zerolog.Ctx(ctx).With().
		Str(LogKeyDelivery, deliveryID).
		Str(LogKeyOrg, fc.Owner).
		Str(LogKeyItem, fc.ItemID).
		Str(LogKeyActor, fc.Sender).
		Logger()
	ctx = logger.WithContext(ctx)

	if fc.Ignore != "" {
		logger.Debug().Str("action", fc.Action).Msg("ignored: " + fc.Ignore)
		return nil
	}
	r, why := h.route(&fc)
	if r == routeIgnore {
		logger.Debug().Str("field", fc.Field).Str("field_node_id", fc.FieldNodeID).Str("field_type", fc.FieldType).Msg("ignored: " + why)
		return nil
	}
	logger = logger.With().Int(LogKeyProject, fc.ProjectNumber).Logger()
	ctx = logger.WithContext(ctx)
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	ch := enforce.Change{
		DeliveryID:     deliveryID,
		InstallationID: fc.InstallationID,
		ItemID:         fc.ItemID,
		ProjectID:      fc.ProjectID,
		ProjectNumber:  fc.ProjectNumber,
		Owner:          fc.Owner,
		ContentType:    fc.ContentType,
		FromKnown:      fc.FromKnown,
		From:           fc.From,
		To:             fc.To,
		Actor:          fc.Sender,
		At:             fc.At,
		ReceivedAt:     now(),
	}
	if r == routeField {
		ch.Field, ch.FromKnown, ch.From, ch.To = fc.Field, fc.Value.FromKnown, fc.Value.From, fc.Value.To
	}
	if ch.At.IsZero() {
		ch.At = ch.ReceivedAt
	}
	if r == routeReread {
		return h.reread(ctx, ch, why)
	}
	if h.History != nil {
		runAt, err := h.History.Observe(ctx, ch)
		if err != nil {
			return fmt.Errorf("record change: %w", err)
		}
		ch.NotBefore = runAt
	}
	// Our own writes too: every report takes its place in its item's history, walked by its
	// own job (one whose record already holds the write ends without a GitHub request).
	if err := h.Queue.EnqueueChange(ctx, ch); err != nil {
		return fmt.Errorf("enqueue change: %w", err)
	}
	logger.Debug().Str("from", fc.From).Str("to", fc.To).Msg("change queued")
	return nil
}

// reread enqueues a walk of the item for a change that may be one of the Workflow State but
// whose payload does not say which field changed, or to what.
//
// enforce judges a report's To as the value the item was moved to (From and To are hints for
// ordering, but a report is a step of the history), so a change with no readable value cannot
// be recorded as a report: an invented To ("" is "cleared") would be judged, and perhaps
// explained, as a move nobody made; and a change of another single-select field (Priority…)
// recorded as one would corrupt the item's history. Dropping it would lose a Workflow State
// change until the next reconciliation. So the job carries no delivery id: enforce then
// records nothing (Enforcer.Observe skips a change without one) and walks the item as the
// reconciler does — it reads the item back and, when the board shows a value no report
// explains, judges it as a change nobody reported (once the redelivery sweep proves no report
// of it is coming; with an unknown author's rights), on an enforced project only (the walk
// checks the project of the item read back). A change of another field costs one read.
func (h *ProjectsV2Item) reread(ctx context.Context, ch enforce.Change, why string) error {
	logger := zerolog.Ctx(ctx)
	if ch.Actor == h.Scope.AppLogin {
		// The app writes only the workflow field, and records each write as it makes it.
		logger.Debug().Msg("ignored: our own write")
		return nil
	}
	ch.DeliveryID, ch.FromKnown, ch.From, ch.To = "", false, "", ""
	if err := h.Queue.EnqueueChange(ctx, ch); err != nil {
		return fmt.Errorf("enqueue re-read: %w", err)
	}
	logger.Info().Str("why", why).Msg("re-read queued: the payload may be a Workflow State change but does not say")
	return nil
}

// route decides what becomes of a field value change, and why; it fills fc.ProjectNumber
// from a remembered project node id when the payload has none.
func (h *ProjectsV2Item) route(fc *payload.FieldChange) (route, string) {
	scope, ok := h.Scope.of(fc.Owner)
	if !ok {
		return routeIgnore, "no enforced project belongs to this organization"
	}
	if fc.Field != "" {
		h.fields.remember(fc.FieldNodeID, fc.Field)
	} else if name, ok := h.fields.lookup(fc.FieldNodeID); ok {
		fc.Field = name // (known by its node id)
	}
	if fc.ProjectNumber != 0 {
		h.projectNumbers().Learn(fc.ProjectID, fc.ProjectNumber)
	} else if n, ok := h.projectNumbers().Number(fc.ProjectID); ok {
		fc.ProjectNumber = n
	}
	enforced := fc.ProjectNumber == 0 || scope.enforced(fc.Owner, fc.ProjectNumber)
	if fc.Field != "" && fc.Field != scope.Field && slices.Contains(scope.Required, fc.Field) {
		switch {
		case !enforced:
			return routeIgnore, "project is not enforced"
		case !fc.Value.ToKnown:
			return routeIgnore, "a required field's edit whose payload does not say the new value: nothing to record"
		}
		return routeField, ""
	}
	if single, known := fc.SingleSelect(); known && !single {
		return routeIgnore, "not a single-select field, so not the workflow field"
	}
	fieldNamed := fc.Field != ""
	if fieldNamed && fc.Field != scope.Field {
		return routeIgnore, "not the workflow field"
	}
	if !enforced {
		return routeIgnore, "project is not enforced"
	}
	switch {
	case !fieldNamed:
		return routeReread, "the payload does not name the field"
	case !fc.ToKnown:
		return routeReread, "the payload does not say what the workflow field was set to"
	}
	// The project may still be unknown (no project_number, a project node id not seen yet):
	// the walk reads the item back and drops the report if its project is not enforced.
	return routeReport, ""
}

// maxLearned bounds the node ids remembered: an organization has a few hundred fields and
// projects; past the bound the memory starts again (a forgotten id costs a re-read at most).
const maxLearned = 4096

// learned remembers, per node id, what the newest payload that named it said. Node ids are
// global and stable; a renamed field is learned again from the next payload that names it.
type learned[V any] struct {
	mu sync.Mutex
	m  map[string]V
}

func (l *learned[V]) remember(nodeID string, v V) {
	if nodeID == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, known := l.m[nodeID]; l.m == nil || (!known && len(l.m) >= maxLearned) {
		l.m = map[string]V{}
	}
	l.m[nodeID] = v
}

func (l *learned[V]) lookup(nodeID string) (V, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	v, ok := l.m[nodeID]
	return v, ok && nodeID != ""
}
