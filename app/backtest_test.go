package app

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/store"
)

// The window every backtest test replays: the 7 days before btUntil.
var (
	btUntil = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	btSince = btUntil.Add(-DefaultBacktestDays * 24 * time.Hour)
)

// btFile is an organization's policy file: its projects, its workflow section's body (btReqs:
// a merged pull request into Done), its actors — builders of a worker role, bypass as given —
// and, with agents, builder-1 working through the façade.
func btFile(projects, bypass, workflow string, agents bool) string {
	f := projects + "workflow:\n" + workflow + "actors:\n  agents: [\"*[bot]\", agent-*]\n  bypass: [" + bypass + "]\n  roles:\n" +
		"    builder: {agents: [\"builder-*\"], owns: [Ready for Plan, Plan in Progress, In Progress]}\n"
	if agents {
		f += "mcp:\n  agents:\n    - {name: builder-1, role: builder}\n"
	}
	return f
}

const (
	btProjects = "projects:\n  - number: 1\n  - number: 2\n"
	btReqs     = "  requirements:\n    - {into: [Done], pull_request: merged}\n"
)

// btConfig is the organization's configuration its file makes on a deployment that lists
// builder-1.
func btConfig(t *testing.T, file string) config.Config {
	t.Helper()
	base, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	base.MCP.Agents = append(base.MCP.Agents, config.MCPAgent{Name: "builder-1", TokenSHA256: strings.Repeat("ab", 32)})
	cfg, problems := base.ForOrganization("acme", []byte(file))
	if len(problems) > 0 {
		t.Fatalf("the file has problems: %v\n%s", problems, file)
	}
	return cfg
}

