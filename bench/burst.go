package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/ghsim"
	"github.com/ralph-gate/ralph-gate/store"
)

// burstMove is one move of the burst: legal or not for its actor.
type burstMove struct {
	login, to string
	number    int
	illegal   bool
}

func burstMoves(numbers []int) []burstMove {
	out := make([]burstMove, 0, len(numbers))
	for i, n := range numbers {
		agent := agents[i/4%len(agents)]
		switch i % 4 {
		case 0: // a person triages
			out = append(out, burstMove{login: humans[i/4%len(humans)], number: n, to: "Ready for Plan"})
		case 1: // an agent triages
			out = append(out, burstMove{login: agent, number: n, to: "Research Needed"})
		case 2: // an agent skips the pipeline
			out = append(out, burstMove{login: agent, number: n, to: "In Progress", illegal: true})
		default: // an agent approves work nobody planned
			out = append(out, burstMove{login: agent, number: n, to: "Plan in Review", illegal: true})
		}
	}
	return out
}

// burst has seeded users make many real moves at once through the simulator (half of them
// illegal), then waits until every resulting webhook is delivered and every change decided.
func (h *harness) burst(ctx context.Context, r *Result) error {
	moves := burstMoves(h.l.burst)
	h.o.progress("burst: %d moves (half illegal) by %d users, %d at a time", len(moves), len(humans)+len(agents), h.o.BurstConcurrency)
	deliveriesBefore := len(h.sb.Sim.Deliveries())
	seqBefore := lastSeq(h.sb.Sim)
	runtime.GC()
	debug.FreeOSMemory()
	if resetPeakRSS() {
		r.PeakRSSScope = "VmHWM of the one process running the simulator, the app and the load generator, reset at rest just before the burst and read after it drained"
	} else {
		r.PeakRSSScope = "VmHWM of the one process running the simulator, the app and the load generator, since the process started (clear_refs unavailable)"
	}

	t0 := time.Now()
	work := make(chan burstMove)
	errs := make(chan error, h.o.BurstConcurrency)
	var wg sync.WaitGroup
	for range h.o.BurstConcurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m := range work {
				if err := h.move(ctx, m.login, m.number, m.to); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	for _, m := range moves {
		work <- m
	}
	close(work)
	wg.Wait()
	injected := time.Now()
	select {
	case err := <-errs:
		return err
	default:
	}
	h.o.progress("burst: all %d moves made in %.1fs; draining", len(moves), injected.Sub(t0).Seconds())
	if err := h.settle(ctx); err != nil {
		return err
	}
	r.PeakRSSMB = num(peakRSSMB())

	// Delivered: the simulator's deliveries of the users' moves answered 2xx (the app's own
	// writes come back as webhooks too; they are not events to decide).
	bot := h.sb.App.AppLogin()
	delivered := map[string]bool{}
	userDeliveries := 0
	for _, d := range h.sb.Sim.Deliveries()[deliveriesBefore:] {
		if d.Event != "projects_v2_item" {
			continue
		}
		var p struct {
			Sender struct {
				Login string `json:"login"`
			} `json:"sender"`
		}
		if err := json.Unmarshal(d.Payload(), &p); err != nil || p.Sender.Login == bot {
			continue
		}
		userDeliveries++
		if d.Success() {
			delivered[d.GUID] = true
		}
	}
	if userDeliveries != len(moves) {
		return fmt.Errorf("the simulator sent %d webhooks for %d moves", userDeliveries, len(moves))
	}
	entries, err := h.sb.App.Store().QueryAudit(ctx, store.AuditFilter{Since: t0})
	if err != nil {
		return err
	}
	decided := map[string]bool{}
	last := t0
	reverted := 0
	var decidedAt []float64
	for _, e := range entries {
		if !delivered[e.DeliveryID] || decided[e.DeliveryID] {
			continue
		}
		decided[e.DeliveryID] = true
		decidedAt = append(decidedAt, e.At.Sub(t0).Seconds())
		if e.Verdict == enforce.VerdictReverted {
			reverted++
		}
		if e.At.After(last) {
			last = e.At
		}
	}
	calls := appRequests(h.sb.Sim, seqBefore)
	r.BurstRequestsByKind = map[string]int{}
	boardRight, explained := t0, t0
	for _, c := range calls {
		t := end(c)
		if t.After(last) {
			last = t
		}
		kind := requestKind(c)
		r.BurstRequestsByKind[kind]++
		switch kind {
		case "state write":
			boardRight = later(boardRight, t)
		case "comment":
			explained = later(explained, t)
		}
	}
	if len(decidedAt) > 0 {
		slices.Sort(decidedAt)
		r.BurstDecidedP50S = num(round(decidedAt[len(decidedAt)/2], 2))
		r.BurstDecidedLastS = num(round(decidedAt[len(decidedAt)-1], 2))
	}
	r.BurstRevertedAllS = num(round(boardRight.Sub(t0).Seconds(), 2))
	r.BurstExplainedS = num(round(explained.Sub(t0).Seconds(), 2))
	illegal := 0
	for _, m := range moves {
		if m.illegal {
			illegal++
		}
	}
	r.BurstEvents, r.BurstIllegal = len(moves), illegal
	r.BurstDelivered, r.BurstDecided = len(delivered), len(decided)
	r.BurstLost = len(moves) - len(decided)
	r.BurstReverted = reverted
	r.BurstCalls = len(calls)
	if legal := len(moves) - illegal; legal > 0 {
		r.BurstRequestsPerLegal = num(round(float64(len(calls))/float64(legal), 2))
	}
	r.BurstMadeS = num(round(injected.Sub(t0).Seconds(), 2))
	r.BurstDrainS = num(round(max(last.Sub(injected), 0).Seconds(), 2))
	r.BurstEventsPS = num(round(float64(len(moves))/last.Sub(t0).Seconds(), 1))
	// Done: every event decided and every revert written (the board right again).
	done := boardRight
	for _, e := range entries {
		if decided[e.DeliveryID] && e.At.After(done) {
			done = e.At
		}
	}
	r.BurstDoneS = num(round(done.Sub(t0).Seconds(), 2))
	if r.SweepRTTMS != nil {
		// Net of the proof every change waits for (the allowance revert_p50 has too).
		proof := time.Duration((r.ReorderWindowMS + 1000 + 2**r.SweepRTTMS) * float64(time.Millisecond))
		if net := done.Sub(t0) - proof; net > 0 {
			r.BurstDecidedPS = num(round(float64(len(moves))/net.Seconds(), 1))
		}
	}
	return nil
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// requestKind names what one request of the app was for, for the burst's breakdown.
func requestKind(e ghsim.RequestEntry) string {
	switch {
	case hasOp(e, opSetState, "graphql:clearProjectV2ItemFieldValue"):
		return "state write"
	case hasOp(e, opAddComment, opUpdateComment):
		return "comment"
	case isGraphQLRead(e):
		ops := slices.DeleteFunc(slices.Clone(e.Operations), func(op string) bool { return op == "graphql:request" })
		slices.Sort(ops)
		return "read " + strings.Join(slices.Compact(ops), ",")
	}
	return e.Method + " " + e.Operation
}
