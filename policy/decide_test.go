package policy

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestDecide(t *testing.T) {
	m := defaultMachine(t)
	noGates := machineWith(t, func(s *Spec) {
		s.Gates = GatesSpec{WIPLimits: map[string]int{sIP: 0}} // limits only apply when listed: 0 admits nothing
	})
	noWIP := machineWith(t, func(s *Spec) { s.Gates.WIPLimits = nil })
	withWIP := machineWith(t, func(s *Spec) { s.Gates.WIPLimits = map[string]int{sIP: 2, sRIP: 1} })
	blockers := []Member{{Number: 3, Title: "Schema", State: sRN}, {Number: 4, State: ""}}
	group := []Member{
		{Number: 10, Title: "API", State: sRN},
		{Number: 11, Title: "UI", State: sRFP},
		{Number: 12, Title: "Docs", State: sHN},
		{Number: 13, Title: "Old", State: sCancel},
		{Number: 14, Title: "Done one", State: sDone},
		{Number: 15, Title: "Fresh", State: ""},
	}
	tests := []struct {
		name     string
		m        *Machine
		c        Change
		verdict  Verdict
		rule     Rule
		reason   string // exact when set
		contains []string
		blocking []int
		takes    bool
		releases bool
	}{
		{name: "bypass allows anything", c: Change{From: sBacklog, To: "Garbage", Actor: "boss", ActorKind: ActorBypass},
			verdict: Allow, rule: RuleBypass, reason: "boss is a bypass actor: Backlog → Garbage is allowed without checks (audited)"},
		{name: "bypass into lock takes it", c: Change{From: sBacklog, To: sIP, Actor: "boss", ActorKind: ActorBypass},
			verdict: Allow, rule: RuleBypass, takes: true},
		{name: "app is never checked", c: Change{From: sHN, To: sDone, Actor: "ralph-gate[bot]", ActorKind: ActorApp},
			verdict: Allow, rule: RuleApp, reason: "changes made by ralph-gate itself are not checked"},
		{name: "unknown state", c: Change{From: sBacklog, To: "Shipped", Actor: "a", ActorKind: ActorHuman},
			verdict: Revert, rule: RuleUnknownState, reason: `"Shipped" is not a state of the workflow`},
		{name: "unknown state beats everything", c: Change{From: "", To: "", Actor: "a", ActorKind: ActorAgent},
			verdict: Revert, rule: RuleUnknownState},
		{name: "unset to non-initial", c: Change{From: "", To: sIP, Actor: "a", ActorKind: ActorHuman},
			verdict: Revert, rule: RuleNotInitial, reason: "(unset) → In Progress is not allowed: an item with no state may start only in Backlog, Research Needed or Ready for Plan"},
		{name: "unset to initial", c: Change{From: "", To: sRN, Actor: "agent-1", ActorKind: ActorAgent},
			verdict: Allow, rule: RuleLegal, reason: "(unset) → Research Needed is allowed for agent"},
		{name: "unknown from counts as unset", c: Change{From: "Old State", To: sBacklog, Actor: "a", ActorKind: ActorHuman},
			verdict: Allow, rule: RuleLegal},
		{name: "not in table", c: Change{From: sBacklog, To: sIP, Actor: "agent-1", ActorKind: ActorAgent},
			verdict: Revert, rule: RuleTransition, reason: "Backlog → In Progress is not a transition of the workflow"},
		{name: "not in table for humans either", c: Change{From: sBacklog, To: sIP, Actor: "alice", ActorKind: ActorHuman},
			verdict: Revert, rule: RuleTransition},
		{name: "humans only", c: Change{From: sHN, To: sBacklog, Actor: "agent-1", ActorKind: ActorAgent},
			verdict: Revert, rule: RuleHumansOnly, reason: "Human Needed → Backlog is for humans only"},
		{name: "humans only, unknown actor kind is restricted", c: Change{From: sDone, To: sBacklog, Actor: "x"},
			verdict: Revert, rule: RuleHumansOnly},
		{name: "humans only, human ok", c: Change{From: sHN, To: sBacklog, Actor: "alice", ActorKind: ActorHuman},
			verdict: Allow, rule: RuleLegal},
		{name: "cancel from anywhere is humans only", c: Change{From: sIP, To: sCancel, Actor: "agent-1", ActorKind: ActorAgent, LockHolder: "agent-1"},
			verdict: Revert, rule: RuleHumansOnly},
		{name: "same value is no change", c: Change{From: sIP, To: sIP, Actor: "agent-2", ActorKind: ActorAgent, LockHolder: "agent-1"},
			verdict: Allow, rule: RuleLegal, reason: "In Progress is unchanged"},

		{name: "lock held by another agent", c: Change{From: sRIP, To: sRFP, Actor: "agent-2", ActorKind: ActorAgent, LockHolder: "agent-1"},
			verdict: Revert, rule: RuleLockOwnership, reason: "Research in Progress is locked by agent-1; only the holder or a human may move it, not agent-2"},
		{name: "lock holder itself", c: Change{From: sRIP, To: sRFP, Actor: "Agent-1", ActorKind: ActorAgent, LockHolder: "agent-1"},
			verdict: Allow, rule: RuleLegal, releases: true},
		{name: "lock: human may always move", c: Change{From: sRIP, To: sRFP, Actor: "alice", ActorKind: ActorHuman, LockHolder: "agent-1"},
			verdict: Allow, rule: RuleLegal, releases: true},
		{name: "lock: unknown holder enforces nothing", c: Change{From: sRIP, To: sRFP, Actor: "agent-2", ActorKind: ActorAgent},
			verdict: Allow, rule: RuleLegal, releases: true},
		{name: "lock: escalation by a stranger is still ownership", c: Change{From: sIP, To: sHN, Actor: "agent-2", ActorKind: ActorAgent, LockHolder: "agent-1"},
			verdict: Revert, rule: RuleLockOwnership},
		{name: "lock gate off", m: noGates, c: Change{From: sRIP, To: sRFP, Actor: "agent-2", ActorKind: ActorAgent, LockHolder: "agent-1"},
			verdict: Allow, rule: RuleLegal, releases: true},
		{name: "lock to lock", c: Change{From: sPIP, To: sIP, Actor: "agent-1", ActorKind: ActorAgent, LockHolder: "agent-1"},
			verdict: Allow, rule: RuleLegal, takes: true, releases: true},

		{name: "blockers", c: Change{From: sRN, To: sRIP, Actor: "agent-1", ActorKind: ActorAgent, OpenBlockers: blockers},
			verdict: Revert, rule: RuleBlockers, reason: `Research in Progress cannot be entered while the issue has open blockers: #3 "Schema" is open, in Research Needed and #4 is open, with no state`,
			blocking: []int{3, 4}},
		{name: "blockers apply to humans", c: Change{From: sRN, To: sRIP, Actor: "alice", ActorKind: ActorHuman, OpenBlockers: blockers[:1]},
			verdict: Revert, rule: RuleBlockers, blocking: []int{3}},
		{name: "blockers only guard locks", c: Change{From: sRN, To: sRFP, Actor: "agent-1", ActorKind: ActorAgent, OpenBlockers: blockers},
			verdict: Allow, rule: RuleLegal},
		{name: "blockers gate off", m: noGates, c: Change{From: sRN, To: sRIP, Actor: "agent-1", ActorKind: ActorAgent, OpenBlockers: blockers},
			verdict: Allow, rule: RuleLegal, takes: true},
		{name: "ownership before blockers", c: Change{From: sPIP, To: sIP, Actor: "agent-2", ActorKind: ActorAgent, LockHolder: "agent-1", OpenBlockers: blockers},
			verdict: Revert, rule: RuleLockOwnership},

		{name: "convergence", c: Change{From: sRFP, To: sPIP, Actor: "agent-1", ActorKind: ActorAgent, Group: group},
			verdict: Revert, rule: RuleConvergence,
			reason:   `Plan in Progress needs the whole group at Ready for Plan or later: #10 "API" is in Research Needed, #12 "Docs" is in Human Needed and #15 "Fresh" has no state`,
			blocking: []int{10, 12, 15}},
		{name: "convergence met (Canceled ignored, Done counts)", c: Change{From: sRFP, To: sPIP, Actor: "agent-1", ActorKind: ActorAgent, Group: []Member{group[1], group[3], group[4]}},
			verdict: Allow, rule: RuleLegal, takes: true},
		{name: "convergence with no group", c: Change{From: sRFP, To: sPIP, Actor: "agent-1", ActorKind: ActorAgent},
			verdict: Allow, rule: RuleLegal, takes: true},
		{name: "convergence applies to humans", c: Change{From: sRFP, To: sPIP, Actor: "alice", ActorKind: ActorHuman, Group: group[:1]},
			verdict: Revert, rule: RuleConvergence, blocking: []int{10}},
		{name: "convergence guards only the plan lock", c: Change{From: sRN, To: sRIP, Actor: "agent-1", ActorKind: ActorAgent, Group: group},
			verdict: Allow, rule: RuleLegal, takes: true},
		{name: "convergence gate off", m: noGates, c: Change{From: sRFP, To: sPIP, Actor: "agent-1", ActorKind: ActorAgent, Group: group},
			verdict: Allow, rule: RuleLegal, takes: true},
		{name: "blockers before convergence", c: Change{From: sRFP, To: sPIP, Actor: "agent-1", ActorKind: ActorAgent, Group: group, OpenBlockers: blockers[:1]},
			verdict: Revert, rule: RuleBlockers, blocking: []int{3}},

		{name: "wip at limit", m: withWIP, c: Change{From: sPIR, To: sIP, Actor: "agent-1", ActorKind: ActorAgent, WIPCount: 2},
			verdict: Revert, rule: RuleWIP, reason: "In Progress is at its WIP limit (2 of 2 items)"},
		{name: "wip below limit", m: withWIP, c: Change{From: sPIR, To: sIP, Actor: "agent-1", ActorKind: ActorAgent, WIPCount: 1},
			verdict: Allow, rule: RuleLegal, takes: true},
		{name: "wip applies to humans", m: withWIP, c: Change{From: sRN, To: sRIP, Actor: "alice", ActorKind: ActorHuman, WIPCount: 5},
			verdict: Revert, rule: RuleWIP},
		{name: "wip unlimited state", m: withWIP, c: Change{From: sIP, To: sIR, Actor: "agent-1", ActorKind: ActorAgent, WIPCount: 100},
			verdict: Allow, rule: RuleLegal, releases: true},
		{name: "wip nil map", m: noWIP, c: Change{From: sPIR, To: sIP, Actor: "agent-1", ActorKind: ActorAgent, WIPCount: 100},
			verdict: Allow, rule: RuleLegal, takes: true},
		{name: "wip limit 0 admits nothing", m: noGates, c: Change{From: sPIR, To: sIP, Actor: "agent-1", ActorKind: ActorAgent},
			verdict: Revert, rule: RuleWIP, reason: "In Progress is at its WIP limit (0 of 0 items)"},
		{name: "convergence before wip", m: machineWith(t, func(s *Spec) { s.Gates.WIPLimits = map[string]int{sPIP: 0} }),
			c:       Change{From: sRFP, To: sPIP, Actor: "agent-1", ActorKind: ActorAgent, Group: group[:1]},
			verdict: Revert, rule: RuleConvergence, blocking: []int{10}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mm := tt.m
			if mm == nil {
				mm = m
			}
			d := mm.Decide(tt.c)
			if d.Verdict != tt.verdict || d.Rule != tt.rule {
				t.Fatalf("Decide = %v/%v (%s), want %v/%v", d.Verdict, d.Rule, d.Reason, tt.verdict, tt.rule)
			}
			if tt.reason != "" && d.Reason != tt.reason {
				t.Errorf("reason:\n got %s\nwant %s", d.Reason, tt.reason)
			}
			if d.Reason == "" {
				t.Error("empty reason")
			}
			var nums []int
			for _, b := range d.Blocking {
				nums = append(nums, b.Number)
			}
			if !slices.Equal(nums, tt.blocking) {
				t.Errorf("blocking = %v, want %v", nums, tt.blocking)
			}
			if d.RevertTo != tt.c.From {
				t.Errorf("RevertTo = %q", d.RevertTo)
			}
			if d.TakesLock != tt.takes || d.ReleasesLock != tt.releases {
				t.Errorf("takes/releases = %v/%v, want %v/%v", d.TakesLock, d.ReleasesLock, tt.takes, tt.releases)
			}
			if d.Allowed == nil || d.Blocking == nil {
				t.Error("nil slices")
			}
		})
	}
}

