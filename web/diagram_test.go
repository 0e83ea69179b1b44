package web

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ralph-gate/ralph-gate/policy"
)

// smallSpec is a three-state workflow with a humans-only reopen and no from-anywhere rule.
func smallSpec() policy.Spec {
	return policy.Spec{
		Field: "Status",
		States: []policy.StateSpec{
			{Name: "Todo", Kind: "queue", Next: []string{"Doing"}},
			{Name: "Doing", Kind: "lock", Next: []string{"Todo", "Done"}},
			{Name: "Done", Kind: "terminal", Next: []string{"Todo"}, HumansOnly: true},
		},
		Initial:    []string{"Todo"},
		Pipeline:   []string{"Todo", "Doing", "Done"},
		Automation: policy.AutomationSpec{MaxCascadeDepth: 1},
	}
}

// hostileSpec has state names that need escaping in XML.
func hostileSpec() policy.Spec {
	s := smallSpec()
	rename := map[string]string{"Todo": `<script>alert(1)</script>`, "Doing": `A & "B" 'c'`, "Done": "]]> done"}
	for i := range s.States {
		s.States[i].Name = rename[s.States[i].Name]
		for j, n := range s.States[i].Next {
			s.States[i].Next[j] = rename[n]
		}
	}
	for i, n := range s.Initial {
		s.Initial[i] = rename[n]
	}
	for i, n := range s.Pipeline {
		s.Pipeline[i] = rename[n]
	}
	return s
}

