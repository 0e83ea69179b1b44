package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
)

// UnexplainedBy lists one actor's refused moves of a card whose explanation is not on GitHub
// yet, on every item, oldest judged first, at most limit (0: all), each with its item's issue
// and last legal state. A storm of one actor's refused moves is explained from it in one
// summary; a refused close or reopen is undone and explained on its own.
func (s *Store) UnexplainedBy(ctx context.Context, actor, projectID string, limit int) ([]enforce.RefusedStep, error) {
	cols := "o." + strings.ReplaceAll(strings.Join(strings.Fields(observationCols), " "), ", ", ", o.")
	q := `SELECT ` + cols + `, COALESCE(i.repo, ''), COALESCE(i.issue_number, 0), COALESCE(i.last_legal_state, '')
		FROM observations o LEFT JOIN items i ON i.item_id = o.item_id
		WHERE o.actor = ? AND o.explained = ? AND o.verdict IN (?, ?) AND o.status = ? AND o.lifecycle = ''
			AND (? = '' OR i.project_id = ?)
		ORDER BY o.judged_at, o.delivery_id`
	args := []any{actor, false, string(enforce.VerdictReverted), string(enforce.VerdictWouldRevert), string(enforce.ObservationJudged), projectID, projectID}
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit)
	}
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: unexplained refused steps of %q: %w", actor, err)
	}
	defer rows.Close()
	var out []enforce.RefusedStep
	for rows.Next() {
		var r enforce.RefusedStep
		var status, verdict string
		o := &r.Observation
		if err := rows.Scan(&o.DeliveryID, &o.ItemID, &o.FromKnown, &o.From, &o.To, &o.Actor, tc(&o.At), tc(&o.ReceivedAt), &status,
			tc(&o.JudgedAt), &verdict, &o.ActorKind, &o.LegalFrom, &o.Rule, &o.Reason, &o.Recovery, &o.Explained, &o.Lifecycle, &o.Field,
			&r.Repo, &r.IssueNumber, &r.LegalNow); err != nil {
			return nil, fmt.Errorf("store: unexplained refused steps of %q: %w", actor, err)
		}
		o.Status, o.Verdict = enforce.ObservationStatus(status), enforce.Verdict(verdict)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: unexplained refused steps of %q: %w", actor, err)
	}
	return out, nil
}

// CountRefusedBy counts one actor's refused steps judged at or after since, on every item.
func (s *Store) CountRefusedBy(ctx context.Context, actor, projectID string, since time.Time) (int, error) {
	var n int
	err := s.queryRow(ctx, `SELECT COUNT(*) FROM observations o LEFT JOIN items i ON i.item_id = o.item_id
		WHERE o.actor = ? AND o.judged_at >= ? AND o.verdict IN (?, ?) AND o.status = ? AND (? = '' OR i.project_id = ?)`,
		actor, s.t(since.UTC()), string(enforce.VerdictReverted), string(enforce.VerdictWouldRevert), string(enforce.ObservationJudged),
		projectID, projectID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("store: count refused steps of %q: %w", actor, err)
	}
	return n, nil
}
