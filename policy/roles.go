package policy

import (
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
)

// Review modes settle who takes a plan out of review (workflow.review_mode).
const (
	// ReviewSkip: builders move on without review (the default).
	ReviewSkip = "skip"
	// ReviewAuto: a builder reviews its own plan, then moves on.
	ReviewAuto = "auto"
	// ReviewInteractive: only a reviewing role (a validator) or a person takes a plan out of review.
	ReviewInteractive = "interactive"
)

// SerializeRepository: at most one item per repository is being integrated at a time.
const SerializeRepository = "repository"

// RoleSpec is one worker role as written under actors.roles in config.yml.
type RoleSpec struct {
	// Agents are the logins or glob patterns of the role's agents (board actors and MCP agent
	// names alike), matched as actors.agents are.
	Agents []string `yaml:"agents" json:"agents"`
	// Owns are the states the role's agents may move an item out of.
	Owns []string `yaml:"owns" json:"owns"`
	// Commands the role's agents run. Empty: every command whose inputs the role owns.
	Commands []string `yaml:"commands" json:"commands,omitempty"`
	// Serialize "repository": one item per repository at a time in the owned states.
	Serialize string `yaml:"serialize" json:"serialize,omitempty"`
}

// Roles is the compiled state ownership map. The nil *Roles means no roles are configured:
// every agent keeps the agent rules alone (docs/ENFORCEMENT.md).
type Roles struct {
	names    []string // sorted
	specs    map[string]RoleSpec
	commands map[string][]string // role -> commands (declared or derived)
	owners   map[string][]string // state -> roles whose agents may move an item out of it
	review   map[string]bool     // the states the review command works on
	mode     string
}

// CompileRoles validates the roles against the machine and builds the ownership map. Problems
// name their key paths (actors.roles.NAME.owns[i], workflow.review_mode). No roles and a mode
// other than interactive give a nil *Roles: today's rules, unchanged.
func CompileRoles(m *Machine, specs map[string]RoleSpec) (*Roles, []Problem) {
	mode := m.ReviewMode()
	if len(specs) == 0 {
		if mode == ReviewInteractive {
			return nil, []Problem{{Path: "workflow.review_mode", Message: "interactive needs a reviewing role under actors.roles (a role, such as validator, that owns only the states the review command works on)"}}
		}
		return nil, nil
	}
	r := &Roles{specs: map[string]RoleSpec{}, commands: map[string][]string{}, owners: map[string][]string{}, review: map[string]bool{}, mode: mode}
	if i, ok := m.cmdIndex[normCommand("review")]; ok {
		for _, s := range m.commands[i].inputs {
			r.review[s] = true
		}
	}
	for name := range specs {
		r.names = append(r.names, name)
	}
	sort.Strings(r.names)
	rc := roleChecker{m: m, seen: map[string]string{}, suggest: suggester{m: m, nearest: map[string]string{}}}
	for _, name := range r.names {
		rc.check(name, specs[name])
		r.specs[name] = specs[name]
	}
	if len(rc.ps) > 0 {
		return nil, rc.ps
	}
	for _, name := range r.names {
		r.commands[name] = r.deriveCommands(m, name)
		owned := map[string]bool{}
		for _, s := range r.specs[name].Owns {
			if !owned[s] { // a state the role lists twice
				owned[s] = true
				r.owners[s] = append(r.owners[s], name)
			}
		}
	}
	if mode == ReviewInteractive {
		if ps := r.keepReviewers(); len(ps) > 0 {
			return nil, ps
		}
	}
	return r, nil
}

// roleChecker checks the roles one after another: an agent belongs to one role (seen: each
// lower-cased pattern's role so far); problems gathered in ps.
type roleChecker struct {
	m        *Machine
	seen     map[string]string
	suggest  suggester
	commands string // the workflow's commands, listed when a role names another
	ps       []Problem
}

func (rc *roleChecker) add(p, format string, args ...any) {
	rc.ps = append(rc.ps, Problem{Path: p, Message: fmt.Sprintf(format, args...)})
}

