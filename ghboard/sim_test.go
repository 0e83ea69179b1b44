package ghboard_test

import (
	"context"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/ghboard"
	"github.com/ralph-gate/ralph-gate/ghsim"
)

// The adapter against the simulator: comment ids past 2^31 round-trip, and archived items are
// read as archived wherever the app may move them from.

const simSeed = `org: acme
app: {id: 1001, slug: ralph-gate, installation_id: 2002, webhook_secret: s3cret}
users:
  - {login: alice, token: alice-token}
repos: [app]
projects:
  - number: 1
    title: Ralph
    fields:
      Workflow State: [Backlog, Research Needed, Ready for Plan, In Progress, In Review, Done, Canceled, Human Needed]
      Estimate: [XS, S, M]
issues:
  - {repo: app, number: 1, title: Parent, project: 1, fields: {Workflow State: In Progress}}
  - {repo: app, number: 2, title: Archived child, parent: 1, project: 1, fields: {Workflow State: In Progress, Estimate: S}}
  - {repo: app, number: 3, title: Child, parent: 1, project: 1, fields: {Workflow State: Backlog}}
  - {repo: app, number: 4, title: Commented, comments: [{author: alice, body: "seeded"}]}
`

type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// startSim runs ghsim on simSeed and returns it with a board as alice.
func startSim(t *testing.T) (*ghsim.Server, *ghboard.Board, *ghboard.Client) {
	t.Helper()
	seed, err := ghsim.ParseSeed([]byte(simSeed))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ghsim.New(seed, ghsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	url, err := srv.Start(ctx, "127.0.0.1:0")
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = srv.Close()
	})
	c := ghboard.NewClient(&http.Client{Transport: bearer("alice-token")}, url+"/api/graphql")
	return srv, ghboard.New(c, "Workflow State", ghboard.NewFieldCache()), c
}

func TestCommentIDPastInt32RoundTrips(t *testing.T) {
	srv, b, _ := startSim(t)
	ctx := context.Background()
	is4, _ := srv.State().Issue("app", 4)
	if is4.Comments[0].ID <= math.MaxInt32 {
		t.Fatalf("ghsim's comment ids must be past 2^31: %d", is4.Comments[0].ID)
	}
	c, err := b.AddComment(ctx, is4.NodeID, "<!-- ralph-transition marker -->")
	if err != nil {
		t.Fatal(err)
	}
	is4, _ = srv.State().Issue("app", 4)
	want := is4.Comments[len(is4.Comments)-1]
	if c.ID != want.NodeID || c.DatabaseID != want.ID || c.DatabaseID <= math.MaxInt32 {
		t.Fatalf("AddComment: %+v, want id %d (%s)", c, want.ID, want.NodeID)
	}
	found, ok, err := b.FindComment(ctx, is4.NodeID, "ralph-transition marker")
	if err != nil || !ok || found != c {
		t.Fatalf("FindComment: %+v %v %v, want %+v", found, ok, err, c)
	}
	if err := b.UpdateComment(ctx, c.ID, "edited"); err != nil {
		t.Fatal(err)
	}
}

func TestArchivedItemsReadAsArchived(t *testing.T) {
	srv, b, c := startSim(t)
	ctx := context.Background()
	items, err := b.IssueItems(ctx, "acme", "app", 2)
	if err != nil || len(items) != 1 || items[0].Archived {
		t.Fatalf("before archiving: %+v %v", items, err)
	}
	if err := c.Do(ctx, `mutation($p: ID!, $i: ID!) { archiveProjectV2Item(input: {projectId: $p, itemId: $i}) { item { id } } }`,
		map[string]any{"p": items[0].ProjectID, "i": items[0].ID}, nil); err != nil {
		t.Fatal(err)
	}
	archivedID := items[0].ID

	// IssueItems lists it (projectItems includes archived items by default), marked.
	items, err = b.IssueItems(ctx, "acme", "app", 2)
	if err != nil || len(items) != 1 || items[0].ID != archivedID || !items[0].Archived || items[0].State != "In Progress" {
		t.Fatalf("IssueItems: %+v %v", items, err)
	}
	// Item reads it as archived.
	it, err := b.Item(ctx, archivedID)
	if err != nil || !it.Archived {
		t.Fatalf("Item: %+v %v", it, err)
	}
	// Family: the parent sees its archived child as on the project and archived, the child its
	// own item archived; the other child is not.
	is1, _ := srv.State().Issue("app", 1)
	fam, err := b.Family(ctx, is1.NodeID, it.ProjectID)
	if err != nil || len(fam.Children) != 2 {
		t.Fatalf("Family: %+v %v", fam, err)
	}
	for _, ch := range fam.Children {
		if ch.ItemID == "" || ch.Archived != (ch.Number == 2) {
			t.Errorf("child #%d: %+v", ch.Number, ch)
		}
		if ch.Number == 2 && (ch.ItemID != archivedID || ch.State != "In Progress" || ch.Estimate != "S") {
			t.Errorf("archived child: %+v", ch)
		}
	}
	is2, _ := srv.State().Issue("app", 2)
	fam, err = b.Family(ctx, is2.NodeID, it.ProjectID)
	if err != nil || !fam.Self.Archived || fam.Parent == nil || fam.Parent.Archived {
		t.Fatalf("Family of the archived child: %+v %v", fam, err)
	}
	// The project's items leave it out (archivedStates defaults to NOT_ARCHIVED).
	page, err := b.ProjectItems(ctx, "acme", 1, "")
	if err != nil || page.Total != 2 || len(page.Items) != 2 {
		t.Fatalf("ProjectItems: %+v %v", page, err)
	}
	for _, pi := range page.Items {
		if pi.ID == archivedID || pi.Archived {
			t.Errorf("ProjectItems lists the archived item: %+v", pi)
		}
	}
}

// TestFamilyReadsWhenEachItemLastChanged: a relative carries its item's updatedAt, which a
// change of any of its fields moves on (fieldsAt takes the fields as read when nothing changed
// since a cause).
func TestFamilyReadsWhenEachItemLastChanged(t *testing.T) {
	srv, b, _ := startSim(t)
	ctx := context.Background()
	is1, _ := srv.State().Issue("app", 1)
	items, err := b.IssueItems(ctx, "acme", "app", 3)
	if err != nil || len(items) != 1 {
		t.Fatalf("IssueItems: %+v %v", items, err)
	}
	child := func() enforce.Relative {
		t.Helper()
		fam, err := b.Family(ctx, is1.NodeID, items[0].ProjectID)
		if err != nil {
			t.Fatal(err)
		}
		for _, ch := range fam.Children {
			if ch.Number == 3 {
				return ch
			}
		}
		t.Fatalf("no child #3 in %+v", fam)
		return enforce.Relative{}
	}
	first := child()
	if first.UpdatedAt.IsZero() || first.ItemID == "" {
		t.Fatalf("child #3 read without its item's updatedAt: %+v", first)
	}
	before := time.Now().Truncate(time.Second)
	it, err := b.Item(ctx, first.ItemID)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.SetState(ctx, it, "Research Needed"); err != nil {
		t.Fatal(err)
	}
	if after := child(); after.UpdatedAt.Before(before) || after.State != "Research Needed" {
		t.Fatalf("after a change at %s the child reads %+v", before, after)
	}
}
