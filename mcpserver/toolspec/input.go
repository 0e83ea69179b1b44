package toolspec

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/ralph-gate/ralph-gate/policy"
)

// Issue names the issue a tool works on. Owner and repo default to the façade's configuration
// (the organization of the enforced projects and mcp.default_repo).
type Issue struct {
	Owner   string `json:"owner,omitempty" jsonschema:"Organization that owns the repository. Omit to use the organization of the enforced project."`
	Repo    string `json:"repo,omitempty" jsonschema:"Repository name (or owner/name). Omit to use the configured default repository."`
	Number  int    `json:"number" jsonschema:"The issue's number."`
	Project int    `json:"project,omitempty" jsonschema:"Project number. Needed only when the issue is on several enforced projects."`
}

// HandoffInput is handoff_ticket's input.
type HandoffInput struct {
	Issue
	Command  string `json:"command" jsonschema:"The command you are running, bare or ralph_-prefixed: research or ralph_research, plan, impl, review, ..."`
	Intent   string `json:"intent,omitempty" jsonschema:"What you mean, resolved for your command: lock (claim work), complete (finish), escalate (needs a human), release (give the work back), reject, close, cancel. Also accepted as __LOCK__ etc. Give intent or to_state, not both."`
	ToState  string `json:"to_state,omitempty" jsonschema:"A Workflow State by name (case-sensitive), one of your command's outputs or its lock state. Give intent or to_state, not both."`
	Reason   string `json:"reason" maxRunes:"10000" jsonschema:"Why you are moving the issue, one or two sentences; posted in the audit comment on the issue."`
	TakeOver bool   `json:"take_over,omitempty" jsonschema:"Take over the issue's lock first: allowed once its holder has held it longer than workflow.locks.ttl, for an agent of a role that owns the state. Give the lock state as to_state (or intent lock) to take it over only."`
}

// StateInput is get_workflow_state's input.
type StateInput struct {
	Issue
}

// PipelineInput is detect_pipeline_position's input.
type PipelineInput struct {
	Issue
	AutoMode    bool `json:"autoMode,omitempty" jsonschema:"Set when the team integrates without waiting for human review: a group in review becomes INTEGRATE instead of TERMINAL."`
	StreamCount int  `json:"streamCount,omitempty" jsonschema:"Number of independent work streams, for the suggested number of builders (0 = unknown)."`
}

// ConvergenceInput is check_convergence's input.
type ConvergenceInput struct {
	Issue
	TargetState string `json:"targetState" jsonschema:"The pipeline state every issue of the group must have reached, e.g. Ready for Plan."`
}

// AdvanceInput is advance_children's input.
type AdvanceInput struct {
	Issue
	TargetState string `json:"targetState" jsonschema:"The pipeline state to bring the children to; not later than the parent's own state."`
}

// PickInput is pick_actionable_issue's input.
type PickInput struct {
	Owner         string `json:"owner,omitempty" jsonschema:"Organization of the projects to search. Omit to use the organization of the enforced projects."`
	Project       int    `json:"project,omitempty" jsonschema:"Search only this project number. Omit to search every enforced project."`
	WorkflowState string `json:"workflowState" jsonschema:"The state to pick from, e.g. Research Needed (researchers), Ready for Plan (planners), Plan in Review (reviewers), In Progress (builders)."`
	MaxEstimate   string `json:"maxEstimate,omitempty" jsonschema:"Largest estimate to accept: XS, S, M, L or XL. Default S. Issues without an estimate are eligible."`
	Claim         bool   `json:"claim,omitempty" jsonschema:"Lock the picked issue for you atomically, by handing it off with intent lock for your command. Concurrent callers never get the same issue."`
	Command       string `json:"command,omitempty" jsonschema:"Your command; required with claim (its lock state is where the issue goes, e.g. research: Research in Progress)."`
	Reason        string `json:"reason,omitempty" maxRunes:"10000" jsonschema:"With claim: why you take the issue, for the audit comment. Default: picked by pick_actionable_issue."`
}

// DescribeInput is describe_workflow's input: nothing.
type DescribeInput struct{}

// HealthInput is board_health's input. project is a project number, as every tool takes it.
type HealthInput struct {
	Owner   string `json:"owner,omitempty" jsonschema:"Organization of the project. Omit to use the organization of the enforced projects; alone, it reports that organization's projects."`
	Project int    `json:"project,omitempty" jsonschema:"One enforced project's number (e.g. 3). Omit for every enforced project."`
}

// Normalize trims the owner and checks the shapes.
func (in *HealthInput) Normalize() error {
	in.Owner = strings.TrimSpace(in.Owner)
	if in.Owner != "" && !loginPattern.MatchString(in.Owner) {
		return refusal("owner", fmt.Sprintf("%q is not a GitHub organization login", in.Owner), retryWith("owner", "the organization's login", true))
	}
	if in.Project < 0 {
		return refusal("project", fmt.Sprintf("the project number must be positive, got %d", in.Project), retryWith("project", "the project's number", true))
	}
	return nil
}

// Bounds on free text, so a runaway agent cannot post megabytes into a comment.
const (
	maxReason = 4000
	maxName   = 100
)

