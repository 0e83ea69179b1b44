package health_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/health"
	"github.com/ralph-gate/ralph-gate/policy"
)

// With the organizations' policies, the report lists each one's commit in force (and the
// newest refused push), and reports their projects after the configured ones, each with its
// organization's workflow and mode; an error reading them fails the report.
func TestReportOrgs(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	var b board
	b.records = append(b.records, rec("I1", 1, "Backlog", now.Add(-time.Hour)))
	b.write(t, st)
	short := policy.DefaultSpec()
	short.States = short.States[:3]
	opts := options
	opts.Orgs = func(context.Context) ([]health.Org, error) {
		return []health.Org{
			{Owner: "globex", Commit: "abc", Since: now.Add(-time.Hour), Refused: "def", RefusedAt: now, RefusedWhy: "projects: list at least one",
				Projects: []enforce.ProjectRef{{Owner: "globex", Number: 2}}, Spec: short,
				Mode: func(string, int) enforce.Mode { return enforce.ModeEvaluate }},
			{Owner: "initech"},
		}, nil
	}
	rep, err := health.New(source{Store: st, sweep: now.Add(-time.Minute)}, opts).Report(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Orgs) != 2 || rep.Orgs[0].Commit != "abc" || rep.Orgs[0].Refused != "def" || rep.Orgs[1].Commit != "" {
		t.Errorf("orgs %+v", rep.Orgs)
	}
	if len(rep.Projects) != 2 || rep.Projects[0].Owner != acme3.Owner || rep.Projects[1].Owner != "globex" || rep.Projects[1].Number != 2 {
		t.Fatalf("projects %+v", rep.Projects)
	}
	if g := rep.Projects[1]; g.Mode != "evaluate" || len(g.States) != 3 {
		t.Errorf("globex/2 has mode %q and %d states, want its policy's evaluate and 3", g.Mode, len(g.States))
	}
	opts.Orgs = func(context.Context) ([]health.Org, error) { return nil, errors.New("store down") }
	if _, err := health.New(source{Store: st}, opts).Report(context.Background(), now); err == nil {
		t.Error("a report without the organizations' policies did not fail")
	}
}
