// Package metrics defines ralph-gate's Prometheus series and the small adapters that feed
// them: an HTTP middleware for webhook intake, an http.RoundTripper for GitHub calls and a
// collector that asks the queue for its depth at scrape time.
//
// Nothing here is global: New builds a fresh *prometheus.Registry that app serves at
// /metrics. Packages that do the work (handlers, jobs, enforce) must not import this one; app
// reports on their behalf, so they stay free of Prometheus.
package metrics

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Namespace prefixes every ralph-gate series.
const Namespace = "ralph_gate"

// QueueStats is what the durable queue reports at scrape time.
type QueueStats struct {
	// Depth counts changes queued or running and not yet finished.
	Depth int
	// OldestAge is how long the oldest unfinished change has waited (0 when the queue is empty).
	OldestAge time.Duration
	// ProofWaiting counts the items this replica holds for a sweep's proof, to be judged
	// together when it comes.
	ProofWaiting int
}

// QueueStatsFunc reads the queue's state; it is called on every scrape with a short deadline.
type QueueStatsFunc func(ctx context.Context) (QueueStats, error)

// Metrics holds every series ralph-gate exports.
type Metrics struct {
	registry *prometheus.Registry

	webhooks       *prometheus.CounterVec
	decisions      *prometheus.CounterVec
	decisionTime   prometheus.Histogram
	processErrors  prometheus.Counter
	reverts        prometheus.Counter
	provisional    *prometheus.CounterVec
	mcpRefused     *prometheus.CounterVec
	toolCalls      *prometheus.CounterVec
	toolDuration   *prometheus.HistogramVec
	toolRequests   *prometheus.CounterVec
	automation     *prometheus.CounterVec
	policyChanges  *prometheus.CounterVec
	githubRequests *prometheus.CounterVec
	githubErrors   *prometheus.CounterVec
	githubLatency  *prometheus.HistogramVec
	rateRemaining  *prometheus.GaugeVec
	reconcile      reconcileMetrics
}

// New registers every series on a new registry. queue may be nil (no queue series).
func New(version string, queue QueueStatsFunc) *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{registry: reg}
	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: Namespace, Name: "build_info",
		Help:        "Always 1; the version label says which build is running.",
		ConstLabels: prometheus.Labels{"version": version},
	})
	info.Set(1)

	m.webhooks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "webhooks_received_total",
		Help: "Webhook deliveries received, by event and outcome (accepted, bad_signature, malformed, too_large, bad_method, error, rejected).",
	}, []string{"event", "outcome"})
	m.decisions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "decisions_total",
		Help: "Workflow State changes processed, by verdict (allowed, reverted, ignored, wait, superseded).",
	}, []string{"verdict"})
	m.decisionTime = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "decision_duration_seconds",
		Help:    "Time to process one change: reading the item, deciding, and reverting and commenting when needed.",
		Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	})
	m.processErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: Namespace, Name: "processing_errors_total",
		Help: "Changes whose processing failed and will be retried (GitHub or store trouble).",
	})
	m.reverts = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: Namespace, Name: "reverts_total",
		Help: "Illegal Workflow State changes set back to the last legal state.",
	})
	m.mcpRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "mcp_refused_total",
		Help: "Façade requests refused for a limit: batch (too many messages in one POST), malformed (a body that is not exactly one JSON value), rate (an agent's messages a minute), budget (the GitHub reserve kept for enforcement).",
	}, []string{"reason"})
	m.toolCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "mcp_tool_calls_total",
		Help: "Façade tool calls, by tool, agent (a configured one, else other), outcome (ok, refused, error, rate_limited) and the refusal's rule (\"\" unless refused or rate limited).",
	}, []string{"tool", "agent", "outcome", "rule"})
	m.toolDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "mcp_tool_duration_seconds",
		Help:    "Time to answer one façade tool call, by tool.",
		Buckets: ToolBuckets(),
	}, []string{"tool"})
	m.toolRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "mcp_github_requests_total",
		Help: "GitHub requests made for façade tool calls, by tool (with the work a call set going, such as a walk a handoff woke).",
	}, []string{"tool"})
	m.provisional = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "provisional_reverts_total",
		Help: "Illegal moves reverted at once, before every earlier change was known, by what the item's true history made of them (confirmed, withdrawn).",
	}, []string{"outcome"})
	m.policyChanges = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "policy_changes_total",
		Help: "Pushes of an organization's policy file, by organization and outcome: in_force, refused_pusher (pushed by someone who may not change the policy), refused_invalid (the file has problems), not_newer (older than the policy in force), unchanged.",
	}, []string{"org", "outcome"})
	m.automation = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "automation_moves_total",
		Help: "Moves ralph-gate made by itself, by cause (cascade, convergence, lifecycle).",
	}, []string{"cause"})
	m.githubRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "github_requests_total",
		Help: "Requests sent to GitHub, by API (rest, graphql) and HTTP status code (\"error\" when no answer came).",
	}, []string{"api", "code"})
	m.githubErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "github_request_errors_total",
		Help: "GitHub requests that failed, by API and reason (transport, rate_limited, server_error, client_error).",
	}, []string{"api", "reason"})
	m.githubLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "github_request_duration_seconds",
		Help:    "Round-trip time of GitHub requests, by API.",
		Buckets: []float64{.025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"api"})
	m.rateRemaining = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Name: "github_rate_limit_remaining",
		Help: "Requests left in the current GitHub rate-limit window, by resource (core, graphql), as last reported.",
	}, []string{"resource"})

	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		info, m.webhooks, m.decisions, m.decisionTime, m.processErrors, m.reverts, m.provisional, m.mcpRefused, m.toolCalls, m.toolDuration, m.toolRequests, m.automation, m.policyChanges,
		m.githubRequests, m.githubErrors, m.githubLatency, m.rateRemaining,
	)
	m.reconcile = newReconcileMetrics(reg)
	if queue != nil {
		reg.MustRegister(&queueCollector{stats: queue})
	}
	return m
}

