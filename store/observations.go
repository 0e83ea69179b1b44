package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
)

const observationCols = `delivery_id, item_id, from_known, from_state, to_state, actor, at, received_at, status,
	judged_at, verdict, actor_kind, legal_from, rule, reason, recovery, explained, lifecycle, field`

func scanObservation(row interface{ Scan(...any) error }) (enforce.Observation, error) {
	var o enforce.Observation
	var status, verdict string
	err := row.Scan(&o.DeliveryID, &o.ItemID, &o.FromKnown, &o.From, &o.To, &o.Actor, tc(&o.At), tc(&o.ReceivedAt), &status,
		tc(&o.JudgedAt), &verdict, &o.ActorKind, &o.LegalFrom, &o.Rule, &o.Reason, &o.Recovery, &o.Explained, &o.Lifecycle, &o.Field)
	o.Status, o.Verdict = enforce.ObservationStatus(status), enforce.Verdict(verdict)
	return o, err
}

// RecordObservation stores a reported change as pending unless its delivery is already
// recorded (a duplicate or a redelivery), and reports whether it was new.
func (s *Store) RecordObservation(ctx context.Context, o enforce.Observation) (bool, error) {
	if o.DeliveryID == "" || o.ItemID == "" {
		return false, errors.New("store: record observation: delivery id and item id are required")
	}
	res, err := s.exec(ctx, `INSERT INTO observations (delivery_id, item_id, from_known, from_state, to_state, actor, at, received_at, status, lifecycle, reason, field)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (delivery_id) DO NOTHING`,
		o.DeliveryID, o.ItemID, o.FromKnown, o.From, o.To, o.Actor, s.t(nowUTC(o.At)), s.t(nowUTC(o.ReceivedAt)), string(enforce.ObservationPending),
		o.Lifecycle, o.Reason, o.Field)
	if err != nil {
		return false, fmt.Errorf("store: record observation %q: %w", o.DeliveryID, err)
	}
	return affectedOne(res, "record observation "+o.DeliveryID)
}

// RecordEvent records a lifecycle event's reports of its items as pending and settles the
// event's report of its issue (recorded at intake), in one transaction: all or none (a retry of
// the event finds every item it concerns, or reads them again).
func (s *Store) RecordEvent(ctx context.Context, delivery string, reports []enforce.Observation) error {
	if s.tx {
		return s.recordEvent(ctx, delivery, reports)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: record event: begin: %w", err)
	}
	if err := s.inTx(tx).recordEvent(ctx, delivery, reports); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: record event: %w", err)
	}
	return nil
}

func (s *Store) recordEvent(ctx context.Context, delivery string, reports []enforce.Observation) error {
	for _, o := range reports {
		if _, err := s.RecordObservation(ctx, o); err != nil {
			return err
		}
	}
	if _, err := s.exec(ctx, `UPDATE observations SET status = ?, verdict = ?, reason = ? WHERE delivery_id = ? AND status = ?`,
		string(enforce.ObservationIgnored), string(enforce.VerdictIgnored), "recorded for its items", delivery,
		string(enforce.ObservationPending)); err != nil {
		return fmt.Errorf("store: settle event %q: %w", delivery, err)
	}
	return nil
}

// EventReports lists the reports a lifecycle event's delivery recorded, one per item
// ("<delivery>#<item id>"), in delivery id order.
func (s *Store) EventReports(ctx context.Context, delivery string) ([]enforce.Observation, error) {
	prefix := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(delivery) + "#%"
	return s.observations(ctx, `WHERE delivery_id LIKE ? ESCAPE '\' ORDER BY delivery_id`, prefix)
}

// PendingObservations lists an item's reports not judged yet, in the order they arrived.
func (s *Store) PendingObservations(ctx context.Context, itemID string) ([]enforce.Observation, error) {
	return s.observations(ctx, `WHERE item_id = ? AND status = ? ORDER BY received_at, delivery_id`, itemID, string(enforce.ObservationPending))
}

// Unexplained lists an item's refused steps whose explanation is not on GitHub yet, oldest first.
func (s *Store) Unexplained(ctx context.Context, itemID string) ([]enforce.Observation, error) {
	return s.observations(ctx, `WHERE item_id = ? AND status = ? AND verdict IN (?, ?) AND explained = ? ORDER BY at, judged_at, delivery_id`,
		itemID, string(enforce.ObservationJudged), string(enforce.VerdictReverted), string(enforce.VerdictWouldRevert), false)
}

// GetObservation returns one recorded report, or enforce.ErrNotFound.
func (s *Store) GetObservation(ctx context.Context, deliveryID string) (enforce.Observation, error) {
	o, err := scanObservation(s.queryRow(ctx, `SELECT `+observationCols+` FROM observations WHERE delivery_id = ?`, deliveryID))
	if errors.Is(err, sql.ErrNoRows) {
		return enforce.Observation{}, fmt.Errorf("store: observation %q: %w", deliveryID, enforce.ErrNotFound)
	}
	if err != nil {
		return enforce.Observation{}, fmt.Errorf("store: get observation %q: %w", deliveryID, err)
	}
	return o, nil
}

