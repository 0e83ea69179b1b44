package enforce

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/marker"
	"github.com/ralph-gate/ralph-gate/policy"
)

// Every call the Enforcer's walk makes can fail; the job is retried, and the retry finishes
// the job exactly once: one revert, one comment, one audit entry per step.

// illegalMove is the failure tests' change: an agent skips Backlog → In Progress, on an item
// first seen through it.
func illegalMove(t *testing.T, tweak func(h *harness, o *Options)) (*harness, Change) {
	t.Helper()
	h := newHarnessWith(t, nil, tweak, issueN("A", "Backlog", 1))
	h.now = h.now.Add(time.Second)
	return h, h.board.move("A", "agent-1", "In Progress", h.now)
}

// assertRevertedOnce checks the outcome of illegalMove, however many attempts it took.
func assertRevertedOnce(t *testing.T, h *harness, ch Change) {
	t.Helper()
	if got := h.state("A"); got != "Backlog" {
		t.Errorf("board %q, want Backlog", got)
	}
	if len(h.board.sets) != 1 || h.board.sets[0] != "A=Backlog" {
		t.Errorf("writes %v, want one revert", h.board.sets)
	}
	if h.board.adds != 1 || h.board.updates != 0 {
		t.Errorf("%d comments added, %d updated; want one added", h.board.adds, h.board.updates)
	}
	es := h.audit("A")
	if len(es) != 1 || es[0].Verdict != VerdictReverted || es[0].Actor != "agent-1" || es[0].FromState != "Backlog" || es[0].ToState != "In Progress" {
		t.Errorf("audit %s, want the refused step once", verdicts(es))
	}
	rec := h.record("A")
	if rec.LastLegalState != "Backlog" || rec.ObservedState != "Backlog" || rec.RevertPending != "" || rec.RejectedState != "" || rec.AutomateState != "" {
		t.Errorf("record %+v", rec)
	}
	o, err := h.st.GetObservation(bg, ch.DeliveryID)
	if err != nil || o.Status != ObservationJudged || o.Verdict != VerdictReverted || !o.Explained {
		t.Errorf("report %+v %v", o, err)
	}
	vc, err := h.st.GetViolationComment(bg, "acme/app", 1)
	if err != nil || vc.NodeID == "" || vc.Count != 1 {
		t.Errorf("violation comment %+v %v", vc, err)
	}
	if bodies := h.commentBodies(); len(bodies) != 1 || !strings.Contains(bodies[0], violationMarker(o).String()) {
		t.Errorf("comments %q", bodies)
	}
}

// retry processes ch until it is decided (a few attempts at most).
func retry(t *testing.T, h *harness, ch Change) Result {
	t.Helper()
	for i := 0; i < 3; i++ {
		res, err := h.svc.Enforcer.ProcessChange(bg, h.board, ch)
		if err == nil && res.Verdict != VerdictWait {
			return res
		}
		if err != nil && !errors.Is(err, errInjected) {
			t.Fatalf("attempt %d: %v", i+1, err)
		}
	}
	t.Fatal("not decided after 3 attempts")
	return Result{}
}

