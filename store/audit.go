package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/ralph-gate/ralph-gate/enforce"
	"slices"
	"strconv"
	"strings"
	"time"
)

// AuditFilter selects audit entries; zero fields do not filter.
type AuditFilter struct {
	IssueNumber int
	Repo        string // with IssueNumber, disambiguates issues of several repos
	ItemID      string
	Verdict     enforce.Verdict // only this verdict ("": all)
	Since       time.Time       // entries at or after Since
	Limit       int             // the newest Limit entries; 0 = all
}

const auditCols = `id, at, delivery_id, project_id, item_id, issue_number, repo, actor, actor_kind,
	from_state, to_state, verdict, rule, reason, cause`

// AppendAudit records a decision and returns its id.
func (s *Store) AppendAudit(ctx context.Context, e enforce.AuditEntry) (int64, error) {
	if !e.Verdict.Recorded() {
		return 0, fmt.Errorf("store: append audit: unknown verdict %q", e.Verdict)
	}
	var id int64
	err := s.queryRow(ctx, `INSERT INTO audit_log (at, delivery_id, project_id, item_id, issue_number, repo,
			actor, actor_kind, from_state, to_state, verdict, rule, reason, cause)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		s.t(nowUTC(e.At)), e.DeliveryID, e.ProjectID, e.ItemID, e.IssueNumber, e.Repo,
		e.Actor, e.ActorKind, e.FromState, e.ToState, string(e.Verdict), e.Rule, e.Reason, e.Cause).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("store: append audit: %w", err)
	}
	return id, nil
}

// QueryAudit returns the entries matching f, oldest first and newest last
// (ordered by time, then id). With a Limit it returns the newest Limit.
func (s *Store) QueryAudit(ctx context.Context, f AuditFilter) ([]enforce.AuditEntry, error) {
	if f.Limit < 0 {
		return nil, fmt.Errorf("store: query audit: negative limit %d", f.Limit)
	}
	var (
		where []string
		args  []any
	)
	if f.IssueNumber != 0 {
		where, args = append(where, "issue_number = ?"), append(args, f.IssueNumber)
	}
	if f.Repo != "" {
		where, args = append(where, "repo = ?"), append(args, f.Repo)
	}
	if f.ItemID != "" {
		where, args = append(where, "item_id = ?"), append(args, f.ItemID)
	}
	if f.Verdict != "" {
		where, args = append(where, "verdict = ?"), append(args, string(f.Verdict))
	}
	if !f.Since.IsZero() {
		where, args = append(where, "at >= ?"), append(args, s.t(f.Since))
	}
	q := `SELECT ` + auditCols + ` FROM audit_log`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	if f.Limit > 0 {
		q += ` ORDER BY at DESC, id DESC LIMIT ?`
		args = append(args, f.Limit)
	} else {
		q += ` ORDER BY at, id`
	}
	out, err := s.auditRows(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: query audit: %w", err)
	}
	if f.Limit > 0 {
		slices.Reverse(out)
	}
	return out, nil
}

func scanAudit(row interface{ Scan(...any) error }) (enforce.AuditEntry, error) {
	var (
		e       enforce.AuditEntry
		verdict string
	)
	err := row.Scan(&e.ID, tc(&e.At), &e.DeliveryID, &e.ProjectID, &e.ItemID, &e.IssueNumber, &e.Repo,
		&e.Actor, &e.ActorKind, &e.FromState, &e.ToState, &verdict, &e.Rule, &e.Reason, &e.Cause)
	e.Verdict = enforce.Verdict(verdict)
	return e, err
}

func (s *Store) auditRows(ctx context.Context, q string, args ...any) ([]enforce.AuditEntry, error) {
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []enforce.AuditEntry
	for rows.Next() {
		e, err := scanAudit(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// GetAudit returns one decision by its id, or an error wrapping enforce.ErrNotFound.
func (s *Store) GetAudit(ctx context.Context, id int64) (enforce.AuditEntry, error) {
	e, err := scanAudit(s.queryRow(ctx, `SELECT `+auditCols+` FROM audit_log WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return enforce.AuditEntry{}, fmt.Errorf("store: audit entry %d: %w", id, enforce.ErrNotFound)
	}
	if err != nil {
		return enforce.AuditEntry{}, fmt.Errorf("store: get audit entry %d: %w", id, err)
	}
	return e, nil
}

