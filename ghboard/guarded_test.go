package ghboard_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/ghboard"
)

// A guarded write reads the card once the write's turn has come, not before: a move made while the
// write waits out the pacing gap is seen, and nothing is written over it.
func TestSetStateIfReadsWhenItsTurnComes(t *testing.T) {
	srv, _, _ := startSim(t)
	ctx := context.Background()
	url := srv.URL() + "/api/graphql"
	paced := ghboard.New(ghboard.NewClient(&http.Client{Transport: bearer("alice-token")}, url, ghboard.WithMinWriteGap(400*time.Millisecond)),
		"Workflow State", ghboard.NewFieldCache())
	other := ghboard.New(ghboard.NewClient(&http.Client{Transport: bearer("alice-token")}, url, ghboard.Unpaced()),
		"Workflow State", ghboard.NewFieldCache())
	items, err := paced.IssueItems(ctx, "acme", "app", 3)
	if err != nil || len(items) != 1 {
		t.Fatalf("%+v %v", items, err)
	}
	it := items[0]
	if err := paced.SetState(ctx, it, "In Review"); err != nil { // the last write: the next waits 400 ms
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- setStateIf(ctx, paced, it, "In Review", "Done") }()
	time.Sleep(100 * time.Millisecond) // the guarded write is waiting for its turn
	if err := other.SetState(ctx, it, "Backlog"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, enforce.ErrBoardMoved) {
		t.Fatalf("a guarded write over a card moved meanwhile: %v, want ErrBoardMoved", err)
	}
	if got, _ := paced.Item(ctx, it.ID); got.State != "Backlog" {
		t.Fatalf("the card shows %q, want the newer move's Backlog", got.State)
	}
	// Unmoved, it writes.
	if err := setStateIf(ctx, paced, it, "Backlog", "Done"); err != nil {
		t.Fatal(err)
	}
	if got, _ := paced.Item(ctx, it.ID); got.State != "Done" {
		t.Fatalf("the card shows %q, want Done", got.State)
	}
}

// setStateIf is one guarded write.
func setStateIf(ctx context.Context, b *ghboard.Board, it enforce.Item, from, to string) error {
	return b.SetStatesIf(ctx, []enforce.StateWrite{{Item: it, From: from, State: to}})[0]
}

// failingFirstWrite answers the first write of a card's value with GitHub's 502 (nothing
// written), after a person moved the card: the window between a guarded write's read and its
// retried mutation, made wide.
type failingFirstWrite struct {
	next    http.RoundTripper
	between func()
	failed  atomic.Bool
}

func (f *failingFirstWrite) RoundTrip(r *http.Request) (*http.Response, error) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if bytes.Contains(body, []byte("updateProjectV2ItemFieldValue(")) && f.failed.CompareAndSwap(false, true) {
		f.between()
		return &http.Response{StatusCode: http.StatusBadGateway, Status: "502 Bad Gateway", Header: http.Header{},
			Body: io.NopCloser(strings.NewReader(`{"message":"Server Error"}`)), Request: r}, nil
	}
	return f.next.RoundTrip(r)
}

// A guarded write GitHub failed with a server error is tried again only after reading the card
// again: a person's move made meanwhile is seen, and nothing is written over it. The mutation
// itself is never sent twice without that read.
func TestGuardedWriteReadsAgainBeforeItsRetry(t *testing.T) {
	srv, _, _ := startSim(t)
	ctx := context.Background()
	url := srv.URL() + "/api/graphql"
	other := ghboard.New(ghboard.NewClient(&http.Client{Transport: bearer("alice-token")}, url, ghboard.Unpaced()),
		"Workflow State", ghboard.NewFieldCache())
	items, err := other.IssueItems(ctx, "acme", "app", 3)
	if err != nil || len(items) != 1 {
		t.Fatalf("%+v %v", items, err)
	}
	it := items[0]
	if err := other.SetState(ctx, it, "In Review"); err != nil {
		t.Fatal(err)
	}
	flaky := &failingFirstWrite{next: bearer("alice-token"), between: func() {
		if err := other.SetState(ctx, it, "Backlog"); err != nil {
			t.Error(err)
		}
	}}
	b := ghboard.New(ghboard.NewClient(&http.Client{Transport: flaky}, url, ghboard.Unpaced()), "Workflow State", ghboard.NewFieldCache())
	if err := setStateIf(ctx, b, it, "In Review", "Done"); !errors.Is(err, enforce.ErrBoardMoved) {
		t.Fatalf("the retried guarded write: %v, want ErrBoardMoved (the card was moved before the retry)", err)
	}
	if got, _ := other.Item(ctx, it.ID); got.State != "Backlog" {
		t.Fatalf("the card shows %q, want the person's Backlog", got.State)
	}
	// Not moved meanwhile, the retry writes.
	flaky.failed.Store(false)
	flaky.between = func() {}
	if err := setStateIf(ctx, b, it, "Backlog", "Done"); err != nil {
		t.Fatalf("the retried guarded write over an unmoved card: %v", err)
	}
	if got, _ := other.Item(ctx, it.ID); got.State != "Done" {
		t.Fatalf("the card shows %q, want Done", got.State)
	}
}
