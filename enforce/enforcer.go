package enforce

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/internal/drain"
	"github.com/ralph-gate/ralph-gate/policy"
)

// Enforcer judges the Workflow State changes webhooks report, in the order of each item's
// history (policy.Sequence), and carries its verdicts out: revert, explain, automate.
type Enforcer struct {
	*core
	auto        *Automation
	waiters     proofWaiters  // items waiting for a sweep's proof (batch.go)
	settledJobs settledJobs   // reports whose jobs have nothing left (settledjobs.go)
	atOnce      atOnceItems   // items whose refused move may be reverted at once (atonce.go)
	explainers  chan struct{} // explanations written beside JudgeWaiting's walks
	explaining  drain.Group
	seen        seenItems  // the items as last read, for explanations only (batch.go)
	deps        dependents // items waiting on other items' histories (wake.go)
}

// DriftActor names the unknown author of a change no webhook reported.
const DriftActor = "(unknown)"

// NoSender names the unknown author of a change whose webhook named no sender.
const NoSender = "(no sender)"

// driftKind is how a change no webhook reported is judged: the author is unknown, so the
// change gets no privilege beyond the strictest reverting actor kind. Bypass and humans-only
// moves whose webhooks were lost are normally recovered first by the redelivery sweeper,
// which replays them with their real sender.
const driftKind = policy.ActorAgent

// maxStepsPerRun bounds one walk over an item's history (a flood of reports is finished by
// the job's next run).
const maxStepsPerRun = 200

// ProcessChange enforces one reported change: it records the report, then walks the item's
// history. Errors are infrastructure failures (retry); an illegal move is a Result, not an
// error.
//
// It ends with the change's decision line (at debug while the change waits for its place in
// the history). The caller's logger carries the item (the job's worker adds it).
func (e *Enforcer) ProcessChange(ctx context.Context, b Board, ch Change) (Result, error) {
	line := moveLine{From: ch.From, To: ch.To, Actor: ch.Actor}
	if ch.Actor == "" {
		line.Actor = NoSender
	}
	if r, ok := e.settledJobs.take(ch.DeliveryID, e.now()); ok {
		// Judged with others a sweep's proof released, its item left with nothing to do
		// (settledjobs.go).
		line.Issue, line.Verdict = r.issue, r.res.Verdict
		line.on(zerolog.Ctx(ctx).Info()).Str("reason", r.res.Reason).Msg("decision")
		return r.res, nil
	}
	if wait, ok := e.deferToBatch(ch.ItemID); ok {
		// A sweep's proof releases it with others (batch.go): nothing to read or walk yet. (Its
		// report was recorded at intake, which put the item on that list.)
		zerolog.Ctx(ctx).Debug().Dur("wait", wait).Msg("left to the judging of what a sweep releases")
		return Result{Verdict: VerdictWait, Reason: "waiting for a sweep's proof", RetryAfter: wait}, nil
	}
	// Recorded again (the intake did; a change reported before an upgrade, or by a test, may not
	// have been), but not put on the proof's waiting list again: a job coming back must not
	// keep its item there.
	if err := e.record(ctx, ch); err != nil {
		return Result{}, err
	}
	w := &walk{board: b, delivery: ch.DeliveryID, installation: ch.InstallationID, owner: ch.Owner}
	res, err := e.walkOn(ctx, w, ch.ItemID)
	if err != nil {
		return res, err
	}
	ev := zerolog.Ctx(ctx).Info()
	if res.Verdict == VerdictWait {
		ev = zerolog.Ctx(ctx).Debug()
	}
	line.Issue, line.Verdict = w.rec.IssueNumber, res.Verdict
	line.on(ev).Str("reason", res.Reason).Msg("decision")
	return res, nil
}

