package policy

import (
	"fmt"
	"strings"
)

// The from_anywhere rules are drawn once, from a dashed pseudo-state, instead of one edge per
// state: sixteen parallel arrows would bury the workflow itself.
const anywhereLabel = "any non-terminal state"

// graphIDs gives every state a stable identifier usable in Mermaid and DOT, plus the ids of the
// start and from-anywhere pseudo-states.
func (m *Machine) graphIDs() (ids []string, anywhere string) {
	used := map[string]bool{}
	unique := func(base string) string {
		id := base
		for n := 2; used[id]; n++ {
			id = fmt.Sprintf("%s_%d", base, n)
		}
		used[id] = true
		return id
	}
	anywhere = unique("from_anywhere")
	for _, s := range m.states {
		ids = append(ids, unique(slug(s)))
	}
	return ids, anywhere
}

// slug lower-cases a name and joins its alphanumeric runs with underscores.
func slug(s string) string {
	var b strings.Builder
	gap := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if gap && b.Len() > 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r)
			gap = false
		} else {
			gap = true
		}
	}
	if b.Len() == 0 || (b.String()[0] >= '0' && b.String()[0] <= '9') {
		return "s_" + b.String()
	}
	return b.String()
}

// graphLabel is a state's name, followed by the roles that own it when roles are configured.
func (m *Machine) graphLabel(state, sep string) string {
	if m.roles == nil {
		return state
	}
	if owners := m.roles.Owners(state); len(owners) > 0 {
		return state + sep + strings.Join(owners, ", ")
	}
	return state
}

// EdgeNote is what a diagram writes on a transition into to: "humans only", what entering to
// requires (workflow.requirements: "requires Estimate", "requires a merged PR"), or both;
// "" for a plain transition.
func (m *Machine) EdgeNote(to string, humansOnly bool) string {
	var notes []string
	if humansOnly {
		notes = append(notes, "humans only")
	}
	var needs []string
	for _, r := range m.Requirements(to) {
		needs = append(needs, r.Fields...)
		if r.PullRequest == PullRequestMerged {
			needs = append(needs, "a merged PR")
		}
	}
	if len(needs) > 0 {
		notes = append(notes, "requires "+strings.Join(needs, ", "))
	}
	return strings.Join(notes, "; ")
}

// Mermaid renders the machine as a Mermaid stateDiagram-v2 (embedded in the README).
func (m *Machine) Mermaid() string {
	ids, anywhere := m.graphIDs()
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	label := func(s string) string { return strings.ReplaceAll(s, `"`, "#quot;") }
	w("stateDiagram-v2")
	for i, s := range m.states {
		w("    state \"%s\" as %s", label(m.graphLabel(s, " · ")), ids[i])
	}
	if len(m.spec.FromAnywhere) > 0 {
		w("    state \"%s\" as %s", anywhereLabel, anywhere)
	}
	for _, s := range m.initial {
		w("    [*] --> %s", ids[m.index[s]])
	}
	for _, t := range m.Transitions() {
		if t.Anywhere {
			continue
		}
		suffix := ""
		if note := m.EdgeNote(t.To, t.HumansOnly); note != "" {
			suffix = " : " + label(note)
		}
		w("    %s --> %s%s", ids[m.index[t.From]], ids[m.index[t.To]], suffix)
	}
	for _, r := range m.spec.FromAnywhere {
		suffix := ""
		if note := m.EdgeNote(r.To, r.HumansOnly); note != "" {
			suffix = " : " + label(note)
		}
		w("    %s --> %s%s", anywhere, ids[m.index[r.To]], suffix)
	}
	styles := []struct {
		kind Kind
		def  string
	}{
		{Lock, "fill:#fde68a,stroke:#b45309"},
		{HumanGate, "fill:#bfdbfe,stroke:#1d4ed8"},
		{Terminal, "fill:#e5e7eb,stroke:#374151"},
	}
	for _, st := range styles {
		var members []string
		for i, info := range m.info {
			if info.Kind == st.kind {
				members = append(members, ids[i])
			}
		}
		if len(members) > 0 {
			w("    classDef %s %s", st.kind, st.def)
			w("    class %s %s", strings.Join(members, ","), st.kind)
		}
	}
	if len(m.spec.FromAnywhere) > 0 {
		w("    classDef anywhere fill:#ffffff,stroke-dasharray:5 5")
		w("    class %s anywhere", anywhere)
	}
	return b.String()
}

// Dot renders the machine in Graphviz DOT.
func (m *Machine) Dot() string {
	ids, anywhere := m.graphIDs()
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	q := func(s string) string {
		return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
	}
	fill := map[Kind]string{Lock: "#fde68a", HumanGate: "#bfdbfe", Terminal: "#e5e7eb"}
	w("digraph workflow {")
	w("  rankdir=LR;")
	w("  node [shape=box, style=rounded, fontname=\"Helvetica\"];")
	w("  edge [fontname=\"Helvetica\", fontsize=10];")
	w("  start [shape=point, label=\"\"];")
	for i, info := range m.info {
		attrs := "label=" + q(m.graphLabel(info.Name, "\n")) + ", tooltip=" + q(info.Kind.String()+": "+info.Description)
		if c, ok := fill[info.Kind]; ok {
			attrs += `, style="rounded,filled", fillcolor=` + q(c)
		}
		w("  %s [%s];", ids[i], attrs)
	}
	if len(m.spec.FromAnywhere) > 0 {
		w("  %s [label=%s, style=dashed];", anywhere, q(anywhereLabel))
	}
	for _, s := range m.initial {
		w("  start -> %s;", ids[m.index[s]])
	}
	for _, t := range m.Transitions() {
		if t.Anywhere {
			continue
		}
		w("  %s -> %s%s;", ids[m.index[t.From]], ids[m.index[t.To]], dotEdge(q, m.EdgeNote(t.To, t.HumansOnly), t.HumansOnly))
	}
	for _, r := range m.spec.FromAnywhere {
		w("  %s -> %s%s;", anywhere, ids[m.index[r.To]], dotEdge(q, m.EdgeNote(r.To, r.HumansOnly), r.HumansOnly))
	}
	w("}")
	return b.String()
}

// dotEdge is a DOT edge's attributes: its note as the label, dashed when humans only.
func dotEdge(q func(string) string, note string, humansOnly bool) string {
	switch {
	case humansOnly:
		return ` [label=` + q(note) + `, style=dashed]`
	case note != "":
		return ` [label=` + q(note) + `]`
	}
	return ""
}
