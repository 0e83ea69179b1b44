package enforce

import (
	"context"
	"errors"
	"slices"
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
				// The best issue is reported as the claim left it.
				if r.Best == nil || r.Best.Item.State != "Research in Progress" || r.Best.Item.State != r.Claimed.NewState || !r.Best.Locked {
					t.Errorf("the claimed issue %+v, claimed into %s", r.Best, r.Claimed.NewState)
				}
			} else if r.Best != nil {
				t.Errorf("a loser got %+v", r.Best)
			}
		}
		if winners != 1 || h.state("A") != "Research in Progress" || h.board.adds != 1 {
			t.Fatalf("round %d: %d winners, state %s, %d comments", round, winners, h.state("A"), h.board.adds)
		}
	}
}

// A refused handoff's Recovery names only what the agent may do from the item's state — for
// its kind, its role and its commands — and every value it names, retried as written, is not
// refused again by the table, the agent's kind or its role.
func TestHandoffRecoveryFollowsTheItemsState(t *testing.T) {
	tableRules := []string{string(policy.RuleUnknownState), string(policy.RuleNotInitial), string(policy.RuleTransition),
		string(policy.RuleHumansOnly), string(policy.RuleRole)}
	tests := []struct {
		name    string
		roles   bool
		state   string
		ho      Handoff
		want    string
		wantNot []string
	}{
		{"research to Done from Research Needed", false, "Research Needed", Handoff{Agent: "agent-1", Command: "research", ToState: "Done"},
			"from Research Needed, research may retry", []string{"close", "cancel", "release"}},
		{"close from Research Needed", false, "Research Needed", Handoff{Agent: "agent-1", Command: "research", Intent: "close"},
			"Research Needed → Done is not a transition", []string{"close (", "cancel ("}},
		{"neither intent nor state", false, "Backlog", Handoff{Agent: "agent-1", Command: "research", Commands: []string{"research"}},
			"Neither intent nor to_state", []string{"lock (", "other commands"}},
		{"the table refuses", false, "Backlog", Handoff{Agent: "agent-1", Command: "research", Intent: "lock"},
			"is not a transition", []string{"lock ("}},
		{"a builder out of Research Needed", true, "Research Needed", Handoff{Agent: "agent-1", Role: "builder", Command: "research", Intent: "complete"},
			"the analyst role owns it", []string{"lock (", "complete (", `"Ready for Plan"`}},
		{"an analyst to Done", true, "Research Needed", Handoff{Agent: "agent-1", Role: "analyst", Command: "research", ToState: "Done",
			Commands: []string{"triage", "split", "research"}}, "from Research Needed, research may retry", []string{"close", "cancel"}},
	}
	harness := func(roles bool, state string) *harness {
		if roles {
			return newRolesHarness(t, policy.ReviewSkip, issueN("A", state, 1))
		}
		return newHarness(t, issueN("A", state, 1))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := harness(tt.roles, tt.state)
			h.adoptAll("A")
			_, err := h.handoff("A", tt.ho)
			r := asRefusal(t, err, tt.want)
			for _, w := range tt.wantNot {
				if strings.Contains(r.Recovery, w) {
					t.Errorf("the Recovery names %q: %s", w, r.Error())
				}
			}
			if r.Retry == nil {
				t.Fatalf("no retry: %s", r.Error())
			}
			for _, s := range r.Retry.With {
				for _, v := range s.Values {
					again := tt.ho
					switch s.Arg {
					case policy.ArgIntent:
						again.Intent, again.ToState = v, ""
					case policy.ArgState:
						again.Intent, again.ToState = "", v
					default:
						t.Fatalf("the Recovery suggests %s: %s", s.Arg, r.Error())
					}
					h := harness(tt.roles, tt.state)
					h.adoptAll("A")
					res, err := h.handoff("A", again)
					var rr *policy.Refusal
					switch {
					case err == nil && !res.Changed:
						t.Errorf("%s %s changes nothing", s.Arg, v)
					case errors.As(err, &rr) && (rr.Retry != nil && rr.Rule == policy.RuleArguments || slices.Contains(tableRules, string(rr.Rule)) || rr.Rule == policy.RuleCommand):
						t.Errorf("the Recovery suggests %s %s, which is refused again: %s\n(first: %s)", s.Arg, v, rr.Error(), r.Error())
					case err != nil && rr == nil:
						t.Errorf("%s %s: %v", s.Arg, v, err)
					}
				}
			}
		})
	}
}