// Observe records a reported change of an item before GitHub is answered, so that a
// delivery GitHub shows as successful is always known to the item's history (a sweep relies
// on it to prove that nothing is missing). Recording the same delivery twice is harmless.
//
// The app's own writes are recorded too (no job runs for them): a write the app made but did
// not record, because it was interrupted, is then known as the app's when its item is next
// walked, rather than taken for an unknown author's drift.
//
// runAt is when the change's job first has work to do: an item judged with the others a
// sweep's proof releases (batch.go) leaves its job nothing to do before its proof can have
// come, so the job is queued to run then rather than to run at once only to be put off. Zero:
// at once.
func (e *Enforcer) Observe(ctx context.Context, ch Change) (runAt time.Time, err error) {
	if err := e.record(ctx, ch); err != nil || ch.ItemID == "" || ch.DeliveryID == "" {
		return time.Time{}, err
	}
	if ch.Actor != e.opts.AppLogin && e.opts.Redeliveries != nil {
		// Judged with the others a sweep's proof releases (batch.go), from the moment it is known.
		due := policy.DueAt(changeTime(ch, e.now()), e.opts.ReorderWindow)
		if e.opts.BatchJudge && ch.Field == "" { // (a field's edit is never reverted: no store reads for it)
			// A move that may be reverted at once is RevertAtOnce's (atonce.go); without
			// BatchJudge its job runs now and reverts it (provisional.go).
			if now, err := e.revertsAtOnceAtIntake(ctx, ch); err != nil {
				return time.Time{}, err
			} else if now {
				e.atOnce.add(waitingItem{installation: ch.InstallationID, owner: ch.Owner},
					Item{ID: ch.ItemID, ProjectID: ch.ProjectID, ProjectNumber: ch.ProjectNumber, Owner: ch.Owner, ContentType: ch.ContentType})
			}
		}
		if e.awaitProof(ch.ItemID, waitingItem{installation: ch.InstallationID, owner: ch.Owner, due: due}) {
			if wait, ok := e.deferToBatch(ch.ItemID); ok {
				return e.now().Add(wait), nil
			}
		}
	}
	return time.Time{}, nil
}

// changeTime is when a change was made: GitHub's time, else when it was received, else now.
func changeTime(ch Change, now time.Time) time.Time {
	switch {
	case !ch.At.IsZero():
		return ch.At
	case !ch.ReceivedAt.IsZero():
		return ch.ReceivedAt
	}
	return now
}

// record records a reported change in its item's history (once per delivery).
func (e *Enforcer) record(ctx context.Context, ch Change) error {
	if ch.ItemID == "" || ch.DeliveryID == "" {
		return nil
	}
	received := ch.ReceivedAt
	if received.IsZero() {
		received = e.now()
	}
	at := ch.At
	if at.IsZero() {
		at = received
	}
	if _, err := e.store().RecordObservation(ctx, Observation{DeliveryID: ch.DeliveryID, ItemID: ch.ItemID,
		FromKnown: ch.FromKnown, From: ch.From, To: ch.To, Actor: ch.Actor, At: at, ReceivedAt: received, Lifecycle: ch.Lifecycle, Reason: ch.Cause, Field: ch.Field}); err != nil {
		return fmt.Errorf("record change %s: %w", ch.DeliveryID, err)
	}
	return nil
}

// walk is one run over an item's history: everything one attempt knows (the board, the
// record, the item as read, the reports to judge) and what it did, so the caller can say what
// became of the change it was asked about. One value flows through every step.
type walk struct {
	board    Board
	rec      Record
	found    bool
	it       Item // the item as read from the board (once read)
	read     bool
	pending  []Observation
	delivery string // the report the run was started for ("" for the reconciler)
	res      Result // what became of it
	decided  bool
	reverted bool
	// adoptedAt is set when this run adopted the board's value: reports without a previous
	// value up to then are part of the adoption.
	adoptedAt time.Time
	// refused is the newest step this run refused (whose revert it may write next).
	refused Observation
	// pre is the item as read just before the walk (JudgeWaiting reads many at once), valid
	// while the record is still at preVersion.
	pre        *Item
	preVersion int64
	// together is a walk of many items at once (JudgeWaiting).
	together bool
	// proof is the sweep's proof the walk goes by when the caller read it (JudgeWaiting: the
	// one that released the item); nil: the walk reads the newest.
	proof *policy.SweepProof
	// judged are the reports a walk together allowed; explainedAll is set when its item had
	// no step left unexplained (settledjobs.go).
	judged       []judgedReport
	explainedAll bool
	// The installation and owner of the change a job walks for (ProcessChange): items waiting
	// for a proof are read together by installation.
	installation int64
	owner        string
	// wakes is the count of walks that moved a history on when this one began (wake.go);
	// loaded is the record's version as the walk loaded it.
	wakes  uint64
	loaded int64
	// cause is what the step just judged was, in words, when more than a move of the card (a
	// lifecycle event's): its automation names it. eventTo is the state a lifecycle event
	// judged legal moved the item to (the walk writes the card).
	cause, eventTo string
	// atOnce is what a provisional revert's check left when it let the write go (set by the
	// write's check, which may run on another goroutine: provisional.go).
	atOnce atomic.Pointer[atOnceWrite]
}

