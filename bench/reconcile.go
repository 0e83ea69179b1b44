package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/ghboard"
	"github.com/ralph-gate/ralph-gate/ghsim"
	"github.com/ralph-gate/ralph-gate/sandbox"
)

// reconcileDrifts is how many silent illegal moves the drift pass finds and reverts.
const reconcileDrifts = 10

// runReconcile reconciles a board of each size twice with the app's own reconciler
// (App.ReconcileNow, what the periodic job runs): on first install, when every item is adopted,
// and after a few illegal moves whose webhooks were lost, which it reverts and explains.
func runReconcile(ctx context.Context, o Options, r *Result) error {
	r.ReconcileStatus = "ok"
	for _, n := range o.ReconcileSizes {
		run, err := reconcileOnce(ctx, o, n)
		if err != nil {
			return fmt.Errorf("reconcile %d items: %w", n, err)
		}
		r.ReconcileRuns = append(r.ReconcileRuns, run)
	}
	if k := len(r.ReconcileRuns); k > 0 {
		largest := r.ReconcileRuns[k-1]
		r.ReconcileItems = intp(largest.Items)
		r.ReconcileGraphQLReads = intp(largest.FirstPassReads)
		r.ReconcileAPICalls = intp(largest.FirstPassCalls)
		r.ReconcileSeconds = num(largest.FirstPassSeconds)
	}
	return nil
}

func reconcileOnce(ctx context.Context, o Options, n int) (ReconcileRun, error) {
	run := ReconcileRun{Items: n, Drifts: min(reconcileDrifts, n/6), ReadBudget: (n+99)/100 + 1}
	o.progress("reconciliation: seeding a board of %d items", n)
	sb, err := startSandbox(ctx, o, reconcileSeed(n), nil)
	if err != nil {
		return run, err
	}
	defer sb.Close()
	if err := sb.Sim.SetFaults(ghsim.Faults{LatencyMS: int(o.RTT / time.Millisecond)}); err != nil {
		return run, err
	}
	pass := func(name string) (enforce.ReconcileReport, int, int, float64, error) {
		o.progress("reconciliation of %d items: %s pass", n, name)
		before := lastSeq(sb.Sim)
		start := time.Now()
		reps, err := sb.App.ReconcileNow(ctx)
		took := time.Since(start).Seconds()
		if err != nil {
			return enforce.ReconcileReport{}, 0, 0, 0, err
		}
		if len(reps) != 1 {
			return enforce.ReconcileReport{}, 0, 0, 0, fmt.Errorf("%d reports for one project", len(reps))
		}
		rep := reps[0]
		if !rep.Complete {
			return rep, 0, 0, 0, fmt.Errorf("the %s pass stopped early: %s", name, rep.Paused)
		}
		reads := 0
		calls := appRequests(sb.Sim, before)
		for _, c := range calls {
			if isGraphQLRead(c) {
				reads++
			}
		}
		return rep, reads, len(calls), round(took, 2), nil
	}

	rep, reads, calls, secs, err := pass("first-install")
	if err != nil {
		return run, err
	}
	run.Adopted, run.FirstPassReads, run.FirstPassCalls, run.FirstPassSeconds = rep.Adopted, reads, calls, secs

	// Illegal moves nobody hears about: the simulator never delivers their webhooks (nor lists
	// them as failed: there is nothing to redeliver).
	if err := sb.Sim.SetFaults(ghsim.Faults{LatencyMS: int(o.RTT / time.Millisecond), Webhook: ghsim.WebhookFaults{DropRate: 1, Unrecorded: true}}); err != nil {
		return run, err
	}
	items, _, err := allItems(ctx, userBoard(sb, agents[0]))
	if err != nil {
		return run, err
	}
	drifted := 0
	for _, it := range items {
		if drifted == run.Drifts {
			break
		}
		if it.State == "Backlog" {
			if err := userBoard(sb, agents[0]).SetState(ctx, it, "In Progress"); err != nil {
				return run, err
			}
			drifted++
		}
	}
	if err := sb.Sim.WaitIdle(ctx); err != nil {
		return run, err
	}
	if err := sb.Sim.SetFaults(ghsim.Faults{LatencyMS: int(o.RTT / time.Millisecond)}); err != nil {
		return run, err
	}
	// As the periodic job does: past the delivery window, a sweep proves no report of these
	// changes will come, then the pass judges them.
	time.Sleep(sb.Config.Enforcement.ReorderWindow + 1500*time.Millisecond)
	if _, err := sb.App.SweepNow(ctx); err != nil {
		return run, err
	}
	rep, reads, calls, secs, err = pass("drift")
	if err != nil {
		return run, err
	}
	run.Reverted, run.GraphQLReads, run.APICalls, run.Seconds = rep.Reverted, reads, calls, secs
	return run, settle(ctx, sb, 5*time.Minute)
}

func userBoard(sb *sandbox.Sandbox, login string) *ghboard.Board {
	return ghboard.New(ghboard.NewClient(sandbox.UserClient(token(login), userTransport), sb.SimURL+"/api/graphql", ghboard.Unpaced()), sb.Config.Workflow.Field, ghboard.NewFieldCache())
}
