// Package redeliver is the redelivery sweeper. GitHub does not redeliver a failed webhook by
// itself (a delivery fails when the app is down, slow for more than 10 s, or answers 5xx); it
// keeps failed deliveries listable for three days (GET /app/hook/deliveries, app JWT) and
// redelivers one on request (POST /app/hook/deliveries/{id}/attempts, answered 202), keeping
// its X-GitHub-Delivery, so the queue's uniqueness by delivery id makes a redelivery harmless.
//
// A sweep is bounded (pages listed, redeliveries per sweep, attempts per delivery) and
// idempotent: what it redelivered is remembered in the store, so a delivery is not redelivered
// again until GitHub has recorded a newer failed attempt. It honours GitHub's retry-after and
// rate-limit resets, also across sweeps. It must not import enforce, jobs or app.
package redeliver

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/google/go-github/v89/github"
	"github.com/rs/zerolog"
)

// Hooks is the part of go-github's AppsService the sweeper uses (JWT-authenticated).
type Hooks interface {
	ListHookDeliveries(ctx context.Context, opts *github.ListCursorOptions) ([]*github.HookDelivery, *github.Response, error)
	RedeliverHookDelivery(ctx context.Context, deliveryID int64) (*github.HookDelivery, *github.Response, error)
	GetHookDelivery(ctx context.Context, deliveryID int64) (*github.HookDelivery, *github.Response, error)
}

// Ingest takes in a delivery's event as GitHub recorded it (its payload, sender included),
// under its own delivery GUID: what the app would have done had the delivery arrived.
type Ingest func(ctx context.Context, event, guid string, payload []byte) error

// Suspect is a delivery whose signed body the app had received before under another delivery
// id (the id is outside the signature): a replay, unless GitHub's log lists the id (the same
// move made twice in one second has one body).
type Suspect struct {
	DeliveryID, Event string
	Body              []byte
	ReceivedAt        time.Time
}

// Suspects keeps the deliveries held until a sweep tells (the app's store).
type Suspects interface {
	Suspects(ctx context.Context) ([]Suspect, error)
	DropSuspect(ctx context.Context, deliveryID string) error
}

// suspectPatience is how long a held delivery GitHub's log does not list may still show up
// there before it is taken for a replay.
const suspectPatience = time.Minute

// Cursors keeps the sweeper's memory (store.Store implements it).
type Cursors interface {
	GetCursor(ctx context.Context, name string) (string, error)
	PutCursor(ctx context.Context, name, value string) error
}

// CursorName is where the sweeper keeps its memory.
const CursorName = "redeliver/state"

// Options bound one sweep; zero values take the defaults.
type Options struct {
	// MaxAge: older failures are left alone (GitHub redelivers for 3 days). Default 72h.
	MaxAge time.Duration
	// MaxPages of 100 deliveries listed per sweep. Default 10.
	MaxPages int
	// MaxGapPages of 100 deliveries listed by a sweep enforcement asks for (SweepSince): it
	// must reach back to the end of the newest proof, or it proves nothing and every change
	// of a burst waits enforcement.gap_hold. A burst of a few thousand moves (a column pasted
	// over) is more than MaxPages' thousand deliveries. Default 100; the Gate paces the
	// listing below GitHub's 900 points a minute per endpoint.
	MaxGapPages int
	// MaxPerSweep redeliveries per sweep. Default 50.
	MaxPerSweep int
	// MaxAttempts redeliveries of one delivery, ever. Default 3.
	MaxAttempts int
	// Patience before redelivering again a delivery GitHub shows no newer attempt of (the
	// redelivery may still be on its way). Default 10m.
	Patience time.Duration
	// Confirm bounds how long a sweep watches its redeliveries arrive (GitHub lists each
	// attempt with its status) before it gives up proving anything. Default 15s.
	Confirm time.Duration
	// ConfirmPoll is how often it looks. Default 250ms.
	ConfirmPoll time.Duration
	// Ingest, when set, takes in a delivery given up on (MaxAttempts reached) from GitHub's
	// record of it, so that its change is known with its real sender rather than found by the
	// reconciler as a change of nobody's; and a suspect delivery GitHub's log lists.
	Ingest Ingest
	// Suspects, when set (with Ingest), are the deliveries held as possible replays: one the
	// listing shows is taken in, one it does not show within suspectPatience is dropped.
	Suspects Suspects
}

