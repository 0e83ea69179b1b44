package enforce

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/policy"
)

// The history suite: random histories of several people and agents moving a few items
// (multi-step chains, locks taken and handed on, illegal moves, bypass), each with a fault
// schedule (dropped, duplicated and late webhooks; writes that fail before or after they
// happen), run through the app in simWorld and compared with an oracle that saw every move in
// order. A failing history is shrunk to a minimal one and written to testdata/histories,
// where TestHistoryRegressions replays it forever after.

func storeItem(id, state string, at time.Time) Record {
	return Record{ItemID: id, ProjectID: "PVT_1", LastLegalState: state, ObservedState: state, ObservedAt: at, LegalAt: at, Version: 1}
}

var simActors = []string{"alice", "bob", "agent-1", "agent-2", "agent-3", "owner"}

// genHistory draws a history: a few items, a dozen moves, mostly legal multi-step chains by
// whoever may make them, some illegal ones, with the fault rates given.
func genHistory(m *policy.Machine, actors policy.Actors, seed uint64, drop, dup float64) simHistory {
	rng := rand.New(rand.NewPCG(seed, 0x4157))
	states := m.States()
	h := simHistory{Seed: seed, Crash: 0.04}
	n := 1 + rng.IntN(3)
	legal := map[int]string{}
	holder := map[int]string{}
	for i := 0; i < n; i++ {
		s := []string{"Backlog", "Research Needed", "Ready for Plan", "In Progress", "Research in Progress"}[rng.IntN(5)]
		h.Items = append(h.Items, s)
		legal[i] = s
		if m.IsLock(s) {
			holder[i] = "agent-1"
		}
	}
	moves := 3 + rng.IntN(12)
	// A hidden round trip: an item moved away and back (X → Z → X) with both webhooks late
	// or lost, then a move of it reported at once, which a provisional revert may set back
	// before the round trip is known (the round trip can change its verdict or what it goes
	// back to: the revert is then withdrawn).
	roundTrip, phase, back := 0, 0, "" // phase 1: away, 2: back, 3: the move reported at once
	for k := 0; k < moves; k++ {
		item := rng.IntN(n)
		switch {
		case phase > 0:
			item, phase = roundTrip, phase+1
		case k+3 < moves && rng.Float64() < 0.08:
			roundTrip, phase, back = item, 1, legal[item]
		}
		actor := simActors[rng.IntN(len(simActors)-1)]
		if rng.IntN(20) == 0 {
			actor = "owner"
		}
		kind := actors.Classify(actor)
		var to string
		next := m.AllowedNext(legal[item], kind)
		if len(next) > 0 && rng.Float64() < 0.65 {
			to = next[rng.IntN(len(next))]
		} else {
			to = states[rng.IntN(len(states))]
		}
		if holder[item] != "" && rng.Float64() < 0.5 {
			actor = holder[item] // the holder moves on more often than not
		}
		switch {
		case phase == 1 && to == back:
			to = states[(slices.Index(states, back)+1+rng.IntN(len(states)-1))%len(states)] // away
		case phase == 2:
			to = back
		}
		hiding := phase == 1 || phase == 2
		d := m.Decide(policy.Change{From: legal[item], To: to, Actor: actor, ActorKind: actors.Classify(actor), LockHolder: holder[item]})
		if d.Verdict == policy.Allow && to != legal[item] {
			legal[item] = to
			holder[item] = ""
			if m.IsLock(to) {
				holder[item] = actor
			}
		}
		mv := simMove{Item: item, Actor: actor, To: to}
		if hiding {
			mv.After = time.Duration(rng.IntN(300)) * time.Millisecond
			mv.Latency = time.Duration(1500+rng.IntN(1500)) * time.Millisecond
			mv.Drop = rng.Float64() < 0.5
			h.Moves = append(h.Moves, mv)
			continue
		}
		if phase == 3 {
			// The move reported at once, right after the round trip.
			mv.After, mv.Latency = time.Duration(rng.IntN(300))*time.Millisecond, time.Duration(5+rng.IntN(40))*time.Millisecond
			phase = 0
			h.Moves = append(h.Moves, mv)
			continue
		}
		switch r := rng.Float64(); {
		case r < 0.25:
			mv.After = 0 // the same moment
		case r < 0.6:
			mv.After = time.Duration(rng.IntN(500)) * time.Millisecond
		case r < 0.85:
			mv.After = time.Duration(500+rng.IntN(2500)) * time.Millisecond
		default:
			mv.After = time.Duration(3+rng.IntN(8)) * time.Second
		}
		mv.Latency = time.Duration(5+rng.IntN(40)) * time.Millisecond
		if rng.Float64() < 0.2 {
			mv.Latency = time.Duration(50+rng.IntN(1500)) * time.Millisecond // delivered late
		}
		mv.Drop = rng.Float64() < drop
		mv.Dup = rng.Float64() < dup
		h.Moves = append(h.Moves, mv)
	}
	withoutFrom(&h, seed)
	return h
}