var (
	loginPattern = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$`)
	repoPattern  = regexp.MustCompile(`^[A-Za-z0-9._-]{1,100}$`)
)

// refusal refuses a field of the input; rt says what to retry with.
func refusal(field, problem string, rt policy.Retry) error {
	return policy.NewRetryRefusal("Invalid "+field, problem, rt)
}

// retryWith suggests field set to what hint describes, or left out when optional.
func retryWith(field, hint string, optional bool) policy.Retry {
	return policy.Retry{With: []policy.Suggestion{{Arg: policy.Arg(field), Kind: policy.Text, Hint: hint, Optional: optional}}}
}

// Normalize trims the issue reference, splits an owner/name repo and checks its shape.
func (in *Issue) Normalize() error {
	in.Owner, in.Repo = strings.TrimSpace(in.Owner), strings.TrimSpace(in.Repo)
	if owner, name, ok := strings.Cut(in.Repo, "/"); ok {
		if in.Owner != "" && !strings.EqualFold(in.Owner, owner) {
			return refusal("repo", fmt.Sprintf("repo %q names owner %q but owner is %q", in.Repo, owner, in.Owner),
				policy.Retry{With: []policy.Suggestion{{Arg: "repo", Kind: policy.Text, Values: []string{name}}, {Arg: "owner", Kind: policy.Text, Values: []string{owner}}}})
		}
		in.Owner, in.Repo = owner, name
	}
	if in.Number <= 0 {
		return refusal("number", fmt.Sprintf("the issue number must be positive, got %d", in.Number), retryWith("number", "the issue's number", false))
	}
	if in.Owner != "" && !loginPattern.MatchString(in.Owner) {
		return refusal("owner", fmt.Sprintf("%q is not a GitHub organization login", in.Owner), retryWith("owner", "the organization's login", true))
	}
	if in.Repo != "" && !repoPattern.MatchString(in.Repo) {
		return refusal("repo", fmt.Sprintf("%q is not a repository name", in.Repo), retryWith("repo", "the repository's name", true))
	}
	if in.Project < 0 {
		return refusal("project", fmt.Sprintf("the project number must be positive, got %d", in.Project), retryWith("project", "the project's number", true))
	}
	return nil
}

// checkName trims a name and refuses it empty (when required) or too long; hint describes a
// valid value.
func checkName(field, v string, required bool, hint string) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" && required {
		return v, refusal(field, field+" is required", retryWith(field, hint, false))
	}
	if len(v) > maxName {
		return v, refusal(field, fmt.Sprintf("%s is longer than %d characters", field, maxName), retryWith(field, hint, !required))
	}
	return v, nil
}

// Normalize checks a handoff's shape; which intents, states and commands are valid is policy's
// to say (the façade answers with the valid retries).
func (in *HandoffInput) Normalize() error {
	if err := in.Issue.Normalize(); err != nil {
		return err
	}
	var err error
	if in.Command, err = checkName("command", in.Command, true, "the command you are running, e.g. research"); err != nil {
		return err
	}
	if in.Intent, err = checkName("intent", in.Intent, false, "an intent such as lock or complete"); err != nil {
		return err
	}
	if in.ToState, err = checkName("to_state", in.ToState, false, "a Workflow State's name"); err != nil {
		return err
	}
	return checkReason(&in.Reason, true)
}

func checkReason(r *string, required bool) error {
	*r = strings.TrimSpace(*r)
	if *r == "" && required {
		return refusal("reason", "a handoff needs a reason for the audit comment", retryWith("reason", "one or two sentences on why you move the issue", false))
	}
	if len(*r) > maxReason {
		return refusal("reason", fmt.Sprintf("the reason is longer than %d characters", maxReason),
			retryWith("reason", fmt.Sprintf("at most %d characters (link to details instead)", maxReason), !required))
	}
	return nil
}

// Normalize checks get_workflow_state's input.
func (in *StateInput) Normalize() error { return in.Issue.Normalize() }

// Normalize checks detect_pipeline_position's input.
func (in *PipelineInput) Normalize() error {
	if err := in.Issue.Normalize(); err != nil {
		return err
	}
	if in.StreamCount < 0 || in.StreamCount > 100 {
		return refusal("streamCount", fmt.Sprintf("streamCount must be between 0 and 100, got %d", in.StreamCount), retryWith("streamCount", "the number of work streams (0 to 100)", true))
	}
	return nil
}

// Normalize checks check_convergence's input.
func (in *ConvergenceInput) Normalize() error {
	if err := in.Issue.Normalize(); err != nil {
		return err
	}
	var err error
	in.TargetState, err = checkName("targetState", in.TargetState, true, "a pipeline state, e.g. Ready for Plan")
	return err
}

// Normalize checks advance_children's input.
func (in *AdvanceInput) Normalize() error {
	if err := in.Issue.Normalize(); err != nil {
		return err
	}
	var err error
	in.TargetState, err = checkName("targetState", in.TargetState, true, "a pipeline state, usually the parent's state")
	return err
}

// Normalize checks pick_actionable_issue's input.
func (in *PickInput) Normalize() error {
	in.Owner = strings.TrimSpace(in.Owner)
	if in.Owner != "" && !loginPattern.MatchString(in.Owner) {
		return refusal("owner", fmt.Sprintf("%q is not a GitHub organization login", in.Owner), retryWith("owner", "the organization's login", true))
	}
	if in.Project < 0 {
		return refusal("project", fmt.Sprintf("the project number must be positive, got %d", in.Project), retryWith("project", "the project's number", true))
	}
	var err error
	if in.WorkflowState, err = checkName("workflowState", in.WorkflowState, true, "a state to pick from, e.g. Research Needed"); err != nil {
		return err
	}
	if in.MaxEstimate, err = checkName("maxEstimate", in.MaxEstimate, false, "XS, S, M, L or XL"); err != nil {
		return err
	}
	if in.Command, err = checkName("command", in.Command, in.Claim, "the command you run, e.g. research (a claim needs it)"); err != nil {
		return err
	}
	if err := checkReason(&in.Reason, false); err != nil {
		return err
	}
	if in.Claim && in.Reason == "" {
		in.Reason = "picked by pick_actionable_issue"
	}
	return nil
}
