package store

import (
	"testing"
	"time"
)

func TestRevokedSessions(t *testing.T) {
	forEachDriver(t, func(t *testing.T, tg target) {
		s := tg.open(t)
		ctx := t.Context()
		now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
		if err := s.RevokeSession(ctx, "a", now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if err := s.RevokeSession(ctx, "a", now.Add(time.Hour)); err != nil {
			t.Fatalf("revoked twice: %v", err)
		}
		if err := s.RevokeSession(ctx, "old", now.Add(-time.Minute)); err != nil {
			t.Fatal(err)
		}
		for id, want := range map[string]bool{"a": true, "old": true, "b": false} {
			if got, err := s.SessionRevoked(ctx, id); err != nil || got != want {
				t.Errorf("%s: revoked %v, %v; want %v", id, got, err, want)
			}
		}
		if n, err := s.PruneRevokedSessions(ctx, now); err != nil || n != 1 {
			t.Fatalf("pruned %d, %v; want the expired one", n, err)
		}
		if got, _ := s.SessionRevoked(ctx, "a"); !got {
			t.Error("pruning forgot a session not yet expired")
		}
	})
}
