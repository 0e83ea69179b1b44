package health

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

type countingReporter struct{ n atomic.Int32 }

func (c *countingReporter) Report(_ context.Context, now time.Time) (Report, error) {
	c.n.Add(1)
	return Report{GeneratedAt: now}, nil
}

// The cache computes a report at most once per MaxAge; an older one is served while one
// refresh runs; a much older one (or none) is waited for.
func TestCache(t *testing.T) {
	src := &countingReporter{}
	c := NewCache(src, 5*time.Second)
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	ctx := context.Background()
	if rep, _ := c.Report(ctx, t0); !rep.GeneratedAt.Equal(t0) || src.n.Load() != 1 {
		t.Fatalf("first view: %v, %d computed", rep.GeneratedAt, src.n.Load())
	}
	if rep, _ := c.Report(ctx, t0.Add(4*time.Second)); !rep.GeneratedAt.Equal(t0) || src.n.Load() != 1 {
		t.Fatalf("within MaxAge: %v, %d computed", rep.GeneratedAt, src.n.Load())
	}
	if rep, _ := c.Report(ctx, t0.Add(6*time.Second)); !rep.GeneratedAt.Equal(t0) {
		t.Fatalf("a little older: served %v, want the kept one while it refreshes", rep.GeneratedAt)
	}
	deadline := time.Now().Add(5 * time.Second)
	for src.n.Load() != 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if src.n.Load() != 2 {
		t.Fatalf("%d computed, want one refresh", src.n.Load())
	}
	if rep, _ := c.Report(ctx, t0.Add(time.Hour)); !rep.GeneratedAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("much older: served %v, want a fresh one", rep.GeneratedAt)
	}
}
