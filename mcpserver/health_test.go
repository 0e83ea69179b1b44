package mcpserver

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/health"
	"github.com/ralph-gate/ralph-gate/mcpserver/toolspec"
	"github.com/ralph-gate/ralph-gate/policy"
	"github.com/ralph-gate/ralph-gate/store"
)

// healthSource is the fixture's store with no redelivery sweep yet.
type healthSource struct{ *store.Store }

func (healthSource) LastSweep(context.Context) (time.Time, error) { return time.Time{}, nil }

func TestBoardHealth(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	project := enforce.ProjectRef{Owner: "acme", Number: 1}
	for _, rec := range []enforce.Record{
		{ItemID: "PVTI_1", ProjectID: "PVT_1", Repo: "acme/app", IssueNumber: 1, LastLegalState: "In Progress", LegalAt: now.Add(-6 * time.Hour),
			LockHolder: "agent-1", LockSince: now.Add(-6 * time.Hour), UpdatedAt: now.Add(-time.Hour)},
		{ItemID: "PVTI_2", ProjectID: "PVT_1", Repo: "acme/app", IssueNumber: 2, LastLegalState: "Human Needed", LegalAt: now.Add(-time.Hour),
			UpdatedAt: now.Add(-time.Hour)},
	} {
		if ok, err := f.st.CompareAndSetItem(ctx, rec, 0); err != nil || !ok {
			t.Fatal(ok, err)
		}
	}
	if err := f.st.PutSnapshot(ctx, "PVT_1", []enforce.Item{
		{ID: "PVTI_1", Repo: "acme/app", Number: 1, Title: "Locked", Open: true, State: "In Progress"},
		{ID: "PVTI_2", Repo: "acme/app", Number: 2, Title: "Waiting", Open: true, State: "Human Needed"},
	}, now.Add(-2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	status, _ := json.Marshal(enforce.PassStatus{ProjectID: "PVT_1", Started: now.Add(-2 * time.Hour), Completed: now.Add(-2 * time.Hour),
		CompletedFrom: now.Add(-2 * time.Hour)})
	if err := f.st.PutCursor(ctx, enforce.PassStatusCursor(project), string(status)); err != nil {
		t.Fatal(err)
	}
	reader := health.New(healthSource{f.st}, health.Options{Projects: []enforce.ProjectRef{project}, Spec: policy.DefaultSpec(),
		StaleLockAfter: 4 * time.Hour, HumanWaitAfter: 24 * time.Hour})
	f.opts.Health, f.opts.Now = reader, func() time.Time { return now }
	want, err := reader.Report(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	cs := f.session("agent-1")

	tests := []struct {
		name    string
		args    map[string]any
		refusal string // "" for a report
	}{
		{name: "every project", args: map[string]any{}},
		{name: "one project", args: map[string]any{"project": "acme/1"}},
		{name: "owner in another case", args: map[string]any{"project": "ACME/1"}},
		{name: "not enforced", args: map[string]any{"project": "acme/2"}, refusal: `Project acme/2 is not enforced. the report covers only the configured projects. Recovery: retry with project "acme/1" (or leave project out)`},
		{name: "not a project", args: map[string]any{"project": "acme"}, refusal: `"acme" is not a project: want owner/number`},
		{name: "a number", args: map[string]any{"project": 1}, refusal: "project"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got health.Report
			msg := callTool(t, cs, toolspec.BoardHealth, tt.args, &got)
			if tt.refusal != "" {
				if !strings.Contains(msg, tt.refusal) || !strings.Contains(msg, "Recovery:") {
					t.Fatalf("refusal %q, want it to say %q", msg, tt.refusal)
				}
				return
			}
			if msg != "" {
				t.Fatalf("refused: %s", msg)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("board_health answered\n%+v\nwant the reader's\n%+v", got, want)
			}
			p := got.Projects[0]
			if len(p.Locks) != 1 || !p.Locks[0].Stale || p.Locks[0].Item.Title != "Locked" || len(p.HumanNeeded) != 1 || p.Hygiene[0].Kind != health.FindingStaleLock {
				t.Errorf("project %+v", p)
			}
		})
	}
}