func TestWalkFailuresAreRetriedToOneOutcome(t *testing.T) {
	tests := []struct {
		name         string
		board, store string // the method that fails on the first attempt
		sweep        bool   // the redelivery sweeper's proof fails
		want         string
	}{
		{name: "record the report", store: "RecordObservation", want: "record change"},
		{name: "lock", store: "LockItem", want: "lock item A"},
		{name: "load", store: "GetItem", want: "load item A"},
		{name: "reports", store: "PendingObservations", want: "load reports of item A"},
		{name: "sweep proof", sweep: true, want: "read the redelivery sweep's proof"},
		{name: "item read", board: "Item", want: "read item A"},
		{name: "steps", store: "CommitStep", want: "save item A"},
		{name: "revert", board: "SetState", want: `revert item A to "Backlog"`},
		{name: "refused steps", store: "Unexplained", want: "load refused steps of item A"},
		{name: "comment record", store: "GetActorViolationComment", want: "load violation comment"},
		{name: "write-ahead", store: "PutViolationComment", want: "record the violation comment to post"},
		{name: "comment", board: "AddComment", want: "add violation comment"},
		{name: "explained", store: "MarkExplained", want: "record the explanation of"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sw *sweeps
			h, ch := illegalMove(t, func(h *harness, o *Options) { sw = &sweeps{h: h}; o.Redeliveries = sw })
			h.board.breakOn(errInjected, tt.board)
			h.st.breakOn(errInjected, tt.store)
			if tt.sweep {
				sw.err = errInjected
			}
			_, err := h.svc.Enforcer.ProcessChange(bg, h.board, ch)
			if !errors.Is(err, errInjected) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
			h.board.breakOn(nil, tt.board)
			h.st.breakOn(nil, tt.store)
			sw.err = nil
			h.now = h.now.Add(time.Second)
			res := h.process(ch)
			if res.Verdict != VerdictReverted || res.RevertedTo != "Backlog" {
				t.Fatalf("retry %+v", res)
			}
			assertRevertedOnce(t, h, ch)
			// A third run (a duplicate delivery) changes nothing.
			if res := h.process(ch); res.Verdict != VerdictReverted || res.RevertedTo != "Backlog" {
				t.Fatalf("duplicate %+v", res)
			}
			assertRevertedOnce(t, h, ch)
		})
	}
}

// The store's writes fail one at a time, at each point of the job (the nth commit, the nth
// comment record, the explanation's mark): every retry ends the same.
func TestEveryStoreWriteFailingOnceEndsTheSame(t *testing.T) {
	counts := map[string]int{}
	h, ch := illegalMove(t, nil)
	h.st.fail = func(op string) error { counts[op]++; return nil }
	h.process(ch)
	if counts["commit"] < 4 || counts["put-comment"] != 2 || counts["mark-explained"] != 1 {
		t.Fatalf("writes of a revert: %v", counts)
	}
	for op, n := range counts {
		for k := 1; k <= n; k++ {
			t.Run(fmt.Sprintf("%s %d", op, k), func(t *testing.T) {
				h, ch := illegalMove(t, nil)
				seen := 0
				h.st.fail = func(o string) error {
					if o == op {
						seen++
						if seen == k {
							return fmt.Errorf("%s #%d: %w", op, k, errInjected)
						}
					}
					return nil
				}
				if _, err := h.svc.Enforcer.ProcessChange(bg, h.board, ch); !errors.Is(err, errInjected) {
					t.Fatalf("the failure was not returned: %v", err)
				}
				h.now = h.now.Add(time.Second)
				if res := retry(t, h, ch); res.Verdict != VerdictReverted {
					t.Fatalf("%+v", res)
				}
				assertRevertedOnce(t, h, ch)
			})
		}
	}
}

// A comment GitHub created whose record was lost is found on GitHub, never posted twice; a
// failure to look for it, or to record it, is retried.
func TestInterruptedCommentIsFoundNotPostedTwice(t *testing.T) {
	h, ch := illegalMove(t, nil)
	puts := 0
	h.st.fail = func(op string) error {
		if op == "put-comment" {
			if puts++; puts == 2 {
				return errInjected // the comment is on GitHub; its ids are not recorded
			}
		}
		return nil
	}
	if _, err := h.svc.Enforcer.ProcessChange(bg, h.board, ch); !errors.Is(err, errInjected) {
		t.Fatalf("%v", err)
	}
	if vc, _ := h.st.GetViolationComment(bg, "acme/app", 1); vc.NodeID != "" || h.board.adds != 1 {
		t.Fatalf("want a pending record of a posted comment: %+v, %d comments", vc, h.board.adds)
	}
	h.board.breakOn(errInjected, "FindComment")
	if _, err := h.svc.Enforcer.ProcessChange(bg, h.board, ch); !errors.Is(err, errInjected) || !strings.Contains(err.Error(), "look for an interrupted violation comment") {
		t.Fatalf("%v", err)
	}
	h.board.breakOn(nil, "FindComment")
	h.st.breakOn(errInjected, "PutViolationComment")
	if _, err := h.svc.Enforcer.ProcessChange(bg, h.board, ch); !errors.Is(err, errInjected) || !strings.Contains(err.Error(), "record the violation comment:") {
		t.Fatalf("%v", err)
	}
	h.st.breakOn(nil, "PutViolationComment")
	if res := h.process(ch); res.Verdict != VerdictReverted {
		t.Fatalf("%+v", res)
	}
	if h.board.calls["FindComment"] != 3 {
		t.Errorf("%d lookups", h.board.calls["FindComment"])
	}
	assertRevertedOnce(t, h, ch)
}

