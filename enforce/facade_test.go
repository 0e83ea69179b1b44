package enforce

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/marker"
	"github.com/ralph-gate/ralph-gate/policy"
)

var bg = context.Background()

// onProject is an issue's item on another project.
func onProject(it Item, number int) Item {
	it.ProjectNumber, it.ProjectID = number, "PVT_"+string(rune('0'+number))
	return it
}

func asRefusal(t *testing.T, err error, want string) *policy.Refusal {
	t.Helper()
	var r *policy.Refusal
	if !errors.As(err, &r) {
		t.Fatalf("want a refusal with %q, got %v", want, err)
	}
	if !strings.Contains(r.Error(), want) {
		t.Fatalf("refusal %q lacks %q", r.Error(), want)
	}
	return r
}

func TestLocate(t *testing.T) {
	a := issueN("A", "Backlog", 7)
	b := onProject(issueN("B", "Backlog", 7), 2)
	c := issueN("C", "Ready for Plan", 8)
	e := onProject(issueN("E", "Backlog", 9), 3) // on a project that is not enforced
	enforced := func(_ string, n int) bool { return n != 3 }
	h := newHarnessWith(t, nil, func(_ *harness, o *Options) { o.Enforced = enforced }, a, b, c, e)
	tests := []struct {
		name    string
		number  int
		project int
		want    string   // the item found
		refusal string   // or the refusal
		options []string // its options, sorted
	}{
		{name: "one item", number: 8, want: "C"},
		{name: "several projects", number: 7, refusal: "is on several enforced projects", options: []string{"1", "2"}},
		{name: "project filter", number: 7, project: 2, want: "B"},
		{name: "not on that project", number: 7, project: 5, refusal: "is not on project 5", options: []string{"1", "2"}},
		{name: "only on an unenforced project", number: 9, refusal: "not on any project ralph-gate enforces", options: []string{}},
		{name: "unenforced project named", number: 9, project: 3, refusal: "not on any project ralph-gate enforces", options: []string{}},
		{name: "on no project", number: 99, refusal: "not on any project ralph-gate enforces", options: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it, err := h.svc.Facade.Locate(bg, h.board, IssueRef{Owner: "acme", Repo: "app", Number: tt.number}, tt.project)
			if tt.refusal == "" {
				if err != nil || it.ID != tt.want || it.Title != "Issue "+tt.want {
					t.Fatalf("got %+v, %v; want item %s", it, err, tt.want)
				}
				return
			}
			r := asRefusal(t, err, tt.refusal)
			got := slices.Sorted(slices.Values(r.Options))
			if got == nil {
				got = []string{}
			}
			if !slices.Equal(got, tt.options) {
				t.Errorf("options %v, want %v", r.Options, tt.options)
			}
		})
	}
	t.Run("github failures", func(t *testing.T) {
		h.board.breakOn(errInjected, "Item")
		if _, err := h.svc.Facade.Locate(bg, h.board, IssueRef{Owner: "acme", Repo: "app", Number: 8}, 0); !errors.Is(err, errInjected) || !strings.Contains(err.Error(), "read item C") {
			t.Errorf("item read: %v", err)
		}
		h.board.breakOn(errInjected, "IssueItems")
		if _, err := h.svc.Facade.Locate(bg, h.board, IssueRef{Owner: "acme", Repo: "app", Number: 8}, 0); !errors.Is(err, errInjected) {
			t.Errorf("issue items: %v", err)
		}
	})
}

func TestState(t *testing.T) {
	parent := issueN("P", "In Progress", 1)
	a := child("A", "Research in Progress", 2, parent)
	sib := child("S", "Backlog", 3, parent)
	blocker := issueN("X", "Ready for Plan", 4)
	draft := issueN("D", "Backlog", 0)
	draft.ContentType, draft.ContentID = ContentDraftIssue, ""
	h := newHarness(t, parent, a, sib, blocker, draft, issueN("L", "Ready for Plan", 5))
	setFamily(h.board, parent, a, sib)
	fam := h.board.family["I_A"]
	fam.Children = []Relative{offProject(30)}
	fam.OpenBlockers = []Relative{rel(blocker)}
	h.board.family["I_A"] = fam
	h.put(Record{ItemID: "A", LastLegalState: "Research in Progress", LockHolder: "agent-1", LockSince: h.now.Add(-time.Minute)})
	h.put(Record{ItemID: "L", LastLegalState: "Research in Progress", LockHolder: "agent-1", LockSince: h.now.Add(-time.Minute)})

	tests := []struct {
		id, legal, holder string
		children, blocks  int
		parent            int
	}{
		{id: "A", legal: "Research in Progress", holder: "agent-1", children: 1, blocks: 1, parent: 1},
		// The record says another state (a change is being processed) and holds a lock the
		// board's state is not: the lock is not shown.
		{id: "L", legal: "Research in Progress"},
		{id: "S", legal: "Backlog", parent: 1}, // never recorded: the board's value
		{id: "D", legal: "Backlog"},            // a draft has no relatives
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			ws, err := h.svc.Facade.State(bg, h.board, Item{ID: tt.id})
			if err != nil {
				t.Fatal(err)
			}
			if ws.Item.ID != tt.id || ws.LastLegalState != tt.legal || ws.LockHolder != tt.holder || ws.Guidance.LockHolder != tt.holder {
				t.Errorf("state %+v", ws)
			}
			if tt.holder != "" && !ws.LockSince.Equal(h.now.Add(-time.Minute)) {
				t.Errorf("lock since %v", ws.LockSince)
			}
			if ws.Guidance.State != ws.Item.State {
				t.Errorf("guidance for %q, want the board's %q", ws.Guidance.State, ws.Item.State)
			}
			if len(ws.Children) != tt.children || len(ws.OpenBlockers) != tt.blocks || ws.Children == nil || ws.OpenBlockers == nil {
				t.Errorf("children %+v blockers %+v", ws.Children, ws.OpenBlockers)
			}
			if (ws.Parent == nil) != (tt.parent == 0) || (ws.Parent != nil && (ws.Parent.Number != tt.parent || ws.Parent.State != "In Progress")) {
				t.Errorf("parent %+v", ws.Parent)
			}
		})
	}
	if ws, _ := h.svc.Facade.State(bg, h.board, Item{ID: "A"}); ws.OpenBlockers[0].State != "Ready for Plan" || ws.Children[0].ItemID != "" {
		t.Errorf("relatives %+v %+v", ws.OpenBlockers, ws.Children)
	}
	t.Run("failures", func(t *testing.T) {
		h.board.breakOn(errInjected, "Family")
		if _, err := h.svc.Facade.State(bg, h.board, Item{ID: "A"}); !errors.Is(err, errInjected) || !strings.Contains(err.Error(), "read relatives") {
			t.Errorf("family: %v", err)
		}
		h.st.breakOn(errInjected, "GetItem")
		if _, err := h.svc.Facade.State(bg, h.board, Item{ID: "A"}); !errors.Is(err, errInjected) {
			t.Errorf("record: %v", err)
		}
		h.board.breakOn(errInjected, "Item")
		if _, err := h.svc.Facade.State(bg, h.board, Item{ID: "A"}); !errors.Is(err, errInjected) || !strings.Contains(err.Error(), "read item A") {
			t.Errorf("item: %v", err)
		}
	})
}

