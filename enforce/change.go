package enforce

import "time"

// Change is one observed Workflow State change, as a webhook reported it. From and To are
// hints (GitHub marks them optional): the worker re-reads the item before acting.
type Change struct {
	DeliveryID     string
	InstallationID int64
	ItemID         string
	ProjectID      string
	ProjectNumber  int
	Owner          string
	ContentType    string
	// FromKnown is false when the payload carried no from value at all.
	FromKnown bool
	From      string    // "" = the item had no value
	To        string    // "" = the value was cleared
	Actor     string    // login of the sender
	At        time.Time // when GitHub says the item changed (orders changes)
	// ReceivedAt is when the webhook reached us; a missing earlier change is waited for
	// until ReceivedAt + the reorder window.
	ReceivedAt time.Time
	// Drift marks a change only the reconciler saw (its webhook was lost): the actor is
	// unknown and the change is judged as an agent's (see Reconcile).
	Drift bool `json:",omitempty"`
}

// Outcome says what processing a change did.
type Outcome int

// Outcomes of ProcessChange.
const (
	OutcomeAllowed    Outcome = iota // a legal move was recorded
	OutcomeReverted                  // an illegal move was set back
	OutcomeIgnored                   // nothing to do (own write, stale, superseded, bypass audited)
	OutcomeWait                      // an earlier change is missing: retry after Result.RetryAfter
	OutcomeSuperseded                // the board moved on before this change could be enforced
)

func (o Outcome) String() string {
	switch o {
	case OutcomeAllowed:
		return "allowed"
	case OutcomeReverted:
		return "reverted"
	case OutcomeIgnored:
		return "ignored"
	case OutcomeWait:
		return "wait"
	case OutcomeSuperseded:
		return "superseded"
	}
	return "unknown"
}

// Result is what ProcessChange did and why.
type Result struct {
	Outcome    Outcome
	Reason     string
	RevertedTo string
	RetryAfter time.Duration
}
