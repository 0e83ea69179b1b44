package web

import (
	"cmp"
	"fmt"
	"html"
	"slices"
	"strconv"
	"strings"

	"github.com/ralph-gate/ralph-gate/policy"
)

// The workflow diagram: one column of boxes in display order, arrows between them. A move
// to the next box is a short arrow down the middle; any other goes around the column, on the
// right when it moves down and on the left when it moves up, each in a lane of its own so
// that no two arrows share a line. The drawing reads at a phone's width (it scales down as a
// whole) and needs no script, no font and no style sheet: colours are SVG attributes.

// DiagramOptions says what a diagram shows besides the workflow itself.
type DiagramOptions struct {
	// Counts are the items per state; nil shows no counts.
	Counts map[string]int
	// Limits are the WIP limits shown with the counts ("4/3"); a count above its limit is
	// drawn in red.
	Limits map[string]int
	// Unset is the number of items with no state, shown on the start box when Counts is set.
	Unset int
	// Highlight marks states and moves.
	Highlight Highlight
}

// Highlight is what a diagram draws out: states, moves (From "" is the start: an item with no
// state) and one Target (the state a move went to, allowed or not).
type Highlight struct {
	States []string
	Moves  []policy.TransitionRef
	Target string
}

func (h Highlight) empty() bool { return len(h.States) == 0 && len(h.Moves) == 0 && h.Target == "" }

// Names of the two pseudo-states, drawn as dashed boxes above the states.
const (
	startLabel    = "no state"
	anywhereLabel = "any non-terminal state"
)

// Geometry, in SVG user units (CSS pixels at full size).
const (
	dMargin    = 12.0
	dBoxW      = 200.0
	dMinBoxH   = 36.0
	dPortGap   = 9.0  // between two arrows' ends on one side of a box
	dRowGap    = 24.0 // between two boxes
	dLaneGap   = 8.0  // between two lanes of arrows
	dLabelMax  = 24   // runes of a state's name before it is cut
	dFontSize  = 13
	dEdgeColor = "#6b7280"
	dHighlight = "#c2410c"
	dGuarded   = "#7c3aed" // a transition into a state with requirements
	dInk       = "#1f2937"
)

var kindFill = map[string]string{
	"queue":      "#ffffff",
	"lock":       "#fde68a",
	"human_gate": "#bfdbfe",
	"terminal":   "#e5e7eb",
}

// Diagram renders the workflow of spec as an SVG document fragment (an <svg> element), the
// same for the same arguments. The transitions are policy's (policy.Compile): a spec that
// does not compile is an error.
func Diagram(spec policy.Spec, o DiagramOptions) (string, error) {
	m, problems := policy.Compile(spec)
	if len(problems) > 0 {
		msgs := make([]string, len(problems))
		for i, p := range problems {
			msgs[i] = p.String()
		}
		return "", fmt.Errorf("web: diagram of an invalid workflow: %s", strings.Join(msgs, "; "))
	}
	return diagram(m, o), nil
}

type dNode struct {
	name   string // state name; a pseudo-state's label
	pseudo bool
	kind   string
	y, h   float64
	ports  [3][]dPort // by side: left, centre (unused), right
	hl     bool
}

type dPort struct {
	edge  int
	other int // row of the other end
}

type dEdge struct {
	from, to int // rows
	humans   bool
	requires string // what entering to requires (workflow.requirements), "" nothing
	hl       bool
	side     int // -1 left, 0 centre, 1 right
	lane     int
	y1, y2   float64
}

