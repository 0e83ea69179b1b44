package policy

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The default workflow (README, The workflow), written out by hand: what an agent may do from each state (display order) ...
var agentNext = map[string][]string{
	"":       {sBacklog, sRN, sRFP},
	sBacklog: {sRN, sRFP, sHN, sDone, sCancel},
	sRN:      {sRIP, sRFP, sHN},
	sRIP:     {sRN, sRFP, sHN},
	sRFP:     {sPIP, sHN},
	sPIP:     {sRFP, sPIR, sIP, sHN},
	sPIR:     {sRFP, sIP, sHN},
	sIP:      {sIR, sHN},
	sIR:      {sIP, sHN, sDone},
	sHN:      {},
	sDone:    {},
	sCancel:  {},
}

// ... and what a human (and the app, and a bypass actor) may do.
var humanNext = map[string][]string{
	"":       {sBacklog, sRN, sRFP},
	sBacklog: {sRN, sRFP, sHN, sDone, sCancel},
	sRN:      {sRIP, sRFP, sHN, sCancel},
	sRIP:     {sRN, sRFP, sHN, sCancel},
	sRFP:     {sPIP, sHN, sCancel},
	sPIP:     {sRFP, sPIR, sIP, sHN, sCancel},
	sPIR:     {sRFP, sIP, sHN, sCancel},
	sIP:      {sIR, sHN, sCancel},
	sIR:      {sIP, sHN, sDone, sCancel},
	sHN:      {sBacklog, sRN, sRFP, sIP, sCancel},
	sDone:    {sBacklog},
	sCancel:  {sBacklog},
}

func TestTransitionTableAllPairs(t *testing.T) {
	m := defaultMachine(t)
	froms := append([]string{""}, allStates...)
	actors := []ActorKind{ActorApp, ActorBypass, ActorAgent, ActorHuman, ActorKind(0)}
	for _, actor := range actors {
		for _, from := range froms {
			for _, to := range allStates {
				t.Run(fmt.Sprintf("%s/%s->%s", actor, displayFrom(from), to), func(t *testing.T) {
					table := humanNext
					if actor == ActorAgent || actor == ActorKind(0) {
						table = agentNext
					}
					want := slices.Contains(table[from], to)
					res := m.Check(from, to, actor)
					if res.Allowed != want {
						t.Fatalf("Check = %+v, want allowed=%v", res, want)
					}
					arrow := displayFrom(from) + " → " + to
					switch {
					case want:
						if res.Reason != arrow+" is allowed for "+actor.String() {
							t.Errorf("reason %q", res.Reason)
						}
					case from == "":
						if !strings.HasPrefix(res.Reason, arrow+" is not allowed: an item with no state may start only in Backlog, Research Needed or Ready for Plan") {
							t.Errorf("reason %q", res.Reason)
						}
					case from == to:
						if res.Reason != arrow+" is not a change" {
							t.Errorf("reason %q", res.Reason)
						}
					case slices.Contains(humanNext[from], to):
						if res.Reason != arrow+" is for humans only" {
							t.Errorf("reason %q", res.Reason)
						}
					default:
						if res.Reason != arrow+" is not a transition of the workflow" {
							t.Errorf("reason %q", res.Reason)
						}
					}
					if !slices.Equal(res.AllowedTransitions, table[from]) {
						t.Errorf("allowed transitions %q, want %q", res.AllowedTransitions, table[from])
					}
				})
			}
		}
	}
}

func TestAllowedNext(t *testing.T) {
	m := defaultMachine(t)
	for from, want := range agentNext {
		sameStrings(t, "agent from "+from, m.AllowedNext(from, ActorAgent), want)
	}
	for from, want := range humanNext {
		for _, a := range []ActorKind{ActorHuman, ActorApp, ActorBypass} {
			sameStrings(t, a.String()+" from "+from, m.AllowedNext(from, a), want)
		}
	}
	if got := m.AllowedNext("Nope", ActorHuman); got == nil || len(got) != 0 {
		t.Errorf("unknown from: %#v, want empty non-nil", got)
	}
}