// Registry is the registry every series lives on (tests gather from it).
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{
		// A failing queue read drops its series from one scrape, not the whole scrape.
		ErrorHandling:     promhttp.ContinueOnError,
		Registry:          m.registry,
		Timeout:           10 * time.Second,
		EnableOpenMetrics: false,
	})
}

// Decided records the outcome of processing one change; verdict is the outcome's name.
func (m *Metrics) Decided(verdict string, took time.Duration) {
	m.decisions.WithLabelValues(verdict).Inc()
	m.decisionTime.Observe(took.Seconds())
	if verdict == "reverted" {
		m.reverts.Inc()
	}
}

// ProcessingFailed records a change whose processing failed (it will be retried).
func (m *Metrics) ProcessingFailed() { m.processErrors.Inc() }

// AutomationMoved records one move the app made by itself; cause is cascade, convergence or
// lifecycle.
func (m *Metrics) AutomationMoved(cause string) { m.automation.WithLabelValues(cause).Inc() }

// ProvisionalReverted records what became of one provisional revert: confirmed by the item's
// true history, or withdrawn.
func (m *Metrics) ProvisionalReverted(confirmed bool) {
	outcome := "withdrawn"
	if confirmed {
		outcome = "confirmed"
	}
	m.provisional.WithLabelValues(outcome).Inc()
}

// ToolBuckets are the duration buckets of tool calls, in seconds: the bounds the store counts
// tool calls by (enforce.DurationBounds; app's tests keep them equal).
func ToolBuckets() []float64 {
	return []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
}

// ToolCalled records one façade tool call; its labels come from bounded sets (mcpserver
// bounds them).
func (m *Metrics) ToolCalled(tool, agent, outcome, rule string, took time.Duration) {
	m.toolCalls.WithLabelValues(tool, agent, outcome, rule).Inc()
	m.toolDuration.WithLabelValues(tool).Observe(took.Seconds())
}

// ToolRequest records one GitHub request made for a call of tool.
func (m *Metrics) ToolRequest(tool string) { m.toolRequests.WithLabelValues(tool).Inc() }

// MCPRefused records one façade request refused for a limit (mcpserver.Limits): batch, rate
// or budget.
func (m *Metrics) MCPRefused(reason string) { m.mcpRefused.WithLabelValues(reason).Inc() }

// PolicyOrganization makes an organization's policy change series exist at 0, so that the
// first change of each outcome is an increase (an alert on increase() sees it).
func (m *Metrics) PolicyOrganization(org string) {
	for _, outcome := range []string{"in_force", "refused_pusher", "refused_invalid", "not_newer", "unchanged"} {
		m.policyChanges.WithLabelValues(strings.ToLower(org), outcome).Add(0)
	}
}

// PolicyChanged counts a push of an organization's policy file by its outcome.
func (m *Metrics) PolicyChanged(org, outcome string) {
	m.policyChanges.WithLabelValues(strings.ToLower(org), outcome).Inc()
}

type queueCollector struct {
	stats QueueStatsFunc
}

var (
	queueDepthDesc = prometheus.NewDesc(Namespace+"_queue_depth",
		"Changes queued or running and not yet finished.", nil, nil)
	queueAgeDesc = prometheus.NewDesc(Namespace+"_queue_oldest_age_seconds",
		"How long the oldest unfinished change has waited (0 when the queue is empty).", nil, nil)
	proofWaitingDesc = prometheus.NewDesc(Namespace+"_proof_waiting_items",
		"Items this replica holds for a redelivery sweep's proof, to be judged together when it comes.", nil, nil)
)

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- queueDepthDesc
	ch <- queueAgeDesc
	ch <- proofWaitingDesc
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	s, err := c.stats(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(queueDepthDesc, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(queueDepthDesc, prometheus.GaugeValue, float64(s.Depth))
	ch <- prometheus.MustNewConstMetric(queueAgeDesc, prometheus.GaugeValue, s.OldestAge.Seconds())
	ch <- prometheus.MustNewConstMetric(proofWaitingDesc, prometheus.GaugeValue, float64(s.ProofWaiting))
}
