package enforce

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// provisionalHarness is a harness whose sweeper proves nothing yet (reports wait for their
// proof) and whose observer counts what became of provisional reverts; items start adopted.
func provisionalHarness(t *testing.T, items ...Item) (*harness, *observer) {
	t.Helper()
	obs := &observer{}
	h := newHarnessWith(t, nil, func(h *harness, o *Options) { o.Observer = obs }, items...)
	for _, it := range items {
		h.adoptAll(it.ID)
	}
	h.unproven()
	return h, obs
}

// ownReport is the webhook of the app's own write of `to` over `from`.
func ownReport(id, from, to string, at time.Time) Change {
	return Change{DeliveryID: "own:" + id + ":" + to, ItemID: id, ProjectID: "PVT_1", FromKnown: true, From: from, To: to,
		Actor: "ralph-gate[bot]", At: at, ReceivedAt: at, ContentType: ContentIssue}
}

// A move refused by a settled rule is set back at once, before any proof, with nothing told
// yet; the proof judges it as always, and the revert is the revert (explained once, audited
// reverted, confirmed). A refusal that depends on more, or a legal move, waits for the proof
// without a write.
func TestProvisionalRevert(t *testing.T) {
	tests := []struct {
		name        string
		start       string
		holder      string // the lock holder the judged history left
		actor, to   string
		provisional bool // reverted before the proof
	}{
		{name: "not a transition for agents", start: "Backlog", actor: "agent-1", to: "In Progress", provisional: true},
		{name: "humans only", start: "In Progress", holder: "agent-1", actor: "agent-1", to: "Canceled", provisional: true},
		{name: "locked by another agent", start: "Research in Progress", holder: "agent-2", actor: "agent-1", to: "Research Needed", provisional: true},
		{name: "a legal move", start: "Research Needed", actor: "agent-1", to: "Research in Progress"},
		{name: "a person's move the table allows", start: "Backlog", actor: "alice", to: "Research Needed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, obs := provisionalHarness(t)
			h.board.items["A"] = issue("A", tt.start)
			h.put(Record{ItemID: "A", LastLegalState: tt.start, LockHolder: tt.holder, LockSince: h.now.Add(-time.Hour)})
			at := h.now
			ch := h.board.move("A", tt.actor, tt.to, at)
			if res := h.process(ch); res.Verdict != VerdictWait {
				t.Fatalf("before the proof: %+v, want a wait", res)
			}
			if !tt.provisional {
				if h.state("A") != tt.to || len(h.board.sets) != 0 {
					t.Fatalf("written before the proof: state %q, writes %v", h.state("A"), h.board.sets)
				}
				return
			}
			if h.state("A") != tt.start || h.board.adds != 0 {
				t.Fatalf("not reverted at once (state %q) or told before the proof (%d comments)", h.state("A"), h.board.adds)
			}
			if rec := h.record("A"); rec.Provisional != tt.start || rec.ProvisionalOver != tt.to || rec.ProvisionalFor != ch.DeliveryID {
				t.Fatalf("the provisional revert is not journaled: %+v", rec)
			}
			// Its own report comes back before the proof, and waits with the move.
			own := ownReport("A", tt.to, tt.start, at)
			if res := h.process(own); res.Verdict != VerdictWait {
				t.Fatalf("own report before the proof: %+v", res)
			}
			h.proven()
			h.now = h.now.Add(10 * time.Second)
			res := h.processDone(ch)
			h.processDone(own)
			if res.Verdict != VerdictReverted || h.state("A") != tt.start {
				t.Fatalf("after the proof: %+v, state %q; want reverted to %s", res, h.state("A"), tt.start)
			}
			if h.board.adds != 1 || len(h.board.sets) != 1 {
				t.Errorf("comments %d, writes %v: want one of each", h.board.adds, h.board.sets)
			}
			if obs.provisional[true] != 1 || obs.provisional[false] != 0 {
				t.Errorf("outcomes %v, want one confirmed", obs.provisional)
			}
			if got := verdicts(h.audit("A")); strings.Count(got, string(VerdictReverted)) != 1 || strings.Contains(got, string(VerdictWithdrawn)) {
				t.Errorf("audit %s: want one reverted, nothing withdrawn", got)
			}
			if rec := h.record("A"); rec.Provisional != "" || rec.ProvisionalFor != "" || !rec.settled() {
				t.Errorf("record after the proof: %+v", rec)
			}
		})
	}
}

