package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/mcpserver/toolspec"
	"github.com/ralph-gate/ralph-gate/policy"
)

// suggestion is one argument a Recovery asks to retry with, as an agent reads it.
type suggestion struct {
	arg   string
	value string // as written: bare, or quoted
	hint  bool   // "set to …": the Recovery describes the value instead of naming one
}

// recovery is what a Recovery line asks for: leave drop out; set one of with; oneOf says the
// suggested arguments exclude each other.
type recovery struct {
	drop  []string
	with  []suggestion
	oneOf bool
}

// parseRecovery reads the retry a refusal suggests, the way an agent follows it.
func parseRecovery(t *testing.T, msg string) recovery {
	t.Helper()
	_, rec, ok := strings.Cut(msg, "Recovery: ")
	if !ok {
		t.Fatalf("no Recovery in %q", msg)
	}
	var out recovery
	if _, rest, ok := strings.Cut(rec, "retry without "); ok {
		names, _, _ := strings.Cut(rest, ", with ")
		out.drop = regexp.MustCompile(`, | and `).Split(names, -1)
	}
	// "retry with number 3 instead of issue": the suggestion replaces issue.
	if m := regexp.MustCompile(` instead of (\w+(?:(?:, | and )\w+)*)`).FindStringSubmatch(rec); m != nil {
		out.drop = append(out.drop, regexp.MustCompile(`, | and `).Split(m[1], -1)...)
	}
	with := regexp.MustCompile(`with ([A-Za-z_]\w*) (set to |"(?:[^"\\]|\\.)*"|[^\s,()]+)`)
	for _, m := range with.FindAllStringSubmatch(rec, -1) {
		out.with = append(out.with, suggestion{arg: m[1], value: m[2], hint: m[2] == "set to "})
	}
	out.oneOf = regexp.MustCompile(`\(give (\w+ or \w+, not both|only one of [^)]*)\)`).MatchString(rec)
	return out
}

// replay builds the call the Recovery asks for: the first suggested value of the first
// suggested argument (or a value from hints when the Recovery only describes it), in place
// of the arguments it replaces.
func replay(t *testing.T, sp toolspec.Spec, orig map[string]any, rec recovery, hints map[string]any) map[string]any {
	t.Helper()
	args := maps.Clone(orig)
	for _, d := range rec.drop {
		delete(args, d)
	}
	if len(rec.with) == 0 {
		return args
	}
	if rec.oneOf {
		for _, w := range rec.with {
			delete(args, w.arg)
		}
	}
	s := rec.with[0]
	if s.hint {
		v, ok := hints[s.arg]
		if !ok {
			t.Fatalf("the Recovery only describes %s, and the case gives no value for it", s.arg)
		}
		args[s.arg] = v
		return args
	}
	var typ string
	for _, a := range sp.Arguments() {
		if a.Name == s.arg {
			typ = a.Type
		}
	}
	text := s.value
	if strings.HasPrefix(text, `"`) {
		var err error
		if text, err = strconv.Unquote(text); err != nil {
			t.Fatalf("bad quoted value %s: %v", s.value, err)
		}
	}
	switch typ {
	case "integer":
		n, err := strconv.Atoi(text)
		if err != nil {
			t.Fatalf("%s is an integer, the Recovery suggests %s", s.arg, s.value)
		}
		args[s.arg] = n
	case "boolean":
		b, err := strconv.ParseBool(text)
		if err != nil {
			t.Fatalf("%s is a boolean, the Recovery suggests %s", s.arg, s.value)
		}
		args[s.arg] = b
	default:
		args[s.arg] = text
	}
	return args
}

// call calls a tool and returns its error text ("" on success).
func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: protocol error %v", tool, args, err)
	}
	if !res.IsError {
		return ""
	}
	return res.Content[0].(*mcp.TextContent).Text
}

// argumentError: the message rejects the arguments' shape (ours or the SDK's validator).
func argumentError(tool, msg string) bool {
	return strings.HasPrefix(msg, tool+": argument ") || strings.HasPrefix(msg, tool+": unknown argument ") ||
		strings.HasPrefix(msg, tool+": the arguments") || strings.Contains(msg, `validating "arguments"`)
}

func specOf(t *testing.T, tool string) toolspec.Spec {
	t.Helper()
	for _, sp := range toolspec.Tools() {
		if sp.Name == tool {
			return sp
		}
	}
	t.Fatalf("no tool %s", tool)
	return toolspec.Spec{}
}

