package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// TargetVerdict is one of issue 9's targets with what this run measured. Met is null when the
// figure was not measured.
type TargetVerdict struct {
	Name   string `json:"name"`
	Target string `json:"target"`
	Value  string `json:"value"`
	Met    *bool  `json:"met"`
}

func verdict(name, target string, value string, met *bool) TargetVerdict {
	return TargetVerdict{Name: name, Target: target, Value: value, Met: met}
}

func boolp(v bool) *bool { return &v }

func cmpf(v *float64, limit float64) *bool {
	if v == nil {
		return nil
	}
	return boolp(*v <= limit)
}

func fmtf(v *float64, unit string) string {
	if v == nil {
		return "n/a"
	}
	return strings.TrimSpace(fmt.Sprintf("%g %s", *v, unit))
}

func fmti(v *int) string {
	if v == nil {
		return "n/a"
	}
	return fmt.Sprint(*v)
}

// The storm's and the burst's targets (docs/BENCHMARKS.md).
const (
	stormRevertTargetS  = 120.0
	maxRequestsPerLegal = 0.2
	minBurstDecidedPS   = 200.0
	// orgsStormFactor bounds another organization's revert during a storm: its usual latency,
	// give or take what the one process the benchmark runs in shares (CPU, the store).
	orgsStormFactor = 2.0
)

// cmpBoth says whether v is within lim (nil when either is unknown).
func cmpBoth(v, lim *float64) *bool {
	if v == nil || lim == nil {
		return nil
	}
	return boolp(*v <= *lim)
}

// cmpMin says whether v reaches min (nil when v is unknown).
func cmpMin(v *float64, min float64) *bool {
	if v == nil {
		return nil
	}
	return boolp(*v >= min)
}

// stormReverted says when the storm was reverted, or how far it got.
func (r *Result) stormReverted() string {
	if r.StormRevertAllS != nil {
		return fmtf(r.StormRevertAllS, "s")
	}
	return fmt.Sprintf("%d of %d reverted within %g s", r.StormReverted, r.StormEvents, r.StormTimeoutS)
}

// stormExplained says when every revert of the storm was explained, or how far it got.
func (r *Result) stormExplained() string {
	if r.StormExplainAllS != nil {
		return fmtf(r.StormExplainAllS, "s")
	}
	return fmt.Sprintf("%d of %d explained within %g s", r.StormExplained, r.StormEvents, r.StormTimeoutS)
}