// Audit page sizes (ListAudit).
const (
	DefaultAuditPage = 50
	MaxAuditPage     = 500
)

// AuditQuery selects one page of the audit log, newest first: what a person browsing the
// decisions asks. Zero fields do not filter.
type AuditQuery struct {
	Actor       string          // the mover's login, case-insensitive (GitHub's logins are)
	Verdict     enforce.Verdict // one of enforce.AuditVerdicts
	Rule        string
	Repo        string // "owner/name"
	IssueNumber int
	DeliveryID  string    // the decisions of one reported change (a violation comment links to them)
	Since       time.Time // entries at or after Since
	Until       time.Time // entries before Until
	Limit       int       // page size: 0 is DefaultAuditPage, at most MaxAuditPage
	// Before pages towards older entries: those after the cursor's entry in the order
	// (exclusive). After pages towards newer ones. At most one of them is set.
	Before, After *AuditCursor
}

// AuditCursor is an entry's place in the order of the audit log (time, then id). Entries
// recorded later but stamped earlier take their place by time, so a page boundary never
// moves when entries are added.
type AuditCursor struct {
	At time.Time
	ID int64
}

// CursorOf is the place of e in the audit log's order.
func CursorOf(e enforce.AuditEntry) AuditCursor { return AuditCursor{At: e.At, ID: e.ID} }

// String encodes the cursor for a URL: the time in Unix microseconds, a dot, the id.
func (c AuditCursor) String() string {
	return strconv.FormatInt(normTime(c.At).UnixMicro(), 10) + "." + strconv.FormatInt(c.ID, 10)
}

// ParseAuditCursor decodes AuditCursor.String.
func ParseAuditCursor(s string) (AuditCursor, error) {
	at, id, ok := strings.Cut(s, ".")
	us, err1 := strconv.ParseInt(at, 10, 64)
	n, err2 := strconv.ParseInt(id, 10, 64)
	if !ok || err1 != nil || err2 != nil || n <= 0 || us < 0 {
		return AuditCursor{}, fmt.Errorf("malformed audit cursor %q", s)
	}
	return AuditCursor{At: time.UnixMicro(us).UTC(), ID: n}, nil
}

// AuditPage is one page of ListAudit.
type AuditPage struct {
	Entries []enforce.AuditEntry // newest first
	// Older and Newer say whether matching entries lie beyond the page's last and first
	// entry (beyond the cursor for an empty page).
	Older, Newer bool
}

