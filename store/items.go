package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
)

// writesJSON is a record's list of writes as stored ("" when empty).
func writesJSON(ws []enforce.Write) (string, error) {
	if len(ws) == 0 {
		return "", nil
	}
	b, err := json.Marshal(ws)
	return string(b), err
}

// fieldsJSON is a record's required field values as stored ("" when none is known).
func fieldsJSON(fields map[string]enforce.FieldValue) (string, error) {
	if len(fields) == 0 {
		return "", nil
	}
	b, err := json.Marshal(fields)
	if err != nil {
		return "", fmt.Errorf("required fields: %w", err)
	}
	return string(b), nil
}

const itemCols = `item_id, project_id, issue_number, repo, last_legal_state, legal_at, rejected_state,
	observed_state, observed_at, gap_since, automate_state, revert_pending, provisional, provisional_over, provisional_for,
	provisional_at, lock_holder, lock_since, lock_taken_from, fields, wrote_over, raced_write, updated_at, version`

func scanItem(row interface{ Scan(...any) error }) (enforce.Record, error) {
	var it enforce.Record
	var fields, wroteOver, raced string
	err := row.Scan(&it.ItemID, &it.ProjectID, &it.IssueNumber, &it.Repo, &it.LastLegalState,
		tc(&it.LegalAt), &it.RejectedState, &it.ObservedState, tc(&it.ObservedAt), tc(&it.GapSince), &it.AutomateState, &it.RevertPending,
		&it.Provisional, &it.ProvisionalOver, &it.ProvisionalFor, tc(&it.ProvisionalAt), &it.LockHolder, tc(&it.LockSince), &it.LockTakenFrom,
		&fields, &wroteOver, &raced, tc(&it.UpdatedAt), &it.Version)
	if err == nil && fields != "" {
		if jerr := json.Unmarshal([]byte(fields), &it.Fields); jerr != nil {
			return it, fmt.Errorf("item %q: required fields: %w", it.ItemID, jerr)
		}
	}
	if err == nil && wroteOver != "" {
		if jerr := json.Unmarshal([]byte(wroteOver), &it.Writes); jerr != nil {
			return it, fmt.Errorf("item %q: the writes: %w", it.ItemID, jerr)
		}
	}
	if err == nil && raced != "" {
		if jerr := json.Unmarshal([]byte(raced), &it.Raced); jerr != nil {
			return it, fmt.Errorf("item %q: the raced writes: %w", it.ItemID, jerr)
		}
	}
	return it, err
}

// GetItem returns the stored state of an item, or enforce.ErrNotFound.
func (s *Store) GetItem(ctx context.Context, itemID string) (enforce.Record, error) {
	it, err := scanItem(s.queryRow(ctx, `SELECT `+itemCols+` FROM items WHERE item_id = ?`, itemID))
	if errors.Is(err, sql.ErrNoRows) {
		return enforce.Record{}, fmt.Errorf("store: item %q: %w", itemID, enforce.ErrNotFound)
	}
	if err != nil {
		return enforce.Record{}, fmt.Errorf("store: get item %q: %w", itemID, err)
	}
	return it, nil
}

// ItemVersions returns the record versions of the given items that have a record, in one
// query (JudgeWaiting reads them before it reads the items from GitHub).
func (s *Store) ItemVersions(ctx context.Context, itemIDs []string) (map[string]int64, error) {
	out := make(map[string]int64, len(itemIDs))
	for len(itemIDs) > 0 {
		n := min(len(itemIDs), 100)
		args := make([]any, n)
		for i, id := range itemIDs[:n] {
			args[i] = id
		}
		itemIDs = itemIDs[n:]
		rows, err := s.query(ctx, `SELECT item_id, version FROM items WHERE item_id IN (?`+strings.Repeat(", ?", n-1)+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("store: item versions: %w", err)
		}
		for rows.Next() {
			var id string
			var v int64
			if err := rows.Scan(&id, &v); err != nil {
				rows.Close()
				return nil, fmt.Errorf("store: item versions: %w", err)
			}
			out[id] = v
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("store: item versions: %w", err)
		}
	}
	return out, nil
}

