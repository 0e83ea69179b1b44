package enforce

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/policy"
)

// A close or a reopen is its actor's move: an agent's close of an item in Ready for Plan (a
// move to Done agents may not make) is undone — the issue reopened, the card left in Ready for
// Plan — explained once with a Recovery, and audited as refused; so is an agent's reopen of a
// Done item (closed again). A person's close that the table allows moves the card as before.
func TestLifecycleMovesAreJudgedAsTheirActors(t *testing.T) {
	h := newHarness(t, issueN("A", "Ready for Plan", 7), issueN("B", "Done", 8), issueN("C", "In Review", 9))
	h.adoptAll("A", "B", "C")
	for _, id := range []string{"A", "B"} { // closed on GitHub
		it := h.board.items[id]
		it.Open = false
		h.board.items[id] = it
	}

	closed := Lifecycle{DeliveryID: "close-A", Kind: LifecycleIssueClosed, Owner: "acme", Repo: "app", Number: 7, StateReason: "completed", Actor: "agent-1"}
	for i := range 2 { // a retried job undoes and explains nothing twice
		res, err := h.svc.Enforcer.ProcessLifecycle(bg, h.board, closed)
		if err != nil || res.Verdict != VerdictReverted {
			t.Fatalf("run %d: %+v %v", i+1, res, err)
		}
	}
	if h.state("A") != "Ready for Plan" || !h.board.items["A"].Open || strings.Join(h.board.issues, " ") != "I_A=open" {
		t.Fatalf("A is %q, open %v; issue writes %v", h.state("A"), h.board.items["A"].Open, h.board.issues)
	}
	body := strings.Join(h.commentBodies(), "\n")
	for _, want := range []string{"<!-- ralph-gate:lifecycle close-A -->", "**ralph-gate reopened the issue.**", "`agent-1` (agent) closed this issue",
		"from **Ready for Plan** to **Done**", "It stays in **Ready for Plan**", "Recovery: "} {
		if !strings.Contains(body, want) {
			t.Errorf("the explanation lacks %q:\n%s", want, body)
		}
	}
	if h.board.adds != 1 || h.board.items["A"].Open != true {
		t.Errorf("%d comments, want 1", h.board.adds)
	}
	es := h.audit("A")
	if last := es[len(es)-1]; last.Verdict != VerdictReverted || last.Actor != "agent-1" || last.ToState != "Done" || last.Cause != LifecycleIssueClosed {
		t.Fatalf("audit %s", verdicts(es))
	}

	reopened := Lifecycle{DeliveryID: "reopen-B", Kind: LifecycleIssueReopened, Owner: "acme", Repo: "app", Number: 8, Actor: "agent-2"}
	b := h.board.items["B"]
	b.Open = true // GitHub reopened it
	h.board.items["B"] = b
	if _, err := h.svc.Enforcer.ProcessLifecycle(bg, h.board, reopened); err != nil {
		t.Fatal(err)
	}
	if h.state("B") != "Done" || h.board.items["B"].Open || !strings.Contains(strings.Join(h.board.issues, " "), "I_B=closed:completed") {
		t.Fatalf("B is %q, open %v; issue writes %v", h.state("B"), h.board.items["B"].Open, h.board.issues)
	}

	// A close of an issue In Progress is what a merge does (In Progress → In Review → Done): the
	// close of a merged pull request's issue may be handled before the merge's move.
	h.board.items["D"] = issueN("D", "In Progress", 10)
	h.adoptAll("D")
	merged := Lifecycle{DeliveryID: "close-D", Kind: LifecycleIssueClosed, Owner: "acme", Repo: "app", Number: 10, StateReason: "completed", Actor: "agent-1"}
	if res, err := h.svc.Enforcer.ProcessLifecycle(bg, h.board, merged); err != nil || res.Verdict != VerdictAllowed || h.state("D") != "Done" {
		t.Fatalf("%+v %v: D is %q", res, err, h.state("D"))
	}

	// A person's close the table allows moves the card.
	done := Lifecycle{DeliveryID: "close-C", Kind: LifecycleIssueClosed, Owner: "acme", Repo: "app", Number: 9, StateReason: "completed", Actor: "alice"}
	if res, err := h.svc.Enforcer.ProcessLifecycle(bg, h.board, done); err != nil || res.Verdict != VerdictAllowed || h.state("C") != "Done" {
		t.Fatalf("%+v %v: C is %q", res, err, h.state("C"))
	}
}

// A handoff reads the item's issue against its history: closed by a close that stood and then
// moved on the board by a person, it is served; reopened by someone whose reopen is not judged
// yet (its webhook lost), it waits, refused as busy.
func TestHandoffWaitsForAnUnjudgedCloseOrReopen(t *testing.T) {
	h := newHarness(t, issueN("A", "In Review", 7))
	h.adoptAll("A")
	setOpen := func(open bool) {
		it := h.board.items["A"]
		it.Open = open
		h.board.items["A"] = it
	}
	setOpen(false)
	h.now = h.now.Add(time.Second)
	closed := Lifecycle{DeliveryID: "close-A", Kind: LifecycleIssueClosed, Owner: "acme", Repo: "app", Number: 7, StateReason: "completed", Actor: "alice", At: h.now}
	if res, err := h.svc.Enforcer.ProcessLifecycle(bg, h.board, closed); err != nil || res.Verdict != VerdictAllowed || h.state("A") != "Done" {
		t.Fatalf("%+v %v: A is %q", res, err, h.state("A"))
	}
	h.now = h.now.Add(time.Second)
	h.process(h.board.move("A", "alice", "Backlog", h.now)) // the issue stays closed
	h.now = h.now.Add(time.Second)
	ho := Handoff{Agent: "agent-1", Command: "triage", ToState: "Research Needed", Reason: "triaged"}
	if res, err := h.handoff("A", ho); err != nil || !res.Changed {
		t.Fatalf("a closed issue whose history explains it: %+v %v", res, err)
	}
	// Reopened; the webhook never came.
	setOpen(true)
	h.now = h.now.Add(time.Second)
	ho.ToState = "Ready for Plan"
	_, err := h.handoff("A", ho)
	asRefusal(t, err, "it is open, and ralph-gate has not judged that change yet")
	if h.state("A") != "Research Needed" {
		t.Fatalf("a refused handoff moved A to %q", h.state("A"))
	}
}

