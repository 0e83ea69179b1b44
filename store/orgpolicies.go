package store

// Each organization's policy, read from its own repository (docs/CONFIGURATION.md "Policy in
// the organization's repository"): the last valid file is kept, so that a restart enforces it
// before GitHub is read again, and a refused push never replaces it.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// OrgPolicy is an organization's policy in force, and the newest push that was refused.
type OrgPolicy struct {
	Owner          string
	InstallationID int64
	// SHA is the commit the policy in force was read from; Text is the file's text.
	SHA      string
	Text     string
	LoadedAt time.Time
	// Pusher is who pushed it ("" when it was the file found at the first read: the App's
	// installation or the deployment's first start).
	Pusher string
	// RefusedSHA is the newest commit whose file was refused ("" none since the policy in
	// force), when and why (the problems, one per line).
	RefusedSHA string
	RefusedAt  time.Time
	RefusedWhy string
}

const orgPolicyColumns = `owner, installation_id, sha, text, loaded_at, refused_sha, refused_at, refused_why, pusher`

func scanOrgPolicy(row interface{ Scan(...any) error }) (OrgPolicy, error) {
	var p OrgPolicy
	err := row.Scan(&p.Owner, &p.InstallationID, &p.SHA, &p.Text, timeCol{&p.LoadedAt}, &p.RefusedSHA, timeCol{&p.RefusedAt}, &p.RefusedWhy, &p.Pusher)
	return p, err
}

// PutOrgPolicy makes p the organization's policy in force (a valid file), forgetting any push
// refused before it.
func (s *Store) PutOrgPolicy(ctx context.Context, p OrgPolicy) error {
	if p.Owner == "" {
		return errors.New("store: put org policy: the owner is required")
	}
	_, err := s.exec(ctx, `INSERT INTO org_policies (`+orgPolicyColumns+`) VALUES (?, ?, ?, ?, ?, '', NULL, '', ?)
		ON CONFLICT (owner) DO UPDATE SET installation_id = excluded.installation_id, sha = excluded.sha, text = excluded.text,
			loaded_at = excluded.loaded_at, refused_sha = '', refused_at = NULL, refused_why = '', pusher = excluded.pusher`,
		strings.ToLower(p.Owner), p.InstallationID, p.SHA, p.Text, s.t(p.LoadedAt), p.Pusher)
	if err != nil {
		return fmt.Errorf("store: put the policy of %s: %w", p.Owner, err)
	}
	return nil
}

// ReplaceOrgPolicy makes p the organization's policy in force only while prevSHA is (""
// none: no policy in force, whether or not a refusal is recorded): false, and nothing written,
// when another policy was put in force meanwhile (another replica), or the organization was
// forgotten meanwhile (uninstalled) while prevSHA was in force.
func (s *Store) ReplaceOrgPolicy(ctx context.Context, p OrgPolicy, prevSHA string) (bool, error) {
	if p.Owner == "" {
		return false, errors.New("store: replace org policy: the owner is required")
	}
	var res sql.Result
	var err error
	if prevSHA != "" {
		res, err = s.exec(ctx, `UPDATE org_policies SET installation_id = ?, sha = ?, text = ?, loaded_at = ?, refused_sha = '', refused_at = NULL,
			refused_why = '', pusher = ? WHERE owner = ? AND sha = ?`,
			p.InstallationID, p.SHA, p.Text, s.t(p.LoadedAt), p.Pusher, strings.ToLower(p.Owner), prevSHA)
	} else {
		res, err = s.exec(ctx, `INSERT INTO org_policies (`+orgPolicyColumns+`) VALUES (?, ?, ?, ?, ?, '', NULL, '', ?)
			ON CONFLICT (owner) DO UPDATE SET installation_id = excluded.installation_id, sha = excluded.sha, text = excluded.text,
				loaded_at = excluded.loaded_at, refused_sha = '', refused_at = NULL, refused_why = '', pusher = excluded.pusher
			WHERE org_policies.sha = ''`,
			strings.ToLower(p.Owner), p.InstallationID, p.SHA, p.Text, s.t(p.LoadedAt), p.Pusher)
	}
	if err != nil {
		return false, fmt.Errorf("store: put the policy of %s: %w", p.Owner, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("store: put the policy of %s: %w", p.Owner, err)
	}
	return n > 0, nil
}

// ConcludePolicyChange records a push of an organization's policy file and, in the same
// transaction, what it does to the policy: put (when not nil) in force while prevSHA is in
// force (ReplaceOrgPolicy; false and nothing written otherwise), or, for a refused change,
// the refusal beside the policy in force (RefuseOrgPolicy).
func (s *Store) ConcludePolicyChange(ctx context.Context, c PolicyChange, put *OrgPolicy, prevSHA string, installationID int64) (bool, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("store: conclude a policy change of %s: begin: %w", c.Owner, err)
	}
	in := s.inTx(tx)
	ok := true
	switch {
	case put != nil:
		ok, err = in.ReplaceOrgPolicy(ctx, *put, prevSHA)
	case c.Outcome == PolicyRefused:
		err = in.RefuseOrgPolicy(ctx, c.Owner, installationID, c.SHA, c.Reason, c.At)
	}
	if err == nil && ok {
		err = in.RecordPolicyChange(ctx, c)
	}
	if err != nil || !ok {
		_ = tx.Rollback()
		return false, err
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("store: conclude a policy change of %s: %w", c.Owner, err)
	}
	return true, nil
}