func TestGuide(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		state, holder        string
		lock, terminal, gate bool
		needsHuman           bool
		shownHolder          string
		next                 string // one of AllowedNext
	}{
		{state: "Research in Progress", holder: "agent-1", lock: true, shownHolder: "agent-1", next: "Ready for Plan"},
		{state: "Backlog", holder: "agent-1", next: "Research Needed"},
		{state: "Human Needed", gate: true, needsHuman: true},
		{state: "Done", terminal: true, needsHuman: true},
		{state: "Plan in Review", gate: true, next: "In Progress"},
	}
	for _, tt := range tests {
		g := h.svc.Facade.Guide(tt.state, tt.holder)
		if g.State != tt.state || g.IsLock != tt.lock || g.IsTerminal != tt.terminal || g.IsHumanGate != tt.gate ||
			g.NeedsHuman != tt.needsHuman || g.LockHolder != tt.shownHolder || (tt.next != "" && !slices.Contains(g.AllowedNext, tt.next)) {
			t.Errorf("%s: %+v", tt.state, g)
		}
	}
}

func numbers(ms []GroupMember) []int {
	var out []int
	for _, m := range ms {
		out = append(out, m.Number)
	}
	return out
}

func TestGroup(t *testing.T) {
	parent := issueN("P", "In Progress", 10)
	a := issueN("A", "Ready for Plan", 1)
	b := issueN("B", "Research Needed", 2)
	c := issueN("C", "Backlog", 3)
	d := issueN("D", "Ready for Plan", 4) // blocks B from outside the sibling group
	lone := issueN("L", "Backlog", 5)
	h := newHarness(t, parent, a, b, c, d, lone)
	setFamily(h.board, parent, a, b, c)
	fam := h.board.family["I_P"]
	fam.Children = append(fam.Children, offProject(30)) // not on the project: not in the group
	h.board.family["I_P"] = fam
	fb := h.board.family["I_B"]
	fb.OpenBlockers = []Relative{rel(d), offProject(31)}
	h.board.family["I_B"] = fb
	fa := h.board.family["I_A"]
	fa.OpenBlockers = []Relative{rel(c)}
	h.board.family["I_A"] = fa

	tests := []struct {
		name   string
		id     string
		order  []int
		parent int
	}{
		{name: "siblings through the parent", id: "A", order: []int{3, 1, 4, 2}, parent: 10},
		{name: "a parent's own sub-issues", id: "P", order: []int{3, 1, 4, 2}, parent: 10},
		{name: "a lone issue", id: "L", order: []int{5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := h.svc.Facade.Group(bg, h.board, h.boardItem(tt.id))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(numbers(g.Members), tt.order) {
				t.Fatalf("order %v, want %v", numbers(g.Members), tt.order)
			}
			if (g.Parent == nil) != (tt.parent == 0) || (g.Parent != nil && g.Parent.Number != tt.parent) {
				t.Errorf("parent %+v", g.Parent)
			}
			for _, m := range g.Members {
				want := []int{}
				switch m.Number {
				case 1:
					want = []int{3}
				case 2:
					want = []int{4}
				}
				if !slices.Equal(m.BlockedBy, want) {
					t.Errorf("#%d blocked by %v, want %v", m.Number, m.BlockedBy, want)
				}
			}
		})
	}

	t.Run("a blockedBy cycle is refused", func(t *testing.T) {
		fc := h.board.family["I_C"]
		fc.OpenBlockers = []Relative{rel(a)}
		h.board.family["I_C"] = fc
		defer func() { fc.OpenBlockers = nil; h.board.family["I_C"] = fc }()
		_, err := h.svc.Facade.Group(bg, h.board, h.boardItem("A"))
		r := asRefusal(t, err, "#1")
		if !strings.Contains(r.Error(), "#3") {
			t.Errorf("the cycle is not named: %v", r)
		}
	})
	t.Run("not an issue", func(t *testing.T) {
		pr := issueN("R", "In Review", 40)
		pr.ContentType = ContentPullRequest
		asRefusal(t, errOf(h.svc.Facade.Group(bg, h.board, pr)), "It is not an issue (PullRequest)")
	})
	t.Run("github failures", func(t *testing.T) {
		hb := newHookBoard(h.board)
		for _, tc := range []struct{ issue, id, want string }{
			{"I_P", "A", "read group"},
			{"I_P", "P", "read group"},
			{"I_L", "L", "read issue"},
			{"I_B", "A", "read blockers of #2"},
			{"I_D", "A", "read blocker #4"},
		} {
			hb.failFamily = map[string]error{tc.issue: errInjected}
			if _, err := h.svc.Facade.Group(bg, hb, h.boardItem(tc.id)); !errors.Is(err, errInjected) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s failing for %s: %v, want %q", tc.issue, tc.id, err, tc.want)
			}
		}
	})
}

func errOf[T any](_ T, err error) error { return err }

