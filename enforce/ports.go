package enforce

import (
	"context"
	"time"

	"github.com/ralph-gate/ralph-gate/policy"
)

// The ports: what enforcement needs from the outside, declared here and implemented by
// ghboard (Board), store (Store, ReconcileStore), the redelivery sweeper (Redeliveries) and
// the metrics (Observer, ReconcileObserver). Every method is required: no capability is
// discovered at run time.

// Board is everything enforcement needs from GitHub for one installation. A missing item,
// issue or comment is an error wrapping ErrNotFound.
type Board interface {
	// Item reads an item with its current Workflow State (one API call).
	Item(ctx context.Context, itemID string) (Item, error)
	// SetState writes the Workflow State of an item; "" clears it.
	SetState(ctx context.Context, it Item, state string) error
	// SetStatesIf writes Workflow States, each only if its guard lets it when the write's turn
	// comes (StateWrite.Guard: the board still shows its From, and its Check holds): writes
	// are paced, so a value read before may be seconds old. A write whose card moved writes
	// nothing and returns an error wrapping ErrBoardMoved. GitHub has no conditional write:
	// the read and the write are as close as one request apart. Writes waiting together
	// share their turn (one read of all their items and one batched write), in as few turns as
	// GitHub allows; it returns each write's outcome.
	SetStatesIf(ctx context.Context, writes []StateWrite) []error
	// AddComment comments on an issue or pull request (by node id).
	AddComment(ctx context.Context, subjectID, body string) (Comment, error)
	// UpdateComment replaces the body of a comment the app wrote.
	UpdateComment(ctx context.Context, commentID, body string) error
	// FindComment looks for a comment the app wrote on an issue or pull request whose body
	// contains a text: it settles a comment whose posting was interrupted, so that a crash
	// never leads to a second comment.
	FindComment(ctx context.Context, subjectID, contains string) (c Comment, found bool, err error)
	// Family reads an issue's parent, every sub-issue (all pages) and open blockers, with their
	// states on the project.
	Family(ctx context.Context, issueID, projectID string) (Family, error)
	// IssueItems returns an issue's items on every project, with their states.
	IssueItems(ctx context.Context, repoOwner, repo string, number int) ([]Item, error)
	// ProjectItems reads one page (up to 100 items) of a project, with values; after is the
	// previous page's EndCursor ("" for the first page).
	ProjectItems(ctx context.Context, owner string, number int, after string) (ItemsPage, error)
	// SetIssueOpen reopens an issue (open), or closes it with a reason (completed or
	// not_planned): the app undoes a close or a reopen the workflow refuses.
	SetIssueOpen(ctx context.Context, issueID string, open bool, reason string) error
	// ClosingIssues returns the issues a pull request closes (owner/name#number).
	ClosingIssues(ctx context.Context, repoOwner, repo string, number int) ([]IssueRef, error)
	// RateLimit is GitHub's primary budget as last reported; false before any answer.
	RateLimit() (RateLimit, bool)
}