func TestDecideAllowedAlternatives(t *testing.T) {
	m := defaultMachine(t)
	d := m.Decide(Change{From: sBacklog, To: sIP, Actor: "agent-1", ActorKind: ActorAgent})
	sameStrings(t, "allowed", d.Allowed, agentNext[sBacklog])
	d = m.Decide(Change{From: sHN, To: sBacklog, Actor: "agent-1", ActorKind: ActorAgent})
	sameStrings(t, "allowed", d.Allowed, []string{})
	d = m.Decide(Change{From: "", To: sDone, Actor: "alice", ActorKind: ActorHuman})
	sameStrings(t, "allowed", d.Allowed, []string{sBacklog, sRN, sRFP})
	b, _ := json.Marshal(d)
	for _, k := range []string{`"verdict":"revert"`, `"rule":"not_initial"`, `"allowed":[`, `"blocking":[]`, `"revert_to":""`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("json %s lacks %s", b, k)
		}
	}
}

// With the gates off, Decide agrees with Check on every pair of the table.
func TestDecideMatchesCheck(t *testing.T) {
	m := machineWith(t, func(s *Spec) { s.Gates = GatesSpec{} })
	for _, actor := range []ActorKind{ActorAgent, ActorHuman} {
		for _, from := range append([]string{""}, allStates...) {
			for _, to := range allStates {
				if from == to {
					continue
				}
				d := m.Decide(Change{From: from, To: to, Actor: "x", ActorKind: actor})
				c := m.Check(from, to, actor)
				if (d.Verdict == Allow) != c.Allowed || d.Reason != c.Reason {
					t.Errorf("%s %q→%q: Decide %v %q, Check %v %q", actor, from, to, d.Verdict, d.Reason, c.Allowed, c.Reason)
				}
			}
		}
	}
}