// walk goes through an item's reported changes in the order of its history (policy.Sequence
// decides each step) and carries each step out, under the item's lock.
func (e *Enforcer) walk(ctx context.Context, b Board, itemID, delivery string) (Result, error) {
	return e.walkOn(ctx, &walk{board: b, delivery: delivery}, itemID)
}

// walkOn is walk on w, which the caller keeps (ProcessChange logs the item's issue from it).
// Once it ends having moved the item's history on (its record written), the items waiting on
// that history are woken (wake.go); a walk that changed nothing wakes nobody.
func (e *Enforcer) walkOn(ctx context.Context, w *walk, itemID string) (Result, error) {
	res, err := e.walkLocked(ctx, w, itemID)
	if err == nil && res.Verdict != VerdictWait {
		e.deps.settled(itemID)
	}
	e.wake(ctx, itemID, w.rec.Version != w.loaded)
	return res, err
}

func (e *Enforcer) walkLocked(ctx context.Context, w *walk, itemID string) (Result, error) {
	board := w.board
	w.board = withFamilies(board)
	defer func() { w.board = board }()
	w.wakes = e.deps.mark() // before anything is looked at: a wake after it is not missed
	unlock, err := e.items.lock(ctx, itemID)
	if err != nil {
		return Result{}, err
	}
	defer unlock()
	proof, err := e.loadWalk(ctx, w, itemID)
	if err != nil {
		return Result{}, err
	}
	for steps := 0; steps < maxStepsPerRun; {
		board := policy.BoardValue{Unknown: !w.read, State: w.it.State, UpdatedAt: w.it.StateUpdatedAt, Closed: !w.it.Open}
		if w.read && w.rec.ObservedState != w.rec.LastLegalState {
			// A write is due: a close or reopen of the issue since may change it.
			if board.IssueEventAt, err = e.auto.issueEventAt(ctx, w.it); err != nil {
				return Result{}, err
			}
		}
		a := policy.Sequence(policy.SequenceInput{
			History: w.history(), Pending: e.toPolicy(w.pending), Board: board,
			Sweep: proof, Now: e.now(), Window: e.opts.ReorderWindow, Hold: e.opts.GapHold,
		})
		looked := w.read
		if res, end, err := e.walkStep(ctx, w, itemID, a); end || err != nil {
			return res, err
		}
		if looked || !w.read {
			steps++ // (the board's first read, once a walk, asks again without taking a step)
		}
	}
	return Result{Verdict: VerdictWait, Reason: "a long history: continued in the next run", RetryAfter: 10 * time.Millisecond}, nil
}

