// Package bench measures ralph-gate against the built-in GitHub simulator, in one process and
// with a stated injected API round-trip time: how fast webhooks are acknowledged, how long a
// revert and its comment take after a webhook arrives, how many GitHub calls each kind of event
// costs, how a burst of moves drains and how much memory it takes, and what reconciling a
// large board costs. `ralph-gate bench` runs it; docs/BENCHMARKS.md explains every figure.
//
// These are tools, not tests: nothing here asserts a timing. Targets are reported next to the
// figures so a reader sees at once what holds on their machine.
package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/ghboard"
	"github.com/ralph-gate/ralph-gate/ghsim"
	"github.com/ralph-gate/ralph-gate/sandbox"
	"github.com/ralph-gate/ralph-gate/store"
)

// Options size a run. Zero fields take the defaults (Defaults).
type Options struct {
	// RTT is the latency ghsim adds to every GitHub API request (the round-trip time).
	RTT time.Duration
	// Rate is how many webhooks per second the acknowledgement phase sends; AckWebhooks how many.
	Rate        int
	AckWebhooks int
	// LatencySamples is how many illegal moves time the revert and the comment.
	LatencySamples int
	// CorrectSamples is how many illegal moves, with 15 % of webhooks dropped, time the
	// correction.
	CorrectSamples int
	// CostRepeats is how many legal and illegal events are averaged for the calls per event.
	CostRepeats int
	// CascadeN is the number of children of the cascade whose cost is counted.
	CascadeN int
	// BurstEvents moves are made by BurstConcurrency seeded users at once.
	BurstEvents      int
	BurstConcurrency int
	// ReconcileSizes are the board sizes reconciled (items).
	ReconcileSizes []int
	// Storm is how many items one actor moves at once in the storm phase (0: no storm);
	// StormTimeout bounds how long the storm is waited for.
	Storm        int
	StormTimeout time.Duration
	// NoSecondaryLimits runs the simulator without GitHub's secondary rate limits (they are
	// on by default).
	NoSecondaryLimits bool
	// Workers overrides enforcement.workers (0: the configuration's default).
	Workers int
	// ReorderWindow is enforcement.reorder_window (0: the simulator world's, 2 s).
	ReorderWindow time.Duration
	// Quick marks a smoke run (recorded in the result).
	Quick bool
	// Progress receives one line per phase (stderr); nil means silence.
	Progress io.Writer
	Version  string
}

// Defaults are the sizes of a full run (quick: a smoke run well under a minute).
func Defaults(quick bool) Options {
	if quick {
		return Options{RTT: 50 * time.Millisecond, Rate: 100, AckWebhooks: 200, LatencySamples: 12, CorrectSamples: 20, CostRepeats: 3,
			CascadeN: 50, BurstEvents: 200, BurstConcurrency: 32, ReconcileSizes: []int{1000}, Storm: 50, StormTimeout: 30 * time.Second, Quick: true}
	}
	return Options{RTT: 50 * time.Millisecond, Rate: 100, AckWebhooks: 1000, LatencySamples: 60, CorrectSamples: 60, CostRepeats: 5,
		CascadeN: 50, BurstEvents: 1000, BurstConcurrency: 32, ReconcileSizes: []int{1000, 10000}, Storm: 500, StormTimeout: 5 * time.Minute}
}

