package bench

import (
	"math"
	"testing"
	"time"
)

func TestPercentileIsNearestRank(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct{ p, want float64 }{{50, 50}, {99, 99}, {100, 100}, {1, 1}} {
		if got := percentile(ds, c.p); got != c.want {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
	if !math.IsNaN(percentile(nil, 50)) {
		t.Error("the percentile of nothing must be NaN (reported as null)")
	}
	if num(math.NaN()) != nil || *num(2.5) != 2.5 {
		t.Error("num must turn NaN into null and keep numbers")
	}
	if !math.IsNaN(ratio(1, 0)) || ratio(125, 50) != 2.5 {
		t.Error("ratio")
	}
}

func TestBurstIsHalfIllegal(t *testing.T) {
	numbers := make([]int, 1000)
	for i := range numbers {
		numbers[i] = i + 1
	}
	illegal, logins := 0, map[string]bool{}
	for _, m := range burstMoves(numbers) {
		if m.illegal {
			illegal++
		}
		logins[m.login] = true
	}
	if illegal != 500 {
		t.Errorf("%d illegal moves of 1000, want 500", illegal)
	}
	if len(logins) != len(humans)+len(agents) {
		t.Errorf("moves by %d users, want every seeded user", len(logins))
	}
}

func TestTargetsCoverIssue9(t *testing.T) {
	r := &Result{AckRate: 100, CascadeChildren: 50, BurstEvents: 1000}
	names := map[string]bool{}
	for _, v := range targets(r) {
		names[v.Name] = true
		if v.Met != nil && v.Name != "burst_lost" {
			t.Errorf("%s: a figure that was not measured cannot be met or missed", v.Name)
		}
	}
	for _, want := range []string{"ack_p99", "revert_p50", "comment_p50", "calls_per_illegal_event", "calls_per_legal_event",
		"calls_per_cascade", "burst_lost", "peak_rss", "reconcile_reads"} {
		if !names[want] {
			t.Errorf("no target %s", want)
		}
	}
}
