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
	// ReceivedAt is when the webhook reached us.
	ReceivedAt time.Time
	// Lifecycle is set for a lifecycle event of the item's issue (Observation.Lifecycle), and
	// Cause says what it was in words (recorded as the report's Reason until it is judged).
	Lifecycle string `json:",omitempty"`
	Cause     string `json:",omitempty"`
	// Field names a required field (workflow.requirements) whose edit this is: From and To
	// are the field's values, not the Workflow State (Observation.Field).
	Field string `json:",omitempty"`
	// NotBefore is when the change's job first has work to do (Enforcer.Observe); zero: at
	// once. The queue schedules the job for then; it is not part of the job's arguments.
	NotBefore time.Time `json:"-"`
}

// Result is what processing a change did and why. Verdict is VerdictWait when the change's
// place in its item's history is not certain yet: the job runs again after RetryAfter.
type Result struct {
	Verdict    Verdict
	Reason     string
	RevertedTo string
	RetryAfter time.Duration
}
