package enforce

import (
	"context"
	"time"

	"github.com/ralph-gate/ralph-gate/store"
)

// Content types of a project item, as GitHub names them.
const (
	ContentIssue       = "Issue"
	ContentPullRequest = "PullRequest"
	ContentDraftIssue  = "DraftIssue"
)

// Item is one project item as read from GitHub, with its Workflow State.
type Item struct {
	ID            string // project item node id
	ProjectID     string
	ProjectNumber int
	Owner         string // the organization owning the project
	ContentType   string // Issue, PullRequest or DraftIssue
	ContentID     string // issue / pull request node id: where comments go
	Number        int    // issue or pull request number (0 for drafts)
	Repo          string // "owner/name"
	Title         string
	Open          bool
	Archived      bool
	State         string // current Workflow State option name; "" when unset
	// Summaries read with the item, so a leaf needs no second call.
	ParentID     string // parent issue node id; "" when none
	ParentNumber int
	SubIssues    int // number of sub-issues
	OpenBlockers int // open issues this one is blocked by
	// Estimate and Priority are read only when paging through a project (pick ranking).
	Estimate, Priority string
	// StateUpdatedAt is when the Workflow State value last changed (read when paging through
	// a project; zero when unknown). The reconciler leaves very recent changes to their webhooks.
	StateUpdatedAt time.Time
}

// ItemsPage is one page of a project's items.
type ItemsPage struct {
	Items     []Item
	Total     int
	HasNext   bool
	EndCursor string
}

// Relative is a related issue and its item on the same project (ItemID "" when it is not on it).
type Relative struct {
	IssueID   string
	Number    int
	Title     string
	Repo      string
	Open      bool
	ItemID    string
	State     string
	SubIssues int
	Estimate  string // the Estimate field on the project ("" when unset or not read)
}

// Family is an issue with its parent, all its sub-issues and its open blockers, as seen on one
// project.
type Family struct {
	Self         Relative
	Parent       *Relative // nil when the issue has no parent
	Children     []Relative
	OpenBlockers []Relative
}

// StateWrite is one Workflow State the app writes.
type StateWrite struct {
	Item  Item
	State string
}

// IsDraft reports whether the item is a draft issue (reverted but never commented on).
func (it Item) IsDraft() bool { return it.ContentType == ContentDraftIssue }

// Comment is a comment the app wrote.
type Comment struct {
	ID         string // GraphQL node id
	DatabaseID int64
}

// Board is everything enforcement needs from GitHub for one installation.
type Board interface {
	// Item reads an item with its current Workflow State (one API call).
	Item(ctx context.Context, itemID string) (Item, error)
	// SetState writes the Workflow State of an item; "" clears it.
	SetState(ctx context.Context, it Item, state string) error
	// AddComment comments on an issue or pull request (by node id).
	AddComment(ctx context.Context, subjectID, body string) (Comment, error)
	// UpdateComment replaces the body of a comment the app wrote.
	UpdateComment(ctx context.Context, commentID, body string) error
	// Family reads an issue's parent, every sub-issue (all pages) and open blockers, with their
	// states on the project.
	Family(ctx context.Context, issueID, projectID string) (Family, error)
	// SetStates writes several states, batched into as few requests as GitHub allows.
	SetStates(ctx context.Context, writes []StateWrite) error
	// IssueItems returns an issue's items on every project, with their states.
	IssueItems(ctx context.Context, repoOwner, repo string, number int) ([]Item, error)
	// ProjectItems reads one page (up to 100 items) of a project, with values; after is the
	// previous page's EndCursor ("" for the first page).
	ProjectItems(ctx context.Context, owner string, number int, after string) (ItemsPage, error)
	// ClosingIssues returns the issues a pull request closes (owner/name#number).
	ClosingIssues(ctx context.Context, repoOwner, repo string, number int) ([]IssueRef, error)
}

// IssueRef names an issue.
type IssueRef struct {
	Owner, Repo string
	Number      int
}

// Store is the persistence enforcement needs.
type Store interface {
	// LockItem serializes work on one item across replicas (a no-op where there is one).
	LockItem(ctx context.Context, itemID string) (unlock func(), err error)
	GetItem(ctx context.Context, itemID string) (store.Item, error)
	PutItem(ctx context.Context, item store.Item) error
	CompareAndSetItem(ctx context.Context, item store.Item, expectedVersion int64) (bool, error)
	AppendAudit(ctx context.Context, e store.AuditEntry) (int64, error)
	// The item's reported changes and their judgements (history.go).
	RecordObservation(ctx context.Context, o store.Observation) (bool, error)
	PendingObservations(ctx context.Context, itemID string) ([]store.Observation, error)
	GetObservation(ctx context.Context, deliveryID string) (store.Observation, error)
	Unexplained(ctx context.Context, itemID string) ([]store.Observation, error)
	MarkExplained(ctx context.Context, deliveryID string) error
	CommitStep(ctx context.Context, st store.Step) (bool, error)
	LegalStateAt(ctx context.Context, itemID string, t time.Time) (state string, known bool, err error)
	CountInState(ctx context.Context, projectID, state string) (int, error)
	GetViolationComment(ctx context.Context, repo string, issueNumber int) (store.ViolationComment, error)
	PutViolationComment(ctx context.Context, repo string, issueNumber int, c store.ViolationComment) error
}

// Clock returns the current time; tests pass a fixed one.
type Clock func() time.Time