// ListAudit returns one page of the entries matching q, newest first (by time, then id).
func (s *Store) ListAudit(ctx context.Context, q AuditQuery) (AuditPage, error) {
	switch {
	case q.Limit < 0:
		return AuditPage{}, fmt.Errorf("store: list audit: negative limit %d", q.Limit)
	case q.Limit > MaxAuditPage:
		return AuditPage{}, fmt.Errorf("store: list audit: limit %d above %d", q.Limit, MaxAuditPage)
	case q.Before != nil && q.After != nil:
		return AuditPage{}, errors.New("store: list audit: both before and after a cursor")
	case q.Verdict != "" && !q.Verdict.Recorded():
		return AuditPage{}, fmt.Errorf("store: list audit: unknown verdict %q", q.Verdict)
	}
	limit := q.Limit
	if limit == 0 {
		limit = DefaultAuditPage
	}
	where, args := s.auditWhere(q)
	older := func(c AuditCursor) (string, []any) {
		return "(at < ? OR (at = ? AND id < ?))", []any{s.t(c.At), s.t(c.At), c.ID}
	}
	newer := func(c AuditCursor) (string, []any) {
		return "(at > ? OR (at = ? AND id > ?))", []any{s.t(c.At), s.t(c.At), c.ID}
	}
	// One more than a page tells whether more lie in the direction of travel.
	sel := func(cond string, cargs []any, order string) ([]enforce.AuditEntry, error) {
		w, a := slices.Clone(where), slices.Clone(args)
		if cond != "" {
			w, a = append(w, cond), append(a, cargs...)
		}
		qs := `SELECT ` + auditCols + ` FROM audit_log`
		if len(w) > 0 {
			qs += ` WHERE ` + strings.Join(w, " AND ")
		}
		return s.auditRows(ctx, qs+` ORDER BY `+order+` LIMIT ?`, append(a, limit+1)...)
	}
	exists := func(cond string, cargs []any) (bool, error) {
		w := append(slices.Clone(where), cond)
		var one int
		err := s.queryRow(ctx, `SELECT 1 FROM audit_log WHERE `+strings.Join(w, " AND ")+` LIMIT 1`,
			append(slices.Clone(args), cargs...)...).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return false, nil
		}
		return err == nil, err
	}
	var (
		page AuditPage
		err  error
	)
	if q.After != nil {
		c, a := newer(*q.After)
		page.Entries, err = sel(c, a, "at, id")
		if err == nil {
			page.Newer = len(page.Entries) > limit
			page.Entries = page.Entries[:min(limit, len(page.Entries))]
			slices.Reverse(page.Entries)
			edge := *q.After
			if len(page.Entries) > 0 {
				edge = CursorOf(page.Entries[len(page.Entries)-1])
			}
			c, a = older(edge)
			page.Older, err = exists(c, a)
		}
	} else {
		var (
			c string
			a []any
		)
		if q.Before != nil {
			c, a = older(*q.Before)
		}
		page.Entries, err = sel(c, a, "at DESC, id DESC")
		if err == nil {
			page.Older = len(page.Entries) > limit
			page.Entries = page.Entries[:min(limit, len(page.Entries))]
			if q.Before != nil {
				edge := *q.Before
				if len(page.Entries) > 0 {
					edge = CursorOf(page.Entries[0])
				}
				c, a = newer(edge)
				page.Newer, err = exists(c, a)
			}
		}
	}
	if err != nil {
		return AuditPage{}, fmt.Errorf("store: list audit: %w", err)
	}
	return page, nil
}

// auditWhere is the filter part of q.
func (s *Store) auditWhere(q AuditQuery) (where []string, args []any) {
	add := func(cond string, arg any) { where, args = append(where, cond), append(args, arg) }
	if q.Actor != "" {
		add("LOWER(actor) = LOWER(?)", q.Actor)
	}
	if q.Verdict != "" {
		add("verdict = ?", string(q.Verdict))
	}
	if q.Rule != "" {
		add("rule = ?", q.Rule)
	}
	if q.Repo != "" {
		add("repo = ?", q.Repo)
	}
	if q.IssueNumber != 0 {
		add("issue_number = ?", q.IssueNumber)
	}
	if q.DeliveryID != "" {
		add("delivery_id = ?", q.DeliveryID)
	}
	if !q.Since.IsZero() {
		add("at >= ?", s.t(q.Since))
	}
	if !q.Until.IsZero() {
		add("at < ?", s.t(q.Until))
	}
	return where, args
}

// maxProjectVerdicts bounds how many entries ProjectVerdicts reads.
const maxProjectVerdicts = 10000

// ProjectVerdicts lists a project's audit entries of one verdict recorded at or after since,
// newest first, at most 10,000 (the board health report's "what enforce would have done").
func (s *Store) ProjectVerdicts(ctx context.Context, projectID string, v enforce.Verdict, since time.Time) ([]enforce.AuditEntry, error) {
	out, err := s.auditRows(ctx, `SELECT `+auditCols+` FROM audit_log WHERE project_id = ? AND verdict = ? AND at >= ? ORDER BY at DESC, id DESC LIMIT ?`,
		projectID, string(v), s.t(since.UTC()), maxProjectVerdicts)
	if err != nil {
		return nil, fmt.Errorf("store: %s decisions of project %s: %w", v, projectID, err)
	}
	return out, nil
}