func TestRuleAndMemberStrings(t *testing.T) {
	rules := map[Rule]string{RuleUnknownState: "unknown_state", RuleNotInitial: "not_initial", RuleTransition: "transition",
		RuleHumansOnly: "humans_only", RuleLockOwnership: "lock_ownership", RuleBlockers: "blockers", RuleConvergence: "convergence",
		RuleWIP: "wip_limit", RuleBypass: "bypass", RuleLegal: "legal", RuleApp: "app"}
	for r, s := range rules {
		if r.String() != s {
			t.Errorf("%q", r)
		}
	}
	if s := (Member{Number: 12, Title: "Title", State: sRN}).String(); s != `#12 "Title" is in Research Needed` {
		t.Error(s)
	}
	if s := (Member{Number: 1}).String(); s != "#1 has no state" {
		t.Error(s)
	}
}

// TestMemberTexts: a member reads "is in" a Workflow State, "is open"/"is closed" when its
// state is its issue's status (off the project); an open blocker reads "is open, in" its state.
func TestMemberTexts(t *testing.T) {
	for _, tc := range []struct {
		name          string
		mb            Member
		member, block string
	}{
		{"in a state", Member{Number: 3, Title: "Blocker", State: sBacklog}, `#3 "Blocker" is in Backlog`, `#3 "Blocker" is open, in Backlog`},
		{"no title", Member{Number: 3, State: sRN}, `#3 is in Research Needed`, `#3 is open, in Research Needed`},
		{"no state", Member{Number: 4, Title: "T"}, `#4 "T" has no state`, `#4 "T" is open, with no state`},
		{"off the project, open", Member{Number: 3, Title: "Blocker", State: "open"}, `#3 "Blocker" is open`, `#3 "Blocker" is open`},
		{"off the project, Open", Member{Number: 3, State: "Open"}, `#3 is open`, `#3 is open`},
		{"closed", Member{Number: 5, Title: "Old", State: "closed"}, `#5 "Old" is closed`, `#5 "Old" is open`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.mb.String(); got != tc.member {
				t.Errorf("String() = %s, want %s", got, tc.member)
			}
			if got := blockerText(tc.mb); got != tc.block {
				t.Errorf("blockerText = %s, want %s", got, tc.block)
			}
			if strings.Contains(tc.mb.String(), "is in open") || strings.Contains(blockerText(tc.mb), "is in open") {
				t.Error("is in open")
			}
		})
	}
	m := defaultMachine(t)
	d := m.Decide(Change{From: sRN, To: sRIP, Actor: "agent-1", ActorKind: ActorAgent,
		OpenBlockers: []Member{{Number: 3, Title: "Blocker", State: sBacklog}, {Number: 6, Title: "elsewhere", State: "open"}}})
	if want := `open blockers: #3 "Blocker" is open, in Backlog and #6 "elsewhere" is open`; !strings.Contains(d.Reason, want) {
		t.Errorf("reason %q lacks %q", d.Reason, want)
	}
}

