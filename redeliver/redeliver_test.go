package redeliver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-github/v89/github"
)

type memCursors map[string]string

func (m memCursors) GetCursor(_ context.Context, name string) (string, error) {
	v, ok := m[name]
	if !ok {
		return "", errors.New("not found")
	}
	return v, nil
}

func (m memCursors) PutCursor(_ context.Context, name, value string) error {
	m[name] = value
	return nil
}

type fakeHooks struct {
	deliveries  []*github.HookDelivery // newest first
	redelivered []int64
	limited     bool
	lists       int
	// arrive, when set, lists each redelivery as a new attempt with this status.
	arrive  int
	reads   int   // GetHookDelivery calls
	readErr error // GetHookDelivery's answer, when set
}

func (f *fakeHooks) ListHookDeliveries(context.Context, *github.ListCursorOptions) ([]*github.HookDelivery, *github.Response, error) {
	f.lists++
	if f.limited {
		d := 30 * time.Second
		return nil, &github.Response{Response: &http.Response{StatusCode: 403}}, &github.AbuseRateLimitError{RetryAfter: &d}
	}
	return f.deliveries, &github.Response{Response: &http.Response{StatusCode: 200}}, nil
}

func (f *fakeHooks) RedeliverHookDelivery(_ context.Context, id int64) (*github.HookDelivery, *github.Response, error) {
	f.redelivered = append(f.redelivered, id)
	if f.arrive != 0 {
		for _, d := range f.deliveries {
			if d.GetID() == id {
				next := delivery(f.deliveries[0].GetID()+1, d.GetGUID(), f.arrive, d.GetDeliveredAt().Time)
				f.deliveries = append([]*github.HookDelivery{next}, f.deliveries...)
				break
			}
		}
	}
	return nil, nil, &github.AcceptedError{} // GitHub answers 202
}

func (f *fakeHooks) GetHookDelivery(_ context.Context, id int64) (*github.HookDelivery, *github.Response, error) {
	f.reads++
	if f.readErr != nil {
		return nil, nil, f.readErr
	}
	for _, d := range f.deliveries {
		if d.GetID() == id {
			full := *d
			payload := json.RawMessage(`{"action":"edited","sender":{"login":"alice"}}`)
			full.Request = &github.HookRequest{RawPayload: &payload}
			return &full, &github.Response{Response: &http.Response{StatusCode: 200}}, nil
		}
	}
	return nil, &github.Response{Response: &http.Response{StatusCode: 404}}, errors.New("404 Not Found")
}

func delivery(id int64, guid string, status int, at time.Time) *github.HookDelivery {
	return &github.HookDelivery{ID: github.Ptr(id), GUID: github.Ptr(guid), StatusCode: github.Ptr(status),
		DeliveredAt: &github.Timestamp{Time: at}, Event: github.Ptr("projects_v2_item")}
}