func TestPositionAndConvergence(t *testing.T) {
	parent := issueN("P", "In Progress", 10)
	a := issueN("A", "Ready for Plan", 1)
	b := issueN("B", "Research Needed", 2)
	c := issueN("C", "Canceled", 3)
	lone := issueN("L", "Research Needed", 5)
	h := newHarness(t, parent, a, b, c, lone)
	setFamily(h.board, parent, a, b, c)

	pos, err := h.svc.Facade.Position(bg, h.board, h.boardItem("A"), policy.PipelineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !pos.Result.IsGroup || pos.Result.GroupPrimary != 1 || len(pos.Group.Members) != 3 || pos.Result.Phase != policy.PhaseResearch {
		t.Fatalf("group position %+v", pos.Result)
	}
	pos, err = h.svc.Facade.Position(bg, h.board, h.boardItem("L"), policy.PipelineOptions{})
	if err != nil || pos.Result.IsGroup || pos.Result.GroupPrimary != 5 || pos.Result.Phase != policy.PhaseResearch {
		t.Fatalf("lone position %+v %v", pos.Result, err)
	}
	draft := Item{ID: "D", ContentType: ContentDraftIssue}
	if _, err := h.svc.Facade.Position(bg, h.board, draft, policy.PipelineOptions{}); err == nil {
		t.Fatal("a draft has a pipeline position")
	}

	res, g, err := h.svc.Facade.Convergence(bg, h.board, h.boardItem("B"), "Ready for Plan")
	if err != nil || len(g.Members) != 3 {
		t.Fatalf("%+v %v", g, err)
	}
	if res.Converged || res.Total != 2 || res.Ready != 1 || len(res.Blocking) != 1 || res.Blocking[0].Number != 2 || res.Recommendation != policy.Wait {
		t.Fatalf("convergence %+v", res)
	}
	h.board.move("B", "alice", "Ready for Plan", h.now)
	if res, _, err := h.svc.Facade.Convergence(bg, h.board, h.boardItem("B"), "Ready for Plan"); err != nil || !res.Converged {
		t.Fatalf("converged group: %+v %v", res, err)
	}

	before := h.board.calls["Family"]
	_, _, err = h.svc.Facade.Convergence(bg, h.board, h.boardItem("B"), "Human Needed")
	asRefusal(t, err, `Target state "Human Needed" is off the pipeline`)
	if h.board.calls["Family"] != before {
		t.Error("an invalid target read the group")
	}
	if _, _, err := h.svc.Facade.Convergence(bg, h.board, draft, "Done"); err == nil {
		t.Error("a draft has a group")
	}
}

func TestPickRanksActionableIssues(t *testing.T) {
	withEst := func(it Item, est, prio string) Item { it.Estimate, it.Priority = est, prio; return it }
	closed := issueN("F", "Research Needed", 6)
	closed.Open = false
	archived := issueN("G", "Research Needed", 7)
	archived.Archived = true
	blocked := issueN("H", "Research Needed", 8)
	blocked.OpenBlockers = 1
	draft := issueN("J", "Research Needed", 0)
	draft.ContentType = ContentDraftIssue
	h := newHarness(t,
		withEst(issueN("A", "Research Needed", 1), "S", "P1"),
		withEst(issueN("B", "Research Needed", 2), "M", "P0"), // too big
		withEst(issueN("C", "Research Needed", 3), "XS", "P0"),
		withEst(issueN("D", "Research Needed", 4), "", "P1"), // unsized: after the sized of its priority
		withEst(issueN("E", "Research Needed", 5), "XS", "P0"),
		closed, archived, blocked, draft,
		withEst(issueN("K", "Backlog", 9), "XS", "P0"), // another state
		withEst(issueN("M", "Research Needed", 11), "XS", "P0"),
	)
	h.put(Record{ItemID: "M", LastLegalState: "Research Needed", LockHolder: "agent-9"}) // claimed by someone

	req := PickRequest{Projects: []ProjectRef{project1}, State: "Research Needed"}
	res, err := h.svc.Facade.Pick(bg, h.board, req)
	if err != nil {
		t.Fatal(err)
	}
	got := []int{res.Best.Item.Number}
	for _, p := range res.Alternatives {
		got = append(got, p.Item.Number)
	}
	if want := []int{3, 5, 1, 4}; !slices.Equal(got, want) {
		t.Fatalf("ranking %v, want %v", got, want)
	}
	if res.Claimed != nil || len(res.Passed) != 0 || res.Best.Locked || len(h.board.sets) != 0 {
		t.Fatalf("a pick without claim claimed: %+v", res)
	}
	if h.board.calls["ProjectItems"] != 4 {
		t.Errorf("%d page reads for 12 items, want every page", h.board.calls["ProjectItems"])
	}

	req.MaxEstimate = "M"
	if res, _ := h.svc.Facade.Pick(bg, h.board, req); res.Best == nil || len(res.Alternatives) != 4 || res.Alternatives[0].Item.Number != 5 || res.Alternatives[1].Item.Number != 2 {
		t.Errorf("with maxEstimate M: %+v", res)
	}
	req.State = "In Review"
	if res, err := h.svc.Facade.Pick(bg, h.board, req); err != nil || res.Best != nil || len(res.Alternatives) != 0 {
		t.Errorf("nothing in the state: %+v %v", res, err)
	}

	for _, tc := range []struct {
		req  PickRequest
		want string
	}{
		{PickRequest{State: "Nowhere"}, `Unknown workflow state "Nowhere"`},
		{PickRequest{State: "Backlog", MaxEstimate: "XXL"}, `Unknown maxEstimate "XXL"`},
		{PickRequest{State: "Backlog", Claim: true, Handoff: Handoff{Agent: "agent-1", Command: "fly"}}, `Unknown command "fly"`},
		{PickRequest{State: "Backlog", Claim: true, Handoff: Handoff{Agent: "agent-1", Command: "impl", Commands: []string{"research"}}}, "may only use the commands research"},
		{PickRequest{State: "Backlog", Claim: true, Handoff: Handoff{Agent: "agent-1", Command: "triage"}}, "lock"},
	} {
		_, err := h.svc.Facade.Pick(bg, h.board, tc.req)
		asRefusal(t, err, tc.want)
	}
	h.board.breakOn(errInjected, "ProjectItems")
	if _, err := h.svc.Facade.Pick(bg, h.board, PickRequest{Projects: []ProjectRef{project1}, State: "Backlog"}); !errors.Is(err, errInjected) {
		t.Errorf("page failure: %v", err)
	}
	h.board.breakOn(nil, "ProjectItems")
	h.st.breakOn(errInjected, "GetItem")
	if _, err := h.svc.Facade.Pick(bg, h.board, PickRequest{Projects: []ProjectRef{project1}, State: "Backlog"}); !errors.Is(err, errInjected) {
		t.Errorf("record failure: %v", err)
	}
}

// A claim takes the best candidate it can: a candidate that moved, that another claimer took
// first or whose handoff is refused is passed over, with why.
func TestPickClaimPassesOverWhatItCannotTake(t *testing.T) {
	h := newHarness(t, issueN("A", "Research Needed", 1), issueN("B", "Research Needed", 2), issueN("C", "Research Needed", 3), issueN("D", "Research Needed", 4))
	// D's record is behind the board: a change is still being processed.
	h.put(Record{ItemID: "D", LastLegalState: "Backlog"})
	hb := newHookBoard(h.board)
	claimed := map[string]bool{}
	hb.beforeItem = func(id string) {
		if claimed[id] {
			return
		}
		claimed[id] = true
		switch id {
		case "A": // someone moved it since the page was read
			h.board.move("A", "alice", "Ready for Plan", h.now)
		case "B": // another replica's claimer wins
			if ok, err := h.st.ClaimLock(bg, "B", "agent-2", h.now); !ok || err != nil {
				t.Errorf("claim B: %v %v", ok, err)
			}
		}
	}
	req := PickRequest{Projects: []ProjectRef{project1}, State: "Research Needed", MaxEstimate: "XL", Claim: true,
		Handoff: Handoff{Agent: "agent-1", Command: "ralph_research", Reason: "on it"}}
	// D ranks after C; make it rank first so its refusal is met before C's success.
	hb.fakeBoard.items["D"] = func() Item { it := h.board.items["D"]; it.Priority = "P0"; return it }()

	res, err := h.svc.Facade.Pick(bg, hb, req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Claimed == nil || res.Best == nil || res.Best.Item.ID != "C" || !res.Best.Locked || len(res.Alternatives) != 0 {
		t.Fatalf("result %+v", res)
	}
	if !res.Claimed.Changed || res.Claimed.NewState != "Research in Progress" || res.Claimed.Guidance.LockHolder != "agent-1" {
		t.Errorf("claim %+v", res.Claimed)
	}
	var passed []string
	for _, p := range res.Passed {
		passed = append(passed, p.Item.ID+": "+p.Reason)
	}
	if len(passed) != 3 || !strings.Contains(passed[0], "D: ") || !strings.Contains(passed[0], "still being processed") ||
		!strings.Contains(passed[1], "A: #1 moved to Ready for Plan meanwhile") || !strings.Contains(passed[2], "B: #2: claimed by someone else first") {
		t.Fatalf("passed %q", passed)
	}
	if rec := h.record("D"); rec.LockHolder != "" {
		t.Errorf("a refused claim kept its lock: %+v", rec)
	}
	if rec := h.record("B"); rec.LockHolder != "agent-2" {
		t.Errorf("the other claimer lost its lock: %+v", rec)
	}
	if rec := h.record("C"); rec.LockHolder != "agent-1" || rec.LastLegalState != "Research in Progress" || !rec.LockSince.Equal(h.now) {
		t.Errorf("claimed record %+v", rec)
	}
	if h.state("C") != "Research in Progress" || h.state("D") != "Research Needed" || h.state("B") != "Research Needed" {
		t.Errorf("board C=%s D=%s B=%s", h.state("C"), h.state("D"), h.state("B"))
	}
	if h.board.adds != 1 {
		t.Errorf("%d comments, want the claim's", h.board.adds)
	}

	// Nothing left to claim: no best, everything passed.
	res, err = h.svc.Facade.Pick(bg, hb, PickRequest{Projects: []ProjectRef{project1}, State: "Research Needed", MaxEstimate: "XL", Claim: true,
		Handoff: Handoff{Agent: "agent-3", Command: "research"}})
	if err != nil || res.Best != nil || res.Claimed != nil || len(res.Passed) != 1 {
		t.Fatalf("nothing to claim: %+v %v", res, err)
	}
	// An infrastructure failure during a claim is returned.
	h.st.breakOn(errInjected, "ClaimLock")
	if _, err := h.svc.Facade.Pick(bg, hb, PickRequest{Projects: []ProjectRef{project1}, State: "Research Needed", MaxEstimate: "XL", Claim: true,
		Handoff: Handoff{Agent: "agent-3", Command: "research"}}); !errors.Is(err, errInjected) || !strings.Contains(err.Error(), "claim #") {
		t.Errorf("claim failure: %v", err)
	}
}

func TestPickClaimTriesEveryCandidate(t *testing.T) {
	var items []Item
	for i := 1; i <= 12; i++ {
		items = append(items, issueN(string(rune('A'+i-1)), "Research Needed", i))
	}
	h := newHarness(t, items...)
	hb := newHookBoard(h.board)
	hb.beforeItem = func(id string) {
		if id != "L" {
			h.st.ClaimLock(bg, id, "agent-2", h.now) // every claim but the last candidate's is lost
		}
	}
	res, err := h.svc.Facade.Pick(bg, hb, PickRequest{Projects: []ProjectRef{project1}, State: "Research Needed", Claim: true,
		Handoff: Handoff{Agent: "agent-1", Command: "research"}})
	if err != nil || res.Best == nil || res.Best.Item.ID != "L" || res.Claimed == nil || len(res.Passed) != 11 {
		t.Fatalf("%+v %v; want #12 claimed after 11 lost claims", res, err)
	}
}

// Many agents claiming at once over fewer issues: every issue is claimed exactly once, and
// only the callers left without one are told that nothing is left.
func TestPickClaimRaceLeavesNoWorkBehind(t *testing.T) {
	const issues, claimers = 30, 50
	var items []Item
	for i := 1; i <= issues; i++ {
		items = append(items, issueN(fmt.Sprintf("I%02d", i), "Research Needed", i))
	}
	h := newHarness(t, items...)
	var (
		mu     sync.Mutex
		won    = map[string]string{}
		failed int
		wg     sync.WaitGroup
	)
	for c := 0; c < claimers; c++ {
		wg.Add(1)
		go func(agent string) {
			defer wg.Done()
			res, err := h.svc.Facade.Pick(bg, h.board, PickRequest{Projects: []ProjectRef{project1}, State: "Research Needed", Claim: true,
				Handoff: Handoff{Agent: agent, Command: "research"}})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				t.Errorf("%s: %v", agent, err)
			case res.Best == nil:
				failed++
			case won[res.Best.Item.ID] != "":
				t.Errorf("%s claimed by %s and %s", res.Best.Item.ID, won[res.Best.Item.ID], agent)
			default:
				won[res.Best.Item.ID] = agent
			}
		}(fmt.Sprintf("agent-%d", c))
	}
	wg.Wait()
	if len(won) != issues || failed != claimers-issues {
		t.Fatalf("%d issues claimed, %d callers told nothing is left; want %d and %d", len(won), failed, issues, claimers-issues)
	}
}

func TestHandoffRefusedAndAuditedAsIgnored(t *testing.T) {
	parent := issueN("P", "Ready for Plan", 10)
	a := issueN("A", "Research Needed", 1)
	a.OpenBlockers = 1
	x := issueN("X", "Backlog", 5)
	locked := issueN("L", "Research in Progress", 2)
	kid := issueN("K", "Backlog", 11)
	h := newHarness(t, parent, a, x, locked, kid)
	setFamily(h.board, parent, kid)
	h.board.family["I_A"] = Family{Self: rel(a), OpenBlockers: []Relative{rel(x), {IssueID: "I_y", Number: 6, Title: "elsewhere"}}}
	h.put(Record{ItemID: "L", LastLegalState: "Research in Progress", LockHolder: "agent-1"})

	tests := []struct {
		name  string
		id    string
		ho    Handoff
		want  string
		rule  string // audited as ignored with this rule ("": not audited)
		calls int    // Family reads
	}{
		{name: "open blockers", id: "A", ho: Handoff{Agent: "agent-2", Command: "research", Intent: "lock"}, want: `open blockers: #5 "Issue X" is open, in Backlog and #6 "elsewhere" is open`, rule: "blockers"},
		{name: "the group is not ready", id: "P", ho: Handoff{Agent: "agent-2", Command: "plan", Intent: "lock"}, want: "needs the whole group at Ready for Plan", rule: "convergence"},
		{name: "another agent's lock", id: "L", ho: Handoff{Agent: "agent-2", Command: "research", Intent: "complete"}, want: "locked by agent-1", rule: "lock_ownership"},
		{name: "re-entering another agent's lock", id: "L", ho: Handoff{Agent: "agent-2", Command: "research", Intent: "lock"}, want: "Research in Progress is locked by agent-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(h.audit(tt.id))
			_, err := h.handoff(tt.id, tt.ho)
			asRefusal(t, err, tt.want)
			es := h.audit(tt.id)[before:]
			if tt.rule == "" {
				if len(es) != 0 {
					t.Fatalf("audited %s", verdicts(es))
				}
				return
			}
			if len(es) != 1 || es[0].Verdict != VerdictIgnored || es[0].Rule != tt.rule || es[0].Actor != tt.ho.Agent || es[0].ActorKind != "agent" ||
				es[0].Cause != "mcp "+tt.ho.Command || !strings.HasPrefix(es[0].Reason, "refused handoff: ") {
				t.Fatalf("audit %+v", es)
			}
		})
	}
	if len(h.board.sets) != 0 || h.board.adds != 0 {
		t.Fatalf("a refusal wrote: %v, %d comments", h.board.sets, h.board.adds)
	}
	// The holder re-entering its own lock changes nothing and is told so.
	res, err := h.handoff("L", Handoff{Agent: "agent-1", Command: "research", Intent: "lock"})
	if err != nil || res.Changed || res.Rule != "legal" || res.Reason != "Research in Progress is unchanged" || res.Guidance.LockHolder != "agent-1" {
		t.Fatalf("unchanged: %+v %v", res, err)
	}
}

