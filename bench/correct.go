package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/ralph-gate/ralph-gate/ghsim"
)

// correct measures correctness under lost webhooks: with 15 % of deliveries dropped (GitHub
// lists them as failed; the gap sweeps redeliver them), agents make illegal moves ten a second,
// and each is timed from the move to the board showing the legal value again; then how long the
// whole board took to be correct after the last move. The sweep's round trip is timed alone.
func (h *harness) correct(ctx context.Context, r *Result) error {
	h.o.progress("time to correct: %d illegal moves with 15%% of webhooks dropped", len(h.l.correct))
	rtt := int(h.o.RTT / time.Millisecond)
	var sweeps []time.Duration
	for range 5 {
		began := time.Now()
		if _, err := h.sb.App.SweepNow(ctx); err != nil {
			return fmt.Errorf("time a sweep: %w", err)
		}
		sweeps = append(sweeps, time.Since(began))
	}
	if err := h.sb.Sim.SetFaults(ghsim.Faults{LatencyMS: rtt, Webhook: ghsim.WebhookFaults{DropRate: 0.15}}); err != nil {
		return err
	}
	moved := map[int]time.Time{}
	for i, n := range h.l.correct {
		moved[n] = time.Now()
		if err := h.move(ctx, agents[i%len(agents)], n, "In Progress"); err != nil {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
	last := time.Now()
	if err := h.sb.Sim.SetFaults(ghsim.Faults{LatencyMS: rtt}); err != nil {
		return err
	}
	correct := map[int]time.Duration{}
	deadline := time.Now().Add(5 * time.Minute)
	for len(correct) < len(h.l.correct) {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d illegal moves not reverted within 5 minutes", len(h.l.correct)-len(correct), len(h.l.correct))
		}
		world := h.sb.Sim.State()
		for _, n := range h.l.correct {
			if _, done := correct[n]; done {
				continue
			}
			if is, _ := world.Issue(repo, n); is.Fields[field] == "Backlog" {
				correct[n] = time.Since(moved[n])
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	all := time.Since(last)
	var times []time.Duration
	for _, d := range correct {
		times = append(times, d)
	}
	slices.Sort(times)
	dropped := 0
	for _, d := range h.sb.Sim.Deliveries() {
		if d.Dropped {
			dropped++
		}
	}
	r.CorrectSamples, r.CorrectDropped = len(times), dropped
	r.SweepRTTMS = num(percentile(sweeps, 50))
	r.CorrectP50MS, r.CorrectP99MS = num(percentile(times, 50)), num(percentile(times, 99))
	r.AllCorrectS = num(round(all.Seconds(), 2))
	r.ReorderWindowMS = ms(h.sb.Config.Enforcement.ReorderWindow)
	return nil
}