// checkRecovery asserts that every argument a Recovery names is one of the tool's arguments.
func checkRecovery(t *testing.T, sp toolspec.Spec, msg string, rec recovery) {
	t.Helper()
	var names []string
	for _, a := range sp.Arguments() {
		names = append(names, a.Name)
	}
	for _, d := range rec.drop {
		if !slices.Contains(names, d) {
			// Leaving out an argument the tool does not have is what an unknown argument's
			// Recovery asks.
			if !strings.Contains(msg, "unknown argument `"+d+"`") {
				t.Errorf("the Recovery leaves out %q, which %s does not have: %s", d, sp.Name, msg)
			}
		}
	}
	for _, w := range rec.with {
		if !slices.Contains(names, w.arg) {
			t.Errorf("the Recovery names %q, which is not an argument of %s (%v): %s", w.arg, sp.Name, names, msg)
		}
	}
	// Any name=value an agent might copy must name an argument too.
	_, after, _ := strings.Cut(msg, "Recovery: ")
	for _, m := range regexp.MustCompile(`(\w+)=`).FindAllStringSubmatch(after, -1) {
		if !slices.Contains(names, m[1]) {
			t.Errorf("the Recovery names %q=, which is not an argument of %s: %s", m[1], sp.Name, msg)
		}
	}
}

// recoveryBoard is the board every recovery case starts from.
func recoveryBoard() []enforce.Item {
	parent := issue(6, "Ready for Plan")
	parent.SubIssues = 2
	kid7, kid8 := issue(7, "Research Needed"), issue(8, "Ready for Plan")
	kid7.ParentID, kid8.ParentID = parent.ContentID, parent.ContentID
	blocked := issue(5, "Research Needed")
	blocked.OpenBlockers = 1
	other := issue(11, "Research Needed")
	other.ID, other.ProjectID, other.ProjectNumber = "PVTI_other", "PVT_2", 2
	pr := issue(12, "Backlog")
	pr.ContentType = enforce.ContentPullRequest
	lonely := issue(13, "Human Needed")
	lonely.SubIssues = 1
	return []enforce.Item{issue(1, "Research Needed"), issue(2, "Backlog"), issue(3, "Ready for Plan"), issue(4, "Research Needed"),
		blocked, parent, kid7, kid8, issue(9, "Bogus"), issue(11, "Research Needed"), other, pr, lonely, issue(14, "Backlog"), issue(15, "Backlog")}
}