func TestHandoffCommentsGuidesAndAutomates(t *testing.T) {
	parent := issueN("P", "Research Needed", 10)
	k1 := issueN("K1", "Backlog", 11)
	k2 := issueN("K2", "Ready for Plan", 12)
	obs := &observer{}
	h := newHarnessWith(t, nil, func(_ *harness, o *Options) { o.Observer = obs }, parent, k1, k2)
	setFamily(h.board, parent, k1, k2)

	res, err := h.handoff("P", Handoff{Agent: "agent-1", Command: "research", ToState: "Ready for Plan", Reason: "found it\nsee the notes"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Changed || res.PreviousState != "Research Needed" || res.NewState != "Ready for Plan" || res.Command != "research" || res.Rule != "legal" ||
		len(res.Warnings) != 0 || res.Guidance.IsLock || !slices.Contains(res.Guidance.CommandsExpecting, "plan") {
		t.Fatalf("result %+v", res)
	}
	// The children earlier on the pipeline followed the parent.
	if h.state("K1") != "Ready for Plan" || h.state("K2") != "Ready for Plan" || obs.count(CauseCascade) != 1 {
		t.Fatalf("cascade: K1=%s K2=%s, observed %v", h.state("K1"), h.state("K2"), obs.causes)
	}
	if es := h.audit("K1"); len(es) != 1 || es[0].Cause != "cascade: parent #10 moved to Ready for Plan (#10 handed off by agent-1)" {
		t.Fatalf("cascade audit %+v", es)
	}
	rec := h.record("P")
	if rec.LastLegalState != "Ready for Plan" || rec.ObservedState != "Ready for Plan" || rec.LockHolder != "" {
		t.Fatalf("record %+v", rec)
	}
	es := h.audit("P")
	if len(es) != 1 || es[0].Verdict != VerdictHandoff || es[0].FromState != "Research Needed" || es[0].ToState != "Ready for Plan" ||
		!strings.Contains(es[0].Reason, "(command research, to_state Ready for Plan)") || !strings.Contains(es[0].Reason, "agent's reason: found it") {
		t.Fatalf("audit %+v", es)
	}
	bodies := h.commentBodies()
	if len(bodies) != 1 {
		t.Fatalf("comments %q", bodies)
	}
	body := bodies[0]
	for _, want := range []string{"**`agent-1` handed this off with `research` (to_state `Ready for Plan`): Research Needed → Ready for Plan.**",
		"```text\nfound it\nsee the notes\n```\n", "Next: plan, plan_epic, hero."} {
		if !strings.Contains(body, want) {
			t.Errorf("comment lacks %q:\n%s", want, body)
		}
	}
	ms, err := marker.ParseTransitions(body)
	if err != nil || len(ms) != 1 || ms[0].From != "Research Needed" || ms[0].To != "Ready for Plan" || ms[0].Verdict != "handoff" ||
		ms[0].Command == nil || *ms[0].Command != "research" || ms[0].Actor != "agent-1" {
		t.Fatalf("marker %+v %v", ms, err)
	}

	// Into a lock: the agent holds it and the comment says so.
	h.now = h.now.Add(time.Minute)
	res, err = h.handoff("K1", Handoff{Agent: "agent-2", Command: "plan", Intent: "lock"})
	if err != nil || res.Guidance.LockHolder != "agent-2" || !res.Guidance.IsLock {
		t.Fatalf("lock handoff %+v %v", res, err)
	}
	if rec := h.record("K1"); rec.LockHolder != "agent-2" || !rec.LockSince.Equal(h.now) {
		t.Fatalf("lock record %+v", rec)
	}
	found := false
	for _, b := range h.commentBodies() {
		found = found || strings.Contains(b, "Locked by `agent-2`. Agents may move it to Ready for Plan, Plan in Review")
	}
	if !found {
		t.Errorf("no lock comment in %q", h.commentBodies())
	}
	// Out of the lock: released; to Human Needed: waiting for a human.
	res, err = h.handoff("K1", Handoff{Agent: "agent-2", Command: "plan", Intent: "escalate"})
	if err != nil || res.NewState != "Human Needed" || !res.Guidance.NeedsHuman {
		t.Fatalf("escalation %+v %v", res, err)
	}
	if rec := h.record("K1"); rec.LockHolder != "" {
		t.Fatalf("lock kept %+v", rec)
	}
	if bs := h.commentBodies(); !slices.ContainsFunc(bs, func(b string) bool { return strings.Contains(b, "Waiting for a human.") }) {
		t.Errorf("no escalation comment in %q", bs)
	}
}

// Failures after the move took effect are warnings: the move stands. Failures before it are
// errors, and nothing is written.
func TestHandoffFailures(t *testing.T) {
	parent := issueN("P", "Research Needed", 10)
	k := issueN("K", "Backlog", 11)
	ho := Handoff{Agent: "agent-1", Command: "research", Intent: "complete"}
	t.Run("comment and automation fail after the move", func(t *testing.T) {
		h := newHarness(t, parent, k)
		setFamily(h.board, parent, k)
		hb := newHookBoard(h.board)
		hb.failSet["K"] = errInjected // the cascade's write
		h.board.breakOn(errInjected, "AddComment")
		h.st.breakOn(errInjected, "AppendAudit")
		// The walks the handoff asks for are held until the record is looked at: one run
		// beside it may finish the automation owed first.
		walkSoon, held := h.svc.Automation.walkSoon, []func(){}
		var heldMu sync.Mutex
		h.svc.Automation.walkSoon = func(ctx context.Context, b Board, it Item) {
			heldMu.Lock()
			defer heldMu.Unlock()
			held = append(held, func() { walkSoon(ctx, b, it) })
		}
		it, _ := h.board.Item(bg, "P")
		res, err := h.svc.Facade.Handoff(bg, hb, it, ho)
		if err != nil || !res.Changed || h.state("P") != "Ready for Plan" || len(res.Warnings) != 2 ||
			!strings.Contains(res.Warnings[0], "the automation after the move failed (the move stands") ||
			!strings.Contains(res.Warnings[1], "the audit comment could not be posted") {
			t.Fatalf("%+v %v", res, err)
		}
		if rec := h.record("P"); rec.LastLegalState != "Ready for Plan" || rec.AutomateState != "Ready for Plan" {
			t.Errorf("the move was not recorded, its automation owed: %+v", rec)
		}
		// The item's walk runs the automation owed once the board lets it.
		hb.unfail("K")
		h.svc.Automation.walkSoon = walkSoon
		heldMu.Lock()
		for _, walk := range held {
			walk()
		}
		heldMu.Unlock()
		if len(held) == 0 {
			t.Error("the handoff asked for no walk of the item")
		}
		h.drain()
		if h.state("K") != "Ready for Plan" || h.record("P").AutomateState != "" {
			t.Errorf("the cascade owed was not run: K is %s, record %+v", h.state("K"), h.record("P"))
		}
	})
	t.Run("the write fails after the record: the move stands, the item's walk writes it", func(t *testing.T) {
		h := newHarness(t, parent, k)
		h.board.breakOn(errInjected, "SetState")
		res, err := h.handoff("P", ho)
		if err != nil || !res.Changed || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "writing the move failed") {
			t.Fatalf("%+v %v", res, err)
		}
		if rec := h.record("P"); rec.LastLegalState != "Ready for Plan" || rec.RevertPending != "Ready for Plan" {
			t.Fatalf("the move was not recorded, its write journaled: %+v", rec)
		}
		h.board.breakOn(nil, "SetState")
		h.drain()
		if h.state("P") != "Ready for Plan" || h.record("P").RevertPending != "" {
			t.Errorf("the move owed was not written: P is %s, record %+v", h.state("P"), h.record("P"))
		}
	})
	tests := []struct {
		name         string
		board, store string
		want         string
	}{
		{name: "item read", board: "Item", want: "read item P"},
		{name: "item lock", store: "LockItem", want: "lock item P"},
		{name: "baseline", store: "CommitStep", want: "save item P"},
		{name: "record", store: "GetItem", want: "load item P"},
		{name: "relatives' read", board: "Family", want: "read the item's ancestors"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it := parent
			if tt.board == "Family" {
				it = child("C", "Ready for Plan", 12, parent)
			}
			h := newHarness(t, parent, k, it)
			h.board.breakOn(errInjected, tt.board)
			h.st.breakOn(errInjected, tt.store)
			cmd := ho
			if tt.board == "Family" {
				cmd = Handoff{Agent: "agent-1", Command: "plan", Intent: "lock"}
			}
			_, err := h.svc.Facade.Handoff(bg, h.board, it, cmd)
			if !errors.Is(err, errInjected) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
			if len(h.board.sets) != 0 || h.board.adds != 0 {
				t.Fatalf("a failed handoff wrote %v", h.board.sets)
			}
		})
	}
	t.Run("the record fails: nothing is written", func(t *testing.T) {
		h := newHarness(t, parent)
		h.put(Record{ItemID: "P", LastLegalState: "Research Needed", ObservedState: "Research Needed"})
		commits := 0
		h.st.fail = func(op string) error {
			if op == "commit" {
				commits++
				return errInjected
			}
			return nil
		}
		_, err := h.handoff("P", ho)
		if !errors.Is(err, errInjected) || !strings.Contains(err.Error(), "record the move of #10 to Ready for Plan") || commits != 1 {
			t.Fatalf("%v (%d commits)", err, commits)
		}
		if len(h.board.sets) != 0 || h.state("P") != "Research Needed" {
			t.Fatalf("a handoff that was not recorded wrote %v", h.board.sets)
		}
	})
}

