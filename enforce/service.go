package enforce

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ralph-gate/ralph-gate/policy"
	"github.com/ralph-gate/ralph-gate/store"
)

// Options tune enforcement timing.
type Options struct {
	// ReorderWindow is how long GitHub may take to attempt a delivery after a change. A change
	// is judged once a redelivery sweep has proven that every change made up to that long
	// after it has been reported (or, with no sweeper, once it is that old): only then is its
	// place in the item's history certain.
	ReorderWindow time.Duration
	// GapHold bounds how long a change waits for that proof; then it is judged all the same.
	GapHold time.Duration
	// Redeliveries, when set, sweeps failed deliveries for a gap and proves it (see history.go).
	Redeliveries Redeliveries
	// CoalesceWindow is how long one violation comment keeps absorbing new violations.
	CoalesceWindow time.Duration
	// AppLogin is the app's own "<slug>[bot]" login: its changes are never checked.
	AppLogin string
	// Enforced says whether an organization project is enforced (lifecycle sync looks at every
	// project an issue is on). Nil means all.
	Enforced func(owner string, number int) bool
	// States names the states lifecycle sync uses.
	States LifecycleStates
	// Observer, when set, is told about automation moves (metrics).
	Observer Observer
}

// LifecycleStates names the states lifecycle sync moves items to.
type LifecycleStates struct {
	Done, Canceled, Reopened, InProgress, InReview string
}

// DefaultLifecycleStates are the default workflow's names.
func DefaultLifecycleStates() LifecycleStates {
	return LifecycleStates{Done: "Done", Canceled: "Canceled", Reopened: "Backlog", InProgress: "In Progress", InReview: "In Review"}
}

// DefaultOptions are the defaults config applies.
func DefaultOptions() Options {
	return Options{ReorderWindow: 5 * time.Second, GapHold: 2 * time.Minute, CoalesceWindow: 10 * time.Minute}
}

// Service enforces the workflow. It is safe for concurrent use; changes of one item are
// serialized.
type Service struct {
	machine *policy.Machine
	actors  policy.Actors
	store   Store
	now     Clock
	opts    Options
	items   *keyedMutex
}

// New builds a Service.
func New(m *policy.Machine, actors policy.Actors, st Store, now Clock, opts Options) *Service {
	if now == nil {
		now = time.Now
	}
	actors.App = opts.AppLogin
	if opts.GapHold <= 0 {
		opts.GapHold = 2 * time.Minute
	}
	if opts.States == (LifecycleStates{}) {
		opts.States = DefaultLifecycleStates()
	}
	return &Service{machine: m, actors: actors, store: st, now: now, opts: opts, items: newKeyedMutex()}
}

// Machine returns the workflow machine the service enforces.
func (s *Service) Machine() *policy.Machine { return s.machine }

// save writes the record, refusing to overwrite a concurrent writer's newer version.
func (s *Service) save(ctx context.Context, rec store.Item) error {
	// Version 0 inserts only if absent, so two replicas meeting a new item cannot both win.
	ok, err := s.store.CompareAndSetItem(ctx, rec, rec.Version)
	if err != nil {
		return fmt.Errorf("save item %s: %w", rec.ItemID, err)
	}
	if !ok {
		return fmt.Errorf("save item %s: %w", rec.ItemID, ErrConcurrentUpdate)
	}
	return nil
}

// ErrConcurrentUpdate means another worker changed the item first; the change is retried.
var ErrConcurrentUpdate = errors.New("item changed concurrently")