// noFromShare is the share of card moves whose report carries no previous value
// (RALPH_GATE_NO_FROM, default 0): GitHub's published payload examples include an edit whose
// changes name neither. Off by default: the design does not handle them yet (ENFORCEMENT.md,
// "Reports without a previous value").
var noFromShare, _ = strconv.ParseFloat(os.Getenv("RALPH_GATE_NO_FROM"), 64)

// withoutFrom makes a share of the card moves' reports carry no previous value. Its draws come
// from a stream of their own, so a seed's history is otherwise the one it drew before.
func withoutFrom(h *simHistory, seed uint64) {
	if noFromShare <= 0 {
		return
	}
	rng := rand.New(rand.NewPCG(seed, 0x6e6f66))
	for i := range h.Moves {
		if rng.Float64() < noFromShare && h.Moves[i].Kind == "" {
			h.Moves[i].NoFrom = true
		}
	}
}

// genFamilyHistory draws a history of one family: a parent with 2 to 6 sub-issues, some of
// which have sub-issues of their own (at most 20 items over three levels), most of them in
// Backlog so that moves of the parent cascade; moves of the parent and the children by
// people and agents, legal more often than not — card moves, closes, reopens and merged pull
// requests of their issues, agents' handoffs and advance_children through the façade — with
// the fault rates given.
func genFamilyHistory(m *policy.Machine, actors policy.Actors, seed uint64, drop, dup float64) simHistory {
	rng := rand.New(rand.NewPCG(seed, 0xfa11))
	h := simHistory{Seed: seed, Crash: 0.04, Items: []string{"Backlog"}, Parents: []int{-1}}
	early := []string{"Backlog", "Backlog", "Backlog", "Research Needed", "Ready for Plan"}
	add := func(parent int) int {
		h.Items = append(h.Items, early[rng.IntN(len(early))])
		h.Parents = append(h.Parents, parent)
		return len(h.Items) - 1
	}
	for k := 2 + rng.IntN(5); k > 0 && len(h.Items) < 20; k-- {
		c := add(0)
		if rng.Float64() < 0.3 {
			for g := 1 + rng.IntN(3); g > 0 && len(h.Items) < 20; g-- {
				add(c)
			}
		}
	}
	states := m.States()
	legal := map[int]string{}
	for i, s := range h.Items {
		legal[i] = s
	}
	for k := 3 + rng.IntN(10); k > 0; k-- {
		item := 0
		if rng.Float64() < 0.55 {
			item = rng.IntN(len(h.Items))
		}
		actor := simActors[rng.IntN(len(simActors)-1)]
		next := m.AllowedNext(legal[item], actors.Classify(actor))
		to := states[rng.IntN(len(states))]
		if len(next) > 0 && rng.Float64() < 0.7 {
			to = next[rng.IntN(len(next))]
		}
		mv := simMove{Item: item, Actor: actor, Latency: time.Duration(5+rng.IntN(40)) * time.Millisecond}
		// Besides moving cards: closing and reopening issues, and agents' handoffs.
		switch r := rng.Float64(); {
		case r < 0.08:
			mv.Kind, to = simClose, "Done"
		case r < 0.12:
			mv.Kind, to = simReopen, "Backlog"
		case r < 0.27:
			mv.Kind, mv.Actor = simHandoff, simActors[2+rng.IntN(3)]
			cmds := m.Commands()
			mv.Command = cmds[rng.IntN(len(cmds))]
			direct, _ := m.DirectStates(mv.Command)
			to = direct[rng.IntN(len(direct))]
		case r < 0.31:
			mv.Kind, to = simMerge, "" // its state is the legal state's next on the merge path
		case r < 0.37 && len(h.childrenOf(item)) > 0:
			mv.Kind, mv.Actor = simAdvance, simActors[2+rng.IntN(3)]
			pipeline := m.Pipeline()
			to = pipeline[rng.IntN(len(pipeline))]
			if rng.Float64() < 0.7 {
				to = legal[item] // as far as the parent (children never get ahead of it)
			}
		case r < 0.42:
			// A claim of the best issue in some item's state (candidates exist), mostly with a
			// command whose lock state an agent may enter from there.
			mv.Kind, mv.Actor = simClaim, simActors[2+rng.IntN(3)]
			to = legal[rng.IntN(len(h.Items))]
			cmds := m.Commands()
			var lockers []string
			for _, c := range cmds {
				if st, err := m.ResolveIntent(c, "lock"); err == nil && slices.Contains(m.AllowedNext(to, policy.ActorAgent), st) {
					lockers = append(lockers, c)
				}
			}
			mv.Command = cmds[rng.IntN(len(cmds))]
			if len(lockers) > 0 && rng.Float64() < 0.8 {
				mv.Command = lockers[rng.IntN(len(lockers))]
			}
		}
		mv.To = to
		if mv.Kind != simAdvance && mv.Kind != simClaim && to != "" &&
			m.Decide(policy.Change{From: legal[item], To: to, Actor: mv.Actor, ActorKind: actors.Classify(mv.Actor)}).Verdict == policy.Allow {
			legal[item] = to
		}
		switch r := rng.Float64(); {
		case r < 0.2:
			mv.After = 0
		case r < 0.5:
			mv.After = time.Duration(rng.IntN(1500)) * time.Millisecond
		default:
			mv.After = time.Duration(1+rng.IntN(12)) * time.Second
		}
		if rng.Float64() < 0.2 {
			mv.Latency = time.Duration(50+rng.IntN(1500)) * time.Millisecond
		}
		mv.Drop = rng.Float64() < drop
		mv.Dup = rng.Float64() < dup
		h.Moves = append(h.Moves, mv)
	}
	withoutFrom(&h, seed)
	return h
}