// A custom machine whose plan command locks a differently named state and needs a different
// input: the convergence gate follows the command.
func TestDecideConvergenceFollowsPlanCommand(t *testing.T) {
	m := machineWith(t, func(s *Spec) {
		for i := range s.States {
			if s.States[i].Name == sPIP {
				s.States[i].Name = "Planning"
			}
			for j, n := range s.States[i].Next {
				if n == sPIP {
					s.States[i].Next[j] = "Planning"
				}
			}
		}
		s.Pipeline[4] = "Planning"
		s.Intents[0].Targets["plan"] = "Planning"
		s.Intents[0].Targets["plan_epic"] = "Planning"
		s.Commands[3].Lock = "Planning"
		s.Commands[4].Lock = "Planning"
	})
	d := m.Decide(Change{From: sRFP, To: "Planning", Actor: "a", ActorKind: ActorAgent, Group: []Member{{Number: 2, State: sBacklog}}})
	if d.Rule != RuleConvergence {
		t.Errorf("Decide = %+v", d)
	}
}

func TestDecisionRefusal(t *testing.T) {
	m := defaultMachine(t)
	withWIP := machineWith(t, func(s *Spec) { s.Gates.WIPLimits = map[string]int{sIP: 1} })
	tests := []struct {
		name string
		m    *Machine
		c    Change
		msg  string
	}{
		{"transition", m, Change{From: sBacklog, To: sIP, Actor: "agent-1", ActorKind: ActorAgent},
			`agent-1 moved the item from Backlog to "In Progress". Backlog → In Progress is not a transition of the workflow. Recovery: move it to "Research Needed", "Ready for Plan", "Human Needed", "Done" or "Canceled" instead`},
		{"humans only, nothing open", m, Change{From: sHN, To: sBacklog, Actor: "agent-1", ActorKind: ActorAgent},
			`agent-1 moved the item from Human Needed to "Backlog". Human Needed → Backlog is for humans only. Recovery: no move out of Human Needed is open to agent; ask a human`},
		{"not initial", m, Change{From: "", To: sDone, ActorKind: ActorHuman},
			`Someone moved the item from (unset) to "Done". (unset) → Done is not allowed: an item with no state may start only in Backlog, Research Needed or Ready for Plan. Recovery: move it to "Backlog", "Research Needed" or "Ready for Plan" instead`},
		{"lock", m, Change{From: sIP, To: sIR, Actor: "agent-2", ActorKind: ActorAgent, LockHolder: "agent-1"},
			`agent-2 moved the item from In Progress to "In Review". In Progress is locked by agent-1; only the holder or a human may move it, not agent-2. Recovery: ask agent-1 to hand the item off, or ask a human to move it`},
		{"blockers", m, Change{From: sRN, To: sRIP, Actor: "agent-1", ActorKind: ActorAgent, OpenBlockers: []Member{{Number: 3, State: sRN}, {Number: 4, State: sIP}}},
			`agent-1 moved the item from Research Needed to "Research in Progress". Research in Progress cannot be entered while the issue has open blockers: #3 is open, in Research Needed and #4 is open, in In Progress. Recovery: finish or unlink the blockers #3 and #4, then retry Research in Progress`},
		{"convergence", m, Change{From: sRFP, To: sPIP, Actor: "agent-1", ActorKind: ActorAgent, Group: []Member{{Number: 10, Title: "API", State: sHN}}},
			`agent-1 moved the item from Ready for Plan to "Plan in Progress". Plan in Progress needs the whole group at Ready for Plan or later: #10 "API" is in Human Needed. Recovery: wait until #10 reaches Ready for Plan or later (escalated issues need a human), then retry Plan in Progress`},
		{"wip", withWIP, Change{From: sPIR, To: sIP, Actor: "agent-1", ActorKind: ActorAgent, WIPCount: 1},
			`agent-1 moved the item from Plan in Review to "In Progress". In Progress is at its WIP limit (1 of 1 items). Recovery: finish or move an item out of In Progress, then retry`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := tt.m.Decide(tt.c)
			r := tt.m.RefusalFor(tt.c, d)
			if r == nil {
				t.Fatalf("no refusal for %+v", d)
			}
			asRefusal(t, r)
			if r.Error() != tt.msg {
				t.Errorf("message:\n got %s\nwant %s", r.Error(), tt.msg)
			}
		})
	}
	if d := m.Decide(Change{From: sBacklog, To: sRN, ActorKind: ActorHuman}); m.RefusalFor(Change{}, d) != nil {
		t.Error("allowed decision has a refusal")
	}
}

// Settled refusals depend on the step and the item's judged history alone.
func TestRuleSettled(t *testing.T) {
	settled := map[Rule]bool{RuleUnknownState: true, RuleNotInitial: true, RuleTransition: true, RuleHumansOnly: true,
		RuleRole: true, RuleLockOwnership: true}
	for _, r := range []Rule{RuleUnknownState, RuleNotInitial, RuleTransition, RuleHumansOnly, RuleLockOwnership, RuleBlockers,
		RuleConvergence, RuleWIP, RuleBypass, RuleRole, RuleSerialized, RuleLegal, RuleApp} {
		if r.Settled() != settled[r] {
			t.Errorf("%s.Settled() = %v, want %v", r, r.Settled(), settled[r])
		}
	}
}