// advance_children moves each child as the calling agent: a move the agent may not make (past
// a state, out of a role's states, with none of its commands) skips that child with the reason.
func TestAdvanceChildrenMovesAsTheAgent(t *testing.T) {
	parent := issueN("P", "Plan in Review", 10)
	a := issueN("A", "Ready for Plan", 11) // → Plan in Review skips Plan in Progress
	c := issueN("C", "Backlog", 12)
	h := newHarness(t, parent, a, c)
	setFamily(h.board, parent, a, c)
	h.adoptAll("P", "A", "C")
	adv, err := h.svc.Facade.AdvanceChildren(bg, h.board, h.boardItem("P"), "Plan in Review", Handoff{Agent: "agent-1"})
	if err != nil || len(adv.Advanced) != 0 || len(adv.Skipped) != 2 {
		t.Fatalf("%+v %v", adv, err)
	}
	for _, sk := range adv.Skipped {
		if !strings.Contains(sk.Reason, "not a transition of the workflow") {
			t.Errorf("skip %+v", sk)
		}
	}
	if h.state("A") != "Ready for Plan" || h.state("C") != "Backlog" || len(h.board.sets) != 0 {
		t.Fatalf("moved: %v", h.board.sets)
	}
	// Only a command that takes the child's state.
	adv, err = h.svc.Facade.AdvanceChildren(bg, h.board, h.boardItem("P"), "Ready for Plan", Handoff{Agent: "agent-1", Commands: []string{"review"}})
	if err != nil || len(adv.Advanced) != 0 || len(adv.Skipped) != 2 {
		t.Fatalf("%+v %v", adv, err)
	}
	for _, sk := range adv.Skipped {
		if sk.Number == 12 && !strings.Contains(sk.Reason, "agent-1 may only use the commands review") {
			t.Errorf("skip %+v", sk)
		}
	}
	// A command that takes it: moved, audited with the agent as the cause.
	adv, err = h.svc.Facade.AdvanceChildren(bg, h.board, h.boardItem("P"), "Ready for Plan", Handoff{Agent: "agent-1", Commands: []string{"triage"}})
	if err != nil || len(adv.Advanced) != 1 || adv.Advanced[0].Number != 12 || h.state("C") != "Ready for Plan" {
		t.Fatalf("%+v %v", adv, err)
	}
	if es := h.audit("C"); es[len(es)-1].Verdict != VerdictHandoff || es[len(es)-1].Actor != "agent-1" ||
		!strings.Contains(es[len(es)-1].Reason, "advance_children by agent-1") {
		t.Fatalf("audit %s", verdicts(es))
	}
}