// ListItems returns the items of a project ordered by item id (all items when
// projectID is empty).
func (s *Store) ListItems(ctx context.Context, projectID string) ([]enforce.Record, error) {
	q, args := `SELECT `+itemCols+` FROM items ORDER BY item_id`, []any(nil)
	if projectID != "" {
		q, args = `SELECT `+itemCols+` FROM items WHERE project_id = ? ORDER BY item_id`, []any{projectID}
	}
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: list items: %w", err)
	}
	defer rows.Close()
	var out []enforce.Record
	for rows.Next() {
		it, err := scanItem(rows)
		if err != nil {
			return nil, fmt.Errorf("store: list items: %w", err)
		}
		out = append(out, it)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list items: %w", err)
	}
	return out, nil
}

func checkItem(it enforce.Record) error {
	if it.ItemID == "" {
		return errors.New("store: item id is empty")
	}
	if it.LockHolder == "" && !it.LockSince.IsZero() {
		return fmt.Errorf("store: item %q: lock since set without a holder", it.ItemID)
	}
	return nil
}

// lockSince is the stored lock time: now when a holder has none.
func lockSince(it enforce.Record, now time.Time) time.Time {
	if it.LockHolder == "" {
		return time.Time{}
	}
	if it.LockSince.IsZero() {
		return now
	}
	return it.LockSince
}

