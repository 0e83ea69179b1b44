package enforce

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/policy"
)

// orgPolicies is a Policies whose organizations' workflows a test replaces as a push would,
// each from a time on.
type orgPolicies struct {
	mu sync.Mutex
	by map[string][]timedMachine
}

type timedMachine struct {
	since time.Time
	m     *policy.Machine
	mode  Mode
}

func (p *orgPolicies) at(owner string, at time.Time) (timedMachine, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	list := p.by[owner]
	for i := len(list) - 1; i >= 0; i-- {
		if at.IsZero() || !list[i].since.After(at) || i == 0 {
			return list[i], true
		}
	}
	return timedMachine{}, false
}

func (p *orgPolicies) Of(owner string, at time.Time) (*policy.Machine, policy.Actors, bool) {
	tm, ok := p.at(owner, at)
	return tm.m, policy.Actors{Agents: []string{"agent-*"}}, ok
}

func (p *orgPolicies) Mode(owner string, _ int, at time.Time) (Mode, bool) {
	tm, ok := p.at(owner, at)
	return tm.mode, ok && tm.mode != ""
}

func (p *orgPolicies) set(owner string, since time.Time, m *policy.Machine, mode Mode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.by[owner] = append(p.by[owner], timedMachine{since, m, mode})
}

// machineWith is the default workflow, edited.
func machineWith(t *testing.T, edit func(*policy.Spec)) *policy.Machine {
	t.Helper()
	spec := policy.DefaultSpec()
	if edit != nil {
		edit(&spec)
	}
	m, problems := policy.Compile(spec)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	return m
}

// backlogToInProgress lets Backlog go straight to In Progress.
func backlogToInProgress(s *policy.Spec) {
	for i := range s.States {
		if s.States[i].Name == "Backlog" {
			s.States[i].Next = append(s.States[i].Next, "In Progress")
		}
	}
}

// Each organization's moves are judged by its own policy, as it stood when they were made:
// one organization's workflow allows a move the other's refuses, and a replaced policy (a push)
// judges the moves made after it, not one made before it and reported after. An organization
// with no policy of its own has the deployment's.
func TestEachOrganizationHasItsPolicy(t *testing.T) {
	pols := &orgPolicies{by: map[string][]timedMachine{}}
	pols.set("globex", time.Time{}, machineWith(t, backlogToInProgress), "")
	pols.set("initech", time.Time{}, machineWith(t, nil), "")
	a, g, i := issueN("A", "Backlog", 1), issueN("G", "Backlog", 2), issueN("I", "Backlog", 3)
	g.Owner, g.Repo, g.ProjectID, g.ContentID = "globex", "globex/app", "PVT_2", "I_G"
	i.Owner, i.Repo, i.ProjectID = "initech", "initech/app", "PVT_3"
	h := newHarnessWith(t, nil, func(_ *harness, o *Options) { o.Policies = pols }, a, g, i)
	h.adoptAll("A", "G", "I")
	h.now = h.now.Add(time.Second)
	for _, tc := range []struct {
		id      string
		verdict Verdict
		state   string
	}{
		{"A", VerdictReverted, "Backlog"},    // acme: no policy of its own, the deployment's refuses
		{"G", VerdictAllowed, "In Progress"}, // globex's allows it
		{"I", VerdictReverted, "Backlog"},    // initech: the default workflow
	} {
		res := h.process(h.board.move(tc.id, "agent-1", "In Progress", h.now))
		if res.Verdict != tc.verdict || h.state(tc.id) != tc.state {
			t.Errorf("%s: verdict %v, state %q; want %v, %q", tc.id, res.Verdict, h.state(tc.id), tc.verdict, tc.state)
		}
	}
	// initech pushes the same change, then evaluate: a move made before the push and judged
	// after it is judged by the policy before it; the next such move stands; acme's is still
	// refused.
	h.now = h.now.Add(time.Second)
	before := h.board.move("I", "agent-1", "In Progress", h.now)
	pols.set("initech", h.now.Add(500*time.Millisecond), machineWith(t, backlogToInProgress), "")
	if res := h.process(before); res.Verdict != VerdictReverted || h.state("I") != "Backlog" {
		t.Errorf("initech's move made before its push: verdict %v, state %q; want reverted, Backlog", res.Verdict, h.state("I"))
	}
	h.now = h.now.Add(time.Second)
	if res := h.process(h.board.move("I", "agent-1", "In Progress", h.now)); res.Verdict != VerdictAllowed || h.state("I") != "In Progress" {
		t.Errorf("initech after its push: verdict %v, state %q; want allowed, In Progress", res.Verdict, h.state("I"))
	}
	pols.set("initech", h.now.Add(500*time.Millisecond), machineWith(t, nil), ModeEvaluate)
	h.now = h.now.Add(time.Second)
	if res := h.process(h.board.move("I", "agent-1", "Done", h.now)); res.Verdict != VerdictWouldRevert || h.state("I") != "Done" {
		t.Errorf("initech in evaluate: verdict %v, state %q; want would_revert, Done", res.Verdict, h.state("I"))
	}
	if res := h.process(h.board.move("A", "agent-1", "In Progress", h.now)); res.Verdict != VerdictReverted {
		t.Errorf("acme after initech's push: verdict %v, want reverted", res.Verdict)
	}
	if got := h.svc.Facade.In("globex").Machine(); got != pols.by["globex"][0].m {
		t.Error("the façade in globex does not describe globex's workflow")
	}
	if got := h.svc.Facade.In("acme").Machine(); got == pols.by["globex"][0].m {
		t.Error("the façade in acme describes globex's workflow")
	}
}