// check checks one role's name, agents, owned states, commands and serialization.
func (rc *roleChecker) check(name string, spec RoleSpec) {
	base := "actors.roles." + name
	if strings.TrimSpace(name) == "" || strings.ContainsAny(name, " \t") {
		rc.add(base, "a role name is one word, such as builder")
	}
	if len(spec.Agents) == 0 {
		rc.add(base+".agents", "lists no agent: give the logins or patterns of the role's agents, such as [\"builder-*\"]")
	}
	for i, p := range spec.Agents {
		switch key := strings.ToLower(strings.TrimSpace(p)); {
		case key == "":
			rc.add(fmt.Sprintf("%s.agents[%d]", base, i), "must not be empty")
		case rc.seen[key] != "":
			rc.add(fmt.Sprintf("%s.agents[%d]", base, i), "%q is also an agent of the %s role: an agent has one role", p, rc.seen[key])
		default:
			if _, err := path.Match(globPattern(key), ""); err != nil {
				rc.add(fmt.Sprintf("%s.agents[%d]", base, i), "invalid pattern %q: %v", p, err)
			}
			rc.seen[key] = name
		}
	}
	for i, s := range spec.Owns {
		if !rc.m.IsState(s) {
			rc.add(fmt.Sprintf("%s.owns[%d]", base, i), "unknown state %q%s", s, rc.suggest.state(s))
		}
	}
	for i, c := range spec.Commands {
		if _, ok := rc.m.cmdIndex[normCommand(c)]; !ok {
			if rc.commands == "" {
				rc.commands = strings.Join(rc.m.Commands(), ", ")
			}
			rc.add(fmt.Sprintf("%s.commands[%d]", base, i), "unknown command %q (commands: %s)", c, rc.commands)
		}
	}
	if spec.Serialize != "" && spec.Serialize != SerializeRepository {
		rc.add(base+".serialize", "must be %q or empty, got %q", SerializeRepository, spec.Serialize)
	}
}

// keepReviewers leaves, in interactive review mode, only the reviewing roles as owners of the
// review states; a problem when there is no review command or no reviewing role.
func (r *Roles) keepReviewers() []Problem {
	if len(r.review) == 0 {
		return []Problem{{Path: "workflow.review_mode", Message: "interactive needs a review command (workflow.commands) whose inputs are the review states"}}
	}
	reviewers := 0
	for s := range r.review {
		var keep []string
		for _, name := range r.owners[s] {
			if r.reviewing(name) {
				keep = append(keep, name)
			}
		}
		reviewers += len(keep)
		r.owners[s] = keep
	}
	if reviewers == 0 {
		return []Problem{{Path: "workflow.review_mode", Message: "interactive needs a reviewing role under actors.roles (a role, such as validator, that owns only the states the review command works on)"}}
	}
	return nil
}

// reviewing: the role owns only review states (the validator of the ownership map).
func (r *Roles) reviewing(name string) bool {
	owns := r.specs[name].Owns
	if len(owns) == 0 {
		return false
	}
	for _, s := range owns {
		if !r.review[s] {
			return false
		}
	}
	return true
}

func (r *Roles) deriveCommands(m *Machine, name string) []string {
	spec := r.specs[name]
	if len(spec.Commands) > 0 {
		out := make([]string, len(spec.Commands))
		for i, c := range spec.Commands {
			out[i] = m.commands[m.cmdIndex[normCommand(c)]].name
		}
		return out
	}
	owns := map[string]bool{}
	for _, s := range spec.Owns {
		owns[s] = true
	}
	out := []string{}
	for _, c := range m.commands {
		if len(c.inputs) == 0 {
			continue
		}
		all := true
		for _, in := range c.inputs {
			all = all && owns[in]
		}
		if all {
			out = append(out, c.name)
		}
	}
	return out
}

// Names returns the role names, sorted.
func (r *Roles) Names() []string {
	if r == nil {
		return nil
	}
	return slices.Clone(r.names)
}

