package toolspec

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// Tool names, as agents call them (clients may add their own prefix).
const (
	HandoffTicket          = "handoff_ticket"
	GetWorkflowState       = "get_workflow_state"
	DetectPipelinePosition = "detect_pipeline_position"
	CheckConvergence       = "check_convergence"
	AdvanceChildren        = "advance_children"
	PickActionableIssue    = "pick_actionable_issue"
	DescribeWorkflow       = "describe_workflow"
	BoardHealth            = "board_health"
)

// WorkflowResourceURI is describe_workflow's answer as an MCP resource.
const WorkflowResourceURI = "ralph-gate://workflow"

// Spec describes one tool.
type Spec struct {
	Name  string
	Title string
	// Summary is the one line the README lists; Description is what models read.
	Summary     string
	Description string
	// Input is the tool's input type (its fields are the tool's arguments).
	Input any
	// ReadOnly tools never change the board; Destructive ones may overwrite a state.
	ReadOnly, Destructive, Idempotent bool
	// Aliases are names agents give for one of the tool's arguments (issue for number,
	// to_state for check_convergence's targetState): an unknown argument that is an alias is
	// refused with "retry with <the argument> <its value> instead of <alias>". Aliases are
	// never accepted as arguments; see aliases for the table.
	Aliases map[string]string
}

// Alias tables, by argument: the names agents are seen to give, or would guess from another
// tool or API, for an argument. Names that differ from the argument only in case or
// separators (toState, Number, work_flow_state) need no entry: Spec.meant finds them.
var (
	// numberAliases name the issue's number (GitHub's REST and GraphQL say issue_number, id).
	numberAliases = []string{"issue", "issue_number", "issue_id", "id", "issue_num", "num"}
	// ownerAliases name the organization.
	ownerAliases = []string{"org", "organization", "organisation"}
	// repoAliases name the repository.
	repoAliases = []string{"repository", "repo_name", "repository_name"}
	// projectAliases name the project's number.
	projectAliases = []string{"project_number", "project_id", "projectId", "board"}
	// stateAliases name a Workflow State to move to or reach.
	stateAliases = []string{"state", "status", "to", "target", "target_state", "new_state", "to_state", "workflow_state", "next_state"}
	// estimateAliases name the largest estimate.
	estimateAliases = []string{"estimate", "max_estimate", "size", "max_size"}
	// reasonAliases name the reason posted in the audit comment.
	reasonAliases = []string{"comment", "message", "note", "why"}
	// commandAliases name the command.
	commandAliases = []string{"cmd", "ralph_command"}
)

// aliases builds a tool's alias table: each name in each list stands for arg. A name that
// reads as one of the tool's own arguments (handoff_ticket's to_state, pick_actionable_issue's
// workflow_state) is left out: it is that argument, or meant finds it.
func aliases(in any, byArg map[string][]string) map[string]string {
	own := map[string]bool{}
	for _, a := range argumentsOf(in) {
		own[normName(a.Name)] = true
	}
	out := map[string]string{}
	for arg, names := range byArg {
		for _, n := range names {
			if !own[normName(n)] {
				out[n] = arg
			}
		}
	}
	return out
}

// normName is an argument's name without case or separators: toState, to_state and TO-STATE
// read alike.
func normName(n string) string {
	return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(n))
}

// issueAliases are the aliases of the Issue arguments, plus more.
func issueAliases(more map[string][]string) map[string][]string {
	out := map[string][]string{"number": numberAliases, "owner": ownerAliases, "repo": repoAliases, "project": projectAliases}
	for k, v := range more {
		out[k] = v
	}
	return out
}

// errorsNote ends the description of every tool that can refuse.
const errorsNote = ` Refusals and malformed arguments come back as a tool error in three parts: what was tried, why it fails, and "Recovery:" with exactly what to retry with, in this tool's own argument names (retry without x, with y "A" or "B" means: call again leaving x out and setting y to "A" or "B"; retry with y "A" instead of x means the same).`