// loadWalk loads the item's record and pending reports into the walk (the item locked), and
// returns the redelivery sweep's proof it is judged by.
func (e *Enforcer) loadWalk(ctx context.Context, w *walk, itemID string) (policy.SweepProof, error) {
	var err error
	if w.rec, w.found, err = e.items.load(ctx, itemID); err != nil {
		return policy.SweepProof{}, err
	}
	w.loaded = w.rec.Version
	if w.pending, err = e.store().PendingObservations(ctx, itemID); err != nil {
		return policy.SweepProof{}, fmt.Errorf("load reports of item %s: %w", itemID, err)
	}
	if w.pre != nil && w.rec.Version != w.preVersion {
		// Recorded since it was read: the read may predate our own write.
		w.pre = nil
	}
	switch {
	case w.proof != nil:
		return *w.proof, nil
	case e.opts.Redeliveries != nil:
		proof, err := e.opts.Redeliveries.SweepProof(ctx)
		if err != nil {
			return proof, fmt.Errorf("read the redelivery sweep's proof: %w", err)
		}
		return proof, nil
	}
	return policy.SweepProof{}, nil
}

// walkStep takes the sequencer's action; end reports that the walk is over, with res.
func (e *Enforcer) walkStep(ctx context.Context, w *walk, itemID string, a policy.Action) (res Result, end bool, err error) {
	if !w.read {
		res, end, again, err := e.lookIfNeeded(ctx, w, itemID, a)
		if end || again || err != nil {
			return res, end, err
		}
	}
	if w.read && w.rec.AutomateState != "" {
		// Automation an earlier run owes (it failed after judging the step, or waited for
		// a sibling's history): it comes before anything after that step.
		if err := e.automatePending(ctx, w, true); err != nil {
			res, err := e.holdOr(ctx, w, err)
			return res, true, err
		}
		return Result{}, false, nil
	}
	switch a.Kind {
	case policy.ActWait:
		e.provisionalRevert(ctx, w)
		res, err := e.hold(ctx, w, a)
		return res, true, err
	case policy.ActDone:
		if err := e.provisionalNeverLanded(ctx, w); err != nil {
			return Result{}, true, err
		}
		res, err := e.finish(ctx, w)
		return res, true, err
	}
	err = e.awaitRelativesOf(ctx, w, a)
	if err == nil {
		err = e.apply(ctx, w, a)
	}
	if err == nil && w.read && w.rec.AutomateState != "" {
		// Automation is part of its cause: a legal step's cascade and convergence are
		// done before the next step is judged, whose gates count them.
		err = e.automatePending(ctx, w, false)
	}
	if err != nil {
		// The gate needs a group member's state at the time of the move: the member's
		// walk wakes this one when its history moves on (wake.go).
		res, err := e.holdOr(ctx, w, err)
		return res, true, err
	}
	return Result{}, false, nil
}

// lookIfNeeded reads the board before an action that needs it (judging reads the gates' inputs
// from the item; the rest compares with the board); a job's walk whose reports were all judged
// before ends without reading. again: ask the sequencer again with the board known; end: the
// walk is over, with res.
func (e *Enforcer) lookIfNeeded(ctx context.Context, w *walk, itemID string, a policy.Action) (res Result, end, again bool, err error) {
	if a.Kind == policy.ActRead {
		// Every report is judged (our own writes coming back were ignored): a job's walk
		// whose report was judged before ends here, without reading the board.
		if done, err := e.settled(ctx, w); err != nil || done {
			if err == nil {
				res, err = e.finish(ctx, w)
			}
			return res, true, false, err
		}
	}
	if a.Kind != policy.ActRead && (a.Kind != policy.ActJudge || a.Obs.Field != "") && a.Kind != policy.ActJudgeUnobserved {
		return Result{}, false, false, nil // (a field's edit is taken in without looking at the board)
	}
	// The read comes where a job's walk would read: a read made earlier (JudgeWaiting's,
	// before the lock) stands for it, once; the sequencer's steps before it did not look
	// at the board.
	if e.opts.Policies != nil && w.owner != "" {
		if _, _, ok := e.opts.Policies.Of(w.owner, e.now()); !ok {
			// Uninstalled (its queue drains without reading GitHub, which would refuse the
			// installation's tokens now), or its file was never valid.
			res, err := e.drop(ctx, w, fmt.Sprintf("%s has no policy in force: nothing of it is enforced", w.owner))
			return res, true, false, err
		}
	}
	err = e.readBoard(ctx, w, itemID)
	switch {
	case errors.Is(err, ErrNotFound):
		// Deleted from the project (or its issue deleted): nothing to enforce, ever.
		// Retrying would only fail again.
		res, err := e.drop(ctx, w, "the item no longer exists on GitHub")
		return res, true, false, err
	case err != nil:
		return Result{}, true, false, err
	case !e.enforced(w.it):
		res, err := e.drop(ctx, w, fmt.Sprintf("the item is on %s/%d, which is not enforced (the payload named another project)", w.it.Owner, w.it.ProjectNumber))
		return res, true, false, err
	}
	// Asked again with the board known: lifecycle events of one second are ordered by it, and
	// reports of one second that chain in several orders by the value it shows.
	return Result{}, false, true, nil
}

