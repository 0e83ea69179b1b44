package ghboard_test

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/ralph-gate/ralph-gate/ghboard"
	"github.com/ralph-gate/ralph-gate/ghsim"
	"github.com/ralph-gate/ralph-gate/internal/spend"
)

// metered counts each request on the meter of its context, as the metrics middleware does.
type metered struct{ next http.RoundTripper }

func (m metered) RoundTrip(r *http.Request) (*http.Response, error) {
	spend.Add(r.Context())
	return m.next.RoundTrip(r)
}

// A request shared by concurrent reads is counted once, by a read it carries: each reader's
// meter counts at most the one request that carried its read, and together they count every
// request sent — none is charged to a reader whose read it did not carry (the reader that
// happened to start the batches, say).
func TestSharedReadsAreCountedByTheReadsTheyCarry(t *testing.T) {
	srv, _, _ := startSim(t)
	url := srv.URL()
	b := ghboard.New(ghboard.NewClient(&http.Client{Transport: metered{bearer("alice-token")}}, url+"/api/graphql"), "Workflow State", ghboard.NewFieldCache())
	ctx := context.Background()
	var ids []string
	for _, n := range []int{1, 2, 3} {
		items, err := b.IssueItems(ctx, "acme", "app", n)
		if err != nil || len(items) != 1 {
			t.Fatalf("issue %d: %+v %v", n, items, err)
		}
		ids = append(ids, items[0].ID)
	}
	before, _ := b.ReadRequests()
	if err := srv.SetFaults(ghsim.Faults{LatencyMS: 40}); err != nil {
		t.Fatal(err)
	}
	const readers = 60
	meters := make([]*spend.Meter, readers)
	var wg sync.WaitGroup
	for i := range readers {
		meters[i] = &spend.Meter{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := b.Item(spend.With(ctx, meters[i]), ids[i%len(ids)]); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	after, _ := b.ReadRequests()
	sum := 0
	for i, m := range meters {
		if m.Count() > 1 {
			t.Errorf("reader %d was charged %d requests; its one read went out in one", i, m.Count())
		}
		sum += m.Count()
	}
	if sent := int(after - before); sum != sent || sent >= readers {
		t.Errorf("the readers were charged %d requests, %d were sent for %d reads", sum, sent, readers)
	}
}