// Of returns the role of a login or MCP agent name ("" when it matches none). Patterns are
// matched as actors.agents are: case-insensitive, brackets literal.
func (r *Roles) Of(login string) string {
	if r == nil || login == "" {
		return ""
	}
	lower := strings.ToLower(login)
	for _, name := range r.names {
		for _, p := range r.specs[name].Agents {
			if ok, err := path.Match(globPattern(strings.ToLower(p)), lower); err == nil && ok {
				return name
			}
		}
	}
	return ""
}

// Has reports whether a role of this name is configured.
func (r *Roles) Has(name string) bool {
	if r == nil {
		return false
	}
	_, ok := r.specs[name]
	return ok
}

// Owns returns the states the role declares it owns.
func (r *Roles) Owns(role string) []string {
	if r == nil {
		return nil
	}
	return slices.Clone(r.specs[role].Owns)
}

// Owners returns the roles whose agents may move an item out of state, review mode applied.
func (r *Roles) Owners(state string) []string {
	if r == nil {
		return nil
	}
	return slices.Clone(r.owners[state])
}

// Commands returns the commands the role's agents run.
func (r *Roles) Commands(role string) []string {
	if r == nil {
		return nil
	}
	return slices.Clone(r.commands[role])
}

// Agents returns the logins or patterns of the role's agents.
func (r *Roles) Agents(role string) []string {
	if r == nil {
		return nil
	}
	return slices.Clone(r.specs[role].Agents)
}

// Serialize is the role's serialize setting ("" or "repository").
func (r *Roles) Serialize(role string) string {
	if r == nil {
		return ""
	}
	return r.specs[role].Serialize
}

// Serialized reports whether the role works one item per repository at a time.
func (r *Roles) Serialized(role string) bool {
	return r != nil && r.specs[role].Serialize == SerializeRepository
}

// mayLeave: an agent of role may move an item out of from (an item with no state: into to).
func (r *Roles) mayLeave(role, from, to string) bool {
	if from == "" {
		from = to
	}
	return slices.Contains(r.owners[from], role)
}

// Unowned lists the states no role may move an item out of, besides the terminal and
// escalation states (which people own): doctor warns about them.
func (r *Roles) Unowned(m *Machine) []string {
	if r == nil {
		return nil
	}
	out := []string{}
	for _, s := range m.states {
		if len(r.owners[s]) == 0 && !m.IsTerminal(s) && !m.isEscalated(s) {
			out = append(out, s)
		}
	}
	return out
}

// Idle lists the roles that own no state: doctor warns about them.
func (r *Roles) Idle() []string {
	if r == nil {
		return nil
	}
	out := []string{}
	for _, name := range r.names {
		if len(r.specs[name].Owns) == 0 {
			out = append(out, name)
		}
	}
	return out
}

// ownedBy says who owns a state, for a refusal: "the analyst role owns it".
func (r *Roles) ownedBy(state string) string {
	owners := r.owners[state]
	switch len(owners) {
	case 0:
		return "no agent role owns it; a person moves it"
	case 1:
		return "the " + owners[0] + " role owns it"
	}
	return "the " + joinAnd(owners) + " roles own it"
}

// maxSuggestions bounds the misspelt states one compilation looks up a suggestion for:
// looking one up costs the length of every state, and a file may misspell thousands.
const maxSuggestions = 100

// suggester suggests the states nearest to misspelt ones, each name looked up once, the first
// maxSuggestions names only.
type suggester struct {
	m       *Machine
	nearest map[string]string // a name → its suggestion
}

// state is ` (did you mean "X"?)` for the state nearest to a misspelt one, or "".
func (g *suggester) state(s string) string {
	if near, ok := g.nearest[s]; ok || len(g.nearest) == maxSuggestions {
		return near
	}
	near := suggestState(g.m, s)
	g.nearest[s] = near
	return near
}