// holdOr holds the walk for the group member err names (wake.go), or returns err.
func (e *Enforcer) holdOr(ctx context.Context, w *walk, err error) (Result, error) {
	var member groupUnsettled
	if errors.As(err, &member) {
		return e.holdForMember(ctx, w, member)
	}
	return Result{}, err
}

func (e *Enforcer) readBoard(ctx context.Context, w *walk, itemID string) error {
	var it Item
	if w.pre != nil {
		it, w.pre = *w.pre, nil
	} else {
		var err error
		if it, err = w.board.Item(ctx, itemID); err != nil {
			return fmt.Errorf("read item %s: %w", itemID, err)
		}
	}
	e.seen.put(it)
	if e.opts.LearnProject != nil {
		e.opts.LearnProject(it.ProjectID, it.ProjectNumber)
	}
	w.it, w.read = it, true
	w.rec.IssueNumber, w.rec.Repo, w.rec.ProjectID = it.Number, it.Repo, it.ProjectID
	return nil
}

// enforced reports whether an item, as GitHub returned it, is on an enforced project: a
// webhook's payload names the project, but only the item read back is trusted.
func (c *core) enforced(it Item) bool {
	return c.opts.Enforced == nil || c.opts.Enforced(it.Owner, it.ProjectNumber)
}

// drop gives up the item's reports for good (audited as ignored, with why): the item is gone,
// or GitHub shows it on a project that is not enforced, whatever the payload claimed.
func (e *Enforcer) drop(ctx context.Context, w *walk, why string) (Result, error) {
	if len(w.pending) > 0 {
		zerolog.Ctx(ctx).Warn().Str("why", why).Int("reports", len(w.pending)).Msg("dropped an item's reports")
	} else {
		zerolog.Ctx(ctx).Debug().Str("why", why).Msg("nothing to enforce on the item")
	}
	for len(w.pending) > 0 {
		a := policy.Action{Kind: policy.ActIgnore, Obs: policy.Observation{Delivery: w.pending[0].DeliveryID}, Why: why, GapSince: w.rec.GapSince}
		if err := e.ignore(ctx, w, a); err != nil {
			return Result{}, err
		}
	}
	return Result{Verdict: VerdictIgnored, Reason: why}, nil
}

func (w *walk) history() policy.History {
	return policy.History{Known: w.found, Legal: w.rec.LastLegalState, Observed: w.rec.ObservedState,
		ObservedAt: w.rec.ObservedAt, GapSince: w.rec.GapSince, RevertPending: w.rec.RevertPending,
		Provisional: w.rec.Provisional, ProvisionalOver: w.rec.ProvisionalOver, ProvisionalAt: w.rec.ProvisionalAt,
		Fields: w.rec.fieldValues(), Writes: w.rec.Writes, Raced: w.rec.Raced}
}

func (e *Enforcer) toPolicy(os []Observation) []policy.Observation {
	out := make([]policy.Observation, len(os))
	for i, o := range os {
		out[i] = policy.Observation{Delivery: o.DeliveryID, FromKnown: o.FromKnown, From: o.From, To: o.To,
			Actor: o.Actor, At: o.At, Received: o.ReceivedAt, Own: o.Actor == e.opts.AppLogin && o.Actor != "", Event: o.Lifecycle != "",
			Closes: o.Lifecycle == LifecycleIssueClosed || o.Lifecycle == LifecyclePRMerged, Merges: o.Lifecycle == LifecyclePRMerged, Field: o.Field}
	}
	return out
}