func (o *Options) defaults() {
	if o.MaxAge <= 0 {
		o.MaxAge = 72 * time.Hour
	}
	if o.MaxPages <= 0 {
		o.MaxPages = 10
	}
	if o.MaxGapPages <= 0 {
		o.MaxGapPages = 100
	}
	if o.MaxPerSweep <= 0 {
		o.MaxPerSweep = 50
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 3
	}
	if o.Patience <= 0 {
		o.Patience = 10 * time.Minute
	}
	if o.Confirm <= 0 {
		o.Confirm = 15 * time.Second
	}
	if o.ConfirmPoll <= 0 {
		o.ConfirmPoll = 250 * time.Millisecond
	}
}

// Report is what one sweep did.
type Report struct {
	Pages       int // list requests
	Listed      int // deliveries seen
	Failed      int // deliveries (by GUID) whose newest attempt failed and none succeeded
	Redelivered int
	Waiting     int // redelivered recently, no newer attempt yet
	GaveUp      int // MaxAttempts reached
	Ingested    int // of those, taken in from GitHub's record by this sweep (Options.Ingest)
	Deferred    int // over MaxPerSweep: next sweep
	Confirmed   int // redeliveries GitHub listed as delivered (2xx) within Options.Confirm
	Requests    int // GitHub requests made
	// Suspects held as possible replays that GitHub's log listed (taken in), and that it did
	// not (dropped as replays).
	SuspectsTaken, Replays int
	// Complete: every failed delivery back to the horizon was redelivered and seen to arrive,
	// or has given up. A complete sweep proves that nothing failed before it began is missing.
	Complete bool
	// Paused says why the sweep stopped early ("" when it did not).
	Paused string
}

// Sweeper lists failed deliveries and redelivers them.
type Sweeper struct {
	mu      sync.Mutex // one sweep at a time (the reconciler sweeps before it judges drift)
	hooks   func(ctx context.Context) (Hooks, error)
	cursors Cursors
	opts    Options
	now     func() time.Time
	// toldGaveUp holds the deliveries given up whose warning this process logged (once each).
	toldGaveUp map[string]bool
	// known is the state as this process last made it, saved or not: a store that cannot
	// write must not make the sweeper forget what it redelivered (load merges it in).
	known *state
}

// New returns a sweeper; hooks returns a JWT-authenticated client (go-githubapp's
// NewAppClient().Apps) for each sweep.
func New(hooks func(ctx context.Context) (Hooks, error), cursors Cursors, opts Options, now func() time.Time) *Sweeper {
	opts.defaults()
	if now == nil {
		now = time.Now
	}
	return &Sweeper{hooks: hooks, cursors: cursors, opts: opts, now: now, toldGaveUp: map[string]bool{}}
}

// state is the sweeper's memory: per delivery GUID, what was redelivered and when, and until
// when GitHub asked the app to wait.
type state struct {
	NotBefore time.Time          `json:"not_before"`
	GUIDs     map[string]attempt `json:"guids"`
}

type attempt struct {
	N      int       `json:"n"`      // redeliveries requested
	At     time.Time `json:"at"`     // when the last one was requested
	Newest int64     `json:"newest"` // the newest attempt id GitHub showed then
	First  time.Time `json:"first"`  // when the delivery first failed (pruning)
	// Ingested: given up on, its event was taken from GitHub's record (Options.Ingest);
	// IngestTries: the tries that failed (at most MaxAttempts are made).
	Ingested    bool `json:"ingested,omitempty"`
	IngestTries int  `json:"ingest_tries,omitempty"`
}

