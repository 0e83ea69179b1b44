package policy

import (
	"slices"
	"time"
)

// The sequencer decides *when* and *what* to judge for one item: which reported change comes
// next in the item's true history, whether a change is missing (a gap) and how long to hold
// the later ones for it, when the board shows a value nobody reported, and when the board
// still shows a refused value. It never decides legality (Machine.Decide does, for each step
// the sequencer hands out) and never does I/O: enforce gathers its inputs and carries its
// actions out, one at a time, until it says ActDone or ActWait. docs/ENFORCEMENT.md has the
// table this implements.

// Observation is one reported change of an item's Workflow State (a webhook).
type Observation struct {
	Delivery string
	// FromKnown is false when the report carried no previous value (GitHub marks it optional).
	FromKnown bool
	From, To  string // "" = no value
	Actor     string
	At        time.Time // GitHub's time of the change (second resolution)
	Received  time.Time // when it reached us
	Own       bool      // written by the app itself
}

// History is what is known of one item before this decision.
type History struct {
	Known bool   // the item has a record
	Legal string // the last legal state: what the board must show
	// Observed is the board's value after the last judged step or the app's own write: the
	// value the next reported change must have left to follow it.
	Observed   string
	ObservedAt time.Time // GitHub's time of the last judged step (zero when unknown)
	// GapSince is when a missing change was first noticed (zero when none is).
	GapSince time.Time
}

// BoardValue is the item's Workflow State as just read from GitHub.
type BoardValue struct {
	State     string
	UpdatedAt time.Time // when the value last changed; zero when GitHub did not say
}

// SweepProof is what the redelivery sweeper has shown.
type SweepProof struct {
	// Available is false when nothing can ask GitHub for failed deliveries (no App
	// credentials): a gap is then waited out for Window and no longer.
	Available bool
	// StartedAt is when the newest complete sweep began: every delivery GitHub had recorded as
	// failed by then (back to Since) was redelivered and seen to arrive, or had given up.
	StartedAt time.Time
	Since     time.Time
	// Full: it looked back as far as GitHub keeps deliveries, so it covers any history.
	Full bool
}

// SequenceInput is everything one decision needs.
type SequenceInput struct {
	History History
	Pending []Observation // reported, not yet judged; any order
	Board   BoardValue
	Sweep   SweepProof
	Now     time.Time
	// Window is how long GitHub may take to attempt a delivery after the change: a sweep that
	// began that long after a missing change happened would have listed its failed delivery.
	Window time.Duration
	// Hold bounds how long a gap holds an item's later changes when no sweep can prove it.
	Hold time.Duration
	// Settle is how long a report waits before it is judged, so that reports of changes made
	// moments apart, delivered out of order, are put back in order first.
	Settle time.Duration
}

// Action kinds.
type ActionKind int

const (
	// ActAdopt takes State as the item's legal (and observed) value: first sight.
	ActAdopt ActionKind = iota
	// ActJudge judges Obs as the step From → Obs.To (From is the value it left).
	ActJudge
	// ActJudgeUnobserved judges a step nobody reported, From → To at At, by an unknown actor:
	// the gap is proven (or waited out) and nothing will fill it.
	ActJudgeUnobserved
	// ActIgnore drops Obs (Why says why): our own write, or older than what was judged.
	ActIgnore
	// ActRevert writes To (the last legal state): the board still shows the refused value.
	ActRevert
	// ActSync records that the board shows the last legal value again (To).
	ActSync
	// ActWait holds the item until Until; Sweep asks for the failed deliveries now.
	ActWait
	// ActDone: everything reported is judged and the board shows the legal value (or a value
	// that is being handled by its own report).
	ActDone
)

func (k ActionKind) String() string {
	return [...]string{"adopt", "judge", "judge-unobserved", "ignore", "revert", "sync", "wait", "done"}[k]
}

// Action is the sequencer's answer.
type Action struct {
	Kind     ActionKind
	Obs      Observation // ActJudge, ActIgnore
	From, To string      // ActJudge (From), ActJudgeUnobserved, ActRevert (To), ActAdopt (To)
	At       time.Time   // ActJudgeUnobserved, ActAdopt: the time to record
	Why      string
	// ActWait:
	Until      time.Time
	Sweep      bool
	SweepSince time.Time
	// GapSince is the gap start the record must keep (zero clears it).
	GapSince time.Time
}

