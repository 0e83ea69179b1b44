package policy

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestHandoffRefusal(t *testing.T) {
	m := defaultMachine(t)
	c := Change{From: "Backlog", To: "Research in Progress", Actor: "agent-1", ActorKind: ActorAgent}
	d := m.Decide(c)
	r := m.HandoffRefusal("research", nil, c, d)
	if r == nil {
		t.Fatal("Backlog → Research in Progress must be refused")
	}
	msg := r.Error()
	for _, want := range []string{"agent-1 asked to hand the item off from Backlog", "Recovery: from Backlog, research may retry with intent complete (→ Ready for Plan)",
		"release (→ Research Needed)", `or with state "Ready for Plan" or "Human Needed" (give intent or state, not both)`} {
		if !strings.Contains(msg, want) {
			t.Errorf("refusal lacks %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, "lock (→") {
		t.Errorf("the refused intent is offered again: %s", msg)
	}
	for _, o := range r.Options {
		if !strings.Contains(r.Recovery, o) {
			t.Errorf("option %q is not named in the recovery", o)
		}
	}
	// Each surface names its own arguments: the MCP tool's direct state is to_state.
	spelt := r.Spell(func(a Arg) string {
		if a == ArgState {
			return "to_state"
		}
		return ""
	})
	if want := `or with to_state "Ready for Plan" or "Human Needed" (give intent or to_state, not both)`; !strings.Contains(spelt.Recovery, want) || strings.Contains(r.Recovery, "to_state") {
		t.Errorf("spelt recovery lacks %q: %s (the refusal itself: %s)", want, spelt.Recovery, r.Recovery)
	}
	if m.HandoffRefusal("research", nil, c, Decision{Verdict: Allow}) != nil {
		t.Error("an allowed change has no refusal")
	}
	// Gate refusals keep their own recovery.
	lc := Change{From: "Research in Progress", To: "Ready for Plan", Actor: "agent-2", ActorKind: ActorAgent, LockHolder: "agent-1"}
	if r := m.HandoffRefusal("research", nil, lc, m.Decide(lc)); r == nil || !strings.Contains(r.Recovery, "ask agent-1") {
		t.Errorf("lock refusal: %v", r)
	}
	// Nothing the command can do: the other moves are named.
	hc := Change{From: "Human Needed", To: "Backlog", Actor: "agent-1", ActorKind: ActorAgent}
	if r := m.HandoffRefusal("triage", nil, hc, m.Decide(hc)); r == nil || !strings.Contains(r.Recovery, "ask a human") {
		t.Errorf("human needed: %v", r)
	}
}

func TestHandoffRetries(t *testing.T) {
	m := defaultMachine(t)
	intents, states := m.HandoffRetries("ralph_plan", "Ready for Plan", ActorAgent)
	if strings.Join(states, ",") != "Plan in Progress,Human Needed" || !strings.HasPrefix(strings.Join(intents, ","), "lock (→ Plan in Progress)") {
		t.Fatalf("%v %v", intents, states)
	}
	if i, s := m.HandoffRetries("nope", "Backlog", ActorAgent); i != nil || s != nil {
		t.Fatal("an unknown command has no retries")
	}
}

func TestCheckAdvance(t *testing.T) {
	m := defaultMachine(t)
	for _, tc := range []struct {
		parent, target, want string
	}{
		{"Plan in Review", "Ready for Plan", ""},
		{"Plan in Review", "Plan in Review", ""},
		{"Ready for Plan", "In Progress", "children never get ahead"},
		{"Human Needed", "Backlog", "off the pipeline"},
		{"In Progress", "Canceled", "off the pipeline"},
		{"In Progress", "Nowhere", "Unknown target state"},
	} {
		err := m.CheckAdvance(tc.parent, tc.target)
		var r *Refusal
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s/%s: %v", tc.parent, tc.target, err)
		case tc.want != "" && (!errors.As(err, &r) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "Recovery: ")):
			t.Errorf("%s/%s: want %q, got %v", tc.parent, tc.target, tc.want, err)
		}
	}
}

// askRefusal is what an agent is told for a: the resolution's refusal, or the refusal of the
// move it resolves to (nil when the move is allowed). Neither intent nor state: the refusal
// that asks for one.
func askRefusal(t *testing.T, m *Machine, a HandoffAsk) *Refusal {
	t.Helper()
	if a.Intent == "" && a.State == "" {
		return m.HandoffRetryRefusal(a, "Neither intent nor state was given", "a handoff names exactly one")
	}
	to, err := m.ResolveHandoff(a)
	if err != nil {
		var r *Refusal
		if !errors.As(err, &r) {
			t.Fatalf("%+v: %v is not a refusal", a, err)
		}
		return r
	}
	c := a.change(to)
	return m.HandoffRefusal(a.Command, a.Commands, c, m.Decide(c))
}

// tableRules are the rules a Recovery's values must never run into again: the table, the
// actor's kind and its role (the gates depend on other items).
var tableRules = []Rule{RuleUnknownState, RuleNotInitial, RuleTransition, RuleHumansOnly, RuleRole}

// followed checks a retry as an agent makes it: it resolves, it is a move, and neither the
// table, nor the actor's kind, nor its role refuses it. "" when it passes.
func followed(m *Machine, a HandoffAsk) string {
	to, err := m.ResolveHandoff(a)
	if err != nil {
		return "refused again: " + err.Error()
	}
	from := a.From
	if !m.IsState(from) {
		from = ""
	}
	if to == from {
		return "no move: the item is in " + to
	}
	if d := m.Decide(a.change(to)); d.Verdict == Revert && slices.Contains(tableRules, d.Rule) {
		return "refused again (" + string(d.Rule) + "): " + d.Reason
	}
	return ""
}

// tailPattern reads the other commands a Recovery names: `"Done" (merge) or "Backlog" (triage or split)`.
var (
	tailPattern     = regexp.MustCompile(`"((?:[^"\\]|\\.)*)" \(([a-z_]+(?:(?:, | or )[a-z_]+)*)\)`)
	tailCommandsSep = regexp.MustCompile(`, | or `)
)

// TestHandoffRecoveriesAreFollowable is the property behind every handoff Recovery: for every
// state an item may be in (and none), every to_state (and an unknown one), every intent (and
// an unknown one) and none, every command, and agents of every kind of restriction — all
// commands, a few commands, each worker role (interactive review) — every value the Recovery
// suggests, retried as written, resolves for its command and is not refused by the table,
// the agent's kind or its role; a command it names is one the agent may use; and every state
// the command may reach from there is offered.
func TestHandoffRecoveriesAreFollowable(t *testing.T) {
	plain := defaultMachine(t)
	withRoles, roles := compiledRoles(t, ReviewInteractive, ownershipMap())
	withRoles = withRoles.WithRoles(roles)
	type agent struct {
		name     string
		m        *Machine
		actor    string
		role     string
		commands []string
	}
	agents := []agent{
		{"any command", plain, "agent-1", "", nil},
		{"research only", plain, "agent-1", "", []string{"research"}},
		{"triage and plan, prefixed", plain, "agent-1", "", []string{"ralph_triage", "PLAN"}},
		{"no role by name", withRoles, "agent-1", "", nil},
		{"builder by name", withRoles, "builder-1", "", roles.Commands("builder")},
	}
	for _, role := range roles.Names() {
		agents = append(agents, agent{"declared " + role, withRoles, "agent-7", role, roles.Commands(role)})
	}
	froms := append([]string{""}, allStates...)
	tos := append(slices.Clone(allStates), "Bogus")
	intents := append(plain.Intents(), "bogus")
	checked, followedN := 0, 0
	for _, ag := range agents {
		m := ag.m
		for _, cmd := range m.Commands() {
			if !(HandoffAsk{Commands: ag.commands}).mayUse(cmd) {
				continue
			}
			for _, from := range froms {
				base := HandoffAsk{Command: cmd, From: from, Actor: ag.actor, Kind: ActorAgent, Role: ag.role, Commands: ag.commands}
				var asks []HandoffAsk
				asks = append(asks, base)
				for _, to := range tos {
					a := base
					a.State = to
					asks = append(asks, a)
				}
				for _, it := range intents {
					a := base
					a.Intent = it
					asks = append(asks, a)
				}
				for _, a := range asks {
					r := askRefusal(t, m, a)
					if r == nil {
						continue
					}
					checked++
					where := fmt.Sprintf("%s: %s from %q, intent %q, state %q", ag.name, cmd, from, a.Intent, a.State)
					msg := r.Error()
					if !strings.Contains(msg, ". Recovery: ") || r.Recovery == "" {
						t.Fatalf("%s: no Recovery: %s", where, msg)
					}
					for _, o := range r.Options {
						if !strings.Contains(r.Recovery, o) {
							t.Errorf("%s: option %q is not named in the Recovery: %s", where, o, msg)
						}
					}
					offered := map[string]bool{}
					if r.Retry != nil {
						for _, s := range r.Retry.With {
							for _, v := range s.Values {
								again := a
								switch s.Arg {
								case ArgIntent:
									again.Intent, again.State = v, ""
								case ArgState:
									again.Intent, again.State = "", v
								case ArgCommand:
									again.Command = v
									if !again.mayUse(v) {
										t.Errorf("%s: the Recovery suggests command %s, which the agent may not use: %s", where, v, msg)
									}
								default:
									t.Errorf("%s: the Recovery suggests %s, not a handoff's argument: %s", where, s.Arg, msg)
									continue
								}
								followedN++
								if s.Arg == ArgCommand {
									if _, err := m.command(v); err != nil {
										t.Errorf("%s: the Recovery suggests command %s: %v", where, v, err)
									}
									continue
								}
								if why := followed(m, again); why != "" {
									t.Errorf("%s: the Recovery suggests %s %s, %s\n%s", where, s.Arg, v, why, msg)
									continue
								}
								to, _ := m.ResolveHandoff(again)
								offered[to] = true
							}
						}
					}
					_, tail, _ := strings.Cut(r.Recovery, "other commands you may use move it to ")
					for _, mt := range tailPattern.FindAllStringSubmatch(tail, -1) {
						for _, other := range tailCommandsSep.Split(mt[2], -1) {
							again := a
							again.Command, again.Intent, again.State = other, "", mt[1]
							followedN++
							if !again.mayUse(other) {
								t.Errorf("%s: the Recovery names command %s, which the agent may not use: %s", where, other, msg)
							}
							if why := followed(m, again); why != "" {
								t.Errorf("%s: the Recovery says %s moves it to %q, but %s\n%s", where, other, mt[1], why, msg)
							}
						}
					}
					// Complete: a table refusal, or one of a resolution that offers intents and
					// states, offers every state the command may reach from here.
					if r.Retry == nil || slices.Contains(r.Retry.Drop, ArgIntent) {
						continue
					}
					if s := r.Retry.With; len(s) == 0 || s[0].Arg == ArgCommand {
						continue
					}
					c, _ := m.command(cmd)
					its, targets, states := m.handoffTargets(c, a)
					for _, st := range append(targets, states...) {
						if !offered[st] {
							t.Errorf("%s: the Recovery does not offer %s (intents %v, states %v): %s", where, st, its, states, msg)
						}
					}
				}
			}
		}
	}
	if checked < 1000 || followedN < 1000 {
		t.Fatalf("the property ran on only %d refusals and %d retries", checked, followedN)
	}
	t.Logf("%d refusals, %d retries followed", checked, followedN)
}

// TestHandoffRecoveryFromResearchNeeded: the friction that started it — research from
// Research Needed to Done is told only what it may do there (no close, no cancel).
func TestHandoffRecoveryFromResearchNeeded(t *testing.T) {
	m := defaultMachine(t)
	withRoles, roles := compiledRoles(t, ReviewSkip, ownershipMap())
	withRoles = withRoles.WithRoles(roles)
	for _, tc := range []struct {
		name     string
		m        *Machine
		ask      HandoffAsk
		want     []string
		wantNot  []string
		recovery string // the whole Recovery, when given
	}{
		{"research to Done", m, HandoffAsk{Command: "research", State: sDone, From: sRN, Actor: "agent-1", Kind: ActorAgent},
			[]string{`State "Done" is not a valid output for research`}, []string{"close", "cancel", "release", "Research Needed\""},
			`from Research Needed, research may retry with state "Research in Progress", "Ready for Plan" or "Human Needed", or with intent lock (→ Research in Progress), complete (→ Ready for Plan), escalate (→ Human Needed) or reject (→ Human Needed) (give state or intent, not both)`},
		{"research only, to Done", m, HandoffAsk{Command: "research", State: sDone, From: sRN, Actor: "agent-1", Kind: ActorAgent, Commands: []string{"research"}},
			nil, []string{"close", "cancel", "other commands"}, ""},
		{"close from Research Needed", m, HandoffAsk{Command: "triage", Intent: "close", From: sRN, Actor: "agent-1", Kind: ActorAgent},
			[]string{"Research Needed → Done is not a transition"}, []string{"close (", "cancel (", `"Done"`, `"Canceled"`}, ""},
		{"an analyst out of Ready for Plan", withRoles, HandoffAsk{Command: "research", State: sDone, From: sRFP, Actor: "analyst-1", Kind: ActorAgent},
			nil, []string{"lock (", "complete (", `"Ready for Plan"`}, `from Ready for Plan, research may retry with state "Human Needed", or with intent escalate (→ Human Needed) or reject (→ Human Needed) (give state or intent, not both)`},
		{"an unknown command names only the agent's", m, HandoffAsk{Command: "fly", State: sDone, From: sRN, Actor: "agent-1", Kind: ActorAgent, Commands: []string{"research", "ralph_plan"}},
			[]string{"Unknown command", "retry with command research or plan"}, []string{"triage"}, "retry with command research or plan"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := askRefusal(t, tc.m, tc.ask)
			if r == nil {
				t.Fatal("allowed")
			}
			msg := r.Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("lacks %q: %s", w, msg)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(r.Recovery, w) {
					t.Errorf("the Recovery has %q: %s", w, msg)
				}
			}
			if tc.recovery != "" && r.Recovery != tc.recovery {
				t.Errorf("Recovery\n got %s\nwant %s", r.Recovery, tc.recovery)
			}
		})
	}
}

func TestCheckCommand(t *testing.T) {
	m := defaultMachine(t)
	for _, tc := range []struct {
		name, cmd string
		commands  []string
		want      string // "" = known
	}{
		{"known", "research", nil, ""},
		{"known, prefixed", "ralph_Plan", []string{"research"}, ""},
		{"unknown, any command", "fly", nil, "Recovery: retry with command triage, split, research"},
		{"unknown, the agent's commands only", "fly", []string{"ralph_research", "PLAN"},
			`Unknown command "fly". The commands you may use are research, plan (each is also accepted with the ralph_ prefix, e.g. ralph_research). Recovery: retry with command research or plan`},
		{"unknown, no known command of the agent's", "fly", []string{"nope"}, "Recovery: retry with command triage, split"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := m.CheckCommand(tc.cmd, tc.commands)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var r *Refusal
			if !errors.As(err, &r) || !strings.Contains(err.Error(), tc.want) || !r.Unknown || r.Kind() != RuleArguments {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}
