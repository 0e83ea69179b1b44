package policy

import (
	"fmt"
	"slices"
	"strings"
)

// Rule names the step of docs/ENFORCEMENT.md that decided a change.
type Rule string

const (
	RuleUnknownState  Rule = "unknown_state"
	RuleNotInitial    Rule = "not_initial"
	RuleTransition    Rule = "transition"
	RuleHumansOnly    Rule = "humans_only"
	RuleLockOwnership Rule = "lock_ownership"
	RuleBlockers      Rule = "blockers"
	RuleConvergence   Rule = "convergence"
	RuleWIP           Rule = "wip_limit"
	RuleBypass        Rule = "bypass"
	// RuleRole: an agent with a worker role moved an item out of a state its role does not own.
	RuleRole Rule = "role"
	// RuleSerialized: an agent of a serializing role (integrator) worked on a second item of a
	// repository while another is being integrated.
	RuleSerialized Rule = "serialized"
	RuleLegal      Rule = "legal"
	// RuleApp: the change was made by ralph-gate itself and is never checked (docs/ENFORCEMENT.md, step 1).
	RuleApp Rule = "app"
)

func (r Rule) String() string { return string(r) }

// Settled reports whether a refusal by r depends on nothing but the step itself (its states,
// its actor's kind and role) and the lock holder of the item's judged history: no other
// item's history and nothing read from GitHub. A change nobody has reported yet can alter
// such a refusal only by changing the item's own history before the step — a round trip
// (X → … → X) the app has not seen — which the report's own `from` cannot show.
func (r Rule) Settled() bool {
	switch r {
	case RuleUnknownState, RuleNotInitial, RuleTransition, RuleHumansOnly, RuleRole, RuleLockOwnership:
		return true
	}
	return false
}

// Member is an issue as other decisions see it (group members, blockers, children).
type Member struct {
	Number int    `json:"number"`
	Title  string `json:"title"`
	State  string `json:"state"`
	// Fields and MergedPR are what workflow.requirements check (set only when some are
	// configured): the automation moves no member into a state whose requirement it fails.
	Fields   map[string]string `json:"fields,omitempty"`
	MergedPR bool              `json:"merged_pr,omitempty"`
}

// String reads `#3 "Title" is in Backlog`, `#3 has no state`, or, for a State that is the
// issue's open/closed status rather than a Workflow State (an issue off the project),
// `#3 "Title" is open`.
func (mb Member) String() string {
	s := mb.name()
	switch {
	case mb.State == "":
		return s + " has no state"
	case isStatus(mb.State):
		return s + " is " + strings.ToLower(mb.State)
	}
	return s + " is in " + mb.State
}

// name is `#3 "Title"`, or `#3` without a title.
func (mb Member) name() string {
	s := fmt.Sprintf("#%d", mb.Number)
	if mb.Title != "" {
		s += fmt.Sprintf(" %q", mb.Title)
	}
	return s
}

// isStatus: state is an issue's open/closed status, which callers give for an issue with no
// Workflow State of its own (a blocker off the project).
func isStatus(state string) bool {
	return strings.EqualFold(state, "open") || strings.EqualFold(state, "closed")
}

// blockerText reads an open blocker: `#3 "Blocker" is open, in Backlog`, or `#3 "Blocker" is
// open` when it has no Workflow State (off the project), or `#3 is open, with no state`.
func blockerText(mb Member) string {
	s := mb.name() + " is open"
	switch {
	case mb.State == "":
		return s + ", with no state"
	case isStatus(mb.State):
		return s
	}
	return s + ", in " + mb.State
}

// Change is one observed change of the workflow field with everything the gates need.
type Change struct {
	From       string    `json:"from"` // last legal state; "" = unset
	To         string    `json:"to"`
	Actor      string    `json:"actor"`
	ActorKind  ActorKind `json:"actor_kind"`
	LockHolder string    `json:"lock_holder,omitempty"` // holder of From when it is a lock; "" = unknown
	// LockTakenFrom is whom LockHolder took the lock over from, after it expired ("" none):
	// a move of that agent's is refused saying so.
	LockTakenFrom string `json:"lock_taken_from,omitempty"`
	// OpenBlockers are the open native blockedBy issues.
	OpenBlockers []Member `json:"open_blockers,omitempty"`
	// Group are the other members of the group, excluding this issue.
	Group []Member `json:"group,omitempty"`
	// WIPCount is the number of items already in To, excluding this one.
	WIPCount int `json:"wip_count"`
	// Role is the worker role an agent acts in when it declares one (an MCP agent's role:);
	// empty: the role its login matches under actors.roles, if any.
	Role string `json:"role,omitempty"`
	// Integrating is another item of the same repository being integrated, when the actor's
	// role serializes its work per repository (integrator); nil: none.
	Integrating *Integration `json:"integrating,omitempty"`
	// Number is the number, for the texts ("merge a pull request that closes #3").
	Number int `json:"number,omitempty"`
	// Fields are the item's values of the fields a requirement names, by field name ("" or
	// absent: no value), and FieldOptions their options when they are single-select fields
	// (for the Recovery).
	Fields       map[string]string   `json:"fields,omitempty"`
	FieldOptions map[string][]string `json:"field_options,omitempty"`
	// MergedPR: a merged pull request closes the issue (the move may be that merge's own).
	MergedPR bool `json:"merged_pr,omitempty"`
}

