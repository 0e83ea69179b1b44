package enforce

import (
	"errors"
	"slices"
	"time"

	"github.com/ralph-gate/ralph-gate/policy"
)

// What enforcement remembers, declared here and persisted by package store (Store). The
// names are the enforcement's: store implements them, enforce never imports it.

// ErrNotFound is returned (wrapped) by a Store or a Board when what was asked for does not
// exist: an item never recorded, a report never received, an issue GitHub does not know.
var ErrNotFound = errors.New("not found")

// ErrConcurrentUpdate means another worker changed the item first; the change is retried.
var ErrConcurrentUpdate = errors.New("item changed concurrently")

// ErrBoardMoved is a guarded write (Board.SetStatesIf) that found the card moved since it was
// read: someone's newer move is on the board, and writing over it would lose it.
var ErrBoardMoved = errors.New("the card was moved since it was read")

// Record is what enforcement remembers of one project item.
type Record struct {
	ProjectID      string    // project node id (PVT_…)
	ItemID         string    // project item node id (PVTI_…); the key
	IssueNumber    int       // 0 when unknown (e.g. draft items)
	Repo           string    // "owner/name"; empty when unknown
	LastLegalState string    // option name of the newest legal Workflow State; "" = unset
	LegalAt        time.Time // when the change that made LastLegalState happened; zero = unknown
	RejectedState  string    // the newest refused value (so the change leaving it chains); "" = none
	// ObservedState is the board's value after the last judged change or the app's own write:
	// the value the next reported change must have left to follow the item's history.
	ObservedState string
	ObservedAt    time.Time // GitHub's time of the last judged change; zero = unknown
	GapSince      time.Time // when a missing change was first noticed; zero = none
	// AutomateState is a legal state whose automation has not run to completion yet.
	AutomateState string
	// RevertPending is the value a revert is about to write (recorded before the write): a
	// board showing it afterwards is our write, not someone's unreported move.
	RevertPending string
	// Provisional is the value a provisional revert wrote (journaled before the write) over
	// ProvisionalOver, the value the report ProvisionalFor set, before a proof covered that
	// report (provisional.go). All are cleared when the revert's own report (or
	// the board showing it) is taken in, or once nothing is left to judge and the board never
	// showed it.
	Provisional, ProvisionalOver, ProvisionalFor string
	ProvisionalAt                                time.Time // GitHub's time of that report
	LockHolder                                   string    // "" when unlocked
	LockSince                                    time.Time // zero when unlocked
	// LockTakenFrom is whom LockHolder took the lock over from after it expired
	// (workflow.locks.ttl); "" when the holder took it the ordinary way.
	LockTakenFrom string
	// Fields are the required fields' values (workflow.requirements) as the item's judged
	// history leaves them, by field name: a move is checked against them as they were when it
	// was made. A field missing is not known (recorded before it was required): a move is
	// then checked against the value read with the item.
	Fields map[string]FieldValue
	// Writes are the app's guarded writes (reverts, automated moves) the history ends in, in
	// order (policy.History): GitHub has no conditional write, so a change may land between a
	// write's read and the write, whose report then leaves from another value. Raced are the
	// writes such a race put back in flight: their reports wait for their place in the
	// history, changing the card only.
	Writes    []policy.Write
	Raced     []policy.Write
	UpdatedAt time.Time // set by the store when zero on write
	Version   int64     // bumped by every write; 1 after the first
}

// FieldValue is a required field's value in an item's history, and GitHub's time of the
// edit that set it (zero: adopted as read).
type FieldValue struct {
	Value string    `json:"value"`
	At    time.Time `json:"at,omitzero"`
}

// Write is a guarded write of the app's as the record keeps it (policy.Write).
type Write = policy.Write

// fieldValues is the values alone (nil when none is known).
func (r Record) fieldValues() map[string]string {
	if len(r.Fields) == 0 {
		return nil
	}
	out := make(map[string]string, len(r.Fields))
	for k, v := range r.Fields {
		out[k] = v.Value
	}
	return out
}

// forgetProvisional clears the journal of a provisional revert.
func (r *Record) forgetProvisional() {
	r.Provisional, r.ProvisionalOver, r.ProvisionalFor, r.ProvisionalAt = "", "", "", time.Time{}
}

// writeInFlight reports whether a write of ours on the item is journaled or not yet reported
// back. While one is, no other write of ours is made at once (automation, a move made for an
// agent, a revert at once): only the report of the one in flight tells a change made between its
// read and its write apart from ours, so the item's walk, which waits for what its card shows
// to be explained, makes the next one.
func (r Record) writeInFlight() bool {
	return r.RevertPending != "" || slices.ContainsFunc(r.Writes, func(wr policy.Write) bool { return !wr.Reported })
}

// known reports whether the record carries a legal state (adopted or judged), rather than
// being only a claimed lock.
func (r Record) known() bool { return r.LastLegalState != "" || !r.LegalAt.IsZero() }

// Verdict says what became of a move, in every place it is told: a report's judgement, the
// audit log, a comment's marker, a job's result and the metrics. policy decides allow or
// revert (verdictOf); the other verdicts are enforcement's own.
type Verdict string