func TestSweepIsBoundedAndIdempotent(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	hooks := &fakeHooks{deliveries: []*github.HookDelivery{
		delivery(6, "c", 0, now.Add(-time.Minute)),     // failed (dropped)
		delivery(5, "b", 200, now.Add(-2*time.Minute)), // b's redelivery succeeded
		delivery(4, "b", 502, now.Add(-3*time.Minute)),
		delivery(3, "a", 500, now.Add(-4*time.Minute)),
		delivery(2, "old", 0, now.Add(-80*time.Hour)), // beyond max age
	}}
	cur := memCursors{}
	s := New(func(context.Context) (Hooks, error) { return hooks, nil }, cur, Options{MaxPerSweep: 1, Confirm: 50 * time.Millisecond, ConfirmPoll: 10 * time.Millisecond}, func() time.Time { return now })
	ctx := context.Background()

	rep, err := s.Sweep(ctx)
	if err != nil || rep.Failed != 2 || rep.Redelivered != 1 || rep.Deferred != 1 || len(hooks.redelivered) != 1 || hooks.redelivered[0] != 3 {
		t.Fatalf("first sweep %+v %v, redelivered %v: want the oldest failure (3) only (max 1 per sweep)", rep, err, hooks.redelivered)
	}
	rep, _ = s.Sweep(ctx)
	if rep.Redelivered != 1 || rep.Waiting != 1 || hooks.redelivered[1] != 6 {
		t.Fatalf("second sweep %+v, redelivered %v: want 6, and 3 waiting for its attempt", rep, hooks.redelivered)
	}
	rep, _ = s.Sweep(ctx)
	if rep.Redelivered != 0 || rep.Waiting != 2 {
		t.Fatalf("third sweep %+v: nothing new to redeliver", rep)
	}
	// GitHub records a failed redelivery of a: it is redelivered again, up to MaxAttempts.
	hooks.deliveries = append([]*github.HookDelivery{delivery(7, "a", 0, now)}, hooks.deliveries...)
	for i := 0; i < 5; i++ {
		s.Sweep(ctx)
		hooks.deliveries[0] = delivery(hooks.deliveries[0].GetID()+10, "a", 0, now)
	}
	n := 0
	for _, id := range hooks.redelivered {
		if id != 6 {
			n++
		}
	}
	if n != 3 {
		t.Fatalf("a was redelivered %d times (%v); want 3 (max attempts)", n, hooks.redelivered)
	}
	// GitHub asks to wait: the sweep stops and the next one does not call before the time.
	hooks.limited = true
	lists := hooks.lists
	if _, err := s.Sweep(ctx); err == nil {
		t.Fatal("want a retry-after error")
	}
	if rep, _ := s.Sweep(ctx); rep.Paused == "" || hooks.lists != lists+1 {
		t.Fatalf("inside retry-after: %+v, %d list calls; want none", rep, hooks.lists-lists-1)
	}
}