// settleSuspects takes in each held delivery GitHub's listing shows (listed) and drops, as a
// replay, each one it should show and does not: received after covered (with slack for the
// two clocks) and more than suspectPatience ago. The others wait for a later sweep.
func (s *Sweeper) settleSuspects(ctx context.Context, listed func(guid string) bool, covered, now time.Time, rep *Report) error {
	if s.opts.Suspects == nil || s.opts.Ingest == nil {
		return nil
	}
	held, err := s.opts.Suspects.Suspects(ctx)
	if err != nil {
		return fmt.Errorf("suspect deliveries: %w", err)
	}
	log := zerolog.Ctx(ctx)
	for _, d := range held {
		switch {
		case now.Sub(d.ReceivedAt) > s.opts.MaxAge:
			// GitHub keeps its log no longer: held this long (it could not be taken in), it
			// never will be.
			log.Warn().Str("guid", d.DeliveryID).Str("event", d.Event).Time("received_at", d.ReceivedAt).
				Msg("dropped a held delivery older than GitHub's delivery log")
		case listed(d.DeliveryID):
			if err := s.opts.Ingest(ctx, d.Event, d.DeliveryID, d.Body); err != nil {
				log.Warn().Err(err).Str("guid", d.DeliveryID).Msg("could not take in a held delivery GitHub lists; the next sweep tries again")
				continue
			}
			rep.SuspectsTaken++
			log.Info().Str("guid", d.DeliveryID).Str("event", d.Event).Msg("took in a delivery whose body came before under another id: GitHub lists it")
		case !covered.IsZero() && d.ReceivedAt.After(covered.Add(proofSlack)) && now.Sub(d.ReceivedAt) > suspectPatience:
			rep.Replays++
			log.Warn().Str("guid", d.DeliveryID).Str("event", d.Event).Time("received_at", d.ReceivedAt).
				Msg("ignored a replayed delivery: its body came before under another id, and GitHub never made this one")
		default:
			continue
		}
		if err := s.opts.Suspects.DropSuspect(ctx, d.DeliveryID); err != nil {
			return fmt.Errorf("drop suspect delivery: %w", err)
		}
	}
	return nil
}

// ingest reads a delivery given up on from GitHub (its payload, as sent) and takes its event
// in; it returns the requests made.
func (s *Sweeper) ingest(ctx context.Context, hooks Hooks, guid string, d *github.HookDelivery) (int, error) {
	full, _, err := hooks.GetHookDelivery(ctx, d.GetID())
	if err != nil {
		return 1, fmt.Errorf("read delivery %d: %w", d.GetID(), err)
	}
	if full.GetRequest() == nil || full.GetRequest().RawPayload == nil {
		return 1, fmt.Errorf("delivery %d: GitHub's record holds no payload", d.GetID())
	}
	event := cmp.Or(full.GetEvent(), d.GetEvent())
	if err := s.opts.Ingest(ctx, event, guid, *full.GetRequest().RawPayload); err != nil {
		return 1, fmt.Errorf("take in delivery %d (%s): %w", d.GetID(), event, err)
	}
	return 1, nil
}

// Sweep lists the newest failed deliveries and redelivers them, within its bounds. A
// *RetryAfterError says GitHub asked to wait; the sweep remembers it and the next one waits.
func (s *Sweeper) Sweep(ctx context.Context) (Report, error) { return s.SweepSince(ctx, time.Time{}) }

// proofSlack widens a targeted sweep's horizon: GitHub's delivered_at and the change's time
// come from different clocks.
const proofSlack = 10 * time.Second

// SweepSince is a sweep of the failures since a time (zero: within MaxAge): enforcement asks
// for one back to the end of the current proof, so each lists only what is new. A complete
// sweep extends the proof (see Proof).
func (s *Sweeper) SweepSince(ctx context.Context, since time.Time) (Report, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.load(ctx)
	if err != nil {
		return Report{}, err
	}
	r := &sweep{s: s, st: st, now: s.now()}
	if r.now.Before(st.NotBefore) {
		r.rep.Paused = "github asked to wait until " + st.NotBefore.UTC().Format(time.RFC3339)
		return r.rep, nil
	}
	if r.hooks, err = s.hooks(ctx); err != nil {
		return r.rep, fmt.Errorf("github app client: %w", err)
	}
	horizon := r.now.Add(-s.opts.MaxAge)
	if !since.IsZero() && since.Add(-proofSlack).After(horizon) {
		horizon = since.Add(-proofSlack)
	}
	maxPages := s.opts.MaxPages
	if !since.IsZero() {
		maxPages = max(maxPages, s.opts.MaxGapPages)
	}
	l, err := r.list(ctx, horizon, maxPages)
	if err != nil {
		return r.stop(ctx, err)
	}
	covered := l.oldest // the listing shows every delivery since
	if l.all {
		covered = horizon
	}
	if err := s.settleSuspects(ctx, func(guid string) bool { return l.byGUID[guid] != nil }, covered, r.now, &r.rep); err != nil {
		return r.rep, err
	}
	redelivered, err := r.redeliverFailed(ctx, l.byGUID)
	if err != nil {
		return r.rep, err
	}
	for guid, a := range r.st.GUIDs {
		if a.First.Before(horizon) && a.At.Before(horizon) {
			delete(r.st.GUIDs, guid)
			delete(s.toldGaveUp, guid)
		}
	}
	if err := s.save(ctx, r.st); err != nil {
		return r.rep, err
	}
	return r.finish(ctx, l.all, horizon, redelivered)
}