// sweepGrace is how long a gap may last before the sweeper is asked: most gaps are plain
// reordering, filled within milliseconds by the webhook that was merely late.
const sweepGrace = time.Second

// waitStep is how often a held item looks again.
const waitStep = time.Second

// Sequence returns the next action for an item. Applying it and asking again walks the item
// to ActDone or ActWait.
func Sequence(in SequenceInput) Action {
	h := in.History
	pending := sortedPending(in.Pending)
	for _, o := range pending {
		if o.Own {
			return Action{Kind: ActIgnore, Obs: o, Why: "our own write", GapSince: h.GapSince}
		}
	}
	if !h.Known {
		return adopt(in, pending)
	}
	if until, ok := Unsettled(pending, in.Now, in.Settle); ok {
		// Reports of changes made moments apart can arrive in any order: let them settle.
		return Action{Kind: ActWait, Until: until, Why: "settling: a report of an earlier change may still be on its way", GapSince: h.GapSince}
	}
	// The next step is the first of the longest chain of reports that starts from the
	// observed value (several reports of one second can chain in more than one order).
	if o, ok := nextInChain(h, pending); ok {
		return Action{Kind: ActJudge, Obs: o, From: h.Observed, Why: "next in the item's history"}
	}
	for _, o := range pending {
		if !h.ObservedAt.IsZero() && (o.At.Before(h.ObservedAt) || (!o.FromKnown && !o.At.After(h.ObservedAt))) {
			return Action{Kind: ActIgnore, Obs: o, Why: "stale: older than the item's judged history, and it does not follow it", GapSince: h.GapSince}
		}
	}
	if len(pending) > 0 {
		// A gap: the change that left h.Observed for pending[0].From has not been reported.
		first := pending[0]
		return gap(in, first.At, first.Received, first.From, "a change between "+show(h.Observed)+" and "+show(first.From)+" has not been reported")
	}
	if in.Board.State == h.Legal && h.Observed != h.Legal {
		// Our revert landed (its record was interrupted), or someone set the value back.
		return Action{Kind: ActSync, To: h.Legal, Why: "the board is back in the last legal state"}
	}
	if in.Board.State == h.Observed {
		if h.Observed != h.Legal {
			return Action{Kind: ActRevert, To: h.Legal, Why: "the board still shows the refused value"}
		}
		return Action{Kind: ActDone, Why: "in sync"}
	}
	// The board moved past everything reported: its webhook is on its way, or was lost.
	at := in.Board.UpdatedAt
	if at.IsZero() {
		// GitHub did not say when: it happened before it was first noticed.
		at = h.GapSince
		if at.IsZero() {
			at = in.Now
		}
	}
	if at.Before(h.ObservedAt) {
		at = h.ObservedAt
	}
	return gap(in, at, time.Time{}, in.Board.State, "the board shows "+show(in.Board.State)+", which no report explains yet")
}

// Unsettled reports whether a report arrived less than settle ago, and until when to wait.
func Unsettled(pending []Observation, now time.Time, settle time.Duration) (time.Time, bool) {
	var until time.Time
	for _, o := range pending {
		if t := o.Received.Add(settle); now.Before(t) && t.After(until) {
			until = t
		}
	}
	return until, !until.IsZero()
}

// chains reports whether o can follow a history that ends in value `from` at `at`.
func chains(from string, at time.Time, o Observation) bool {
	if o.FromKnown {
		return o.From == from && (at.IsZero() || !o.At.Before(at))
	}
	// No previous value reported: only the clock can order it.
	return at.IsZero() || o.At.After(at)
}

// maxChainSearch bounds the search for the longest chain (reports pending for one item are
// few; a flood of them is judged in clock order instead).
const maxChainSearch = 6

// nextInChain returns the first report of the longest chain of pending reports that follows
// the judged history, preferring earlier reports on ties (pending is sorted).
func nextInChain(h History, pending []Observation) (Observation, bool) {
	if len(pending) > maxChainSearch {
		for _, o := range pending {
			if chains(h.Observed, h.ObservedAt, o) {
				return o, true
			}
		}
		return Observation{}, false
	}
	i, n := chainFromAt(h.Observed, h.ObservedAt, pending)
	if n == 0 {
		return Observation{}, false
	}
	return pending[i], true
}