// TestRecoveriesReplay provokes every refusal each tool can give through a real MCP client,
// reads the retry its Recovery suggests (argument names and a value), calls the tool again
// with it, and checks that the retry names only the tool's own arguments, is never rejected
// for its arguments, and succeeds where the suggestion should.
func TestRecoveriesReplay(t *testing.T) {
	const (
		ok      = "ok"      // the replay succeeds
		refused = "refused" // the replay is refused by a rule (not for its arguments)
		none    = "none"    // the Recovery asks for no other arguments
	)
	handoff := func(extra map[string]any) map[string]any {
		args := map[string]any{"number": 1, "command": "research", "reason": "r"}
		maps.Copy(args, extra)
		return args
	}
	tests := []struct {
		name   string
		tool   string
		agent  string
		args   map[string]any
		want   string
		replay string
		hints  map[string]any
		edit   func(*policy.Spec)
		setup  func(t *testing.T, f *fixture)
	}{
		// handoff_ticket: the command.
		{name: "unknown command", tool: toolspec.HandoffTicket, args: handoff(map[string]any{"command": "fly", "intent": "lock"}), want: `Unknown command "fly"`, replay: refused},
		{name: "command the agent may not use", tool: toolspec.HandoffTicket, agent: "researcher", args: handoff(map[string]any{"command": "impl", "intent": "lock"}),
			want: "may only use the commands research", replay: ok},
		// handoff_ticket: intent and to_state.
		{name: "neither intent nor to_state", tool: toolspec.HandoffTicket, args: handoff(nil), want: "Neither intent nor to_state", replay: ok},
		{name: "both intent and to_state", tool: toolspec.HandoffTicket, args: handoff(map[string]any{"intent": "lock", "to_state": "Ready for Plan"}), want: "Both intent and to_state", replay: ok},
		{name: "unknown intent", tool: toolspec.HandoffTicket, args: handoff(map[string]any{"intent": "bogus"}), want: `Unknown intent "bogus"`, replay: ok},
		{name: "ambiguous intent", tool: toolspec.HandoffTicket, args: handoff(map[string]any{"number": 2, "command": "triage", "intent": "complete"}), want: "is ambiguous for triage", replay: ok},
		{name: "intent the command does not have", tool: toolspec.HandoffTicket, args: handoff(map[string]any{"number": 2, "command": "triage", "intent": "lock"}), want: "is not defined for triage", replay: ok},
		{name: "unknown to_state", tool: toolspec.HandoffTicket, args: handoff(map[string]any{"to_state": "Bogus"}), want: `Unknown state "Bogus"`, replay: ok},
		{name: "to_state the command does not output", tool: toolspec.HandoffTicket, args: handoff(map[string]any{"to_state": "Done"}), want: "is not a valid output for research", replay: ok},
		// handoff_ticket: the workflow's rules.
		{name: "a move the table refuses", tool: toolspec.HandoffTicket, args: handoff(map[string]any{"number": 2, "intent": "lock"}), want: "not a transition", replay: ok},
		{name: "no move open to agents", tool: toolspec.HandoffTicket, args: handoff(map[string]any{"number": 13, "intent": "complete"}), want: "ask a human", replay: none},
		{name: "another agent's lock", tool: toolspec.HandoffTicket, args: handoff(map[string]any{"number": 4, "intent": "complete"}), want: "locked by agent-2", replay: none,
			setup: lockedBy("agent-2", 4)},
		{name: "re-entering another agent's lock", tool: toolspec.HandoffTicket, args: handoff(map[string]any{"number": 4, "intent": "lock"}), want: "is locked by agent-2", replay: none,
			setup: lockedBy("agent-2", 4)},
		{name: "open blockers", tool: toolspec.HandoffTicket, args: handoff(map[string]any{"number": 5, "intent": "lock"}), want: `open blockers: #2 "Issue" is open, in Backlog`, replay: none},
		{name: "group not converged", tool: toolspec.HandoffTicket, args: handoff(map[string]any{"number": 8, "command": "plan", "intent": "lock"}), want: "needs the whole group", replay: none},
		{name: "WIP limit", tool: toolspec.HandoffTicket, args: handoff(map[string]any{"intent": "lock"}), want: "WIP limit", replay: none,
			edit: func(s *policy.Spec) { s.Gates.WIPLimits = map[string]int{"Research in Progress": 0} }},
		{name: "a change still being processed", tool: toolspec.HandoffTicket, args: handoff(map[string]any{"intent": "complete"}), want: "still being processed", replay: none,
			setup: func(t *testing.T, f *fixture) {
				lockedBy("agent-1", 1)(t, f)
				if err := f.board.SetState(context.Background(), enforce.Item{ID: issue(1, "").ID}, "Human Needed"); err != nil {
					t.Fatal(err)
				}
			}},
		// The issue reference, for every tool that takes one.
		{name: "number not positive", tool: toolspec.HandoffTicket, args: handoff(map[string]any{"number": 0, "intent": "lock"}), want: "Invalid number", replay: ok, hints: map[string]any{"number": 1}},
		{name: "blank reason", tool: toolspec.HandoffTicket, args: handoff(map[string]any{"intent": "lock", "reason": "  "}), want: "Invalid reason", replay: ok, hints: map[string]any{"reason": "mine"}},
		{name: "blank command", tool: toolspec.HandoffTicket, args: handoff(map[string]any{"intent": "lock", "command": " "}), want: "Invalid command", replay: ok, hints: map[string]any{"command": "research"}},
		{name: "repo names another owner", tool: toolspec.GetWorkflowState, args: map[string]any{"number": 1, "owner": "other", "repo": "acme/app"}, want: "Invalid repo", replay: refused},
		{name: "owner is no login", tool: toolspec.GetWorkflowState, args: map[string]any{"number": 1, "owner": "no spaces"}, want: "Invalid owner", replay: ok, hints: map[string]any{"owner": "acme"}},
		{name: "repo is no name", tool: toolspec.DetectPipelinePosition, args: map[string]any{"number": 1, "repo": "a b"}, want: "Invalid repo", replay: ok, hints: map[string]any{"repo": "app"}},
		{name: "negative project", tool: toolspec.CheckConvergence, args: map[string]any{"number": 1, "project": -1, "targetState": "Ready for Plan"}, want: "Invalid project", replay: ok, hints: map[string]any{"project": 1}},
		{name: "organization not enforced", tool: toolspec.HandoffTicket, args: handoff(map[string]any{"owner": "elsewhere", "intent": "lock"}), want: "has no project ralph-gate enforces", replay: ok},
		{name: "no owner among several", tool: toolspec.GetWorkflowState, args: map[string]any{"number": 1}, want: "No owner was given", replay: ok,
			setup: func(_ *testing.T, f *fixture) {
				f.opts.Projects = append(f.opts.Projects, enforce.ProjectRef{Owner: "globex", Number: 7})
			}},
		{name: "no repo and no default", tool: toolspec.AdvanceChildren, args: map[string]any{"number": 6, "targetState": "Ready for Plan"}, want: "No repo was given", replay: ok,
			hints: map[string]any{"repo": "app"}, setup: func(_ *testing.T, f *fixture) { f.opts.DefaultRepo = "" }},
		{name: "issue not found", tool: toolspec.GetWorkflowState, args: map[string]any{"number": 77}, want: "was not found", replay: none},
		{name: "issue on several projects", tool: toolspec.HandoffTicket, args: handoff(map[string]any{"number": 11, "intent": "lock"}), want: "is on several enforced projects", replay: ok},
		{name: "issue not on that project", tool: toolspec.GetWorkflowState, args: map[string]any{"number": 1, "project": 2}, want: "is not on project 2", replay: ok},
		// detect_pipeline_position.
		{name: "stream count out of range", tool: toolspec.DetectPipelinePosition, args: map[string]any{"number": 1, "streamCount": 500}, want: "Invalid streamCount", replay: ok,
			hints: map[string]any{"streamCount": 2}},
		{name: "a group member in an unknown state", tool: toolspec.DetectPipelinePosition, args: map[string]any{"number": 9}, want: `#9 of the group is in "Bogus"`, replay: none},
		{name: "not an issue", tool: toolspec.DetectPipelinePosition, args: map[string]any{"number": 12}, want: "It is not an issue", replay: none},
		{name: "a blockedBy cycle", tool: toolspec.DetectPipelinePosition, args: map[string]any{"number": 14}, want: "form a cycle", replay: none,
			setup: func(_ *testing.T, f *fixture) {
				f.board.blockers[issue(14, "").ContentID] = []string{issue(15, "").ContentID}
				f.board.blockers[issue(15, "").ContentID] = []string{issue(14, "").ContentID}
			}},
		// check_convergence and advance_children.
		{name: "unknown convergence target", tool: toolspec.CheckConvergence, args: map[string]any{"number": 1, "targetState": "Bogus"}, want: `Unknown target state "Bogus"`, replay: ok},
		{name: "convergence target off the pipeline", tool: toolspec.CheckConvergence, args: map[string]any{"number": 1, "targetState": "Human Needed"}, want: "is off the pipeline", replay: ok},
		{name: "blank convergence target", tool: toolspec.CheckConvergence, args: map[string]any{"number": 1, "targetState": " "}, want: "Invalid targetState", replay: ok,
			hints: map[string]any{"targetState": "Ready for Plan"}},
		{name: "unknown advance target", tool: toolspec.AdvanceChildren, args: map[string]any{"number": 6, "targetState": "Bogus"}, want: `Unknown target state "Bogus"`, replay: ok},
		{name: "advance target off the pipeline", tool: toolspec.AdvanceChildren, args: map[string]any{"number": 6, "targetState": "Canceled"}, want: "is off the pipeline", replay: ok},
		{name: "children ahead of their parent", tool: toolspec.AdvanceChildren, args: map[string]any{"number": 6, "targetState": "In Progress"}, want: "children never get ahead", replay: ok},
		{name: "parent off the pipeline", tool: toolspec.AdvanceChildren, args: map[string]any{"number": 13, "targetState": "Backlog"}, want: "off the pipeline, so its children", replay: none},
		// pick_actionable_issue.
		{name: "unknown workflowState", tool: toolspec.PickActionableIssue, args: map[string]any{"workflowState": "Nowhere"}, want: `Unknown workflow state "Nowhere"`, replay: ok},
		{name: "unknown maxEstimate", tool: toolspec.PickActionableIssue, args: map[string]any{"workflowState": "Backlog", "maxEstimate": "XXL"}, want: `Unknown maxEstimate "XXL"`, replay: ok},
		{name: "blank workflowState", tool: toolspec.PickActionableIssue, args: map[string]any{"workflowState": ""}, want: "Invalid workflowState", replay: ok,
			hints: map[string]any{"workflowState": "Research Needed"}},
		{name: "claim without command", tool: toolspec.PickActionableIssue, args: map[string]any{"workflowState": "Research Needed", "claim": true}, want: "Invalid command", replay: ok,
			hints: map[string]any{"command": "research"}},
		{name: "claim with an unknown command", tool: toolspec.PickActionableIssue, args: map[string]any{"workflowState": "Research Needed", "claim": true, "command": "fly"},
			want: `Unknown command "fly"`, replay: refused},
		{name: "claim with a command the agent may not use", tool: toolspec.PickActionableIssue, agent: "researcher",
			args: map[string]any{"workflowState": "Research Needed", "claim": true, "command": "impl"}, want: "may only use the commands research", replay: ok},
		{name: "claim with a command without a lock", tool: toolspec.PickActionableIssue, args: map[string]any{"workflowState": "Research Needed", "claim": true, "command": "triage"},
			want: "triage has none", replay: ok},
		{name: "claim where the lock cannot be entered", tool: toolspec.PickActionableIssue, args: map[string]any{"workflowState": "Backlog", "claim": true, "command": "research"},
			want: "an agent may not move an issue from Backlog to Research in Progress", replay: ok},
		{name: "project not enforced", tool: toolspec.PickActionableIssue, args: map[string]any{"workflowState": "Backlog", "project": 9}, want: "is not enforced", replay: ok},
		{name: "pick in an organization not enforced", tool: toolspec.PickActionableIssue, args: map[string]any{"workflowState": "Backlog", "owner": "elsewhere"}, want: "has no project ralph-gate enforces", replay: ok},
		// Arguments the input schema rejects, in the same form.
		{name: "missing reason", tool: toolspec.HandoffTicket, args: map[string]any{"number": 1, "command": "research", "intent": "lock"}, want: "handoff_ticket: argument `reason` is missing", replay: ok,
			hints: map[string]any{"reason": "mine"}},
		{name: "number as a string", tool: toolspec.HandoffTicket, args: handoff(map[string]any{"number": "1", "intent": "lock"}), want: "handoff_ticket: argument `number` must be an integer, got a string (\"1\")", replay: ok},
		{name: "number with a fraction", tool: toolspec.GetWorkflowState, args: map[string]any{"number": 1.5}, want: "must be an integer, got a number (1.5)", replay: ok, hints: map[string]any{"number": 1}},
		{name: "state for to_state", tool: toolspec.HandoffTicket, args: handoff(map[string]any{"state": "Research in Progress"}), want: "handoff_ticket: unknown argument `state`", replay: ok},
		{name: "an argument no tool has", tool: toolspec.HandoffTicket, args: handoff(map[string]any{"intent": "lock", "extra": 1}), want: "unknown argument `extra`", replay: ok},
		{name: "null intent", tool: toolspec.HandoffTicket, args: handoff(map[string]any{"intent": nil, "to_state": "Research in Progress"}), want: "must be a string, got null", replay: ok},
		{name: "missing command", tool: toolspec.HandoffTicket, args: map[string]any{"number": 1, "intent": "lock", "reason": "r"}, want: "argument `command` is missing", replay: refused},
		{name: "claim as a string", tool: toolspec.PickActionableIssue, args: map[string]any{"workflowState": "Research Needed", "claim": "yes", "command": "research"}, want: "must be a boolean", replay: ok},
		{name: "state for workflowState", tool: toolspec.PickActionableIssue, args: map[string]any{"state": "Research Needed"}, want: "unknown argument `state`", replay: ok},
		{name: "missing targetState", tool: toolspec.CheckConvergence, args: map[string]any{"number": 1}, want: "argument `targetState` is missing", replay: ok},
		// Another tool's name, or an API's, for an argument: the argument meant, with the value.
		{name: "issue for number", tool: toolspec.GetWorkflowState, args: map[string]any{"issue": 3}, want: "Recovery: retry with number 3 instead of issue", replay: ok},
		{name: "issue_number for number", tool: toolspec.HandoffTicket, args: map[string]any{"issue_number": "#1", "command": "research", "intent": "lock", "reason": "r"},
			want: "Recovery: retry with number 1 instead of issue_number", replay: ok},
		{name: "to_state for targetState", tool: toolspec.CheckConvergence, args: map[string]any{"number": 1, "to_state": "Ready for Plan"},
			want: `Recovery: retry with targetState "Ready for Plan" instead of to_state`, replay: ok},
		{name: "state for targetState", tool: toolspec.AdvanceChildren, args: map[string]any{"number": 6, "state": "Ready for Plan"},
			want: `Recovery: retry with targetState "Ready for Plan" instead of state`, replay: ok},
		{name: "owner/number for board_health's project", tool: toolspec.BoardHealth, args: map[string]any{"project": "acme/1"},
			want: "Recovery: retry with project 1", replay: ok},
		{name: "board_health's project not enforced", tool: toolspec.BoardHealth, args: map[string]any{"project": 2},
			want: "Project 2 is not enforced", replay: ok},
		{name: "an argument describe_workflow does not take", tool: toolspec.DescribeWorkflow, args: map[string]any{"verbose": true}, want: "describe_workflow: unknown argument `verbose`", replay: ok},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixtureSpec(t, tt.edit, recoveryBoard()...)
			f.board.blockers[issue(5, "").ContentID] = []string{issue(2, "").ContentID}
			f.board.children[issue(6, "").ContentID] = []string{issue(7, "").ContentID, issue(8, "").ContentID}
			if tt.setup != nil {
				tt.setup(t, f)
			}
			agent := tt.agent
			if agent == "" {
				agent = "agent-1"
			}
			cs := f.session(agent)
			sp := specOf(t, tt.tool)
			msg := call(t, cs, tt.tool, tt.args)
			if !strings.Contains(msg, tt.want) {
				t.Fatalf("want a tool error containing %q, got %q", tt.want, msg)
			}
			if strings.Count(msg, ". Recovery: ") != 1 || strings.Contains(msg, "validating") {
				t.Fatalf("not in the three-part form: %q", msg)
			}
			if m := lowerSentence.FindString(msg); m != "" {
				t.Errorf("a sentence starts in lower case (%q): %s", m, msg)
			}
			t.Log(msg)
			rec := parseRecovery(t, msg)
			checkRecovery(t, sp, msg, rec)
			if tt.replay == none {
				if len(rec.with) > 0 || len(rec.drop) > 0 {
					t.Fatalf("the Recovery suggests arguments (%+v), the case expects none: %s", rec, msg)
				}
				return
			}
			if len(rec.with) == 0 && len(rec.drop) == 0 {
				t.Fatalf("the Recovery suggests no arguments: %s", msg)
			}
			again := replay(t, sp, tt.args, rec, tt.hints)
			got := call(t, cs, tt.tool, again)
			switch {
			case argumentError(tt.tool, got):
				t.Fatalf("the retry %v the Recovery asks for is rejected for its arguments: %s\n(first answer: %s)", again, got, msg)
			case tt.replay == ok && got != "":
				t.Fatalf("the retry %v the Recovery asks for failed: %s\n(first answer: %s)", again, got, msg)
			case tt.replay == refused && got == "":
				t.Fatalf("the retry %v succeeded; the case expects a refusal", again)
			}
		})
	}
}

