package policy

import (
	"errors"
	"testing"
)

func TestRefusal(t *testing.T) {
	var err error = &Refusal{Tried: "Tried x", Why: "It is wrong", Recovery: `retry with state="A"`, Options: []string{"A"}}
	if err.Error() != `Tried x. It is wrong. Recovery: retry with state="A"` {
		t.Error(err)
	}
	var r *Refusal
	if !errors.As(err, &r) {
		t.Error("errors.As")
	}
	for in, want := range map[string]string{"": "(none)", "a": "a", "a,b": "a or b", "a,b,c": "a, b or c"} {
		var items []string
		if in != "" {
			items = splitComma(in)
		}
		if got := joinOr(items); got != want {
			t.Errorf("joinOr(%q) = %q", in, got)
		}
	}
	if joinAnd([]string{"x", "y"}) != "x and y" {
		t.Error("joinAnd")
	}
	sameStrings(t, "stateArgs", stateArgs([]string{"In Review"}), []string{`state="In Review"`})
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}
