package drain

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestWait(t *testing.T) {
	var g Group
	if err := g.Wait(context.Background()); err != nil {
		t.Fatalf("nothing under way: %v", err)
	}
	g.Add()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := g.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("work still under way at the deadline: %v, want the deadline", err)
	}
	go func() {
		time.Sleep(10 * time.Millisecond)
		g.Done()
	}()
	if err := g.Wait(context.Background()); err != nil {
		t.Fatalf("work that ends: %v", err)
	}
}

// Work keeps being handed out while a shutdown waits, its count going back to zero and up
// again (a sync.WaitGroup panics then: "WaitGroup is reused before previous Wait has
// returned"); every Wait returns once the work ends.
func TestWorkBegunWhileWaiting(t *testing.T) {
	var g Group
	var workers sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				g.Add()
				g.Done()
			}
		}()
	}
	var waiters sync.WaitGroup
	for range 4 {
		waiters.Add(1)
		go func() {
			defer waiters.Done()
			for range 200 {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				_ = g.Wait(ctx)
				cancel()
			}
		}()
	}
	waiters.Wait()
	close(stop)
	workers.Wait()
	if err := g.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestDoneWithoutAddPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Done without Add did not panic")
		}
	}()
	var g Group
	g.Done()
}
