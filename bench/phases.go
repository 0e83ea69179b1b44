package bench

import (
	"context"
	"fmt"
	"math"
	"time"
)

// cost counts the app's GitHub requests (installation token, from the simulator's request
// log) for one event of each kind, each made alone and processed to the end.
func (h *harness) cost(ctx context.Context, r *Result) error {
	h.o.progress("API calls per event: %d legal, %d illegal, a cascade of %d children, a convergence", h.o.CostRepeats, h.o.CostRepeats, h.l.cascadeN)
	count := func(act func() error) (int, error) {
		before := lastSeq(h.sb.Sim)
		if err := act(); err != nil {
			return 0, err
		}
		if err := h.settle(ctx); err != nil {
			return 0, err
		}
		return len(appRequests(h.sb.Sim, before)), nil
	}
	avg := func(numbers []int, login, to string) (float64, error) {
		total := 0
		for _, n := range numbers {
			c, err := count(func() error { return h.move(ctx, login, n, to) })
			if err != nil {
				return 0, err
			}
			total += c
		}
		return round(float64(total)/float64(len(numbers)), 2), nil
	}
	legal, err := avg(h.l.legal, humans[0], "Ready for Plan")
	if err != nil {
		return err
	}
	illegal, err := avg(h.l.illegal, agents[0], "In Progress")
	if err != nil {
		return err
	}
	cascade, err := count(func() error { return h.move(ctx, humans[0], h.l.cascade, "In Progress") })
	if err != nil {
		return err
	}
	for _, n := range h.l.convergeKid[:len(h.l.convergeKid)-1] {
		if err := h.move(ctx, agents[1], n, "Ready for Plan"); err != nil {
			return err
		}
	}
	if err := h.settle(ctx); err != nil {
		return err
	}
	converge, err := count(func() error {
		return h.move(ctx, agents[1], h.l.convergeKid[len(h.l.convergeKid)-1], "Ready for Plan")
	})
	if err != nil {
		return err
	}
	world := h.sb.Sim.State()
	if is, _ := world.Issue(repo, h.l.converge); is.Fields[field] != "Ready for Plan" {
		return fmt.Errorf("the convergence did not happen: #%d is in %q", h.l.converge, is.Fields[field])
	}
	if is, _ := world.Issue(repo, h.l.cascade+1); is.Fields[field] != "In Progress" {
		return fmt.Errorf("the cascade did not happen: #%d is in %q", h.l.cascade+1, is.Fields[field])
	}
	r.CallsPerLegalEvent, r.CallsPerIllegalEvent = num(legal), num(illegal)
	r.CascadeChildren, r.CallsPerCascade, r.CallsPerConvergence = h.l.cascadeN, intp(cascade), intp(converge)
	return nil
}

// latency times illegal moves one at a time: from the webhook's receipt by the app to the end
// of the revert mutation (the board shows the legal value again) and to the end of the comment.
func (h *harness) latency(ctx context.Context, r *Result) error {
	h.o.progress("revert and comment latency: %d illegal moves, one at a time", len(h.l.latency))
	var reverts, comments, pickups []time.Duration
	for i, n := range h.l.latency {
		_, mark := h.receipts.since(math.MaxInt)
		before := lastSeq(h.sb.Sim)
		if err := h.move(ctx, agents[i%len(agents)], n, "In Progress"); err != nil {
			return err
		}
		if err := h.settle(ctx); err != nil {
			return err
		}
		recs, _ := h.receipts.since(mark)
		var got time.Time
		for _, rc := range recs {
			if rc.event == "projects_v2_item" {
				got = rc.at
				break
			}
		}
		if got.IsZero() {
			return fmt.Errorf("no webhook reached the app for the move of #%d", n)
		}
		var revert, comment, firstCall time.Time
		for _, e := range appRequests(h.sb.Sim, before) {
			if firstCall.IsZero() {
				firstCall = e.Time
			}
			if revert.IsZero() && hasOp(e, opSetState) {
				revert = end(e)
			}
			if comment.IsZero() && hasOp(e, opAddComment, opUpdateComment) {
				comment = end(e)
			}
		}
		if revert.IsZero() || comment.IsZero() {
			return fmt.Errorf("the illegal move of #%d was not reverted and explained", n)
		}
		reverts = append(reverts, revert.Sub(got))
		comments = append(comments, comment.Sub(got))
		pickups = append(pickups, firstCall.Sub(got))
	}
	rtt := ms(h.o.RTT)
	r.RevertSamples = len(reverts)
	r.RevertP50MS, r.RevertP99MS = num(percentile(reverts, 50)), num(percentile(reverts, 99))
	r.RevertP50RTTMultiple = num(ratio(percentile(reverts, 50), rtt))
	r.RevertP99RTTMultiple = num(ratio(percentile(reverts, 99), rtt))
	r.CommentP50MS, r.CommentP99MS = num(percentile(comments, 50)), num(percentile(comments, 99))
	r.CommentP50RTTMultiple = num(ratio(percentile(comments, 50), rtt))
	r.CommentP99RTTMultiple = num(ratio(percentile(comments, 99), rtt))
	r.PickupP50MS = num(percentile(pickups, 50))
	return nil
}
