package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestBenchQuickJSON runs `bench --quick --json` (shrunk further: this is a check of the
// report, not a measurement; a shorter reorder window than the simulator world's 2 s saves a
// third of its time) and checks that every figure issue 9 names is present and sane.
// Benchmarks are tools, not tests: no timing is asserted beyond being a number.
func TestBenchQuickJSON(t *testing.T) {
	t.Parallel() // waits on simulated GitHub far more than it computes
	code, out, errOut := runCLI(t, "", "bench", "--quick", "--json", "--rtt", "5ms", "--rate", "200",
		"--webhooks", "20", "--samples", "3", "--burst", "24", "--concurrency", "8", "--reconcile", "150", "--storm", "6", "--storm-timeout", "90s", "--reorder-window", "500ms")
	if code != exitOK {
		t.Fatalf("bench exited %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "bench: burst:") {
		t.Errorf("no progress lines on stderr:\n%s", errOut)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, out)
	}
	number := func(key string) float64 {
		t.Helper()
		v, ok := r[key].(float64)
		if !ok {
			t.Errorf("%s = %v, want a number", key, r[key])
		}
		return v
	}
	for _, key := range []string{"ack_p50_ms", "ack_p99_ms", "revert_p50_ms", "revert_p99_ms",
		"revert_p50_rtt_multiple", "comment_p50_rtt_multiple", "burst_events_per_s", "peak_rss_mb"} {
		if v := number(key); v <= 0 {
			t.Errorf("%s = %v, want > 0", key, v)
		}
	}
	if v := number("rtt_ms"); v != 5 {
		t.Errorf("rtt_ms = %v, want 5", v)
	}
	// No change is hidden from the app in the benchmark: no provisional revert is withdrawn.
	if v := number("provisional_withdrawn"); v != 0 {
		t.Errorf("provisional_withdrawn = %v, want 0", v)
	}
	if made, all := number("burst_made_s"), number("burst_reverted_all_s"); made <= 0 || all <= 0 {
		t.Errorf("burst_made_s = %v, burst_reverted_all_s = %v: want the times", made, all)
	}
	if p50, p99 := number("ack_p50_ms"), number("ack_p99_ms"); p99 < p50 {
		t.Errorf("ack p99 %v < p50 %v", p99, p50)
	}
	if p50, p99 := number("revert_p50_ms"), number("revert_p99_ms"); p99 < p50 {
		t.Errorf("revert p99 %v < p50 %v", p99, p50)
	}
	// A revert needs at least a read and a write: two round trips.
	if m := number("revert_p50_rtt_multiple"); m < 2 {
		t.Errorf("revert_p50_rtt_multiple = %v: less than the two round trips a revert needs", m)
	}
	if c, rv := number("comment_p50_rtt_multiple"), number("revert_p50_rtt_multiple"); c < rv {
		t.Errorf("the comment (%v × RTT) came before the revert (%v × RTT)", c, rv)
	}
	for _, key := range []string{"calls_per_illegal_event", "calls_per_legal_event", "calls_per_cascade_50"} {
		if v := number(key); v < 1 || v > 20 {
			t.Errorf("%s = %v, want a handful of calls", key, v)
		}
	}
	if number("calls_per_illegal_event") <= number("calls_per_legal_event") {
		t.Error("an illegal event (read, revert, comment) must cost more than a legal one (read)")
	}
	if v := number("burst_events"); v != 24 {
		t.Errorf("burst_events = %v, want 24", v)
	}
	if v := number("burst_lost"); v != 0 {
		t.Errorf("burst_lost = %v, want 0", v)
	}
	if v := number("reconcile_items"); v != 150 {
		t.Errorf("reconcile_items = %v, want 150", v)
	}
	// 150 items are two pages.
	if v := number("reconcile_graphql_reads"); v < 2 {
		t.Errorf("reconcile_graphql_reads = %v, want at least the 2 pages", v)
	}
	// The burst's requests per legal event, and the storm: every move back and explained within
	// the time limit (6 moves, 90 s), with the secondary limits on by default.
	if v := number("burst_requests_per_legal_event"); v <= 0 {
		t.Errorf("burst_requests_per_legal_event = %v, want > 0 (every legal move is at least read)", v)
	}
	// When the burst was decided and reverted, and where its requests went.
	done, last := number("burst_done_s"), number("burst_decided_last_s")
	if done <= 0 || done < last {
		t.Errorf("burst_done_s = %v, burst_decided_last_s = %v: want done > 0 and not before the last decision", done, last)
	}
	kinds, ok := r["burst_requests_by_kind"].(map[string]any)
	total := 0.0
	for _, n := range kinds {
		v, _ := n.(float64)
		total += v
	}
	if !ok || total != number("burst_api_calls") {
		t.Errorf("burst_requests_by_kind = %v, want the %v requests of the burst split by kind", r["burst_requests_by_kind"], r["burst_api_calls"])
	}
	if on, _ := r["secondary_limits"].(bool); !on {
		t.Errorf("secondary_limits = %v, want true by default", r["secondary_limits"])
	}
	number("secondary_limit_answers")
	if v := number("storm_events"); v != 6 {
		t.Errorf("storm_events = %v, want 6", v)
	}
	if to, _ := r["storm_timed_out"].(bool); to {
		t.Fatalf("a storm of 6 moves timed out: %v of 6 reverted, %v explained", r["storm_reverted"], r["storm_explained"])
	}
	revert, explain := number("storm_revert_all_s"), number("storm_explain_all_s")
	if revert <= 0 || explain < revert {
		t.Errorf("storm_revert_all_s = %v, storm_explain_all_s = %v: want both > 0, the explanation not before its revert", revert, explain)
	}
	if v, e := number("storm_reverted"), number("storm_explained"); v != 6 || e != 6 {
		t.Errorf("storm_reverted = %v, storm_explained = %v, want 6 and 6", v, e)
	}
	// Each move is at least read and reverted (reverts may share a request), and explained.
	if v := number("storm_requests"); v < 3 {
		t.Errorf("storm_requests = %v, want the reads, reverts and comments of 6 moves", v)
	}
	if v := number("storm_secondary_limit_answers"); v < 0 {
		t.Errorf("storm_secondary_limit_answers = %v", v)
	}
	if targets, ok := r["targets"].([]any); !ok || len(targets) < 9 {
		t.Errorf("targets = %v, want every target of issue 9", r["targets"])
	}

	// The table names every figure too.
	// With the secondary limits off, and a storm given no time: the table says how far it got.
	code, out, errOut = runCLI(t, "", "bench", "--quick", "--rtt", "5ms", "--rate", "200", "--webhooks", "10",
		"--samples", "2", "--burst", "8", "--concurrency", "4", "--reconcile", "120", "--storm", "4", "--storm-timeout", "1ms",
		"--secondary-limits=false")
	if code != exitOK {
		t.Fatalf("bench (table) exited %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"webhook ack p50 / p99", "receipt → revert", "receipt → comment", "API calls per illegal event",
		"API calls per cascade of 50", "burst of 8 moves", "peak RSS", "reconcile 120 items", "× RTT", "CPUs",
		"burst: app requests per legal event", "burst decided and reverted", "secondary rate limits", "off", "storm of 4 moves by one actor",
		"of 4 reverted within 0.001 s", "of 4 explained within", "target missed: storm_revert_all"} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
}

func TestBenchUsage(t *testing.T) {
	for _, args := range [][]string{{"bench", "--rtt", "-1s"}, {"bench", "--reconcile", "ten"}, {"bench", "extra"},
		{"bench", "--storm", "-5"}, {"bench", "--storm-timeout", "-1s"}, {"bench", "--secondary-limits=maybe"},
		{"bench", "--reorder-window", "-2s"}} {
		if code, _, _ := runCLI(t, "", args...); code != exitUsage {
			t.Errorf("%v exited %d, want %d", args, code, exitUsage)
		}
	}
}