// A handoff is decided only once every write of ours on the item is reported back (or a proof
// covers it: it changed nothing): a move that landed between that write's read and the write
// is told by those reports alone, and a step decided before them would be decided from a legal
// state the move came after (docs/ENFORCEMENT.md "one unreported write at a time"). With
// Options.HandoffWait the handoff waits for them; without, it answers busy.
func TestHandoffWaitsForOurUnreportedWrite(t *testing.T) {
	lock := Handoff{Agent: "agent-1", Command: "ralph_research", Intent: "__LOCK__"}
	ready := Handoff{Agent: "agent-1", Command: "ralph_research", ToState: "Ready for Plan"}
	own := func(h *harness) Change {
		return Change{DeliveryID: "own-1", ItemID: "A", FromKnown: true, From: "Research Needed", To: "Research in Progress",
			Actor: "ralph-gate[bot]", At: h.now.Truncate(time.Second), ReceivedAt: h.now}
	}
	t.Run("busy until its report comes", func(t *testing.T) {
		h := newHarness(t, issue("A", "Research Needed"))
		h.unproven()
		if _, err := h.handoff("A", lock); err != nil {
			t.Fatal(err)
		}
		_, err := h.handoff("A", ready)
		if r := asRefusal(t, err, "a write of ours is not reported back yet"); r.Rule != policy.RuleUnsettled {
			t.Fatalf("rule %s", r.Rule)
		}
		if h.state("A") != "Research in Progress" {
			t.Fatalf("a refused handoff moved A to %q", h.state("A"))
		}
		if r := h.processDone(own(h)); r.Verdict != VerdictIgnored {
			t.Fatalf("our write's report: %+v", r)
		}
		if res, err := h.handoff("A", ready); err != nil || h.state("A") != "Ready for Plan" {
			t.Fatalf("after our write's report: %+v %v", res, err)
		}
	})
	t.Run("a proof past it says it changed nothing more", func(t *testing.T) {
		h := newHarness(t, issue("A", "Research Needed"))
		h.unproven()
		if _, err := h.handoff("A", lock); err != nil {
			t.Fatal(err)
		}
		h.now = h.now.Add(10 * time.Second)
		h.proven()
		if res, err := h.handoff("A", ready); err != nil || h.state("A") != "Ready for Plan" {
			t.Fatalf("with a proof past our write: %+v %v", res, err)
		}
	})
	t.Run("waits for the report within HandoffWait", func(t *testing.T) {
		h := newHarness(t, issue("A", "Research Needed"))
		h.svc.Facade.opts.HandoffWait = time.Minute
		h.unproven()
		if _, err := h.handoff("A", lock); err != nil {
			t.Fatal(err)
		}
		report := own(h)
		done := make(chan Result, 1)
		go func() {
			time.Sleep(100 * time.Millisecond)
			res, err := h.svc.Enforcer.ProcessChange(context.Background(), h.board, report)
			if err != nil {
				t.Error(err)
			}
			done <- res
		}()
		reads := h.board.calls["Item"]
		res, err := h.handoff("A", ready)
		if r := <-done; r.Verdict != VerdictIgnored {
			t.Fatalf("our write's report: %+v", r)
		}
		if err != nil || !res.Changed || h.state("A") != "Ready for Plan" {
			t.Fatalf("the handoff that waited: %+v %v", res, err)
		}
		// It tried once, then again once the report was taken in: two reads of the card each
		// (the agent's item, then under the item's lock), whatever the wait's length.
		if n := h.board.calls["Item"] - reads; n > 4 {
			t.Errorf("the waiting handoff read the card %d times, want at most 4", n)
		}
	})
}