func TestAdvanceChildren(t *testing.T) {
	parent := issueN("P", "In Progress", 10)
	c1 := issueN("C1", "Backlog", 11)
	c2 := issueN("C2", "Research Needed", 12)
	c3 := issueN("C3", "Done", 13)
	c4 := issueN("C4", "Backlog", 14)
	g1 := issueN("G1", "Backlog", 21)
	g2 := issueN("G2", "In Review", 22)
	obs := &observer{}
	h := newHarnessWith(t, nil, func(_ *harness, o *Options) { o.Observer = obs }, parent, c1, c2, c3, c4, g1, g2)
	setFamily(h.board, c1, g1, g2)
	setFamily(h.board, parent, h.boardItem("C1"), c2, c3, c4)
	fam := h.board.family["I_P"]
	fam.Children = append(fam.Children, offProject(30))
	h.board.family["I_P"] = fam
	hb := newHookBoard(h.board)
	hb.failSet["C4"] = errInjected

	adv, err := h.svc.Facade.AdvanceChildren(bg, hb, h.boardItem("P"), "Ready for Plan", Handoff{Agent: "agent-1"})
	if err != nil {
		t.Fatal(err)
	}
	var moved []int
	for _, mv := range adv.Advanced {
		moved = append(moved, mv.Number)
	}
	if !slices.Equal(moved, []int{11, 12, 14}) || adv.Parent.ID != "P" {
		t.Fatalf("advanced %+v", adv.Advanced)
	}
	skipped := map[int]string{}
	for _, s := range adv.Skipped {
		skipped[s.Number] = s.Reason
	}
	if len(skipped) != 2 || skipped[30] != "not on this project" || !strings.Contains(skipped[13], "terminal") {
		t.Fatalf("skipped %+v", adv.Skipped)
	}
	// A child whose write fails after its move was recorded: moved all the same (the move
	// stands; its walk writes it), and reported.
	if len(adv.Errors) != 1 || adv.Errors[0].Number != 14 || !strings.Contains(adv.Errors[0].Error, "Moved #14 to Ready for Plan, but writing the move failed") {
		t.Fatalf("errors %+v", adv.Errors)
	}
	for id, want := range map[string]string{"C1": "Ready for Plan", "C2": "Ready for Plan", "C3": "Done", "C4": "Backlog", "G1": "Ready for Plan", "G2": "In Review"} {
		if got := h.state(id); got != want {
			t.Errorf("%s is %q, want %q", id, got, want)
		}
	}
	for _, id := range []string{"C1", "C2", "C4"} {
		rec := h.record(id)
		es := h.audit(id)
		if rec.LastLegalState != "Ready for Plan" || len(es) != 1 || es[0].Verdict != VerdictHandoff || es[0].Actor != "agent-1" ||
			!strings.Contains(es[0].Reason, "advance_children by agent-1: parent #10 is in In Progress") {
			t.Errorf("%s: record %+v audit %+v", id, rec, es)
		}
	}
	if es := h.audit("G1"); len(es) != 1 || es[0].Verdict != VerdictAutomated || !strings.Contains(es[0].Cause, "#11 advanced by agent-1") {
		t.Errorf("G1: audit %+v", es)
	}
	if obs.count(CauseCascade) != 1 {
		t.Errorf("the grandchild's cascade was not observed: %v", obs.causes)
	}
	hb.unfail("C4")
	h.drain()
	if h.state("C4") != "Ready for Plan" {
		t.Errorf("C4's move was not written once the board let it: %s", h.state("C4"))
	}

	// A child whose relatives cannot be read is not moved (whether their history before the
	// move is judged is not known), and reported.
	h2 := newHarness(t, parent, c1, g1)
	setFamily(h2.board, c1, g1)
	setFamily(h2.board, parent, h2.boardItem("C1"))
	hb2 := newHookBoard(h2.board)
	hb2.failFamily["I_C1"] = errInjected
	adv, err = h2.svc.Facade.AdvanceChildren(bg, hb2, h2.boardItem("P"), "Ready for Plan", Handoff{Agent: "agent-1"})
	if err != nil || len(adv.Advanced) != 0 || len(adv.Errors) != 1 || !strings.Contains(adv.Errors[0].Error, "Failed to move #11 to Ready for Plan: read the item's descendants") ||
		h2.state("C1") != "Backlog" {
		t.Fatalf("%+v %v", adv, err)
	}

	// Refusals and failures.
	_, err = h.svc.Facade.AdvanceChildren(bg, h.board, h.boardItem("P"), "Done", Handoff{Agent: "agent-1"})
	asRefusal(t, err, "children never get ahead of their parent")
	h.board.breakOn(errInjected, "Family")
	if _, err := h.svc.Facade.AdvanceChildren(bg, h.board, h.boardItem("P"), "Backlog", Handoff{Agent: "agent-1"}); !errors.Is(err, errInjected) || !strings.Contains(err.Error(), "read children of #10") {
		t.Errorf("family: %v", err)
	}
	draft := issueN("D", "In Progress", 0)
	draft.ContentType, draft.ContentID = ContentDraftIssue, ""
	h.board.items["D"] = draft
	if adv, err := h.svc.Facade.AdvanceChildren(bg, h.board, draft, "Backlog", Handoff{Agent: "agent-1"}); err != nil || len(adv.Advanced)+len(adv.Skipped)+len(adv.Errors) != 0 {
		t.Errorf("a draft has children: %+v %v", adv, err)
	}
	h.board.breakOn(errInjected, "Item")
	if _, err := h.svc.Facade.AdvanceChildren(bg, h.board, parent, "Backlog", Handoff{Agent: "agent-1"}); !errors.Is(err, errInjected) {
		t.Errorf("item: %v", err)
	}
	h3 := newHarness(t, parent, c4)
	setFamily(h3.board, parent, c4)
	h3.st.breakOn(errInjected, "LockItem")
	adv, err = h3.svc.Facade.AdvanceChildren(bg, h3.board, h3.boardItem("P"), "Ready for Plan", Handoff{Agent: "agent-1"})
	if err != nil || len(adv.Errors) != 1 || len(adv.Advanced) != 0 {
		t.Fatalf("lock: %+v %v", adv, err)
	}
	for _, e := range adv.Errors {
		if !strings.Contains(e.Error, "lock item C4") || !strings.Contains(e.Error, "Recovery: retry advance_children") {
			t.Errorf("lock error %+v", e)
		}
	}
}

