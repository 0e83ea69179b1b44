package policy

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Problem is one configuration mistake with the key path where it was found.
type Problem struct {
	Path    string `json:"path"`
	Message string `json:"message"`
	// Line is the 1-based line of the key in the file it was found in, when known (an
	// organization's policy file); 0 otherwise. String leaves it out.
	Line int `json:"line,omitempty"`
}

func (p Problem) String() string { return p.Path + ": " + p.Message }

// Compile validates the spec and builds the machine. It reports every problem at once, in
// spec order (map keys sorted), and returns a nil machine when there is any.
func Compile(s Spec) (*Machine, []Problem) {
	v := validator{s: s, index: map[string]int{}, cmds: map[string]int{}}
	v.run()
	if len(v.ps) > 0 {
		return nil, v.ps
	}
	return build(cloneSpec(s), v.index), nil
}

type validator struct {
	s     Spec
	ps    []Problem
	index map[string]int // first occurrence of each state name
	cmds  map[string]int // normalized command name -> first position
	// next holds each move a state's next list gives (from, to), from the first state of each
	// name; anywhere holds the targets of the from_anywhere rules (edges).
	next     map[[2]string]bool
	anywhere map[string]bool
	// required are the distinct fields the requirements name so far (checkRequirements).
	required []string
}

func (v *validator) add(path, format string, args ...any) {
	v.ps = append(v.ps, Problem{Path: path, Message: fmt.Sprintf(format, args...)})
}

// state reports an unknown state at path; empty names get their own message.
func (v *validator) state(path, name string) bool {
	if _, ok := v.index[name]; ok {
		return true
	}
	if name == "" {
		v.add(path, "must name a state")
	} else {
		v.add(path, "unknown state %q", name)
	}
	return false
}

func (v *validator) run() {
	s := v.s
	if strings.TrimSpace(s.Field) == "" {
		v.add("workflow.field", "must not be empty")
	}
	if len(s.States) == 0 {
		v.add("workflow.states", "must list at least one state")
	}
	switch s.ReviewMode {
	case "", ReviewSkip, ReviewAuto, ReviewInteractive:
	default:
		v.add("workflow.review_mode", "must be %s, %s or %s, got %q", ReviewSkip, ReviewAuto, ReviewInteractive, s.ReviewMode)
	}
	// Index first so that forward references in next lists resolve.
	for i, st := range s.States {
		p := fmt.Sprintf("workflow.states[%d].name", i)
		switch j, dup := v.index[st.Name]; {
		case strings.TrimSpace(st.Name) == "":
			v.add(p, "must not be empty")
		case dup:
			v.add(p, "duplicate state %q (also workflow.states[%d])", st.Name, j)
		default:
			v.index[st.Name] = i
		}
	}
	v.edges()
	terminal := map[string]bool{}
	for i, st := range s.States {
		k, err := ParseKind(st.Kind)
		if err != nil {
			v.add(fmt.Sprintf("workflow.states[%d].kind", i), "unknown kind %q (valid: queue, lock, human_gate, terminal)", st.Kind)
		}
		if err == nil && k == Terminal {
			terminal[st.Name] = true
		}
		seen := map[string]bool{}
		for j, n := range st.Next {
			p := fmt.Sprintf("workflow.states[%d].next[%d]", i, j)
			switch {
			case !v.state(p, n):
			case n == st.Name:
				v.add(p, "a state cannot move to itself")
			case seen[n]:
				v.add(p, "%q is listed twice", n)
			}
			seen[n] = true
		}
	}
	for i, r := range s.FromAnywhere {
		v.state(fmt.Sprintf("workflow.from_anywhere[%d].to", i), r.To)
	}
	for i, t := range s.HumansOnly {
		p := fmt.Sprintf("workflow.humans_only[%d]", i)
		okF := v.state(p+".from", t.From)
		okT := v.state(p+".to", t.To)
		if okF && okT && !v.isEdge(t.From, t.To, terminal) {
			v.add(p, "%s → %s is not a transition of the workflow", t.From, t.To)
		}
	}
	if len(s.Initial) == 0 {
		v.add("workflow.initial", "must list at least one initial state")
	}
	for i, n := range s.Initial {
		v.state(fmt.Sprintf("workflow.initial[%d]", i), n)
	}
	pipe := map[string]bool{}
	for i, n := range s.Pipeline {
		p := fmt.Sprintf("workflow.pipeline[%d]", i)
		if v.state(p, n) && pipe[n] {
			v.add(p, "%q is listed twice", n)
		}
		pipe[n] = true
	}
	for i, n := range s.ParentGates {
		p := fmt.Sprintf("workflow.parent_gates[%d]", i)
		if v.state(p, n) && !pipe[n] {
			v.add(p, "%q is not on the pipeline, so no child can reach it", n)
		}
	}
	// Intents come before commands in config.yml, so report them first; they need the command
	// names, which indexCommands collects without reporting.
	v.indexCommands()
	v.checkIntents()
	v.checkCommands()
	v.checkGates()
	v.checkRequirements()
	if v.s.Locks.TTL < 0 {
		v.add("workflow.locks.ttl", "must not be negative (got %s); 0 turns lock expiry off", v.s.Locks.TTL)
	}
	if s.Automation.MaxCascadeDepth < 1 {
		v.add("workflow.automation.max_cascade_depth", "must be at least 1 (got %d)", s.Automation.MaxCascadeDepth)
	}
	v.checkGraph(terminal)
}