// Verdicts.
const (
	VerdictAllowed   Verdict = "allowed"   // a legal move stands
	VerdictReverted  Verdict = "reverted"  // an illegal move was set back
	VerdictAutomated Verdict = "automated" // the app moved an item (cascade, convergence, lifecycle)
	VerdictHandoff   Verdict = "handoff"   // an agent moved an item through the MCP façade
	VerdictAdopted   Verdict = "adopted"   // a current value was taken as legal (first sight)
	VerdictIgnored   Verdict = "ignored"   // nothing to enforce (own write, stale, duplicate, refused handoff)
	// VerdictWithdrawn: a provisional revert the item's true history did not bear out (the
	// move was allowed after all, or the value to go back to was another); the board is
	// brought to the true outcome.
	VerdictWithdrawn Verdict = "withdrawn"
	// VerdictWouldRevert: a refused move left standing because its project is in warn or
	// evaluate mode (modes.go): what enforce would have reverted.
	VerdictWouldRevert Verdict = "would_revert"
	// VerdictRecorded: a required field's edit taken into the item's history. It is no move
	// and is never audited (so not among AuditVerdicts: Recorded() is false for it).
	VerdictRecorded Verdict = "recorded"
	// Told only as a job's result, never recorded:
	VerdictSuperseded Verdict = "superseded" // refused, but a later legal move had already replaced it
	VerdictWait       Verdict = "wait"       // its place in the item's history is not certain yet: retry
)

// AuditVerdicts lists the verdicts the audit log records.
func AuditVerdicts() []Verdict {
	return []Verdict{VerdictAllowed, VerdictReverted, VerdictWouldRevert, VerdictAutomated, VerdictHandoff, VerdictAdopted, VerdictIgnored, VerdictWithdrawn}
}

// Refused reports whether v is a refused move's: reverted, or left standing (would_revert).
func (v Verdict) Refused() bool { return v == VerdictReverted || v == VerdictWouldRevert }

// Recorded reports whether v is a verdict the audit log records.
func (v Verdict) Recorded() bool { return slices.Contains(AuditVerdicts(), v) }

// AuditEntry is one recorded decision.
type AuditEntry struct {
	ID          int64     // assigned by the store
	At          time.Time // defaults to now
	DeliveryID  string    // webhook delivery id, if any
	ProjectID   string
	ItemID      string
	IssueNumber int
	Repo        string // "owner/name"
	Actor       string // login of whoever made the move (or the agent name)
	ActorKind   string // human, agent, bypass, app or unknown
	FromState   string
	ToState     string
	Verdict     Verdict
	Rule        string // the rule or gate that decided
	Reason      string // human-readable explanation
	Cause       string // what set an automated move off, e.g. "cascade: parent #12 moved to Plan"
}

// ObservationStatus is where a report stands in its item's history.
type ObservationStatus string

// Observation statuses.
const (
	ObservationPending ObservationStatus = "pending" // reported, not judged yet
	ObservationJudged  ObservationStatus = "judged"  // judged as a step of the item's history
	ObservationIgnored ObservationStatus = "ignored" // dropped (our own write, stale, duplicate)
)

// Observation is one reported change of an item's Workflow State (a webhook) and, once
// judged, the judgement. A step nobody reported but the app had to judge (a proven gap) is
// recorded too, under a synthetic delivery id, so that its explanation is tracked the same way;
// so are the app's own moves (automation, handoffs), as judged steps.
type Observation struct {
	DeliveryID string
	ItemID     string
	FromKnown  bool
	From, To   string
	Actor      string
	At         time.Time // GitHub's time of the change
	ReceivedAt time.Time
	Status     ObservationStatus
	JudgedAt   time.Time
	Verdict    Verdict
	ActorKind  string
	LegalFrom  string // the last legal state it was judged from
	Rule       string
	Reason     string
	Recovery   string
	Explained  bool // a refused step's explanation is on GitHub
	// Lifecycle is the kind of a lifecycle event (LifecycleIssueClosed, …), "" for a change
	// of the card: its actor's move, its state decided from the legal state when judged (To:
	// the state a close or reopen moves to; for a merge, "" until judged).
	Lifecycle string
	// Field names the required field a report edited (From → To are its values); "" for a
	// report of the card or a lifecycle event.
	Field string
}

// settled reports whether a record has nothing left to write: no revert pending or due (the
// observed value is the legal one) and no automation to run.
func (r Record) settled() bool {
	return r.RevertPending == "" && r.AutomateState == "" && r.ObservedState == r.LastLegalState && r.RejectedState == "" &&
		r.Provisional == ""
}

// RefusedStep is a refused step with its item's issue and the item's last legal state now.
type RefusedStep struct {
	Observation
	Repo        string
	IssueNumber int
	LegalNow    string
}

// Step is one step of an item's history, committed at once: the item's new record, the
// judged (or ignored) report and its audit entry.
type Step struct {
	Record          Record
	ExpectedVersion int64        // 0: the record must not exist yet
	Observation     *Observation // nil when no report is involved (adoption, a revert written)
	Audit           *AuditEntry  // nil when there is nothing to audit
}

// ViolationComment is the explanatory comment kept per issue and actor, so that a burst of one
// actor's violations updates one comment instead of adding many, while another actor's
// violation gets a comment of its own (GitHub notifies on a new comment, never on an edit).
// NodeID "" marks a comment recorded as about to be posted (write-ahead) whose posting has not
// been confirmed.
type ViolationComment struct {
	// Actor is whose violations the comment lists (with the issue, its key). "" is a comment
	// recorded before comments were kept per actor.
	Actor     string
	CommentID int64  // REST id
	NodeID    string // GraphQL node id
	Count     int    // violations explained by this comment
	UpdatedAt time.Time
	Body      string
}