// sweep is one run of SweepSince: what it read, its memory and its report so far.
type sweep struct {
	s     *Sweeper
	hooks Hooks
	st    state
	now   time.Time
	rep   Report
}

// guidInfo is what the listing shows of one delivery GUID.
type guidInfo struct {
	newest    *github.HookDelivery
	succeeded bool
	first     time.Time
}

// listing is the deliveries listed back to the horizon (all) or as far as the pages went.
type listing struct {
	byGUID map[string]*guidInfo
	oldest time.Time // the oldest delivery listed
	all    bool
}

// stop ends a sweep on an error: when GitHub asked to wait, it remembers until when.
func (r *sweep) stop(ctx context.Context, err error) (Report, error) {
	if wait, ok := waitFor(err, r.now); ok {
		r.st.NotBefore = r.now.Add(wait)
		r.rep.Paused = fmt.Sprintf("github asked to wait %s", wait)
		if serr := r.s.save(context.WithoutCancel(ctx), r.st); serr != nil {
			return r.rep, serr
		}
		return r.rep, &RetryAfterError{Wait: wait, Err: err}
	}
	return r.rep, err
}

// list reads the deliveries, newest first, back to the horizon or up to maxPages pages.
func (r *sweep) list(ctx context.Context, horizon time.Time, maxPages int) (listing, error) {
	l := listing{byGUID: map[string]*guidInfo{}}
	opt := &github.ListCursorOptions{PerPage: 100}
	for r.rep.Pages < maxPages {
		page, resp, err := r.s.list(ctx, r.hooks, opt, &r.rep)
		r.rep.Pages++
		if err != nil {
			return l, fmt.Errorf("list hook deliveries: %w", err)
		}
		if l.add(page, horizon, &r.rep) {
			l.all = true
			return l, nil // newest first: everything after is older
		}
		if resp == nil || resp.Cursor == "" || len(page) == 0 {
			l.all = true
			return l, nil
		}
		opt.Cursor = resp.Cursor
	}
	return l, nil
}

// add takes in a page of deliveries; it reports whether one was older than the horizon.
func (l *listing) add(page []*github.HookDelivery, horizon time.Time, rep *Report) bool {
	for _, d := range page {
		rep.Listed++
		at := d.GetDeliveredAt().Time
		if !at.IsZero() && at.Before(horizon) {
			return true
		}
		if l.oldest.IsZero() || at.Before(l.oldest) {
			l.oldest = at
		}
		g := l.byGUID[d.GetGUID()]
		if g == nil {
			g = &guidInfo{first: at}
			l.byGUID[d.GetGUID()] = g
		}
		if ok(d.GetStatusCode()) {
			g.succeeded = true
		}
		if g.newest == nil || d.GetID() > g.newest.GetID() {
			g.newest = d
		}
		if at.Before(g.first) {
			g.first = at
		}
	}
	return false
}

