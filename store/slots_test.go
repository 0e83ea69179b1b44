package store

import (
	"sync"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
)

// A slot is held by one item and holder at a time: a claim of another item is not won and
// sees the holder; concurrent claimers have exactly one winner; release frees it only for the
// item that holds it.
func TestIntegrationSlots(t *testing.T) {
	forEachDriver(t, func(t *testing.T, tg target) {
		ctx := t.Context()
		s := tg.open(t)
		key := "integration:acme/app"
		if _, found, err := s.GetSlot(ctx, key); err != nil || found {
			t.Fatalf("a fresh slot: found %v, %v", found, err)
		}
		since := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
		a := enforce.Slot{Key: key, ItemID: "I_12", Holder: "integrator-1", Role: "integrator", Repo: "acme/app", IssueNumber: 12, Since: since}
		if held, won, err := s.ClaimSlot(ctx, a); err != nil || !won || held != a {
			t.Fatalf("first claim: %+v %v %v", held, won, err)
		}
		if _, won, err := s.ClaimSlot(ctx, a); err != nil || !won {
			t.Fatalf("the holder's claim again: %v %v", won, err)
		}
		b := a
		b.ItemID, b.Holder, b.IssueNumber = "I_13", "integrator-2", 13
		if held, won, err := s.ClaimSlot(ctx, b); err != nil || won || held != a {
			t.Fatalf("a second item: %+v %v %v", held, won, err)
		}
		if ok, err := s.ReleaseSlot(ctx, key, "I_13"); err != nil || ok {
			t.Fatalf("release by an item that does not hold it: %v %v", ok, err)
		}
		if ok, err := s.ReleaseSlot(ctx, key, "I_12"); err != nil || !ok {
			t.Fatalf("release: %v %v", ok, err)
		}
		var wg sync.WaitGroup
		wins := make(chan string, 8)
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := a
				c.ItemID, c.Holder = "I_"+string(rune('a'+i)), "integrator-"+string(rune('a'+i))
				if _, won, err := s.ClaimSlot(ctx, c); err != nil {
					t.Error(err)
				} else if won {
					wins <- c.Holder
				}
			}()
		}
		wg.Wait()
		close(wins)
		if n := len(wins); n != 1 {
			t.Fatalf("%d concurrent claimers won, want 1", n)
		}
		if _, _, err := s.ClaimSlot(ctx, enforce.Slot{Key: key}); err == nil {
			t.Error("a claim without item and holder was accepted")
		}
	})
}
