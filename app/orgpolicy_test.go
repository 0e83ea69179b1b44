package app

import (
	"strings"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/app/config"
)

// An organization's policies are judged by time: a change is held to the policy in force when
// it was made (the newest put in force by then; the oldest known before it), now to the
// newest; an organization keeps its newest keptPolicies; the file's text decides projects and
// modes.
func TestOrgPoliciesByTime(t *testing.T) {
	base, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	p := newOrgPolicies(base, "ralph-gate[bot]")
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for i, text := range []string{"projects:\n  - number: 1\n", "projects:\n  - {number: 1, mode: evaluate}\n", "projects:\n  - {number: 2, mode: warn}\n"} {
		op, problems := p.compile("Acme", 7, string(rune('a'+i)), []byte(text), t0.Add(time.Duration(i)*time.Minute))
		if len(problems) > 0 {
			t.Fatal(problems)
		}
		p.put(op)
	}
	for _, tc := range []struct {
		at   time.Time
		sha  string
		mode string // "": the policy of the time does not list project 1
	}{
		{t0.Add(-time.Hour), "a", "enforce"},
		{t0, "a", "enforce"},
		{t0.Add(time.Minute), "a", "enforce"}, // b holds from the second after it was put in force
		{t0.Add(time.Minute + time.Second), "b", "evaluate"},
		{t0.Add(90 * time.Second), "b", "evaluate"},
		{t0.Add(2*time.Minute + time.Second), "c", ""}, // project 1 is not c's
		{time.Time{}, "c", ""},
	} {
		op, ok := p.at("acme", tc.at)
		m, listed := p.Mode("ACME", 1, tc.at)
		if !ok || op.sha != tc.sha || string(m) != tc.mode || listed != (tc.mode != "") {
			t.Errorf("at %v: %q (%v), mode %q; want %q, %q", tc.at, op.sha, ok, m, tc.sha, tc.mode)
		}
	}
	if !p.enforces("acme", 2) || p.enforces("acme", 1) {
		t.Error("enforces is not the policy in force now's")
	}
	if _, _, ok := p.Of("globex", t0); ok {
		t.Error("an organization with no policy has one")
	}
	for i := range keptPolicies + 3 {
		op, _ := p.compile("acme", 7, "x", []byte("projects:\n  - number: 1\n"), t0.Add(time.Duration(10+i)*time.Minute))
		p.put(op)
	}
	if n := len(p.by["acme"]); n != keptPolicies {
		t.Errorf("%d policies kept, want %d", n, keptPolicies)
	}
	p.forget("ACME")
	if _, ok := p.get("acme"); ok {
		t.Error("a forgotten organization has a policy")
	}
}

// An agent works for the one organization whose file names it, or the one config.yml binds it
// to; one two organizations name works for none, and an organization cannot name an agent
// bound to another.
func TestOrgPoliciesOfAgent(t *testing.T) {
	base, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	base.MCP.Agents = []config.MCPAgent{{Name: "a-1", Token: "a-1-token-0123456789"}, {Name: "b-1", Token: "b-1-token-0123456789"},
		{Name: "bound-1", Token: "bound-token-0123456789", Org: "globex"}}
	p := newOrgPolicies(base, "ralph-gate[bot]")
	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for owner, text := range map[string]string{
		"acme":    "projects: [{number: 1}]\nmcp:\n  agents: [{name: a-1}, {name: b-1}]\n",
		"globex":  "projects: [{number: 1}]\nmcp:\n  agents: [{name: b-1}]\n",
		"initech": "projects: [{number: 1}]\n",
	} {
		op, problems := p.compile(owner, 1, "x", []byte(text), at)
		if len(problems) > 0 {
			t.Fatal(owner, problems)
		}
		p.put(op)
	}
	for agent, want := range map[string]string{"a-1": "acme", "b-1": "", "bound-1": "globex", "nobody": ""} {
		op, ok := p.ofAgent(agent)
		if got := map[bool]string{true: op.owner}[ok]; got != want {
			t.Errorf("%s works for %q, want %q", agent, got, want)
		}
	}
	if _, problems := p.compile("acme", 1, "y", []byte("projects: [{number: 1}]\nmcp:\n  agents: [{name: bound-1}]\n"), at); len(problems) != 1 ||
		problems[0].Path != "mcp.agents[0].name" || !strings.Contains(problems[0].Message, "works for another organization") {
		t.Errorf("naming another organization's agent: %v", problems)
	}
}

// A refused file's problems are cut to fit a check run and the store, on a line, saying how
// many were left out.
func TestCapText(t *testing.T) {
	short := "a: b\nc: d"
	if capText(short, 1000) != short {
		t.Error("a short text was cut")
	}
	long := strings.Repeat("projects[0].mode (line 3): unknown mode\n", 5000)
	got := capText(long, maxCheckText)
	if len(got) > maxCheckText || !strings.Contains(got, "more line(s)") || !strings.HasPrefix(got, "projects[0].mode") {
		t.Errorf("cut to %d bytes, ending %q", len(got), got[len(got)-40:])
	}
}