// redeliverFailed asks GitHub to redeliver each GUID that never succeeded, oldest first, as the
// attempts and the per-sweep bound allow; it returns the GUIDs redelivered, with the attempt.
func (r *sweep) redeliverFailed(ctx context.Context, byGUID map[string]*guidInfo) (map[string]int64, error) {
	var failed []string
	for guid, g := range byGUID {
		if !g.succeeded && guid != "" {
			failed = append(failed, guid)
		}
	}
	sort.Slice(failed, func(i, j int) bool { return byGUID[failed[i]].newest.GetID() < byGUID[failed[j]].newest.GetID() }) // oldest first
	r.rep.Failed = len(failed)
	redelivered := map[string]int64{} // GUID → the attempt redelivered
	for _, guid := range failed {
		g := byGUID[guid]
		a := r.st.GUIDs[guid]
		switch {
		case a.N >= r.s.opts.MaxAttempts:
			r.rep.GaveUp++
			if err := r.gaveUp(ctx, guid, g.newest, a); err != nil {
				return nil, err
			}
			continue
		case a.N > 0 && g.newest.GetID() <= a.Newest && r.now.Sub(a.At) < r.s.opts.Patience:
			r.rep.Waiting++ // our redelivery has not been attempted yet
			continue
		case r.rep.Redelivered >= r.s.opts.MaxPerSweep:
			r.rep.Deferred++
			continue
		}
		done, err := r.redeliver(ctx, guid, g, a)
		if err != nil {
			return nil, err
		}
		if done {
			redelivered[guid] = g.newest.GetID()
		}
	}
	return redelivered, nil
}

// redeliver asks GitHub to redeliver one delivery and remembers it; false when GitHub refused
// (logged, the next sweep tries again).
func (r *sweep) redeliver(ctx context.Context, guid string, g *guidInfo, a attempt) (bool, error) {
	log := zerolog.Ctx(ctx)
	_, _, err := r.hooks.RedeliverHookDelivery(ctx, g.newest.GetID())
	r.rep.Requests++
	var accepted *github.AcceptedError
	if err != nil && !errors.As(err, &accepted) {
		if _, limited := waitFor(err, r.now); limited {
			_, err := r.stop(ctx, fmt.Errorf("redeliver delivery %d: %w", g.newest.GetID(), err))
			return false, err
		}
		log.Warn().Err(err).Str("guid", guid).Int64("delivery", g.newest.GetID()).Msg("could not redeliver a failed webhook")
		return false, nil
	}
	// Remember before moving on: a crash now must not redeliver it again at once.
	r.st.GUIDs[guid] = attempt{N: a.N + 1, At: r.now, Newest: g.newest.GetID(), First: g.first}
	if err := r.s.save(ctx, r.st); err != nil {
		return false, err
	}
	r.rep.Redelivered++
	log.Info().Str("guid", guid).Int64("delivery", g.newest.GetID()).Str("event", g.newest.GetEvent()).
		Int("status_code", g.newest.GetStatusCode()).Int("attempt", a.N+1).Msg("redelivered a failed webhook")
	return true, nil
}

// gaveUp handles a delivery redelivered MaxAttempts times: its event is taken from GitHub's
// record of it when Options.Ingest allows, else the reconciler will judge its change.
func (r *sweep) gaveUp(ctx context.Context, guid string, d *github.HookDelivery, a attempt) error {
	log := zerolog.Ctx(ctx)
	if r.s.opts.Ingest == nil || a.Ingested || a.IngestTries >= r.s.opts.MaxAttempts {
		if !r.s.toldGaveUp[guid] && !a.Ingested {
			r.s.toldGaveUp[guid] = true
			log.Warn().Str("guid", guid).Int64("delivery", d.GetID()).Str("event", d.GetEvent()).
				Int("attempts", a.N).Msg("gave up redelivering a failed webhook: the reconciler will judge its change")
		}
		return nil
	}
	n, err := r.s.ingest(ctx, r.hooks, guid, d)
	r.rep.Requests += n
	if err != nil {
		if _, limited := waitFor(err, r.now); limited {
			_, err := r.stop(ctx, err)
			return err
		}
		a.IngestTries++
		r.st.GUIDs[guid] = a
		if err := r.s.save(ctx, r.st); err != nil {
			return err
		}
		msg := "could not take a failed webhook's event from GitHub's record; the next sweep tries again"
		if a.IngestTries == r.s.opts.MaxAttempts {
			msg = "could not take a failed webhook's event from GitHub's record, and gave up: the reconciler will judge its change"
		}
		log.Warn().Err(err).Str("guid", guid).Int64("delivery", d.GetID()).Int("tries", a.IngestTries).Msg(msg)
		return nil
	}
	a.Ingested = true
	r.st.GUIDs[guid] = a
	if err := r.s.save(ctx, r.st); err != nil {
		return err
	}
	r.rep.Ingested++
	log.Warn().Str("guid", guid).Int64("delivery", d.GetID()).Str("event", d.GetEvent()).
		Int("attempts", a.N).Msg("gave up redelivering a failed webhook: its event was taken from GitHub's record of it")
	return nil
}

