package policy

import (
	"fmt"
	"slices"
	"strings"
)

// Requirement is a condition on entering states (workflow.requirements, docs/ENFORCEMENT.md
// "Requirements"): project fields that must have a value, a merged pull request that closes
// the issue, or both. It binds the actor kinds For names: agents unless it says otherwise.
type Requirement struct {
	// Into are the states the requirement guards: a move into any of them must meet it.
	Into []string `yaml:"into" json:"into"`
	// Fields are project fields that must have a value on the item.
	Fields []string `yaml:"fields" json:"fields,omitempty"`
	// PullRequest "merged": a merged pull request must close the issue.
	PullRequest string `yaml:"pull_request" json:"pull_request,omitempty"`
	// For are the actor kinds bound: agent, human; empty means agent.
	For []string `yaml:"for" json:"for,omitempty"`
}

// MaxRequiredFields is how many distinct fields the requirements may name in all: an item is
// read with each of their values by name, in that many places of the one request.
const MaxRequiredFields = 4

// PullRequestMerged is the one value of Requirement.PullRequest.
const PullRequestMerged = "merged"

// RuleRequirement: the move entered a state whose requirement the item does not meet.
const RuleRequirement Rule = "requirement"

// binds reports whether the requirement applies to a move by this kind of actor.
func (r Requirement) binds(k ActorKind) bool {
	if len(r.For) == 0 {
		return k == ActorAgent
	}
	for _, f := range r.For {
		if (f == "agent" && k == ActorAgent) || (f == "human" && k == ActorHuman) {
			return true
		}
	}
	return false
}

// Requirements returns the requirements guarding entry into state (in configuration order).
func (m *Machine) Requirements(state string) []Requirement {
	var out []Requirement
	for _, r := range m.spec.Requirements {
		if slices.Contains(r.Into, state) {
			out = append(out, r)
		}
	}
	return out
}

// HasRequirements reports whether any requirement is configured.
func (m *Machine) HasRequirements() bool { return len(m.spec.Requirements) > 0 }

