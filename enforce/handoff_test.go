package enforce

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/policy"
)

func (h *harness) handoff(id string, ho Handoff) (HandoffResult, error) {
	it, _ := h.board.Item(context.Background(), id)
	return h.svc.Facade.Handoff(context.Background(), h.board, it, ho)
}

func TestHandoffRecordsTheAgentAndChains(t *testing.T) {
	h := newHarness(t, issue("A", "Research Needed"))
	res, err := h.handoff("A", Handoff{Agent: "agent-1", Command: "ralph_research", Intent: "__LOCK__", Reason: "mine"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Changed || res.NewState != "Research in Progress" || res.Guidance.LockHolder != "agent-1" || h.state("A") != "Research in Progress" {
		t.Fatalf("%+v", res)
	}
	rec, _ := h.st.GetItem(context.Background(), "A")
	if rec.LastLegalState != "Research in Progress" || rec.LockHolder != "agent-1" {
		t.Fatalf("record %+v", rec)
	}
	// The app's own webhook for the write is ignored; a later move chains from the handoff.
	h.now = h.now.Add(time.Second)
	if r := h.process(Change{ItemID: "A", FromKnown: true, From: "Research Needed", To: "Research in Progress", Actor: "ralph-gate[bot]", At: h.now, ReceivedAt: h.now}); r.Verdict != VerdictIgnored {
		t.Fatalf("own write: %v", r.Verdict)
	}
	h.now = h.now.Add(time.Second)
	if r := h.process(h.board.move("A", "agent-2", "Ready for Plan", h.now)); r.Verdict != VerdictReverted || !strings.Contains(r.Reason, "locked by agent-1") {
		t.Fatalf("another agent moved the handed-off lock: %v %s", r.Verdict, r.Reason)
	}
	h.now = h.now.Add(time.Second)
	if r := h.process(h.board.move("A", "agent-1", "Ready for Plan", h.now)); r.Verdict != VerdictAllowed {
		t.Fatalf("the holder's move: %v %s", r.Verdict, r.Reason)
	}
	entries, _ := h.st.entries("A")
	if len(entries) == 0 || entries[0].Verdict != VerdictHandoff || entries[0].Actor != "agent-1" || !strings.Contains(entries[0].Reason, "agent's reason: mine") {
		t.Fatalf("audit %+v", entries)
	}
}

func TestHandoffRefusals(t *testing.T) {
	h := newHarness(t, issue("A", "Backlog"), issue("B", "In Progress"))
	var r *policy.Refusal
	for _, tc := range []struct {
		id   string
		ho   Handoff
		want string
	}{
		{"A", Handoff{Agent: "agent-1", Command: "research", Intent: "lock"}, "intent complete (→ Ready for Plan)"},
		{"A", Handoff{Agent: "agent-1", Command: "research"}, "Neither intent nor to_state"},
		{"A", Handoff{Agent: "agent-1", Command: "research", Intent: "lock", ToState: "Backlog"}, "Both intent and to_state"},
		{"A", Handoff{Agent: "agent-1", Command: "impl", Commands: []string{"research"}, Intent: "lock"}, "agent-1 may only use the commands research"},
		{"A", Handoff{Agent: "agent-1", Command: "fly", Intent: "lock"}, `Unknown command "fly"`},
		{"A", Handoff{Agent: "agent-1", Command: "research", ToState: "Done"}, `State "Done" is not a valid output for research`},
	} {
		_, err := h.handoff(tc.id, tc.ho)
		if !errors.As(err, &r) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: want a refusal with %q, got %v", tc.ho, tc.want, err)
		}
	}
	if h.state("A") != "Backlog" || len(h.board.sets) != 0 || h.board.adds != 0 {
		t.Fatalf("a refusal wrote: %v", h.board.sets)
	}
	// The board moved on and the change is still being processed: retry later.
	if _, err := h.st.CompareAndSetItem(context.Background(), Record{ItemID: "B", ProjectID: "PVT_1", LastLegalState: "Plan in Progress", LegalAt: h.now}, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := h.handoff("B", Handoff{Agent: "agent-1", Command: "impl", Intent: "complete"}); err == nil || !strings.Contains(err.Error(), "still being processed") {
		t.Fatalf("in flux: %v", err)
	}
}

func TestClaimRaceHasOneWinner(t *testing.T) {
	for round := 0; round < 5; round++ {
		h := newHarness(t, issue("A", "Research Needed"))
		var wg sync.WaitGroup
		results := make([]PickResult, 4)
		for i := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := h.svc.Facade.Pick(context.Background(), h.board, PickRequest{Projects: []ProjectRef{{Owner: "acme", Number: 1}},
					State: "Research Needed", Claim: true, Handoff: Handoff{Agent: "agent-" + string(rune('1'+i)), Command: "research", Reason: "go"}})
				if err != nil {
					t.Error(err)
				}
				results[i] = res
			}()
		}
		wg.Wait()
		winners := 0
		for _, r := range results {
			if r.Claimed != nil {
				winners++
			} else if r.Best != nil {
				t.Errorf("a loser got %+v", r.Best)
			}
		}
		if winners != 1 || h.state("A") != "Research in Progress" || h.board.adds != 1 {
			t.Fatalf("round %d: %d winners, state %s, %d comments", round, winners, h.state("A"), h.board.adds)
		}
	}
}
