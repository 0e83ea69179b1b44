package store

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
)

// TestLockItemSerializes proves two holders of one item never overlap (Postgres: across
// connections, as across replicas), while other items proceed.
func TestLockItemSerializes(t *testing.T) {
	forEachDriver(t, func(t *testing.T, tg target) {
		s := tg.open(t)
		if s.Driver() != DriverPostgres {
			unlock, err := s.LockItem(context.Background(), "x")
			if err != nil {
				t.Fatal(err)
			}
			unlock()
			return
		}
		var inside, maxInside atomic.Int32
		var wg sync.WaitGroup
		for i := 0; i < 6; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				unlock, err := s.LockItem(context.Background(), "PVTI_same")
				if err != nil {
					t.Error(err)
					return
				}
				n := inside.Add(1)
				for {
					m := maxInside.Load()
					if n <= m || maxInside.CompareAndSwap(m, n) {
						break
					}
				}
				time.Sleep(10 * time.Millisecond)
				inside.Add(-1)
				unlock()
			}()
		}
		wg.Wait()
		if maxInside.Load() != 1 {
			t.Fatalf("%d holders at once", maxInside.Load())
		}
	})
}

func TestCountInState(t *testing.T) {
	forEachDriver(t, func(t *testing.T, tg target) {
		s := tg.open(t)
		ctx := context.Background()
		for i, st := range []string{"In Progress", "In Progress", "Backlog"} {
			seed(t, s, enforce.Record{ProjectID: "P", ItemID: string(rune('a' + i)), LastLegalState: st})
		}
		seed(t, s, enforce.Record{ProjectID: "Q", ItemID: "z", LastLegalState: "In Progress"})
		n, err := s.CountInState(ctx, "P", "In Progress")
		if err != nil || n != 2 {
			t.Fatalf("count = %d, %v", n, err)
		}
	})
}