// Tools lists every tool, in the order the server offers them.
func Tools() []Spec {
	return []Spec{
		{
			Name:    HandoffTicket,
			Summary: "validated move of an issue to its next state by intent or to_state, with an audit comment; returns previous/new state and guidance",
			Input:   HandoffInput{},
			Aliases: aliases(HandoffInput{}, issueAliases(map[string][]string{"to_state": stateAliases, "reason": reasonAliases, "command": commandAliases})),
			Title:   "Hand an issue off to its next Workflow State",
			Description: "Move an issue to its next Workflow State for the command you are running. This is the only way for an agent to change Workflow State: ralph-gate validates the move (your command's outputs, the transition table, lock ownership, blockers, group convergence, WIP limits), writes it, posts an audit comment with your reason, and runs the automation the move triggers (children follow a parent, a parent follows its children). " +
				"Say what you mean with intent (lock to claim work, complete when done, escalate when a human is needed, release to give work back) rather than naming states; to_state is for commands with several outputs (triage). " +
				"Returns the previous and new state and guidance: the states you may move to next, the commands that expect the new state, and whether it is a lock, terminal or needs a human." + errorsNote,
			Destructive: true,
		},
		{
			Name:    GetWorkflowState,
			Summary: "state, last legal state, lock holder and since, allowed next moves, commands expecting it, parent, sub-issues and open blockers",
			Input:   StateInput{},
			Aliases: aliases(StateInput{}, issueAliases(nil)),
			Title:   "Read an issue's Workflow State",
			Description: "Read an issue's Workflow State as ralph-gate knows it: the state on the board, the last state ralph-gate accepted, who holds its lock and since when, the states an agent may move it to next, the commands that expect it, and its parent, sub-issues (by state) and open blockers. " +
				"Use it before a handoff when unsure where an issue stands." + errorsNote,
			ReadOnly: true, Idempotent: true,
		},
		{
			Name:    DetectPipelinePosition,
			Summary: "the phase of the issue's group (the order of policy.DetectPipeline), remaining phases, convergence and suggestedRoster",
			Input:   PipelineInput{},
			Aliases: aliases(PipelineInput{}, issueAliases(nil)),
			Title:   "Find the pipeline phase of an issue's group",
			Description: "Determine which phase to run next for an issue and its group (the parent's sub-issues, or the issue's own sub-issues when it is a parent, plus issues they are blocked by), by a fixed rule order: SPLIT, TRIAGE, RESEARCH, PLAN, REVIEW, HUMAN_GATE, IMPLEMENT, INTEGRATE or TERMINAL. " +
				"Returns the phase with its reason, the remaining phases, the group in dependency order, whether the group has converged (and which issues block it, with a proceed/wait/escalate recommendation), and a suggested roster of analysts, builders and integrators (analysts for the issues in Research Needed or Research in Progress). Use it instead of interpreting state tables yourself. " +
				"A group member in a state pipeline detection does not know is refused rather than guessed at." + errorsNote,
			ReadOnly: true, Idempotent: true,
		},
		{
			Name:    CheckConvergence,
			Summary: "whether the whole group reached targetState: converged, total, ready, blocking with distances, proceed/wait/escalate",
			Input:   ConvergenceInput{},
			Aliases: aliases(ConvergenceInput{}, issueAliases(map[string][]string{"targetState": stateAliases})),
			Title:   "Check whether a group has reached a state",
			Description: "Check whether every issue of the issue's group (the issue included; Canceled issues do not count) has reached targetState or later on the pipeline, e.g. before planning a group together. " +
				"Returns converged, total, ready, the blocking issues with their state and distance to the target, and a recommendation: proceed, wait, or escalate (a blocker needs a human)." + errorsNote,
			ReadOnly: true, Idempotent: true,
		},
		{
			Name:    AdvanceChildren,
			Summary: "brings a parent's earlier sub-issues up to targetState, each as your own move: advanced, skipped with reasons, errors (partial success)",
			Input:   AdvanceInput{},
			Aliases: aliases(AdvanceInput{}, issueAliases(map[string][]string{"targetState": stateAliases})),
			Title:   "Advance a parent's sub-issues to a state",
			Description: "Bring every sub-issue of a parent that is earlier on the pipeline than targetState up to targetState (never past the parent's own state). Each child's move is yours: judged as a board move of yours would be (the transition table, your role, locks, the gates) and within your commands (one of them must take the child's state). Children that are already there or later, terminal, in Human Needed, or that you may not move are skipped with the reason; a child that cannot be written is listed in errors while the others still move. " +
				"ralph-gate already does this automatically when a parent moves; call it to repair a group or when that automation is switched off." + errorsNote,
			Destructive: true, Idempotent: true,
		},
		{
			Name:    PickActionableIssue,
			Summary: "the best open, unlocked, unblocked issue in a state (priority, then size) and alternatives; claim: true locks it for you atomically",
			Input:   PickInput{},
			Aliases: aliases(PickInput{}, map[string][]string{"owner": ownerAliases, "project": projectAliases, "workflowState": stateAliases, "maxEstimate": estimateAliases, "reason": reasonAliases, "command": commandAliases}),
			Title:   "Pick the next issue to work on",
			Description: "Find the highest-priority issue in workflowState that is open, not locked, not blocked by an open issue and no larger than maxEstimate (default S), ranked by priority P0 > P1 > P2 > P3 > none, then smaller estimate, then lower number. " +
				"With claim: true and your command, the issue is locked for you atomically (handed off with intent lock): when several agents race, each gets a different issue, and found is false when nothing is left. Without claim nothing changes." + errorsNote,
			Destructive: false,
		},
		{
			Name:    DescribeWorkflow,
			Summary: "states, transitions, intents, commands, pipeline and gates (also the resource ralph-gate://workflow)",
			Input:   DescribeInput{},
			Title:   "Describe the workflow",
			Description: "Describe the workflow ralph-gate enforces: every state with its kind and the moves open to agents and to humans, the transitions, the semantic intents and what they resolve to per command, each command's input and output states, the pipeline order, the gates that are on, and the commands you may use. " +
				"Also available as the resource " + WorkflowResourceURI + ".",
			ReadOnly: true, Idempotent: true,
		},
		{
			Name:    BoardHealth,
			Summary: "each enforced project's health from ralph-gate's store: items per state against WIP limits, locks and their age, items waiting for a person, unblocked and unset items, hygiene findings, queue depth and rate limit, and the façade's calls per tool and agent",
			Input:   HealthInput{},
			Aliases: aliases(HealthInput{}, map[string][]string{"owner": ownerAliases, "project": projectAliases}),
			Title:   "Report the health of the enforced boards",
			Description: "Report the health of every enforced project (or of one: project, its number as the other tools take it, with owner if projects of several organizations have that number; or owner alone: that organization's projects), computed from what ralph-gate has recorded, without asking GitHub: the number of items in each state with its WIP limit, the locks with their holder and age (stale ones flagged), the items waiting in a human gate and for how long, open items waiting in a queue whose blockers have all closed, items with no state, " +
				"and a hygiene list of findings (stale_lock, wip_over_limit, long_human_wait, unblocked_waiting, unset_state), most pressing first, each with a sentence saying what to do. " +
				"States and locks follow every judged change; titles, open and blockers are as of snapshotAt, the newest reconciliation. Ages are in nanoseconds (ageNs). " +
				"mode is how the project is enforced (enforce, warn, evaluate); under warn and evaluate, wouldRevert is what enforce would have reverted in the last week (count, byRule, byActor, the newest moves). " +
				"facade sums the tool calls of every agent over the last hour and day, per tool and per agent: calls, ok, refused (refusedBy counts refusals by rule), errors, rateLimited, githubRequests, and p50Ms/p99Ms." + errorsNote,
			ReadOnly: true, Idempotent: true,
		},
	}
}

