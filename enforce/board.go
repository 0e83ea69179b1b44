package enforce

import (
	"context"
	"fmt"
	"time"

	"github.com/ralph-gate/ralph-gate/policy"
)

// What enforcement reads from GitHub: a project item and its relatives, as the Board port
// (ports.go) returns them. ghboard fills these from GraphQL.

// Content types of a project item, as GitHub names them.
const (
	ContentIssue       = "Issue"
	ContentPullRequest = "PullRequest"
	ContentDraftIssue  = "DraftIssue"
)

// MaxRequiredFields is how many fields workflow.requirements may name in all: a Board reads
// each of their values with an item, by name.
const MaxRequiredFields = policy.MaxRequiredFields

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
	Archived      bool   // archived on its project: the app never moves it
	State         string // current Workflow State option name; "" when unset
	// Summaries read with the item, so a leaf needs no second call.
	ParentID     string // parent issue node id; "" when none
	ParentNumber int
	SubIssues    int // number of sub-issues
	OpenBlockers int // open issues this one is blocked by
	// Blockers counts every issue this one is blocked by, open or closed, and URL is the
	// issue's or pull request's page: both read only when paging through a project (the
	// health report's snapshot).
	Blockers int
	URL      string
	// Estimate and Priority are read only when paging through a project (pick ranking).
	Estimate, Priority string
	// StateUpdatedAt is when the Workflow State value last changed (read when paging through
	// a project; zero when unknown). The reconciler leaves very recent changes to their webhooks.
	StateUpdatedAt time.Time
	// IssueEvents are the issue's latest closes and reopens (up to three, oldest first), read
	// with the item from its timeline: a close and a reopen no report has told of yet leave the
	// issue as it was, but show here.
	IssueEvents []IssueEvent
	// What workflow.requirements check, read with the item only when some are configured:
	// its field values by field name, the options of its project's single-select fields, and
	// whether a merged pull request closes the issue, and when the first was merged (zero
	// when GitHub did not say).
	Fields       map[string]string
	FieldOptions map[string][]string
	MergedPR     bool
	MergedAt     time.Time
}

// IssueEvent is a close or a reopen of an issue as its timeline dates it (whole seconds).
type IssueEvent struct {
	Closed bool // a close; else a reopen
	Actor  string
	At     time.Time
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
	IssueID  string
	Number   int
	Title    string
	Repo     string
	Open     bool
	ItemID   string
	Archived bool // the item is archived: automation never moves it
	State    string
	// StateUpdatedAt is when the state last changed (zero when GitHub did not say).
	StateUpdatedAt time.Time
	SubIssues      int
	Estimate       string       // the Estimate field on the project ("" when unset or not read)
	IssueEvents    []IssueEvent // as Item's
	// Fields, MergedPR and MergedAt are as Item's: read only when workflow.requirements are
	// configured.
	Fields   map[string]string
	MergedPR bool
	MergedAt time.Time
	// UpdatedAt is when anything of the item last changed (a field's value, its state), as
	// GitHub dates it; zero when not read. Its fields as read were theirs at any time since.
	UpdatedAt time.Time
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
	// From is the value the card must still show for a guarded write (SetStatesIf).
	From string
	// Check, when set, is asked too with the item as read when the write's turn comes: the
	// write is made only when it returns nil, and its error is the write's. A write that must
	// know more of the card than its value (a revert at once: provisional.go) then costs no
	// read of its own.
	Check func(ctx context.Context, cur Item) error
}

// Guard says why a guarded write must not be made over cur, the item as read when the write's
// turn came: the card does not show From (ErrBoardMoved), or Check refuses it. Every Board
// asks it before a guarded write.
func (w StateWrite) Guard(ctx context.Context, cur Item) error {
	if cur.State != w.From {
		return fmt.Errorf("item %s shows %q, not %q: %w", w.Item.ID, cur.State, w.From, ErrBoardMoved)
	}
	if w.Check != nil {
		return w.Check(ctx, cur)
	}
	return nil
}

// IsDraft reports whether the item is a draft issue (reverted but never commented on).
func (it Item) IsDraft() bool { return it.ContentType == ContentDraftIssue }

// Comment is a comment the app wrote.
type Comment struct {
	ID         string // GraphQL node id
	DatabaseID int64
}

// IssueRef names an issue.
type IssueRef struct {
	Owner, Repo string
	Number      int
}

// RateLimit is GitHub's primary budget as last reported (x-ratelimit-* headers).
type RateLimit struct {
	Limit, Remaining, Used int
	Reset                  time.Time
}

// setStateIf is one guarded write (Board.SetStatesIf).
func setStateIf(ctx context.Context, b Board, w StateWrite) error {
	return b.SetStatesIf(ctx, []StateWrite{w})[0]
}