// btStore is an SQLite store that knows the node ids of acme's projects 1 (PVT_1) and 2
// (PVT_2), as the reconciler records them, and holds entries.
func btStore(t *testing.T, entries []enforce.AuditEntry) *store.Store {
	t.Helper()
	st, err := store.Open(t.Context(), store.DriverSQLite, filepath.Join(t.TempDir(), "ralph-gate.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for n, id := range map[int]string{1: "PVT_1", 2: "PVT_2"} {
		data, err := json.Marshal(enforce.PassStatus{ProjectID: id})
		if err != nil {
			t.Fatal(err)
		}
		// (GitHub's spelling of the owner, which the backtest's need not match)
		if err := st.PutCursor(t.Context(), enforce.PassStatusCursor(enforce.ProjectRef{Owner: "Acme", Number: n}), string(data)); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range entries {
		if _, err := st.AppendAudit(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// mv is a recorded decision on acme/web#issue of project p, min minutes before btUntil.
func mv(min int, p, actor, kind string, issue int, from, to string, v enforce.Verdict, rule string) enforce.AuditEntry {
	return enforce.AuditEntry{At: btUntil.Add(-time.Duration(min) * time.Minute), ProjectID: p, ItemID: fmt.Sprintf("I%d", issue), IssueNumber: issue,
		Repo: "acme/web", Actor: actor, ActorKind: kind, FromState: from, ToState: to, Verdict: v, Rule: rule}
}

func withCause(e enforce.AuditEntry, cause string) enforce.AuditEntry {
	e.Cause = cause
	return e
}

// A week of acme's decisions of every sort, on projects 1 and 2.
func btWeek() []enforce.AuditEntry {
	return []enforce.AuditEntry{
		mv(10, "PVT_1", "alice", "human", 1, "Backlog", "Ready for Plan", enforce.VerdictAllowed, "legal"),
		mv(20, "PVT_1", "agent-1", "agent", 2, "Ready for Plan", "Done", enforce.VerdictReverted, "transition"),
		mv(30, "PVT_1", "agent-1", "agent", 3, "Done", "Backlog", enforce.VerdictReverted, "humans_only"),
		mv(40, "PVT_1", "agent-1", "agent", 4, "Backlog", "Research Needed", enforce.VerdictAllowed, "legal"),
		mv(50, "PVT_1", "agent-2", "agent", 5, "Ready for Plan", "Plan in Progress", enforce.VerdictReverted, "convergence"),
		mv(60, "PVT_1", "agent-2", "agent", 6, "In Review", "Done", enforce.VerdictReverted, "requirement"),
		mv(70, "PVT_2", "agent-2", "agent", 7, "Ready for Plan", "Done", enforce.VerdictReverted, "transition"),
		withCause(mv(80, "PVT_1", "builder-1", "agent", 8, "Ready for Plan", "Plan in Progress", enforce.VerdictHandoff, "legal"), "mcp plan"),
		withCause(mv(90, "PVT_1", "builder-1", "agent", 9, "Ready for Plan", "Done", enforce.VerdictIgnored, "transition"), "mcp plan"),
		withCause(mv(100, "PVT_1", "ralph-gate[bot]", "app", 10, "Backlog", "Research Needed", enforce.VerdictAutomated, "automation"), "cascade: parent #1"),
		withCause(mv(110, "PVT_1", "alice", "human", 11, "In Review", "Done", enforce.VerdictAutomated, "legal"), "issue closed by alice"),
		// No move of an actor: not replayed.
		mv(120, "PVT_1", enforce.DriftActor, "unknown", 12, "", "Backlog", enforce.VerdictAdopted, "adopted"),
		mv(130, "PVT_1", "ralph-gate[bot]", "app", 13, "Done", "Ready for Plan", enforce.VerdictWithdrawn, "provisional"),
		mv(140, "PVT_1", "ralph-gate[bot]", "app", 14, "Backlog", "Ready for Plan", enforce.VerdictIgnored, ""),
		// On a project the store cannot name; on another organization's; outside the window.
		mv(150, "PVT_9", "alice", "human", 15, "Backlog", "Ready for Plan", enforce.VerdictAllowed, "legal"),
		{At: btUntil.Add(-time.Hour), ProjectID: "PVT_X", Repo: "globex/app", IssueNumber: 16, Actor: "bob", ActorKind: "human", ToState: "Backlog", Verdict: enforce.VerdictAllowed},
		mv(8*24*60, "PVT_1", "agent-1", "agent", 17, "Ready for Plan", "Done", enforce.VerdictReverted, "transition"),
		mv(-1, "PVT_1", "agent-1", "agent", 18, "Ready for Plan", "Done", enforce.VerdictReverted, "transition"),
	}
}

func TestBacktest(t *testing.T) {
	current := btFile(btProjects, "", btReqs, true)
	tests := []struct {
		name     string
		proposed string
		// want are the result's counts and groupings (Since, Until and Owner aside), compared
		// with check when it is set.
		want  BacktestResult
		check func(t *testing.T, r BacktestResult)
	}{
		{name: "an unchanged policy decides nothing differently; gate and requirement refusals are kept as recorded",
			proposed: current,
			want: BacktestResult{Decisions: 15, Moves: 11, NotMoves: 3, Unidentified: 1, KeptAsRecorded: 2, Lifecycle: 1,
				Projects: []BacktestProject{{Number: 1, Current: "enforce", Proposed: "enforce", Moves: 10}, {Number: 2, Current: "enforce", Proposed: "enforce", Moves: 1}}}},
		{name: "a bypass added for an agent turns its recorded reverts into allowed moves",
			proposed: btFile(btProjects, "agent-1", btReqs, true),
			want: BacktestResult{Decisions: 15, Moves: 11, NotMoves: 3, Unidentified: 1, KeptAsRecorded: 2, Lifecycle: 1, Different: 2,
				Changes: []BacktestChange{
					{Recorded: OutcomeReverted, RecordedRule: "humans_only", Proposed: OutcomeAllowed, ProposedRule: "bypass", Moves: 1},
					{Recorded: OutcomeReverted, RecordedRule: "transition", Proposed: OutcomeAllowed, ProposedRule: "bypass", Moves: 1}},
				Actors: []BacktestActor{{Actor: "agent-1", RecordedKind: "agent", ProposedKind: "bypass", Different: 2}},
				Projects: []BacktestProject{{Number: 1, Current: "enforce", Proposed: "enforce", Moves: 10, Different: 2},
					{Number: 2, Current: "enforce", Proposed: "enforce", Moves: 1}}},
			check: func(t *testing.T, r BacktestResult) {
				want := []string{"I3", "I2"} // newest first
				if len(r.Newest) != 2 || r.Newest[0].Issue != 2 || r.Newest[1].Issue != 3 || r.Newest[0].From != "Ready for Plan" || r.Newest[0].To != "Done" {
					t.Errorf("newest differences %+v, want issues %v", r.Newest, want)
				}
			}},
		{name: "a project removed stops being enforced: its moves are no longer enforced",
			proposed: btFile("projects:\n  - number: 2\n", "", btReqs, true),
			want: BacktestResult{Decisions: 15, Moves: 11, NotMoves: 3, Unidentified: 1, NoLongerEnforced: 10, Different: 10,
				Changes: []BacktestChange{
					{Recorded: OutcomeAllowed, RecordedRule: "legal", Proposed: OutcomeNotEnforced, Moves: 2},
					{Recorded: OutcomeAutomated, RecordedRule: "automation", Proposed: OutcomeNotEnforced, Moves: 1},
					{Recorded: OutcomeAutomated, RecordedRule: "legal", Proposed: OutcomeNotEnforced, Moves: 1},
					{Recorded: OutcomeHandoff, RecordedRule: "legal", Proposed: OutcomeNotEnforced, Moves: 1},
					{Recorded: OutcomeRefusedHandoff, RecordedRule: "transition", Proposed: OutcomeNotEnforced, Moves: 1},
					{Recorded: OutcomeReverted, RecordedRule: "convergence", Proposed: OutcomeNotEnforced, Moves: 1},
					{Recorded: OutcomeReverted, RecordedRule: "humans_only", Proposed: OutcomeNotEnforced, Moves: 1},
					{Recorded: OutcomeReverted, RecordedRule: "requirement", Proposed: OutcomeNotEnforced, Moves: 1},
					{Recorded: OutcomeReverted, RecordedRule: "transition", Proposed: OutcomeNotEnforced, Moves: 1}},
				Projects: []BacktestProject{{Number: 1, Current: "enforce", Moves: 10, Different: 10},
					{Number: 2, Current: "enforce", Proposed: "enforce", Moves: 1}}},
			check: func(t *testing.T, r BacktestResult) {
				if !r.Projects[0].Stops() || r.Projects[1].Stops() || r.Projects[1].Starts() {
					t.Errorf("projects %+v", r.Projects)
				}
			}},
		{name: "a mode changed to evaluate leaves refused moves standing and runs no automation",
			proposed: btFile("projects:\n  - {number: 1, mode: evaluate}\n  - number: 2\n", "", btReqs, true),
			want: BacktestResult{Decisions: 15, Moves: 11, NotMoves: 3, Unidentified: 1, KeptAsRecorded: 2, Lifecycle: 1, Different: 6,
				Changes: []BacktestChange{
					{Recorded: OutcomeAutomated, RecordedRule: "automation", Proposed: OutcomeNotAutomated, ProposedRule: "automation", Moves: 1},
					{Recorded: OutcomeAutomated, RecordedRule: "legal", Proposed: OutcomeAllowed, ProposedRule: "legal", Moves: 1},
					{Recorded: OutcomeReverted, RecordedRule: "convergence", Proposed: OutcomeWouldRevert, ProposedRule: "convergence", Moves: 1},
					{Recorded: OutcomeReverted, RecordedRule: "humans_only", Proposed: OutcomeWouldRevert, ProposedRule: "humans_only", Moves: 1},
					{Recorded: OutcomeReverted, RecordedRule: "requirement", Proposed: OutcomeWouldRevert, ProposedRule: "requirement", Moves: 1},
					{Recorded: OutcomeReverted, RecordedRule: "transition", Proposed: OutcomeWouldRevert, ProposedRule: "transition", Moves: 1}},
				Projects: []BacktestProject{{Number: 1, Current: "enforce", Proposed: "evaluate", Moves: 10, Different: 6},
					{Number: 2, Current: "enforce", Proposed: "enforce", Moves: 1}}},
			check: func(t *testing.T, r BacktestResult) {
				// (a handoff is the façade's, whatever the mode: it stays)
				if !r.Projects[0].ModeChanges() || r.Projects[1].ModeChanges() {
					t.Errorf("projects %+v", r.Projects)
				}
				if n := len(r.Actors); n != 4 {
					t.Errorf("%d actors, want agent-1, agent-2, alice and the app: %+v", n, r.Actors)
				}
			}},
		{name: "gates and requirements: kept as recorded when the proposed policy lifts them; flagged when it adds them",
			proposed: btFile(btProjects, "", "  gates: {convergence: false}\n"+btReqs+"    - {into: [Research Needed], fields: [Estimate]}\n", true),
			want: BacktestResult{Decisions: 15, Moves: 11, NotMoves: 3, Unidentified: 1, KeptAsRecorded: 2, GateNotChecked: 1, Unchecked: 1, Lifecycle: 1,
				Projects: []BacktestProject{{Number: 1, Current: "enforce", Proposed: "enforce", Moves: 10}, {Number: 2, Current: "enforce", Proposed: "enforce", Moves: 1}}}},
		{name: "an agent the proposed policy does not name cannot hand off",
			proposed: btFile(btProjects, "", btReqs, false),
			want: BacktestResult{Decisions: 15, Moves: 11, NotMoves: 3, Unidentified: 1, KeptAsRecorded: 2, Lifecycle: 1, Different: 2,
				Changes: []BacktestChange{
					{Recorded: OutcomeHandoff, RecordedRule: "legal", Proposed: OutcomeRefusedHandoff, ProposedRule: "agent", Moves: 1},
					{Recorded: OutcomeRefusedHandoff, RecordedRule: "transition", Proposed: OutcomeRefusedHandoff, ProposedRule: "agent", Moves: 1}},
				Actors: []BacktestActor{{Actor: "builder-1", RecordedKind: "agent", ProposedKind: "agent", Different: 2}},
				Projects: []BacktestProject{{Number: 1, Current: "enforce", Proposed: "enforce", Moves: 10, Different: 2},
					{Number: 2, Current: "enforce", Proposed: "enforce", Moves: 1}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := btStore(t, btWeek())
			got, err := Backtest(t.Context(), st, "acme", btConfig(t, current), btConfig(t, tc.proposed), "", btSince, btUntil)
			if err != nil {
				t.Fatal(err)
			}
			if got.Owner != "acme" || !got.Since.Equal(btSince) || !got.Until.Equal(btUntil) || got.Capped {
				t.Errorf("owner %q, window %v to %v, capped %v", got.Owner, got.Since, got.Until, got.Capped)
			}
			want := tc.want
			for _, f := range []struct {
				name      string
				got, want int
			}{
				{"decisions", got.Decisions, want.Decisions}, {"moves", got.Moves, want.Moves}, {"not moves", got.NotMoves, want.NotMoves},
				{"unidentified", got.Unidentified, want.Unidentified}, {"different", got.Different, want.Different},
				{"no longer enforced", got.NoLongerEnforced, want.NoLongerEnforced}, {"kept as recorded", got.KeptAsRecorded, want.KeptAsRecorded},
				{"gate not checked", got.GateNotChecked, want.GateNotChecked}, {"unchecked", got.Unchecked, want.Unchecked},
				{"lifecycle", got.Lifecycle, want.Lifecycle},
			} {
				if f.got != f.want {
					t.Errorf("%s: %d, want %d", f.name, f.got, f.want)
				}
			}
			if want.Changes != nil && !slices.Equal(got.Changes, want.Changes) {
				t.Errorf("changes:\n  %+v\nwant\n  %+v", got.Changes, want.Changes)
			}
			if want.Changes == nil && len(got.Changes) != 0 {
				t.Errorf("changes %+v, want none", got.Changes)
			}
			if want.Actors != nil && !slices.Equal(got.Actors, want.Actors) {
				t.Errorf("actors %+v, want %+v", got.Actors, want.Actors)
			}
			if !slices.Equal(got.Projects, want.Projects) {
				t.Errorf("projects %+v, want %+v", got.Projects, want.Projects)
			}
			if len(got.Newest) != min(got.Different, backtestNewest) {
				t.Errorf("%d newest differences of %d", len(got.Newest), got.Different)
			}
			if tc.check != nil {
				tc.check(t, got)
			}
			for _, text := range []string{got.Summary(), got.Markdown(), got.Text()} {
				if !strings.Contains(text, fmt.Sprintf("Of %d moves recorded in the last 7 days, %d would be decided differently", want.Moves, want.Different)) {
					t.Errorf("the result does not say it in a sentence:\n%s", text)
				}
			}
		})
	}
}

// No policy in force: the proposed one starts enforcing its projects, and nothing recorded is
// replayed against it. The moves replayed are capped, the newest kept, across pages.
func TestBacktestStartsAndCaps(t *testing.T) {
	st := btStore(t, nil)
	res, err := Backtest(t.Context(), st, "ACME", config.Config{}, btConfig(t, btFile(btProjects, "", btReqs, true)), "", btSince, btUntil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Moves != 0 || len(res.Projects) != 2 || !res.Projects[0].Starts() || !strings.Contains(res.Markdown(), "starts being enforced") {
		t.Errorf("%+v\n%s", res, res.Markdown())
	}

	var entries []enforce.AuditEntry
	for i := range backtestPage + 10 {
		entries = append(entries, mv(i+1, "PVT_1", "agent-1", "agent", i+1, "Ready for Plan", "Done", enforce.VerdictReverted, "transition"))
	}
	st = btStore(t, entries)
	cur := btConfig(t, btFile(btProjects, "", btReqs, true))
	res, err = backtest(t.Context(), st, "acme", cur, btConfig(t, btFile(btProjects, "agent-1", btReqs, true)), "", btSince, btUntil, backtestPage+5)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Capped || res.Moves != backtestPage+5 || res.Different != backtestPage+5 || !res.CappedFrom.Equal(entries[backtestPage+4].At) ||
		res.Newest[0].Issue != 1 {
		t.Errorf("capped %v from %v, %d moves, %d different, newest #%d", res.Capped, res.CappedFrom, res.Moves, res.Different, res.Newest[0].Issue)
	}
	for _, text := range []string{res.Summary(), res.Markdown(), res.Text()} {
		if !strings.Contains(text, "newest") {
			t.Errorf("the result does not say it was capped:\n%s", text)
		}
	}
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 1234: "1,234", 50000: "50,000", 1234567: "1,234,567"} {
		if got := count(n); got != want {
			t.Errorf("count(%d) = %q, want %q", n, got, want)
		}
	}
	if _, err := Backtest(t.Context(), st, "acme", cur, cur, "", btUntil, btSince); err == nil {
		t.Error("an empty window was replayed")
	}
}

// Logins, repositories, states and titles come from outside: the Markdown shows each as
// written and as nothing else (a code span, a table cell kept whole), without bidi controls.
func TestBacktestMarkdownEscapes(t *testing.T) {
	login := "evil`|<!--@alice **x** [l](http://e)\u202e\n## h"
	title := "<script>alert(1)</script> [x](http://e) @bob \u2066|`"
	e := mv(5, "PVT_1", login, "human", 21, "Done", "Ready for Plan", enforce.VerdictReverted, "transition")
	e.Repo = "acme/we|b"
	st := btStore(t, []enforce.AuditEntry{e})
	if err := st.PutSnapshot(t.Context(), "PVT_1", []enforce.Item{{ID: "I21", Number: 21, Repo: "acme/web", Title: title}}, btUntil); err != nil {
		t.Fatal(err)
	}
	res, err := Backtest(t.Context(), st, "acme", btConfig(t, btFile(btProjects, "", btReqs, true)), btConfig(t, btFile("projects:\n  - number: 2\n", "", btReqs, true)), "", btSince, btUntil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Different != 1 || res.Newest[0].Title != title {
		t.Fatalf("%+v", res)
	}
	md := res.Markdown()
	for _, want := range []string{
		"| `evil\\|<!--@alice **x** [l](http://e) ## h` | `human` | `human` | 1 |",
		"`acme/we\\|b#21` `<script>alert(1)</script> [x](http://e) @bob \\|`",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the Markdown lacks %q:\n%s", want, md)
		}
	}
	for _, text := range []string{md, res.Text()} {
		if strings.ContainsAny(text, "\u202e\u2066") || strings.Contains(text, "\n## h") {
			t.Errorf("a bidi control or a line break from outside passed:\n%q", text)
		}
	}
	// Every row of a table has its header's columns: no pipe from outside splits a cell.
	header, tables := 0, 0
	for _, line := range strings.Split(md, "\n") {
		if !strings.HasPrefix(line, "|") {
			header = 0
			continue
		}
		cells := len(strings.Split(strings.ReplaceAll(line, `\|`, ""), "|")) - 2
		if header == 0 {
			header, tables = cells, tables+1
		}
		if cells != header {
			t.Errorf("a row of %d cells in a table of %d: %s", cells, header, line)
		}
	}
	if tables != 4 {
		t.Errorf("%d tables, want projects, changes, actors and differences:\n%s", tables, md)
	}
}

// Each kind of recorded decision is replayed as what it was: an actor's move, a handoff, the
// app's automation or a close, reopen or merge; the rest is no move.
func TestBacktestReplaysEachKindOfDecision(t *testing.T) {
	for _, tc := range []struct {
		e    enforce.AuditEntry
		want moveKind
	}{
		{enforce.AuditEntry{Verdict: enforce.VerdictAllowed, Rule: "legal", ActorKind: "human"}, moveJudged},
		{enforce.AuditEntry{Verdict: enforce.VerdictWouldRevert, Rule: "transition", ActorKind: "agent"}, moveJudged},
		{enforce.AuditEntry{Verdict: enforce.VerdictHandoff, Rule: "legal", Cause: "mcp plan"}, moveHandoff},
		{enforce.AuditEntry{Verdict: enforce.VerdictIgnored, Rule: "transition", Cause: "mcp plan"}, moveHandoff},
		{enforce.AuditEntry{Verdict: enforce.VerdictAutomated, Rule: "automation", ActorKind: "app", Cause: "cascade"}, moveAutomated},
		{enforce.AuditEntry{Verdict: enforce.VerdictAutomated, ActorKind: "app"}, moveAutomated}, // (a write of the app's taken in)
		{enforce.AuditEntry{Verdict: enforce.VerdictAutomated, Rule: "legal", ActorKind: "human", Cause: "issue closed by alice"}, moveLifecycle},
		{enforce.AuditEntry{Verdict: enforce.VerdictAllowed, Rule: "legal", ActorKind: "human", Cause: "issue closed by alice"}, moveLifecycle},
		{enforce.AuditEntry{Verdict: enforce.VerdictReverted, Rule: "transition", ActorKind: "agent", Cause: "issue_closed"}, moveLifecycle},
		{enforce.AuditEntry{Verdict: enforce.VerdictIgnored, ActorKind: "app"}, moveNone},
		{enforce.AuditEntry{Verdict: enforce.VerdictIgnored, Rule: "lifecycle", Cause: "issue_closed"}, moveNone},
		{enforce.AuditEntry{Verdict: enforce.VerdictAdopted}, moveNone},
		{enforce.AuditEntry{Verdict: enforce.VerdictWithdrawn, Rule: "provisional"}, moveNone},
	} {
		if got := movesOf(tc.e); got != tc.want {
			t.Errorf("%+v: replayed as %d, want %d", tc.e, got, tc.want)
		}
	}
}
