package ghboard

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is a clock that moves only when something sleeps on it: spacing is measured in its
// time, never on the wall clock.
type fakeClock struct {
	mu     sync.Mutex
	t      time.Time
	sleeps []time.Duration
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	c.t = c.t.Add(d)
	return ctx.Err()
}

// pacingServer answers GraphQL documents and records, for each mutation, when it arrived (on
// the fake clock) and how many mutations were in flight at once. A mutation lingers until a
// second one joins it or a moment passes, so that concurrent mutations are seen as such.
type pacingServer struct {
	clock    *fakeClock
	mu       sync.Mutex
	arrivals []time.Time
	inFlight atomic.Int32
	maxSeen  atomic.Int32
	joined   chan struct{}
	reads    atomic.Int32
	hold     chan struct{} // when set, a mutation waits for it to close
	linger   time.Duration // how long a lone mutation waits for company (default 20ms)
}

func (s *pacingServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req gqlRequest
	_ = json.NewDecoder(r.Body).Decode(&req)
	if !strings.HasPrefix(strings.TrimSpace(req.Query), "mutation") {
		s.reads.Add(1)
		w.Write([]byte(`{"data":{"node":null}}`))
		return
	}
	s.mu.Lock()
	s.arrivals = append(s.arrivals, s.clock.now())
	hold := s.hold
	s.mu.Unlock()
	n := s.inFlight.Add(1)
	for {
		m := s.maxSeen.Load()
		if n <= m || s.maxSeen.CompareAndSwap(m, n) {
			break
		}
	}
	if n > 1 {
		select {
		case s.joined <- struct{}{}:
		default:
		}
	} else {
		select {
		case <-s.joined:
		case <-time.After(cmp.Or(s.linger, 20*time.Millisecond)):
		}
	}
	if hold != nil {
		<-hold
	}
	s.inFlight.Add(-1)
	w.Write([]byte(`{"data":{"updateProjectV2ItemFieldValue":{"projectV2Item":{"id":"PVTI_1"}}}}`))
}

// GitHub asks integrators to make mutative requests one at a time and to pause at least a
// second between them ("pause at least 1 second between mutative requests and avoid concurrent
// requests"): one client's mutations never overlap and each starts at least the write gap
// after the previous one ended, whatever the number of workers writing.
func TestClientPacesMutations(t *testing.T) {
	clock := newFakeClock()
	ps := &pacingServer{clock: clock, joined: make(chan struct{}, 1)}
	srv := httptest.NewServer(ps)
	defer srv.Close()
	c := NewClient(srv.Client(), srv.URL)
	c.now, c.sleep = clock.now, clock.sleep
	if c.writeGap != DefaultMinWriteGap || DefaultMinWriteGap != time.Second {
		t.Fatalf("default write gap %s, want GitHub's second", c.writeGap)
	}

	const workers = 8
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Do(context.Background(), mutationSetState, nil, nil); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if m := ps.maxSeen.Load(); m != 1 {
		t.Fatalf("%d mutations were in flight at once; want one at a time", m)
	}
	if len(ps.arrivals) != workers {
		t.Fatalf("%d mutations arrived, want %d", len(ps.arrivals), workers)
	}
	for i := 1; i < len(ps.arrivals); i++ {
		if gap := ps.arrivals[i].Sub(ps.arrivals[i-1]); gap < DefaultMinWriteGap {
			t.Fatalf("mutation %d started %s after the previous one; want at least %s", i, gap, DefaultMinWriteGap)
		}
	}
	clock.mu.Lock()
	sleeps := len(clock.sleeps)
	clock.mu.Unlock()
	if sleeps != workers-1 {
		t.Fatalf("%d pauses, want one before each mutation but the first (%d)", sleeps, workers-1)
	}

	// Reads are not paced: one goes out while a mutation is under way, without a pause.
	ps.mu.Lock()
	ps.hold = make(chan struct{})
	hold := ps.hold
	ps.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- c.Do(context.Background(), mutationSetState, nil, nil) }()
	for ps.inFlight.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	if err := c.Do(context.Background(), queryItem, nil, nil); err != nil || ps.reads.Load() != 1 {
		t.Fatalf("read during a mutation: %v (%d reads)", err, ps.reads.Load())
	}
	clock.mu.Lock()
	if len(clock.sleeps) != workers { // the held mutation paused once; the read did not
		t.Errorf("%d pauses after the read, want %d", len(clock.sleeps), workers)
	}
	clock.mu.Unlock()
	close(hold)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// The gap is a ghboard option (the sandbox sets a small one): mutations stay one at a time, and
// the pause before each is the configured gap.
func TestClientWriteGapOption(t *testing.T) {
	clock := newFakeClock()
	ps := &pacingServer{clock: clock, joined: make(chan struct{}, 1)}
	srv := httptest.NewServer(ps)
	defer srv.Close()
	c := NewClient(srv.Client(), srv.URL, WithMinWriteGap(5*time.Millisecond))
	c.now, c.sleep = clock.now, clock.sleep
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.Do(context.Background(), mutationAddComment, nil, nil)
		}()
	}
	wg.Wait()
	if m := ps.maxSeen.Load(); m != 1 {
		t.Fatalf("%d mutations in flight at once", m)
	}
	for _, d := range clock.sleeps {
		if d != 5*time.Millisecond {
			t.Fatalf("paused %s, want the configured 5ms", d)
		}
	}
	if len(clock.sleeps) != 3 {
		t.Fatalf("%d pauses, want 3", len(clock.sleeps))
	}
	// A cancelled context gives up its turn without sending.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Do(ctx, mutationSetState, nil, nil); err == nil {
		t.Fatal("a cancelled mutation was sent")
	}
	if len(ps.arrivals) != 4 {
		t.Fatalf("%d mutations arrived", len(ps.arrivals))
	}
}

// A client standing for a person in GitHub's UI (the sandbox's users) is not paced.
func TestUnpacedClient(t *testing.T) {
	clock := newFakeClock()
	ps := &pacingServer{clock: clock, joined: make(chan struct{}, 1), linger: 10 * time.Second}
	srv := httptest.NewServer(ps)
	defer srv.Close()
	c := NewClient(srv.Client(), srv.URL, Unpaced())
	c.now, c.sleep = clock.now, clock.sleep
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.Do(context.Background(), mutationSetState, nil, nil)
		}()
	}
	wg.Wait()
	if ps.maxSeen.Load() != 2 || len(clock.sleeps) != 0 {
		t.Fatalf("%d in flight at once, %d pauses; want both at once, no pause", ps.maxSeen.Load(), len(clock.sleeps))
	}
}

func TestIsMutation(t *testing.T) {
	for q, want := range map[string]bool{
		mutationSetState:                 true,
		batchSetStates(2):                true,
		"  # a comment\n mutation X { }": true,
		queryItem:                        false,
		"{ viewer { login } }":           false,
		"# mutation\nquery { x }":        false,
	} {
		if got := isMutation(q); got != want {
			t.Errorf("isMutation(%q) = %v", q, got)
		}
	}
}