func (s *Store) observations(ctx context.Context, where string, args ...any) ([]enforce.Observation, error) {
	rows, err := s.query(ctx, `SELECT `+observationCols+` FROM observations `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("store: list observations: %w", err)
	}
	defer rows.Close()
	var out []enforce.Observation
	for rows.Next() {
		o, err := scanObservation(rows)
		if err != nil {
			return nil, fmt.Errorf("store: list observations: %w", err)
		}
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list observations: %w", err)
	}
	return out, nil
}

// MarkExplained records that a refused step's explanation is on GitHub.
func (s *Store) MarkExplained(ctx context.Context, deliveryID string) error {
	if _, err := s.exec(ctx, `UPDATE observations SET explained = ? WHERE delivery_id = ?`, true, deliveryID); err != nil {
		return fmt.Errorf("store: mark %q explained: %w", deliveryID, err)
	}
	return nil
}

// CommitStep writes a step in one transaction if the item is still at ExpectedVersion, and
// reports whether it did. A retried job therefore never judges one report twice.
func (s *Store) CommitStep(ctx context.Context, st enforce.Step) (bool, error) {
	if s.tx {
		return s.commitStep(ctx, st)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("store: commit step: begin: %w", err)
	}
	ok, err := s.inTx(tx).commitStep(ctx, st)
	if err != nil || !ok {
		_ = tx.Rollback()
		return ok, err
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("store: commit step: %w", err)
	}
	return true, nil
}