// lowerSentence finds a sentence of a refusal that starts with an ordinary word in lower case.
var lowerSentence = regexp.MustCompile(`\. (the|it|a|an|got|no|only|each|every|this|its|there|children|integers|one|both|neither)\b`)

// lockedBy makes agent hold the lock of issue n (Research Needed → Research in Progress).
func lockedBy(agent string, n int) func(*testing.T, *fixture) {
	return func(t *testing.T, f *fixture) {
		t.Helper()
		if msg := call(t, f.session(agent), toolspec.HandoffTicket, map[string]any{"number": n, "command": "research", "intent": "lock", "reason": "mine"}); msg != "" {
			t.Fatal(msg)
		}
	}
}

// TestBadArguments sends every tool each kind of malformed argument — a value of the wrong
// type for each argument, each required argument missing, an argument it does not have — and
// checks the answer is a tool error in the three-part form that names the tool and the
// argument, never the schema validator's text, and that its Recovery is a retry the schema
// accepts.
func TestBadArguments(t *testing.T) {
	f := newFixture(t, issue(1, "Research Needed"), issue(2, "Backlog"))
	cs := f.session("agent-1")
	valid := map[string]map[string]any{
		toolspec.HandoffTicket:          {"number": 1, "command": "research", "intent": "lock", "reason": "r"},
		toolspec.GetWorkflowState:       {"number": 1},
		toolspec.DetectPipelinePosition: {"number": 1},
		toolspec.CheckConvergence:       {"number": 1, "targetState": "Ready for Plan"},
		toolspec.AdvanceChildren:        {"number": 1, "targetState": "Research Needed"},
		toolspec.PickActionableIssue:    {"workflowState": "Research Needed"},
		toolspec.DescribeWorkflow:       {},
		toolspec.BoardHealth:            {"project": 1},
	}
	hints := map[string]any{"number": 1, "reason": "r", "streamCount": 1, "project": 1, "repo": "app", "owner": "acme"}
	type badCase struct {
		name string
		args map[string]any
		want string
	}
	for _, sp := range toolspec.Tools() {
		base, ok := valid[sp.Name]
		if !ok {
			t.Fatalf("no valid call for %s", sp.Name)
		}
		if msg := call(t, cs, sp.Name, base); msg != "" && argumentError(sp.Name, msg) {
			t.Fatalf("%s: the valid call is rejected: %s", sp.Name, msg)
		}
		var cases []badCase
		for _, a := range sp.Arguments() {
			var wrong any = "x"
			want := "must be an integer, got a string"
			switch a.Type {
			case "string":
				wrong, want = []string{"x"}, "must be a string, got an array"
			case "boolean":
				want = "must be a boolean, got a string"
			}
			cases = append(cases, badCase{"wrong type " + a.Name, with(base, a.Name, wrong), "argument `" + a.Name + "` " + want})
			if a.Type == "integer" {
				cases = append(cases, badCase{"integer as a string " + a.Name, with(base, a.Name, "3"), "argument `" + a.Name + "` must be an integer, got a string"})
			}
			if a.Required {
				args := maps.Clone(base)
				delete(args, a.Name)
				cases = append(cases, badCase{"missing " + a.Name, args, "argument `" + a.Name + "` is missing"})
			}
		}
		cases = append(cases, badCase{"unknown argument", with(base, "colour", "blue"), "unknown argument `colour`"})
		for _, tc := range cases {
			t.Run(sp.Name+"/"+tc.name, func(t *testing.T) {
				msg := call(t, cs, sp.Name, tc.args)
				if !strings.HasPrefix(msg, sp.Name+": ") || !strings.Contains(msg, tc.want) || strings.Count(msg, ". Recovery: ") != 1 {
					t.Fatalf("want %q in the three-part form, got %q", tc.want, msg)
				}
				for _, raw := range []string{"validating", "missing properties", "unexpected additional", "unmarshal"} {
					if strings.Contains(msg, raw) {
						t.Fatalf("the validator's text leaks: %q", msg)
					}
				}
				rec := parseRecovery(t, msg)
				checkRecovery(t, sp, msg, rec)
				if len(rec.with) == 0 && len(rec.drop) == 0 {
					t.Fatalf("the Recovery suggests no retry: %s", msg)
				}
				again := replay(t, sp, tc.args, rec, hints)
				if got := call(t, cs, sp.Name, again); argumentError(sp.Name, got) {
					t.Fatalf("the retry %v is rejected for its arguments: %s\n(first answer: %s)", again, got, msg)
				}
			})
		}
	}
}

