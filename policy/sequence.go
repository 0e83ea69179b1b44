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
	// Event marks a close or a reopen of the item's issue, or a merge that closes it: its
	// actor's move, whose state is decided from the legal state when it is judged. It sets no
	// value on the card (From and To are no card values): it takes its place in the history by
	// its time alone, after every card report made before it or in its second.
	Event bool
	// Closes: the event closes the issue (a close, a merge); else it reopens it. Events of one
	// second are ordered so that the last leaves the issue as it is now.
	Closes bool
	// Merges: the event is the merge of a pull request that closes the issue. GitHub closes the
	// issue because of it: of one second, the merge comes before a close.
	Merges bool
	// Field names a required field (workflow.requirements) whose value the report changed
	// From → To: it sets no value on the card either. It takes its place in the history by
	// its time, before the card reports and events of its own second (a value set and a move
	// made in one second: the move has it); edits of one field in one second chain by value.
	Field string
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
	// RevertPending is the value a revert was about to write when it was recorded.
	RevertPending string
	// Provisional is the value a provisional revert wrote (or was about to write) over
	// ProvisionalOver, the value a report made at ProvisionalAt set ("" when none); its own
	// report comes no earlier than that.
	Provisional, ProvisionalOver string
	ProvisionalAt                time.Time
	// Fields are the required fields' values as the judged history leaves them (a field
	// missing: not known): edits of one field in one second are ordered from them.
	Fields map[string]string
	// Writes are the app's guarded writes (reverts, automated moves) the history ends in, in
	// order: what each wrote over, as its guard read the card, and the history's time before
	// it. GitHub has no conditional write, so a change may land between a write's read and the
	// write, whose report then leaves from another value. Raced are the writes of ours such
	// a race put back in flight (that write and the ones after it): their reports wait for
	// their place in the history, each a change of the card by the app, no step (the legal
	// state stays).
	Writes []Write
	Raced  []Write
}

// Write is a guarded write of the app's: the value it wrote over (Over), as its guard read the
// card, the value it wrote (To), and the history's time before it (At).
type Write struct {
	Over string    `json:"over"`
	To   string    `json:"to"`
	At   time.Time `json:"at,omitzero"`
	// Reported: its report came back and was taken in (no second will come).
	Reported bool `json:"reported,omitempty"`
	// Sent is when the write was made, by the app's clock (zero: not known): until every change
	// made by then is reported, its report may still come.
	Sent time.Time `json:"sent,omitzero"`
}

// BoardValue is the item's Workflow State as read from GitHub.
type BoardValue struct {
	// Unknown: not read yet. The sequencer answers ActRead when it needs the value.
	Unknown   bool
	State     string
	UpdatedAt time.Time // when the value last changed; zero when GitHub did not say
	// Closed: the item's issue is closed now (it orders a close and a reopen of one second).
	Closed bool
	// IssueEventAt is when the item's issue was last closed or reopened by someone other than
	// the app, when that is later than the last close or reopen its history holds (zero when
	// not): a change whose report may still come.
	IssueEventAt time.Time
}

// SweepProof is what the redelivery sweeps have proven, cumulatively: every delivery GitHub
// had recorded as failed by Until, back to Since, was redelivered and seen to arrive (or gave
// up for good).
type SweepProof struct {
	// Available is false when nothing can ask GitHub for failed deliveries (no App
	// credentials): a report is then judged once it is Window old, and no sooner.
	Available bool
	Since     time.Time
	Until     time.Time
	// Full: Since is as far back as GitHub keeps deliveries, so the proof covers any history.
	Full bool
}

// SequenceInput is everything one decision needs.
type SequenceInput struct {
	History History
	Pending []Observation // reported, not yet judged; any order
	Board   BoardValue
	Sweep   SweepProof
	Now     time.Time
	// Window is how long GitHub may take to attempt a delivery after a change: once a proof
	// reaches Window past a change, every change made up to it has been reported (or never
	// will be), so the history up to it can be judged in its true order.
	Window time.Duration
	// Hold bounds how long a report waits for that proof; then it is judged all the same.
	Hold time.Duration
}

// Action kinds.
type ActionKind int

const (
	// ActAdopt takes To as the item's legal (and observed) value: first sight.
	ActAdopt ActionKind = iota
	// ActJudge judges Obs as the step From → Obs.To (From is the value it left).
	ActJudge
	// ActJudgeUnobserved judges a step nobody reported, From → To at At, by an unknown actor:
	// the history is proven complete up to it, so no report of it will ever come.
	ActJudgeUnobserved
	// ActIgnore drops Obs (Why says why): our own write, or older than what was judged.
	ActIgnore
	// ActRevert writes To (the last legal state): the board still shows the refused value.
	ActRevert
	// ActSync records a write of the app's own that its record missed: To becomes the legal
	// and observed value (Obs is its report, when one told).
	ActSync
	// ActRead: read the board, then ask again.
	ActRead
	// ActWait holds the item until Until; Sweep asks for a redelivery sweep now.
	ActWait
	// ActRaced: Obs is the report of a write of ours that landed over a change made after
	// its guard read the card (it leaves from another value than the one written over). The
	// history goes back to before the write (Writes; a provisional revert's journal is
	// dropped) and Obs waits for its place among the changes it landed over.
	ActRaced
	// ActDone: everything reported is judged and the board shows the legal value.
	ActDone
)

func (k ActionKind) String() string {
	return [...]string{"adopt", "judge", "judge-unobserved", "ignore", "revert", "sync", "read", "wait", "raced", "done"}[k]
}

