package enforce

import (
	"strings"
	"sync"
	"time"
)

// The jobs of reports a walk together settled.
//
// JudgeWaiting judges an item's reports without their jobs; the jobs come back afterwards, as
// the durable record of the work, and each used to walk the item again to find nothing left —
// about eight store statements each, beside River's fetch and completion, at the moment the
// next sweep's items are being judged. When a walk together allowed a report and left its
// item with nothing at all to do (no refusal, no revert, nothing unexplained, no report
// pending, no automation left), the report's decision is remembered here, and its job,
// coming back in this process, ends at once with it. A job on another replica, or after a
// restart, walks as before; so does the job of a report that was refused or ignored, whose
// item has an echo of our revert or an explanation that a job may have to finish.

// settledJobAge is how long a settled report is remembered for its job (which comes back
// within seconds: its item's due + proofRecheck).
const settledJobAge = 5 * time.Minute

// settledJobsMax bounds the list; past it, it is pruned to half (those jobs walk).
const settledJobsMax = 50_000

// judgedReport is a report a walk together allowed, with what its job would have returned.
type judgedReport struct {
	delivery string
	issue    int
	res      Result
}

type settledJob struct {
	judgedReport
	at time.Time
}

// settledJobs are the reports whose jobs have nothing left to do, in this process.
type settledJobs struct {
	mu    sync.Mutex
	jobs  map[string]settledJob
	ended int // jobs ended from the list (tests)
}

// add remembers the reports of a walk together that left its item settled.
func (s *settledJobs) add(now time.Time, reports []judgedReport) {
	if len(reports) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.jobs == nil {
		s.jobs = map[string]settledJob{}
	}
	if len(s.jobs)+len(reports) > settledJobsMax {
		s.pruneLocked(now)
	}
	for _, r := range reports {
		s.jobs[r.delivery] = settledJob{judgedReport: r, at: now}
	}
}

// pruneLocked forgets reports older than settledJobAge, then any until the list is half full
// (their jobs walk, as without the list).
func (s *settledJobs) pruneLocked(now time.Time) {
	for d, j := range s.jobs {
		if now.Sub(j.at) > settledJobAge || len(s.jobs) > settledJobsMax/2 {
			delete(s.jobs, d)
		}
	}
}

// take returns (and forgets) a settled report's decision, if its walk together is known here
// and recent.
func (s *settledJobs) take(delivery string, now time.Time) (judgedReport, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[delivery]
	if !ok {
		return judgedReport{}, false
	}
	delete(s.jobs, delivery)
	if now.Sub(j.at) > settledJobAge {
		return judgedReport{}, false
	}
	s.ended++
	return j.judgedReport, true
}

// settledTogether reports whether a walk together left its item with nothing for the jobs to
// do (see above); the walk must have ended without an error.
func (w *walk) settledTogether() bool {
	return w.together && w.explainedAll && w.refused.DeliveryID == "" && !w.reverted &&
		len(w.pending) == 0 && w.found && w.rec.settled()
}

// noteJudged remembers a report a walk together allowed (not one nobody reported: it has no job).
func (w *walk) noteJudged(o Observation, res Result) {
	if w.together && res.Verdict == VerdictAllowed && o.DeliveryID != "" && !strings.HasPrefix(o.DeliveryID, unobservedPrefix) {
		w.judged = append(w.judged, judgedReport{delivery: o.DeliveryID, issue: w.rec.IssueNumber, res: res})
	}
}