func with(args map[string]any, k string, v any) map[string]any {
	out := maps.Clone(args)
	out[k] = v
	return out
}

// The SDK's own argument errors, should the check let one through, are wrapped the same way;
// the tools' refusals pass as they are.
func TestSchemaRefusal(t *testing.T) {
	sp := specOf(t, toolspec.HandoffTicket)
	r := schemaRefusal(sp, json.Unmarshal([]byte(`{`), new(any)))
	if !strings.HasPrefix(r.Error(), "handoff_ticket: the arguments do not match the tool's input schema. ") ||
		!strings.Contains(r.Recovery, "number (integer, required)") || !strings.Contains(r.Recovery, "to_state (string)") {
		t.Errorf("%s", r.Error())
	}
	f := newFixture(t)
	s := &server{opts: f.opts}
	specs := map[string]toolspec.Spec{sp.Name: sp}
	refusal := &policy.Refusal{Tried: "t", Why: "w", Recovery: "r"}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"the validator's text", errors.New(`validating "arguments": validating root: unexpected additional properties ["x"]`), "handoff_ticket: the arguments do not match the tool's input schema. Validating"},
		{"a refusal", refusal, "T. W. Recovery: r"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := func(context.Context, string, mcp.Request) (mcp.Result, error) {
				res := &mcp.CallToolResult{}
				res.SetError(tc.err)
				return res, nil
			}
			req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: sp.Name, Arguments: json.RawMessage(`{"number":1,"command":"research","reason":"r"}`)}}
			res, err := s.checkArguments(specs)(next)(context.Background(), "tools/call", req)
			tr, ok := res.(*mcp.CallToolResult)
			if err != nil || !ok || !tr.IsError || !strings.HasPrefix(tr.Content[0].(*mcp.TextContent).Text, tc.want) {
				t.Fatalf("%+v %v", res, err)
			}
		})
	}
}