// Action is the sequencer's answer.
type Action struct {
	Kind     ActionKind
	Obs      Observation // ActJudge, ActIgnore
	From, To string      // ActJudge (From), ActJudgeUnobserved, ActRevert (To), ActAdopt (To)
	At       time.Time   // ActJudgeUnobserved, ActAdopt: the time to record
	Why      string
	// ActWait:
	Until time.Time
	Sweep bool
	// Due is, for a wait for a sweep's proof, the time a proof must reach (a change's second
	// plus Window): a proof reaching it lets the item go on. Zero for any other wait.
	Due time.Time
	// GapSince is when the board was first seen showing a value no report explains; the
	// record keeps it (zero clears it).
	GapSince time.Time
	// Provisional marks an ActSync of the app's provisional revert: the board shows To, and
	// the legal state stays the judged history's (the revert is no step of it).
	Provisional bool
	// Raced marks an ActSync of a write of ours that changes the card only (one of History.Raced,
	// or one the history does not hold): the board shows To, the legal state stays (the app's
	// write landed over a newer change; the walk writes the legal value back, explaining
	// nothing: nobody moved the card there).
	Raced bool
	// Write is, for ActRaced, the index in History.Writes of the write that raced (-1: a
	// provisional revert's, or a journaled write's whose completion is not recorded).
	Write int
}

// clockResolution: GitHub dates changes to the second, so a change dated t happened before
// t + 1s.
const clockResolution = time.Second

// waitStep is how often a held item looks again while a sweep is under way.
const waitStep = 250 * time.Millisecond

// Sequence returns the next action for an item. Applying it and asking again walks the item
// to ActDone or ActWait.
func Sequence(in SequenceInput) Action {
	h := in.History
	pending := sortedPending(in.Pending)
	if a, ok := ownReport(in, h, pending); ok {
		return a
	}
	events, fields, cards := splitEvents(pending)
	if !h.Known && len(cards) == 0 {
		if in.Board.Unknown {
			return Action{Kind: ActRead, Why: "first sight: the board's value is adopted"}
		}
		return Action{Kind: ActAdopt, To: in.Board.State, At: in.Board.UpdatedAt, Why: "first sight: the current value is taken as legal"}
	}
	var covered, later []Observation
	for _, o := range cards {
		if in.covers(h, o.At, o.Received) {
			covered = append(covered, o)
		} else {
			later = append(later, o)
		}
	}
	if !h.Known {
		if len(covered) == 0 {
			return in.wait(h, later[0].At, "first sight: waiting until no earlier report can be missing")
		}
		return adopt(in, covered)
	}
	a, later, ok := nextNonCard(in, h, covered, events, fields, later)
	if ok {
		return a
	}
	if a, ok := heldOrStale(h, covered); ok {
		return a
	}
	// Every change up to the covered reports has been reported: judge them in the order of the
	// longest chain that starts from the observed value; a report that follows nothing was
	// preceded by a change nobody reported, which is judged first (by an unknown actor).
	for _, wr := range h.Raced {
		if wr.Reported && wr.Over == h.Observed {
			// A write of ours put back in flight whose report was taken in already: it comes
			// once the history reaches the value it was written over.
			return Action{Kind: ActSync, From: wr.Over, To: wr.To, Raced: true,
				Why: "our write, which landed over a newer change (its report taken in before): the legal state stays", GapSince: h.GapSince}
		}
	}
	end := boardEnd(in.Board, covered, later)
	if a, ok := in.awaitNextChange(h, covered, later, end); ok {
		return a
	}
	if a, ok := nextInChain(h, covered, later, end); ok {
		return a
	}
	if len(later) > 0 {
		return in.wait(h, later[0].At, "waiting until no earlier report can be missing")
	}
	return compareBoard(in, h)
}

// ownReport is the first of the sequencer's answers: the report of a write of ours that
// raced, that brings a provisional revert back, or that the record holds already.
func ownReport(in SequenceInput, h History, pending []Observation) (Action, bool) {
	if a, ok := racedReport(in, h, pending); ok {
		return a, true
	}
	for _, o := range pending {
		if h.provisional(o) && h.Observed == h.ProvisionalOver && !reportedBefore(pending, o.At.Truncate(clockResolution).Add(clockResolution)) {
			// The provisional revert coming back once the step it set back is judged (and every
			// change made before it; of its own second, the chain orders them): the board shows
			// its value, whatever the verdict (a step allowed after all is put back from there).
			return h.provisionalSync(o), true
		}
	}
	held := ownHeld(h, pending)
	for _, o := range pending {
		if o.Own && h.Known && h.RevertPending != "" && o.FromKnown && o.From == h.Observed && o.To == h.RevertPending &&
			!reportedBefore(pending, o.At) {
			// A write of ours that was journaled before it was made (a revert, or automation)
			// coming back before its completion was recorded: it is done.
			return Action{Kind: ActSync, Obs: o, To: o.To, Why: "our own write", GapSince: h.GapSince}, true
		}
	}
	for _, o := range pending {
		if o.Own && !h.inRaced(o) && !h.provisional(o) && (!h.Known || (held[o.Delivery] && !reportedBefore(pending, o.At))) {
			// The report of a write of ours the record already holds. (When others' changes
			// made before it are still unjudged, it is a write made while the history was being
			// judged: it takes its place after them.)
			return Action{Kind: ActIgnore, Obs: o, Why: "our own write", GapSince: h.GapSince}, true
		}
	}
	return Action{}, false
}

