package store

// Every change of an organization's policy file that ralph-gate took in or refused, with who
// pushed it (docs/SECURITY.md "Who may change an organization's policy"; ralph-gate audit
// --policy).

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// The outcomes of a policy change.
const (
	// PolicyInForce: the change was put in force.
	PolicyInForce = "in_force"
	// PolicyRefused: the change was refused (its pusher may not change the policy, or the
	// file has problems); the policy in force stays.
	PolicyRefused = "refused"
	// PolicyNotNewer: a valid change older than the policy in force (a push delivered late).
	PolicyNotNewer = "not_newer"
	// PolicyUnchanged: the file is the policy in force.
	PolicyUnchanged = "unchanged"
)

// PolicyChange is one push of an organization's policy file and what ralph-gate did with it.
type PolicyChange struct {
	ID      int64
	Owner   string
	SHA     string // the commit
	Pusher  string // who pushed it ("" for the file found at the first read)
	At      time.Time
	Outcome string // PolicyInForce, PolicyRefused, PolicyNotNewer, PolicyUnchanged
	// Reason says why (the problems, or who may change the policy), Summary what the change
	// changes, or would have changed, against the policy in force.
	Reason  string
	Summary string
}

// RecordPolicyChange appends a policy change to the organization's record.
func (s *Store) RecordPolicyChange(ctx context.Context, c PolicyChange) error {
	if c.Owner == "" || c.Outcome == "" {
		return errors.New("store: record a policy change: the owner and the outcome are required")
	}
	_, err := s.exec(ctx, `INSERT INTO policy_changes (owner, sha, pusher, at, outcome, reason, summary) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		strings.ToLower(c.Owner), c.SHA, c.Pusher, s.t(c.At), c.Outcome, c.Reason, c.Summary)
	if err != nil {
		return fmt.Errorf("store: record a policy change of %s: %w", c.Owner, err)
	}
	return nil
}

// PolicyChangeFilter selects policy changes: of one organization ("" every one), at or after
// a time, the newest Limit (0: all).
type PolicyChangeFilter struct {
	Owner string
	Since time.Time
	Limit int
}

// PolicyChanges lists policy changes, oldest first.
func (s *Store) PolicyChanges(ctx context.Context, f PolicyChangeFilter) ([]PolicyChange, error) {
	q := `SELECT id, owner, sha, pusher, at, outcome, reason, summary FROM policy_changes WHERE 1 = 1`
	var args []any
	if f.Owner != "" {
		q += ` AND owner = ?`
		args = append(args, strings.ToLower(f.Owner))
	}
	if !f.Since.IsZero() {
		q += ` AND at >= ?`
		args = append(args, s.t(f.Since))
	}
	q += ` ORDER BY id DESC`
	if f.Limit > 0 {
		q += fmt.Sprintf(` LIMIT %d`, f.Limit)
	}
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: list policy changes: %w", err)
	}
	defer rows.Close()
	var out []PolicyChange
	for rows.Next() {
		var c PolicyChange
		if err := rows.Scan(&c.ID, &c.Owner, &c.SHA, &c.Pusher, timeCol{&c.At}, &c.Outcome, &c.Reason, &c.Summary); err != nil {
			return nil, fmt.Errorf("store: list policy changes: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list policy changes: %w", err)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}
