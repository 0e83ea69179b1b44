package store

// Integration slots: one item per repository being integrated by a serializing worker role
// (docs/AUTOMATION.md, Integration, one item per repository).

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/ralph-gate/ralph-gate/enforce"
)

const slotColumns = `slot_key, item_id, holder, role, repo, issue_number, since`

func scanSlot(row interface{ Scan(...any) error }) (enforce.Slot, error) {
	var sl enforce.Slot
	err := row.Scan(&sl.Key, &sl.ItemID, &sl.Holder, &sl.Role, &sl.Repo, &sl.IssueNumber, timeCol{&sl.Since})
	return sl, err
}

// ClaimSlot takes a slot for sl.ItemID and sl.Holder when it is free (or already theirs) and
// returns the slot as it stands; won is false when another item or holder has it. One of
// several concurrent claimers wins.
func (s *Store) ClaimSlot(ctx context.Context, sl enforce.Slot) (enforce.Slot, bool, error) {
	if sl.Key == "" || sl.ItemID == "" || sl.Holder == "" {
		return enforce.Slot{}, false, fmt.Errorf("store: claim slot: key, item and holder are required (got %q, %q, %q)", sl.Key, sl.ItemID, sl.Holder)
	}
	if _, err := s.exec(ctx, `INSERT INTO integration_slots (`+slotColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (slot_key) DO NOTHING`,
		sl.Key, sl.ItemID, sl.Holder, sl.Role, sl.Repo, sl.IssueNumber, s.t(sl.Since)); err != nil {
		return enforce.Slot{}, false, fmt.Errorf("store: claim slot %q: %w", sl.Key, err)
	}
	held, found, err := s.GetSlot(ctx, sl.Key)
	if err != nil || !found {
		return held, false, err
	}
	return held, held.ItemID == sl.ItemID && held.Holder == sl.Holder, nil
}

// GetSlot returns who holds a slot; found is false when it is free.
func (s *Store) GetSlot(ctx context.Context, key string) (enforce.Slot, bool, error) {
	sl, err := scanSlot(s.queryRow(ctx, `SELECT `+slotColumns+` FROM integration_slots WHERE slot_key = ?`, key))
	if errors.Is(err, sql.ErrNoRows) {
		return enforce.Slot{}, false, nil
	}
	if err != nil {
		return enforce.Slot{}, false, fmt.Errorf("store: get slot %q: %w", key, err)
	}
	return sl, true, nil
}

// ReleaseSlot frees a slot if itemID holds it, and reports whether it did.
func (s *Store) ReleaseSlot(ctx context.Context, key, itemID string) (bool, error) {
	res, err := s.exec(ctx, `DELETE FROM integration_slots WHERE slot_key = ? AND item_id = ?`, key, itemID)
	if err != nil {
		return false, fmt.Errorf("store: release slot %q: %w", key, err)
	}
	return affectedOne(res, "release slot "+key)
}