// A comment whose posting failed is posted by the retry, with the violations it was to carry.
func TestCommentNeverPostedIsPostedOnce(t *testing.T) {
	h, ch := illegalMove(t, nil)
	h.board.breakOn(errInjected, "AddComment")
	if _, err := h.svc.Enforcer.ProcessChange(bg, h.board, ch); !errors.Is(err, errInjected) {
		t.Fatal(err)
	}
	// Meanwhile another violation is refused; its explanation joins the pending comment.
	h.now = h.now.Add(time.Minute)
	second := h.board.move("A", "agent-1", "In Review", h.now)
	if _, err := h.svc.Enforcer.ProcessChange(bg, h.board, second); !errors.Is(err, errInjected) {
		t.Fatal(err)
	}
	h.board.breakOn(nil, "AddComment")
	if res := h.process(second); res.Verdict != VerdictReverted {
		t.Fatalf("%+v", res)
	}
	bodies := h.commentBodies()
	if h.board.adds != 1 || h.board.updates != 1 || len(bodies) != 1 || !strings.Contains(bodies[0], "reverted 2 Workflow State changes") {
		t.Fatalf("%d comments: %q", h.board.adds, bodies)
	}
	if ms, _ := marker.ParseTransitions(bodies[0]); len(ms) != 2 || ms[0].To != "In Progress" || ms[1].To != "In Review" {
		t.Fatalf("markers %+v", ms)
	}
	if h.board.calls["FindComment"] == 0 {
		t.Error("the pending comment was not looked for")
	}
	if vc, _ := h.st.GetViolationComment(bg, "acme/app", 1); vc.Count != 2 || vc.NodeID == "" {
		t.Errorf("record %+v", vc)
	}
}

// An issue on two projects has one violation comment per actor: the actor's violation on one
// project's item joins their comment the other's could not post yet, which is then not posted
// again.
func TestIssueOnTwoProjectsSharesOnePendingComment(t *testing.T) {
	a := issueN("A", "Backlog", 1)
	b := onProject(issueN("B", "Backlog", 1), 2)
	b.ContentID = a.ContentID
	h := newHarness(t, a, b)
	h.now = h.now.Add(time.Second)
	onA := h.board.move("A", "agent-1", "In Progress", h.now)
	h.board.breakOn(errInjected, "AddComment")
	if _, err := h.svc.Enforcer.ProcessChange(bg, h.board, onA); !errors.Is(err, errInjected) {
		t.Fatal(err)
	}
	h.board.breakOn(nil, "AddComment")
	h.now = h.now.Add(time.Second)
	if res := h.process(h.board.move("B", "agent-1", "In Review", h.now)); res.Verdict != VerdictReverted {
		t.Fatalf("%+v", res)
	}
	bodies := h.commentBodies()
	if ms, _ := marker.ParseTransitions(bodies[0]); h.board.adds != 1 || len(bodies) != 1 ||
		!strings.Contains(bodies[0], "reverted 2 Workflow State changes") || len(ms) != 2 || ms[0].To != "In Progress" || ms[1].To != "In Review" {
		t.Fatalf("%d comments %q", h.board.adds, bodies)
	}
	if res := h.process(onA); res.Verdict != VerdictReverted || h.board.adds != 1 || h.board.updates != 0 {
		t.Fatalf("%+v: %d added %d updated", res, h.board.adds, h.board.updates)
	}
	if o, _ := h.st.GetObservation(bg, onA.DeliveryID); !o.Explained {
		t.Errorf("A's violation is not marked explained: %+v", o)
	}
	// A pending record without markers (nothing to look for) is posted afresh.
	h2, ch := illegalMove(t, nil)
	if err := h2.st.PutViolationComment(bg, "acme/app", 1, ViolationComment{Actor: "agent-1", Count: 1, Body: "hand-written"}); err != nil {
		t.Fatal(err)
	}
	if res := h2.process(ch); res.Verdict != VerdictReverted || h2.board.adds != 1 || h2.board.calls["FindComment"] != 0 {
		t.Fatalf("%+v: %d comments, %d lookups", res, h2.board.adds, h2.board.calls["FindComment"])
	}
}

