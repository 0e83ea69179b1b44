package metrics

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ralph-gate/ralph-gate/internal/spend"
)

// knownEvents bounds the event label: the header is read before the signature is checked,
// so an unsigned request must not be able to mint new series.
var knownEvents = map[string]bool{
	"projects_v2_item": true, "issues": true, "pull_request": true, "installation": true,
	"installation_repositories": true, "installation_target": true, "github_app_authorization": true,
	"ping": true, "meta": true,
}

// eventLabel is the X-GitHub-Event header when it is one GitHub sends Apps, else "other".
func eventLabel(h string) string {
	switch {
	case h == "":
		return "none"
	case knownEvents[h]:
		return h
	}
	return "other"
}

// webhookOutcome names what the intake answered.
func webhookOutcome(status int) string {
	switch {
	case status >= 200 && status < 300:
		return "accepted"
	case status == http.StatusBadRequest:
		return "malformed"
	case status == http.StatusUnauthorized:
		return "bad_signature"
	case status == http.StatusMethodNotAllowed:
		return "bad_method"
	case status == http.StatusRequestEntityTooLarge:
		return "too_large"
	case status == http.StatusServiceUnavailable:
		return "busy" // every unauthenticated read slot was taken: GitHub redelivers later
	case status >= 500:
		return "error"
	}
	return "rejected"
}

// Webhooks counts every delivery that reaches next, by event and by what next answered.
func (m *Metrics) Webhooks(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r)
		m.webhooks.WithLabelValues(eventLabel(r.Header.Get("X-GitHub-Event")), webhookOutcome(sw.status)).Inc()
	})
}

type statusWriter struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wroteHeader {
		w.status, w.wroteHeader = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	w.wroteHeader = true
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// GitHub is a client middleware (githubapp.WithClientMiddleware takes it as is) that counts
// requests to GitHub, their failures and latency, and records the rate-limit budget GitHub
// reports in its x-ratelimit-* headers. A GraphQL rate-limit error answered with HTTP 200 is
// not seen here (the body is not read); ghboard turns it into a retry.
func (m *Metrics) GitHub(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		api := "rest"
		if strings.HasSuffix(strings.TrimRight(r.URL.Path, "/"), "/graphql") {
			api = "graphql"
		}
		start := time.Now()
		spend.Add(r.Context())
		resp, err := next.RoundTrip(r)
		m.githubLatency.WithLabelValues(api).Observe(time.Since(start).Seconds())
		if err != nil {
			m.githubRequests.WithLabelValues(api, "error").Inc()
			m.githubErrors.WithLabelValues(api, "transport").Inc()
			return resp, err
		}
		m.githubRequests.WithLabelValues(api, strconv.Itoa(resp.StatusCode)).Inc()
		if reason := failure(resp); reason != "" {
			m.githubErrors.WithLabelValues(api, reason).Inc()
		}
		if v := resp.Header.Get("X-RateLimit-Remaining"); v != "" {
			if n, err := strconv.ParseFloat(v, 64); err == nil {
				resource := resp.Header.Get("X-RateLimit-Resource")
				if resource == "" {
					resource = map[string]string{"rest": "core", "graphql": "graphql"}[api]
				}
				m.rateRemaining.WithLabelValues(resourceLabel(resource)).Set(n)
			}
		}
		return resp, nil
	})
}

// failure classifies a GitHub answer; "" means success (or a 404/304 callers expect).
func failure(resp *http.Response) string {
	switch s := resp.StatusCode; {
	case s == http.StatusTooManyRequests,
		s == http.StatusForbidden && (resp.Header.Get("Retry-After") != "" || resp.Header.Get("X-RateLimit-Remaining") == "0"):
		return "rate_limited"
	case s >= 500:
		return "server_error"
	case s >= 400 && s != http.StatusNotFound:
		return "client_error"
	}
	return ""
}

// resourceLabel bounds the resource label to GitHub's documented resources.
func resourceLabel(r string) string {
	switch r {
	case "core", "graphql", "search", "code_search", "integration_manifest", "source_import",
		"code_scanning_upload", "actions_runner_registration", "scim", "dependency_snapshots", "audit_log":
		return r
	}
	return "other"
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