// finish waits for the redeliveries to arrive, extends the proof when the sweep is complete,
// and logs the sweep.
func (r *sweep) finish(ctx context.Context, listedAll bool, horizon time.Time, redelivered map[string]int64) (Report, error) {
	log := zerolog.Ctx(ctx)
	rep := &r.rep
	if len(redelivered) > 0 {
		n, err := r.s.confirm(ctx, r.hooks, redelivered, rep)
		rep.Confirmed = n
		if err != nil {
			log.Warn().Err(err).Msg("could not watch the redeliveries arrive")
		}
	}
	rep.Complete = listedAll && rep.Failed == rep.GaveUp+rep.Redelivered && rep.Confirmed == rep.Redelivered
	if rep.Complete {
		if err := r.s.prove(ctx, r.now, horizon, !horizon.After(r.now.Add(-r.s.opts.MaxAge))); err != nil {
			return *rep, err
		}
	}
	// A sweep that redelivered nothing logs at debug: an idle app sweeps every minute.
	ev := log.Debug()
	if rep.Redelivered > 0 {
		ev = log.Info()
	}
	ev.Int("listed", rep.Listed).Int("failed", rep.Failed).Int("redelivered", rep.Redelivered).
		Int("confirmed", rep.Confirmed).Int("waiting", rep.Waiting).Int("gave_up", rep.GaveUp).Int("deferred", rep.Deferred).
		Int("requests", rep.Requests).Bool("complete", rep.Complete).Msg("redelivery sweep")
	return *rep, nil
}

// confirm watches the deliveries list until every redelivered GUID shows a newer attempt that
// succeeded (the app answered 2xx: the change is recorded), within Options.Confirm.
func (s *Sweeper) confirm(ctx context.Context, hooks Hooks, redelivered map[string]int64, rep *Report) (int, error) {
	deadline := time.Now().Add(s.opts.Confirm)
	done := map[string]bool{}
	for {
		opt := &github.ListCursorOptions{PerPage: 100}
	pages:
		for page := 0; page < s.opts.MaxPages; page++ {
			list, resp, err := s.list(ctx, hooks, opt, rep)
			if err != nil {
				return len(done), fmt.Errorf("list hook deliveries: %w", err)
			}
			oldest := int64(-1)
			for _, d := range list {
				if id, found := redelivered[d.GetGUID()]; found && d.GetID() > id && ok(d.GetStatusCode()) {
					done[d.GetGUID()] = true
				}
				oldest = d.GetID()
			}
			for _, id := range redelivered {
				if oldest >= 0 && oldest <= id {
					break pages // this page reaches back past the redelivered attempts
				}
			}
			if resp == nil || resp.Cursor == "" || len(list) == 0 {
				break
			}
			opt.Cursor = resp.Cursor
		}
		if len(done) == len(redelivered) || time.Now().After(deadline) {
			return len(done), nil
		}
		select {
		case <-ctx.Done():
			return len(done), ctx.Err()
		case <-time.After(s.opts.ConfirmPoll):
		}
	}
}

// ProofName is where the newest complete sweep is recorded.
const ProofName = "redeliver/proof"

// Proof is what complete sweeps have shown, cumulatively: every delivery that had failed by
// Until, back to Since, was redelivered and arrived, or gave up. Full says Since is as far
// back as GitHub keeps deliveries. A complete sweep that looked back past Until extends it.
type Proof struct {
	Since time.Time `json:"since"`
	Until time.Time `json:"until"`
	Full  bool      `json:"full,omitempty"`
}

func (s *Sweeper) prove(ctx context.Context, started, horizon time.Time, full bool) error {
	cur, err := s.Proof(ctx)
	if err != nil {
		return err
	}
	if !started.After(cur.Until) {
		return nil // a newer sweep proved more already
	}
	next := Proof{Since: horizon, Until: started, Full: full}
	if !cur.Until.IsZero() && !horizon.After(cur.Until) && (cur.Full || !cur.Since.After(horizon)) {
		next.Since, next.Full = cur.Since, cur.Full || full // contiguous with what was proven
		if full && horizon.Before(next.Since) {
			next.Since = horizon
		}
	}
	data, err := json.Marshal(next)
	if err != nil {
		return fmt.Errorf("encode redelivery proof: %w", err)
	}
	if err := s.cursors.PutCursor(ctx, ProofName, string(data)); err != nil {
		return fmt.Errorf("save redelivery proof: %w", err)
	}
	return nil
}

