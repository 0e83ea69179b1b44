package bench

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/ghboard"
	"github.com/ralph-gate/ralph-gate/ghsim"
)

// stormActor pastes one value into a whole column: every storm move is theirs.
const (
	stormActor = "agent-1"
	stormTo    = "In Progress"
	stormFrom  = "Backlog"
)

// stormProgressEvery is how often a storm still under way says how far it got.
const stormProgressEvery = 10 * time.Second

// issueRef finds the issues a comment names: "#12", "app#12", ".../issues/12".
var issueRef = regexp.MustCompile(`(?:#|/issues/)(\d+)\b`)

// stormSeed builds a board of n Backlog items plus the two warm-up items.
func stormSeed(n int) ([]byte, layout) {
	s := newSeedBuilder()
	var l layout
	l.warmup = []int{s.issue("Research Needed", 0), s.issue("Backlog", 0)}
	l.burst = s.issues(n, stormFrom)
	return append(s.bytes(), calmSeed()...), l
}

// storm has one actor move N Backlog items to In Progress at once, as a person pasting a value
// into a whole column does (one aliased mutation per 50 items, GitHub's web interface being
// one action), against a simulator of its own whose secondary limits start unspent. It then
// waits, at most StormTimeout, until every item is back in Backlog and every revert is
// explained where the actor sees it: a comment by the app on the issue, or one that names it.
func runStorm(ctx context.Context, o Options, r *Result) error {
	n := o.Storm
	seed, l := stormSeed(n)
	o.progress("storm: starting a simulator and ralph-gate with %d items in %s", n, stormFrom)
	sb, err := startSandbox(ctx, o, seed, nil, config.Project{Owner: calmOrg, Number: 1})
	if err != nil {
		return err
	}
	defer sb.Close()
	h := &harness{o: o, sb: sb, l: l, receipts: &receipts{}, fields: ghboard.NewFieldCache(),
		boards: map[string]*ghboard.Board{}, items: map[int]enforce.Item{}}
	if err := h.loadItems(ctx); err != nil {
		return err
	}
	if err := sb.Sim.SetFaults(ghsim.Faults{LatencyMS: int(o.RTT / time.Millisecond)}); err != nil {
		return err
	}
	if err := h.warmup(ctx); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	calm, err := h.calmItems(ctx)
	if err != nil {
		return err
	}
	var calmIdle, calmStorm []enforce.Item
	for n := 1; n <= calmSamples; n++ {
		calmIdle, calmStorm = append(calmIdle, calm[n]), append(calmStorm, calm[calmSamples+n])
	}
	o.progress("storm: %s, a second organization, makes %d refused moves one at a time, idle", calmOrg, calmSamples)
	idle, err := h.calmReverts(ctx, calmIdle)
	if err != nil {
		return fmt.Errorf("%s idle: %w", calmOrg, err)
	}
	sb.Sim.ClearSecondaryWindows()
	bot := sb.App.AppLogin()
	before := map[int64]bool{}
	for _, is := range sb.Sim.State().Issues {
		for _, c := range is.Comments {
			before[c.ID] = true
		}
	}
	stats0 := sb.Sim.SecondaryStats()
	seq := lastSeq(sb.Sim)

	writes := make([]enforce.StateWrite, 0, n)
	for _, num := range l.burst {
		writes = append(writes, enforce.StateWrite{Item: h.items[num], State: stormTo})
	}
	o.progress("storm: %s moves %d items from %s to %s at once; waiting at most %s", stormActor, n, stormFrom, stormTo, o.StormTimeout)
	t0 := time.Now()
	if err := h.board(stormActor).SetStates(ctx, writes); err != nil {
		return fmt.Errorf("the storm's moves: %w", err)
	}
	r.StormEvents = n
	r.StormMoveS = num(round(time.Since(t0).Seconds(), 2))
	// The second organization's moves while the storm is reverted, beside the storm's watch.
	type calmResult struct {
		d   []time.Duration
		err error
	}
	calmDone := make(chan calmResult, 1)
	go func() {
		d, err := h.calmReverts(ctx, calmStorm)
		calmDone <- calmResult{d, err}
	}()

	inStorm := map[int]bool{}
	for _, num := range l.burst {
		inStorm[num] = true
	}
	reverted, explained := map[int]time.Duration{}, map[int]time.Duration{}
	deadline := t0.Add(o.StormTimeout)
	nextProgress := t0.Add(stormProgressEvery)
	for len(reverted) < n || len(explained) < n {
		if err := ctx.Err(); err != nil {
			return err
		}
		now := time.Now()
		if now.After(deadline) {
			r.StormTimedOut = true
			break
		}
		world := sb.Sim.State()
		for _, is := range world.Issues {
			if is.Repo != repo && is.Repo != org+"/"+repo {
				continue
			}
			if inStorm[is.Number] {
				if _, ok := reverted[is.Number]; !ok && is.Fields[field] == stormFrom {
					reverted[is.Number] = now.Sub(t0)
				}
			}
			for _, c := range is.Comments {
				if c.Author != bot || before[c.ID] {
					continue
				}
				// A violation comment on the issue, or a summary naming it.
				named := []int{is.Number}
				for _, m := range issueRef.FindAllStringSubmatch(c.Body, -1) {
					if v, err := strconv.Atoi(m[1]); err == nil {
						named = append(named, v)
					}
				}
				for _, v := range named {
					if _, ok := explained[v]; !ok && inStorm[v] {
						explained[v] = now.Sub(t0)
					}
				}
			}
		}
		if now.After(nextProgress) {
			nextProgress = now.Add(stormProgressEvery)
			o.progress("storm: after %.0fs: %d of %d reverted, %d of %d explained, %d secondary-limit answers",
				now.Sub(t0).Seconds(), len(reverted), n, len(explained), n, sb.Sim.SecondaryStats().Answers-stats0.Answers)
		}
		time.Sleep(200 * time.Millisecond)
	}
	r.StormReverted, r.StormExplained = len(reverted), len(explained)
	if len(reverted) == n {
		r.StormRevertAllS = num(round(maxDuration(reverted).Seconds(), 2))
	}
	if len(explained) == n {
		r.StormExplainAllS = num(round(maxDuration(explained).Seconds(), 2))
	}
	during := <-calmDone
	if during.err != nil {
		return fmt.Errorf("%s during the storm: %w", calmOrg, during.err)
	}
	calmFigures(r, idle, during.d)
	o.progress("storm: %s's refused moves reverted in %.0f ms (p50) idle, %.0f ms during the storm", calmOrg, *r.OrgsIdleRevertP50MS, *r.OrgsStormRevertP50MS)
	for _, e := range appRequests(sb.Sim, seq) {
		if e.Identity != fmt.Sprintf("installation:%d", calmInstallation) {
			r.StormRequests++ // (the storm's organization's)
		}
	}
	r.StormSecondaryAnswers = sb.Sim.SecondaryStats().Answers - stats0.Answers
	r.StormSeconds = round(time.Since(t0).Seconds(), 2)
	if r.StormTimedOut {
		o.progress("storm: stopped after %s: %d of %d reverted, %d of %d explained", o.StormTimeout, len(reverted), n, len(explained), n)
	} else {
		o.progress("storm: every item reverted and explained after %.1fs", r.StormSeconds)
	}
	return nil
}

func maxDuration(m map[int]time.Duration) time.Duration {
	var out time.Duration
	for _, d := range m {
		out = max(out, d)
	}
	return out
}