// values lists every value a Recovery suggests, argument by argument, as an agent reads it:
// `with intent lock (→ A) or complete (→ B), or with to_state "A" or "B"` gives intent lock,
// intent complete, to_state "A", to_state "B"; and the states its "other commands you may use
// move it to" names, with their commands.
func values(msg string) (with []suggestion, others [][2]string) {
	_, rec, _ := strings.Cut(msg, "Recovery: ")
	rec, tail, _ := strings.Cut(rec, "; other commands you may use move it to ")
	value := regexp.MustCompile(`^(?:"(?:[^"\\]|\\.)*"|[A-Za-z_][\w.-]*)(?: \(→ [^)]*\))?`)
	for _, loc := range regexp.MustCompile(`with ([A-Za-z_]\w*) `).FindAllStringSubmatchIndex(rec, -1) {
		arg, rest := rec[loc[2]:loc[3]], rec[loc[1]:]
		for {
			v := value.FindString(rest)
			if v == "" || strings.HasPrefix(rest, "set to ") {
				break
			}
			word, _, _ := strings.Cut(v, " (→")
			with = append(with, suggestion{arg: arg, value: word})
			rest = rest[len(v):]
			if strings.HasPrefix(rest, ", or with") || !strings.HasPrefix(rest, ", ") && !strings.HasPrefix(rest, " or ") {
				break
			}
			rest = strings.TrimPrefix(strings.TrimPrefix(rest, ", "), " or ")
		}
	}
	for _, m := range regexp.MustCompile(`"((?:[^"\\]|\\.)*)" \(([a-z_]+(?:(?:, | or )[a-z_]+)*)\)`).FindAllStringSubmatch(tail, -1) {
		for _, cmd := range regexp.MustCompile(`, | or `).Split(m[2], -1) {
			others = append(others, [2]string{cmd, m[1]})
		}
	}
	return with, others
}