// Proof returns what complete sweeps have proven (zero when none has completed).
func (s *Sweeper) Proof(ctx context.Context) (Proof, error) {
	v, err := s.cursors.GetCursor(ctx, ProofName)
	if err != nil || v == "" {
		return Proof{}, nil // none yet (ErrNotFound) or unreadable
	}
	var p Proof
	if json.Unmarshal([]byte(v), &p) != nil {
		return Proof{}, nil
	}
	return p, nil
}

func ok(status int) bool { return status >= 200 && status < 300 }

// list reads one page, retrying a 5xx or transport failure twice with jittered backoff (a
// rate limit is returned at once: the caller waits it out).
func (s *Sweeper) list(ctx context.Context, hooks Hooks, opt *github.ListCursorOptions, rep *Report) ([]*github.HookDelivery, *github.Response, error) {
	for attempt := 1; ; attempt++ {
		page, resp, err := hooks.ListHookDeliveries(ctx, opt)
		rep.Requests++
		if err == nil || attempt == 3 || !transient(resp, err) {
			return page, resp, err
		}
		d := time.Duration(100<<attempt) * time.Millisecond
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(d/2 + rand.N(d/2)):
		}
	}
}

// transient reports a failure worth retrying at once: a 5xx or no answer at all.
func transient(resp *github.Response, err error) bool {
	if _, limited := waitFor(err, time.Now()); limited {
		return false
	}
	return resp == nil || resp.StatusCode >= 500
}

// waitFor reads how long GitHub asked to wait from a go-github error.
func waitFor(err error, now time.Time) (time.Duration, bool) {
	var abuse *github.AbuseRateLimitError
	if errors.As(err, &abuse) {
		if abuse.RetryAfter != nil && *abuse.RetryAfter > 0 {
			return *abuse.RetryAfter, true
		}
		return time.Minute, true
	}
	var rl *github.RateLimitError
	if errors.As(err, &rl) {
		return max(rl.Rate.Reset.Sub(now), time.Second), true
	}
	return 0, false
}

// RetryAfterError says GitHub asked the app to wait; it implements the job queue's
// RetryAfterDuration.
type RetryAfterError struct {
	Wait time.Duration
	Err  error
}

func (e *RetryAfterError) Error() string                     { return e.Err.Error() }
func (e *RetryAfterError) Unwrap() error                     { return e.Err }
func (e *RetryAfterError) RetryAfterDuration() time.Duration { return e.Wait }

// load reads the state the store holds (another replica may have swept since), merged with
// what this process knows and may not have saved: per delivery the most attempts, and the
// later wait GitHub asked for.
func (s *Sweeper) load(ctx context.Context) (state, error) {
	st := state{GUIDs: map[string]attempt{}}
	if v, err := s.cursors.GetCursor(ctx, CursorName); err == nil && v != "" {
		// (none yet, or unreadable: start afresh)
		if err := json.Unmarshal([]byte(v), &st); err != nil || st.GUIDs == nil {
			st = state{GUIDs: map[string]attempt{}}
		}
	}
	if s.known != nil {
		if s.known.NotBefore.After(st.NotBefore) {
			st.NotBefore = s.known.NotBefore
		}
		for guid, a := range s.known.GUIDs {
			if b, ok := st.GUIDs[guid]; !ok || a.N > b.N || (a.N == b.N && a.Ingested && !b.Ingested) {
				st.GUIDs[guid] = a
			}
		}
	}
	return st, nil
}

// save keeps st in this process, then in the store.
func (s *Sweeper) save(ctx context.Context, st state) error {
	known := state{NotBefore: st.NotBefore, GUIDs: maps.Clone(st.GUIDs)}
	s.known = &known
	data, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encode redelivery state: %w", err)
	}
	if err := s.cursors.PutCursor(ctx, CursorName, string(data)); err != nil {
		return fmt.Errorf("save redelivery state: %w", err)
	}
	return nil
}