// RequiredFields are the project fields any requirement names, sorted, without repeats: what
// enforcement reads with an item when requirements are configured.
func (m *Machine) RequiredFields() []string {
	var out []string
	for _, r := range m.spec.Requirements {
		out = append(out, r.Fields...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// NeedsMergedPR reports whether some requirement asks a merged pull request: enforcement then
// reads the pull requests that close an issue with it.
func (m *Machine) NeedsMergedPR() bool {
	return slices.ContainsFunc(m.spec.Requirements, func(r Requirement) bool { return r.PullRequest == PullRequestMerged })
}

// unmet lists what the change lacks to enter c.To: the fields without a value, and whether a
// merged pull request is missing. Empty when every requirement binding this actor is met.
func (m *Machine) unmet(c Change) (fields []string, pr bool) {
	return m.lacks(c.To, c.Fields, c.MergedPR, func(r Requirement) bool { return r.binds(c.ActorKind) })
}

func (m *Machine) lacks(state string, values map[string]string, mergedPR bool, binds func(Requirement) bool) (fields []string, pr bool) {
	for _, r := range m.Requirements(state) {
		if !binds(r) {
			continue
		}
		for _, f := range r.Fields {
			if strings.TrimSpace(values[f]) == "" && !slices.Contains(fields, f) {
				fields = append(fields, f)
			}
		}
		if r.PullRequest == PullRequestMerged && !mergedPR {
			pr = true
		}
	}
	return fields, pr
}

// WithRequirements completes a table check (Check, CheckRole) with the requirements of to that
// bind actor: an allowed move that fails one is not allowed, with what the item lacks, given
// its field values and whether a merged pull request closes it.
func (m *Machine) WithRequirements(res CheckResult, to string, actor ActorKind, fields map[string]string, mergedPR bool) CheckResult {
	if res.Allowed {
		if why := m.Lacks(to, Member{Fields: fields, MergedPR: mergedPR}, actor); why != "" {
			res.Allowed, res.Reason = false, why
		}
	}
	return res
}

// Lacks says what mb lacks, of the requirements of state that bind an actor of kind, to enter
// it: "Ready for Plan requires Estimate to have a value". "" when nothing.
func (m *Machine) Lacks(state string, mb Member, kind ActorKind) string {
	return m.lacksText(state, mb, func(r Requirement) bool { return r.binds(kind) })
}

// Unmet says why an item cannot be moved into state by the app's automation (a cascade, a
// convergence): the requirements of state it fails, whoever they bind — the app's own moves
// are bound by every requirement. "" when it meets them all.
func (m *Machine) Unmet(state string, mb Member) string {
	return m.lacksText(state, mb, func(Requirement) bool { return true })
}

func (m *Machine) lacksText(state string, mb Member, binds func(Requirement) bool) string {
	fields, pr := m.lacks(state, mb.Fields, mb.MergedPR, binds)
	if len(fields) == 0 && !pr {
		return ""
	}
	return requirementReason(state, fields, pr)
}

// requirementReason says what the item lacks to enter to.
func requirementReason(to string, fields []string, pr bool) string {
	var lacks []string
	if len(fields) > 0 {
		word := "a value"
		if len(fields) > 1 {
			word = "values"
		}
		lacks = append(lacks, joinAnd(fields)+" to have "+word)
	}
	if pr {
		lacks = append(lacks, "a merged pull request that closes the issue")
	}
	return fmt.Sprintf("%s requires %s", to, joinAnd(lacks))
}

// requirementRecovery is what to do: set each field (with its options when known), merge a
// pull request that closes the issue, then retry.
func requirementRecovery(c Change, fields []string, pr bool) (string, []string) {
	steps, options := []string{}, []string{}
	for _, f := range fields {
		s := "set " + f
		if opts := c.FieldOptions[f]; len(opts) > 0 {
			s += " (" + strings.Join(opts, ", ") + ")"
		}
		steps = append(steps, s)
		options = append(options, f)
	}
	if len(steps) > 0 {
		steps[len(steps)-1] += " on the item"
	}
	if pr {
		what := "the issue"
		if c.Number > 0 {
			what = fmt.Sprintf("#%d", c.Number)
		}
		steps = append(steps, "merge a pull request that closes "+what)
	}
	return fmt.Sprintf("%s first, then retry %s", joinAnd(steps), c.To), options
}

func ordinal(n int) string {
	switch n {
	case 1:
		return "1st"
	case 2:
		return "2nd"
	case 3:
		return "3rd"
	}
	return fmt.Sprintf("%dth", n)
}

// checkRequirements validates workflow.requirements.
func (v *validator) checkRequirements() {
	for i, r := range v.s.Requirements {
		p := fmt.Sprintf("workflow.requirements[%d]", i)
		if len(r.Into) == 0 {
			v.add(p+".into", "must list at least one state")
		}
		for j, n := range r.Into {
			v.state(fmt.Sprintf("%s.into[%d]", p, j), n)
		}
		if len(r.Fields) == 0 && r.PullRequest == "" {
			v.add(p, "must require fields, a pull_request, or both")
		}
		seen := map[string]bool{}
		for j, f := range r.Fields {
			fp := fmt.Sprintf("%s.fields[%d]", p, j)
			switch {
			case strings.TrimSpace(f) == "":
				v.add(fp, "must name a project field")
			case strings.EqualFold(f, v.s.Field):
				v.add(fp, "%q is the workflow field itself", f)
			case seen[f]:
				v.add(fp, "%q is listed twice", f)
			}
			seen[f] = true
		}
		for j, f := range r.Fields {
			if strings.TrimSpace(f) != "" && !slices.Contains(v.required, f) {
				if len(v.required) == MaxRequiredFields {
					v.add(fmt.Sprintf("%s.fields[%d]", p, j), "the requirements may name at most %d fields in all; %q would be the %s",
						MaxRequiredFields, f, ordinal(MaxRequiredFields+1))
					continue
				}
				v.required = append(v.required, f)
			}
		}
		if r.PullRequest != "" && r.PullRequest != PullRequestMerged {
			v.add(p+".pull_request", "must be %s, got %q", PullRequestMerged, r.PullRequest)
		}
		for j, f := range r.For {
			if f != "agent" && f != "human" {
				v.add(fmt.Sprintf("%s.for[%d]", p, j), "must be agent or human, got %q", f)
			}
		}
	}
}