// racedReport finds a report that tells a write of ours landed over a change made after its
// guard read the card.
func racedReport(in SequenceInput, h History, pending []Observation) (Action, bool) {
	for _, o := range pending {
		if o.Field != "" {
			continue // (a field's edit sets no value of the card)
		}
		// (Someone's change is taken for one that came before a write of ours only once every
		// change made by its second is reported: one between that a late report tells of would
		// make it a later one.)
		i, ok := h.racedWrite(o)
		if !ok {
			continue
		}
		if o.Own || (in.covers(h, o.At, o.Received) && (noOp(h.Writes[i], o, pending) || !reachable(h.Observed, o, pending))) {
			return Action{Kind: ActRaced, Obs: o, Write: i, Why: "our write landed over a change made after its guard read the card: " +
				show(o.From) + " → " + show(o.To) + " came between", GapSince: h.GapSince}, true
		}
	}
	return Action{}, false
}

// nextNonCard judges a required field's edit or a lifecycle event when its turn has come; one
// whose reports may still be missing joins later.
func nextNonCard(in SequenceInput, h History, covered, events, fields, later []Observation) (Action, []Observation, bool) {
	if len(fields) > 0 {
		// A required field's edit comes once every change made up to it is reported, and
		// every card report and event made before its second is judged.
		f := firstField(fields, h)
		second := f.At.Truncate(clockResolution)
		switch {
		case !in.covers(h, f.At, f.Received):
			later = sortedPending(append(later, f))
		case !anyBefore(covered, second) && !anyBefore(events, second):
			return Action{Kind: ActJudge, Obs: f, From: h.Observed, Why: "next in the item's history: an edit of " + f.Field}, later, true
		}
	}
	if len(events) > 0 {
		// A lifecycle event comes once every change made up to it is reported, and the card
		// reports made before it are judged.
		ev := firstEvent(events, in.Board)
		switch {
		case !in.covers(h, ev.At, ev.Received):
			later = sortedPending(append(later, ev))
		case !anyBefore(covered, ev.At.Add(clockResolution)):
			// (Card reports of its own second first: a move of the card and a close of one
			// second cannot be ordered from GitHub's reports, and this order is the one a
			// person who moves the card and then closes the issue makes.)
			return Action{Kind: ActJudge, Obs: ev, From: h.Observed, Why: "next in the item's history: its issue's lifecycle"}, later, true
		}
	}
	return Action{}, later, false
}

// heldOrStale drops a covered report that needs no judging: a write of ours the record holds,
// or a change older than the judged history that does not follow it.
func heldOrStale(h History, covered []Observation) (Action, bool) {
	for _, o := range covered {
		if o.Own && !h.inRaced(o) && !h.provisional(o) && !o.At.After(h.ObservedAt) && (!chains(h.Observed, h.ObservedAt, o) || (o.To != h.Observed && o.To != h.RevertPending)) {
			// A write of ours from before the judged history's end that does not follow it, or
			// that leaves another value than the history's end and is not the write journaled:
			// the record holds it already (a later change was judged since, or a later write of
			// ours of the same second, whose report came first). (A write a race put back in
			// flight takes its place in the chain: History.Raced.)
			return Action{Kind: ActIgnore, Obs: o, Why: "our own write", GapSince: h.GapSince}, true
		}
		if !h.ObservedAt.IsZero() && (o.At.Before(h.ObservedAt) || (!o.FromKnown && !o.At.After(h.ObservedAt))) {
			if _, n := chainFromAt(h.Observed, h.ObservedAt, []Observation{o}, []bool{false}); n == 0 {
				return Action{Kind: ActIgnore, Obs: o, Why: "stale: older than the item's judged history, and it does not follow it", GapSince: h.GapSince}, true
			}
		}
	}
	return Action{}, false
}

// nextInChain is the next covered report in the order of the longest chain from the observed
// value, or the change nobody reported that must have come before the first that follows
// nothing.
func nextInChain(h History, covered, later []Observation, end ends) (Action, bool) {
	chain, rest, ok := orderCovered(h, covered, later, end)
	if !ok {
		return Action{}, false // (a report not covered yet comes first: wait for it)
	}
	if len(rest) > 0 && rest[0].Own && !h.inRaced(rest[0]) && !h.provisional(rest[0]) && rest[0].To == h.Observed && (len(chain) == 0 || rest[0].At.Before(chain[0].At)) {
		// A write of ours that nothing judged leads to, and the record holds (a revert, or
		// automation recorded as it was made). A write of ours the record does not hold followed
		// a change nobody reported: that change is judged first, then our write is synced.
		return Action{Kind: ActIgnore, Obs: rest[0], Why: "our own write", GapSince: h.GapSince}, true
	}
	switch {
	case len(chain) > 0 && (len(rest) == 0 || !rest[0].At.Before(chain[0].At)):
		return h.chainHead(chain[0]), true
	case len(rest) > 0:
		first := rest[0]
		return Action{Kind: ActJudgeUnobserved, From: h.Observed, To: first.From, At: first.At,
			Why: "a change from " + show(h.Observed) + " to " + show(first.From) + " was never reported"}, true
	}
	return Action{}, false
}

// awaitNextChange holds the earliest second of covered card reports while its reports chain in
// several orders (one carries no previous value) and what tells where it ended is not all in:
// the reports of the next second, until a proof covers it (a late one among them may change
// where that second started), or, with none, the change the board shows made after it, until
// its report comes or a proof says none will (or Hold after the second's first report came).
func (in SequenceInput) awaitNextChange(h History, covered, later []Observation, end ends) (Action, bool) {
	var second []Observation
	for _, o := range sortedPending(covered) {
		if o.Field == "" && !o.Event && (len(second) == 0 || o.At.Equal(second[0].At)) {
			second = append(second, o)
		}
	}
	if len(second) < 2 || !slices.ContainsFunc(second, func(o Observation) bool { return !o.FromKnown }) {
		return Action{}, false
	}
	first := second[0].Received
	for _, o := range second {
		first = earliest(first, o.Received)
	}
	var next time.Time
	for _, o := range append(slices.Clone(covered), later...) {
		if o.Field == "" && !o.Event && o.At.After(second[0].At) && (next.IsZero() || o.At.Before(next)) {
			next = o.At
		}
	}
	why := "a second's reports without a previous value chain in several orders: "
	switch {
	case !next.IsZero() && in.covers(h, next, first):
		return Action{}, false // (the next second's reports, all in, tell: splitChain)
	case !next.IsZero():
		return in.wait(h, next, why+"the next second's reports tell which, once all are in"), true
	case len(end) > 0:
		return Action{}, false // (the board tells where they ended)
	case in.Board.Unknown:
		return Action{Kind: ActRead, Why: why + "the board tells whether a change came after them"}, true
	}
	at := in.Board.UpdatedAt
	if at.IsZero() || !at.Truncate(clockResolution).After(second[0].At.Truncate(clockResolution)) || in.covers(h, at, first) {
		return Action{}, false
	}
	return in.wait(h, at, why+"the report of the change after them tells which"), true
}

