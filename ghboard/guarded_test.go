package ghboard_test

import (
	"context"
	"errors"
	"net/http"
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