func TestCheckExamplesAndUnknown(t *testing.T) {
	m := defaultMachine(t)
	tests := []struct {
		from, to string
		actor    ActorKind
		allowed  bool
		reason   string
		next     []string
	}{
		{sBacklog, sIP, ActorAgent, false, "Backlog → In Progress is not a transition of the workflow", agentNext[sBacklog]},
		{sHN, sBacklog, ActorAgent, false, "Human Needed → Backlog is for humans only", []string{}},
		{sHN, sBacklog, ActorHuman, true, "Human Needed → Backlog is allowed for human", humanNext[sHN]},
		{sBacklog, sRN, ActorAgent, true, "Backlog → Research Needed is allowed for agent", agentNext[sBacklog]},
		{sBacklog, "Foo", ActorAgent, false, `"Foo" is not a state of the workflow`, agentNext[sBacklog]},
		{"Foo", sBacklog, ActorHuman, false, `"Foo" is not a state of the workflow`, []string{}},
		{"", "", ActorHuman, false, `"" is not a state of the workflow`, humanNext[""]},
		{"backlog", sRN, ActorHuman, false, `"backlog" is not a state of the workflow`, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.from+"->"+tt.to+"/"+tt.actor.String(), func(t *testing.T) {
			got := m.Check(tt.from, tt.to, tt.actor)
			want := CheckResult{Allowed: tt.allowed, Reason: tt.reason, AllowedTransitions: tt.next}
			if got.Allowed != want.Allowed || got.Reason != want.Reason || !slices.Equal(got.AllowedTransitions, want.AllowedTransitions) {
				t.Errorf("Check = %+v, want %+v", got, want)
			}
			b, _ := json.Marshal(got)
			if !strings.Contains(string(b), `"allowed_transitions":[`) {
				t.Errorf("allowed_transitions must be a JSON array: %s", b)
			}
		})
	}
}

