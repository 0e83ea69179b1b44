package store

// The reconciler's snapshot: what its newest walk read of every item of a project (title,
// open, blockers), so the health report needs no GitHub call.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
)

const snapshotCols = `item_id, project_id, repo, issue_number, title, url, open, archived, state, open_blockers, total_blockers, read_at`

// PutSnapshot records items as read at readAt, replacing what was recorded of them before.
// One statement per call: a page of 100 items is one write.
func (s *Store) PutSnapshot(ctx context.Context, projectID string, items []enforce.Item, readAt time.Time) error {
	if len(items) == 0 {
		return nil
	}
	if projectID == "" {
		return fmt.Errorf("store: put snapshot: empty project id")
	}
	const width = 12
	var b strings.Builder
	b.WriteString(`INSERT INTO item_snapshots (` + snapshotCols + `) VALUES `)
	args := make([]any, 0, len(items)*width)
	at := s.t(readAt)
	for i, it := range items {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
		args = append(args, it.ID, projectID, it.Repo, it.Number, it.Title, it.URL, it.Open, it.Archived, it.State,
			it.OpenBlockers, it.Blockers, at)
	}
	b.WriteString(` ON CONFLICT (item_id) DO UPDATE SET project_id = excluded.project_id, repo = excluded.repo,
		issue_number = excluded.issue_number, title = excluded.title, url = excluded.url, open = excluded.open,
		archived = excluded.archived, state = excluded.state, open_blockers = excluded.open_blockers,
		total_blockers = excluded.total_blockers, read_at = excluded.read_at`)
	if _, err := s.exec(ctx, b.String(), args...); err != nil {
		return fmt.Errorf("store: put snapshot of %d items: %w", len(items), err)
	}
	return nil
}

// PruneSnapshot forgets the items of a project read before a time: a walk that read every
// page since did not list them, so they have left the project.
func (s *Store) PruneSnapshot(ctx context.Context, projectID string, before time.Time) error {
	if _, err := s.exec(ctx, `DELETE FROM item_snapshots WHERE project_id = ? AND read_at < ?`, projectID, s.t(before)); err != nil {
		return fmt.Errorf("store: prune snapshot: %w", err)
	}
	return nil
}

// HealthItems calls fn for every item of a project with its record (nil when the store has
// none) and what the reconciler's snapshot read of it (nil when it has not read it), for the
// health report. Only what the report reads is filled: of the record its id, project, repo
// and number, last legal state and when it was reached, lock and last update; of the snapshot
// its id, project, repo, number, title, URL, open, archived, state and blockers.
//
// Two plain scans joined here, not in SQL: on 10,000 items an index lookup per row costs more
// than the scans themselves. Records come in the store's order, then the snapshot's items
// without a record of the project by item id (with the record of a claimed lock that has no
// project yet, if any).
func (s *Store) HealthItems(ctx context.Context, projectID string, fn func(rec *enforce.Record, snap *enforce.Item)) error {
	snaps, err := s.snapshotItems(ctx, projectID)
	if err != nil {
		return err
	}
	rows, err := s.query(ctx, `SELECT item_id, issue_number, repo, last_legal_state, legal_at, lock_holder, lock_since, updated_at
		FROM items WHERE project_id = ?`, projectID)
	if err != nil {
		return fmt.Errorf("store: health items: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		rec := &enforce.Record{ProjectID: projectID}
		if err := rows.Scan(&rec.ItemID, &rec.IssueNumber, &rec.Repo, &rec.LastLegalState, tc(&rec.LegalAt), &rec.LockHolder,
			tc(&rec.LockSince), tc(&rec.UpdatedAt)); err != nil {
			return fmt.Errorf("store: health items: %w", err)
		}
		snap := snaps[rec.ItemID]
		delete(snaps, rec.ItemID)
		fn(rec, snap)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store: health items: %w", err)
	}
	rows.Close()
	for _, id := range slices.Sorted(maps.Keys(snaps)) {
		var rec *enforce.Record
		if r, err := s.GetItem(ctx, id); err == nil {
			rec = &r
		} else if !errors.Is(err, enforce.ErrNotFound) {
			return err
		}
		fn(rec, snaps[id])
	}
	return nil
}

// snapshotItems reads the snapshot of a project's items by item id.
func (s *Store) snapshotItems(ctx context.Context, projectID string) (map[string]*enforce.Item, error) {
	rows, err := s.query(ctx, `SELECT item_id, repo, issue_number, title, url, open, archived, state, open_blockers, total_blockers
		FROM item_snapshots WHERE project_id = ?`, projectID)
	if err != nil {
		return nil, fmt.Errorf("store: snapshot items: %w", err)
	}
	defer rows.Close()
	out := map[string]*enforce.Item{}
	for rows.Next() {
		it := &enforce.Item{ProjectID: projectID}
		if err := rows.Scan(&it.ID, &it.Repo, &it.Number, &it.Title, &it.URL, &it.Open, &it.Archived, &it.State,
			&it.OpenBlockers, &it.Blockers); err != nil {
			return nil, fmt.Errorf("store: snapshot items: %w", err)
		}
		out[it.ID] = it
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: snapshot items: %w", err)
	}
	return out, nil
}