// edges indexes the moves the next lists and the from_anywhere rules give, so that whether a
// move exists costs one look-up, whatever the size of the workflow.
func (v *validator) edges() {
	v.next, v.anywhere = map[[2]string]bool{}, map[string]bool{}
	for i, st := range v.s.States {
		if j, ok := v.index[st.Name]; !ok || j != i {
			continue // a name given twice, or none: its first state's next list is the one
		}
		for _, to := range st.Next {
			v.next[[2]string{st.Name, to}] = true
		}
	}
	for _, r := range v.s.FromAnywhere {
		v.anywhere[r.To] = true
	}
}

// isEdge reports whether from → to exists under the precedence rules (next, then anywhere);
// from is a state.
func (v *validator) isEdge(from, to string, terminal map[string]bool) bool {
	if from == to {
		return false
	}
	if v.next[[2]string{from, to}] {
		return true
	}
	return !terminal[from] && v.anywhere[to]
}

func (v *validator) indexCommands() {
	for i, c := range v.s.Commands {
		if n := normCommand(c.Name); n != "" && n != "*" {
			if _, dup := v.cmds[n]; !dup {
				v.cmds[n] = i
			}
		}
	}
}

func (v *validator) checkCommands() {
	for i, c := range v.s.Commands {
		p := fmt.Sprintf("workflow.commands[%d]", i)
		n := normCommand(c.Name)
		switch j := v.cmds[n]; {
		case n == "":
			v.add(p+".name", "must not be empty")
		case n == "*":
			v.add(p+".name", `"*" is reserved for intent wildcards`)
		case j != i:
			v.add(p+".name", "duplicate command %q (also workflow.commands[%d])", n, j)
		case c.Name != n:
			v.add(p+".name", "must be the bare lower-case name %q (ralph_ prefixes are accepted from agents, not declared)", n)
		}
		for j, in := range c.Inputs {
			v.state(fmt.Sprintf("%s.inputs[%d]", p, j), in)
		}
		for j, out := range c.Outputs {
			v.state(fmt.Sprintf("%s.outputs[%d]", p, j), out)
		}
		if c.Lock != "" && v.state(p+".lock", c.Lock) {
			if st := v.s.States[v.index[c.Lock]]; st.Kind != Lock.String() {
				v.add(p+".lock", "%q is a %s state, not a lock state", c.Lock, st.Kind)
			}
		}
	}
}

func (v *validator) checkIntents() {
	names := map[string]int{}
	for i, it := range v.s.Intents {
		p := fmt.Sprintf("workflow.intents[%d]", i)
		n := normIntent(it.Name)
		switch j, dup := names[n]; {
		case n == "":
			v.add(p+".name", "must not be empty")
		case it.Name != n:
			v.add(p+".name", "must be the lower-case word %q (the __MARKER__ form is accepted from agents, not declared)", n)
		case dup:
			v.add(p+".name", "duplicate intent %q (also workflow.intents[%d])", n, j)
		default:
			names[n] = i
		}
		if len(it.Targets) == 0 && len(it.Ambiguous) == 0 {
			v.add(p+".targets", "must map at least one command or \"*\" to a state")
		}
		seen := map[string]string{}
		for _, key := range slices.Sorted(maps.Keys(it.Targets)) {
			tp := p + ".targets." + key
			cmd := normCommand(key)
			if key != "*" {
				if _, ok := v.cmds[cmd]; !ok {
					v.add(tp, "unknown command %q", key)
				} else if other, dup := seen[cmd]; dup {
					v.add(tp, "names the same command as targets.%s", other)
				}
				seen[cmd] = key
			}
			v.state(tp, it.Targets[key])
		}
		for j, a := range it.Ambiguous {
			ap := fmt.Sprintf("%s.ambiguous[%d]", p, j)
			cmd := normCommand(a)
			if _, ok := v.cmds[cmd]; !ok {
				v.add(ap, "unknown command %q", a)
			} else if key, both := seen[cmd]; both {
				v.add(ap, "%q is also mapped in targets.%s; a command is either mapped or ambiguous", a, key)
			}
		}
	}
}