// Markdown renders the tool list for the README (TestReadmeToolList keeps them in step).
func Markdown() string {
	var b strings.Builder
	b.WriteString("| tool | arguments (* required) | hints | does |\n|---|---|---|---|\n")
	for _, t := range Tools() {
		hint := "writes"
		switch {
		case t.ReadOnly:
			hint = "read-only"
		case t.Destructive:
			hint = "writes (destructive)"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", t.Name, arguments(t.Input), hint, strings.ReplaceAll(t.Summary, "|", `\|`))
	}
	return b.String()
}

// arguments lists a tool's arguments from its input type, required ones starred.
func arguments(in any) string {
	var out []string
	for _, a := range argumentsOf(in) {
		name := a.Name
		if a.Required {
			name += "*"
		}
		out = append(out, "`"+name+"`")
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// Argument is one argument of a tool, as its input type declares it (and its JSON schema says).
type Argument struct {
	Name string
	// Type is the JSON type: string, integer or boolean.
	Type        string
	Required    bool
	Description string
	// MaxRunes bounds a string argument (its field's maxRunes tag; defaultMaxRunes without
	// one): a longer value is refused, and the refusal quotes only its beginning.
	MaxRunes int
}

// defaultMaxRunes bounds a string argument whose field names no bound: names of states,
// commands, organizations and repositories are far shorter.
const defaultMaxRunes = 256

// Arguments lists the tool's arguments in the order its input type declares them.
func (s Spec) Arguments() []Argument { return argumentsOf(s.Input) }

func argumentsOf(in any) []Argument {
	var out []Argument
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if f.Anonymous {
				walk(f.Type)
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			a := Argument{Name: name, Required: !strings.Contains(opts, "omitempty"), Description: f.Tag.Get("jsonschema")}
			switch f.Type.Kind() {
			case reflect.Bool:
				a.Type = "boolean"
			case reflect.Int, reflect.Int64, reflect.Int32:
				a.Type = "integer"
			default:
				a.Type, a.MaxRunes = "string", defaultMaxRunes
				if n, err := strconv.Atoi(f.Tag.Get("maxRunes")); err == nil {
					a.MaxRunes = n
				}
			}
			out = append(out, a)
		}
	}
	walk(reflect.TypeOf(in))
	return out
}