// boardEnd is the value the chain of every card report ends in as the board tells it: its value,
// when it was read and GitHub dates its last change no later than the last report's second
// (none otherwise: a later change, reported or not, set it).
func boardEnd(b BoardValue, covered, later []Observation) ends {
	if b.Unknown || b.UpdatedAt.IsZero() {
		return nil
	}
	var last time.Time
	for _, o := range append(slices.Clone(covered), later...) {
		if o.Field == "" && !o.Event && o.At.After(last) {
			last = o.At
		}
	}
	if b.UpdatedAt.Truncate(clockResolution).After(last.Truncate(clockResolution)) {
		return nil
	}
	return ends{b.State}
}

// orderCovered orders the covered card reports as the chain from the observed value, taking the
// card reports not covered yet (later) as evidence of that order too: they come after, and
// where reports of one second chain in several orders, the one the later reports follow on from
// is taken. rest are the covered reports outside the chain; ok is false when the chain starts
// with a report not covered yet.
func orderCovered(h History, covered, later []Observation, end ends) (chain, rest []Observation, ok bool) {
	all := slices.Clone(covered)
	for _, o := range later {
		if o.Field == "" && !o.Event {
			all = append(all, o)
		}
	}
	if len(all) == len(covered) {
		chain, rest = splitChain(h, covered, end)
		return chain, rest, true
	}
	isCovered := make(map[string]bool, len(covered))
	for _, o := range covered {
		isCovered[o.Delivery] = true
	}
	chain, rest = splitChain(h, sortedPending(all), end)
	if len(chain) > 0 && !isCovered[chain[0].Delivery] {
		return nil, nil, false
	}
	rest = slices.DeleteFunc(rest, func(o Observation) bool { return !isCovered[o.Delivery] })
	return chain, rest, true
}

// chainHead is the action for the first report of the chain from the observed value.
func (h History) chainHead(o Observation) Action {
	if h.provisional(o) {
		return h.provisionalSync(o)
	}
	if o.Own && h.inRaced(o) {
		return Action{Kind: ActSync, Obs: o, To: o.To, Raced: true,
			Why: "our write, which landed over a newer change: the board shows its value, the legal state stays", GapSince: h.GapSince}
	}
	if o.Own && h.RevertPending == o.To && o.From == h.Observed {
		// The write journaled before it was made (a revert, automation), its completion
		// not recorded: done.
		return Action{Kind: ActSync, Obs: o, To: o.To, Why: "our own write, journaled"}
	}
	if o.Own {
		// A write of ours the history does not end in (it was made while the item's history
		// was still being judged: a change made after it was owed came first). Its legal
		// effect is the record's already (automation and handoffs are recorded before they
		// are written): it changes the card only, and the walk puts the legal value back if
		// they differ, explaining nothing.
		return Action{Kind: ActSync, Obs: o, To: o.To, Raced: true,
			Why: "our own write, made while the item's history was being judged: the legal state stays", GapSince: h.GapSince}
	}
	return Action{Kind: ActJudge, Obs: o, From: h.Observed, Why: "next in the item's history"}
}

// compareBoard is the answer once every report is judged: the board agrees, shows the refused
// value still, or moved past everything reported.
func compareBoard(in SequenceInput, h History) Action {
	if in.Board.Unknown {
		return Action{Kind: ActRead, Why: "every report is judged: compare with the board"}
	}
	changedSince := !in.Board.UpdatedAt.IsZero() && !h.ObservedAt.IsZero() && in.Board.UpdatedAt.After(h.ObservedAt)
	// The refused value set again after it was refused (someone moved away and back, or back
	// over an interrupted revert) is a change of its own: wait for its report.
	if in.Board.State == h.Observed && !(h.Observed != h.Legal && changedSince) {
		if h.Observed != h.Legal {
			if at := in.Board.IssueEventAt; !at.IsZero() && !in.covers(h, at, at) {
				// What the board must show may change with it: a close or reopen's card move
				// is not written, nor a refused move set back, over a later one (no longer
				// than Hold past it, as a report waits).
				return in.wait(h, at, "the item's issue was closed or reopened since, and no report of it has come yet")
			}
			if sent, ok := h.unreported(); ok && !in.covers(h, sent, time.Time{}) {
				// One unreported write of ours at a time: only its report tells a change made
				// between its read and its write apart from ours.
				return in.wait(h, sent, "a write of ours is not reported back yet")
			}
			return Action{Kind: ActRevert, To: h.Legal, Why: "the board still shows the refused value"}
		}
		return Action{Kind: ActDone, Why: "in sync"}
	}
	return unreportedBoard(in, h)
}