// diagram draws a compiled machine.
func diagram(m *policy.Machine, o DiagramOptions) string {
	spec := m.Spec()
	var nodes []*dNode
	row := map[string]int{}
	start, anywhere := -1, -1
	if len(m.Initial()) > 0 {
		start = len(nodes)
		nodes = append(nodes, &dNode{name: startLabel, pseudo: true})
	}
	if len(spec.FromAnywhere) > 0 {
		anywhere = len(nodes)
		nodes = append(nodes, &dNode{name: anywhereLabel, pseudo: true})
	}
	for _, s := range m.States() {
		info, _ := m.State(s)
		row[s] = len(nodes)
		nodes = append(nodes, &dNode{name: s, kind: info.Kind.String()})
	}

	// Edges in a fixed order: from the start, from anywhere, then the states' own.
	var edges []*dEdge
	pair := map[[2]int]int{}
	add := func(from, to int, humans bool) {
		pair[[2]int{from, to}] = len(edges)
		e := &dEdge{from: from, to: to, humans: humans}
		if !nodes[to].pseudo {
			e.requires = m.EdgeNote(nodes[to].name, false)
		}
		edges = append(edges, e)
	}
	for _, s := range m.Initial() {
		add(start, row[s], false)
	}
	for _, r := range spec.FromAnywhere {
		add(anywhere, row[r.To], r.HumansOnly)
	}
	for _, t := range m.Transitions() {
		if !t.Anywhere {
			add(row[t.From], row[t.To], t.HumansOnly)
		}
	}

	markHighlights(m, o.Highlight, nodes, edges, pair, row, start, anywhere)

	// Sides and ports.
	for i, e := range edges {
		switch {
		case e.to == e.from+1:
			e.side = 0
		case e.to > e.from:
			e.side = 1
		default:
			e.side = -1
		}
		if e.side != 0 {
			s := e.side + 1
			nodes[e.from].ports[s] = append(nodes[e.from].ports[s], dPort{edge: i, other: e.to})
			nodes[e.to].ports[s] = append(nodes[e.to].ports[s], dPort{edge: i, other: e.from})
		}
	}
	y := dMargin
	for r, n := range nodes {
		most := max(len(n.ports[0]), len(n.ports[2]))
		n.h = max(dMinBoxH, dPortGap*float64(most+1))
		n.y = y
		y += n.h + dRowGap
		for _, s := range []int{0, 2} {
			ps := n.ports[s]
			// Arrows to boxes above leave from the top, the farthest lowest; arrows to boxes
			// below from the bottom, the farthest highest: then no two of them cross here.
			slices.SortStableFunc(ps, func(a, b dPort) int {
				au, bu := a.other < r, b.other < r
				switch {
				case au && !bu:
					return -1
				case !au && bu:
					return 1
				case au:
					return cmp.Or(cmp.Compare(r-a.other, r-b.other), cmp.Compare(a.edge, b.edge))
				default:
					return cmp.Or(cmp.Compare(b.other-r, a.other-r), cmp.Compare(a.edge, b.edge))
				}
			})
			for k, p := range ps {
				py := n.y + n.h*float64(k+1)/float64(len(ps)+1)
				if e := edges[p.edge]; nodes[e.from] == n {
					e.y1 = py
				} else {
					e.y2 = py
				}
			}
		}
	}
	height := y - dRowGap + dMargin

	// Lanes: shortest arrows nearest the column, each lane holding arrows that do not overlap.
	lanes := map[int][][][2]float64{}
	order := make([]int, len(edges))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ea, eb := edges[a], edges[b]
		return cmp.Or(cmp.Compare(span(ea), span(eb)), cmp.Compare(min(ea.y1, ea.y2), min(eb.y1, eb.y2)))
	})
	for _, i := range order {
		e := edges[i]
		if e.side == 0 {
			continue
		}
		lo, hi := min(e.y1, e.y2)-2, max(e.y1, e.y2)+2
		ls := lanes[e.side]
		l := 0
		for ; l < len(ls); l++ {
			if !slices.ContainsFunc(ls[l], func(iv [2]float64) bool { return iv[0] <= hi && lo <= iv[1] }) {
				break
			}
		}
		if l == len(ls) {
			ls = append(ls, nil)
		}
		ls[l] = append(ls[l], [2]float64{lo, hi})
		lanes[e.side] = ls
		e.lane = l
	}
	boxX := dMargin + float64(len(lanes[-1])+1)*dLaneGap
	width := boxX + dBoxW + float64(len(lanes[1])+1)*dLaneGap + dMargin

	var b strings.Builder
	b.Grow(4096 + 400*len(edges) + 500*len(nodes))
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="diagram" viewBox="0 0 %s %s" width="%s" height="%s" role="img" aria-label="Workflow diagram: %d states, %d moves" font-family="system-ui, -apple-system, Segoe UI, sans-serif" font-size="%d">`,
		num(width), num(height), num(width), num(height), len(m.States()), len(edges), dFontSize)
	b.WriteString("\n<defs>")
	for _, mk := range []struct{ id, color string }{{"arrow", dEdgeColor}, {"arrow-hl", dHighlight}} {
		fmt.Fprintf(&b, `<marker id="%s" viewBox="0 0 10 10" refX="10" refY="5" markerUnits="userSpaceOnUse" markerWidth="8" markerHeight="8" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="%s"/></marker>`, mk.id, mk.color)
	}
	b.WriteString("</defs>\n")

	dim := !o.Highlight.empty()
	// Highlighted arrows last, so that they are drawn over the others.
	for _, pass := range []bool{false, true} {
		for _, e := range edges {
			if e.hl != pass {
				continue
			}
			writeEdge(&b, e, nodes, boxX, dim)
		}
	}
	for r, n := range nodes {
		writeNode(&b, n, r == start, o, boxX)
	}
	b.WriteString("</svg>")
	return b.String()
}

// markHighlights sets the hl flags. A highlighted move drawn from the from-anywhere box (a
// state's move that only a from_anywhere rule allows) lights that arrow and box.
func markHighlights(m *policy.Machine, h Highlight, nodes []*dNode, edges []*dEdge, pair map[[2]int]int, row map[string]int, start, anywhere int) {
	for _, s := range h.States {
		if r, ok := row[s]; ok {
			nodes[r].hl = true
		} else if s == "" && start >= 0 {
			nodes[start].hl = true
		}
	}
	for _, mv := range h.Moves {
		to, ok := row[mv.To]
		if !ok {
			continue
		}
		from, ok := row[mv.From]
		if mv.From == "" {
			from, ok = start, start >= 0
		}
		if !ok {
			continue
		}
		if i, drawn := pair[[2]int{from, to}]; drawn {
			edges[i].hl = true
		} else if i, drawn := pair[[2]int{anywhere, to}]; drawn && anywhere >= 0 && !m.IsTerminal(mv.From) {
			edges[i].hl, nodes[anywhere].hl = true, true
		}
	}
}

func span(e *dEdge) float64 {
	if e.y2 > e.y1 {
		return e.y2 - e.y1
	}
	return e.y1 - e.y2
}

func writeEdge(b *strings.Builder, e *dEdge, nodes []*dNode, boxX float64, dim bool) {
	from, to := nodes[e.from], nodes[e.to]
	var d string
	switch e.side {
	case 0:
		cx := boxX + dBoxW/2
		d = "M" + num(cx) + "," + num(from.y+from.h) + " V" + num(to.y)
	case 1:
		x0, lx := boxX+dBoxW, boxX+dBoxW+float64(e.lane+1)*dLaneGap
		d = "M" + num(x0) + "," + num(e.y1) + " H" + num(lx) + " V" + num(e.y2) + " H" + num(x0)
	default:
		x0, lx := boxX, boxX-float64(e.lane+1)*dLaneGap
		d = "M" + num(x0) + "," + num(e.y1) + " H" + num(lx) + " V" + num(e.y2) + " H" + num(x0)
	}
	color, marker, widthAttr, class := dEdgeColor, "arrow", "1.3", "edge"
	if e.hl {
		color, marker, widthAttr, class = dHighlight, "arrow-hl", "2.6", "edge hl"
	}
	extra := ""
	if e.humans {
		extra += ` stroke-dasharray="5 3"`
		class += " humans-only"
	}
	if e.requires != "" {
		class += " guarded"
		if !e.hl {
			color = dGuarded
		}
	}
	if dim && !e.hl {
		extra += ` opacity="0.35"`
	}
	title := from.name + " → " + to.name
	if e.humans {
		title += " (humans only)"
	}
	if e.requires != "" {
		title += " (" + e.requires + ")"
	}
	fmt.Fprintf(b, `<path class="%s" data-from="%s" data-to="%s" d="%s" fill="none" stroke="%s" stroke-width="%s"%s marker-end="url(#%s)"><title>%s</title></path>`+"\n",
		class, esc(pseudoOr(from)), esc(pseudoOr(to)), d, color, widthAttr, extra, marker, esc(title))
}

// pseudoOr is a node's data name: "" for a pseudo-state (the start and from-anywhere boxes).
func pseudoOr(n *dNode) string {
	if n.pseudo {
		return ""
	}
	return n.name
}

func writeNode(b *strings.Builder, n *dNode, isStart bool, o DiagramOptions, boxX float64) {
	fill, stroke, sw, extra := "#ffffff", dInk, "1.2", ""
	if !n.pseudo {
		fill = cmp.Or(kindFill[n.kind], fill)
	} else {
		extra = ` stroke-dasharray="4 3"`
	}
	class := "state"
	if n.pseudo {
		class = "pseudo"
	}
	if n.hl {
		stroke, sw, class = dHighlight, "3", class+" hl"
	}
	target := !n.pseudo && o.Highlight.Target == n.name
	if target {
		class += " target"
	}
	fmt.Fprintf(b, `<g class="%s" data-state="%s">`, class, esc(pseudoOr(n)))
	title := n.name
	if !n.pseudo {
		title = n.name + " (" + n.kind + ")"
	}
	fmt.Fprintf(b, `<title>%s</title>`, esc(title))
	fmt.Fprintf(b, `<rect x="%s" y="%s" width="%s" height="%s" rx="6" fill="%s" stroke="%s" stroke-width="%s"%s/>`,
		num(boxX), num(n.y), num(dBoxW), num(n.h), fill, stroke, sw, extra)
	if target {
		fmt.Fprintf(b, `<rect x="%s" y="%s" width="%s" height="%s" rx="9" fill="none" stroke="%s" stroke-width="1.5" stroke-dasharray="3 2"/>`,
			num(boxX-4), num(n.y-4), num(dBoxW+8), num(n.h+8), dHighlight)
	}
	ty := n.y + n.h/2 + dFontSize*0.35
	style := ""
	if n.pseudo {
		style = ` font-style="italic"`
	}
	fmt.Fprintf(b, `<text x="%s" y="%s" fill="%s"%s>%s</text>`, num(boxX+10), num(ty), dInk, style, esc(cut(n.name, dLabelMax)))
	if o.Counts != nil && (!n.pseudo || isStart) {
		text, color, weight := "", dInk, ""
		if isStart {
			text = strconv.Itoa(o.Unset)
		} else {
			c := o.Counts[n.name]
			text = strconv.Itoa(c)
			if limit := o.Limits[n.name]; limit > 0 {
				text += "/" + strconv.Itoa(limit)
				if c > limit {
					color, weight = "#b91c1c", ` font-weight="bold"`
				}
			}
		}
		fmt.Fprintf(b, `<text class="count" x="%s" y="%s" text-anchor="end" fill="%s"%s>%s</text>`,
			num(boxX+dBoxW-10), num(ty), color, weight, esc(text))
	}
	b.WriteString("</g>\n")
}

// cut shortens s to n runes, ending it with an ellipsis when it was longer.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// num formats a coordinate with at most one decimal.
func num(f float64) string { return strconv.FormatFloat(float64(int64(f*10+0.5))/10, 'f', -1, 64) }

// esc escapes text and attribute values (html.EscapeString's entities are XML's too).
func esc(s string) string { return html.EscapeString(s) }