func TestViolationsCoalesceInOneComment(t *testing.T) {
	h, ch := illegalMove(t, nil)
	h.process(ch)
	h.now = h.now.Add(time.Minute)
	second := h.board.move("A", "agent-1", "In Review", h.now)
	h.board.breakOn(errInjected, "UpdateComment")
	if _, err := h.svc.Enforcer.ProcessChange(bg, h.board, second); !errors.Is(err, errInjected) || !strings.Contains(err.Error(), "update violation comment") {
		t.Fatalf("%v", err)
	}
	h.board.breakOn(nil, "UpdateComment")
	if res := h.process(second); res.Verdict != VerdictReverted {
		t.Fatalf("%+v", res)
	}
	vc, _ := h.st.GetViolationComment(bg, "acme/app", 1)
	bodies := h.commentBodies()
	if h.board.adds != 1 || h.board.updates != 1 || vc.Count != 2 || len(bodies) != 1 || bodies[0] != vc.Body || !vc.UpdatedAt.Equal(h.now) {
		t.Fatalf("%d added, %d updated, record %+v", h.board.adds, h.board.updates, vc)
	}
	if ms, _ := marker.ParseTransitions(vc.Body); len(ms) != 2 || strings.Count(vc.Body, "\n- ") != 2 {
		t.Fatalf("coalesced body:\n%s", vc.Body)
	}

	// A body edited by hand (lines and markers no longer match) starts the list afresh.
	vc.Body = strings.Replace(vc.Body, "\n- ", "\n* ", 1)
	if err := h.st.PutViolationComment(bg, "acme/app", 1, vc); err != nil {
		t.Fatal(err)
	}
	h.now = h.now.Add(time.Minute)
	third := h.board.move("A", "owner", "Research Needed", h.now) // set up a state an agent can be refused from
	h.process(third)
	h.now = h.now.Add(time.Minute)
	h.process(h.board.move("A", "agent-1", "Done", h.now))
	vc, _ = h.st.GetViolationComment(bg, "acme/app", 1)
	ms, _ := marker.ParseTransitions(vc.Body)
	if vc.Count != 3 || len(ms) != 1 || ms[0].To != "Done" || !strings.Contains(vc.Body, "reverted 3 Workflow State changes") || h.board.adds != 1 {
		t.Fatalf("after a hand edit: %+v\n%s", vc, vc.Body)
	}
}

func TestCoalescedCommentListsTheNewestTwenty(t *testing.T) {
	h, ch := illegalMove(t, nil)
	h.process(ch)
	for i := 0; i < maxListedViolations; i++ {
		h.now = h.now.Add(10 * time.Second)
		if res := h.process(h.board.move("A", "agent-1", "In Review", h.now)); res.Verdict != VerdictReverted {
			t.Fatalf("%d: %+v", i, res)
		}
	}
	vc, _ := h.st.GetViolationComment(bg, "acme/app", 1)
	ms, _ := marker.ParseTransitions(vc.Body)
	if vc.Count != maxListedViolations+1 || len(ms) != maxListedViolations || ms[0].To != "In Review" || h.board.adds != 1 ||
		!strings.Contains(vc.Body, fmt.Sprintf("reverted %d Workflow State changes", maxListedViolations+1)) {
		t.Fatalf("count %d, %d markers (first to %s), %d comments", vc.Count, len(ms), ms[0].To, h.board.adds)
	}
}