// unreportedBoard: the board moved past everything reported; its report is on its way, or was
// lost.
func unreportedBoard(in SequenceInput, h History) Action {
	noticed := h.GapSince
	if noticed.IsZero() {
		noticed = in.Now
	}
	at := in.Board.UpdatedAt
	if at.IsZero() {
		at = noticed // GitHub did not say when: it happened before it was first noticed
	}
	if at.Before(h.ObservedAt) {
		at = h.ObservedAt
	}
	if in.covers(h, at, noticed) {
		if h.Provisional != "" && h.Observed == h.ProvisionalOver && in.Board.State == h.Provisional {
			// No report of it will come: the board shows the provisional revert.
			return Action{Kind: ActSync, To: h.Provisional, Provisional: true, Why: "the board shows the provisional revert"}
		}
		if h.RevertPending != "" && in.Board.State == h.RevertPending {
			// No report of the change will come and the board shows the value an interrupted
			// revert was writing: it was ours. (Before the proof it may as well be someone
			// else's move back: the report of our write, or of theirs, tells.)
			return Action{Kind: ActSync, To: h.RevertPending, Why: "the board shows the revert that was being written"}
		}
		return Action{Kind: ActJudgeUnobserved, From: h.Observed, To: in.Board.State, At: at,
			Why: "the board shows " + show(in.Board.State) + ", and no report of the change will come"}
	}
	a := in.wait(h, at, "the board shows "+show(in.Board.State)+", which no report explains yet")
	a.GapSince = noticed
	return a
}

// racedWrite reports whether o tells that a write of ours landed over a change made after
// its guard read the card, and which (its index in Writes; -1 for a provisional revert's, or a
// journaled write's whose completion is not recorded). Either o is the write's report, setting
// the value the write set but leaving from another than the one it wrote over; or o is
// someone's change from a value a write wrote over, made by the writes' second, that does not
// follow the history's end (it came between that write's read and the write: the write may
// have changed nothing, and GitHub reports nothing of it then).
func (h History) racedWrite(o Observation) (int, bool) {
	if !h.Known || !o.FromKnown || o.From == o.To || (o.Own && h.inRaced(o)) {
		return 0, false
	}
	if !o.Own {
		// Someone's change from the value a write wrote over, made by the writes' second, that
		// does not follow the history's end: it came between that write's read and the write.
		for i, wr := range h.Writes {
			// (A write whose report came back as written had nothing land before it.)
			if !wr.Reported && o.From == wr.Over && o.From != h.Observed && o.At.Before(h.ObservedAt.Truncate(clockResolution).Add(clockResolution)) {
				return i, true
			}
		}
		return 0, false
	}
	if h.Provisional != "" {
		return -1, o.To == h.Provisional && o.From != h.ProvisionalOver && !o.At.Before(h.ProvisionalAt.Truncate(clockResolution))
	}
	if h.RevertPending != "" && o.To == h.RevertPending && o.From != h.Observed && !o.At.Before(h.ObservedAt.Truncate(clockResolution)) {
		return -1, true // (journaled, its completion not recorded: it was written over the refused value)
	}
	match := -1
	for i, wr := range h.Writes {
		if wr.To != o.To {
			continue
		}
		if wr.Over == o.From {
			return 0, false // the report of that write, as written
		}
		if match < 0 {
			match = i
		}
	}
	return match, match >= 0 && !o.At.Before(h.ObservedAt.Truncate(clockResolution))
}

// noOp reports whether someone's change o set the very value a write of ours set, from the
// value it wrote over, and no report of that write is waiting: the write changed nothing (GitHub
// reports none of it), so o came before it, whatever the waiting reports could chain.
func noOp(wr Write, o Observation, pending []Observation) bool {
	return o.From == wr.Over && o.To == wr.To &&
		!slices.ContainsFunc(pending, func(p Observation) bool { return p.Own && p.FromKnown && p.From == wr.Over && p.To == wr.To })
}

// reachable reports whether reports waiting, made by o's second, lead from value `from` to the
// value o leaves from (someone's change that leaves from a value a write of ours wrote over,
// but that such reports lead to from the history's end, was made after the write).
func reachable(from string, o Observation, pending []Observation) bool {
	to, by := o.From, o.At.Truncate(clockResolution).Add(clockResolution)
	seen := map[string]bool{from: true}
	for frontier := []string{from}; len(frontier) > 0; {
		v := frontier[0]
		frontier = frontier[1:]
		if v == to {
			return true
		}
		for _, p := range pending {
			if p.Field == "" && p.FromKnown && p.From == v && p.At.Before(by) && !seen[p.To] {
				seen[p.To] = true
				frontier = append(frontier, p.To)
			}
		}
	}
	return false
}

// inRaced reports whether o may be the report of a write of ours a race put back in flight
// (History.Raced): one that set the value o sets, over the value o leaves from (Over "": the
// raced write itself, over whatever the change before it left).
func (h History) inRaced(o Observation) bool {
	return slices.ContainsFunc(h.Raced, func(wr Write) bool {
		return wr.To == o.To && (wr.Over == "" || wr.Over == o.From) && !o.At.Before(wr.At.Truncate(clockResolution))
	})
}

// unreported returns when the newest write of ours whose report has not come back was made,
// when that is known.
func (h History) unreported() (time.Time, bool) {
	var sent time.Time
	for _, wr := range h.Writes {
		if !wr.Reported && wr.Sent.After(sent) {
			sent = wr.Sent
		}
	}
	return sent, !sent.IsZero()
}

// provisional reports whether o is the report of the app's provisional revert.
func (h History) provisional(o Observation) bool {
	return o.Own && h.Provisional != "" && o.FromKnown && o.From == h.ProvisionalOver && o.To == h.Provisional &&
		!o.At.Before(h.ProvisionalAt.Truncate(clockResolution))
}

