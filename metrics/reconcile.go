package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ReconcilePass is what one reconciliation pass over one project did.
type ReconcilePass struct {
	Project                                                          string // "owner/number"
	InSync, Adopted, Drifted, Reverted, Accepted, Deferred, Archived int
	Requests                                                         int
	Complete                                                         bool // reached the last page (false: paused, resumes next pass)
	Duration                                                         time.Duration
	At                                                               time.Time
}

type reconcileMetrics struct {
	items        *prometheus.CounterVec
	passes       *prometheus.CounterVec
	requests     prometheus.Counter
	lastComplete *prometheus.GaugeVec
}

func newReconcileMetrics(reg *prometheus.Registry) reconcileMetrics {
	r := reconcileMetrics{
		items: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "reconcile_items_total",
			Help: "Items the reconciler looked at, by result (in_sync, adopted, drifted, reverted, accepted, deferred, archived).",
		}, []string{"result"}),
		passes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "reconcile_passes_total",
			Help: "Reconciliation passes over one project, by outcome (complete, paused: the budget or a rate limit stopped it).",
		}, []string{"outcome"}),
		requests: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: Namespace, Name: "reconcile_github_requests_total",
			Help: "GitHub requests the reconciler spent.",
		}),
		lastComplete: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "reconcile_last_complete_timestamp_seconds",
			Help: "When a pass last reached the end of the project (Unix time), by project.",
		}, []string{"project"}),
	}
	reg.MustRegister(r.items, r.passes, r.requests, r.lastComplete)
	return r
}

// ReconcilePassDone records one reconciliation pass.
func (m *Metrics) ReconcilePassDone(p ReconcilePass) {
	r := m.reconcile
	for result, n := range map[string]int{"in_sync": p.InSync, "adopted": p.Adopted, "drifted": p.Drifted,
		"reverted": p.Reverted, "accepted": p.Accepted, "deferred": p.Deferred, "archived": p.Archived} {
		if n > 0 {
			r.items.WithLabelValues(result).Add(float64(n))
		}
	}
	r.requests.Add(float64(p.Requests))
	if !p.Complete {
		r.passes.WithLabelValues("paused").Inc()
		return
	}
	r.passes.WithLabelValues("complete").Inc()
	at := p.At
	if at.IsZero() {
		at = time.Now()
	}
	r.lastComplete.WithLabelValues(p.Project).Set(float64(at.Unix()))
}