// A sweep proves that nothing is missing only when it listed back to its horizon, redelivered
// every failure and saw each redelivery arrive (2xx).
func TestSweepProof(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	ctx := context.Background()
	for _, tt := range []struct {
		name     string
		arrive   int
		perSweep int
		complete bool
	}{
		{"every redelivery arrives", 200, 0, true},
		{"a redelivery fails again", 502, 0, false},
		{"more failures than one sweep redelivers", 200, 1, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hooks := &fakeHooks{arrive: tt.arrive, deliveries: []*github.HookDelivery{
				delivery(6, "c", 0, now.Add(-time.Minute)),
				delivery(5, "b", 200, now.Add(-2*time.Minute)),
				delivery(3, "a", 500, now.Add(-4*time.Minute)),
			}}
			cur := memCursors{}
			s := New(func(context.Context) (Hooks, error) { return hooks, nil }, cur,
				Options{MaxPerSweep: tt.perSweep, Confirm: 100 * time.Millisecond, ConfirmPoll: 10 * time.Millisecond}, func() time.Time { return now })
			rep, err := s.SweepSince(ctx, now.Add(-10*time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			p, _ := s.Proof(ctx)
			started, since := p.Until, p.Since
			if rep.Complete != tt.complete || started.IsZero() == tt.complete || p.Full {
				t.Fatalf("sweep %+v, proof started %s: want complete=%v", rep, started, tt.complete)
			}
			if tt.complete && (!started.Equal(now) || !since.Equal(now.Add(-10*time.Minute-proofSlack))) {
				t.Errorf("proof %s since %s: want the sweep's start and its horizon", started, since)
			}
		})
	}
}

// Proofs accumulate: a sweep that looks back past what was proven extends it; one that does
// not starts afresh.
func TestProofAccumulates(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	now := t0
	hooks := &fakeHooks{arrive: 200}
	s := New(func(context.Context) (Hooks, error) { return hooks, nil }, memCursors{},
		Options{Confirm: 50 * time.Millisecond, ConfirmPoll: 10 * time.Millisecond}, func() time.Time { return now })
	ctx := context.Background()
	if _, err := s.Sweep(ctx); err != nil { // full
		t.Fatal(err)
	}
	p, _ := s.Proof(ctx)
	if !p.Full || !p.Until.Equal(t0) {
		t.Fatalf("after a full sweep: %+v", p)
	}
	now = t0.Add(10 * time.Second)
	s.SweepSince(ctx, p.Until)
	p, _ = s.Proof(ctx)
	if !p.Full || !p.Until.Equal(now) {
		t.Fatalf("a sweep back to the proof's end extends it: %+v", p)
	}
	now = t0.Add(time.Hour)
	s.SweepSince(ctx, now.Add(-time.Second))
	p, _ = s.Proof(ctx)
	if p.Full || !p.Until.Equal(now) || !p.Since.Equal(now.Add(-time.Second-proofSlack)) {
		t.Fatalf("a sweep that leaves a hole starts afresh: %+v", p)
	}
}

// A delivery given up on (max_attempts redeliveries failed) is not left to the reconciler,
// which would judge its change as nobody's: its event is taken from GitHub's record of it,
// sender included, once; a failed read is tried again by the next sweep.
func TestGivenUpDeliveryIsTakenFromGitHubsRecord(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	hooks := &fakeHooks{deliveries: []*github.HookDelivery{delivery(9, "a", 503, now.Add(-time.Minute))}}
	cur := memCursors{CursorName: fmt.Sprintf(`{"guids":{"a":{"n":3,"at":%q,"newest":9,"first":%q}}}`,
		now.Add(-2*time.Minute).Format(time.RFC3339), now.Add(-time.Hour).Format(time.RFC3339))}
	type took struct{ event, guid, payload string }
	var got []took
	ingest := func(_ context.Context, event, guid string, payload []byte) error {
		got = append(got, took{event, guid, string(payload)})
		return nil
	}
	s := New(func(context.Context) (Hooks, error) { return hooks, nil }, cur, Options{MaxAttempts: 3, Ingest: ingest}, func() time.Time { return now })
	ctx := context.Background()
	hooks.readErr = errors.New("502 Bad Gateway")
	rep, err := s.Sweep(ctx)
	if err != nil || rep.GaveUp != 1 || rep.Ingested != 0 || len(got) != 0 || len(hooks.redelivered) != 0 {
		t.Fatalf("a failed read: %+v %v, took %v", rep, err, got)
	}
	hooks.readErr = nil
	rep, err = s.Sweep(ctx)
	want := took{"projects_v2_item", "a", `{"action":"edited","sender":{"login":"alice"}}`}
	if err != nil || rep.Ingested != 1 || len(got) != 1 || got[0] != want || len(hooks.redelivered) != 0 {
		t.Fatalf("the next sweep: %+v %v, took %v", rep, err, got)
	}
	if rep, err = s.Sweep(ctx); err != nil || rep.Ingested != 0 || len(got) != 1 || hooks.reads != 2 {
		t.Fatalf("taken in twice: %+v %v, took %v, %d reads", rep, err, got, hooks.reads)
	}
}

// brokenCursors reads but cannot write (a full disk).
type brokenCursors struct{ memCursors }

func (brokenCursors) PutCursor(context.Context, string, string) error {
	return errors.New("database or disk is full")
}

// A store that cannot write does not make the sweeper forget what it redelivered: the sweeps
// fail (nothing proves anything), but a delivery is redelivered at most max_attempts times (a
// full disk once made 221 redeliveries of 30 deliveries in six minutes).
func TestSweepRemembersWhatItCouldNotSave(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	hooks := &fakeHooks{deliveries: []*github.HookDelivery{delivery(1, "a", 502, now.Add(-time.Minute))}, arrive: 502}
	s := New(func(context.Context) (Hooks, error) { return hooks, nil }, brokenCursors{memCursors{}},
		Options{MaxAttempts: 3, Confirm: 20 * time.Millisecond, ConfirmPoll: 5 * time.Millisecond}, func() time.Time { return now })
	for i := range 20 {
		if _, err := s.Sweep(context.Background()); err == nil && len(hooks.redelivered) > 0 {
			t.Fatalf("sweep %d: no error though nothing could be saved", i+1)
		}
		now = now.Add(time.Second)
	}
	if len(hooks.redelivered) != 3 {
		t.Fatalf("redelivered %d times (%v), want max_attempts (3)", len(hooks.redelivered), hooks.redelivered)
	}
}

// memSuspects holds suspect deliveries in memory.
type memSuspects struct{ held []Suspect }

func (m *memSuspects) Suspects(context.Context) ([]Suspect, error) { return m.held, nil }

func (m *memSuspects) DropSuspect(_ context.Context, id string) error {
	for i, d := range m.held {
		if d.DeliveryID == id {
			m.held = append(m.held[:i:i], m.held[i+1:]...)
			break
		}
	}
	return nil
}

// A delivery held because its body came before under another id is taken in once GitHub's log
// lists it (the same move made twice in one second), and dropped as a replay once the listing
// covers it and a minute has passed without it; one not yet covered, or too recent, waits.
func TestSuspectDeliveriesAreSettledByGitHubsLog(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	hooks := &fakeHooks{deliveries: []*github.HookDelivery{
		delivery(3, "real-twin", 200, now.Add(-30*time.Second)),
		delivery(2, "first", 200, now.Add(-31*time.Second)),
		delivery(1, "older", 200, now.Add(-10*time.Minute)),
	}}
	sus := &memSuspects{held: []Suspect{
		{DeliveryID: "real-twin", Event: "projects_v2_item", Body: []byte(`{"x":1}`), ReceivedAt: now.Add(-30 * time.Second)},
		{DeliveryID: "replay", Event: "projects_v2_item", Body: []byte(`{"x":1}`), ReceivedAt: now.Add(-2 * time.Minute)},
		{DeliveryID: "replay-recent", Event: "projects_v2_item", Body: []byte(`{"x":1}`), ReceivedAt: now.Add(-20 * time.Second)},
	}}
	var took []string
	ingest := func(_ context.Context, event, guid string, payload []byte) error {
		took = append(took, guid+" "+event+" "+string(payload))
		return nil
	}
	s := New(func(context.Context) (Hooks, error) { return hooks, nil }, memCursors{}, Options{Ingest: ingest, Suspects: sus}, func() time.Time { return now })
	rep, err := s.Sweep(context.Background())
	if err != nil || rep.SuspectsTaken != 1 || rep.Replays != 1 || len(took) != 1 || took[0] != `real-twin projects_v2_item {"x":1}` {
		t.Fatalf("%+v %v, took %v", rep, err, took)
	}
	if len(sus.held) != 1 || sus.held[0].DeliveryID != "replay-recent" {
		t.Fatalf("still held: %+v", sus.held)
	}
	now = now.Add(time.Minute)
	if rep, err := s.Sweep(context.Background()); err != nil || rep.Replays != 1 || len(sus.held) != 0 || len(took) != 1 {
		t.Fatalf("a minute later: %+v %v, held %+v, took %v", rep, err, sus.held, took)
	}
}

// Taking a given-up delivery from GitHub's record is tried at most max_attempts times: a read
// that keeps failing costs max_attempts requests, not one every sweep for three days; a held
// delivery older than GitHub's log is dropped.
func TestTakingInIsBounded(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	hooks := &fakeHooks{deliveries: []*github.HookDelivery{delivery(9, "a", 503, now.Add(-time.Minute))}, readErr: errors.New("404 Not Found")}
	cur := memCursors{CursorName: fmt.Sprintf(`{"guids":{"a":{"n":3,"at":%q,"newest":9,"first":%q}}}`,
		now.Add(-2*time.Minute).Format(time.RFC3339), now.Add(-time.Hour).Format(time.RFC3339))}
	sus := &memSuspects{held: []Suspect{{DeliveryID: "stale", Event: "issues", Body: []byte(`{}`), ReceivedAt: now.Add(-73 * time.Hour)}}}
	s := New(func(context.Context) (Hooks, error) { return hooks, nil }, cur,
		Options{MaxAttempts: 3, Ingest: func(context.Context, string, string, []byte) error { return nil }, Suspects: sus}, func() time.Time { return now })
	for range 10 {
		if _, err := s.Sweep(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if hooks.reads != 3 || len(sus.held) != 0 {
		t.Fatalf("%d reads of GitHub's record in 10 sweeps (want max_attempts, 3); held %+v", hooks.reads, sus.held)
	}
}