// A duplicate delivery of a report judged earlier answers with the earlier verdict; a failure
// to read it is returned.
func TestDuplicateDeliveryAnswersTheEarlierVerdict(t *testing.T) {
	h := newHarness(t, issueN("A", "Backlog", 1))
	allowed := h.board.move("A", "alice", "Research Needed", h.now)
	h.process(allowed)
	h.st.breakOn(errInjected, "GetObservation")
	if _, err := h.svc.Enforcer.ProcessChange(bg, h.board, allowed); !errors.Is(err, errInjected) || !strings.Contains(err.Error(), "load report") {
		t.Fatalf("%v", err)
	}
	h.st.breakOn(nil, "GetObservation")
	if res := h.process(allowed); res.Verdict != VerdictAllowed {
		t.Fatalf("%+v", res)
	}
	// An own write is ignored without a job; its report, when walked, is "already decided".
	own := Change{DeliveryID: "own-1", ItemID: "A", FromKnown: true, From: "Research Needed", To: "Research Needed", Actor: "ralph-gate[bot]", At: h.now, ReceivedAt: h.now}
	if _, err := h.svc.Enforcer.Observe(bg, own); err != nil {
		t.Fatal(err)
	}
	if res, err := h.svc.Enforcer.walk(bg, h.board, "A", "own-1"); err != nil || res.Verdict != VerdictIgnored || res.Reason != "our own write" {
		t.Fatalf("%+v %v", res, err)
	}
	if res, err := h.svc.Enforcer.walk(bg, h.board, "A", "own-1"); err != nil || res.Verdict != VerdictIgnored || !strings.HasPrefix(res.Reason, "already decided: ") {
		t.Fatalf("%+v %v", res, err)
	}
	if res, err := h.svc.Enforcer.walk(bg, h.board, "A", "never-delivered"); err != nil || res.Verdict != VerdictIgnored || res.Reason != "in sync" {
		t.Fatalf("%+v %v", res, err)
	}
}

func TestObserveDefaultsAndSkips(t *testing.T) {
	h := newHarness(t, issueN("A", "Backlog", 1))
	if _, err := h.svc.Enforcer.Observe(bg, Change{ItemID: "A"}); err != nil || len(h.st.obs) != 0 {
		t.Fatalf("a change without a delivery was recorded: %v", err)
	}
	if _, err := h.svc.Enforcer.Observe(bg, Change{DeliveryID: "d"}); err != nil || len(h.st.obs) != 0 {
		t.Fatalf("a change without an item was recorded: %v", err)
	}
	if _, err := h.svc.Enforcer.Observe(bg, Change{DeliveryID: "d1", ItemID: "A", To: "Research Needed", Actor: "alice"}); err != nil {
		t.Fatal(err)
	}
	o, err := h.st.GetObservation(bg, "d1")
	if err != nil || !o.At.Equal(h.now) || !o.ReceivedAt.Equal(h.now) || o.Status != ObservationPending {
		t.Fatalf("%+v %v", o, err)
	}
	at := h.now.Add(-time.Minute)
	if _, err := h.svc.Enforcer.Observe(bg, Change{DeliveryID: "d2", ItemID: "A", ReceivedAt: at}); err != nil {
		t.Fatal(err)
	}
	if o, _ := h.st.GetObservation(bg, "d2"); !o.At.Equal(at) || !o.ReceivedAt.Equal(at) {
		t.Fatalf("%+v", o)
	}
}

// An item with a long backlog of reports is walked in bounded runs.
func TestLongHistoryIsContinuedInTheNextRun(t *testing.T) {
	h := newHarness(t, issueN("A", "Backlog", 1))
	h.adoptAll("A")
	var last Change
	const n = maxStepsPerRun + 5
	for i := 0; i < n; i++ {
		to := "Human Needed"
		if i%2 == 1 {
			to = "Backlog"
		}
		last = h.board.move("A", "alice", to, h.now.Add(time.Duration(i+1)*time.Second))
		if _, err := h.svc.Enforcer.Observe(bg, last); err != nil {
			t.Fatal(err)
		}
	}
	h.now = h.now.Add(time.Hour)
	res := h.process(last)
	if res.Verdict != VerdictWait || res.Reason != "a long history: continued in the next run" {
		t.Fatalf("%+v", res)
	}
	if pending, _ := h.st.PendingObservations(bg, "A"); len(pending) != n-maxStepsPerRun {
		t.Fatalf("%d reports left, want %d", len(pending), n-maxStepsPerRun)
	}
	if res := h.process(last); res.Verdict != VerdictAllowed {
		t.Fatalf("%+v", res)
	}
	if es := h.audit("A"); len(es) != n+1 || len(h.board.sets) != 0 {
		t.Fatalf("%d audit entries, writes %v", len(es), h.board.sets)
	}
}