func (v *validator) checkGates() {
	for _, k := range slices.Sorted(maps.Keys(v.s.Gates.WIPLimits)) {
		p := "workflow.gates.wip_limits." + k
		v.state(p, k)
		if n := v.s.Gates.WIPLimits[k]; n < 0 {
			v.add(p, "must not be negative (got %d)", n)
		}
	}
}

// checkGraph runs only on a structurally sound state list: exits and reachability. Its cost
// is that of the states, their next lists and the from_anywhere rules together: a state's
// moves are its next list, then, unless it is terminal, the from_anywhere targets, which are
// the same for every state and so are followed once.
func (v *validator) checkGraph(terminal map[string]bool) {
	if len(v.index) != len(v.s.States) || len(v.index) == 0 {
		return
	}
	// anywhere are the from_anywhere targets that are states, each once, in the rules' order.
	var anywhere []string
	listed := map[string]bool{}
	for _, r := range v.s.FromAnywhere {
		if _, ok := v.index[r.To]; ok && !listed[r.To] {
			anywhere = append(anywhere, r.To)
			listed[r.To] = true
		}
	}
	// next are the moves of a state's next list to another state.
	next := func(st StateSpec, visit func(to string)) {
		for _, to := range st.Next {
			if _, ok := v.index[to]; ok && to != st.Name {
				visit(to)
			}
		}
	}
	for i, st := range v.s.States {
		if terminal[st.Name] {
			continue
		}
		exits := len(anywhere) > 1 || (len(anywhere) == 1 && anywhere[0] != st.Name)
		next(st, func(string) { exits = true })
		if !exits {
			v.add(fmt.Sprintf("workflow.states[%d].next", i), "non-terminal state %q has no exit", st.Name)
		}
	}
	seen := map[string]bool{}
	var queue []string
	visit := func(n string) {
		if !seen[n] {
			seen[n] = true
			queue = append(queue, n)
		}
	}
	for _, n := range v.s.Initial {
		if _, ok := v.index[n]; ok {
			visit(n)
		}
	}
	if len(queue) == 0 {
		return // already reported: no valid initial state
	}
	anywhereFollowed := false
	for len(queue) > 0 {
		st := v.s.States[v.index[queue[0]]]
		queue = queue[1:]
		next(st, visit)
		if !terminal[st.Name] && !anywhereFollowed {
			anywhereFollowed = true
			for _, to := range anywhere {
				visit(to) // every target but st itself is a move of st; st is seen already
			}
		}
	}
	for i, st := range v.s.States {
		if !seen[st.Name] {
			v.add(fmt.Sprintf("workflow.states[%d].name", i), "state %q cannot be reached from any initial state", st.Name)
		}
	}
}

