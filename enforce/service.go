package enforce

import (
	"context"
	"time"

	"github.com/ralph-gate/ralph-gate/policy"
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
	// DecisionLink, when set, is the address of the page showing the decision on a reported
	// change (by its delivery id): each line of a violation comment links to it.
	DecisionLink func(deliveryID string) string
	// StormThreshold is how many of one actor's refused moves may wait for their explanation
	// before they are explained together in one summary comment (0: DefaultStormThreshold).
	StormThreshold int
	// BatchJudge has items waiting for a sweep's proof judged together when a sweep completes
	// (JudgeWaiting, which the caller then calls after every sweep).
	BatchJudge bool
	// BatchWalkers is how many items JudgeWaiting walks at once (0: DefaultBatchWalkers).
	BatchWalkers int
	// Boards finds the board of an installation (and owner), so that a change is judged with
	// the others a sweep releases from the moment it is recorded, before its job has run.
	Boards func(ctx context.Context, installationID int64, owner string) (Board, error)
	// StormDelay is how long a storm's first refused move waits before the summary is
	// written, so that the reverts go first and one summary covers many (0: DefaultStormDelay).
	StormDelay time.Duration
	// Mode is the mode of each enforced project (modes.go); nil, or a mode that is not one:
	// enforce.
	Mode func(owner string, number int) Mode
	// Policies, when set, gives each organization its own workflow and actors (policies.go);
	// nil: every organization has the machine and actors New was given.
	Policies Policies
	// LearnProject, when set, is told the project node id and number of every item read back
	// from GitHub (the intake then knows a project that is not enforced by its node id).
	LearnProject func(nodeID string, number int)
	// HandoffWait is how long a handoff waits for the item's history, and its relatives', to
	// settle (a change still being judged, a write of ours not reported back yet) before it
	// answers that the item is busy; 0: it answers at once.
	HandoffWait time.Duration
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

// Service is enforcement, one use case each: the Enforcer judges reported changes, the
// Automation moves items by itself (cascade, convergence, lifecycle), the Reconciler finds
// what no webhook reported, and the Facade serves the MCP tools. They share one machine, one
// store and one lock per item, so work on one item is serialized whichever use case does it.
type Service struct {
	Enforcer   *Enforcer
	Automation *Automation
	Reconciler *Reconciler
	Facade     *Facade
}

// core is what every use case shares: the workflow, the actors, the options, the items (lock,
// load, compare-and-set) and the recorder (audit entries, comments and markers).
type core struct {
	machine *policy.Machine
	actors  policy.Actors
	opts    Options
	now     Clock
	items   *items
	rec     recorder
	storms  keyedMutex // one summary writer per actor in this process
	// inline does in the caller's goroutine what is otherwise done beside it (explanations,
	// woken walks, automation's guarded writes), and retries a walk without a pause (tests in
	// virtual time, one event at a time).
	inline bool
}

// New builds the use cases over one store.
func New(m *policy.Machine, actors policy.Actors, st Store, now Clock, opts Options) *Service {
	if now == nil {
		now = time.Now
	}
	actors.App = opts.AppLogin
	if opts.GapHold <= 0 {
		opts.GapHold = 2 * time.Minute
	}
	if opts.StormThreshold <= 0 {
		opts.StormThreshold = DefaultStormThreshold
	}
	if opts.BatchWalkers <= 0 {
		opts.BatchWalkers = DefaultBatchWalkers
	}
	if opts.StormDelay <= 0 {
		opts.StormDelay = DefaultStormDelay
	}
	if opts.States == (LifecycleStates{}) {
		opts.States = DefaultLifecycleStates()
	}
	c := &core{machine: m, actors: actors, opts: opts, now: now,
		items: newItems(st, now), rec: recorder{now: now, app: opts.AppLogin},
		storms: keyedMutex{locks: map[string]*keyedEntry{}}}
	auto := &Automation{core: c}
	enf := &Enforcer{core: c, auto: auto, explainers: make(chan struct{}, maxExplainers), atOnce: newAtOnceItems(opts.BatchWalkers)}
	auto.walkSoon = enf.walkSoon
	return &Service{
		Enforcer:   enf,
		Automation: auto,
		Reconciler: &Reconciler{core: c, enf: enf},
		Facade:     &Facade{core: c, auto: auto},
	}
}

// store is the persistence behind the items.
func (c *core) store() Store { return c.items.st }

// observeProvisional tells the observer what became of a provisional revert.
func (c *core) observeProvisional(confirmed bool) {
	if c.opts.Observer != nil {
		c.opts.Observer.ProvisionalReverted(confirmed)
	}
}

// observeAutomation tells the observer about an automated move.
func (c *core) observeAutomation(cause Cause) {
	if c.opts.Observer != nil {
		c.opts.Observer.AutomationMoved(cause)
	}
}
