package enforce

import (
	"fmt"
	"testing"
	"time"
)

func TestSettledJobsAreTakenOnceAndForgotten(t *testing.T) {
	var s settledJobs
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	s.add(t0, []judgedReport{{delivery: "d1", issue: 7, res: Result{Verdict: VerdictAllowed, Reason: "ok"}}})
	if r, ok := s.take("d1", t0.Add(time.Second)); !ok || r.issue != 7 || r.res.Verdict != VerdictAllowed {
		t.Fatalf("take(d1) = %+v, %v", r, ok)
	}
	if _, ok := s.take("d1", t0.Add(time.Second)); ok {
		t.Error("a settled report was taken twice")
	}
	s.add(t0, []judgedReport{{delivery: "d2"}})
	if _, ok := s.take("d2", t0.Add(settledJobAge+time.Second)); ok {
		t.Error("a report settled too long ago ended its job without a walk")
	}
	for i := range settledJobsMax + 10 {
		s.add(t0, []judgedReport{{delivery: fmt.Sprint(i)}})
	}
	if n := len(s.jobs); n > settledJobsMax {
		t.Errorf("%d remembered, more than %d", n, settledJobsMax)
	}
}