func (o *Options) fill() {
	d := Defaults(o.Quick)
	if o.RTT < 0 {
		o.RTT = 0
	}
	if o.RTT == 0 {
		o.RTT = d.RTT
	}
	set := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	set(&o.Rate, d.Rate)
	set(&o.AckWebhooks, d.AckWebhooks)
	set(&o.LatencySamples, d.LatencySamples)
	set(&o.CorrectSamples, d.CorrectSamples)
	set(&o.CostRepeats, d.CostRepeats)
	set(&o.CascadeN, d.CascadeN)
	set(&o.BurstEvents, d.BurstEvents)
	set(&o.BurstConcurrency, d.BurstConcurrency)
	if len(o.ReconcileSizes) == 0 {
		o.ReconcileSizes = d.ReconcileSizes
	}
	if o.Storm < 0 {
		o.Storm = 0
	}
	if o.StormTimeout <= 0 {
		o.StormTimeout = d.StormTimeout
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
}

// Result is one run's figures. Times are milliseconds unless the name says otherwise; a figure
// that could not be measured is null.
type Result struct {
	StartedAt time.Time `json:"started_at"`
	Machine   Machine   `json:"machine"`
	Quick     bool      `json:"quick"`
	Store     string    `json:"store"`
	Workers   int       `json:"workers"`
	RTTMS     float64   `json:"rtt_ms"`
	// SecondaryLimits says whether the simulator enforced GitHub's secondary rate limits;
	// SecondaryLimitAnswers counts its refusals in the main phases (the storm has its own).
	SecondaryLimits       bool `json:"secondary_limits"`
	SecondaryLimitAnswers int  `json:"secondary_limit_answers"`

	AckRate     int      `json:"ack_rate_per_s"`
	AckWebhooks int      `json:"ack_webhooks"`
	AckFailed   int      `json:"ack_failed"`
	AckP50MS    *float64 `json:"ack_p50_ms"`
	AckP99MS    *float64 `json:"ack_p99_ms"`
	AckMaxMS    *float64 `json:"ack_max_ms"`

	RevertSamples         int      `json:"revert_samples"`
	RevertP50MS           *float64 `json:"revert_p50_ms"`
	RevertP99MS           *float64 `json:"revert_p99_ms"`
	RevertP50RTTMultiple  *float64 `json:"revert_p50_rtt_multiple"`
	RevertP99RTTMultiple  *float64 `json:"revert_p99_rtt_multiple"`
	CommentP50MS          *float64 `json:"comment_p50_ms"`
	CommentP99MS          *float64 `json:"comment_p99_ms"`
	CommentP50RTTMultiple *float64 `json:"comment_p50_rtt_multiple"`
	CommentP99RTTMultiple *float64 `json:"comment_p99_rtt_multiple"`
	PickupP50MS           *float64 `json:"queue_pickup_p50_ms"`

	// Correctness under 15 % dropped webhooks: move → board legal again.
	ReorderWindowMS float64  `json:"reorder_window_ms"`
	SweepRTTMS      *float64 `json:"sweep_rtt_ms"`
	CorrectSamples  int      `json:"correct_samples"`
	CorrectDropped  int      `json:"correct_dropped_deliveries"`
	CorrectP50MS    *float64 `json:"correct_p50_ms"`
	CorrectP99MS    *float64 `json:"correct_p99_ms"`
	AllCorrectS     *float64 `json:"all_correct_after_last_move_s"`

	CallsPerIllegalEvent *float64 `json:"calls_per_illegal_event"`
	CallsPerLegalEvent   *float64 `json:"calls_per_legal_event"`
	CascadeChildren      int      `json:"cascade_children"`
	CallsPerCascade      *int     `json:"calls_per_cascade_50"`
	CallsPerConvergence  *int     `json:"calls_per_convergence"`

	BurstEvents    int      `json:"burst_events"`
	BurstIllegal   int      `json:"burst_illegal"`
	BurstDelivered int      `json:"burst_delivered"`
	BurstDecided   int      `json:"burst_decided"`
	BurstLost      int      `json:"burst_lost"`
	BurstReverted  int      `json:"burst_reverted"`
	BurstEventsPS  *float64 `json:"burst_events_per_s"`
	BurstMadeS     *float64 `json:"burst_made_s"`
	BurstDrainS    *float64 `json:"burst_drain_s"`
	BurstCalls     int      `json:"burst_api_calls"`
	PeakRSSMB      *float64 `json:"peak_rss_mb"`
	PeakRSSScope   string   `json:"peak_rss_scope"`
	// BurstRequestsPerLegal is the app's GitHub requests during the burst over its legal events.
	BurstRequestsPerLegal *float64 `json:"burst_requests_per_legal_event"`
	// BurstRequestsByKind splits the burst's requests: item reads, guarded reverts (their
	// read and their write), comments, other.
	BurstRequestsByKind map[string]int `json:"burst_requests_by_kind"`
	// BurstDecidedP50S and BurstDecidedLastS are when the burst's events were decided, from
	// its first move; BurstRevertedAllS is when the last revert was written, BurstExplainedS when
	// the last comment was.
	// BurstDoneS is when every event of the burst was decided and every revert written;
	// BurstDecidedPS the burst's events over that time less the proof every change waits for
	// (reorder window + 1 s + 2 sweeps, as revert_p50's allowance): the rate of deciding.
	BurstDoneS        *float64 `json:"burst_done_s"`
	BurstDecidedPS    *float64 `json:"burst_decided_per_s"`
	BurstDecidedP50S  *float64 `json:"burst_decided_p50_s"`
	BurstDecidedLastS *float64 `json:"burst_decided_last_s"`
	BurstRevertedAllS *float64 `json:"burst_reverted_all_s"`
	BurstExplainedS   *float64 `json:"burst_explained_s"`

	// The storm: one actor moves StormEvents items at once (none when 0). StormRevertAllS and
	// StormExplainAllS are null when the storm was not reverted or explained in full within
	// its time limit (StormTimedOut); StormReverted and StormExplained say how far it got.
	// ProvisionalWithdrawn counts the provisional reverts the main phases withdrew (0 when no
	// change is hidden from the app, as here).
	ProvisionalWithdrawn int `json:"provisional_withdrawn"`

	StormEvents           int      `json:"storm_events"`
	StormMoveS            *float64 `json:"storm_move_s"`
	StormRevertAllS       *float64 `json:"storm_revert_all_s"`
	StormExplainAllS      *float64 `json:"storm_explain_all_s"`
	StormReverted         int      `json:"storm_reverted"`
	StormExplained        int      `json:"storm_explained"`
	StormRequests         int      `json:"storm_requests"`
	StormSecondaryAnswers int      `json:"storm_secondary_limit_answers"`
	StormTimedOut         bool     `json:"storm_timed_out"`
	StormTimeoutS         float64  `json:"storm_timeout_s"`
	StormSeconds          float64  `json:"storm_seconds"`

	// A second organization on the storm's deployment (its own installation and board): its
	// single refused moves, one at a time, timed from the move to the end of the revert, while
	// idle and while the storm is reverted. Null without a storm.
	OrgsSamples          int      `json:"orgs_samples"`
	OrgsIdleRevertP50MS  *float64 `json:"orgs_idle_revert_p50_ms"`
	OrgsIdleRevertMaxMS  *float64 `json:"orgs_idle_revert_max_ms"`
	OrgsStormRevertP50MS *float64 `json:"orgs_storm_revert_p50_ms"`
	OrgsStormRevertMaxMS *float64 `json:"orgs_storm_revert_max_ms"`

	ReconcileStatus       string          `json:"reconcile_status"`
	ReconcileItems        *int            `json:"reconcile_items"`
	ReconcileGraphQLReads *int            `json:"reconcile_graphql_reads"`
	ReconcileAPICalls     *int            `json:"reconcile_api_calls"`
	ReconcileSeconds      *float64        `json:"reconcile_seconds"`
	ReconcileRuns         []ReconcileRun  `json:"reconcile_runs"`
	TotalSeconds          float64         `json:"total_seconds"`
	Targets               []TargetVerdict `json:"targets"`
}

// ReconcileRun is one board size, reconciled twice: on first install (every item adopted)
// and then with a few silent illegal drifts to revert.
type ReconcileRun struct {
	Items            int     `json:"items"`
	FirstPassReads   int     `json:"first_pass_graphql_reads"`
	FirstPassCalls   int     `json:"first_pass_api_calls"`
	FirstPassSeconds float64 `json:"first_pass_seconds"`
	Adopted          int     `json:"adopted"`
	Drifts           int     `json:"drifts"`
	Reverted         int     `json:"reverted"`
	GraphQLReads     int     `json:"graphql_reads"`
	APICalls         int     `json:"api_calls"`
	Seconds          float64 `json:"seconds"`
	ReadBudget       int     `json:"read_budget"`
}

func num(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

func intp(v int) *int { return &v }

// Run runs every phase and returns the figures. Errors are infrastructure failures; a missed
// target is a figure, not an error.
func Run(ctx context.Context, o Options) (*Result, error) {
	o.fill()
	began := time.Now()
	r := &Result{StartedAt: began.UTC().Truncate(time.Second), Machine: machine(), Quick: o.Quick, RTTMS: ms(o.RTT),
		SecondaryLimits: !o.NoSecondaryLimits, Store: "sqlite", PeakRSSScope: "VmHWM of the one process running the simulator, the app and the load generator, during the burst"}
	if err := runMain(ctx, o, r); err != nil {
		return r, err
	}
	if o.Storm > 0 {
		r.StormTimeoutS = o.StormTimeout.Seconds()
		if err := runStorm(ctx, o, r); err != nil {
			return r, fmt.Errorf("storm: %w", err)
		}
	}
	if err := runReconcile(ctx, o, r); err != nil {
		return r, err
	}
	r.TotalSeconds = round(time.Since(began).Seconds(), 1)
	r.Machine.LoadAvgEnd = loadAvg()
	r.Targets = targets(r)
	return r, nil
}

func (o Options) progress(format string, args ...any) {
	fmt.Fprintf(o.Progress, "bench: "+format+"\n", args...)
}

// harness is the running world of the main phases.
type harness struct {
	o        Options
	sb       *sandbox.Sandbox
	l        layout
	receipts *receipts
	fields   *ghboard.FieldCache
	mu       sync.Mutex
	boards   map[string]*ghboard.Board
	items    map[int]enforce.Item
}

func startSandbox(ctx context.Context, o Options, seed []byte, mw func(http.Handler) http.Handler, more ...config.Project) (*sandbox.Sandbox, error) {
	startCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	return sandbox.Start(startCtx, sandbox.Options{
		Seed:              seed,
		Version:           o.Version,
		WebhookMiddleware: mw,
		// A primary budget no run can spend; the secondary limits are GitHub's, unless asked
		// not to: they bound what ralph-gate can do at once.
		SimOptions:      ghsim.Options{RateLimit: 1 << 30},
		SecondaryLimits: !o.NoSecondaryLimits,
		Configure: func(c *config.Config) {
			c.Logging.Level = "error"
			// Drift made a moment ago is reconciled at once (the default leaves a minute for its
			// webhook); the reconciler runs only when the benchmark calls it.
			c.Reconcile.Settle = time.Nanosecond
			if o.Workers > 0 {
				c.Enforcement.Workers = o.Workers
			}
			if o.ReorderWindow > 0 {
				c.Enforcement.ReorderWindow = o.ReorderWindow
			}
			c.Projects = append(c.Projects, more...)
		},
	})
}

func runMain(ctx context.Context, o Options, r *Result) error {
	seed, l := mainSeed(o)
	rec := &receipts{}
	o.progress("starting the simulator and ralph-gate (SQLite store, %d issues seeded)", countIssues(l))
	sb, err := startSandbox(ctx, o, seed, rec.middleware)
	if err != nil {
		return err
	}
	defer sb.Close()
	r.Workers = sb.Config.Enforcement.Workers
	h := &harness{o: o, sb: sb, l: l, receipts: rec, fields: ghboard.NewFieldCache(),
		boards: map[string]*ghboard.Board{}, items: map[int]enforce.Item{}}
	if err := h.loadItems(ctx); err != nil {
		return err
	}
	if err := sb.Sim.SetFaults(ghsim.Faults{LatencyMS: int(o.RTT / time.Millisecond)}); err != nil {
		return err
	}
	o.progress("injected API round-trip time: %s", o.RTT)
	if err := h.warmup(ctx); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	for _, phase := range []struct {
		name string
		run  func(context.Context, *Result) error
	}{
		{"API calls per event", h.cost},
		{"revert and comment latency", h.latency},
		{"time to correct", h.correct},
		{"webhook acknowledgement", h.ack},
		{"burst", h.burst},
	} {
		// Each phase starts from unspent secondary-limit windows: a phase measures itself,
		// not what the one before it spent.
		sb.Sim.ClearSecondaryWindows()
		if err := phase.run(ctx, r); err != nil {
			return fmt.Errorf("%s: %w", phase.name, err)
		}
	}
	r.SecondaryLimitAnswers = sb.Sim.SecondaryStats().Answers
	// A provisional revert withdrawn means a change was hidden from the app when it reverted;
	// the benchmark hides none.
	all, err := sb.App.Store().QueryAudit(ctx, store.AuditFilter{})
	if err != nil {
		return fmt.Errorf("read the audit: %w", err)
	}
	r.ProvisionalWithdrawn = 0
	for _, e := range all {
		if e.Verdict == enforce.VerdictWithdrawn {
			r.ProvisionalWithdrawn++
		}
	}
	return nil
}

func countIssues(l layout) int {
	return len(l.warmup) + len(l.legal) + len(l.illegal) + 1 + l.cascadeN + 1 + len(l.convergeKid) +
		len(l.latency) + len(l.correct) + len(l.ack) + len(l.burst)
}