// HasPolicyRecord reports whether anything of an organization's policy was ever recorded: a
// policy in force, a refusal, or a change (an organization read for the first time has none).
func (s *Store) HasPolicyRecord(ctx context.Context, owner string) (bool, error) {
	var n int
	err := s.queryRow(ctx, `SELECT (SELECT COUNT(*) FROM org_policies WHERE owner = ?) + (SELECT COUNT(*) FROM policy_changes WHERE owner = ?)`,
		strings.ToLower(owner), strings.ToLower(owner)).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("store: the policy record of %s: %w", owner, err)
	}
	return n > 0, nil
}

// RefuseOrgPolicy records a push whose file was refused: the policy in force stays.
func (s *Store) RefuseOrgPolicy(ctx context.Context, owner string, installationID int64, sha, why string, at time.Time) error {
	_, err := s.exec(ctx, `INSERT INTO org_policies (`+orgPolicyColumns+`) VALUES (?, ?, '', '', NULL, ?, ?, ?, '')
		ON CONFLICT (owner) DO UPDATE SET installation_id = excluded.installation_id, refused_sha = excluded.refused_sha,
			refused_at = excluded.refused_at, refused_why = excluded.refused_why`,
		strings.ToLower(owner), installationID, sha, s.t(at), why)
	if err != nil {
		return fmt.Errorf("store: record the refused policy of %s: %w", owner, err)
	}
	return nil
}

// OrgPolicies lists every organization's policy, by owner.
func (s *Store) OrgPolicies(ctx context.Context) ([]OrgPolicy, error) {
	rows, err := s.query(ctx, `SELECT `+orgPolicyColumns+` FROM org_policies ORDER BY owner`)
	if err != nil {
		return nil, fmt.Errorf("store: list org policies: %w", err)
	}
	defer rows.Close()
	var out []OrgPolicy
	for rows.Next() {
		p, err := scanOrgPolicy(rows)
		if err != nil {
			return nil, fmt.Errorf("store: list org policies: %w", err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// GetOrgPolicy is one organization's policy; found is false when none was ever read.
func (s *Store) GetOrgPolicy(ctx context.Context, owner string) (OrgPolicy, bool, error) {
	p, err := scanOrgPolicy(s.queryRow(ctx, `SELECT `+orgPolicyColumns+` FROM org_policies WHERE owner = ?`, strings.ToLower(owner)))
	if errors.Is(err, sql.ErrNoRows) {
		return OrgPolicy{}, false, nil
	}
	if err != nil {
		return OrgPolicy{}, false, fmt.Errorf("store: get the policy of %s: %w", owner, err)
	}
	return p, true, nil
}

// ForgetOrgPolicy drops an organization's policy (its installation was deleted).
func (s *Store) ForgetOrgPolicy(ctx context.Context, owner string) error {
	if _, err := s.exec(ctx, `DELETE FROM org_policies WHERE owner = ?`, strings.ToLower(owner)); err != nil {
		return fmt.Errorf("store: forget the policy of %s: %w", owner, err)
	}
	return nil
}

// orgPolicyChannel is the PostgreSQL channel a replica that changes an organization's policy
// notifies the others on (the payload is the owner).
const orgPolicyChannel = "ralph_gate_org_policy"

// NotifyOrgPolicy tells the other replicas that an organization's policy changed (PostgreSQL
// NOTIFY; with SQLite there is one replica, and nothing to tell).
func (s *Store) NotifyOrgPolicy(ctx context.Context, owner string) error {
	if s.driver != DriverPostgres {
		return nil
	}
	if _, err := s.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, orgPolicyChannel, strings.ToLower(owner)); err != nil {
		return fmt.Errorf("store: notify the policy of %s: %w", owner, err)
	}
	return nil
}

// ListenOrgPolicies calls listening once it listens, then changed with the owner of every
// policy another replica changes (NotifyOrgPolicy), woken by PostgreSQL, until ctx ends (nil)
// or the connection fails. listening reads every policy: a change made before the listening
// began is not missed. With SQLite it calls listening and waits for ctx.
func (s *Store) ListenOrgPolicies(ctx context.Context, listening func(), changed func(owner string)) error {
	if s.driver != DriverPostgres {
		listening()
		<-ctx.Done()
		return nil
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("store: listen for policies: %w", err)
	}
	// The connection is subscribed: it never goes back to the pool.
	raw := conn.Hijack()
	defer raw.Close(context.WithoutCancel(ctx))
	if _, err := raw.Exec(ctx, `LISTEN `+orgPolicyChannel); err != nil {
		return fmt.Errorf("store: listen for policies: %w", err)
	}
	listening()
	for {
		n, err := raw.WaitForNotification(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("store: listen for policies: %w", err)
		}
		changed(n.Payload)
	}
}