// commit writes one step and keeps the walk's record current.
func (e *Enforcer) commit(ctx context.Context, w *walk, st Step) error {
	rec, err := e.items.commit(ctx, st)
	if err != nil {
		return err
	}
	w.rec, w.found = rec, true
	return nil
}

// take removes a report from the walk's pending list and returns it.
func (w *walk) take(delivery string) Observation {
	for i, o := range w.pending {
		if o.DeliveryID == delivery {
			w.pending = append(w.pending[:i], w.pending[i+1:]...)
			return o
		}
	}
	return Observation{DeliveryID: delivery}
}

// settle says what became of the report the run is for, once it is decided.
func (w *walk) settle(o Observation, res Result) {
	if o.DeliveryID == w.delivery || (w.delivery == "" && o.Actor == DriftActor) {
		// The report this run is for; for the reconciler, the drift it found.
		w.res, w.decided = res, true
	}
}

// hold keeps the item's reports until a.Until, asking for a sweep when the sequencer says so.
func (e *Enforcer) hold(ctx context.Context, w *walk, a policy.Action) (Result, error) {
	if w.found && !w.rec.GapSince.Equal(a.GapSince) {
		rec := w.rec
		rec.GapSince = a.GapSince
		if err := e.commit(ctx, w, Step{Record: rec}); err != nil {
			return Result{}, err
		}
	}
	if a.Sweep && e.opts.Redeliveries != nil {
		e.opts.Redeliveries.RequestSweep(ctx)
	}
	zerolog.Ctx(ctx).Debug().Str("why", a.Why).Time("until", a.Until).Bool("sweep", a.Sweep).Msg("holding the item's reports")
	// The job waits even when its own report is judged: what is left (a revert, an
	// explanation, a report of our own write) may have no other job to finish it.
	wait := max(a.Until.Sub(e.now()), 10*time.Millisecond)
	if w.delivery != "" && e.awaitProof(w.rec.ItemID, waitingItem{installation: w.installation, owner: w.owner, board: plainBoard(w.board), due: a.Due}) {
		// A sweep's completion judges it with the others it releases (batch.go): the job
		// comes back after that, to finish, or in case no proof came.
		wait = max(a.Due.Sub(e.now()), 0) + proofRecheck
	}
	return Result{Verdict: VerdictWait, Reason: a.Why, RetryAfter: wait}, nil
}

// settled reports whether a job's walk has nothing to do but finish: its report was judged
// (by an earlier run, or with others when a proof released them) and the item has no report,
// revert or automation left — at most explanations, which need the item's issue, not its
// value (the item as last read in this process serves). Such a run ends without reading the
// board: comparing the board with the history is the walk that judged it, and the
// reconciler's, to do.
func (e *Enforcer) settled(ctx context.Context, w *walk) (bool, error) {
	if w.delivery == "" || !w.found || len(w.pending) > 0 || !w.rec.settled() {
		// Something is left: a report, or a refused value the board may still show (the
		// revert is due once the board is read).
		return false, nil
	}
	o, err := e.store().GetObservation(ctx, w.delivery)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("load report %s: %w", w.delivery, err)
	}
	if o.Status == ObservationPending {
		return false, nil
	}
	unexplained, err := e.store().Unexplained(ctx, w.rec.ItemID)
	if err != nil {
		return false, fmt.Errorf("load refused steps of item %s: %w", w.rec.ItemID, err)
	}
	if len(unexplained) == 0 {
		return true, nil
	}
	it, ok := e.seen.get(w.rec.ItemID)
	if !ok {
		return false, nil
	}
	w.it = it // its issue; its value is not looked at (w.read stays false)
	return true, nil
}