// Integration is an item being integrated: a serializing role's agent holds its repository.
type Integration struct {
	Repo   string `json:"repo"`
	Number int    `json:"number"`
	Holder string `json:"holder"`
}

// Decision is the verdict on a Change.
type Decision struct {
	Verdict Verdict `json:"verdict"`
	Rule    Rule    `json:"rule"`
	Reason  string  `json:"reason"`
	// Allowed are the states this actor may move to from From (what to do instead).
	Allowed  []string `json:"allowed"`
	RevertTo string   `json:"revert_to"`
	// Blocking are the issues that made a gate fail (blockers, convergence).
	Blocking []Member `json:"blocking"`
	// TakesLock: To is a lock state, the caller records the holder.
	TakesLock bool `json:"takes_lock"`
	// ReleasesLock: From is a lock state that the item left, the caller clears the holder.
	ReleasesLock bool `json:"releases_lock"`
}

// Decide applies the steps 2–6 of docs/ENFORCEMENT.md to an observed change. A From that is not a state of the
// machine (e.g. the config changed since it was recorded) is treated as unset. A change to the
// same value is no change and is allowed without touching locks.
func (m *Machine) Decide(c Change) Decision {
	from := c.From
	if !m.IsState(from) {
		from = ""
	}
	d := Decision{Rule: RuleLegal, RevertTo: c.From, Allowed: m.AllowedNext(from, c.ActorKind), Blocking: []Member{}}
	who := c.Actor
	if who == "" {
		who = "(unknown actor)"
	}
	switch c.ActorKind {
	case ActorApp:
		return m.allow(d, from, c.To, RuleApp, "changes made by ralph-gate itself are not checked")
	case ActorBypass:
		return m.allow(d, from, c.To, RuleBypass, fmt.Sprintf("%s is a bypass actor: %s → %s is allowed without checks (audited)", who, displayFrom(c.From), c.To))
	}
	if from != "" && from == c.To {
		d.Reason = c.To + " is unchanged"
		return d
	}
	ok, reason, rule := m.checkMove(from, c.To, c.ActorKind)
	if !ok {
		return revert(d, rule, reason)
	}
	var refused bool
	if d, refused = m.refusedByRole(d, c, from); refused {
		return d
	}
	if d, refused = m.refusedByGate(d, c, from, who); refused {
		return d
	}
	return m.allow(d, from, c.To, RuleLegal, reason)
}

// refusedByRole checks the actor's role: the moves it may make, and the serialized role's
// one integration per repository.
func (m *Machine) refusedByRole(d Decision, c Change, from string) (Decision, bool) {
	if role := m.roleOf(c); role != "" {
		if d.Allowed = m.allowedForRole(from, d.Allowed, role); m.checkRole(c, from, role) != "" {
			return revert(d, RuleRole, m.checkRole(c, from, role)), true
		}
		if in := c.Integrating; in != nil && m.roles.Serialized(role) && !m.isEscalated(c.To) && m.roles.mayLeave(role, from, c.To) {
			return revert(d, RuleSerialized, fmt.Sprintf("%s#%d is being integrated by %s: the %s role integrates one item per repository at a time",
				in.Repo, in.Number, in.Holder, role)), true
		}
	}
	return d, false
}

// refusedByGate checks the gates in their order: lock ownership, blockers, convergence, WIP
// limits, requirements.
func (m *Machine) refusedByGate(d Decision, c Change, from, who string) (Decision, bool) {
	g := m.spec.Gates
	if g.LockOwnership && m.IsLock(from) && c.LockHolder != "" && !strings.EqualFold(c.LockHolder, c.Actor) && c.ActorKind.restricted() {
		if c.LockTakenFrom != "" && strings.EqualFold(c.LockTakenFrom, c.Actor) {
			return revert(d, RuleLockOwnership, takenOverText(from, c.LockHolder, c.Actor)), true
		}
		return revert(d, RuleLockOwnership, fmt.Sprintf("%s is locked by %s; only the holder or a human may move it, not %s", from, c.LockHolder, who)), true
	}
	if g.Blockers && m.IsLock(c.To) && len(c.OpenBlockers) > 0 {
		d.Blocking = append(d.Blocking, c.OpenBlockers...)
		texts := make([]string, len(c.OpenBlockers))
		for i, mb := range c.OpenBlockers {
			texts[i] = blockerText(mb)
		}
		return revert(d, RuleBlockers, fmt.Sprintf("%s cannot be entered while the issue has open blockers: %s", c.To, joinAnd(texts))), true
	}
	if g.Convergence && c.To == m.convLock && m.convReady != "" {
		if blocking := m.notReady(c.Group, m.convReady); len(blocking) > 0 {
			d.Blocking = blocking
			return revert(d, RuleConvergence, fmt.Sprintf("%s needs the whole group at %s or later: %s", c.To, m.convReady, joinAnd(memberTexts(blocking)))), true
		}
	}
	if limit, ok := g.WIPLimits[c.To]; ok && c.WIPCount >= limit {
		return revert(d, RuleWIP, fmt.Sprintf("%s is at its WIP limit (%d of %d items)", c.To, c.WIPCount, limit)), true
	}
	if fields, pr := m.unmet(c); len(fields) > 0 || pr {
		return revert(d, RuleRequirement, requirementReason(c.To, fields, pr)), true
	}
	return d, false
}

