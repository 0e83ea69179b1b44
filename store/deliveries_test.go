package store

import (
	"testing"
	"time"
)

// A body's first delivery is kept; the same body under another id says who brought it first
// (a redelivery keeps its id); held deliveries are listed oldest first until dropped; old
// digests are pruned.
func TestDeliveryBodies(t *testing.T) {
	forEachDriver(t, func(t *testing.T, tg target) {
		s := tg.open(t)
		ctx := t.Context()
		now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
		for _, tt := range []struct{ digest, delivery, want string }{
			{"d1", "g1", "g1"}, {"d1", "g1", "g1"}, {"d1", "g2", "g1"}, {"d2", "g2", "g2"},
		} {
			if got, err := s.FirstDelivery(ctx, tt.digest, tt.delivery, now); err != nil || got != tt.want {
				t.Errorf("FirstDelivery(%s, %s) = %q, %v; want %q", tt.digest, tt.delivery, got, err, tt.want)
			}
		}
		for _, d := range []HeldDelivery{
			{DeliveryID: "g3", Event: "issues", Body: []byte(`{"b":2}`), ReceivedAt: now.Add(time.Second)},
			{DeliveryID: "g2", Event: "projects_v2_item", Body: []byte(`{"a":1}`), ReceivedAt: now},
		} {
			if err := s.HoldSuspect(ctx, d); err != nil {
				t.Fatal(err)
			}
		}
		held, err := s.Suspects(ctx)
		if err != nil || len(held) != 2 || held[0].DeliveryID != "g2" || string(held[0].Body) != `{"a":1}` || held[0].Event != "projects_v2_item" ||
			!held[0].ReceivedAt.Equal(now) || held[1].DeliveryID != "g3" {
			t.Fatalf("held %+v, %v", held, err)
		}
		if err := s.DropSuspect(ctx, "g2"); err != nil {
			t.Fatal(err)
		}
		if held, _ := s.Suspects(ctx); len(held) != 1 || held[0].DeliveryID != "g3" {
			t.Fatalf("after a drop: %+v", held)
		}
		if n, err := s.PruneDeliveryBodies(ctx, now.Add(time.Minute)); err != nil || n != 2 {
			t.Fatalf("pruned %d, %v", n, err)
		}
		if got, _ := s.FirstDelivery(ctx, "d1", "g9", now); got != "g9" {
			t.Errorf("after pruning, the body's first delivery is %q", got)
		}
	})
}
