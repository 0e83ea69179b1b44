package app

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/internal/drain"
	"github.com/ralph-gate/ralph-gate/policy"
	"github.com/ralph-gate/ralph-gate/redeliver"
)

// sweeps runs the redelivery sweeps enforcement asks for when an item's history has a gap
// (enforce.Redeliveries): requests are coalesced, so a burst of gaps costs one sweep (and at
// most one more for the requests that came in while it ran).
type sweeps struct {
	sweeper *redeliver.Sweeper
	// judge, when set, judges the items a completed sweep's proof released
	// (enforce.Enforcer.JudgeWaiting); it runs beside the sweeps, one call at a time.
	judge func(ctx context.Context) (int, error)
	// sweepDue, when set, says whether an item waiting for a proof is past its due: a sweep
	// is then asked for (their jobs stay away meanwhile; enforce/batch.go).
	sweepDue func() bool
	// revertNow, when set, reverts at once the refused moves the intake listed
	// (enforce.Enforcer.RevertAtOnce); it runs whenever listed tells, beside the judging.
	revertNow func(ctx context.Context) int
	listed    <-chan struct{}

	mu      sync.Mutex
	pending bool
	wake    chan struct{}
	proved  chan struct{} // a sweep completed: judge what it released
	judging drain.Group
}

// drain waits until the judging under way ends, or ctx does.
func (s *sweeps) drain(ctx context.Context) error { return s.judging.Wait(ctx) }

func newSweeps(sw *redeliver.Sweeper) *sweeps {
	return &sweeps{sweeper: sw, wake: make(chan struct{}, 1), proved: make(chan struct{}, 1)}
}

// runJudge judges what each completed sweep released until ctx ends; sweeps completing while
// it judges are coalesced into one more call. The judging runs under work, which ctx's end does
// not cancel: a shutdown lets it finish (drain), as it lets running jobs finish.
func (s *sweeps) runJudge(ctx, work context.Context) {
	if s.judge == nil {
		return
	}
	log := zerolog.Ctx(ctx)
	tick := time.NewTicker(dueTick)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if s.sweepDue != nil && s.sweepDue() {
				s.RequestSweep(ctx)
			}
			continue
		case <-s.proved:
		}
		began := time.Now()
		s.judging.Add()
		n, err := s.judge(work)
		s.judging.Done()
		if err != nil && ctx.Err() == nil {
			log.Warn().Err(err).Msg("could not judge the items a sweep released")
		} else if n > 0 {
			log.Debug().Int("items", n).Dur("took", time.Since(began)).Msg("judged the items a sweep released")
		}
	}
}

// runRevertsAtOnce reverts the moves listed to be reverted at once as soon as they are listed,
// until ctx ends. Each wake starts a writing of its own: an installation being written takes
// its moves listed meanwhile together, and another installation's are written beside it, not
// after it (enforce.Enforcer.RevertAtOnce). Like the judging, the writing runs under work and
// drains at shutdown.
func (s *sweeps) runRevertsAtOnce(ctx, work context.Context) {
	if s.revertNow == nil {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.listed:
		}
		s.judging.Add()
		go func() {
			defer s.judging.Done()
			s.revertNow(work)
		}()
	}
}

// RequestSweep implements enforce.Redeliveries.
func (s *sweeps) RequestSweep(context.Context) {
	s.mu.Lock()
	s.pending = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// SweepProof implements enforce.Redeliveries.
func (s *sweeps) SweepProof(ctx context.Context) (policy.SweepProof, error) {
	p, err := s.sweeper.Proof(ctx)
	return policy.SweepProof{Available: true, Since: p.Since, Until: p.Until, Full: p.Full}, err
}

// run serves requests until ctx ends.
func (s *sweeps) run(ctx context.Context) {
	log := zerolog.Ctx(ctx)
	failures := 0 // sweeps failed in a row
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		}
		s.mu.Lock()
		pending := s.pending
		s.pending = false
		s.mu.Unlock()
		if !pending {
			continue
		}
		// Only what is newer than the proof needs listing (a full sweep when there is none).
		p, err := s.sweeper.Proof(ctx)
		if err != nil {
			log.Warn().Err(err).Msg("could not read the redelivery proof")
		}
		began := time.Now()
		rep, err := s.sweeper.SweepSince(ctx, p.Until)
		var ra *redeliver.RetryAfterError
		switch {
		case errors.As(err, &ra):
			log.Warn().Int64("retry_after_ms", ra.Wait.Milliseconds()).Msg("github asked the gap sweep to wait")
			s.RequestSweep(ctx) // the next sweep waits out the retry-after itself
			select {
			case <-ctx.Done():
				return
			case <-time.After(ra.Wait):
			}
		case err != nil && ctx.Err() == nil:
			// (A store that cannot write, a GitHub that fails: the next sweep waits longer
			// each time, up to a minute, rather than a second.)
			failures++
			wait := min(minSweepGap<<min(failures, 6), maxSweepBackoff)
			log.Warn().Err(err).Int("failures", failures).Dur("next_in", wait).Msg("gap sweep failed")
			s.RequestSweep(ctx) // what asked for it still waits
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		default:
			failures = 0
			log.Debug().Int("redelivered", rep.Redelivered).Bool("complete", rep.Complete).Msg("gap sweep")
			if rep.Complete {
				select {
				case s.proved <- struct{}{}:
				default:
				}
			}
		}
		// At most one sweep a second: under steady traffic items keep coming due, and each
		// sweep costs at least one request of the App's.
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(began.Add(minSweepGap))):
		}
	}
}

// dueTick is how often the items waiting for a proof are looked at for one past its due: a
// sweep is asked for within this of the moment one could prove it.
const dueTick = 50 * time.Millisecond

// minSweepGap is the shortest time between the starts of two gap sweeps; maxSweepBackoff the
// longest wait after sweeps that failed in a row.
const (
	minSweepGap     = time.Second
	maxSweepBackoff = time.Minute
)
