package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/palantir/go-githubapp/githubapp"
	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/redeliver"
	"github.com/ralph-gate/ralph-gate/store"
)

// A delivery's id (X-GitHub-Delivery) is outside its signature, so a signed body captured once
// can be sent again under a new id, and would be judged again: a second violation nobody made.
// The intake therefore keeps the digest of every body with the delivery that first brought it.
// A body seen again under another id is held, not handled: a redelivery keeps its id, and the
// only legitimate case — the same move made twice in one second, whose two webhooks carry one
// body — is told from a replay by GitHub's delivery log, which the next sweep reads
// (redeliver.Options.Suspects): a held delivery the log lists is taken in, one it does not list
// within a minute is dropped as a replay. docs/SECURITY.md "Replays".

// errHeld is a delivery held as a suspected replay: answered 202 (dispatchError), handled only
// once GitHub's delivery log lists it.
var errHeld = errors.New("held: this signed body came before under another delivery id; taken in only if GitHub's delivery log lists this one")

// replayGuard holds a delivery whose body came before under another id (docs above).
type replayGuard struct {
	next  githubapp.EventHandler
	store *store.Store
	// held, when set, is told that a delivery was held (a sweep settles it).
	held func(ctx context.Context)
}

func (g replayGuard) Handles() []string { return g.next.Handles() }

// Handle implements githubapp.EventHandler.
func (g replayGuard) Handle(ctx context.Context, eventType, deliveryID string, data []byte) error {
	if deliveryID == "" {
		return g.next.Handle(ctx, eventType, deliveryID, data)
	}
	sum := sha256.Sum256(append([]byte(eventType+"\n"), data...))
	now := time.Now()
	first, err := g.store.FirstDelivery(ctx, hex.EncodeToString(sum[:]), deliveryID, now)
	if err != nil {
		return fmt.Errorf("check for a replayed delivery: %w", err)
	}
	if first == deliveryID {
		return g.next.Handle(ctx, eventType, deliveryID, data)
	}
	if err := g.store.HoldSuspect(ctx, store.HeldDelivery{DeliveryID: deliveryID, Event: eventType, Body: data, ReceivedAt: now}); err != nil {
		return fmt.Errorf("hold a delivery whose body came before: %w", err)
	}
	zerolog.Ctx(ctx).Warn().Str("delivery", deliveryID).Str("first_delivery", first).Str("event", eventType).
		Msg("held a delivery whose signed body came before under another id, until GitHub's delivery log shows it")
	if g.held != nil {
		g.held(ctx)
	}
	return errHeld
}

// heldDeliveries is the store's held deliveries as the sweeper reads them.
type heldDeliveries struct{ *store.Store }

func (h heldDeliveries) Suspects(ctx context.Context) ([]redeliver.Suspect, error) {
	held, err := h.Store.Suspects(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]redeliver.Suspect, len(held))
	for i, d := range held {
		out[i] = redeliver.Suspect{DeliveryID: d.DeliveryID, Event: d.Event, Body: d.Body, ReceivedAt: d.ReceivedAt}
	}
	return out, nil
}