// CompareAndSetItem writes item only if the stored version equals
// expectedVersion, and reports whether it did. expectedVersion 0 means "only
// if the item does not exist yet". On success the stored version is
// expectedVersion+1. Of several concurrent writers with the same expected
// version exactly one wins.
func (s *Store) CompareAndSetItem(ctx context.Context, item enforce.Record, expectedVersion int64) (bool, error) {
	if err := checkItem(item); err != nil {
		return false, err
	}
	if expectedVersion < 0 {
		return false, fmt.Errorf("store: compare-and-set item %q: negative expected version %d", item.ItemID, expectedVersion)
	}
	now := nowUTC(item.UpdatedAt)
	fields, err := fieldsJSON(item.Fields)
	if err != nil {
		return false, fmt.Errorf("store: compare-and-set item %q: %w", item.ItemID, err)
	}
	wroteOver, err := writesJSON(item.Writes)
	if err != nil {
		return false, fmt.Errorf("store: compare-and-set item %q: the writes: %w", item.ItemID, err)
	}
	raced, err := writesJSON(item.Raced)
	if err != nil {
		return false, fmt.Errorf("store: compare-and-set item %q: the raced writes: %w", item.ItemID, err)
	}
	var res sql.Result
	if expectedVersion == 0 {
		res, err = s.exec(ctx, `INSERT INTO items (`+itemCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)
			ON CONFLICT (item_id) DO NOTHING`,
			item.ItemID, item.ProjectID, item.IssueNumber, item.Repo, item.LastLegalState,
			s.t(item.LegalAt), item.RejectedState, item.ObservedState, s.t(item.ObservedAt), s.t(item.GapSince), item.AutomateState, item.RevertPending,
			item.Provisional, item.ProvisionalOver, item.ProvisionalFor, s.t(item.ProvisionalAt), item.LockHolder, s.t(lockSince(item, now)), item.LockTakenFrom, fields, wroteOver, raced, s.t(now))
	} else {
		res, err = s.exec(ctx, `UPDATE items SET
				project_id = ?, issue_number = ?, repo = ?, last_legal_state = ?,
				legal_at = ?, rejected_state = ?, observed_state = ?, observed_at = ?, gap_since = ?, automate_state = ?, revert_pending = ?,
				provisional = ?, provisional_over = ?, provisional_for = ?, provisional_at = ?, lock_holder = ?, lock_since = ?, lock_taken_from = ?, fields = ?, wrote_over = ?, raced_write = ?, updated_at = ?, version = version + 1
			WHERE item_id = ? AND version = ?`,
			item.ProjectID, item.IssueNumber, item.Repo, item.LastLegalState,
			s.t(item.LegalAt), item.RejectedState, item.ObservedState, s.t(item.ObservedAt), s.t(item.GapSince), item.AutomateState, item.RevertPending,
			item.Provisional, item.ProvisionalOver, item.ProvisionalFor, s.t(item.ProvisionalAt), item.LockHolder, s.t(lockSince(item, now)), item.LockTakenFrom, fields, wroteOver, raced, s.t(now), item.ItemID, expectedVersion)
	}
	if err != nil {
		return false, fmt.Errorf("store: compare-and-set item %q: %w", item.ItemID, err)
	}
	return affectedOne(res, "compare-and-set item "+item.ItemID)
}

// ClaimLock makes holder the lock holder of an item if it has none (or
// already is holder, which keeps the original lock time) and reports whether
// holder now holds it. An item the store has not seen yet is created with
// just the lock. Of several concurrent claimers exactly one wins.
func (s *Store) ClaimLock(ctx context.Context, itemID, holder string, now time.Time) (bool, error) {
	if itemID == "" || holder == "" {
		return false, fmt.Errorf("store: claim lock: item id and holder are required (got %q, %q)", itemID, holder)
	}
	now = nowUTC(now)
	res, err := s.exec(ctx, `INSERT INTO items (item_id, lock_holder, lock_since, updated_at, version)
		VALUES (?, ?, ?, ?, 1)
		ON CONFLICT (item_id) DO UPDATE SET
			lock_since = CASE WHEN items.lock_holder = excluded.lock_holder THEN items.lock_since ELSE excluded.lock_since END,
			lock_taken_from = CASE WHEN items.lock_holder = excluded.lock_holder THEN items.lock_taken_from ELSE '' END,
			lock_holder = excluded.lock_holder,
			updated_at = excluded.updated_at,
			version = items.version + 1
		WHERE items.lock_holder = '' OR items.lock_holder = excluded.lock_holder`,
		itemID, holder, s.t(now), s.t(now))
	if err != nil {
		return false, fmt.Errorf("store: claim lock on %q for %q: %w", itemID, holder, err)
	}
	return affectedOne(res, "claim lock on "+itemID)
}

// ReleaseLock clears an item's lock if holder holds it (any holder when
// holder is empty) and reports whether a lock was cleared.
func (s *Store) ReleaseLock(ctx context.Context, itemID, holder string, now time.Time) (bool, error) {
	now = nowUTC(now)
	res, err := s.exec(ctx, `UPDATE items SET lock_holder = '', lock_since = NULL, lock_taken_from = '', updated_at = ?, version = version + 1
		WHERE item_id = ? AND lock_holder <> '' AND (CAST(? AS TEXT) = '' OR lock_holder = ?)`,
		s.t(now), itemID, holder, holder)
	if err != nil {
		return false, fmt.Errorf("store: release lock on %q: %w", itemID, err)
	}
	return affectedOne(res, "release lock on "+itemID)
}

// pruned is how many rows a pruning statement removed.
func pruned(res sql.Result, err error, what string) (int64, error) {
	if err != nil {
		return 0, fmt.Errorf("store: prune %s: %w", what, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("store: prune %s: %w", what, err)
	}
	return n, nil
}

func affectedOne(res sql.Result, what string) (bool, error) {
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("store: %s: rows affected: %w", what, err)
	}
	return n == 1, nil
}

// CountInState counts the items of a project whose last legal state is state (WIP limits).
func (s *Store) CountInState(ctx context.Context, projectID, state string) (int, error) {
	var n int
	err := s.queryRow(ctx, `SELECT COUNT(*) FROM items WHERE project_id = ? AND last_legal_state = ?`, projectID, state).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("store: count items in %q: %w", state, err)
	}
	return n, nil
}