// finish explains every refused step not explained yet, then runs the automation of a legal
// state that has not had it.
func (e *Enforcer) finish(ctx context.Context, w *walk) (Result, error) {
	if w.found {
		if err := e.explainAll(ctx, w); err != nil {
			if later, ok := isExplainLater(err); ok {
				// A storm: the job comes back once the summary is due, holding no worker.
				return Result{Verdict: VerdictWait, Reason: later.why, RetryAfter: later.after}, nil
			}
			return Result{}, err
		}
		if err := e.automatePending(ctx, w, true); err != nil {
			return e.holdOr(ctx, w, err)
		}
	}
	if w.decided {
		if w.res.Verdict == VerdictReverted && !w.reverted {
			// Refused, but a later legal change moved the item on: nothing to set back.
			w.res = Result{Verdict: VerdictSuperseded, Reason: w.res.Reason}
		}
		return w.res, nil
	}
	if w.delivery != "" {
		// Judged by an earlier run (a duplicate delivery, or a retry after a crash).
		o, err := e.store().GetObservation(ctx, w.delivery)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return Result{}, fmt.Errorf("load report %s: %w", w.delivery, err)
		}
		if err == nil && o.Status != ObservationPending {
			switch o.Verdict {
			case VerdictReverted:
				return Result{Verdict: VerdictReverted, Reason: o.Reason, RevertedTo: o.LegalFrom}, nil
			case VerdictWouldRevert:
				return Result{Verdict: VerdictWouldRevert, Reason: o.Reason}, nil
			case VerdictAllowed:
				return Result{Verdict: VerdictAllowed, Reason: o.Reason}, nil
			}
			return Result{Verdict: VerdictIgnored, Reason: "already decided: " + o.Reason}, nil
		}
	}
	return Result{Verdict: VerdictIgnored, Reason: "in sync"}, nil
}

// unobservedPrefix opens the delivery id of a step no webhook reported (judged from the board).
const unobservedPrefix = "unobserved:"

// explainAll explains the item's refused steps whose explanation is not on GitHub yet. A walk
// of many items at once (JudgeWaiting) leaves a reported step's explanation to be written
// beside the walks once its item is settled (explainSoon), or by the report's job: comments
// are paced per actor and would hold up the other items' reverts. A step nobody reported is
// explained in the walk itself.
func (e *Enforcer) explainAll(ctx context.Context, w *walk) error {
	unexplained, err := e.store().Unexplained(ctx, w.rec.ItemID)
	if err != nil {
		return fmt.Errorf("load refused steps of item %s: %w", w.rec.ItemID, err)
	}
	skipped := false
	for _, o := range unexplained {
		if w.together && !strings.HasPrefix(o.DeliveryID, unobservedPrefix) {
			skipped = true
			continue
		}
		if err := e.explainStep(ctx, w, o); err != nil {
			if _, later := isExplainLater(err); later {
				return err
			}
			return fmt.Errorf("explain the revert of item %s: %w", w.it.ID, err)
		}
	}
	w.explainedAll = !skipped
	return nil
}

// automatePending runs the automation a legal step of the item owes, right after the step
// (docs/AUTOMATION.md: automation is part of its cause), dated at the step's time, whatever
// the board shows now: a later move of the item does not undo the cascade of an earlier one.
//
// again: it is not run right after its step (an earlier run failed part-way, or was
// interrupted).
func (e *Enforcer) automatePending(ctx context.Context, w *walk, again bool) error {
	auto := w.rec.AutomateState
	if auto == "" || !w.read {
		return nil
	}
	if auto == w.rec.LastLegalState && e.modeAt(w.it.Owner, w.it.ProjectNumber, w.rec.LegalAt).Writes() {
		// (Owed before the project left enforce: dropped, as automation is under warn and
		// evaluate.)
		it := w.it
		it.State = auto
		why := fmt.Sprintf("#%d moved to %s", w.it.Number, auto)
		if w.cause != "" {
			why = w.cause
		}
		c := cause{at: w.rec.LegalAt, why: why, again: again}
		if err := e.auto.run(ctx, w.board, it, c); err != nil {
			return err
		}
	}
	rec := w.rec
	rec.AutomateState = ""
	w.cause = ""
	return e.commit(ctx, w, Step{Record: rec})
}