// provisionalSync takes the provisional revert's report in as the card's value.
func (h History) provisionalSync(o Observation) Action {
	return Action{Kind: ActSync, Obs: o, To: o.To, Provisional: true, Why: "our provisional revert", GapSince: h.GapSince}
}

// Provisional returns the report whose refusal may be written at once, before a proof covers
// it (a provisional revert), when the item's history leaves nothing else to wait for: it is
// the only report waiting, it follows the judged history from the value the history ends in
// (which is its legal state: no revert or other write of ours is owed), and the board, read,
// shows its value and no later change (of the card, when GitHub dates it; of the issue).
// Whether its refusal is certain is the caller's to decide (Rule.Settled). The proof still
// judges it.
func Provisional(in SequenceInput) (Observation, bool) {
	h := in.History
	if !h.Known || h.Legal != h.Observed || h.RevertPending != "" || h.Provisional != "" || len(in.Pending) != 1 ||
		in.Board.Unknown || !in.Board.IssueEventAt.IsZero() {
		return Observation{}, false
	}
	o := in.Pending[0]
	// (A change or a write of ours the history holds from the report's own second is excluded:
	// a report of ours of that second could not be told from the revert's.)
	if o.Own || o.Event || o.Field != "" || !o.FromKnown || o.From != h.Observed || o.To == h.Observed ||
		(!h.ObservedAt.IsZero() && !h.ObservedAt.Truncate(clockResolution).Before(o.At.Truncate(clockResolution))) {
		return Observation{}, false
	}
	if in.Board.State != o.To || (!in.Board.UpdatedAt.IsZero() && !in.Board.UpdatedAt.Truncate(clockResolution).Equal(o.At.Truncate(clockResolution))) {
		return Observation{}, false
	}
	return o, true
}

// Covers reports whether every change made up to `at` has been reported by now, for an event
// received at `received` (covers): how a move the app makes for its actor at `at` (a close, a
// reopen) knows that no earlier change of its item is missing.
func (in SequenceInput) Covers(at, received time.Time) bool {
	return in.covers(in.History, at, received)
}

// covers reports whether every change made up to `at` has been reported by now: a proof
// reaches Window past it, or (with no sweeper) it is Window old, or the report has waited for
// the whole hold.
func (in SequenceInput) covers(h History, at, received time.Time) bool {
	if !received.IsZero() && in.Hold > 0 && !in.Now.Before(received.Add(in.Hold)) {
		return true
	}
	due := at.Add(clockResolution + in.Window)
	if !in.Sweep.Available {
		return !in.Now.Before(due)
	}
	p := in.Sweep
	if p.Until.IsZero() || p.Until.Before(due) {
		return false
	}
	return p.Full || h.ObservedAt.IsZero() || !p.Since.After(h.ObservedAt)
}

// DueAt is when a proof must reach for a change made at `at` to be judged: GitHub dates a
// change to the second, and attempts its delivery within window.
func DueAt(at time.Time, window time.Duration) time.Time { return at.Add(clockResolution + window) }

// wait holds the item until a proof can reach Window past `at`; a sweep is asked for once one
// could (a sweep that began earlier would prove nothing about it).
func (in SequenceInput) wait(h History, at time.Time, why string) Action {
	due := DueAt(at, in.Window)
	a := Action{Kind: ActWait, Why: why, GapSince: h.GapSince}
	if in.Sweep.Available {
		a.Due = due
	}
	switch {
	case in.Now.Before(due):
		a.Until = due
		if !in.Sweep.Available {
			return a
		}
	default:
		a.Until = in.Now.Add(waitStep)
		a.Sweep = in.Sweep.Available
	}
	return a
}

// ownHeld lists the reports of our own writes the record holds: the one that set the observed
// value, and those before it that a chain of our own writes leads from to it (several writes of
// ours to one item, such as two cascades, whose reports come back after the last was recorded).
func ownHeld(h History, pending []Observation) map[string]bool {
	held := map[string]bool{}
	cur := h.Observed
	for {
		idx := -1
		for i := len(pending) - 1; i >= 0; i-- {
			if o := pending[i]; o.Own && !h.provisional(o) && !held[o.Delivery] && o.To == cur {
				idx = i
				break
			}
		}
		if idx < 0 {
			return held
		}
		o := pending[idx]
		held[o.Delivery] = true
		if !o.FromKnown || o.From == cur {
			return held
		}
		cur = o.From
	}
}

// reportedBefore reports whether someone else's change made before t is pending. (Within one
// second the order cannot be told: the record's own account of our write wins.)
func reportedBefore(pending []Observation, t time.Time) bool {
	for _, p := range pending {
		if !p.Own && p.At.Before(t) {
			return true
		}
	}
	return false
}

// splitEvents separates lifecycle events and field edits from card reports (each in the order
// given).
func splitEvents(pending []Observation) (events, fields, cards []Observation) {
	for _, o := range pending {
		switch {
		case o.Field != "":
			fields = append(fields, o)
		case o.Event:
			events = append(events, o)
		default:
			cards = append(cards, o)
		}
	}
	return events, fields, cards
}

// firstField is the field edit to take first: the earliest; of edits of one field in one
// second, the first of the trail (or longest chain) that leads from the value the history
// holds through them, as a card's reports of one second are ordered (when it holds one).
func firstField(fields []Observation, h History) Observation {
	first := fields[0]
	cur, known := h.Fields[first.Field]
	if !known {
		return first
	}
	var second []Observation
	for _, f := range fields {
		if f.Field == first.Field && f.At.Truncate(clockResolution).Equal(first.At.Truncate(clockResolution)) {
			second = append(second, f)
		}
	}
	if chain, _ := splitChain(History{Observed: cur}, second, nil); len(chain) > 0 {
		return chain[0]
	}
	return first
}

