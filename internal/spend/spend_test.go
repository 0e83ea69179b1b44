package spend

import (
	"context"
	"sync"
	"testing"
)

func TestMeterCountsTheRequestsOfItsContext(t *testing.T) {
	var each int
	var mu sync.Mutex
	m := &Meter{Each: func() { mu.Lock(); each++; mu.Unlock() }}
	ctx := With(context.Background(), m)
	other := &Meter{}
	otherCtx := With(context.Background(), other)
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			Add(context.WithoutCancel(ctx)) // work left running keeps the meter
		}()
	}
	wg.Wait()
	Add(otherCtx)
	Add(context.Background()) // no meter: nothing counted, nothing fails
	if m.Count() != 50 || each != 50 {
		t.Errorf("meter counted %d, Each saw %d; want 50 and 50", m.Count(), each)
	}
	if other.Count() != 1 {
		t.Errorf("the other meter counted %d, want 1", other.Count())
	}
}
