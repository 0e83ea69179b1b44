package marker

import (
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	cmd := "plan"
	in := []Transition{
		{From: "Backlog", To: "In Progress", At: "2026-11-01T12:00:00Z", Actor: "agent-1", Verdict: "reverted"},
		{From: "Ready for Plan", To: "Plan in Progress", Command: &cmd, At: "t", Reason: "sneaky --> end"},
	}
	body := "text\n" + in[0].String() + "\nmore\n" + in[1].String()
	out, err := ParseTransitions(body)
	if err != nil || len(out) != 2 {
		t.Fatalf("%+v %v", out, err)
	}
	if out[1].Command == nil || *out[1].Command != "plan" || out[1].Reason != "sneaky --> end" || out[0].Command != nil {
		t.Fatalf("round trip changed values: %+v", out)
	}
	if !strings.Contains(in[0].String(), `"command":null`) {
		t.Errorf("command must be present (null) for compatibility: %s", in[0].String())
	}
}

func TestParseErrors(t *testing.T) {
	for _, body := range []string{"<!-- ralph-transition: {nope", "<!-- ralph-transition: {nope} -->"} {
		if _, err := ParseTransitions(body); err == nil {
			t.Errorf("accepted %q", body)
		}
	}
	if ms, err := ParseTransitions("no markers"); err != nil || len(ms) != 0 {
		t.Errorf("%v %v", ms, err)
	}
	cmd := "x"
	compat := `<!-- ralph-transition: {"from":"A","to":"B","command":"x","at":"t","extra":1} -->`
	ms, err := ParseTransitions(compat)
	if err != nil || len(ms) != 1 || *ms[0].Command != cmd {
		t.Errorf("extra keys must be allowed: %+v %v", ms, err)
	}
}

func FuzzParseTransitions(f *testing.F) {
	f.Add(`<!-- ralph-transition: {"from":"A","to":"B","command":null,"at":"t"} -->`)
	f.Add("<!-- ralph-transition:  -->")
	f.Fuzz(func(t *testing.T, body string) {
		ms, err := ParseTransitions(body)
		if err != nil {
			return
		}
		for _, m := range ms {
			again, err := ParseTransitions(m.String())
			if err != nil || len(again) != 1 {
				t.Fatalf("a parsed marker does not round-trip: %+v %v", m, err)
			}
		}
	})
}

// A violation comment explains moves of its own issue; a summary those of the issues its
// markers name; any other comment nothing.
func TestExplained(t *testing.T) {
	one := Transition{From: "Backlog", To: "Done", Actor: "alice", Delivery: "d1"}
	other := Transition{From: "Backlog", To: "Done", Actor: "alice", Delivery: "d2", Issue: "acme/app#7"}
	for _, tt := range []struct {
		name, body string
		want       map[string]int
	}{
		{"violation comment", Violation + "\n" + one.String() + "\ntext", map[string]int{"acme/app#1": 1}},
		{"summary", ViolationSummary + "\n" + other.String() + "\n" + one.String(), map[string]int{"acme/app#7": 1, "acme/app#1": 1}},
		{"another comment", "hello " + one.String(), map[string]int{}},
		{"an issue named outside a summary stays on its own issue", Violation + "\n" + other.String(), map[string]int{"acme/app#1": 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Explained(tt.body, "acme/app#1")
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("%v, want %v", got, tt.want)
			}
			for issue, n := range tt.want {
				if len(got[issue]) != n {
					t.Errorf("%s: %d moves, want %d", issue, len(got[issue]), n)
				}
			}
		})
	}
}
