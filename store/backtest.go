package store

// What a backtest of an organization's proposed policy reads (app.Backtest): the decisions
// recorded on the organization's projects in a window, page by page, the projects' node ids
// the reconciler recorded, and the titles of a few issues.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
)

// Bounds of the backtest queries.
const (
	// MaxOrgAuditPage is the most decisions one OrgAudit call returns.
	MaxOrgAuditPage = 1000
	// MaxOrgAuditProjects is the most project ids one OrgAudit call filters on.
	MaxOrgAuditProjects = 500
	// MaxCursorsByPrefix is the most cursors one CursorsByPrefix call returns.
	MaxCursorsByPrefix = 1000
	// MaxItemTitles is the most items one ItemTitles call looks up.
	MaxItemTitles = 100
)

// OrgAuditQuery selects one page of the decisions recorded on an organization's projects in
// a window, newest first.
type OrgAuditQuery struct {
	// ProjectIDs are the organization's projects (GitHub node ids, as the audit log records
	// them); at most MaxOrgAuditProjects.
	ProjectIDs []string
	// Owner, when set, also selects the decisions on issues of the owner's repositories
	// ("owner/…", case-insensitive), whatever project they were recorded on.
	Owner string
	// Since and Until bound the window: at or after Since, before Until (zero: unbounded).
	Since, Until time.Time
	// Before pages towards older entries: those after the cursor's entry in the order
	// (exclusive); nil: from the newest.
	Before *AuditCursor
	// Limit is the page size, 1 to MaxOrgAuditPage.
	Limit int
}

// OrgAudit returns one page of the decisions q selects, newest first (by time, then id).
// A page shorter than q.Limit is the last one.
func (s *Store) OrgAudit(ctx context.Context, q OrgAuditQuery) ([]enforce.AuditEntry, error) {
	switch {
	case q.Limit <= 0 || q.Limit > MaxOrgAuditPage:
		return nil, fmt.Errorf("store: org audit: limit %d outside 1 to %d", q.Limit, MaxOrgAuditPage)
	case len(q.ProjectIDs) > MaxOrgAuditProjects:
		return nil, fmt.Errorf("store: org audit: %d projects, more than %d", len(q.ProjectIDs), MaxOrgAuditProjects)
	case len(q.ProjectIDs) == 0 && q.Owner == "":
		return nil, nil // nothing selects any entry
	}
	var (
		where []string
		args  []any
		whose []string
	)
	if n := len(q.ProjectIDs); n > 0 {
		whose = append(whose, `project_id IN (?`+strings.Repeat(", ?", n-1)+`)`)
		for _, id := range q.ProjectIDs {
			args = append(args, id)
		}
	}
	if q.Owner != "" {
		whose, args = append(whose, `LOWER(repo) LIKE ? ESCAPE '\'`), append(args, likePrefix(strings.ToLower(q.Owner)+"/"))
	}
	where = append(where, "("+strings.Join(whose, " OR ")+")")
	if !q.Since.IsZero() {
		where, args = append(where, "at >= ?"), append(args, s.t(q.Since))
	}
	if !q.Until.IsZero() {
		where, args = append(where, "at < ?"), append(args, s.t(q.Until))
	}
	if c := q.Before; c != nil {
		where, args = append(where, "(at < ? OR (at = ? AND id < ?))"), append(args, s.t(c.At), s.t(c.At), c.ID)
	}
	out, err := s.auditRows(ctx, `SELECT `+auditCols+` FROM audit_log WHERE `+strings.Join(where, " AND ")+
		` ORDER BY at DESC, id DESC LIMIT ?`, append(args, q.Limit)...)
	if err != nil {
		return nil, fmt.Errorf("store: org audit: %w", err)
	}
	return out, nil
}

// CursorsByPrefix returns the cursors whose names start with prefix, compared
// case-insensitively (GitHub's logins are), by name: at most MaxCursorsByPrefix, and more
// reports whether others were left out.
func (s *Store) CursorsByPrefix(ctx context.Context, prefix string) (cursors map[string]string, more bool, err error) {
	if prefix == "" {
		return nil, false, fmt.Errorf("store: cursors by prefix: empty prefix")
	}
	rows, err := s.query(ctx, `SELECT name, value FROM cursors WHERE LOWER(name) LIKE ? ESCAPE '\' ORDER BY name LIMIT ?`,
		likePrefix(strings.ToLower(prefix)), MaxCursorsByPrefix+1)
	if err != nil {
		return nil, false, fmt.Errorf("store: cursors by prefix: %w", err)
	}
	defer rows.Close()
	cursors = map[string]string{}
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return nil, false, fmt.Errorf("store: cursors by prefix: %w", err)
		}
		if len(cursors) == MaxCursorsByPrefix {
			more = true
			break
		}
		cursors[name] = value
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("store: cursors by prefix: %w", err)
	}
	return cursors, more, nil
}

// ItemTitles returns the titles the reconciler's newest pass read of the given items, by item
// id (an item it has not read is absent); at most MaxItemTitles items.
func (s *Store) ItemTitles(ctx context.Context, itemIDs []string) (map[string]string, error) {
	out := map[string]string{}
	switch {
	case len(itemIDs) == 0:
		return out, nil
	case len(itemIDs) > MaxItemTitles:
		return nil, fmt.Errorf("store: item titles: %d items, more than %d", len(itemIDs), MaxItemTitles)
	}
	args := make([]any, len(itemIDs))
	for i, id := range itemIDs {
		args[i] = id
	}
	rows, err := s.query(ctx, `SELECT item_id, title FROM item_snapshots WHERE item_id IN (?`+strings.Repeat(", ?", len(itemIDs)-1)+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: item titles: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, title string
		if err := rows.Scan(&id, &title); err != nil {
			return nil, fmt.Errorf("store: item titles: %w", err)
		}
		out[id] = title
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: item titles: %w", err)
	}
	return out, nil
}

// likePrefix is a LIKE pattern (with ESCAPE '\') matching the strings that start with p.
func likePrefix(p string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(p) + "%"
}