func simMachine(t testing.TB) (*policy.Machine, policy.Actors) {
	t.Helper()
	m, problems := policy.Compile(policy.DefaultSpec())
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	return m, policy.Actors{Agents: []string{"agent-*"}, Bypass: []string{"owner"}, App: "ralph-gate[bot]"}
}

// historyCount is how many histories a suite runs: the environment variable env for longer
// local runs, small under -short.
func historyCount(t *testing.T, env string, def int) int {
	if v := os.Getenv(env); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("%s=%q: want a positive number", env, v)
		}
		return n
	}
	if testing.Short() {
		return def / 10
	}
	return def
}

// historySeed is the suite's first seed: fixed, or RALPH_GATE_HISTORY_SEED for new ground.
func historySeed(t *testing.T) uint64 {
	if v := os.Getenv("RALPH_GATE_HISTORY_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("RALPH_GATE_HISTORY_SEED=%q: want a number", v)
		}
		return n
	}
	return 1
}

// TestHistoriesAgainstOracle: 15 % of webhooks dropped (GitHub lists them as failed), 10 %
// duplicated, a fifth delivered late, 4 % of writes failing before or after they happen; the
// board, every lock holder and every explanation must end as the oracle says.
func TestHistoriesAgainstOracle(t *testing.T) {
	m, actors := simMachine(t)
	runHistories(t, historyCount(t, "RALPH_GATE_HISTORIES", 5000), func(seed uint64) simHistory {
		return withReplicas(withPushes(withRaces(withRequirements(withMode(genHistory(m, actors, seed, 0.15, 0.10), seed), seed), seed), seed), seed)
	})
}