// build assumes a valid spec.
func build(s Spec, index map[string]int) *Machine {
	m := &Machine{spec: s, index: index, isInit: map[string]bool{}, cmdIndex: map[string]int{}, intIndex: map[string]int{}}
	pipe := map[string]int{}
	for i, n := range s.Pipeline {
		pipe[n] = i
	}
	humansPair := map[[2]string]bool{}
	for _, t := range s.HumansOnly {
		humansPair[[2]string{t.From, t.To}] = true
	}
	n := len(s.States)
	m.edges = make([][]edge, n)
	for i, st := range s.States {
		k, _ := ParseKind(st.Kind)
		pi, on := pipe[st.Name]
		if !on {
			pi = -1
		}
		m.states = append(m.states, st.Name)
		m.info = append(m.info, StateInfo{Name: st.Name, Kind: k, Description: st.Description, PipelineIndex: pi, HumansOnly: st.HumansOnly})
		m.edges[i] = make([]edge, n)
	}
	for i, st := range s.States {
		for _, to := range st.Next {
			m.edges[i][index[to]] = edge{ok: true, humansOnly: st.HumansOnly || humansPair[[2]string{st.Name, to}]}
		}
		if m.info[i].Kind == Terminal {
			continue
		}
		// from_anywhere only adds targets the state does not list itself (next wins).
		for _, r := range s.FromAnywhere {
			t := index[r.To]
			if t == i || m.edges[i][t].ok {
				continue
			}
			m.edges[i][t] = edge{ok: true, anywhere: true, humansOnly: r.HumansOnly || st.HumansOnly || humansPair[[2]string{st.Name, r.To}]}
		}
	}
	for _, st := range m.states {
		if slices.Contains(s.Initial, st) {
			m.initial = append(m.initial, st)
			m.isInit[st] = true
		}
	}
	for _, c := range s.Commands {
		cm := command{name: c.Name, description: c.Description, inputs: slices.Clone(c.Inputs), outputs: slices.Clone(c.Outputs), lock: c.Lock}
		if c.Lock != "" {
			cm.direct = append(cm.direct, c.Lock)
		}
		for _, o := range c.Outputs {
			if !slices.Contains(cm.direct, o) {
				cm.direct = append(cm.direct, o)
			}
		}
		m.cmdIndex[c.Name] = len(m.commands)
		m.commands = append(m.commands, cm)
	}
	for _, it := range s.Intents {
		in := intent{name: it.Name, description: it.Description, targets: map[string]string{}, ambiguous: map[string]bool{}}
		for k, st := range it.Targets {
			if k == "*" {
				in.targets[k] = st
			} else {
				in.targets[normCommand(k)] = st
			}
		}
		for _, a := range it.Ambiguous {
			in.ambiguous[normCommand(a)] = true
		}
		m.intIndex[it.Name] = len(m.intents)
		m.intents = append(m.intents, in)
	}
	// The convergence gate follows the plan command when there is one (docs/ENFORCEMENT.md).
	m.convLock = "Plan in Progress"
	if l := m.CommandLock("plan"); l != "" {
		m.convLock = l
	}
	if i, ok := m.cmdIndex["plan"]; ok {
		for _, in := range m.commands[i].inputs {
			if m.PipelineIndex(in) >= 0 {
				m.convReady = in
				break
			}
		}
	}
	if m.convReady == "" && m.PipelineIndex("Ready for Plan") >= 0 {
		m.convReady = "Ready for Plan"
	}
	return m
}

// cloneSpec deep-copies a spec so callers can never mutate a compiled machine.
func cloneSpec(s Spec) Spec {
	c := s
	c.States = cloneSlice(s.States, func(st StateSpec) StateSpec { st.Next = slices.Clone(st.Next); return st })
	c.FromAnywhere = slices.Clone(s.FromAnywhere)
	c.HumansOnly = slices.Clone(s.HumansOnly)
	c.Initial = slices.Clone(s.Initial)
	c.Pipeline = slices.Clone(s.Pipeline)
	c.ParentGates = slices.Clone(s.ParentGates)
	c.Intents = cloneSlice(s.Intents, func(it IntentSpec) IntentSpec {
		it.Targets = maps.Clone(it.Targets)
		it.Ambiguous = slices.Clone(it.Ambiguous)
		return it
	})
	c.Commands = cloneSlice(s.Commands, func(cm CommandSpec) CommandSpec {
		cm.Inputs = slices.Clone(cm.Inputs)
		cm.Outputs = slices.Clone(cm.Outputs)
		return cm
	})
	c.Gates.WIPLimits = maps.Clone(s.Gates.WIPLimits)
	c.Requirements = cloneSlice(s.Requirements, func(r Requirement) Requirement {
		r.Into, r.Fields, r.For = slices.Clone(r.Into), slices.Clone(r.Fields), slices.Clone(r.For)
		return r
	})
	return c
}

// cloneSlice keeps nil as nil and empty as empty (DefaultSpec equality depends on it).
func cloneSlice[T any](in []T, f func(T) T) []T {
	if in == nil {
		return nil
	}
	out := make([]T, len(in))
	for i, x := range in {
		out[i] = f(x)
	}
	return out
}