func TestAccessors(t *testing.T) {
	m := defaultMachine(t)
	sameStrings(t, "States", m.States(), allStates)
	sameStrings(t, "Commands", m.Commands(), []string{"triage", "split", "research", "plan", "plan_epic", "review", "impl", "pr", "merge", "hero"})
	sameStrings(t, "Intents", m.Intents(), []string{"lock", "complete", "escalate", "release", "reject", "close", "cancel"})
	sameStrings(t, "Initial", m.Initial(), []string{sBacklog, sRN, sRFP})
	sameStrings(t, "Pipeline", m.Pipeline(), []string{sBacklog, sRN, sRIP, sRFP, sPIP, sPIR, sIP, sIR, sDone})
	sameStrings(t, "ParentGates", m.ParentGates(), []string{sRFP, sPIR, sIR, sDone})
	if m.Field() != "Workflow State" {
		t.Errorf("Field = %q", m.Field())
	}
	kinds := map[string]Kind{sBacklog: Queue, sRN: Queue, sRIP: Lock, sRFP: Queue, sPIP: Lock, sPIR: HumanGate, sIP: Lock, sIR: HumanGate, sHN: HumanGate, sDone: Terminal, sCancel: Terminal}
	pipe := map[string]int{sBacklog: 0, sRN: 1, sRIP: 2, sRFP: 3, sPIP: 4, sPIR: 5, sIP: 6, sIR: 7, sHN: -1, sDone: 8, sCancel: -1}
	for _, s := range allStates {
		info, ok := m.State(s)
		if !ok || info.Name != s || info.Kind != kinds[s] || info.PipelineIndex != pipe[s] || info.Description == "" {
			t.Errorf("State(%q) = %+v, %v", s, info, ok)
		}
		if m.PipelineIndex(s) != pipe[s] {
			t.Errorf("PipelineIndex(%q) = %d", s, m.PipelineIndex(s))
		}
		if m.IsLock(s) != (kinds[s] == Lock) || m.IsTerminal(s) != (kinds[s] == Terminal) || m.IsHumanGate(s) != (kinds[s] == HumanGate) || !m.IsState(s) {
			t.Errorf("kind predicates wrong for %q", s)
		}
	}
	if info, ok := m.State("Nope"); ok || info.PipelineIndex != -1 {
		t.Errorf("State(Nope) = %+v, %v", info, ok)
	}
	if m.PipelineIndex("Nope") != -1 || m.IsLock("Nope") || m.IsState("") {
		t.Error("unknown state predicates")
	}
	expecting := map[string][]string{
		sBacklog: {"triage", "split", "hero"},
		sRN:      {"split", "research", "hero"},
		sRIP:     {},
		sRFP:     {"plan", "plan_epic", "hero"},
		sPIR:     {"review", "impl", "hero"},
		sIP:      {"impl", "pr", "hero"},
		sIR:      {"merge"},
		sDone:    {},
	}
	for s, want := range expecting {
		sameStrings(t, "CommandsExpecting("+s+")", m.CommandsExpecting(s), want)
	}
	for c, want := range wantDirect {
		got, ok := m.DirectStates("ralph_" + c)
		if !ok {
			t.Fatalf("DirectStates(%s) unknown", c)
		}
		sameStrings(t, "DirectStates("+c+")", got, want)
	}
	if _, ok := m.DirectStates("nope"); ok {
		t.Error("DirectStates(nope) ok")
	}
	if m.CommandLock("plan") != sPIP || m.CommandLock("triage") != "" || m.CommandLock("nope") != "" {
		t.Error("CommandLock")
	}
	g := m.Gates()
	if !g.LockOwnership || !g.Blockers || !g.Convergence || g.WIPLimits == nil || len(g.WIPLimits) != 0 {
		t.Errorf("Gates = %+v", g)
	}
	if a := m.Automation(); !a.CascadeChildren || !a.ConvergeParents || !a.LifecycleSync || a.CommentAutomation || a.MaxCascadeDepth != 10 {
		t.Errorf("Automation = %+v", a)
	}
	if n := len(m.Transitions()); n != 39 {
		t.Errorf("Transitions = %d, want 39 (30 next entries, Backlog → Human Needed, 8 → Canceled)", n)
	}
}

func TestMachineIsImmutable(t *testing.T) {
	m := defaultMachine(t)
	s := m.Spec()
	s.States[0].Next[0] = "Mutated"
	s.Intents[0].Targets["research"] = "Mutated"
	s.Commands[0].Outputs[0] = "Mutated"
	g := m.Gates()
	g.WIPLimits["Backlog"] = 1
	st := m.States()
	st[0] = "Mutated"
	if m.Spec().States[0].Next[0] != sRN || m.Spec().Intents[0].Targets["research"] != sRIP || m.Spec().Commands[0].Outputs[0] != sRN {
		t.Error("Spec() leaks internal state")
	}
	if len(m.Gates().WIPLimits) != 0 || m.States()[0] != sBacklog {
		t.Error("accessors leak internal state")
	}
	// Mutating the spec passed to Compile after the fact must not matter either.
	in := DefaultSpec()
	m2, _ := Compile(in)
	in.States[0].Next = nil
	if !m2.Check(sBacklog, sRN, ActorAgent).Allowed {
		t.Error("Compile kept a reference to its input")
	}
}

func TestNormalisation(t *testing.T) {
	for in, want := range map[string]string{"research": "research", "ralph_research": "research", " RALPH_Plan_Epic ": "plan_epic", "": ""} {
		if got := normCommand(in); got != want {
			t.Errorf("normCommand(%q) = %q", in, got)
		}
	}
	for in, want := range map[string]string{"lock": "lock", "__LOCK__": "lock", "Lock": "lock", "____": "____", "__x__": "x", " __Complete__ ": "complete"} {
		if got := normIntent(in); got != want {
			t.Errorf("normIntent(%q) = %q", in, got)
		}
	}
}
