package ghboard

import (
	"testing"
	"time"
)

// The content budget holds a comment back before GitHub's minute or hour limit would, and says
// how long until there is room.
func TestContentBudget(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	b := contentBudget{perMinute: 3, perHour: 5}
	for i := range 3 {
		if _, ok := b.reserve(t0.Add(time.Duration(i) * time.Second)); !ok {
			t.Fatalf("comment %d refused within the minute's budget", i+1)
		}
	}
	if wait, ok := b.reserve(t0.Add(10 * time.Second)); ok || wait != 50*time.Second {
		t.Fatalf("the 4th within a minute: ok=%v wait=%s, want held back 50s (until the first is a minute old)", ok, wait)
	}
	for i := range 2 {
		if _, ok := b.reserve(t0.Add(time.Minute + time.Duration(i)*time.Second)); !ok {
			t.Fatalf("comment %d refused in the next minute", i+4)
		}
	}
	if wait, ok := b.reserve(t0.Add(5 * time.Minute)); ok || wait != 55*time.Minute {
		t.Fatalf("the 6th within an hour: ok=%v wait=%s, want held back 55m", ok, wait)
	}
	if _, ok := b.reserve(t0.Add(time.Hour + time.Second)); !ok {
		t.Fatal("refused once the first of the hour is an hour old")
	}
	free := contentBudget{}
	for range 1000 {
		if _, ok := free.reserve(t0); !ok {
			t.Fatal("a lifted budget refused a comment")
		}
	}
}