// A close and a reopen both unreported leave the issue open, as its history left it; its
// timeline shows them, and a handoff waits until their reports can no longer be missing (a
// proof reaches past their second). The app's own close or reopen (named by its slug, as
// GraphQL names a bot) is no one's move.
func TestHandoffWaitsForAnUnreportedCloseAndReopen(t *testing.T) {
	h := newHarness(t, issueN("A", "Backlog", 7))
	h.adoptAll("A")
	h.unproven()
	h.now = h.now.Add(time.Second)
	at := h.now.Truncate(time.Second)
	it := h.board.items["A"]
	it.IssueEvents = []IssueEvent{{Closed: true, Actor: "alice", At: at}, {Actor: "alice", At: at}}
	h.board.items["A"] = it
	ho := Handoff{Agent: "agent-1", Command: "triage", ToState: "Research Needed", Reason: "triaged"}
	_, err := h.handoff("A", ho)
	asRefusal(t, err, "it was reopened at "+at.UTC().Format(time.RFC3339)+", and ralph-gate has not judged that change yet")
	if h.state("A") != "Backlog" || len(h.handoffs("A")) != 0 {
		t.Fatalf("a refused handoff moved A to %q", h.state("A"))
	}

	// Reported and judged: the handoff waits no more, nor for the app's own undo after.
	h.proven()
	for i, ev := range []Lifecycle{
		{DeliveryID: "close-A", Kind: LifecycleIssueClosed, StateReason: "completed", Actor: "alice", At: at},
		{DeliveryID: "reopen-A", Kind: LifecycleIssueReopened, Actor: "alice", At: at},
	} {
		ev.Owner, ev.Repo, ev.Number = "acme", "app", 7
		h.now = h.now.Add(time.Duration(i+1) * 10 * time.Second) // past the proof's reach
		if _, err := h.svc.Enforcer.ProcessLifecycle(bg, h.board, ev); err != nil {
			t.Fatal(err)
		}
	}
	it = h.board.items["A"]
	it.IssueEvents = append(it.IssueEvents, IssueEvent{Closed: true, Actor: "ralph-gate", At: h.now.Truncate(time.Second)})
	h.board.items["A"] = it
	if h.state("A") != "Backlog" {
		t.Fatalf("closed and reopened by alice: A in %q, want Backlog", h.state("A"))
	}
	// GitHub reports the card's moves the close and the reopen made (ours): a step waits for
	// them, one unreported write of ours at a time.
	for i, wr := range h.record("A").Writes {
		ch := ownReport("A", wr.Over, wr.To, wr.Sent.Truncate(time.Second))
		ch.DeliveryID = fmt.Sprintf("own-%d", i)
		if r := h.processDone(ch); r.Verdict != VerdictIgnored {
			t.Fatalf("our write's report %+v: %+v", wr, r)
		}
	}
	h.unproven() // (the app's undo may not be reported yet: it never is)
	if res, err := h.handoff("A", ho); err != nil || !res.Changed {
		t.Fatalf("after the close and the reopen were judged: %+v %v", res, err)
	}
}

// A close or reopen no report has told of, once a proof reaches past its second, never reached
// the app: it is before the item's history, or not the app's to judge, and keeps no handoff
// waiting.
func TestOldUnreportedCloseKeepsNoHandoffWaiting(t *testing.T) {
	h := newHarness(t, issueN("A", "Backlog", 7))
	h.adoptAll("A")
	h.proof = policy.SweepProof{Available: true, Full: true, Until: h.now}
	it := h.board.items["A"]
	it.IssueEvents = []IssueEvent{{Closed: true, Actor: "alice", At: h.now.Add(-time.Hour)}, {Actor: "alice", At: h.now.Add(-time.Hour)}}
	h.board.items["A"] = it
	ho := Handoff{Agent: "agent-1", Command: "triage", ToState: "Research Needed", Reason: "triaged"}
	if res, err := h.handoff("A", ho); err != nil || !res.Changed {
		t.Fatalf("%+v %v", res, err)
	}
	// With no proof at all (sweeps failing), one is waited for no longer than gap_hold, as a
	// report is.
	h2 := newHarness(t, issueN("B", "Backlog", 8))
	h2.adoptAll("B")
	h2.unproven()
	it = h2.board.items["B"]
	it.IssueEvents = []IssueEvent{{Closed: true, Actor: "alice", At: h2.now.Add(-3 * time.Minute)}, {Actor: "alice", At: h2.now.Add(-3 * time.Minute)}}
	h2.board.items["B"] = it
	if res, err := h2.handoff("B", ho); err != nil || !res.Changed {
		t.Fatalf("past gap_hold: %+v %v", res, err)
	}
}
