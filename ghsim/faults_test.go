package ghsim

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestFaultsAPI(t *testing.T) {
	s := startSim(t, testSeed(t), Options{})
	r := s.do("POST", "/_sim/faults", "", map[string]any{"latency_ms": 5, "error_rate": 0.25, "operations": []string{"graphql:*"},
		"webhook": map[string]any{"drop_rate": 0.5, "reorder": true}})
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	var f Faults
	s.do("GET", "/_sim/faults", "", nil).json(t, &f)
	if f.LatencyMS != 5 || f.ErrorRate != 0.25 || !f.Webhook.Reorder || f.Webhook.DropRate != 0.5 || f.Operations[0] != "graphql:*" {
		t.Fatalf("faults %+v", f)
	}
	if r := s.do("POST", "/_sim/faults", "", map[string]any{"error_rate": 2}); r.status != 400 {
		t.Fatalf("bad rate accepted: %d", r.status)
	}
	if r := s.do("POST", "/_sim/faults", "", map[string]any{"eror_rate": 1}); r.status != 400 {
		t.Fatalf("unknown key accepted: %d", r.status)
	}
}

func TestLatencyAndJitter(t *testing.T) {
	s := startSim(t, testSeed(t), Options{})
	if err := s.SetFaults(Faults{LatencyMS: 120}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if r := s.do("GET", "/api/v3/repos/acme/app/issues/1", "bearer alice-token", nil); r.status != 200 {
		t.Fatal(r.status)
	}
	if d := time.Since(start); d < 120*time.Millisecond {
		t.Fatalf("latency not applied: %v", d)
	}
	_ = s.SetFaults(Faults{JitterMS: 40})
	for range 6 {
		s.gqlOK("alice-token", `{ viewer { login } }`, nil)
	}
	seen := map[int]bool{}
	for _, e := range s.Requests().Entries[1:] {
		if e.LatencyMS < 0 || e.LatencyMS > 40 {
			t.Fatalf("jitter out of range: %d", e.LatencyMS)
		}
		seen[e.LatencyMS] = true
	}
	if len(seen) < 2 {
		t.Fatalf("jitter does not vary: %v", seen)
	}
}

func TestErrorRateAndOperationFilter(t *testing.T) {
	s := startSim(t, testSeed(t), Options{})
	b := s.board("alice-token")
	_ = s.SetFaults(Faults{ErrorRate: 1, Operations: []string{"graphql:updateProjectV2ItemFieldValue"}})
	s.board("alice-token") // reads are not targeted
	out := s.gql("alice-token", setStateMutation, map[string]any{"p": b.project, "i": b.items[1], "f": b.field, "o": b.options["Done"]})
	if out.raw.status != 502 || !strings.Contains(string(out.raw.body), "Server Error") {
		t.Fatalf("%d %s", out.raw.status, out.raw.body)
	}
	if is, _ := s.State().Issue("app", 1); is.Fields["Workflow State"] != "Backlog" {
		t.Fatal("a failed request changed the world")
	}
	log := s.Requests()
	if last := log.Entries[len(log.Entries)-1]; last.Fault != "error" || last.Status != 502 || log.Counts["fault:error"] != 1 {
		t.Fatalf("log: %+v %v", last, log.Counts)
	}
}

func TestSecondaryRateLimit(t *testing.T) {
	s := startSim(t, testSeed(t), Options{})
	tok := s.installationToken()
	_ = s.SetFaults(Faults{SecondaryRateLimitRate: 1, RetryAfterS: 2})
	r := s.do("GET", "/api/v3/repos/acme/app/issues/1", "token "+tok, nil)
	if r.status != 403 || r.header.Get("Retry-After") != "2" || !strings.Contains(string(r.body), "secondary rate limit") {
		t.Fatalf("%d %v %s", r.status, r.header, r.body)
	}
	_ = s.SetFaults(Faults{})
	// Retrying before retry-after is refused again and flagged in the log.
	if r := s.do("GET", "/api/v3/repos/acme/app/issues/1", "token "+tok, nil); r.status != 403 || r.header.Get("Retry-After") == "" {
		t.Fatalf("early retry: %d", r.status)
	}
	// Other identities are not affected.
	if r := s.do("GET", "/api/v3/repos/acme/app/issues/1", "bearer alice-token", nil); r.status != 200 {
		t.Fatalf("other identity: %d", r.status)
	}
	time.Sleep(2100 * time.Millisecond)
	if r := s.do("GET", "/api/v3/repos/acme/app/issues/1", "token "+tok, nil); r.status != 200 {
		t.Fatalf("after retry-after: %d", r.status)
	}
	log := s.Requests()
	var flags []string
	for _, e := range log.Entries {
		if e.Identity == "installation:2002" && e.Path == "/api/v3/repos/acme/app/issues/1" {
			if e.Status == 403 && e.RetryAfter <= 0 {
				t.Fatalf("403 without retry-after: %+v", e)
			}
			flags = append(flags, fmt.Sprintf("%d/%s/%v", e.Status, e.Fault, e.EarlyRetry))
		}
	}
	if want := "[403/secondary_rate_limit/false 403/secondary_rate_limit/true 200//false]"; fmt.Sprint(flags) != want {
		t.Fatalf("log %v, want %s", flags, want)
	}
	if log.Counts["fault:early_retry"] != 1 {
		t.Fatalf("counts %v", log.Counts)
	}
}

func TestPrimaryExhausted(t *testing.T) {
	s := startSim(t, testSeed(t), Options{})
	_ = s.SetFaults(Faults{PrimaryExhausted: true})
	r := s.do("GET", "/api/v3/repos/acme/app/issues/1", "bearer alice-token", nil)
	if r.status != 403 || r.header.Get("X-Ratelimit-Remaining") != "0" || r.header.Get("X-Ratelimit-Reset") == "" || !strings.Contains(string(r.body), "API rate limit exceeded") {
		t.Fatalf("REST: %d %v %s", r.status, r.header, r.body)
	}
	g := s.gql("alice-token", `{ viewer { login } }`, nil)
	if g.raw.status != 200 || len(g.Errors) != 1 || g.Errors[0]["type"] != "RATE_LIMITED" || g.Data != nil {
		t.Fatalf("GraphQL: %d %s", g.raw.status, g.raw.body)
	}
}

func TestWebhookFaults(t *testing.T) {
	rc := newReceiver(t)
	s := startSim(t, testSeed(t), Options{WebhookURL: rc.URL})
	b := s.board("alice-token")

	_ = s.SetFaults(Faults{Webhook: WebhookFaults{DropRate: 1}})
	s.setState("alice-token", b, 1, "Research Needed")
	s.waitIdle()
	if len(rc.all()) != 0 {
		t.Fatal("dropped webhook arrived")
	}
	if ds := s.Deliveries(); len(ds) != 1 || !ds[0].Dropped || ds[0].Success() || ds[0].StatusCode != 0 {
		t.Fatalf("dropped delivery record: %+v", ds)
	}

	_ = s.SetFaults(Faults{Webhook: WebhookFaults{DuplicateRate: 1}})
	s.setState("alice-token", b, 1, "Ready for Plan")
	s.waitIdle()
	got := rc.all()
	if len(got) != 2 || got[0].header.Get("X-GitHub-Delivery") != got[1].header.Get("X-GitHub-Delivery") || string(got[0].body) != string(got[1].body) {
		t.Fatalf("duplicate: %d", len(got))
	}

	_ = s.SetFaults(Faults{Webhook: WebhookFaults{Reorder: true, DelayMS: 400}}) // a wide window keeps the test robust on a busy machine
	s.setState("alice-token", b, 1, "Plan in Progress")
	s.setState("alice-token", b, 1, "Plan in Review")
	s.waitIdle()
	got = rc.all()[2:]
	var order []string
	for _, w := range got {
		var p map[string]any
		_ = json.Unmarshal(w.body, &p)
		order = append(order, dig(p, "changes", "field_value", "to", "name").(string))
	}
	if fmt.Sprint(order) != "[Plan in Review Plan in Progress]" {
		t.Fatalf("reorder: %v", order)
	}

	_ = s.SetFaults(Faults{Webhook: WebhookFaults{DelayMS: 200}})
	start := time.Now()
	s.setState("alice-token", b, 1, "In Progress")
	s.waitIdle()
	if d := time.Since(start); d < 200*time.Millisecond || len(rc.all()) != 5 {
		t.Fatalf("delay %v, %d webhooks", d, len(rc.all()))
	}
}

func TestFaultDrawsAreDeterministic(t *testing.T) {
	run := func() string {
		s := startSim(t, testSeed(t), Options{RandomSeed: 42})
		// A long retry-after keeps the outcome independent of timing.
		_ = s.SetFaults(Faults{ErrorRate: 0.3, SecondaryRateLimitRate: 0.1, RetryAfterS: 3600})
		var out []string
		for i := range 30 {
			// Rotate identities so a secondary limit does not shadow later draws.
			tok := []string{"alice-token", "bob-token", "agent1-token", "agent2-token"}[i%4]
			out = append(out, fmt.Sprint(s.do("GET", "/api/v3/repos/acme/app/issues/1", "bearer "+tok, nil).status))
		}
		return strings.Join(out, ",")
	}
	a, b := run(), run()
	if a != b || !strings.Contains(a, "502") || !strings.Contains(a, "200") {
		t.Fatalf("runs differ or show no faults:\n%s\n%s", a, b)
	}
}
