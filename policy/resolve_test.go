package policy

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

const (
	errAmbiguous = "!ambiguous"
	errUndefined = "!undefined"
)

// The README's intent table, every intent × command written out.
var wantIntent = map[string]map[string]string{
	"lock": {
		"triage": errUndefined, "split": errUndefined, "research": sRIP, "plan": sPIP, "plan_epic": sPIP,
		"review": errUndefined, "impl": sIP, "pr": errUndefined, "merge": errUndefined, "hero": errUndefined,
	},
	"complete": {
		"triage": errAmbiguous, "split": sBacklog, "research": sRFP, "plan": sPIR, "plan_epic": sIP,
		"review": sIP, "impl": sIR, "pr": errUndefined, "merge": sDone, "hero": errUndefined,
	},
	"escalate": {
		"triage": sHN, "split": sHN, "research": sHN, "plan": sHN, "plan_epic": sHN,
		"review": sHN, "impl": sHN, "pr": sHN, "merge": sHN, "hero": sHN,
	},
	"release": {
		"triage": errUndefined, "split": errUndefined, "research": sRN, "plan": sRFP, "plan_epic": sRFP,
		"review": errUndefined, "impl": errUndefined, "pr": errUndefined, "merge": errUndefined, "hero": errUndefined,
	},
	"reject": {
		"triage": sHN, "split": sHN, "research": sHN, "plan": sHN, "plan_epic": sHN,
		"review": sRFP, "impl": sIP, "pr": sHN, "merge": sHN, "hero": sHN,
	},
	"close": {
		"triage": sDone, "split": sDone, "research": sDone, "plan": sDone, "plan_epic": sDone,
		"review": sDone, "impl": sDone, "pr": sDone, "merge": sDone, "hero": sDone,
	},
	"cancel": {
		"triage": sCancel, "split": sCancel, "research": sCancel, "plan": sCancel, "plan_epic": sCancel,
		"review": sCancel, "impl": sCancel, "pr": sCancel, "merge": sCancel, "hero": sCancel,
	},
}

var intentOrder = []string{"lock", "complete", "escalate", "release", "reject", "close", "cancel"}

// wantRetries: a command's direct states, then the intents that resolve for it (config order).
func wantRetries(cmd string) []string {
	out := slices.Clone(wantDirect[cmd])
	for _, it := range intentOrder {
		if st := wantIntent[it][cmd]; !strings.HasPrefix(st, "!") {
			out = append(out, it)
		}
	}
	return out
}

func TestResolveIntentEveryPair(t *testing.T) {
	m := defaultMachine(t)
	for _, it := range intentOrder {
		for _, cmd := range allCommands {
			want := wantIntent[it][cmd]
			forms := []string{it, "__" + strings.ToUpper(it) + "__", strings.ToUpper(it[:1]) + it[1:], "__" + it + "__"}
			for _, form := range forms {
				for _, c := range []string{cmd, "ralph_" + cmd} {
					t.Run(c+"/"+form, func(t *testing.T) {
						got, err := m.ResolveIntent(c, form)
						switch want {
						case errAmbiguous:
							r := asRefusal(t, err)
							if r.Tried != fmt.Sprintf("Intent %q is ambiguous for %s", it, cmd) {
								t.Errorf("tried %q", r.Tried)
							}
							sameStrings(t, "options", r.Options, wantDirect[cmd])
						case errUndefined:
							r := asRefusal(t, err)
							if r.Tried != fmt.Sprintf("Intent %q is not defined for %s", it, cmd) {
								t.Errorf("tried %q", r.Tried)
							}
							sameStrings(t, "options", r.Options, wantRetries(cmd))
						default:
							if err != nil || got != want {
								t.Errorf("ResolveIntent(%q, %q) = %q, %v; want %q", c, form, got, err, want)
							}
						}
					})
				}
			}
		}
	}
}

func TestResolveStateEveryPair(t *testing.T) {
	m := defaultMachine(t)
	for _, cmd := range allCommands {
		for _, st := range allStates {
			for _, c := range []string{cmd, "ralph_" + cmd} {
				t.Run(c+"/"+st, func(t *testing.T) {
					got, err := m.ResolveState(c, st)
					if slices.Contains(wantDirect[cmd], st) {
						if err != nil || got != st {
							t.Fatalf("ResolveState(%q, %q) = %q, %v", c, st, got, err)
						}
						return
					}
					r := asRefusal(t, err)
					if r.Tried != fmt.Sprintf("State %q is not a valid output for %s", st, cmd) {
						t.Errorf("tried %q", r.Tried)
					}
					if r.Why != "Valid states for "+cmd+" are "+strings.Join(wantDirect[cmd], ", ") {
						t.Errorf("why %q", r.Why)
					}
					sameStrings(t, "options", r.Options, wantRetries(cmd))
				})
			}
		}
	}
}

