package store

import (
	"context"
	"fmt"
	"github.com/ralph-gate/ralph-gate/enforce"
	"slices"
	"strings"
	"time"
)

// AuditFilter selects audit entries; zero fields do not filter.
type AuditFilter struct {
	IssueNumber int
	Repo        string // with IssueNumber, disambiguates issues of several repos
	ItemID      string
	Since       time.Time // entries at or after Since
	Limit       int       // the newest Limit entries; 0 = all
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
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: query audit: %w", err)
	}
	defer rows.Close()
	var out []enforce.AuditEntry
	for rows.Next() {
		var (
			e       enforce.AuditEntry
			verdict string
		)
		if err := rows.Scan(&e.ID, tc(&e.At), &e.DeliveryID, &e.ProjectID, &e.ItemID, &e.IssueNumber, &e.Repo,
			&e.Actor, &e.ActorKind, &e.FromState, &e.ToState, &verdict, &e.Rule, &e.Reason, &e.Cause); err != nil {
			return nil, fmt.Errorf("store: query audit: %w", err)
		}
		e.Verdict = enforce.Verdict(verdict)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: query audit: %w", err)
	}
	if f.Limit > 0 {
		slices.Reverse(out)
	}
	return out, nil
}
