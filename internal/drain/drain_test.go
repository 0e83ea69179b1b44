package drain

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestWait(t *testing.T) {
	var wg sync.WaitGroup
	if err := Wait(context.Background(), &wg); err != nil {
		t.Fatalf("nothing under way: %v", err)
	}
	wg.Add(1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := Wait(ctx, &wg); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("work still under way at the deadline: %v, want the deadline", err)
	}
	go func() {
		time.Sleep(10 * time.Millisecond)
		wg.Done()
	}()
	if err := Wait(context.Background(), &wg); err != nil {
		t.Fatalf("work that ends: %v", err)
	}
}