// Store is the persistence enforcement needs. GetItem, GetObservation and
// GetActorViolationComment return an error wrapping ErrNotFound for what was never recorded.
type Store interface {
	// LockItem serializes work on one item across replicas (a no-op where there is one).
	LockItem(ctx context.Context, itemID string) (unlock func(), err error)
	// GetItem loads an item's record.
	GetItem(ctx context.Context, itemID string) (Record, error)
	// ItemVersions returns the record versions of those of the items that have a record.
	ItemVersions(ctx context.Context, itemIDs []string) (map[string]int64, error)
	// CompareAndSetItem writes rec if the stored version is expectedVersion (0: only if absent).
	CompareAndSetItem(ctx context.Context, rec Record, expectedVersion int64) (bool, error)
	// AppendAudit records a decision that is not a step of an item's history (adoption, a
	// handoff's audit) and returns its id.
	AppendAudit(ctx context.Context, e AuditEntry) (int64, error)
	// ClaimLock makes holder the item's lock holder if it has none (one of several concurrent
	// claimers wins); ReleaseLock clears it if holder holds it.
	ClaimLock(ctx context.Context, itemID, holder string, now time.Time) (bool, error)
	ReleaseLock(ctx context.Context, itemID, holder string, now time.Time) (bool, error)
	// CountInState counts a project's items whose last legal state is state (WIP limits).
	CountInState(ctx context.Context, projectID, state string) (int, error)

	// RecordObservation records a reported change as pending, once per delivery; false when
	// the delivery was recorded before.
	RecordObservation(ctx context.Context, o Observation) (bool, error)
	// RecordEvent records a lifecycle event's reports of its items (one per item, each
	// delivery id "<event delivery>#<item id>") as pending, and settles the event's own report
	// of its issue (delivery: recorded at intake), all or none; EventReports lists them (none
	// when the event was not recorded).
	RecordEvent(ctx context.Context, delivery string, reports []Observation) error
	EventReports(ctx context.Context, delivery string) ([]Observation, error)
	// PendingObservations lists an item's reports not judged yet, in arrival order.
	PendingObservations(ctx context.Context, itemID string) ([]Observation, error)
	// GetObservation loads one report by delivery id.
	GetObservation(ctx context.Context, deliveryID string) (Observation, error)
	// Unexplained lists an item's refused steps whose explanation is not on GitHub yet.
	Unexplained(ctx context.Context, itemID string) ([]Observation, error)
	// UnexplainedBy lists one actor's refused moves of a card whose explanation is not on
	// GitHub yet, on every item of a project ("": of every project), oldest first, at most
	// limit, each with its item's issue (a refused close or reopen is undone and explained on
	// its own, never in a summary).
	UnexplainedBy(ctx context.Context, actor, projectID string, limit int) ([]RefusedStep, error)
	// CountRefusedBy counts one actor's refused steps judged at or after since, on every item
	// of a project ("": of every project).
	CountRefusedBy(ctx context.Context, actor, projectID string, since time.Time) (int, error)
	// MarkExplained records that a refused step's explanation is on GitHub.
	MarkExplained(ctx context.Context, deliveryID string) error
	// CommitStep writes a step in one transaction if the item is still at its expected version.
	CommitStep(ctx context.Context, st Step) (bool, error)
	// LegalStateAt is an item's last legal state just before t, read back from its judged
	// card history; known is false while a report from before t is still pending (a required
	// field's edit moves no legal state: pending or judged, it does not count).
	LegalStateAt(ctx context.Context, itemID string, t time.Time) (state string, known bool, err error)
	// FieldEdits lists an item's judged edits of required fields made at or after since, in
	// the order its history took them in.
	FieldEdits(ctx context.Context, itemID string, since time.Time) ([]Observation, error)
	// LaterEvent reports whether the item's history has a close or a reopen after o (a refused
	// event, about to be undone): one waiting to be judged made at o's second or later, or one
	// judged made later, or of the same second and judged after o (events of one second are
	// judged in the order policy.Sequence gives them).
	LaterEvent(ctx context.Context, o Observation) (bool, error)
	// LastEvent is the item's last close or reopen taken into its history (judged or
	// ignored); found is false when it has none.
	LastEvent(ctx context.Context, itemID string) (o Observation, found bool, err error)
	// AutomatedCauses lists the causes (reasons) of the item's automated moves of the app's
	// into `to` dated `at` (the time of their cause).
	AutomatedCauses(ctx context.Context, itemID, to string, at time.Time) ([]string, error)
	// PendingItemsBefore lists the items other than except whose history before t is not
	// settled: a report made before t by anyone but exceptActor not judged yet, or a step made
	// by t (its second included) whose automation has not run.
	PendingItemsBefore(ctx context.Context, t time.Time, except, exceptActor string) ([]string, error)

	// GetCursor loads a named value (ErrNotFound when never stored); PutCursor stores one: the
	// reconciler's place and budget, a storm summary about to be posted.
	GetCursor(ctx context.Context, name string) (string, error)
	PutCursor(ctx context.Context, name, value string) error

	// GetActorViolationComment loads the violation comment kept for an issue and an actor.
	GetActorViolationComment(ctx context.Context, repo string, issueNumber int, actor string) (ViolationComment, error)
	// PutViolationComment replaces the violation comment kept for an issue and c.Actor.
	PutViolationComment(ctx context.Context, repo string, issueNumber int, c ViolationComment) error

	// ClaimSlot takes a serialization slot for sl.ItemID and sl.Holder when it is free (or
	// already theirs) and returns it as it stands; won is false when another holds it. One of
	// several concurrent claimers wins. GetSlot reads a slot (found false: free); ReleaseSlot
	// frees it if itemID holds it.
	ClaimSlot(ctx context.Context, sl Slot) (held Slot, won bool, err error)
	GetSlot(ctx context.Context, key string) (sl Slot, found bool, err error)
	ReleaseSlot(ctx context.Context, key, itemID string) (bool, error)
}

// ReconcileStore is what the reconciler needs of the store besides Store: the known items of
// a project, its cursors (where a paused pass resumes, what it has spent) and the project's
// snapshot.
type ReconcileStore interface {
	// GetCursor and PutCursor are Store's.
	GetCursor(ctx context.Context, name string) (string, error)
	PutCursor(ctx context.Context, name, value string) error
	// ListItems lists a project's records.
	ListItems(ctx context.Context, projectID string) ([]Record, error)
	// PutSnapshot records items as a pass read them at readAt (titles, open, blockers: what
	// the health report shows besides the records); PruneSnapshot forgets a project's items
	// not read since before, once a walk over the whole project has read every page.
	PutSnapshot(ctx context.Context, projectID string, items []Item, readAt time.Time) error
	PruneSnapshot(ctx context.Context, projectID string, before time.Time) error
}

// Redeliveries is what enforcement needs of the redelivery sweeper: to ask for the failed
// deliveries at once when an item's history has a gap, and to learn what the newest complete
// sweep proves (policy.SweepProof).
type Redeliveries interface {
	// RequestSweep asks for a sweep of failed deliveries, soon; requests arriving while one
	// is under way are coalesced into the next.
	RequestSweep(ctx context.Context)
	// SweepProof reports the newest complete sweep.
	SweepProof(ctx context.Context) (policy.SweepProof, error)
}

// Observer hears about the moves the app makes by itself, for metrics. It must be fast and
// must not fail. enforce stays free of any metrics library: app passes something that
// implements this.
type Observer interface {
	// AutomationMoved is called once per automated move.
	AutomationMoved(cause Cause)
	// ProvisionalReverted is called once per provisional revert, when the item's true history
	// has confirmed it or had it withdrawn.
	ProvisionalReverted(confirmed bool)
}

// Clock returns the current time; tests pass a fixed one.
type Clock func() time.Time