func (s *Store) commitStep(ctx context.Context, st enforce.Step) (bool, error) {
	ok, err := s.CompareAndSetItem(ctx, st.Record, st.ExpectedVersion)
	if err != nil || !ok {
		return ok, err
	}
	if o := st.Observation; o != nil {
		if o.Status == "" {
			o.Status = enforce.ObservationJudged
		}
		_, err := s.exec(ctx, `INSERT INTO observations (`+observationCols+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (delivery_id) DO UPDATE SET status = excluded.status, to_state = excluded.to_state, judged_at = excluded.judged_at,
				verdict = excluded.verdict, actor_kind = excluded.actor_kind, legal_from = excluded.legal_from,
				rule = excluded.rule, reason = excluded.reason, recovery = excluded.recovery, explained = excluded.explained`,
			o.DeliveryID, o.ItemID, o.FromKnown, o.From, o.To, o.Actor, s.t(nowUTC(o.At)), s.t(nowUTC(o.ReceivedAt)), string(o.Status),
			s.t(nowUTC(o.JudgedAt)), string(o.Verdict), o.ActorKind, o.LegalFrom, o.Rule, o.Reason, o.Recovery, o.Explained, o.Lifecycle, o.Field)
		if err != nil {
			return false, fmt.Errorf("store: commit step: observation %q: %w", o.DeliveryID, err)
		}
	}
	if st.Audit != nil {
		if _, err := s.AppendAudit(ctx, *st.Audit); err != nil {
			return false, err
		}
	}
	return true, nil
}

// PruneObservations forgets reports judged before cutoff (GitHub redelivers for three days;
// a report older than its item's history is stale anyway) and returns how many it removed.
func (s *Store) PruneObservations(ctx context.Context, cutoff time.Time) (int64, error) {
	res, err := s.exec(ctx, `DELETE FROM observations WHERE status <> ? AND received_at < ?`, string(enforce.ObservationPending), s.t(cutoff))
	return pruned(res, err, "observations")
}

// PendingItemsBefore lists the items other than except whose history before t is not settled
// yet, at most 500: a report made before t by anyone but exceptActor (the app: its own writes'
// reports are no change of anyone's) not judged yet, or the automation of a step made by t (its
// second included: automation follows its cause at once) not run yet.
func (s *Store) PendingItemsBefore(ctx context.Context, t time.Time, except, exceptActor string) ([]string, error) {
	at := s.t(nowUTC(t))
	rows, err := s.query(ctx, `SELECT item_id FROM (
			SELECT DISTINCT item_id FROM observations WHERE status = ? AND at < ? AND item_id <> ? AND actor <> ?
			UNION SELECT item_id FROM items WHERE automate_state <> '' AND legal_at <= ? AND item_id <> ?
		) AS unsettled LIMIT 500`, string(enforce.ObservationPending), at, except, exceptActor, at, except)
	if err != nil {
		return nil, fmt.Errorf("store: items with pending reports: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("store: items with pending reports: %w", err)
		}
		out = append(out, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: items with pending reports: %w", err)
	}
	return out, nil
}

// LaterEvent reports whether the item's history has a close or a reopen after o: one waiting
// to be judged made at o's second or later, or one judged made later, or of the same second and
// judged after o.
func (s *Store) LaterEvent(ctx context.Context, o enforce.Observation) (bool, error) {
	var n int
	at, judged := s.t(nowUTC(o.At)), s.t(nowUTC(o.JudgedAt))
	if err := s.queryRow(ctx, `SELECT COUNT(*) FROM observations WHERE item_id = ? AND lifecycle IN (?, ?) AND delivery_id <> ?
		AND ((status = ? AND at >= ?) OR at > ? OR (status <> ? AND at = ? AND judged_at > ?))`,
		o.ItemID, enforce.LifecycleIssueClosed, enforce.LifecycleIssueReopened, o.DeliveryID,
		string(enforce.ObservationPending), at, at, string(enforce.ObservationPending), at, judged).Scan(&n); err != nil {
		return false, fmt.Errorf("store: later lifecycle events of %q: %w", o.ItemID, err)
	}
	return n > 0, nil
}

// LastEvent is the item's last close or reopen taken into its history (judged or ignored), by
// time and then by when it was judged.
func (s *Store) LastEvent(ctx context.Context, itemID string) (enforce.Observation, bool, error) {
	o, err := scanObservation(s.queryRow(ctx, `SELECT `+observationCols+` FROM observations WHERE item_id = ? AND lifecycle IN (?, ?)
		AND status <> ? ORDER BY at DESC, judged_at DESC, delivery_id DESC LIMIT 1`,
		itemID, enforce.LifecycleIssueClosed, enforce.LifecycleIssueReopened, string(enforce.ObservationPending)))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return enforce.Observation{}, false, nil
	case err != nil:
		return enforce.Observation{}, false, fmt.Errorf("store: last lifecycle event of %q: %w", itemID, err)
	}
	return o, true, nil
}

// AutomatedCauses lists the causes (reasons) of the item's automated moves of the app's into
// `to` dated `at` (the time of their cause).
func (s *Store) AutomatedCauses(ctx context.Context, itemID, to string, at time.Time) ([]string, error) {
	rows, err := s.query(ctx, `SELECT reason FROM observations WHERE item_id = ? AND status = ? AND verdict = ? AND to_state = ? AND at = ?`,
		itemID, string(enforce.ObservationJudged), string(enforce.VerdictAutomated), to, s.t(nowUTC(at)))
	if err != nil {
		return nil, fmt.Errorf("store: automated moves of %q: %w", itemID, err)
	}
	defer rows.Close()
	var causes []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, fmt.Errorf("store: automated moves of %q: %w", itemID, err)
		}
		causes = append(causes, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: automated moves of %q: %w", itemID, err)
	}
	return causes, nil
}

// FieldEdits lists an item's judged edits of required fields made at or after since, in the
// order its history took them in (the values they left from say what each field was before).
func (s *Store) FieldEdits(ctx context.Context, itemID string, since time.Time) ([]enforce.Observation, error) {
	rows, err := s.query(ctx, `SELECT `+observationCols+` FROM observations WHERE item_id = ? AND field <> '' AND status = ? AND at >= ?
		ORDER BY at, judged_at, delivery_id`, itemID, string(enforce.ObservationJudged), s.t(nowUTC(since)))
	if err != nil {
		return nil, fmt.Errorf("store: field edits of %q: %w", itemID, err)
	}
	defer rows.Close()
	var out []enforce.Observation
	for rows.Next() {
		o, err := scanObservation(rows)
		if err != nil {
			return nil, fmt.Errorf("store: field edits of %q: %w", itemID, err)
		}
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: field edits of %q: %w", itemID, err)
	}
	return out, nil
}

// LegalStateAt is what an item's last legal state was just before t, read back from its judged
// history: the state the first step judged at or after t left (each records the legal state it
// was judged from), or the item's current legal state when none was. Steps of the same second
// as t count as after it (GitHub dates changes to the second), so two items' moves of one
// second never wait for each other. A required field's edit is no step of the card's history:
// the legal state it was judged with may predate automation dated before it and recorded
// after it (a cascade whose cause was judged later), so it tells nothing. known is false when a report from before t is still
// waiting to be judged (the answer is not settled yet), or the item has no record.
func (s *Store) LegalStateAt(ctx context.Context, itemID string, t time.Time) (state string, known bool, err error) {
	var n int
	if err := s.queryRow(ctx, `SELECT COUNT(*) FROM observations WHERE item_id = ? AND status = ? AND at < ? AND field = ''`,
		itemID, string(enforce.ObservationPending), s.t(nowUTC(t))).Scan(&n); err != nil {
		return "", false, fmt.Errorf("store: legal state of %q: %w", itemID, err)
	}
	if n > 0 {
		return "", false, nil
	}
	err = s.queryRow(ctx, `SELECT legal_from FROM observations WHERE item_id = ? AND status = ? AND at >= ? AND field = ''
		ORDER BY at, judged_at, delivery_id LIMIT 1`, itemID, string(enforce.ObservationJudged), s.t(nowUTC(t))).Scan(&state)
	switch {
	case err == nil:
		return state, true, nil
	case !errors.Is(err, sql.ErrNoRows):
		return "", false, fmt.Errorf("store: legal state of %q: %w", itemID, err)
	}
	it, err := s.GetItem(ctx, itemID)
	if errors.Is(err, enforce.ErrNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return it.LastLegalState, true, nil
}
