package policy

import (
	"strings"
	"testing"
)

func TestMermaid(t *testing.T) {
	m := defaultMachine(t)
	g := m.Mermaid()
	if g != m.Mermaid() {
		t.Fatal("not deterministic")
	}
	lines := strings.Split(strings.TrimSuffix(g, "\n"), "\n")
	if lines[0] != "stateDiagram-v2" {
		t.Errorf("first line %q", lines[0])
	}
	for _, want := range []string{
		`    state "Research in Progress" as research_in_progress`,
		`    state "any non-terminal state" as from_anywhere`,
		`    [*] --> backlog`,
		`    [*] --> ready_for_plan`,
		`    backlog --> canceled`,
		`    plan_in_progress --> in_progress`,
		`    human_needed --> backlog : humans only`,
		`    done --> backlog : humans only`,
		`    from_anywhere --> human_needed`,
		`    from_anywhere --> canceled : humans only`,
		`    class research_in_progress,plan_in_progress,in_progress lock`,
		`    class done,canceled terminal`,
	} {
		if !contains(lines, want) {
			t.Errorf("missing line %q in\n%s", want, g)
		}
	}
	for _, bad := range []string{`    [*] --> in_progress`, `    backlog --> in_progress`, `    research_needed --> human_needed : humans only`} {
		if contains(lines, bad) {
			t.Errorf("unexpected line %q", bad)
		}
	}
	// 30 next entries + 2 rules + 3 initial arrows.
	if n := strings.Count(g, "-->"); n != 35 {
		t.Errorf("%d arrows, want 35", n)
	}
}

func TestDot(t *testing.T) {
	m := defaultMachine(t)
	g := m.Dot()
	if g != m.Dot() || !strings.HasPrefix(g, "digraph workflow {\n") || !strings.HasSuffix(g, "}\n") {
		t.Fatalf("dot:\n%s", g)
	}
	for _, want := range []string{
		`  backlog [label="Backlog", tooltip="queue: Awaiting triage"];`,
		`  start -> backlog;`,
		`  human_needed -> in_progress [label="humans only", style=dashed];`,
		`  from_anywhere -> canceled [label="humans only", style=dashed];`,
		`  from_anywhere -> human_needed;`,
	} {
		if !strings.Contains(g, want+"\n") {
			t.Errorf("missing %q", want)
		}
	}
	if n := strings.Count(g, " -> "); n != 35 {
		t.Errorf("%d edges, want 35", n)
	}
}

// Awkward names stay valid and distinct identifiers, and quotes are escaped.
func TestGraphAwkwardNames(t *testing.T) {
	s := Spec{
		Field: "F",
		States: []StateSpec{
			{Name: "To do", Kind: "queue", Next: []string{"to-do", `Say "hi"`}},
			{Name: "to-do", Kind: "queue", Next: []string{"2nd"}},
			{Name: `Say "hi"`, Kind: "lock", Next: []string{"2nd"}},
			{Name: "2nd", Kind: "terminal"},
			{Name: "from anywhere", Kind: "terminal"},
			{Name: "!!!", Kind: "queue", Next: []string{"2nd"}},
		},
		FromAnywhere: []AnywhereRule{{To: "from anywhere"}, {To: "!!!"}},
		Initial:      []string{"To do"},
		Automation:   AutomationSpec{MaxCascadeDepth: 1},
	}
	m, ps := Compile(s)
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	ids, anywhere := m.graphIDs()
	want := []string{"to_do", "to_do_2", "say_hi", "s_2nd", "from_anywhere_2", "s_"}
	sameStrings(t, "ids", ids, want)
	if anywhere != "from_anywhere" {
		t.Errorf("anywhere id %q", anywhere)
	}
	if g := m.Mermaid(); !strings.Contains(g, `state "Say #quot;hi#quot;" as say_hi`) {
		t.Errorf("mermaid:\n%s", g)
	}
	if g := m.Dot(); !strings.Contains(g, `label="Say \"hi\""`) {
		t.Errorf("dot:\n%s", g)
	}
}

func contains(lines []string, s string) bool {
	for _, l := range lines {
		if l == s {
			return true
		}
	}
	return false
}

// A transition into a state with requirements says what it requires, in both formats, next to
// "humans only" when both hold.
func TestGraphMarksRequirements(t *testing.T) {
	m := machineWith(t, func(s *Spec) {
		s.Requirements = []Requirement{
			{Into: []string{sRFP}, Fields: []string{"Estimate", "Priority"}},
			{Into: []string{sBacklog}, PullRequest: PullRequestMerged, For: []string{"human"}},
		}
	})
	mermaid, dot := m.Mermaid(), m.Dot()
	for _, want := range []string{
		`    research_needed --> ready_for_plan : requires Estimate, Priority`,
		`    human_needed --> backlog : humans only; requires a merged PR`,
		`    research_needed --> research_in_progress` + "\n",
	} {
		if !strings.Contains(mermaid, want) {
			t.Errorf("mermaid lacks %q:\n%s", want, mermaid)
		}
	}
	for _, want := range []string{
		`  research_needed -> ready_for_plan [label="requires Estimate, Priority"];`,
		`  human_needed -> backlog [label="humans only; requires a merged PR", style=dashed];`,
		`  research_needed -> research_in_progress;`,
	} {
		if !strings.Contains(dot, want) {
			t.Errorf("dot lacks %q:\n%s", want, dot)
		}
	}
}