func TestDiagram(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		spec       policy.Spec
		o          DiagramOptions
		hlStates   []string          // highlighted boxes, in display order ("" a pseudo-state)
		hlMoves    []string          // highlighted arrows, "from → to", sorted
		target     string            // the ringed box
		counts     map[string]string // a box's count text ("" the start box)
		overLimit  []string          // boxes whose count is drawn in red
		noCountsAt []string          // boxes that must show no count
	}{
		{name: "the default workflow, plain", spec: policy.DefaultSpec()},
		{name: "counts and WIP limits", spec: policy.DefaultSpec(),
			o: DiagramOptions{Counts: map[string]int{"Backlog": 12, "In Progress": 4, "In Review": 2}, Unset: 5,
				Limits: map[string]int{"In Progress": 3, "In Review": 2}},
			counts:    map[string]string{"Backlog": "12", "Research Needed": "0", "In Progress": "4/3", "In Review": "2/2", "": "5"},
			overLimit: []string{"In Progress"}},
		{name: "no counts without Counts", spec: policy.DefaultSpec(), o: DiagramOptions{Unset: 5},
			noCountsAt: []string{"Backlog", ""}},
		{name: "a state, its moves and a target", spec: policy.DefaultSpec(),
			o: DiagramOptions{Highlight: Highlight{
				States: []string{"Backlog"},
				Moves: []policy.TransitionRef{
					{From: "Backlog", To: "Done"},
					{From: "Backlog", To: "Human Needed"}, // allowed by a from-anywhere rule
				},
				Target: "In Progress",
			}},
			hlStates: []string{"", "Backlog"},
			hlMoves:  []string{" → Human Needed", "Backlog → Done"},
			target:   "In Progress"},
		{name: "from no state", spec: policy.DefaultSpec(),
			o:        DiagramOptions{Highlight: Highlight{States: []string{""}, Moves: []policy.TransitionRef{{To: "Backlog"}}}},
			hlStates: []string{""}, hlMoves: []string{" → Backlog"}},
		{name: "a terminal state does not leave by from-anywhere rules", spec: policy.DefaultSpec(),
			o: DiagramOptions{Highlight: Highlight{States: []string{"Done"},
				Moves: []policy.TransitionRef{{From: "Done", To: "Human Needed"}, {From: "Done", To: "Backlog"}}}},
			hlStates: []string{"Done"}, hlMoves: []string{"Done → Backlog"}},
		{name: "unknown states and moves are ignored", spec: policy.DefaultSpec(),
			o: DiagramOptions{Highlight: Highlight{States: []string{"Nowhere"},
				Moves: []policy.TransitionRef{{From: "Nowhere", To: "Done"}, {From: "Backlog", To: "Nowhere"}}}}},
		{name: "a small workflow", spec: smallSpec(),
			o:      DiagramOptions{Counts: map[string]int{"Doing": 1}, Highlight: Highlight{States: []string{"Doing"}, Moves: []policy.TransitionRef{{From: "Doing", To: "Todo"}}}},
			counts: map[string]string{"Todo": "0", "Doing": "1", "Done": "0", "": "0"}, hlStates: []string{"Doing"}, hlMoves: []string{"Doing → Todo"}},
		{name: "names that need escaping", spec: hostileSpec(),
			o:      DiagramOptions{Counts: map[string]int{`A & "B" 'c'`: 3}, Highlight: Highlight{Target: `<script>alert(1)</script>`}},
			counts: map[string]string{`A & "B" 'c'`: "3"}, target: `<script>alert(1)</script>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			svg, err := Diagram(tt.spec, tt.o)
			if err != nil {
				t.Fatal(err)
			}
			if again, _ := Diagram(tt.spec, tt.o); again != svg {
				t.Error("two renderings of the same diagram differ")
			}
			checkWellFormed(t, svg)
			doc := parseSVG(t, svg)
			m, _ := policy.Compile(tt.spec)

			// One box per state, in display order, top to bottom, after the pseudo-states.
			var states []string
			lastY := -1.0
			for _, g := range doc.Groups {
				y := atof(t, g.Rects[0].Y)
				if y <= lastY {
					t.Errorf("box %q at y=%v is not below the previous one (%v)", g.State, y, lastY)
				}
				lastY = y
				if g.has("state") {
					states = append(states, g.State)
				}
			}
			if !slices.Equal(states, m.States()) {
				t.Errorf("boxes %q, want the states in display order %q", states, m.States())
			}

			// One arrow per transition (from-anywhere rules drawn once), per initial state.
			wantEdges, wantHumans := len(m.Initial())+len(tt.spec.FromAnywhere), 0
			for _, tr := range m.Transitions() {
				if !tr.Anywhere {
					wantEdges++
					if tr.HumansOnly {
						wantHumans++
					}
				}
			}
			for _, r := range tt.spec.FromAnywhere {
				if r.HumansOnly {
					wantHumans++
				}
			}
			humans := 0
			for _, p := range doc.Paths {
				if p.has("humans-only") {
					humans++
				}
			}
			if len(doc.Paths) != wantEdges || humans != wantHumans {
				t.Errorf("%d arrows (%d for humans only), want %d (%d)", len(doc.Paths), humans, wantEdges, wantHumans)
			}

			var hlStates, hlMoves []string
			target := ""
			counts := map[string]string{}
			var over []string
			for _, g := range doc.Groups {
				if g.has("hl") {
					hlStates = append(hlStates, g.State)
				}
				if g.has("target") {
					target = g.State
				}
				for _, tx := range g.Texts {
					if tx.Class == "count" {
						counts[g.State] = tx.Body
						if tx.Fill == "#b91c1c" {
							over = append(over, g.State)
						}
					}
				}
			}
			for _, p := range doc.Paths {
				if p.has("hl") {
					hlMoves = append(hlMoves, p.From+" → "+p.To)
				}
			}
			slices.Sort(hlMoves)
			if !slices.Equal(hlStates, tt.hlStates) {
				t.Errorf("highlighted boxes %q, want %q", hlStates, tt.hlStates)
			}
			if !slices.Equal(hlMoves, tt.hlMoves) {
				t.Errorf("highlighted arrows %q, want %q", hlMoves, tt.hlMoves)
			}
			if target != tt.target {
				t.Errorf("ringed box %q, want %q", target, tt.target)
			}
			for s, want := range tt.counts {
				if counts[s] != want {
					t.Errorf("count of %q = %q, want %q", s, counts[s], want)
				}
			}
			for _, s := range tt.noCountsAt {
				if c, ok := counts[s]; ok {
					t.Errorf("box %q shows a count %q", s, c)
				}
			}
			if !slices.Equal(over, tt.overLimit) {
				t.Errorf("over their limit: %q, want %q", over, tt.overLimit)
			}
			if tt.o.Counts == nil && len(counts) > 0 {
				t.Errorf("counts shown without Counts: %v", slices.Sorted(maps.Keys(counts)))
			}
		})
	}
}

// TestDiagramArrowsDoNotShareALine checks the layout: arrows around the column never share
// a lane where they overlap, nor an end on a box.
func TestDiagramArrowsDoNotShareALine(t *testing.T) {
	t.Parallel()
	svg, err := Diagram(policy.DefaultSpec(), DiagramOptions{})
	if err != nil {
		t.Fatal(err)
	}
	type seg struct{ lo, hi float64 }
	lanes := map[float64][]seg{}
	ends := map[[2]float64]string{}
	for _, p := range parseSVG(t, svg).Paths {
		var x0, y1, lx, y2, x1 float64
		if n, _ := fmt.Sscanf(p.D, "M%g,%g H%g V%g H%g", &x0, &y1, &lx, &y2, &x1); n != 5 {
			continue // an arrow down the middle
		}
		s := seg{min(y1, y2), max(y1, y2)}
		for _, o := range lanes[lx] {
			if s.lo <= o.hi && o.lo <= s.hi {
				t.Errorf("arrow %s → %s shares lane x=%v with another over y %v–%v", p.From, p.To, lx, o.lo, o.hi)
			}
		}
		lanes[lx] = append(lanes[lx], s)
		for _, end := range [][2]float64{{x0, y1}, {x1, y2}} {
			if prev, dup := ends[end]; dup {
				t.Errorf("arrows %s and %s→%s end at the same point %v", prev, p.From, p.To, end)
			}
			ends[end] = p.From + "→" + p.To
		}
	}
	if len(lanes) < 2 {
		t.Errorf("only %d lanes: the layout drew no arrow around the column", len(lanes))
	}
}

// TestDiagramIsXML parses every diagram the pages may draw with a strict XML decoder.
func TestDiagramIsXML(t *testing.T) {
	t.Parallel()
	for name, spec := range map[string]policy.Spec{"default": policy.DefaultSpec(), "small": smallSpec(), "hostile": hostileSpec()} {
		svg, err := Diagram(spec, DiagramOptions{Counts: map[string]int{}, Highlight: Highlight{States: []string{spec.States[0].Name}}})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		checkWellFormed(t, svg)
		if strings.Contains(svg, "<script") {
			t.Errorf("%s: a state name reached the SVG unescaped", name)
		}
	}
}

func TestDiagramInvalidSpec(t *testing.T) {
	t.Parallel()
	s := smallSpec()
	s.States[0].Next = []string{"Nowhere"}
	if svg, err := Diagram(s, DiagramOptions{}); err == nil || !strings.Contains(err.Error(), "Nowhere") {
		t.Errorf("Diagram of an invalid spec = %d bytes, %v; want an error naming the problem", len(svg), err)
	}
}

// checkWellFormed decodes every token strictly: the SVG is XML on its own, not only HTML.
func checkWellFormed(t *testing.T, svg string) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader([]byte(svg)))
	dec.Strict = true
	root := ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the diagram is not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Space + " " + se.Name.Local
		}
	}
	if root != "http://www.w3.org/2000/svg svg" {
		t.Errorf("root element %q, want svg in the SVG namespace", root)
	}
}

func atof(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// An arrow into a state with requirements is marked (class guarded, its own colour) and its
// title says what the state requires; other arrows are not.
func TestDiagramMarksGuardedTransitions(t *testing.T) {
	t.Parallel()
	spec := policy.DefaultSpec()
	spec.Requirements = []policy.Requirement{{Into: []string{"Ready for Plan"}, Fields: []string{"Estimate"}}}
	svg, err := Diagram(spec, DiagramOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkWellFormed(t, svg)
	guarded := regexp.MustCompile(`<path class="edge[^"]*guarded" data-from="([^"]*)" data-to="([^"]*)"[^>]*stroke="` + dGuarded + `"[^>]*><title>([^<]*)</title>`)
	found := guarded.FindAllStringSubmatch(svg, -1)
	if len(found) == 0 {
		t.Fatalf("no guarded arrow:\n%s", svg)
	}
	for _, f := range found {
		if f[2] != "Ready for Plan" || !strings.HasSuffix(f[3], "(requires Estimate)") {
			t.Errorf("guarded arrow %s → %s titled %q", f[1], f[2], f[3])
		}
	}
	if n := strings.Count(svg, `data-to="Ready for Plan"`); n != len(found) {
		t.Errorf("%d arrows into Ready for Plan, %d of them marked", n, len(found))
	}
	plain, err := Diagram(policy.DefaultSpec(), DiagramOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain, "guarded") {
		t.Error("an arrow is marked guarded without requirements")
	}
}
