package metrics

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestWebhooksCountsByEventAndOutcome(t *testing.T) {
	m := New("test", nil)
	h := m.Webhooks(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("status") {
		case "401":
			http.Error(w, "bad", http.StatusUnauthorized)
		case "500":
			w.WriteHeader(http.StatusInternalServerError)
		default:
			io.WriteString(w, "ok") // implicit 200
		}
	}))
	tests := []struct {
		event, status, wantEvent, wantOutcome string
	}{
		{"projects_v2_item", "", "projects_v2_item", "accepted"},
		{"issues", "401", "issues", "bad_signature"},
		{"made_up_event", "500", "other", "error"},
		{"", "", "none", "accepted"},
	}
	for _, tt := range tests {
		t.Run(tt.wantEvent+"/"+tt.wantOutcome, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/api/github/hook?status="+tt.status, nil)
			if tt.event != "" {
				req.Header.Set("X-GitHub-Event", tt.event)
			}
			h.ServeHTTP(httptest.NewRecorder(), req)
			if got := testutil.ToFloat64(m.webhooks.WithLabelValues(tt.wantEvent, tt.wantOutcome)); got != 1 {
				t.Errorf("webhooks{%s,%s} = %v, want 1", tt.wantEvent, tt.wantOutcome, got)
			}
		})
	}
}

func TestGitHubMiddleware(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-RateLimit-Remaining", "4321")
		switch r.URL.Path {
		case "/api/graphql":
			w.Header().Set("X-RateLimit-Resource", "graphql")
			io.WriteString(w, `{"data":{}}`)
		case "/api/v3/limited":
			w.Header().Set("Retry-After", "1")
			w.Header().Set("X-RateLimit-Resource", "core")
			w.WriteHeader(http.StatusForbidden)
		case "/api/v3/broken":
			w.WriteHeader(http.StatusBadGateway)
		default:
			w.Header().Set("X-RateLimit-Resource", "core")
			w.Header().Set("X-RateLimit-Remaining", "17")
			io.WriteString(w, `{}`)
		}
	}))
	defer srv.Close()
	m := New("test", nil)
	client := &http.Client{Transport: m.GitHub(http.DefaultTransport)}
	for _, path := range []string{"/api/graphql", "/api/v3/app", "/api/v3/limited", "/api/v3/broken"} {
		resp, err := client.Post(srv.URL+path, "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	// A transport failure is counted too.
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	if _, err := client.Get(dead.URL + "/api/v3/app"); err == nil {
		t.Fatal("want a transport error")
	}

	for _, c := range []struct {
		name string
		got  float64
		want float64
	}{
		{"graphql 200", testutil.ToFloat64(m.githubRequests.WithLabelValues("graphql", "200")), 1},
		{"rest 200", testutil.ToFloat64(m.githubRequests.WithLabelValues("rest", "200")), 1},
		{"rest 403", testutil.ToFloat64(m.githubRequests.WithLabelValues("rest", "403")), 1},
		{"rest error", testutil.ToFloat64(m.githubRequests.WithLabelValues("rest", "error")), 1},
		{"rate limited", testutil.ToFloat64(m.githubErrors.WithLabelValues("rest", "rate_limited")), 1},
		{"server error", testutil.ToFloat64(m.githubErrors.WithLabelValues("rest", "server_error")), 1},
		{"transport", testutil.ToFloat64(m.githubErrors.WithLabelValues("rest", "transport")), 1},
		{"graphql remaining", testutil.ToFloat64(m.rateRemaining.WithLabelValues("graphql")), 4321},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestDecidedAndQueue(t *testing.T) {
	fail := false
	m := New("v1.2.3", func(context.Context) (QueueStats, error) {
		if fail {
			return QueueStats{}, errors.New("database is closed")
		}
		return QueueStats{Depth: 3, OldestAge: 1500 * time.Millisecond, ProofWaiting: 4}, nil
	})
	m.Decided("allowed", time.Millisecond)
	m.Decided("reverted", time.Millisecond)
	m.AutomationMoved("cascade")
	m.ProvisionalReverted(true)
	m.ProvisionalReverted(true)
	m.ProvisionalReverted(false)
	m.ReconcilePassDone(ReconcilePass{Project: "acme/1", InSync: 9, Drifted: 1, Reverted: 1, Requests: 4, Complete: true, At: time.Unix(1700000000, 0)})
	m.ReconcilePassDone(ReconcilePass{Project: "acme/2", InSync: 3, Requests: 2})

	body := scrape(t, m)
	for _, want := range []string{
		`ralph_gate_build_info{version="v1.2.3"} 1`,
		`ralph_gate_decisions_total{verdict="allowed"} 1`,
		`ralph_gate_decisions_total{verdict="reverted"} 1`,
		`ralph_gate_reverts_total 1`,
		`ralph_gate_automation_moves_total{cause="cascade"} 1`,
		`ralph_gate_provisional_reverts_total{outcome="confirmed"} 2`,
		`ralph_gate_provisional_reverts_total{outcome="withdrawn"} 1`,
		`ralph_gate_queue_depth 3`,
		`ralph_gate_queue_oldest_age_seconds 1.5`,
		`ralph_gate_proof_waiting_items 4`,
		`go_goroutines`,
		`ralph_gate_reconcile_items_total{result="in_sync"} 12`,
		`ralph_gate_reconcile_items_total{result="reverted"} 1`,
		`ralph_gate_reconcile_passes_total{outcome="complete"} 1`,
		`ralph_gate_reconcile_passes_total{outcome="paused"} 1`,
		`ralph_gate_reconcile_github_requests_total 6`,
		`ralph_gate_reconcile_last_complete_timestamp_seconds{project="acme/1"} 1.7e+09`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	// A queue that cannot be read drops only its own series.
	fail = true
	body = scrape(t, m)
	if strings.Contains(body, "ralph_gate_queue_depth") || !strings.Contains(body, "ralph_gate_reverts_total 1") {
		t.Errorf("with a failing queue, want the other series and no queue series:\n%s", body)
	}
}

func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return rec.Body.String()
}