// withRequirements has three histories in ten run under workflow.requirements (an Estimate
// to enter Ready for Plan and In Progress, a merged pull request to enter Done:
// simRequirements), half their items estimated, drawn apart from the history, and one to
// four edits of an Estimate by people and agents put among its moves — most right before or
// after a move of their item, often in its second — with the faults of any webhook: each
// move is checked against the Estimate as it was when it was made (docs/ENFORCEMENT.md
// "Requirements").
func withRequirements(h simHistory, seed uint64) simHistory {
	rng := rand.New(rand.NewPCG(seed, 0x7e9))
	if rng.IntN(10) >= 3 {
		return h
	}
	h.Estimates = make([]string, len(h.Items))
	for i := range h.Items {
		if rng.IntN(2) == 0 {
			h.Estimates[i] = "S"
		}
	}
	for k := 1 + rng.IntN(4); k > 0; k-- {
		pos := rng.IntN(len(h.Moves) + 1)
		item := rng.IntN(len(h.Items))
		if near := pos - rng.IntN(2); near >= 0 && near < len(h.Moves) && rng.Float64() < 0.7 {
			item = h.Moves[near].Item // right before or right after a move of its item
		}
		mv := simMove{Item: item, Actor: simActors[rng.IntN(len(simActors))], To: []string{"", "S", "M"}[rng.IntN(3)], Kind: simEdit,
			Latency: time.Duration(5+rng.IntN(40)) * time.Millisecond}
		if rng.Float64() < 0.5 {
			mv.After = time.Duration(rng.IntN(1500)) * time.Millisecond // else the same moment
		}
		if rng.Float64() < 0.2 {
			mv.Latency = time.Duration(50+rng.IntN(1500)) * time.Millisecond // delivered late
		}
		mv.Drop, mv.Dup = rng.Float64() < 0.15, rng.Float64() < 0.10
		h.Moves = slices.Insert(h.Moves, pos, mv)
	}
	return h
}

// withRaces has two histories in ten race the app's guarded writes: GitHub has no
// conditional write, so a move may land between the read that checks a write's guard and the
// write itself (seconds apart when writes wait for their turn under load); in those histories
// a third of the guarded writes that pass their guard have someone's move made just before
// they land (simWorld.race).
func withRaces(h simHistory, seed uint64) simHistory {
	if rand.New(rand.NewPCG(seed, 0x4ace)).IntN(10) < 2 {
		h.Races = 0.33
	}
	return h
}

// withReplicas has two histories in ten served by two replicas sharing the store, the board
// and the sweeper (simHistory.Replicas): what one replica keeps in memory (its waiting items,
// its wakes, its at-once list) is not the other's.
func withReplicas(h simHistory, seed uint64) simHistory {
	h.Replicas = rand.New(rand.NewPCG(seed, 0x2e91)).IntN(10) < 2
	return h
}

// withPushes has two histories in ten push the organization's policy file once or twice
// while they are made (docs/CONFIGURATION.md "Policy in the organization's repository"):
// the workflow widened or narrowed again, the project put in another mode. Each change is
// judged by the policy in force when it was made, however late its report.
func withPushes(h simHistory, seed uint64) simHistory {
	rng := rand.New(rand.NewPCG(seed, 0x9054))
	if rng.IntN(10) >= 2 {
		return h
	}
	var span time.Duration
	for _, mv := range h.Moves {
		span += mv.After
	}
	modes := []Mode{"", "", ModeWarn, ModeEvaluate}
	for k := 1 + rng.IntN(2); k > 0; k-- {
		h.Pushes = append(h.Pushes, simPush{At: time.Duration(rng.Int64N(int64(span) + 1)), Wide: rng.IntN(2) == 0, Mode: modes[rng.IntN(len(modes))]})
	}
	slices.SortFunc(h.Pushes, func(a, b simPush) int { return cmp.Compare(a.At, b.At) })
	return h
}

// withMode puts two histories in ten in warn mode and two in evaluate mode (refused moves
// stand: docs/ENFORCEMENT.md "Modes"), drawn apart from the history, so that a seed's moves
// are the same whatever its mode.
func withMode(h simHistory, seed uint64) simHistory {
	switch rand.New(rand.NewPCG(seed, 0x30de)).IntN(10) {
	case 0, 1:
		h.Mode = ModeWarn
	case 2, 3:
		h.Mode = ModeEvaluate
	}
	return h
}