// refusedAgain: the message refuses a handoff for a reason of the table, the agent's kind,
// its role or its command's resolution — what a Recovery's values must never run into.
var refusedAgain = regexp.MustCompile(`is not a transition|is for humans only|is not allowed: an item with no state|may not move an item|is not a valid output|is not defined for|Unknown (state|intent|command)|is ambiguous|Neither intent|Both intent|may only use the commands|no move out of`)

// TestHandoffRecoveryFollowsTheItemsState: for an issue in every state of the default workflow
// and every to_state, through a real MCP client, a refused handoff_ticket suggests only what
// the agent may do from the issue's state — its kind, role and commands — and each value it
// suggests (every one, and each "other command"), retried as written on an issue in the same
// state, is not refused again by the table, the agent's kind, its role or its command.
func TestHandoffRecoveryFollowsTheItemsState(t *testing.T) {
	states := policy.DefaultMachine().States()
	type agent struct {
		name, command string
		roles         bool
	}
	agents := []agent{{"agent-1", "research", false}, {"agent-1", "triage", false}, {"researcher", "research", false}, {"researcher", "research", true}}
	followed := 0
	for _, ag := range agents {
		for _, from := range states {
			t.Run(fmt.Sprintf("%s %s roles=%v from %s", ag.name, ag.command, ag.roles, from), func(t *testing.T) {
				var f *fixture
				if ag.roles {
					f = newRolesFixture(t)
				} else {
					f = newFixture(t)
				}
				cs := f.session(ag.name)
				next := 0
				fresh := func() int { // a new issue in `from`
					next++
					f.board.mu.Lock()
					it := issue(next, from)
					f.board.items[it.ID] = it
					f.board.mu.Unlock()
					return next
				}
				for _, to := range states {
					args := map[string]any{"number": fresh(), "command": ag.command, "to_state": to, "reason": "r"}
					msg := call(t, cs, toolspec.HandoffTicket, args)
					if msg == "" {
						continue
					}
					if from == "Research Needed" && to == "Done" && (strings.Contains(msg, "close") || strings.Contains(msg, "cancel")) {
						t.Errorf("the friction: close or cancel offered from Research Needed: %s", msg)
					}
					with, others := values(msg)
					for _, w := range with {
						again := maps.Clone(args)
						again["number"] = fresh()
						delete(again, "intent")
						delete(again, "to_state")
						v := w.value
						if uq, err := strconv.Unquote(v); err == nil {
							v = uq
						}
						again[w.arg] = v
						followed++
						if got := call(t, cs, toolspec.HandoffTicket, again); refusedAgain.MatchString(got) {
							t.Errorf("the Recovery suggests %s %s, refused again: %s\n(first: %s)", w.arg, w.value, got, msg)
						}
					}
					for _, o := range others {
						again := map[string]any{"number": fresh(), "command": o[0], "to_state": o[1], "reason": "r"}
						followed++
						if got := call(t, cs, toolspec.HandoffTicket, again); refusedAgain.MatchString(got) {
							t.Errorf("the Recovery says %s moves it to %q, refused again: %s\n(first: %s)", o[0], o[1], got, msg)
						}
					}
				}
			})
		}
	}
	if followed < 300 {
		t.Fatalf("only %d suggested retries were followed", followed)
	}
	t.Logf("%d suggested retries followed", followed)
}