// A round trip whose webhooks came late (a person's legal move away, an agent's refused move
// back) makes the move the provisional revert set back legal after all: once the proof judges
// the true history, the revert is withdrawn (audited, with why), the agent's move is put back
// and nobody is told it was refused; the refused step of the round trip is explained.
func TestProvisionalRevertWithdrawn(t *testing.T) {
	h, obs := provisionalHarness(t, issue("A", "Backlog"))
	t0 := h.now
	away := h.board.move("A", "alice", "Research Needed", t0)            // legal: hidden (late)
	back := h.board.move("A", "agent-2", "Backlog", t0.Add(time.Second)) // refused: hidden (late)
	claim := h.board.move("A", "agent-1", "Research in Progress", t0.Add(2*time.Second))
	h.now = t0.Add(2 * time.Second)
	if res := h.process(claim); res.Verdict != VerdictWait || h.state("A") != "Backlog" {
		t.Fatalf("the claim, as the app knew it: %+v state %q; want a provisional revert to Backlog", res, h.state("A"))
	}
	own := ownReport("A", "Research in Progress", "Backlog", h.now)
	for _, ch := range []Change{own, away, back} {
		h.process(ch)
	}
	h.proven()
	h.now = h.now.Add(10 * time.Second)
	for _, ch := range []Change{away, back, claim, own} {
		h.processDone(ch)
	}
	if h.state("A") != "Research in Progress" {
		t.Fatalf("state %q, want the claim put back (Research in Progress)", h.state("A"))
	}
	if obs.provisional[false] != 1 || obs.provisional[true] != 0 {
		t.Errorf("outcomes %v, want one withdrawn", obs.provisional)
	}
	var withdrawn []AuditEntry
	for _, e := range h.audit("A") {
		if e.Verdict == VerdictWithdrawn {
			withdrawn = append(withdrawn, e)
		}
	}
	if len(withdrawn) != 1 || withdrawn[0].DeliveryID != claim.DeliveryID || !strings.Contains(withdrawn[0].Reason, "Research in Progress was allowed") {
		t.Errorf("withdrawn entries %+v", withdrawn)
	}
	for _, body := range h.commentBodies() {
		if strings.Contains(body, "`agent-1`") {
			t.Errorf("agent-1's legal claim is explained as a violation:\n%s", body)
		}
	}
	if rec := h.record("A"); rec.LockHolder != "agent-1" || !rec.settled() {
		t.Errorf("record %+v: want agent-1 holding the lock, settled", rec)
	}
}

// A provisional revert GitHub does not take (a failed write, or the card moved meanwhile)
// leaves the move to wait for the proof like any other; nothing is left half-done.
func TestProvisionalRevertNotWritten(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
	}{
		{name: "GitHub fails the write", err: errors.New("502 bad gateway")},
		{name: "the card moved meanwhile", err: ErrBoardMoved},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h, _ := provisionalHarness(t, issue("A", "Backlog"))
			hb := newHookBoard(h.board)
			hb.failSet["A"] = tt.err
			ch := h.board.move("A", "agent-1", "In Progress", h.now)
			res, err := h.svc.Enforcer.ProcessChange(context.Background(), hb, ch)
			if err != nil || res.Verdict != VerdictWait || h.state("A") != "In Progress" {
				t.Fatalf("%+v %v, state %q: want a wait, nothing written", res, err, h.state("A"))
			}
			hb.unfail("A")
			h.proven()
			h.now = h.now.Add(10 * time.Second)
			if res, err := h.svc.Enforcer.ProcessChange(context.Background(), hb, ch); err != nil || res.Verdict != VerdictReverted || h.state("A") != "Backlog" {
				t.Fatalf("after the proof: %+v %v, state %q", res, err, h.state("A"))
			}
			if rec := h.record("A"); rec.Provisional != "" || rec.ProvisionalFor != "" {
				t.Errorf("the journal is left behind: %+v", rec)
			}
		})
	}
}