// TestFamilyHistoriesAgainstOracle: the same faults on families — a parent with up to 20
// sub-issues over three levels, people and agents moving parents and children at once — so
// that cascades, convergence and the convergence gate take part. The oracle runs the
// automation in the true history, at the time of the move that causes it; every automated
// move must be audited, nothing may be left waiting, and the GitHub requests must stay within
// the budget (docs/RELIABILITY.md).
//
// RALPH_GATE_FAMILY_HISTORIES=N runs N of them (with RALPH_GATE_HISTORY_SEED for new ground).
func TestFamilyHistoriesAgainstOracle(t *testing.T) {
	m, actors := simMachine(t)
	runHistories(t, historyCount(t, "RALPH_GATE_FAMILY_HISTORIES", 5000), func(seed uint64) simHistory {
		return withReplicas(withPushes(withRaces(withRequirements(withMode(genFamilyHistory(m, actors, seed, 0.15, 0.10), seed), seed), seed), seed), seed)
	})
}

// runHistories runs n histories from the suite's seed, shrinking and keeping the first
// failures.
func runHistories(t *testing.T, n int, gen func(seed uint64) simHistory) {
	m, actors := simMachine(t)
	seed := historySeed(t)
	failed, together, settledJobs, requests, moves := 0, 0, 0, 0, 0
	made, families, provisional := map[string]int{}, false, map[bool]int{}
	required, requirementRefusals := 0, 0
	start := time.Now()
	for i := 0; i < n; i++ {
		h := gen(seed + uint64(i))
		// Every other history has completed sweeps judge what they released together, as
		// the app does; the rest only their jobs (a replica that restarted, another replica).
		h.Together = i%2 == 1
		w := newSimWorld(m, actors, h)
		if problems := w.run(); len(problems) > 0 {
			failed++
			if failed <= 3 {
				small := shrink(m, actors, h)
				path := keepRegression(t, small)
				t.Errorf("history %d (seed %d) diverges from the oracle; shrunk to %d moves, kept as %s:\n%s",
					i, h.Seed, len(small.Moves), path, strings.Join(newSimWorld(m, actors, small).run(), "\n"))
			}
		}
		together += w.together
		settledJobs += w.svc.Enforcer.settledJobs.ended
		requests += w.board.requests
		moves += len(h.Moves)
		for k, v := range w.made {
			made[k] += v
		}
		for k, v := range w.provisional {
			provisional[k] += v
		}
		families = families || len(h.Parents) > 0
		if len(h.Estimates) > 0 {
			required++
			for _, v := range w.or.Violations {
				if v.Rule == policy.RuleRequirement {
					requirementRefusals++
				}
			}
		}
		if (i+1)%1000 == 0 {
			t.Logf("%d histories, %d diverged (%s)", i+1, failed, time.Since(start).Round(time.Millisecond))
		}
	}
	if n > 1 && together == 0 {
		t.Error("no item was ever judged together when a sweep completed: the histories do not try that path")
	}
	if n > 1 && settledJobs == 0 {
		t.Error("no job ever ended on its walk together's decision: the histories do not try that path")
	}
	for _, kind := range []string{simHandoff, simAdvance, simClaim} {
		if n >= 1000 && families && made[kind] == 0 {
			t.Errorf("the app never made a %s of the histories' agents: the histories do not try that path", kind)
		}
	}
	t.Logf("%d items judged together when a sweep completed; %d jobs ended on that decision", together, settledJobs)
	if families {
		t.Logf("moves made for agents: %d handoffs, %d children advanced, %d claims", made[simHandoff], made[simAdvance], made[simClaim])
	}
	t.Logf("%d GitHub requests for %d moves (%.2f a move)", requests, moves, float64(requests)/float64(max(moves, 1)))
	t.Logf("provisional reverts: %d confirmed, %d withdrawn", provisional[true], provisional[false])
	t.Logf("%d histories under workflow.requirements: %d moves refused by one", required, requirementRefusals)
	if n >= 1000 && requirementRefusals == 0 {
		t.Error("no move was ever refused by a requirement: the histories do not try that path")
	}
	if n >= 1000 && (provisional[true] == 0 || provisional[false] == 0) {
		t.Error("no provisional revert was ever confirmed, or none withdrawn: the histories do not try both paths")
	}
	if failed > 0 {
		t.Errorf("%d of %d histories diverged from the oracle", failed, n)
	}
	t.Logf("%d histories from seed %d: %d diverged, %s", n, seed, failed, time.Since(start).Round(time.Millisecond))
}

