package app

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/policy"
	"github.com/ralph-gate/ralph-gate/redeliver"
)

// sweeps runs the redelivery sweeps enforcement asks for when an item's history has a gap
// (enforce.Redeliveries): requests are coalesced, so a burst of gaps costs one sweep (and at
// most one more for the requests that came in while it ran).
type sweeps struct {
	sweeper *redeliver.Sweeper

	mu      sync.Mutex
	pending bool
	wake    chan struct{}
}

func newSweeps(sw *redeliver.Sweeper) *sweeps {
	return &sweeps{sweeper: sw, wake: make(chan struct{}, 1)}
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
			log.Warn().Err(err).Msg("gap sweep failed")
		default:
			log.Debug().Int("redelivered", rep.Redelivered).Bool("complete", rep.Complete).Msg("gap sweep")
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

// minSweepGap is the shortest time between the starts of two gap sweeps.
const minSweepGap = time.Second
