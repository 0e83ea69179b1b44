package sandbox

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/ghsim"
	"github.com/ralph-gate/ralph-gate/internal/oracle"
	"github.com/ralph-gate/ralph-gate/marker"
	"github.com/ralph-gate/ralph-gate/payload"
	"github.com/ralph-gate/ralph-gate/policy"
)

// The end-to-end history suite: random histories of people and agents moving items, all at
// once, through the real app on ghsim over real HTTP, with webhooks dropped (GitHub lists them
// as failed), duplicated and reordered and API calls failing. Once faults stop, the board,
// every lock holder and every explanation must be what the oracle (internal/oracle) gives for
// the true history — the order ghsim created the changes in.

type e2eMove struct {
	actor, to string
	after     time.Duration
}

type e2eHistory struct {
	items []int // issue numbers of its own
	moves []struct {
		item int
		e2eMove
	}
}

func e2eHistories(t *testing.T) int {
	if v := os.Getenv("RALPH_GATE_E2E_HISTORIES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("RALPH_GATE_E2E_HISTORIES=%q: want a positive number", v)
		}
		return n
	}
	if testing.Short() {
		return 20
	}
	return 100
}

// Not parallel: it runs alone, before the tests that run eight at a time (main_test.go), so that
// its timings stay those of the histories it checks. (Beside them, a revert at once's read and
// its guarded write once came two seconds apart and an agent's next move fell between them: the
// write landed over it, and the app explained the card's value as nobody's violation. Such a
// write is now told by its report and put back silently: docs/ENFORCEMENT.md, "A write that
// lands over a newer change".)
func TestHistoriesEndToEnd(t *testing.T) {
	n := e2eHistories(t)
	seed := uint64(7)
	if v := os.Getenv("RALPH_GATE_HISTORY_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("RALPH_GATE_HISTORY_SEED=%q: want a number", v)
		}
		seed = s
	}
	rng := rand.New(rand.NewPCG(seed, 0xe2e))
	starts := []string{"Backlog", "Research Needed", "Ready for Plan", "In Progress", "Research in Progress"}
	var initial []string
	parent := map[int]int{}     // child → parent
	children := map[int][]int{} // parent → children
	hs := make([]e2eHistory, n)
	for i := range hs {
		if rng.IntN(3) == 0 {
			// A family: a parent and two sub-issues, all in one queue state.
			s := []string{"Backlog", "Research Needed", "Ready for Plan"}[rng.IntN(3)]
			initial = append(initial, s)
			p := len(initial)
			hs[i].items = append(hs[i].items, p)
			for range 2 {
				initial = append(initial, s)
				parent[len(initial)] = p
				children[p] = append(children[p], len(initial))
				hs[i].items = append(hs[i].items, len(initial))
			}
			continue
		}
		for k := 0; k < 1+rng.IntN(2); k++ {
			initial = append(initial, starts[rng.IntN(len(starts))])
			hs[i].items = append(hs[i].items, len(initial))
		}
	}
	e := start(t, "sqlite", familySeed(t, initial, parent), func(c *config.Config) {
		c.Reconcile.Settle = 0
		// ghsim delivers one webhook at a time: under -race beside other suites its queue can run
		// a second or two behind, and a proof assumes every delivery attempted within the window.
		c.Enforcement.ReorderWindow = 3 * time.Second
	})
	m, err := e.sb.Config.Machine()
	if err != nil {
		t.Fatal(err)
	}
	actors := e.sb.Config.PolicyActors(e.sb.App.AppLogin())
	states := m.States()
	names := []string{"alice", "agent-1", "agent-2", "alice", "agent-1", "agent-2", "owner"}
	for i := range hs {
		legal := map[int]string{}
		for _, it := range hs[i].items {
			legal[it] = initial[it-1]
		}
		for k := 0; k < 2+rng.IntN(5); k++ {
			it := hs[i].items[rng.IntN(len(hs[i].items))]
			actor := names[rng.IntN(len(names))]
			to := states[rng.IntN(len(states))]
			if next := m.AllowedNext(legal[it], actors.Classify(actor)); len(next) > 0 && rng.Float64() < 0.65 {
				to = next[rng.IntN(len(next))]
			}
			if d := m.Decide(policy.Change{From: legal[it], To: to, Actor: actor, ActorKind: actors.Classify(actor)}); d.Verdict == policy.Allow {
				legal[it] = to
			}
			hs[i].moves = append(hs[i].moves, struct {
				item int
				e2eMove
			}{it, e2eMove{actor: actor, to: to, after: time.Duration(rng.IntN(1200)) * time.Millisecond}})
		}
	}
	e.reconcile() // installed on the board: every item adopted as it is

	ctx := context.Background()
	e.faults(ghsim.Faults{ErrorRate: 0.05, Webhook: ghsim.WebhookFaults{DropRate: 0.15, DuplicateRate: 0.1, Reorder: true, DelayMS: 50}})
	begin := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range hs {
		wg.Add(1)
		go func(h e2eHistory) {
			defer wg.Done()
			for _, mv := range h.moves {
				time.Sleep(mv.after)
				if s, err := e.sb.State("app", mv.item); err == nil && s == mv.to {
					continue // no change, no webhook
				}
				if err := userMove(ctx, e.sb, mv.actor, mv.item, mv.to); err != nil {
					errs <- err
					return
				}
			}
		}(hs[i])
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	e.faults(ghsim.Faults{})
	// Deliveries stop failing: the gap sweeps bring back what was lost, and within the bound
	// (window + a sweep, a few times over for the redeliveries that failed too) it settles.
	deadline := time.Now().Add(4 * time.Minute)
	settled := func() bool {
		for time.Now().Before(deadline) {
			if err := e.sb.Settle(ctx); err == nil {
				return true
			}
		}
		return false
	}
	for {
		if !settled() {
			t.Fatal("not settled within 4 minutes")
		}
		if rep, err := e.sb.App.SweepNow(ctx); err == nil && rep.Failed == rep.GaveUp {
			if !settled() {
				t.Fatal("not settled within 4 minutes")
			}
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("failed deliveries remain after 4 minutes: %+v %v", rep, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	took := time.Since(begin)

	// The true history: the changes in the order ghsim made them, with their senders.
	st := e.sb.Sim.State()
	newOracle := func() *oracle.Oracle {
		or := oracle.New(m, actors)
		or.GroupOf = func(item string) []string {
			num := numberOfItem(st, item)
			var members []int
			switch {
			case parent[num] != 0:
				members = children[parent[num]]
			case len(children[num]) > 0:
				members = children[num]
			}
			var out []string
			for _, k := range members {
				if k != num {
					out = append(out, itemOfNumber(st, k))
				}
			}
			return out
		}
		// Automation is part of its cause (docs/AUTOMATION.md): the oracle runs it in the
		// true history, at the time of the move that causes it.
		or.Family = func(item string) (string, []string) {
			num := numberOfItem(st, item)
			up := ""
			if parent[num] != 0 {
				up = itemOfNumber(st, parent[num])
			}
			var down []string
			for _, k := range children[num] {
				down = append(down, itemOfNumber(st, k))
			}
			return up, down
		}
		for i, s := range initial {
			or.Start(itemOfNumber(st, i+1), s)
		}
		return or
	}
	or := newOracle()
	byItem := map[string]ghsim.IssueState{}
	for _, is := range st.Issues {
		byItem[is.ItemID] = is
	}
	held := map[string]map[string]bool{} // every legal state an item has held so far
	for i, s := range initial {
		held[itemOfNumber(st, i+1)] = map[string]bool{s: true}
	}
	numberOf := map[string]int{}
	for _, is := range st.Issues {
		numberOf[is.ItemID] = is.Number
	}
	itemOf := map[int]string{}
	for id, num := range numberOf {
		itemOf[num] = id
	}
	seen := map[string]bool{}
	var problems []string
	dels := e.sb.Sim.Deliveries()
	slices.SortStableFunc(dels, func(a, b ghsim.Delivery) int { return int(a.EventSeq) - int(b.EventSeq) })
	moves := 0
	var steps []oracle.ItemMove // the moves of people and agents, in true order
	for _, d := range dels {
		if d.Event != "projects_v2_item" || seen[d.GUID] {
			continue
		}
		seen[d.GUID] = true
		fc, err := payload.ProjectsV2Item(d.Payload())
		if err != nil || fc.Ignore != "" || fc.Field != "Workflow State" {
			continue
		}
		mv := oracle.Move{From: fc.From, To: fc.To, Actor: fc.Sender, Delivery: d.GUID, At: fc.At, App: fc.Sender == e.sb.App.AppLogin()}
		if mv.App {
			// A write of ours: the item's legal value (a revert, or automation the oracle ran
			// at its cause), or one it held legally since (automation written late).
			if num := numberOf[fc.ItemID]; fc.To != or.Legal[fc.ItemID] && !held[fc.ItemID][fc.To] {
				problems = append(problems, fmt.Sprintf("#%d: the app wrote %s → %s, neither a revert to its legal value (%s) nor automation",
					num, fc.From, fc.To, or.Legal[fc.ItemID]))
			}
			continue
		}
		moves++
		steps = append(steps, oracle.ItemMove{Item: fc.ItemID, Move: mv})
		or.Step(fc.ItemID, mv)
		for _, a := range or.Automated {
			if held[a.Item] == nil {
				held[a.Item] = map[string]bool{}
			}
			held[a.Item][a.To] = true
		}
		if held[fc.ItemID] == nil {
			held[fc.ItemID] = map[string]bool{}
		}
		held[fc.ItemID][or.Legal[fc.ItemID]] = true
	}

	diverged := problems
	inSummaries := summarized(st, e.sb.App.AppLogin())
	for itemID, is := range byItem {
		if is.ItemID == "" {
			continue
		}
		explained := map[string]int{}
		for _, c := range is.Comments {
			if c.Author != e.sb.App.AppLogin() || !strings.Contains(c.Body, marker.Violation) {
				continue
			}
			ms, _ := marker.ParseTransitions(c.Body)
			for _, mk := range ms {
				explained[mk.Delivery]++
			}
		}
		for _, mk := range inSummaries[is.Number] { // a storm's summary explains them elsewhere
			explained[mk.Delivery]++
		}
		rec, err := e.sb.App.Store().GetItem(ctx, itemID)
		if err != nil {
			t.Fatalf("#%d: %v", is.Number, err)
		}
		if diffs := or.Check(itemID, is.Fields["Workflow State"], rec.LockHolder, explained); len(diffs) > 0 &&
			!agreesInAnotherOrder(newOracle, familySteps(steps, is.Number, parent, numberOf), itemID, is.Fields["Workflow State"], rec.LockHolder, explained) {
			var b strings.Builder
			fmt.Fprintf(&b, "#%d:\n  %s\n  true history:", is.Number, strings.Join(diffs, "\n  "))
			for _, mv := range or.Moves(itemID) {
				fmt.Fprintf(&b, "\n    %s %s: %s → %s (%s)", mv.At.Format("15:04:05"), mv.Actor, mv.From, mv.To, mv.Delivery)
			}
			for _, a := range e.audit(is.Number) {
				fmt.Fprintf(&b, "\n    audit %s %s %s→%s %s (%s) %s", a.At.Format("15:04:05.000"), a.Actor, a.FromState, a.ToState, a.Verdict, a.Reason, a.DeliveryID)
			}
			diverged = append(diverged, b.String())
		}
	}
	if len(diverged) > 0 {
		t.Errorf("%d of %d items diverge from the oracle:\n%s", len(diverged), len(initial), strings.Join(diverged, "\n"))
	}
	dropped := 0
	for _, d := range dels {
		if d.Dropped {
			dropped++
		}
	}
	t.Logf("%d histories (%d families), %d items, %d moves, %d deliveries dropped: correct %s after the first move",
		n, len(children), len(initial), moves, dropped, took.Round(time.Millisecond))
}

// familySteps are the moves of the family an issue belongs to (all of them, for a loose issue:
// its own), in true order.
func familySteps(steps []oracle.ItemMove, num int, parent map[int]int, numberOf map[string]int) []oracle.ItemMove {
	root := func(n int) int {
		for parent[n] != 0 {
			n = parent[n]
		}
		return n
	}
	var out []oracle.ItemMove
	for _, st := range steps {
		if root(numberOf[st.Item]) == root(num) {
			out = append(out, st)
		}
	}
	return out
}

// agreesInAnotherOrder reports whether an item ends as the oracle says for an order of its
// family's moves that GitHub's one-second clock cannot tell from the true one.
func agreesInAnotherOrder(newOracle func() *oracle.Oracle, steps []oracle.ItemMove, item, board, holder string, explained map[string]int) bool {
	for _, order := range oracle.Interleavings(steps, 2000)[1:] {
		or := newOracle()
		for _, st := range order {
			or.Step(st.Item, st.Move)
		}
		if len(or.Check(item, board, holder, explained)) == 0 {
			return true
		}
	}
	return false
}

// familySeed is the demo world with these issues instead of its own: issue i+1 in initial[i]
// ("": no value), a sub-issue of parent[i+1] when it has one.
func familySeed(t testing.TB, initial []string, parent map[int]int) []byte {
	t.Helper()
	demo := string(DemoSeed())
	i := strings.Index(demo, "\nissues:")
	if i < 0 {
		t.Fatal("the demo seed has no issues section")
	}
	var b strings.Builder
	b.WriteString(demo[:i])
	b.WriteString("\nissues:\n")
	for k, s := range initial {
		fmt.Fprintf(&b, "  - {repo: app, number: %d, title: Issue %d, project: 1", k+1, k+1)
		if p := parent[k+1]; p != 0 {
			fmt.Fprintf(&b, ", parent: %d", p)
		}
		if s != "" {
			fmt.Fprintf(&b, ", fields: {Workflow State: %s}", s)
		}
		b.WriteString("}\n")
	}
	return []byte(b.String())
}

func numberOfItem(st ghsim.State, item string) int {
	for _, is := range st.Issues {
		if is.ItemID == item {
			return is.Number
		}
	}
	return 0
}

func itemOfNumber(st ghsim.State, number int) string {
	for _, is := range st.Issues {
		if is.Number == number {
			return is.ItemID
		}
	}
	return ""
}