// shrink removes moves (and faults) while the history still fails.
func shrink(m *policy.Machine, actors policy.Actors, h simHistory) simHistory {
	fails := func(c simHistory) bool { return len(newSimWorld(m, actors, c).run()) > 0 }
	for changed := true; changed; {
		changed = false
		for i := len(h.Moves) - 1; i >= 0; i-- {
			c := h
			c.Moves = append(append([]simMove{}, h.Moves[:i]...), h.Moves[i+1:]...)
			if len(c.Moves) > 0 && fails(c) {
				h, changed = c, true
			}
		}
		for i := range h.Moves {
			for _, simplify := range []func(*simMove){
				func(mv *simMove) { mv.Drop = false },
				func(mv *simMove) { mv.Dup = false },
				func(mv *simMove) { mv.NoFrom = false },
				func(mv *simMove) { mv.Latency = 10 * time.Millisecond },
			} {
				c := h
				c.Moves = append([]simMove{}, h.Moves...)
				before := c.Moves[i]
				simplify(&c.Moves[i])
				if c.Moves[i] != before && fails(c) {
					h, changed = c, true
				}
			}
		}
		if h.Crash > 0 {
			c := h
			c.Crash = 0
			if fails(c) {
				h, changed = c, true
			}
		}
	}
	return h
}

const (
	regressionDir   = "testdata/histories"
	openFamiliesDir = "testdata/families-open"
)

func keepRegression(t *testing.T, h simHistory) string {
	data, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	name, dir := fmt.Sprintf("seed-%d.json", h.Seed), regressionDir
	if len(h.Parents) > 0 {
		// Kept with the family histories that still diverge (TestOpenFamilyHistories), until
		// the design handles them; then moved to testdata/histories.
		name, dir = "family-"+name, openFamiliesDir
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestKeepHistories writes the histories of the seeds in RALPH_GATE_KEEP_SEEDS (comma-separated)
// to testdata/histories, shrunk when they fail: how a seed that once diverged is kept.
func TestKeepHistories(t *testing.T) {
	v := os.Getenv("RALPH_GATE_KEEP_SEEDS")
	if v == "" {
		t.Skip("RALPH_GATE_KEEP_SEEDS not set")
	}
	m, actors := simMachine(t)
	for _, f := range strings.Split(v, ",") {
		seed, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
		if err != nil {
			t.Fatalf("RALPH_GATE_KEEP_SEEDS: %q is not a seed", f)
		}
		h := genHistory(m, actors, seed, 0.15, 0.10)
		if len(newSimWorld(m, actors, h).run()) > 0 {
			h = shrink(m, actors, h)
		}
		t.Logf("kept %s (%d moves)", keepRegression(t, h), len(h.Moves))
	}
}

// TestHistoryRegressions replays every history a suite once shrunk.
func TestHistoryRegressions(t *testing.T) { replayHistories(t, regressionDir) }

// TestOpenFamilyHistories replays the shrunk family histories that still diverge from the
// oracle (testdata/families-open; docs/ENFORCEMENT.md says what each shows). They move to
// testdata/histories once they agree. RALPH_GATE_OPEN_HISTORIES=1 runs them.
func TestOpenFamilyHistories(t *testing.T) {
	if os.Getenv("RALPH_GATE_OPEN_HISTORIES") == "" {
		t.Skip("histories kept until the design handles them; RALPH_GATE_OPEN_HISTORIES=1 replays them")
	}
	replayHistories(t, openFamiliesDir)
}

// xtrace prints every replayed history's trace and audit (RALPH_GATE_HISTORY_TRACE=1), for
// reading one a suite kept.
var xtrace = os.Getenv("RALPH_GATE_HISTORY_TRACE") != ""

func replayHistories(t *testing.T, dir string) {
	m, actors := simMachine(t)
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var h simHistory
			if err := json.Unmarshal(data, &h); err != nil {
				t.Fatal(err)
			}
			if problems := newSimWorld(m, actors, h).run(); len(problems) > 0 {
				t.Errorf("diverges from the oracle:\n%s", strings.Join(problems, "\n"))
			}
		})
	}
}