func TestPickClaimFailures(t *testing.T) {
	req := PickRequest{Projects: []ProjectRef{project1}, State: "Research Needed", Claim: true, Handoff: Handoff{Agent: "agent-1", Command: "research"}}
	tests := []struct {
		name         string
		board, store string
		want         string
	}{
		{name: "item lock", store: "LockItem", want: "lock item A"},
		{name: "item read", board: "Item", want: "read item A"},
		{name: "baseline", store: "CommitStep", want: "save item A"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, issueN("A", "Research Needed", 1))
			h.board.breakOn(errInjected, tt.board)
			h.st.breakOn(errInjected, tt.store)
			res, err := h.svc.Facade.Pick(bg, h.board, req)
			if !errors.Is(err, errInjected) || !strings.Contains(err.Error(), tt.want) || res.Claimed != nil {
				t.Fatalf("%+v %v, want %q", res, err, tt.want)
			}
			if len(h.board.sets) != 0 {
				t.Fatalf("writes %v", h.board.sets)
			}
		})
	}
	t.Run("a refused claim whose lock cannot be released", func(t *testing.T) {
		h := newHarness(t, issueN("A", "Research Needed", 1))
		h.put(Record{ItemID: "A", LastLegalState: "Backlog"})
		h.st.breakOn(errInjected, "ReleaseLock")
		res, err := h.svc.Facade.Pick(bg, h.board, req)
		if err != nil || res.Claimed != nil || len(res.Passed) != 1 || !strings.Contains(res.Passed[0].Reason, "still being processed") {
			t.Fatalf("%+v %v", res, err)
		}
		if h.state("A") != "Research Needed" || len(h.board.sets) != 0 {
			t.Fatalf("a refused claim wrote: %v", h.board.sets)
		}
	})
}

// Issues of two repositories may share a number on one project: the ranking must stay with the
// issue it was computed for (candidates are mapped back to items by their Key, not their number).
func TestPickKeepsIssuesOfTwoRepositoriesApart(t *testing.T) {
	app := issueN("A", "Research Needed", 5)
	app.Priority, app.Estimate = "P1", "S"
	lib := issueN("B", "Research Needed", 5)
	lib.Repo, lib.ContentID, lib.Priority, lib.Estimate = "acme/lib", "I_lib5", "P0", "XS"
	h := newHarness(t, app, lib)
	res, err := h.svc.Facade.Pick(bg, h.board, PickRequest{Projects: []ProjectRef{project1}, State: "Research Needed"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Best.Item.Repo != "acme/lib" || res.Alternatives[0].Item.Repo != "acme/app" {
		t.Fatalf("best %s#5 (priority %s), want acme/lib#5 (P0)", res.Best.Item.Repo, res.Best.Item.Priority)
	}
}
