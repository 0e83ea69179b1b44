package health_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/health"
	"github.com/ralph-gate/ralph-gate/policy"
)

// BenchmarkReport10k is the report of one project of 10,000 items on SQLite: every record and
// every snapshot row read, counted and sorted (goal: at most 50 ms, docs/BENCHMARKS.md).
func BenchmarkReport10k(b *testing.B) {
	st := openStore(b)
	states := policy.DefaultSpec().States
	var brd board
	for i := 1; i <= 10000; i++ {
		state := states[i%len(states)].Name
		r := rec(fmt.Sprintf("PVTI_%05d", i), i, state, now.Add(-time.Duration(i%100)*time.Hour))
		if i%50 == 0 {
			r = locked(r, fmt.Sprintf("agent-%d", i%7), now.Add(-time.Duration(i%10)*time.Hour))
		}
		brd.records = append(brd.records, r)
		brd.snapshot = append(brd.snapshot, blocked(snap(r.ItemID, i, state, i%3 != 0), i%2, i%4))
	}
	brd.status = passed
	brd.write(b, st)
	r := health.New(source{Store: st}, options)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		rep, err := r.Report(ctx, now)
		if err != nil {
			b.Fatal(err)
		}
		if rep.Projects[0].Items != 10000 {
			b.Fatalf("%d items", rep.Projects[0].Items)
		}
	}
}