// A drift waiting for its proof records when it was first noticed; a failure to record it is
// returned.
func TestHoldRecordsTheGap(t *testing.T) {
	h := newHarness(t, issueN("A", "Backlog", 1))
	h.adoptAll("A")
	h.now = h.now.Add(time.Minute)
	driftTo(h.board, "A", "In Progress", time.Time{})
	h.unproven()
	h.st.breakOn(errInjected, "CommitStep")
	if _, err := h.svc.Enforcer.walk(bg, h.board, "A", ""); !errors.Is(err, errInjected) {
		t.Fatalf("%v", err)
	}
	h.st.breakOn(nil, "CommitStep")
	res, err := h.svc.Enforcer.walk(bg, h.board, "A", "")
	if err != nil || res.Verdict != VerdictWait || res.RetryAfter <= 0 {
		t.Fatalf("%+v %v", res, err)
	}
	if rec := h.record("A"); !rec.GapSince.Equal(h.now) {
		t.Fatalf("%+v", rec)
	}
	// Adoption can fail too.
	h2 := newHarness(t, issueN("B", "Backlog", 2))
	h2.st.breakOn(errInjected, "CommitStep")
	if _, err := h2.svc.Enforcer.walk(bg, h2.board, "B", ""); !errors.Is(err, errInjected) || h2.hasRecord("B") {
		t.Fatalf("%v", err)
	}
}

// The gates read their inputs as they were when the move was made: the group's legal states
// then (from each member's judged history), the open blockers and the work in progress.
func TestGatesJudgeTheGroupAsItWas(t *testing.T) {
	parent := issueN("P", "Ready for Plan", 10)
	a := issueN("A", "Ready for Plan", 1)
	b := issueN("B", "Backlog", 2)
	c := issueN("C", "Ready for Plan", 3) // never recorded: its board value counts
	h := newHarness(t, parent, a, b, c)
	setFamily(h.board, parent, a, b, c)
	h.adoptAll("A", "B")

	// A's move is judged after B's later move: B was still in Backlog when A moved.
	t1, t2 := h.now.Add(time.Second), h.now.Add(2*time.Second)
	early := h.board.move("A", "agent-1", "Plan in Progress", t1)
	h.now = t2
	h.process(h.board.move("B", "alice", "Ready for Plan", t2))
	h.now = t2.Add(time.Second)
	res := h.process(early)
	if res.Verdict != VerdictReverted || !strings.Contains(res.Reason, "needs the whole group at Ready for Plan") || !strings.Contains(res.Reason, "#2") {
		t.Fatalf("%+v", res)
	}
	if es := h.audit("A"); es[len(es)-1].Rule != "convergence" {
		t.Fatalf("audit %s", verdicts(es))
	}
	// Moved again now that B is ready: allowed.
	h.now = h.now.Add(time.Second)
	if res := h.process(h.board.move("A", "agent-1", "Plan in Progress", h.now)); res.Verdict != VerdictAllowed {
		t.Fatalf("%+v", res)
	}

	// A member whose history up to the move is still being judged holds the move.
	h.now = h.now.Add(time.Second)
	h.process(h.board.move("A", "agent-1", "Ready for Plan", h.now))
	h.now = h.now.Add(time.Second)
	bMove := h.board.move("B", "alice", "Human Needed", h.now)
	if _, err := h.svc.Enforcer.Observe(bg, bMove); err != nil {
		t.Fatal(err)
	}
	h.now = h.now.Add(time.Second)
	held := h.board.move("A", "agent-1", "Plan in Progress", h.now)
	h.now = h.now.Add(time.Second)
	res = h.process(held)
	if res.Verdict != VerdictWait || !strings.Contains(res.Reason, "#2: a group member's history is still being judged") {
		t.Fatalf("%+v", res)
	}
	h.st.breakOn(errInjected, "PendingItemsBefore")
	if _, err := h.svc.Enforcer.ProcessChange(bg, h.board, held); !errors.Is(err, errInjected) || !strings.Contains(err.Error(), "load the items with reports waiting") {
		t.Fatalf("%v", err)
	}
	h.st.breakOn(nil, "PendingItemsBefore")
	h.board.breakOn(errInjected, "Family")
	if _, err := h.svc.Enforcer.ProcessChange(bg, h.board, held); !errors.Is(err, errInjected) || !strings.Contains(err.Error(), "read the item's ancestors") {
		t.Fatalf("%v", err)
	}
	h.board.breakOn(nil, "Family")
	// Once B's history is judged, B's walk wakes A's, which judges the held move with B's state
	// at the time of A's move: B had left the group's gate, so it is refused.
	h.process(bMove)
	h.drain()
	if es := h.audit("A"); es[len(es)-1].Rule != "convergence" {
		t.Fatalf("audit %s", verdicts(es))
	}
	// The gate's read of a member's state then can fail; so can the read of the group itself,
	// once nothing of the family waits any more.
	h.now = h.now.Add(time.Second)
	again := h.board.move("A", "agent-1", "Plan in Progress", h.now)
	h.now = h.now.Add(time.Second)
	h.st.breakOn(errInjected, "LegalStateAt")
	if _, err := h.svc.Enforcer.ProcessChange(bg, h.board, again); !errors.Is(err, errInjected) || !strings.Contains(err.Error(), "load item B") {
		t.Fatalf("%v", err)
	}
	h.st.breakOn(nil, "LegalStateAt")
	h.board.breakOn(errInjected, "Family")
	if _, err := h.svc.Enforcer.ProcessChange(bg, h.board, again); !errors.Is(err, errInjected) || !strings.Contains(err.Error(), "read group") {
		t.Fatalf("%v", err)
	}
}