// suggestState is ` (did you mean "X"?)` for the state nearest to a misspelt one, or "".
func suggestState(m *Machine, s string) string {
	lower := strings.ToLower(s)
	best, bestD := "", len(s)/2+2
	for _, c := range m.states {
		lc := strings.ToLower(c)
		if abs(len(lower)-len(lc)) >= bestD {
			continue // the distance is at least the difference of the lengths
		}
		if d := editDistance(lower, lc); d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// WithRoles returns a copy of the machine that enforces the roles (nil: none).
func (m *Machine) WithRoles(r *Roles) *Machine {
	c := *m
	c.roles = r
	return &c
}

// Roles returns the state ownership map the machine enforces (nil when none).
func (m *Machine) Roles() *Roles { return m.roles }

// RoleOf is the worker role a change's actor acts in ("" for none, and for people).
func (m *Machine) RoleOf(c Change) string { return m.roleOf(c) }

// SerializedFrom reports whether a move out of from by an agent of role starts an integration
// that must wait for the repository's current one: the role serializes its work and owns from.
func (m *Machine) SerializedFrom(role, from string) bool {
	return m.roles.Serialized(role) && from != "" && slices.Contains(m.roles.owners[from], role)
}

// roleOf is the role a change's actor acts in: the one it declares (an MCP agent's role:),
// else the one its login matches. People, bypass actors and the app have none.
func (m *Machine) roleOf(c Change) string {
	if !c.ActorKind.restricted() || m.roles == nil {
		return ""
	}
	if c.Role != "" {
		return c.Role
	}
	return m.roles.Of(c.Actor)
}

// checkRole applies the ownership rule to an agent's otherwise legal move: an agent with a
// role may move an item only out of a state its role owns (an item with no state: into one),
// except to escalate. It returns the refusal's reason, "" when the move may go on.
func (m *Machine) checkRole(c Change, from, role string) string {
	if role == "" || m.isEscalated(c.To) || m.roles.mayLeave(role, from, c.To) {
		return ""
	}
	who := c.Actor
	if who == "" {
		who = "an agent"
	}
	state, what := from, "out of "+from
	if from == "" {
		state, what = c.To, "into "+c.To
	}
	if m.roles.mode == ReviewInteractive && m.roles.review[state] && slices.Contains(m.roles.specs[role].Owns, state) {
		return fmt.Sprintf("%s (%s) may not move an item %s: in interactive review mode %s", who, role, what, m.roles.ownedBy(state))
	}
	return fmt.Sprintf("%s (%s) may not move an item %s: %s", who, role, what, m.roles.ownedBy(state))
}

// roleRecovery says what an agent refused by the ownership rule does instead.
func (m *Machine) roleRecovery(state string) string {
	esc := m.escalations()
	tail := ""
	if len(esc) > 0 {
		tail = ", or escalate to " + joinOr(esc)
	}
	return m.roleLeave(state) + tail
}

// roleLeave says who may move an item out of state (into it, for an item with no state)
// instead of an agent whose role does not own it.
func (m *Machine) roleLeave(state string) string {
	owners := m.roles.owners[state]
	if len(owners) == 0 {
		return "leave it to a person"
	}
	return "leave it to an agent of the " + joinOr(owners) + " role"
}

// escalations are the states any agent may escalate to from anywhere (Human Needed).
func (m *Machine) escalations() []string {
	out := []string{}
	for _, r := range m.spec.FromAnywhere {
		if !r.HumansOnly && m.isEscalated(r.To) && !slices.Contains(out, r.To) {
			out = append(out, r.To)
		}
	}
	return out
}

// allowedForRole narrows the moves open to an agent of role: only escalation out of a state
// its role does not own.
func (m *Machine) allowedForRole(from string, allowed []string, role string) []string {
	out := []string{}
	for _, to := range allowed {
		if m.isEscalated(to) || m.roles.mayLeave(role, from, to) {
			out = append(out, to)
		}
	}
	return out
}

// CheckRole is Check for an agent acting in a worker role: the table, then the ownership rule
// (`ralph-gate policy check --role`). The role must be configured.
func (m *Machine) CheckRole(from, to, role string) CheckResult {
	res := m.Check(from, to, ActorAgent)
	if !m.roles.Has(role) {
		return res
	}
	if m.IsState(from) || from == "" {
		res.AllowedTransitions = m.allowedForRole(from, res.AllowedTransitions, role)
	}
	if res.Allowed {
		if reason := m.checkRole(Change{From: from, To: to, ActorKind: ActorAgent}, from, role); reason != "" {
			res.Allowed, res.Reason = false, reason
		}
	}
	return res
}