// firstEvent is the event to judge first: the earliest; of several of one second, one that
// leaves the issue otherwise than it is now (the last of them left it so), once the board is
// read; and a merge before a close of its second (the merge closed the issue).
func firstEvent(events []Observation, board BoardValue) Observation {
	first := events[0]
	if !board.Unknown {
		for _, ev := range events[1:] {
			if ev.At.Equal(first.At) && first.Closes == board.Closed && ev.Closes != board.Closed {
				first = ev
				break
			}
		}
	}
	for _, ev := range events {
		if ev.Merges && ev.At.Equal(first.At) && first.Closes && !first.Merges {
			return ev // (the close it causes follows it)
		}
	}
	return first
}

// anyBefore reports whether a report was made before t.
func anyBefore(os []Observation, t time.Time) bool {
	for _, o := range os {
		if o.At.Before(t) {
			return true
		}
	}
	return false
}

// chains reports whether o can follow a history that ends in value `from` at `at`.
func chains(from string, at time.Time, o Observation) bool {
	if o.FromKnown {
		return o.From == from && (at.IsZero() || !o.At.Before(at))
	}
	// No previous value reported: it may follow any change made before it or in its second
	// (GitHub dates changes to the second); the reports after it tell where it stands.
	return at.IsZero() || !o.At.Before(at.Truncate(clockResolution))
}

// maxChainSearch bounds the search for the longest chain of one second's reports (at most 8! =
// 40,320 orders; an item's reports of one second are few): past it, the first report that
// chains is taken at each step.
const maxChainSearch = 8

// splitChain orders the reports of the earliest second (GitHub dates changes to the second)
// into the trail that starts from the observed value and uses them all, when there is one: a
// report is an edge from the value it left to the one it set, so that is an Euler trail
// (Hierholzer's algorithm, earlier arrivals first). Without one it takes the longest chain of
// that second's reports. Where several orders qualify, the one that ends in the value the first
// report of a later second leaves from is taken (else in end). It returns that chain and the
// reports not in it, in order.
func splitChain(h History, pending []Observation, end ends) (chain, rest []Observation) {
	if len(pending) == 0 {
		return nil, nil
	}
	var first []int
	used := make([]bool, len(pending))
	for i, o := range pending {
		if o.At.Equal(pending[0].At) {
			first = append(first, i)
		} else {
			used[i] = true // (not this second's: not searched)
		}
	}
	if len(first) < len(pending) {
		// The next second's reports say what the card showed after this one. When they make a
		// circuit, it starts where it ends: when theirs is the last second reported and the
		// board shows where it ended, there.
		rest := pending[len(first):]
		next := secondStart(rest)
		if k := slices.IndexFunc(next, end.has); len(next) > 1 && k >= 0 && rest[len(rest)-1].At.Equal(rest[0].At) {
			next = ends{next[k]}
		}
		end = next
	}
	trail := trailWithWild(h, pending, first, end)
	if len(trail) != len(first) {
		trail = longestOfSecond(h, pending, used, end)
	}
	clear(used)
	for _, i := range trail {
		used[i] = true
		chain = append(chain, pending[i])
	}
	for k, o := range pending {
		if !used[k] {
			rest = append(rest, o)
		}
	}
	return chain, rest
}

// ends are the values a chain of reports should end in, as far as something tells (none: no
// preference).
type ends []string

func (e ends) has(v string) bool { return slices.Contains(e, v) }

// secondStart is where the earliest second's card reports of pending (in time order) may start
// from, as far as they tell: the one value they leave more often than they set (an Euler trail
// starts there), or, when they make a circuit, any value on it; none when they say nothing.
func secondStart(pending []Observation) ends {
	balance := map[string]int{}
	for _, o := range pending {
		if !o.At.Equal(pending[0].At) {
			break
		}
		if !o.FromKnown || o.Field != "" || o.Event {
			continue
		}
		balance[o.From]++
		balance[o.To]--
	}
	var start, circuit ends
	n := 0
	for v, b := range balance {
		switch b {
		case 0:
			circuit = append(circuit, v)
		case 1:
			start = append(start, v)
		case -1:
			n++
		default:
			return nil // (no trail through them: a gap, or a report without a previous value)
		}
	}
	switch {
	case len(start) == 1 && n == 1:
		return start
	case len(start) == 0 && n == 0:
		slices.Sort(circuit)
		return circuit
	}
	return nil
}

// longestOfSecond walks the longest chain from the observed value through the reports not
// used (one second's), preferring one that ends in end; past maxChainSearch reports, the first
// that chains at each step.
func longestOfSecond(h History, pending []Observation, used []bool, end ends) []int {
	n := 0
	for _, u := range used {
		if !u {
			n++
		}
	}
	var trail []int
	from, at := h.Observed, h.ObservedAt
	for {
		var i int
		if n > maxChainSearch {
			i = nextChaining(from, at, pending, used)
		} else {
			i, _ = chainEndingAt(from, at, pending, used, end)
		}
		if i < 0 {
			return trail
		}
		used[i] = true
		trail = append(trail, i)
		from, at = pending[i].To, pending[i].At
	}
}