func (m *Machine) allow(d Decision, from, to string, rule Rule, reason string) Decision {
	d.Verdict, d.Rule, d.Reason = Allow, rule, reason
	if from != to {
		d.TakesLock = m.IsLock(to)
		d.ReleasesLock = m.IsLock(from)
	}
	return d
}

func revert(d Decision, rule Rule, reason string) Decision {
	d.Verdict, d.Rule, d.Reason = Revert, rule, reason
	return d
}

// notReady lists the members that are not Canceled and not at ready or later on the pipeline
// (an escalated, unset or unknown state is not ready).
func (m *Machine) notReady(members []Member, ready string) []Member {
	r := m.PipelineIndex(ready)
	var out []Member
	for _, mb := range members {
		if m.isCanceledLike(mb.State) {
			continue
		}
		if i := m.PipelineIndex(mb.State); i < 0 || i < r {
			out = append(out, mb)
		}
	}
	return out
}

func memberTexts(ms []Member) []string {
	out := make([]string, len(ms))
	for i, mb := range ms {
		out[i] = mb.String()
	}
	return out
}

// RefusalFor renders a revert as the three-part error described in the README (The workflow) (for comments and MCP
// handoffs): what was tried, why it fails, and exactly what to do instead. nil when allowed.
func (m *Machine) RefusalFor(c Change, d Decision) *Refusal {
	if d.Verdict != Revert {
		return nil
	}
	who := c.Actor
	if who == "" {
		who = "someone"
	}
	r := &Refusal{Tried: fmt.Sprintf("%s moved the item from %s to %s", who, displayFrom(c.From), quoteState(c.To)), Why: d.Reason, Rule: d.Rule}
	nums := func(ms []Member) []string {
		out := make([]string, len(ms))
		for i, mb := range ms {
			out[i] = fmt.Sprintf("#%d", mb.Number)
		}
		return out
	}
	switch d.Rule {
	case RuleLockOwnership:
		r.Recovery = fmt.Sprintf("ask %s to hand the item off, or ask a human to move it", c.LockHolder)
		if c.LockTakenFrom != "" && strings.EqualFold(c.LockTakenFrom, c.Actor) {
			r.Recovery = fmt.Sprintf("leave #%d to %s and pick other work (pick_actionable_issue)", c.Number, c.LockHolder)
			if c.Number == 0 {
				r.Recovery = fmt.Sprintf("leave the item to %s and pick other work (pick_actionable_issue)", c.LockHolder)
			}
		}
		r.Options = []string{c.LockHolder}
	case RuleBlockers:
		r.Options = nums(d.Blocking)
		r.Recovery = fmt.Sprintf("finish or unlink the blockers %s, then retry %s", joinAnd(r.Options), c.To)
	case RuleConvergence:
		r.Options = nums(d.Blocking)
		verb := "reaches"
		if len(r.Options) > 1 {
			verb = "reach"
		}
		r.Recovery = fmt.Sprintf("wait until %s %s %s or later (escalated issues need a human), then retry %s", joinAnd(r.Options), verb, m.convReady, c.To)
	case RuleWIP:
		r.Recovery = fmt.Sprintf("finish or move an item out of %s, then retry", c.To)
		r.Options = []string{c.To}
	case RuleSerialized:
		r.Recovery = fmt.Sprintf("wait until #%d is integrated (it leaves %s), then retry; or escalate to %s", c.Integrating.Number,
			displayFrom(c.From), joinOr(m.escalations()))
		r.Options = []string{}
	case RuleRequirement:
		fields, pr := m.unmet(c)
		r.Recovery, r.Options = requirementRecovery(c, fields, pr)
	case RuleRole:
		state := c.From
		if !m.IsState(state) {
			state = c.To
		}
		r.Recovery = m.roleRecovery(state)
		r.Options = slices.Clone(d.Allowed)
	default:
		r.Options = slices.Clone(d.Allowed)
		if len(d.Allowed) == 0 {
			r.Recovery = fmt.Sprintf("no move out of %s is open to %s; ask a human", displayFrom(c.From), c.ActorKind)
		} else {
			r.Recovery = "move it to " + joinOr(quotedStates(d.Allowed)) + " instead"
		}
	}
	return r
}

func quotedStates(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = quoteState(s)
	}
	return out
}
