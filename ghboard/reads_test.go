package ghboard_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/ghsim"
)

// Concurrent item reads of one board share requests (nodes(ids:)), and each read gets what a
// read of its own would have: its item, or its own not-found.
func TestConcurrentItemReadsShareRequests(t *testing.T) {
	srv, b, _ := startSim(t)
	ctx := context.Background()
	want := map[string]enforce.Item{}
	for _, n := range []int{1, 2, 3} {
		items, err := b.IssueItems(ctx, "acme", "app", n)
		if err != nil || len(items) != 1 {
			t.Fatalf("issue %d: %+v %v", n, items, err)
		}
		one, err := b.Item(ctx, items[0].ID) // idle: one request of its own
		if err != nil {
			t.Fatal(err)
		}
		want[one.ID] = one
	}
	if req, carried := b.ReadRequests(); req != 3 || carried != 3 {
		t.Fatalf("idle reads: %d requests carrying %d, want one each", req, carried)
	}
	if err := srv.SetFaults(ghsim.Faults{LatencyMS: 40}); err != nil {
		t.Fatal(err)
	}
	ids := []string{"PVTI_doesnotexist"}
	for id := range want {
		ids = append(ids, id)
	}
	const readers = 60
	type got struct {
		id  string
		it  enforce.Item
		err error
	}
	results := make(chan got, readers)
	var wg sync.WaitGroup
	for i := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := ids[i%len(ids)]
			it, err := b.Item(ctx, id)
			results <- got{id, it, err}
		}()
	}
	wg.Wait()
	close(results)
	for r := range results {
		if r.id == "PVTI_doesnotexist" {
			if !errors.Is(r.err, enforce.ErrNotFound) {
				t.Errorf("a missing item in a batch: %v, want ErrNotFound", r.err)
			}
			continue
		}
		if r.err != nil {
			t.Errorf("read %s: %v", r.id, r.err)
			continue
		}
		w := want[r.id]
		if r.it.State != w.State || r.it.Number != w.Number || r.it.ProjectID != w.ProjectID || r.it.Archived != w.Archived ||
			r.it.ContentID != w.ContentID || r.it.ParentNumber != w.ParentNumber || !r.it.StateUpdatedAt.Equal(w.StateUpdatedAt) {
			t.Errorf("batched read of %s = %+v, want %+v", r.id, r.it, w)
		}
	}
	req, carried := b.ReadRequests()
	req, carried = req-3, carried-3
	if carried != readers || req > readers/5 {
		t.Fatalf("%d concurrent reads went out in %d requests carrying %d; want them combined (at most %d requests)", readers, req, carried, readers/5)
	}
	t.Logf("%d concurrent reads in %d requests", readers, req)
}

// A read whose caller gives up does not fail the reads it shared a request with.
func TestCancelledReadLeavesOthers(t *testing.T) {
	srv, b, _ := startSim(t)
	items, err := b.IssueItems(context.Background(), "acme", "app", 3)
	if err != nil || len(items) != 1 {
		t.Fatalf("%+v %v", items, err)
	}
	if err := srv.SetFaults(ghsim.Faults{LatencyMS: 60}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 12)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			if i%3 == 0 {
				c, cancel := context.WithCancel(ctx)
				cancel()
				ctx = c
			}
			_, errs[i] = b.Item(ctx, items[0].ID)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if i%3 == 0 {
			if !errors.Is(err, context.Canceled) {
				t.Errorf("cancelled read %d: %v", i, err)
			}
		} else if err != nil {
			t.Errorf("read %d failed with the others' cancellation: %v", i, err)
		}
	}
}

// Items reads many items together: ids queued at once go out in as few nodes(ids:) requests
// as GitHub allows (100 each), each id with its own item or error, in order.
func TestItemsReadsTogether(t *testing.T) {
	_, b, _ := startSim(t)
	ctx := context.Background()
	var ids []string
	want := map[string]enforce.Item{}
	for _, n := range []int{1, 2, 3} {
		items, err := b.IssueItems(ctx, "acme", "app", n)
		if err != nil || len(items) != 1 {
			t.Fatalf("issue %d: %+v %v", n, items, err)
		}
		one, err := b.Item(ctx, items[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		want[one.ID] = one
	}
	keys := slices.Sorted(maps.Keys(want))
	for i := range 150 { // more than one request's worth, each item many times, one missing
		if i == 70 {
			ids = append(ids, "PVTI_doesnotexist")
		} else {
			ids = append(ids, keys[i%len(keys)])
		}
	}
	before, _ := b.ReadRequests()
	items, errs := b.Items(ctx, ids)
	if len(items) != len(ids) || len(errs) != len(ids) {
		t.Fatalf("%d ids gave %d items and %d errors", len(ids), len(items), len(errs))
	}
	for i, id := range ids {
		if id == "PVTI_doesnotexist" {
			if !errors.Is(errs[i], enforce.ErrNotFound) {
				t.Errorf("the missing item: %v, want ErrNotFound", errs[i])
			}
			continue
		}
		if errs[i] != nil {
			t.Errorf("read %s: %v", id, errs[i])
			continue
		}
		if w := want[id]; items[i].ID != id || items[i].State != w.State || items[i].Number != w.Number || items[i].ContentID != w.ContentID {
			t.Errorf("item %d = %+v, want %+v", i, items[i], w)
		}
	}
	if after, _ := b.ReadRequests(); after-before != 2 {
		t.Errorf("%d ids read in %d requests, want 2 (100 per nodes(ids:) request)", len(ids), after-before)
	}
}