func TestResolveErrors(t *testing.T) {
	m := defaultMachine(t)
	tests := []struct {
		name        string
		run         func() (string, error)
		wantMsg     string // the full message, exactly
		wantOptions []string
	}{
		{
			"unknown command",
			func() (string, error) { return m.ResolveIntent("foo", "lock") },
			`Unknown command "foo". Valid commands are triage, split, research, plan, plan_epic, review, impl, pr, merge, hero (each is also accepted with the ralph_ prefix, e.g. ralph_triage). Recovery: retry with command triage, split, research, plan, plan_epic, review, impl, pr, merge or hero`,
			allCommands,
		},
		{
			"unknown command via state",
			func() (string, error) { return m.ResolveState("ralph_foo", sDone) },
			`Unknown command "ralph_foo". Valid commands are triage, split, research, plan, plan_epic, review, impl, pr, merge, hero (each is also accepted with the ralph_ prefix, e.g. ralph_triage). Recovery: retry with command triage, split, research, plan, plan_epic, review, impl, pr, merge or hero`,
			allCommands,
		},
		{
			"unknown intent",
			func() (string, error) { return m.ResolveIntent("research", "__FOOBAR__") },
			`Unknown intent "__FOOBAR__". Valid intents are lock (claim work), complete (finish work), escalate (needs a human), release (give claimed work back), reject (send work back), close (mark done), cancel (abandon); each is also accepted in the marker form, e.g. __LOCK__. Recovery: for research, retry with state "Research in Progress", "Ready for Plan" or "Human Needed", or with intent lock (→ Research in Progress), complete (→ Ready for Plan), escalate (→ Human Needed), release (→ Research Needed), reject (→ Human Needed), close (→ Done) or cancel (→ Canceled) (give state or intent, not both)`,
			wantRetries("research"),
		},
		{
			"lock for triage",
			func() (string, error) { return m.ResolveIntent("ralph_triage", "__LOCK__") },
			`Intent "lock" is not defined for triage. Only these commands support lock: research → Research in Progress, plan → Plan in Progress, plan_epic → Plan in Progress, impl → In Progress. Recovery: for triage, retry with state "Research Needed", "Ready for Plan", "Done", "Canceled" or "Human Needed", or with intent escalate (→ Human Needed), reject (→ Human Needed), close (→ Done) or cancel (→ Canceled) (give state or intent, not both)`,
			wantRetries("triage"),
		},
		{
			"complete for hero",
			func() (string, error) { return m.ResolveIntent("hero", "complete") },
			`Intent "complete" is not defined for hero. Only these commands support complete: split → Backlog, research → Ready for Plan, plan → Plan in Review, plan_epic → In Progress, review → In Progress, impl → In Review, merge → Done. Recovery: for hero, retry with state "In Review" or "Human Needed", or with intent escalate (→ Human Needed), reject (→ Human Needed), close (→ Done) or cancel (→ Canceled) (give state or intent, not both)`,
			wantRetries("hero"),
		},
		{
			"complete for triage is ambiguous",
			func() (string, error) { return m.ResolveIntent("triage", "complete") },
			`Intent "complete" is ambiguous for triage. The command triage has several outputs: Research Needed, Ready for Plan, Done, Canceled, Human Needed. Recovery: use a direct state instead: retry without intent, with state "Research Needed", "Ready for Plan", "Done", "Canceled" or "Human Needed"`,
			[]string{sRN, sRFP, sDone, sCancel, sHN},
		},
		{
			"ambiguous via marker in state",
			func() (string, error) { return m.ResolveState("triage", "__COMPLETE__") },
			`Intent "complete" is ambiguous for triage. The command triage has several outputs: Research Needed, Ready for Plan, Done, Canceled, Human Needed. Recovery: use a direct state instead: retry without intent, with state "Research Needed", "Ready for Plan", "Done", "Canceled" or "Human Needed"`,
			[]string{sRN, sRFP, sDone, sCancel, sHN},
		},
		{
			"unknown state with case hint",
			func() (string, error) { return m.ResolveState("impl", "in review") },
			`Unknown state "in review". Valid states are Backlog, Research Needed, Research in Progress, Ready for Plan, Plan in Progress, Plan in Review, In Progress, In Review, Human Needed, Done, Canceled (names are case-sensitive; did you mean "In Review"?). Recovery: for impl, retry with state "In Progress", "In Review" or "Human Needed", or with intent lock (→ In Progress), complete (→ In Review), escalate (→ Human Needed), reject (→ In Progress), close (→ Done) or cancel (→ Canceled) (give state or intent, not both)`,
			wantRetries("impl"),
		},
		{
			"unknown state",
			func() (string, error) { return m.ResolveState("pr", "Shipped") },
			`Unknown state "Shipped". Valid states are Backlog, Research Needed, Research in Progress, Ready for Plan, Plan in Progress, Plan in Review, In Progress, In Review, Human Needed, Done, Canceled (names are case-sensitive). Recovery: for pr, retry with state "In Review" or "Human Needed", or with intent escalate (→ Human Needed), reject (→ Human Needed), close (→ Done) or cancel (→ Canceled) (give state or intent, not both)`,
			wantRetries("pr"),
		},
		{
			"done for research (seeds/000 #10)",
			func() (string, error) { return m.ResolveState("ralph_research", sDone) },
			`State "Done" is not a valid output for research. Valid states for research are Research in Progress, Ready for Plan, Human Needed. Recovery: for research, retry with state "Research in Progress", "Ready for Plan" or "Human Needed", or with intent lock (→ Research in Progress), complete (→ Ready for Plan), escalate (→ Human Needed), release (→ Research Needed), reject (→ Human Needed), close (→ Done) or cancel (→ Canceled) (give state or intent, not both)`,
			wantRetries("research"),
		},
		{
			"empty intent",
			func() (string, error) { return m.ResolveIntent("plan", "") },
			"", wantRetries("plan"),
		},
		{
			"bare underscores are not a marker",
			func() (string, error) { return m.ResolveIntent("plan", "____") },
			"", wantRetries("plan"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.run()
			if got != "" {
				t.Errorf("state = %q", got)
			}
			r := asRefusal(t, err)
			if tt.wantMsg != "" && r.Error() != tt.wantMsg {
				t.Errorf("message:\n got %s\nwant %s", r.Error(), tt.wantMsg)
			}
			sameStrings(t, "options", r.Options, tt.wantOptions)
		})
	}
}