// trailWithWild is eulerTrail for one second's reports idx some of which carry no previous
// value: the trail of the others, then those (each could follow anything, and nothing after it
// says where it stood), the one that sets the value end last. Shorter than idx when the others
// make no trail, or when it does not end in end (the longest chain's search places them).
func trailWithWild(h History, pending []Observation, idx []int, end ends) []int {
	var known, wild []int
	for _, i := range idx {
		if pending[i].FromKnown {
			known = append(known, i)
		} else {
			wild = append(wild, i)
		}
	}
	trail := eulerTrail(h, pending, known)
	if len(trail) < len(known) && len(wild) > 0 {
		return wildEdges(h, pending, idx, wild, end)
	}
	if len(trail) < len(known) || (len(wild) > 0 && len(known) == 0) {
		return trail
	}
	if k := slices.IndexFunc(wild, func(i int) bool { return end.has(pending[i].To) }); k >= 0 {
		wild = append(append(slices.Clone(wild[:k]), wild[k+1:]...), wild[k])
	}
	trail = append(trail, wild...)
	if len(end) > 0 && len(wild) > 0 && !end.has(pending[trail[len(trail)-1]].To) {
		return nil // (placed elsewhere they may end there: the search tries)
	}
	return trail
}

// wildEdges is the trail through one second's reports idx when the others make none by
// themselves: each of the (at most maxWild) reports without a previous value tried as leaving
// from each value the second's reports name, the first assignment whose reports make a trail
// ending in end (any, with no end) is taken; nil when none does (the longest chain's search
// places them).
func wildEdges(h History, pending []Observation, idx, wild []int, end ends) []int {
	if len(wild) > maxWild {
		return nil
	}
	values := []string{h.Observed}
	add := func(v string) {
		if !slices.Contains(values, v) {
			values = append(values, v)
		}
	}
	for _, i := range idx {
		if pending[i].FromKnown {
			add(pending[i].From)
		}
		add(pending[i].To)
	}
	tried := slices.Clone(pending)
	var try func(k int) []int
	try = func(k int) []int {
		if k == len(wild) {
			trail := eulerTrail(h, tried, idx)
			if len(trail) == len(idx) && (len(end) == 0 || end.has(tried[trail[len(trail)-1]].To)) {
				return trail
			}
			return nil
		}
		for _, v := range values {
			tried[wild[k]].From, tried[wild[k]].FromKnown = v, true
			if trail := try(k + 1); trail != nil {
				return trail
			}
		}
		return nil
	}
	return try(0)
}

// maxWild bounds the reports without a previous value of one second wildEdges places (each
// tried from every value the second names).
const maxWild = 2

// nextChaining is the first report not used that can follow value from at `at` (pending in
// time order): of its second, one that says it leaves from that value before one without a
// previous value (which could follow anything); -1 when none can.
func nextChaining(from string, at time.Time, pending []Observation, used []bool) int {
	wild := -1
	for k, o := range pending {
		switch {
		case used[k] || !chains(from, at, o):
		case wild >= 0 && o.At.Truncate(clockResolution).After(pending[wild].At.Truncate(clockResolution)):
			return wild // (nothing of the wild one's second says it leaves from here)
		case o.FromKnown:
			return k
		case wild < 0:
			wild = k
		}
	}
	return wild
}

// eulerTrail walks the reports idx (one second's) from the observed value, using each once,
// and returns the indexes in walking order (shorter than idx when no trail uses them all).
func eulerTrail(h History, pending []Observation, idx []int) []int {
	for _, i := range idx {
		if !pending[i].FromKnown {
			return nil // a report without a previous value: the longest chain places it
		}
	}
	out := map[string][]int{}
	for _, i := range idx {
		out[pending[i].From] = append(out[pending[i].From], i) // in arrival order
	}
	next := map[string]int{}
	type frame struct {
		at   string
		edge int
	}
	stack := []frame{{at: h.Observed, edge: -1}}
	var trail []int
	for len(stack) > 0 {
		top := stack[len(stack)-1]
		if k := next[top.at]; k < len(out[top.at]) {
			next[top.at] = k + 1
			e := out[top.at][k]
			stack = append(stack, frame{at: pending[e].To, edge: e})
			continue
		}
		stack = stack[:len(stack)-1]
		if top.edge >= 0 {
			trail = append(trail, top.edge)
		}
	}
	slices.Reverse(trail)
	// A walk stuck before using every edge yields a trail that is not one chain: check it.
	cur := h.Observed
	for n, e := range trail {
		if pending[e].From != cur {
			return trail[:n]
		}
		cur = pending[e].To
	}
	return trail
}

// chainFrom is chainFromAt with no time bound.
func chainFrom(from string, pending []Observation) (int, int) {
	if len(pending) > maxChainSearch {
		return 0, 1
	}
	return chainFromAt(from, time.Time{}, pending, make([]bool, len(pending)))
}

// chainFromAt finds the longest chain of reports starting at value `from` (not before at):
// the index of its first report and its length (0: none chains).
func chainFromAt(from string, at time.Time, pending []Observation, used []bool) (int, int) {
	return chainEndingAt(from, at, pending, used, nil)
}

// chainEndingAt is chainFromAt preferring, of the longest chains, one that ends in value end
// ("": no preference): where reports without a previous value let the reports of one second
// chain in several orders, the one that leads to the value the board shows.
func chainEndingAt(from string, at time.Time, pending []Observation, used []bool, end ends) (int, int) {
	// A chain's score is twice its length, plus one when it ends in end.
	var best func(from string, at time.Time) int
	best = func(from string, at time.Time) int {
		score := 0
		if end.has(from) {
			score = 1
		}
		for i, o := range pending {
			if used[i] || !chains(from, at, o) {
				continue
			}
			used[i] = true
			score = max(score, 2+best(o.To, o.At))
			used[i] = false
		}
		return score
	}
	bestScore, bestIdx := 0, -1
	for i, o := range pending {
		if used[i] || !chains(from, at, o) {
			continue
		}
		used[i] = true
		n := 2 + best(o.To, o.At)
		used[i] = false
		if n > bestScore {
			bestScore, bestIdx = n, i
		}
	}
	return bestIdx, bestScore / 2
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
	if in.Board.Unknown {
		return Action{Kind: ActRead, Why: "first sight without a previous value: the board's value is adopted"}
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