// chainFrom is chainFromAt with no time bound.
func chainFrom(from string, pending []Observation) (int, int) {
	if len(pending) > maxChainSearch {
		return 0, 1
	}
	return chainFromAt(from, time.Time{}, pending)
}

// chainFromAt finds the longest chain of reports starting at value `from` (not before at):
// the index of its first report and its length (0: none chains).
func chainFromAt(from string, at time.Time, pending []Observation) (int, int) {
	used := make([]bool, len(pending))
	var longest func(from string, at time.Time) int
	longest = func(from string, at time.Time) int {
		best := 0
		for i, o := range pending {
			if used[i] || !chains(from, at, o) {
				continue
			}
			used[i] = true
			best = max(best, 1+longest(o.To, o.At))
			used[i] = false
		}
		return best
	}
	bestLen, bestIdx := 0, -1
	for i, o := range pending {
		if !chains(from, at, o) {
			continue
		}
		used[i] = true
		n := 1 + longest(o.To, o.At)
		used[i] = false
		if n > bestLen {
			bestLen, bestIdx = n, i
		}
	}
	return bestIdx, bestLen
}

// gap holds the item until the missing change is reported, a sweep proves nothing more will
// come, or the hold runs out; then the unreported step is judged by an unknown actor.
func gap(in SequenceInput, missingAt, noticed time.Time, to, why string) Action {
	h := in.History
	since := h.GapSince
	if since.IsZero() {
		since = in.Now
		if noticed.Before(since) && !noticed.IsZero() {
			since = noticed // the report that shows the gap arrived then
		}
	}
	// GitHub attempted any delivery of the missing change by missingAt + Window.
	due := missingAt.Add(in.Window)
	var proven bool
	if in.Sweep.Available {
		proven = !in.Sweep.StartedAt.IsZero() && !in.Sweep.StartedAt.Before(due) &&
			(in.Sweep.Full || h.ObservedAt.IsZero() || !in.Sweep.Since.After(h.ObservedAt))
	} else {
		proven = !in.Now.Before(latest(due, since.Add(in.Window)))
	}
	expired := !in.Now.Before(since.Add(in.Hold))
	if proven || expired {
		a := Action{Kind: ActJudgeUnobserved, From: h.Observed, To: to, At: missingAt, Why: why}
		if proven {
			a.Why += "; a redelivery sweep shows none is missing"
		} else {
			a.Why += "; not reported within the hold"
		}
		return a
	}
	until := earliest(in.Now.Add(waitStep), since.Add(in.Hold))
	a := Action{Kind: ActWait, Until: until, Why: why, GapSince: since, SweepSince: h.ObservedAt}
	if in.Sweep.Available && !in.Now.Before(since.Add(sweepGrace)) {
		a.Sweep = true
	}
	return a
}

// adopt decides the baseline of an item seen for the first time.
func adopt(in SequenceInput, pending []Observation) Action {
	// The value before the first reported change is the best baseline there is: the start of
	// the longest chain of reports (they may have arrived in any order).
	best, bestLen := -1, 0
	for i, o := range pending {
		if !o.FromKnown {
			continue
		}
		if _, n := chainFrom(o.From, pending); n > bestLen {
			best, bestLen = i, n
		}
	}
	if best >= 0 {
		return Action{Kind: ActAdopt, To: pending[best].From, Why: "first sight: the value before the first reported change is taken as legal"}
	}
	at := in.Board.UpdatedAt
	for _, o := range pending {
		if o.At.After(at) {
			at = o.At
		}
	}
	return Action{Kind: ActAdopt, To: in.Board.State, At: at, Why: "first sight without a previous value: the current value is taken as legal"}
}

// sortedPending orders reports by GitHub's time, then by arrival, then by delivery id.
func sortedPending(ps []Observation) []Observation {
	out := slices.Clone(ps)
	slices.SortStableFunc(out, func(a, b Observation) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		if c := a.Received.Compare(b.Received); c != 0 {
			return c
		}
		switch {
		case a.Delivery < b.Delivery:
			return -1
		case a.Delivery > b.Delivery:
			return 1
		}
		return 0
	})
	return out
}

func show(s string) string {
	if s == "" {
		return "(no state)"
	}
	return s
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