func targets(r *Result) []TargetVerdict {
	var out []TargetVerdict
	out = append(out, verdict("ack_p99", fmt.Sprintf("≤ 10 ms at %d webhooks/s (SQLite)", r.AckRate), fmtf(r.AckP99MS, "ms"), cmpf(r.AckP99MS, 10)))
	// A change is judged once a sweep proves nothing before it is missing (ENFORCEMENT.md): the
	// window, GitHub's one-second dating and a sweep come before the revert's own round trips.
	var proofMS *float64
	if r.SweepRTTMS != nil {
		proofMS = num(r.ReorderWindowMS + 1000 + 2**r.SweepRTTMS)
	}
	limit := func(rtts float64) (string, *float64) {
		if proofMS == nil {
			return "n/a", nil
		}
		return fmt.Sprintf("≤ window + 1 s + 2 × sweep + %g × RTT = %g ms after receipt", rtts, round(*proofMS+rtts*r.RTTMS, 0)), num(*proofMS + rtts*r.RTTMS)
	}
	cmpTo := func(v, lim *float64) *bool {
		if v == nil || lim == nil {
			return nil
		}
		return boolp(*v <= *lim)
	}
	t, lim := limit(2.5)
	out = append(out, verdict("revert_p50", t, fmtf(r.RevertP50MS, "ms"), cmpTo(r.RevertP50MS, lim)))
	t, lim = limit(4)
	out = append(out, verdict("comment_p50", t, fmtf(r.CommentP50MS, "ms"), cmpTo(r.CommentP50MS, lim)))
	var correctLim *float64
	if r.SweepRTTMS != nil {
		correctLim = num(2**r.SweepRTTMS + 5000)
	}
	out = append(out, verdict("correct_p99", fmt.Sprintf("≤ 2 × sweep RTT + 5 s = %s, 15%% of webhooks dropped", fmtf(correctLim, "ms")), fmtf(r.CorrectP99MS, "ms"), cmpTo(r.CorrectP99MS, correctLim)))
	var allMS *float64
	if r.AllCorrectS != nil {
		allMS = num(*r.AllCorrectS * 1000)
	}
	out = append(out, verdict("all_correct", fmt.Sprintf("≤ 2 × sweep RTT + 5 s = %s after the last move", fmtf(correctLim, "ms")), fmtf(r.AllCorrectS, "s"), cmpTo(allMS, correctLim)))
	out = append(out, verdict("calls_per_illegal_event", "≤ 3", fmtf(r.CallsPerIllegalEvent, ""), cmpf(r.CallsPerIllegalEvent, 3)))
	out = append(out, verdict("calls_per_legal_event", "≤ 1 (leaf)", fmtf(r.CallsPerLegalEvent, ""), cmpf(r.CallsPerLegalEvent, 1)))
	budget := 2 + (r.CascadeChildren+49)/50
	var cascade *bool
	if r.CallsPerCascade != nil {
		cascade = boolp(*r.CallsPerCascade <= budget)
	}
	out = append(out, verdict("calls_per_cascade", fmt.Sprintf("≤ 2 + ⌈%d/50⌉ = %d", r.CascadeChildren, budget), fmti(r.CallsPerCascade), cascade))
	out = append(out, verdict("burst_lost", fmt.Sprintf("0 of %d", r.BurstEvents), fmt.Sprint(r.BurstLost), boolp(r.BurstLost == 0 && r.BurstEvents > 0)))
	out = append(out, verdict("peak_rss", "≤ 150 MB", fmtf(r.PeakRSSMB, "MB"), cmpf(r.PeakRSSMB, 150)))
	out = append(out, verdict("burst_decided_per_s", fmt.Sprintf("≥ %g events/s beyond the proof (window + 1 s + 2 × sweep)", minBurstDecidedPS),
		fmtf(r.BurstDecidedPS, ""), cmpMin(r.BurstDecidedPS, minBurstDecidedPS)))
	out = append(out, verdict("burst_requests_per_legal_event", fmt.Sprintf("≤ %g", maxRequestsPerLegal), fmtf(r.BurstRequestsPerLegal, ""), cmpf(r.BurstRequestsPerLegal, maxRequestsPerLegal)))
	if r.SecondaryLimits {
		out = append(out, verdict("secondary_limit_answers", "0 (main phases)", fmt.Sprint(r.SecondaryLimitAnswers), boolp(r.SecondaryLimitAnswers == 0)))
	}
	if r.StormEvents > 0 {
		var met *bool
		if r.StormRevertAllS != nil {
			met = boolp(*r.StormRevertAllS <= stormRevertTargetS)
		} else if r.StormTimedOut {
			met = boolp(false) // not every item came back within the time limit
		}
		out = append(out, verdict("storm_revert_all", fmt.Sprintf("all %d reverted ≤ %g s after the first move", r.StormEvents, stormRevertTargetS), r.stormReverted(), met))
		if r.SecondaryLimits {
			out = append(out, verdict("storm_secondary_limit_answers", "0", fmt.Sprint(r.StormSecondaryAnswers), boolp(r.StormSecondaryAnswers == 0)))
		}
		var lim *float64
		if r.OrgsIdleRevertP50MS != nil {
			lim = num(orgsStormFactor * *r.OrgsIdleRevertP50MS)
		}
		out = append(out, verdict("orgs_storm_revert_p50", fmt.Sprintf("another organization's revert during the storm ≤ %g × its idle p50 (%s)", orgsStormFactor, fmtf(r.OrgsIdleRevertP50MS, "ms")),
			fmtf(r.OrgsStormRevertP50MS, "ms"), cmpBoth(r.OrgsStormRevertP50MS, lim)))
	}
	if len(r.ReconcileRuns) == 0 {
		out = append(out, verdict("reconcile_reads", "≤ ⌈items/100⌉ + 1 GraphQL reads", "blocked", nil))
	}
	for _, run := range r.ReconcileRuns {
		out = append(out, verdict(fmt.Sprintf("reconcile_reads_%d", run.Items), fmt.Sprintf("≤ ⌈%d/100⌉ + 1 = %d GraphQL reads", run.Items, run.ReadBudget),
			fmt.Sprint(run.FirstPassReads), boolp(run.FirstPassReads <= run.ReadBudget)))
	}
	return out
}

