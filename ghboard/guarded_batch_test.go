package ghboard_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/ghboard"
	"github.com/ralph-gate/ralph-gate/ghsim"
)

// startSimWith runs ghsim on a seed and returns it with its URL.
func startSimWith(t *testing.T, seedYAML string) *ghsim.Server {
	t.Helper()
	seed, err := ghsim.ParseSeed([]byte(seedYAML))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ghsim.New(seed, ghsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := srv.Start(ctx, "127.0.0.1:0"); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = srv.Close()
	})
	return srv
}

// columnSeed is a project with n issues in In Progress (a column someone is about to bulk-edit).
func columnSeed(n int) string {
	var b strings.Builder
	b.WriteString(`org: acme
app: {id: 1001, slug: ralph-gate, installation_id: 2002, webhook_secret: s3cret}
users:
  - {login: alice, token: alice-token}
repos: [app]
projects:
  - number: 1
    title: Ralph
    fields:
      Workflow State: [Backlog, In Progress, Done]
issues:
`)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "  - {repo: app, number: %d, title: Issue %d, project: 1, fields: {Workflow State: Done}}\n", i, i)
	}
	return b.String()
}

// Concurrent guarded writes (a storm's reverts) share write turns: each turn reads every
// waiting item in one request and writes the unmoved ones in one aliased mutation. A card moved
// meanwhile is still left alone, and its write alone fails.
func TestGuardedWritesShareTheirTurn(t *testing.T) {
	const n = 40
	srv := startSimWith(t, columnSeed(n))
	ctx := context.Background()
	url := srv.URL() + "/api/graphql"
	app := ghboard.New(ghboard.NewClient(&http.Client{Transport: bearer("alice-token")}, url, ghboard.WithMinWriteGap(150*time.Millisecond)),
		"Workflow State", ghboard.NewFieldCache())
	person := ghboard.New(ghboard.NewClient(&http.Client{Transport: bearer("alice-token")}, url, ghboard.Unpaced()),
		"Workflow State", ghboard.NewFieldCache())
	items := make([]enforce.Item, n)
	for i := range items {
		its, err := app.IssueItems(ctx, "acme", "app", i+1)
		if err != nil || len(its) != 1 {
			t.Fatalf("issue %d: %+v %v", i+1, its, err)
		}
		items[i] = its[0]
	}
	// Someone moved #7 on meanwhile: its revert must not be written.
	if err := person.SetState(ctx, items[6], "Backlog"); err != nil {
		t.Fatal(err)
	}
	before := srv.Requests().Total
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range items {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = setStateIf(ctx, app, items[i], "Done", "In Progress")
		}()
	}
	wg.Wait()
	for i, err := range errs {
		got, rerr := person.Item(ctx, items[i].ID)
		if rerr != nil {
			t.Fatal(rerr)
		}
		if i == 6 {
			if !errors.Is(err, enforce.ErrBoardMoved) || got.State != "Backlog" {
				t.Errorf("#7, moved meanwhile: %v, shows %q; want ErrBoardMoved and Backlog kept", err, got.State)
			}
			continue
		}
		if err != nil || got.State != "In Progress" {
			t.Errorf("#%d: %v, shows %q; want written", i+1, err, got.State)
		}
	}
	turns, carried := app.GuardedTurns()
	requests := int64(srv.Requests().Total - before - n) // the checks above read each item once
	if carried != n || turns > 4 || requests > 2*turns+1 {
		t.Fatalf("%d guarded writes took %d turns and %d requests; want them shared (at most 4 turns, 2 requests each, and the field read once)", carried, turns, requests)
	}
	t.Logf("%d guarded writes: %d turns, %d requests", n, turns, requests)
}

// SetStatesIf queues its writes together: 60 of them take two turns (50, then 10), each one
// read of its cards and one mutation, and a card moved meanwhile is left as it is.
func TestSetStatesIfSharesTurns(t *testing.T) {
	const n = 60
	srv := startSimWith(t, columnSeed(n))
	ctx := context.Background()
	url := srv.URL() + "/api/graphql"
	app := ghboard.New(ghboard.NewClient(&http.Client{Transport: bearer("alice-token")}, url, ghboard.Unpaced()),
		"Workflow State", ghboard.NewFieldCache())
	writes := make([]enforce.StateWrite, n)
	for i := range writes {
		its, err := app.IssueItems(ctx, "acme", "app", i+1)
		if err != nil || len(its) != 1 {
			t.Fatalf("issue %d: %+v %v", i+1, its, err)
		}
		writes[i] = enforce.StateWrite{Item: its[0], From: "Done", State: "In Progress"}
	}
	if err := app.SetState(ctx, writes[6].Item, "Backlog"); err != nil { // moved meanwhile
		t.Fatal(err)
	}
	before := srv.Requests().Total
	errs := app.SetStatesIf(ctx, writes)
	requests := srv.Requests().Total - before
	for i, err := range errs {
		got, rerr := app.Item(ctx, writes[i].Item.ID)
		if rerr != nil {
			t.Fatal(rerr)
		}
		want := "In Progress"
		if i == 6 {
			want = "Backlog"
			if !errors.Is(err, enforce.ErrBoardMoved) {
				t.Errorf("#7: %v, want ErrBoardMoved", err)
			}
		} else if err != nil {
			t.Errorf("#%d: %v", i+1, err)
		}
		if got.State != want {
			t.Errorf("#%d shows %q, want %q", i+1, got.State, want)
		}
	}
	if turns, carried := app.GuardedTurns(); turns != 2 || carried != n || int64(requests) > 2*turns {
		t.Fatalf("%d writes: %d turns, %d requests; want 2 turns of a read and a write", carried, turns, requests)
	}
}

// A waiting board write goes before a waiting comment, whatever their order of arrival.
func TestBoardWritesGoBeforeComments(t *testing.T) {
	srv := startSimWith(t, columnSeed(3))
	ctx := context.Background()
	url := srv.URL() + "/api/graphql"
	app := ghboard.New(ghboard.NewClient(&http.Client{Transport: bearer("alice-token")}, url, ghboard.WithMinWriteGap(300*time.Millisecond)),
		"Workflow State", ghboard.NewFieldCache())
	its, err := app.IssueItems(ctx, "acme", "app", 1)
	if err != nil || len(its) != 1 {
		t.Fatalf("%+v %v", its, err)
	}
	it := its[0]
	if err := app.SetState(ctx, it, "Done"); err != nil { // the turn is now 300 ms away
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		if _, err := app.AddComment(ctx, it.ContentID, "explained"); err != nil {
			t.Error(err)
		}
		mu.Lock()
		order = append(order, "comment")
		mu.Unlock()
	}()
	time.Sleep(50 * time.Millisecond) // the comment waits for the turn first
	go func() {
		defer wg.Done()
		if err := setStateIf(ctx, app, it, "Done", "In Progress"); err != nil {
			t.Error(err)
		}
		mu.Lock()
		order = append(order, "revert")
		mu.Unlock()
	}()
	time.Sleep(50 * time.Millisecond)
	wg.Wait()
	if strings.Join(order, ",") != "revert,comment" {
		t.Fatalf("order %v: the revert, though later, must go first", order)
	}
}
