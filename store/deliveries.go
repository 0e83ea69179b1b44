package store

// Delivery bodies: a signed body seen again under another delivery id is a replay unless
// GitHub's delivery log shows that id (app.replayGuard, redeliver.Suspects).

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// HeldDelivery is a delivery held until GitHub's log tells whether it made it: its id, event,
// signed body and when it came.
type HeldDelivery struct {
	DeliveryID, Event string
	Body              []byte
	ReceivedAt        time.Time
}

// FirstDelivery records that delivery brought a body of this digest, unless one did before: it
// returns the delivery that first brought it (delivery itself the first time, and for a
// redelivery, which keeps its id).
func (s *Store) FirstDelivery(ctx context.Context, digest, delivery string, at time.Time) (string, error) {
	if digest == "" || delivery == "" {
		return "", errors.New("store: first delivery: digest and delivery id are required")
	}
	// One statement on the intake's path: the row as it stands after the insert (a conflict
	// leaves its delivery as it was).
	var first string
	if err := s.queryRow(ctx, `INSERT INTO delivery_bodies (digest, delivery_id, received_at) VALUES (?, ?, ?)
		ON CONFLICT (digest) DO UPDATE SET digest = excluded.digest RETURNING delivery_id`,
		digest, delivery, s.t(at)).Scan(&first); err != nil {
		return "", fmt.Errorf("store: record delivery body: %w", err)
	}
	return first, nil
}

// HoldSuspect keeps a delivery whose body came before under another id, until GitHub's log
// tells whether it made it.
func (s *Store) HoldSuspect(ctx context.Context, d HeldDelivery) error {
	if _, err := s.exec(ctx, `INSERT INTO suspect_deliveries (delivery_id, event, body, received_at) VALUES (?, ?, ?, ?) ON CONFLICT (delivery_id) DO NOTHING`,
		d.DeliveryID, d.Event, string(d.Body), s.t(d.ReceivedAt)); err != nil {
		return fmt.Errorf("store: hold suspect delivery %s: %w", d.DeliveryID, err)
	}
	return nil
}

// Suspects lists the deliveries held, oldest first.
func (s *Store) Suspects(ctx context.Context) ([]HeldDelivery, error) {
	rows, err := s.query(ctx, `SELECT delivery_id, event, body, received_at FROM suspect_deliveries ORDER BY received_at, delivery_id`)
	if err != nil {
		return nil, fmt.Errorf("store: suspect deliveries: %w", err)
	}
	defer rows.Close()
	var out []HeldDelivery
	for rows.Next() {
		var d HeldDelivery
		var body string
		if err := rows.Scan(&d.DeliveryID, &d.Event, &body, tc(&d.ReceivedAt)); err != nil {
			return nil, fmt.Errorf("store: suspect deliveries: %w", err)
		}
		d.Body = []byte(body)
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: suspect deliveries: %w", err)
	}
	return out, nil
}

// DropSuspect forgets a held delivery (taken in, or found to be a replay).
func (s *Store) DropSuspect(ctx context.Context, delivery string) error {
	if _, err := s.exec(ctx, `DELETE FROM suspect_deliveries WHERE delivery_id = ?`, delivery); err != nil {
		return fmt.Errorf("store: drop suspect delivery %s: %w", delivery, err)
	}
	return nil
}

// PruneDeliveryBodies forgets the digests of bodies received before cutoff (GitHub redelivers
// for three days; a replay of an older body is refused by its stale history).
func (s *Store) PruneDeliveryBodies(ctx context.Context, cutoff time.Time) (int64, error) {
	res, err := s.exec(ctx, `DELETE FROM delivery_bodies WHERE received_at < ?`, s.t(cutoff))
	return pruned(res, err, "delivery bodies")
}
