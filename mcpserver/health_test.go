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

	// project is a project number, as every tool takes it; owner picks the organization.
	tests := []struct {
		name     string
		args     map[string]any
		projects []enforce.ProjectRef // the enforced projects, when not only acme/1
		refusal  string               // "" for a report
		replay   bool                 // the Recovery's retry gets the report
	}{
		{name: "every project", args: map[string]any{}},
		{name: "one project", args: map[string]any{"project": 1}},
		{name: "one project of an organization", args: map[string]any{"owner": "acme", "project": 1}},
		{name: "owner in another case", args: map[string]any{"owner": "ACME", "project": 1}},
		{name: "an organization's projects", args: map[string]any{"owner": "acme"}},
		{name: "not enforced", args: map[string]any{"project": 2},
			refusal: `Project 2 is not enforced. The report covers only the configured projects. Recovery: retry with project 1 (or leave project out)`, replay: true},
		{name: "not enforced in the organization", args: map[string]any{"owner": "acme", "project": 7},
			refusal: `Project 7 of acme is not enforced. The report covers only the configured projects. Recovery: retry with project 1 (or leave project out)`, replay: true},
		{name: "an organization not enforced", args: map[string]any{"owner": "globex", "project": 1},
			refusal: `Organization "globex" has no project ralph-gate enforces`, replay: true},
		{name: "owner/number as before", args: map[string]any{"project": "acme/1"},
			refusal: "board_health: argument `project` must be an integer, got a string (\"acme/1\")", replay: true},
		{name: "a number as a string", args: map[string]any{"project": "1"},
			refusal: "Recovery: retry with project 1", replay: true},
		{name: "a number on two organizations", args: map[string]any{"project": 1},
			projects: []enforce.ProjectRef{project, {Owner: "globex", Number: 1}},
			refusal:  `Project 1 is ambiguous. Projects of several organizations have that number: acme, globex. Recovery: retry with owner "acme" or "globex"`, replay: true},
		{name: "negative", args: map[string]any{"project": -1}, refusal: "Invalid project"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := cs
			if tt.projects != nil {
				saved := f.opts.Projects
				f.opts.Projects = tt.projects
				cs = f.session("agent-1")
				f.opts.Projects = saved
			}
			var got health.Report
			msg := callTool(t, cs, toolspec.BoardHealth, tt.args, &got)
			if tt.refusal != "" {
				if !strings.Contains(msg, tt.refusal) || !strings.Contains(msg, "Recovery:") {
					t.Fatalf("refusal %q, want it to say %q", msg, tt.refusal)
				}
				if !tt.replay {
					return
				}
				// The retry the Recovery asks for gets the report.
				again := replay(t, specOf(t, toolspec.BoardHealth), tt.args, parseRecovery(t, msg), nil)
				if msg := callTool(t, cs, toolspec.BoardHealth, again, &got); msg != "" {
					t.Fatalf("the retry %v is refused: %s", again, msg)
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
