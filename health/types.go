package health

import "time"

// What a health report holds: one per enforced project, computed from the store only (no
// GitHub call), so that a page view, `ralph-gate report` and the board_health tool cost
// nothing on GitHub and agree with each other.

// Report is the health of every enforced project at one moment.
type Report struct {
	GeneratedAt time.Time `json:"generatedAt"`
	Projects    []Project `json:"projects"`
	// Facade is what agents did through the MCP façade (every project's together).
	Facade Facade `json:"facade"`
	// Orgs are the organizations whose policies come from their own repositories, with the
	// commit in force for each (none when config.yml lists the projects).
	Orgs []Org `json:"orgs,omitempty"`
}

// Project is one enforced project's health.
type Project struct {
	ID     string `json:"id"` // project node id (PVT_…); "" until the app has seen the project
	Owner  string `json:"owner"`
	Number int    `json:"number"`
	// Mode is how the project is enforced: enforce, warn or evaluate (docs/ENFORCEMENT.md
	// "Modes"). WouldRevert, under warn and evaluate, is what enforce would have reverted.
	Mode        string       `json:"mode"`
	WouldRevert *WouldRevert `json:"wouldRevert,omitempty"`
	// SnapshotAt is when the newest reconciler pass read the project's items (titles, open,
	// blockers); zero when no pass has completed. States and locks are newer: they follow
	// every judged webhook.
	SnapshotAt  time.Time    `json:"snapshotAt"`
	Items       int          `json:"items"`       // items known on the project
	States      []StateCount `json:"states"`      // every configured state, in display order
	Unset       []ItemRef    `json:"unset"`       // items with no Workflow State
	Locks       []Lock       `json:"locks"`       // items held by an agent, oldest first
	HumanNeeded []Waiting    `json:"humanNeeded"` // items in a human_gate state, longest wait first
	// Unblocked are open items waiting in a queue state whose blockers are all closed.
	Unblocked []ItemRef `json:"unblocked"`
	Runtime   Runtime   `json:"runtime"`
	// Hygiene lists what needs a person's attention, most pressing first.
	Hygiene []Finding `json:"hygiene"`
}

// StateCount is one state with its item count and its WIP limit (0: none).
type StateCount struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"` // queue | lock | human_gate | terminal
	Count int    `json:"count"`
	Limit int    `json:"limit,omitempty"`
	Over  bool   `json:"over,omitempty"` // Count > Limit
}

// ItemRef names one item. Title and URL come from the newest reconciler snapshot ("" before).
type ItemRef struct {
	ItemID string `json:"itemId"`
	Repo   string `json:"repo,omitempty"`
	Number int    `json:"number,omitempty"`
	Title  string `json:"title,omitempty"`
	URL    string `json:"url,omitempty"`
	State  string `json:"state,omitempty"`
}

// Lock is an item held by an agent.
type Lock struct {
	Item   ItemRef       `json:"item"`
	Holder string        `json:"holder"`
	Since  time.Time     `json:"since"`
	Age    time.Duration `json:"ageNs"`
	Stale  bool          `json:"stale"` // held longer than the configured stale age
	// Expired: held longer than workflow.locks.ttl, so another agent of a role that owns the
	// state may take it over (docs/ENFORCEMENT.md "Lock expiry").
	Expired bool `json:"expired"`
}

// Waiting is an item waiting for a person.
type Waiting struct {
	Item  ItemRef       `json:"item"`
	Since time.Time     `json:"since"` // when it entered the state (zero: unknown)
	Age   time.Duration `json:"ageNs"`
	Long  bool          `json:"long"` // waiting longer than the configured age
}

// Runtime is what the service itself reports of its work.
type Runtime struct {
	QueueDepth     int       `json:"queueDepth"` // jobs waiting to run; -1 when unknown
	LastReconcile  time.Time `json:"lastReconcile"`
	LastSweep      time.Time `json:"lastSweep"`
	RateLimitKnown bool      `json:"rateLimitKnown"`
	RateRemaining  int       `json:"rateRemaining"` // GitHub's primary budget as last reported
	RateLimit      int       `json:"rateLimit"`
	RateReset      time.Time `json:"rateReset"`
}

// Finding kinds.
const (
	FindingStaleLock        = "stale_lock"
	FindingLongHumanWait    = "long_human_wait"
	FindingWIPOverLimit     = "wip_over_limit"
	FindingUnsetState       = "unset_state"
	FindingUnblockedWaiting = "unblocked_waiting"
)

// Finding is one hygiene problem.
type Finding struct {
	Kind   string   `json:"kind"`
	Item   *ItemRef `json:"item,omitempty"` // nil for a state-wide finding (WIP)
	State  string   `json:"state,omitempty"`
	Detail string   `json:"detail"` // one sentence a person can act on
}