// stuckBoard holds its guarded writes until released, as an installation whose writes wait
// for their turns behind a storm's.
type stuckBoard struct {
	Board
	entered chan struct{}
	release chan struct{}
}

func (b *stuckBoard) SetStatesIf(ctx context.Context, writes []StateWrite) []error {
	b.entered <- struct{}{}
	<-b.release
	return b.Board.SetStatesIf(ctx, writes)
}

// One installation's reverts at once are written beside another's, never after them: while
// beta's writes are held (a storm's turns), acme's refused move is reverted at once, and a
// move beta lists meanwhile is taken by beta's own writer.
func TestRevertsAtOnceOfOneInstallationDoNotWaitForAnothers(t *testing.T) {
	stuck := &stuckBoard{entered: make(chan struct{}, 4), release: make(chan struct{})}
	a, g, g2 := issueN("A", "Backlog", 1), issueN("G", "Backlog", 2), issueN("G2", "Backlog", 3)
	for _, it := range []*Item{&g, &g2} {
		it.Owner, it.Repo, it.ProjectID = "beta", "beta/web", "PVT_2"
	}
	h := newHarnessWith(t, nil, func(h *harness, o *Options) {
		o.BatchJudge = true
		stuck.Board = h.board
		o.Boards = func(_ context.Context, installation int64, _ string) (Board, error) {
			if installation == 2 {
				return stuck, nil
			}
			return h.board, nil
		}
	}, a, g, g2)
	h.adoptAll("A", "G", "G2")
	h.unproven()
	observe := func(id, owner string, installation int64) {
		t.Helper()
		ch := h.board.move(id, "agent-1", "In Progress", h.now)
		ch.Owner, ch.InstallationID = owner, installation
		if _, err := h.svc.Enforcer.Observe(context.Background(), ch); err != nil {
			t.Fatal(err)
		}
	}
	observe("G", "beta", 2)
	done := make(chan int)
	go func() { done <- h.svc.Enforcer.RevertAtOnce(context.Background()) }()
	<-stuck.entered // beta's write waits for its turn
	observe("G2", "beta", 2)
	observe("A", "acme", 1)
	if n := h.svc.Enforcer.RevertAtOnce(context.Background()); n != 1 || h.state("A") != "Backlog" {
		t.Fatalf("while beta's writes wait: looked at %d items, A is in %q; want acme's one move reverted at once", n, h.state("A"))
	}
	close(stuck.release)
	if n := <-done; n != 2 || h.state("G") != "Backlog" || h.state("G2") != "Backlog" {
		t.Errorf("beta's writer looked at %d items, G %q, G2 %q; want both of beta's reverted by it", n, h.state("G"), h.state("G2"))
	}
}

// The sweep's released items are judged in chunks whose installations take turns.
func TestTakeTurns(t *testing.T) {
	for _, tc := range []struct {
		in   [][]int
		want []int
	}{
		{nil, nil},
		{[][]int{{1, 2, 3}}, []int{1, 2, 3}},
		{[][]int{{1, 2, 3, 4}, {10}, {20, 21}}, []int{1, 10, 20, 2, 21, 3, 4}},
		{[][]int{{}, {5}}, []int{5}},
	} {
		if got := takeTurns(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("takeTurns(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// An organization with no policy in force any more (the App was uninstalled) has its waiting
// changes dropped without reading GitHub.
func TestChangesOfAnOrganizationWithNoPolicyAreDropped(t *testing.T) {
	pols := &orgPolicies{by: map[string][]timedMachine{}}
	g := issueN("G", "Backlog", 2)
	g.Owner, g.Repo, g.ProjectID = "globex", "globex/app", "PVT_2"
	h := newHarnessWith(t, nil, func(_ *harness, o *Options) { o.Policies = pols }, g)
	h.adoptAll("G")
	h.now = h.now.Add(time.Second)
	ch := h.board.move("G", "agent-1", "In Progress", h.now)
	ch.Owner = "globex"
	h.board.mu.Lock()
	reads := h.board.calls["Item"]
	h.board.mu.Unlock()
	res := h.process(ch)
	h.board.mu.Lock()
	read := h.board.calls["Item"] - reads
	h.board.mu.Unlock()
	if res.Verdict != VerdictIgnored || !strings.Contains(res.Reason, "globex has no policy in force") || read != 0 {
		t.Errorf("verdict %v (%s), %d reads; want ignored, no read", res.Verdict, res.Reason, read)
	}
	if h.state("G") != "In Progress" {
		t.Errorf("G is in %q: nothing of the organization is enforced", h.state("G"))
	}
}