// WriteTable prints the run as a table a person reads (the JSON has the same figures).
func (r *Result) WriteTable(w io.Writer) {
	m := r.Machine
	commit := m.Commit
	if len(commit) > 12 {
		commit = commit[:12]
	}
	if commit == "" {
		commit = "unknown"
	}
	if m.Modified {
		commit += " (modified)"
	}
	mode := "full"
	if r.Quick {
		mode = "quick"
	}
	fmt.Fprintf(w, "ralph-gate bench (%s) — %s\n", mode, r.StartedAt.Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(w, "machine: %d CPUs (%s), %d MB memory, %s %s/%s, commit %s; load average %.2f at start, %.2f at end\n",
		m.CPUs, orNA(m.CPUModel), m.MemTotalMB, m.GoVersion, m.GOOS, m.GOARCH, commit, m.LoadAvgStart, m.LoadAvgEnd)
	fmt.Fprintf(w, "injected API round-trip time (RTT): %g ms; store: %s; workers: %d; simulator, app and load in one process\n\n", r.RTTMS, r.Store, r.Workers)

	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	row := func(cols ...string) { fmt.Fprintln(tw, strings.Join(cols, "\t")) }
	pair := func(a, b *float64, unit string) string {
		return fmt.Sprintf("%s / %s", strip(fmtf(a, "")), fmtf(b, unit))
	}
	row("figure", "value", "target")
	row("webhook ack p50 / p99", pair(r.AckP50MS, r.AckP99MS, "ms")+fmt.Sprintf(", max %s (%d at %d/s, %d not 200)", fmtf(r.AckMaxMS, "ms"), r.AckWebhooks, r.AckRate, r.AckFailed), "p99 ≤ 10 ms")
	row("receipt → revert p50 / p99", pair(r.RevertP50MS, r.RevertP99MS, "ms")+" = "+pair(r.RevertP50RTTMultiple, r.RevertP99RTTMultiple, "× RTT"), "p50 ≤ window + 1 s + 2 × sweep + 2.5 × RTT")
	row("receipt → comment p50 / p99", pair(r.CommentP50MS, r.CommentP99MS, "ms")+" = "+pair(r.CommentP50RTTMultiple, r.CommentP99RTTMultiple, "× RTT"), "p50 ≤ window + 1 s + 2 × sweep + 4 × RTT")
	row("delivery window / sweep round trip", fmt.Sprintf("%g ms / %s", r.ReorderWindowMS, fmtf(r.SweepRTTMS, "ms")), "")
	row("15% dropped: move → corrected p50 / p99", pair(r.CorrectP50MS, r.CorrectP99MS, "ms")+fmt.Sprintf(" (%d illegal moves, %d deliveries dropped)", r.CorrectSamples, r.CorrectDropped), "p99 ≤ 2 × sweep + 5 s")
	row("15% dropped: board correct after the last move", fmtf(r.AllCorrectS, "s"), "≤ 2 × sweep + 5 s")
	row("receipt → first API call p50", fmtf(r.PickupP50MS, "ms")+fmt.Sprintf(" (%d illegal moves timed)", r.RevertSamples), "")
	row("API calls per legal leaf event", fmtf(r.CallsPerLegalEvent, ""), "≤ 1")
	row("API calls per illegal event", fmtf(r.CallsPerIllegalEvent, ""), "≤ 3")
	row(fmt.Sprintf("API calls per cascade of %d", r.CascadeChildren), fmti(r.CallsPerCascade), fmt.Sprintf("≤ %d", 2+(r.CascadeChildren+49)/50))
	row("API calls per convergence", fmti(r.CallsPerConvergence), "")
	row(fmt.Sprintf("burst of %d moves (%d illegal)", r.BurstEvents, r.BurstIllegal),
		fmt.Sprintf("%s events/s (made in %s, drained %s after)", fmtf(r.BurstEventsPS, ""), fmtf(r.BurstMadeS, "s"), fmtf(r.BurstDrainS, "s")), "")
	row("burst delivered / decided / lost", fmt.Sprintf("%d / %d / %d (%d reverted, %d API calls)",
		r.BurstDelivered, r.BurstDecided, r.BurstLost, r.BurstReverted, r.BurstCalls), "0 lost")
	row("burst decided and reverted", fmt.Sprintf("after %s: %s events/s beyond the proof", fmtf(r.BurstDoneS, "s"), fmtf(r.BurstDecidedPS, "")), fmt.Sprintf("≥ %g", minBurstDecidedPS))
	row("burst: app requests per legal event", fmtf(r.BurstRequestsPerLegal, ""), fmt.Sprintf("≤ %g", maxRequestsPerLegal))
	row("peak RSS (burst; whole process)", fmtf(r.PeakRSSMB, "MB"), "≤ 150 MB")
	if r.SecondaryLimits {
		row("secondary-limit answers (main phases)", fmt.Sprint(r.SecondaryLimitAnswers), "0")
	} else {
		row("secondary rate limits", "off (--secondary-limits=false)", "")
	}
	if r.StormEvents > 0 {
		row(fmt.Sprintf("storm of %d moves by one actor: all reverted", r.StormEvents), r.stormReverted(), fmt.Sprintf("≤ %g s", stormRevertTargetS))
		row("storm: all explained on GitHub", r.stormExplained(), "")
		row("storm: app requests / secondary-limit answers", fmt.Sprintf("%d / %d", r.StormRequests, r.StormSecondaryAnswers), "0 answers")
		row(fmt.Sprintf("another organization's revert, idle / during the storm (p50 of %d; max)", r.OrgsSamples),
			fmt.Sprintf("%s / %s (%s / %s)", fmtf(r.OrgsIdleRevertP50MS, "ms"), fmtf(r.OrgsStormRevertP50MS, "ms"), fmtf(r.OrgsIdleRevertMaxMS, "ms"), fmtf(r.OrgsStormRevertMaxMS, "ms")),
			fmt.Sprintf("during ≤ %g × idle", orgsStormFactor))
	}
	if len(r.ReconcileRuns) == 0 {
		row("reconciliation", r.ReconcileStatus, "≤ ⌈items/100⌉ + 1 reads")
	}
	for _, run := range r.ReconcileRuns {
		row(fmt.Sprintf("reconcile %d items, first install", run.Items),
			fmt.Sprintf("%d reads, %d calls, %g s (%d adopted)", run.FirstPassReads, run.FirstPassCalls, run.FirstPassSeconds, run.Adopted),
			fmt.Sprintf("≤ %d reads", run.ReadBudget))
		row(fmt.Sprintf("reconcile %d items, %d drifts", run.Items, run.Drifts),
			fmt.Sprintf("%d reads, %d calls, %g s (%d reverted)", run.GraphQLReads, run.APICalls, run.Seconds, run.Reverted), "")
	}
	tw.Flush()

	fmt.Fprintln(w)
	missed := 0
	for _, t := range r.Targets {
		if t.Met != nil && !*t.Met {
			missed++
			fmt.Fprintf(w, "target missed: %s: %s (target %s)\n", t.Name, t.Value, t.Target)
		}
	}
	if missed == 0 {
		fmt.Fprintln(w, "every measured target met")
	}
	fmt.Fprintf(w, "total %g s\n", r.TotalSeconds)
}

func strip(s string) string { return strings.TrimSpace(s) }

func orNA(s string) string {
	if s == "" {
		return "model unknown"
	}
	return s
}