func TestBlockersAndWIPGates(t *testing.T) {
	a := issueN("A", "Research Needed", 1)
	a.OpenBlockers = 1
	x := issueN("X", "", 5)
	w := issueN("W", "Plan in Review", 2)
	busy := issueN("Y", "In Progress", 3)
	h := newHarnessWith(t, func(s *policy.Spec) { s.Gates.WIPLimits = map[string]int{"In Progress": 1} }, nil, a, x, w, busy)
	h.board.family["I_A"] = Family{Self: rel(a), OpenBlockers: []Relative{rel(x)}}
	h.adoptAll("A", "W", "Y")
	h.now = h.now.Add(time.Second)

	blocked := h.board.move("A", "agent-1", "Research in Progress", h.now)
	h.board.breakOn(errInjected, "Family")
	if _, err := h.svc.Enforcer.ProcessChange(bg, h.board, blocked); !errors.Is(err, errInjected) || !strings.Contains(err.Error(), "read blockers") {
		t.Fatalf("%v", err)
	}
	h.board.breakOn(nil, "Family")
	res := h.process(blocked)
	if res.Verdict != VerdictReverted || !strings.Contains(res.Reason, `open blockers: #5 "Issue X" is open`) {
		t.Fatalf("%+v", res)
	}

	wip := h.board.move("W", "agent-1", "In Progress", h.now)
	h.st.breakOn(errInjected, "CountInState")
	if _, err := h.svc.Enforcer.ProcessChange(bg, h.board, wip); !errors.Is(err, errInjected) || !strings.Contains(err.Error(), "count work in progress") {
		t.Fatalf("%v", err)
	}
	h.st.breakOn(nil, "CountInState")
	if res := h.process(wip); res.Verdict != VerdictReverted || !strings.Contains(res.Reason, "WIP limit (1 of 1") {
		t.Fatalf("%+v", res)
	}
	if es := h.audit("W"); es[len(es)-1].Rule != "wip_limit" {
		t.Fatalf("audit %s", verdicts(es))
	}
	// Once Y is done, there is room.
	h.now = h.now.Add(time.Second)
	h.process(h.board.move("Y", "owner", "Done", h.now))
	h.now = h.now.Add(time.Second)
	if res := h.process(h.board.move("W", "agent-1", "In Progress", h.now)); res.Verdict != VerdictAllowed {
		t.Fatalf("%+v", res)
	}
}

