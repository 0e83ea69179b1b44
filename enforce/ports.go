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
}

// Store is the persistence enforcement needs.
type Store interface {
	// LockItem serializes work on one item across replicas (a no-op where there is one).
	LockItem(ctx context.Context, itemID string) (unlock func(), err error)
	GetItem(ctx context.Context, itemID string) (store.Item, error)
	PutItem(ctx context.Context, item store.Item) error
	CompareAndSetItem(ctx context.Context, item store.Item, expectedVersion int64) (bool, error)
	AppendAudit(ctx context.Context, e store.AuditEntry) (int64, error)
	GetViolationComment(ctx context.Context, repo string, issueNumber int) (store.ViolationComment, error)
	PutViolationComment(ctx context.Context, repo string, issueNumber int, c store.ViolationComment) error
}

// Clock returns the current time; tests pass a fixed one.
type Clock func() time.Time