func TestResolveStateMarkers(t *testing.T) {
	m := defaultMachine(t)
	for in, want := range map[string]string{"__LOCK__": sRIP, "__complete__": sRFP, " __ESCALATE__ ": sHN, "__CLOSE__": sDone} {
		if got, err := m.ResolveState("research", in); err != nil || got != want {
			t.Errorf("ResolveState(research, %q) = %q, %v", in, got, err)
		}
	}
	// A word is a state name here, not an intent: "lock" is not a state.
	_, err := m.ResolveState("research", "lock")
	if r := asRefusal(t, err); !strings.HasPrefix(r.Tried, "Unknown state") {
		t.Errorf("tried %q", r.Tried)
	}
}

// Machines without commands or intents still refuse cleanly.
func TestResolveEmptyMachine(t *testing.T) {
	s := Spec{
		Field:      "F",
		States:     []StateSpec{{Name: "A", Kind: "queue", Next: []string{"B"}}, {Name: "B", Kind: "terminal"}},
		Initial:    []string{"A"},
		Automation: AutomationSpec{MaxCascadeDepth: 1},
	}
	m, ps := Compile(s)
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	_, err := m.ResolveIntent("x", "lock")
	asRefusal(t, err)
	s.Commands = []CommandSpec{{Name: "go"}}
	m, _ = Compile(s)
	_, err = m.ResolveIntent("go", "lock")
	if r := asRefusal(t, err); !strings.Contains(r.Why, "No intents") {
		t.Errorf("why %q", r.Why)
	}
	_, err = m.ResolveState("go", "B")
	asRefusal(t, err)
}

// Unknown tells a name the workflow does not know (bad input) from a rule's refusal.
func TestRefusalUnknown(t *testing.T) {
	m := defaultMachine(t)
	errOf := func(_ any, err error) error { return err }
	_, _, pickErr := Pick(nil, sRN, "XXL")
	tests := []struct {
		name    string
		err     error
		unknown bool
	}{
		{"unknown command", errOf(m.ResolveIntent("fly", "lock")), true},
		{"unknown intent", errOf(m.ResolveIntent("research", "bogus")), true},
		{"unknown state", errOf(m.ResolveState("research", "Bogus")), true},
		{"unknown target", errOf(m.CheckConvergence("Bogus", nil)), true},
		{"unknown advance target", m.CheckAdvance(sIP, "Bogus"), true},
		{"unknown actor", errOf(ParseActorKind("robot")), true},
		{"unknown estimate", pickErr, true},
		{"unknown state for an argument", m.RequireState(ArgFrom, "Nowhere"), true},
		{"ambiguous intent", errOf(m.ResolveIntent("triage", "complete")), false},
		{"intent not defined", errOf(m.ResolveIntent("triage", "lock")), false},
		{"state not an output", errOf(m.ResolveState("research", sDone)), false},
		{"target off the pipeline", errOf(m.CheckConvergence(sHN, nil)), false},
		{"children ahead of the parent", m.CheckAdvance(sRFP, sIP), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := asRefusal(t, tt.err)
			if r.Unknown != tt.unknown {
				t.Errorf("Unknown = %v: %v", r.Unknown, r)
			}
		})
	}
	if err := m.RequireState(ArgFrom, sDone); err != nil {
		t.Errorf("a state is required: %v", err)
	}
	r := asRefusal(t, m.RequireState(ArgTo, "done"))
	if !strings.Contains(r.Why, `did you mean "Done"?`) || !strings.HasPrefix(r.Recovery, `retry with to "Backlog", "Research Needed"`) {
		t.Errorf("%v", r)
	}
}