// An app's write that its record does not hold changes the card only (every write is journaled
// before it is made: it is one that landed after changes judged first): the legal state and
// its lock holder stay, and the card is put back without blaming anyone.
func TestAnUnheldWriteOfTheAppsKeepsTheLock(t *testing.T) {
	h := newHarness(t, issueN("A", "Research Needed", 1))
	h.adoptAll("A")
	h.now = h.now.Add(time.Second)
	h.process(h.board.move("A", "agent-1", "Research in Progress", h.now))
	if h.record("A").LockHolder != "agent-1" {
		t.Fatal("no lock")
	}
	h.now = h.now.Add(time.Second)
	own := h.board.move("A", "ralph-gate[bot]", "Human Needed", h.now)
	if _, err := h.svc.Enforcer.Observe(bg, own); err != nil {
		t.Fatal(err)
	}
	h.now = h.now.Add(time.Minute)
	if _, err := h.svc.Enforcer.walk(bg, h.board, "A", ""); err != nil {
		t.Fatal(err)
	}
	rec := h.record("A")
	if rec.LastLegalState != "Research in Progress" || rec.LockHolder != "agent-1" || len(h.board.sets) != 1 || h.state("A") != "Research in Progress" {
		t.Fatalf("%+v, writes %v", rec, h.board.sets)
	}
	for _, e := range h.audit("A") {
		if e.Verdict == VerdictReverted || (e.Actor == DriftActor && e.Verdict != VerdictAdopted) {
			t.Fatalf("someone was blamed for the app's write: %s", verdicts(h.audit("A")))
		}
	}
}

func TestRecordsAndService(t *testing.T) {
	for _, v := range AuditVerdicts() {
		if !v.Recorded() {
			t.Errorf("%s is not recorded", v)
		}
	}
	for _, v := range []Verdict{VerdictSuperseded, VerdictWait, "other"} {
		if v.Recorded() {
			t.Errorf("%s is recorded", v)
		}
	}
	m := policy.DefaultMachine()
	svc := New(m, policy.Actors{}, newMemStore(), nil, Options{AppLogin: "app[bot]"})
	if svc.Facade.Machine() != m || svc.Enforcer.opts.GapHold != 2*time.Minute || svc.Enforcer.opts.States != DefaultLifecycleStates() ||
		svc.Enforcer.actors.App != "app[bot]" {
		t.Fatalf("defaults %+v", svc.Enforcer.opts)
	}
	if now := svc.Enforcer.now(); time.Since(now) > time.Minute {
		t.Errorf("the default clock is not the time: %v", now)
	}
	if d := DefaultOptions(); d.ReorderWindow != 5*time.Second || d.CoalesceWindow != 10*time.Minute {
		t.Errorf("%+v", d)
	}
}

// A violation comment someone deleted is not edited again and again: the next violation is
// told in a new comment at once, and the record keeps the new one (it took 13 failed edits,
// about 12 minutes, before).
func TestDeletedViolationCommentIsReplaced(t *testing.T) {
	h, ch := illegalMove(t, nil)
	h.process(ch)
	first, _ := h.st.GetViolationComment(bg, "acme/app", 1)
	h.now = h.now.Add(time.Minute)
	second := h.board.move("A", "agent-1", "In Review", h.now)
	h.board.breakOn(fmt.Errorf("update comment %s: %w", first.NodeID, ErrNotFound), "UpdateComment")
	if res := h.process(second); res.Verdict != VerdictReverted {
		t.Fatalf("%+v", res)
	}
	vc, _ := h.st.GetViolationComment(bg, "acme/app", 1)
	if h.board.adds != 2 || h.board.calls["UpdateComment"] != 1 || vc.NodeID == first.NodeID || vc.NodeID == "" || vc.Count != 1 {
		t.Fatalf("%d added, %d edits tried, record %+v (the deleted one was %s)", h.board.adds, h.board.calls["UpdateComment"], vc, first.NodeID)
	}
	if ms, _ := marker.ParseTransitions(vc.Body); len(ms) != 1 || !strings.Contains(vc.Body, "In Review") {
		t.Fatalf("the new comment:\n%s", vc.Body)
	}
}