// With items judged together, the intake lists the moves that may be reverted at once, and
// RevertAtOnce reverts them together (their jobs still wait for the proof): their guarded
// writes together, checked on the read their turn makes. A legal move is not listed.
func TestRevertAtOnceTogether(t *testing.T) {
	h := newHarnessWith(t, nil, func(h *harness, o *Options) {
		o.BatchJudge = true
		o.Boards = func(context.Context, int64, string) (Board, error) { return h.board, nil }
	}, issueN("A", "Backlog", 1), issueN("B", "Backlog", 2), issueN("C", "Research Needed", 3))
	h.adoptAll("A", "B", "C")
	h.unproven()
	var moves []Change
	for _, mv := range []struct{ id, to string }{{"A", "In Progress"}, {"B", "In Review"}, {"C", "Research in Progress"}} {
		ch := h.board.move(mv.id, "agent-1", mv.to, h.now)
		ch.Owner = "acme"
		runAt, err := h.svc.Enforcer.Observe(context.Background(), ch)
		if err != nil || !runAt.After(h.now) {
			t.Fatalf("intake of %s: runAt %v, %v: want the job to wait for the proof", mv.id, runAt, err)
		}
		moves = append(moves, ch)
	}
	if n := h.svc.Enforcer.RevertAtOnce(context.Background()); n != 2 {
		t.Errorf("looked at %d items, want the 2 refused moves' (the legal claim is not listed)", n)
	}
	if h.state("A") != "Backlog" || h.state("B") != "Backlog" || h.state("C") != "Research in Progress" {
		t.Errorf("states %q %q %q, want A and B reverted at once, C's legal claim standing", h.state("A"), h.state("B"), h.state("C"))
	}
	if h.board.adds != 0 {
		t.Errorf("%d comments before the proof", h.board.adds)
	}
	if n := h.svc.Enforcer.RevertAtOnce(context.Background()); n != 0 {
		t.Errorf("the list was not emptied: %d items again", n)
	}
	// The proof judges them: confirmed, each explained once.
	h.proven()
	h.now = h.now.Add(10 * time.Second)
	if _, err := h.svc.Enforcer.JudgeWaiting(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, ch := range moves {
		h.processDone(ch)
	}
	if err := h.svc.Enforcer.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if h.state("A") != "Backlog" || h.state("B") != "Backlog" || h.board.adds != 2 {
		t.Errorf("after the proof: states %q %q, %d comments; want both reverted and explained", h.state("A"), h.state("B"), h.board.adds)
	}
}

// A revert at once never races a walk of its item in this process: when a walk has taken the
// item's lock by the time the write's turn comes, the check lets nothing go and journals
// nothing (the walk's own commit would otherwise fail on the journal's, and its job be retried
// as a failure); the move waits for its proof.
func TestRevertAtOnceLeavesAnItemUnderWay(t *testing.T) {
	var h *harness
	busy := &walkingBoard{}
	h = newHarnessWith(t, nil, func(h *harness, o *Options) {
		o.BatchJudge = true
		busy.Board = h.board
		o.Boards = func(context.Context, int64, string) (Board, error) { return busy, nil }
	}, issueN("A", "Backlog", 1))
	busy.e = h.svc.Enforcer
	h.adoptAll("A")
	h.unproven()
	ch := h.board.move("A", "agent-1", "In Progress", h.now)
	ch.Owner = "acme"
	if _, err := h.svc.Enforcer.Observe(context.Background(), ch); err != nil {
		t.Fatal(err)
	}
	before := h.record("A")
	n := h.svc.Enforcer.RevertAtOnce(context.Background())
	if rec := h.record("A"); n != 1 || busy.walked != 1 || h.state("A") != "In Progress" || rec.Provisional != "" || rec.Version != before.Version {
		t.Fatalf("looked at %d (%d writes met a walk); state %q, record %+v (version %d before): want nothing written or journaled",
			n, busy.walked, h.state("A"), rec, before.Version)
	}
}

// walkingBoard takes each item's lock, as a walk would, while its guarded writes run.
type walkingBoard struct {
	Board
	e      *Enforcer
	walked int
}

func (b *walkingBoard) SetStatesIf(ctx context.Context, ws []StateWrite) []error {
	for _, w := range ws {
		unlock, err := b.e.items.lock(ctx, w.Item.ID)
		if err != nil {
			panic(err)
		}
		defer unlock()
		b.walked++
	}
	return b.Board.SetStatesIf(ctx, ws)
}
