package toolspec

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/ralph-gate/ralph-gate/policy"
)

func tool(t testing.TB, name string) Spec {
	t.Helper()
	for _, s := range Tools() {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no tool %s", name)
	return Spec{}
}

func TestArguments(t *testing.T) {
	got := tool(t, HandoffTicket).Arguments()
	want := []Argument{
		{Name: "owner", Type: "string", MaxRunes: 256}, {Name: "repo", Type: "string", MaxRunes: 256}, {Name: "number", Type: "integer", Required: true},
		{Name: "project", Type: "integer"}, {Name: "command", Type: "string", Required: true, MaxRunes: 256}, {Name: "intent", Type: "string", MaxRunes: 256},
		{Name: "to_state", Type: "string", MaxRunes: 256}, {Name: "reason", Type: "string", Required: true, MaxRunes: 10000}, {Name: "take_over", Type: "boolean"},
	}
	if len(got) != len(want) {
		t.Fatalf("%+v", got)
	}
	for i := range want {
		got[i].Description = ""
		if got[i] != want[i] {
			t.Errorf("argument %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if a := tool(t, PickActionableIssue).Arguments(); a[4].Name != "claim" || a[4].Type != "boolean" {
		t.Errorf("%+v", a[4])
	}
	if len(tool(t, DescribeWorkflow).Arguments()) != 0 {
		t.Error("describe_workflow takes no arguments")
	}
}

func TestCheckArguments(t *testing.T) {
	commands := func(arg string) []string {
		if arg == "command" {
			return []string{"research", "plan"}
		}
		return nil
	}
	tests := []struct {
		tool, args string
		want       string // the whole message; "" = well-formed
	}{
		{HandoffTicket, `{"number":1,"command":"research","intent":"lock","reason":"r"}`, ""},
		{PickActionableIssue, `{"workflowState":"Backlog","claim":true,"project":2}`, ""},
		{DescribeWorkflow, ``, ""},
		{DescribeWorkflow, `null`, ""},
		{HandoffTicket, `{"number":"5","command":"research","reason":"r"}`,
			"handoff_ticket: argument `number` must be an integer, got a string (\"5\"). `number`: The issue's number. Recovery: retry with number 5"},
		{HandoffTicket, `{"number":5.0,"command":"research","reason":"r"}`, "must be an integer, got a number (5.0). `number`: The issue's number. Recovery: retry with number 5"},
		{HandoffTicket, `{"number":1e3,"command":"research","reason":"r"}`, "Recovery: retry with number 1000"},
		{HandoffTicket, `{"number":99999999999999999999,"command":"research","reason":"r"}`, "argument `number` is out of range, got a number (99999999999999999999). Integers are exact only up to 9007199254740991; `number`: The issue's number. Recovery: retry with number set to the issue's number"},
		// Beyond 2^53 a JSON reader rounds (…993 would be read as …992): refused, not rounded.
		{HandoffTicket, `{"number":9007199254740993,"command":"research","reason":"r"}`, "argument `number` is out of range, got an integer (9007199254740993)"},
		{HandoffTicket, `{"number":-9007199254740993,"command":"research","reason":"r"}`, "is out of range"},
		{HandoffTicket, `{"number":9007199254740991,"command":"research","reason":"r"}`, ""},
		{HandoffTicket, `{"number":1,"command":"research"}`,
			"handoff_ticket: argument `reason` is missing. `reason` is required: Why you are moving the issue, one or two sentences; posted in the audit comment on the issue. Recovery: retry with reason set to why you are moving the issue, one or two sentences"},
		{HandoffTicket, `{"number":1,"reason":"r"}`, "argument `command` is missing. `command` is required: The command you are running, bare or ralph_-prefixed: research or ralph_research, plan, impl, review, ... Recovery: retry with command \"research\" or \"plan\""},
		{HandoffTicket, `{"number":1,"command":"research","reason":"r","state":"Done"}`,
			"handoff_ticket: unknown argument `state`. handoff_ticket takes owner, repo, number (required), project, command (required), intent, to_state, reason (required), take_over. Recovery: retry with to_state \"Done\" instead of state"},
		{HandoffTicket, `{"number":1,"command":"research","reason":"r","state":"Done","to_state":"Done"}`, "Recovery: retry without state"},
		// An alias of an argument: the argument it stands for, with its value, in its place.
		{GetWorkflowState, `{"issue":3}`, "get_workflow_state: unknown argument `issue`. get_workflow_state takes owner, repo, number (required), project. Recovery: retry with number 3 instead of issue"},
		{GetWorkflowState, `{"issue_number":"3"}`, "Recovery: retry with number 3 instead of issue_number"},
		{GetWorkflowState, `{"issueNumber":"#3"}`, "Recovery: retry with number 3 instead of issueNumber"},
		{DetectPipelinePosition, `{"id":3}`, "Recovery: retry with number 3 instead of id"},
		{GetWorkflowState, `{"issue":"the third"}`, "Recovery: retry with number set to the issue's number instead of issue"},
		{GetWorkflowState, `{"issue":3,"number":3}`, "Recovery: retry without issue"},
		{GetWorkflowState, `{"number":3,"org":"acme"}`, "Recovery: retry with owner \"acme\" instead of org"},
		{GetWorkflowState, `{"number":3,"repository":"app"}`, "Recovery: retry with repo \"app\" instead of repository"},
		{GetWorkflowState, `{"number":3,"project_number":1}`, "Recovery: retry with project 1 instead of project_number"},
		{CheckConvergence, `{"number":1,"to_state":"Ready for Plan"}`, "check_convergence: unknown argument `to_state`. check_convergence takes owner, repo, number (required), project, targetState (required). Recovery: retry with targetState \"Ready for Plan\" instead of to_state"},
		{CheckConvergence, `{"number":1,"toState":"Ready for Plan"}`, "Recovery: retry with targetState \"Ready for Plan\" instead of toState"},
		{AdvanceChildren, `{"number":1,"state":"Ready for Plan"}`, "Recovery: retry with targetState \"Ready for Plan\" instead of state"},
		{HandoffTicket, `{"number":1,"command":"research","reason":"r","target_state":"Done"}`, "Recovery: retry with to_state \"Done\" instead of target_state"},
		{HandoffTicket, `{"number":1,"command":"research","reason":"r","status":"Done"}`, "Recovery: retry with to_state \"Done\" instead of status"},
		{HandoffTicket, `{"issue":1,"command":"research","reason":"r","intent":"lock"}`, "Recovery: retry with number 1 instead of issue"},
		{HandoffTicket, `{"number":1,"cmd":"research","reason":"r","intent":"lock"}`, "Recovery: retry with command \"research\" instead of cmd"},
		{HandoffTicket, `{"number":1,"command":"research","comment":"r","intent":"lock"}`, "Recovery: retry with reason \"r\" instead of comment"},
		{PickActionableIssue, `{"status":"Backlog"}`, "Recovery: retry with workflowState \"Backlog\" instead of status"},
		{PickActionableIssue, `{"workflowState":"Backlog","estimate":"M"}`, "Recovery: retry with maxEstimate \"M\" instead of estimate"},
		{BoardHealth, `{"project_number":3}`, "Recovery: retry with project 3 instead of project_number"},
		{BoardHealth, `{"organization":"acme"}`, "Recovery: retry with owner \"acme\" instead of organization"},
		{BoardHealth, `{"project":"3"}`, "board_health: argument `project` must be an integer, got a string (\"3\"). `project`: One enforced project's number (e.g. 3). Omit for every enforced project. Recovery: retry with project 3"},
		{BoardHealth, `{"project":1,"owner":"acme"}`, ""},
		{HandoffTicket, `{"Number":1,"command":"research","reason":"r"}`, "unknown argument `Number`. handoff_ticket takes owner, repo, number (required), project, command (required), intent, to_state, reason (required), take_over. Recovery: retry with number 1 instead of Number"},
		{CheckConvergence, `{"number":1,"target_state":"Done"}`, "Recovery: retry with targetState \"Done\" instead of target_state"},
		{PickActionableIssue, `{"workflowState":"Backlog","claim":"true"}`, "argument `claim` must be a boolean, got a string (\"true\")"},
		{PickActionableIssue, `{"workflowState":"Backlog","claim":1}`, "Recovery: retry with claim true or false"},
		{HandoffTicket, `{"number":1,"command":"research","reason":"r","intent":null}`, "argument `intent` must be a string, got null"},
		{HandoffTicket, `{"number":1,"command":["research"],"reason":"r"}`, "argument `command` must be a string, got an array. `command`: The command you are running"},
		{HandoffTicket, `{"number":1,"command":7,"reason":"r"}`, "Recovery: retry with command \"7\""},
		{HandoffTicket, `[1]`, "handoff_ticket: the arguments are not a JSON object. Got an array. Recovery: retry with the arguments as one JSON object, e.g. {\"number\": …, \"command\": …, \"reason\": …}"},
		{DescribeWorkflow, `{"verbose":true}`, "describe_workflow: unknown argument `verbose`. describe_workflow takes no arguments. Recovery: retry without verbose"},
		{GetWorkflowState, `{"number":1,"long":"` + strings.Repeat("x", 100) + `"}`, "unknown argument `long`"},
		// A string beyond its bound is refused, quoting only its beginning.
		{GetWorkflowState, `{"number":1,"repo":"` + strings.Repeat("r", 1<<20) + `"}`,
			"get_workflow_state: argument `repo` is too long: 1048576 characters, at most 256. Got a string (\"" + strings.Repeat("r", 39) + "…); `repo`: Repository name"},
		{GetWorkflowState, `{"number":1,"repo":"` + strings.Repeat("é", 256) + `"}`, ""},
		{HandoffTicket, `{"number":1,"command":"research","reason":"` + strings.Repeat("r", 10000) + `"}`, ""},
		{HandoffTicket, `{"number":1,"command":"research","reason":"` + strings.Repeat("r", 10001) + `"}`, "argument `reason` is too long: 10001 characters, at most 10000"},
	}
	for _, tt := range tests {
		t.Run(tt.tool+" "+tt.args[:min(len(tt.args), 80)], func(t *testing.T) {
			err := tool(t, tt.tool).CheckArguments(json.RawMessage(tt.args), commands)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("unexpected %v", err)
				}
				return
			}
			var r *policy.Refusal
			if !errors.As(err, &r) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got  %v\nwant %s", err, tt.want)
			}
		})
	}
	if err := tool(t, GetWorkflowState).CheckArguments(json.RawMessage(`{"number":"x"}`), nil); err == nil || !strings.Contains(err.Error(), "retry with number set to the issue's number") {
		t.Errorf("no values: %v", err)
	}
}

// FuzzCheckArguments: whatever arguments pass the check decode into the tool's input type,
// as the SDK decodes them (no unknown field, every value of its type); what fails is a
// refusal with a Recovery.
func FuzzCheckArguments(f *testing.F) {
	for _, s := range []string{`{"number":1,"command":"research","intent":"lock","reason":"go"}`, `{"number":"1"}`, `{"number":1.5}`, `null`, `[]`,
		`{"workflowState":"Backlog","claim":true}`, `{"x":1}`, `{"number":1,"streamCount":2,"autoMode":false}`, `{"number":-0}`, `{"number":1e2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		for _, sp := range Tools() {
			err := sp.CheckArguments(data, nil)
			if err != nil {
				if !strings.Contains(err.Error(), ". Recovery: ") {
					t.Fatalf("%s: error without Recovery: %v", sp.Name, err)
				}
				continue
			}
			in := reflect.New(reflect.TypeOf(sp.Input)).Interface()
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.DisallowUnknownFields()
			if string(bytes.TrimSpace(data)) == "null" {
				continue
			}
			if err := dec.Decode(in); err != nil {
				t.Fatalf("%s: %s passed the check but does not decode: %v", sp.Name, data, err)
			}
		}
	})
}

// TestAliases: every alias names one argument of its tool, is no argument of the tool itself,
// and no two aliases of a tool that read alike (in case and separators) name different
// arguments; the lists of spec.go reach the tools they are meant for.
func TestAliases(t *testing.T) {
	norm := func(n string) string { return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(n)) }
	for _, sp := range Tools() {
		args := map[string]bool{}
		for _, a := range sp.Arguments() {
			args[a.Name] = true
		}
		byNorm := map[string]string{}
		for alias, arg := range sp.Aliases {
			if !args[arg] {
				t.Errorf("%s: alias %s names %s, which is not an argument", sp.Name, alias, arg)
			}
			for a := range args {
				if norm(a) == norm(alias) {
					t.Errorf("%s: alias %s reads as the argument %s", sp.Name, alias, a)
				}
			}
			if other, ok := byNorm[norm(alias)]; ok && other != arg {
				t.Errorf("%s: alias %s names %s and %s", sp.Name, alias, arg, other)
			}
			byNorm[norm(alias)] = arg
		}
	}
	for _, tc := range []struct{ tool, alias, arg string }{
		{GetWorkflowState, "issue", "number"}, {HandoffTicket, "issue_number", "number"}, {HandoffTicket, "state", "to_state"},
		{HandoffTicket, "target_state", "to_state"}, {CheckConvergence, "to_state", "targetState"}, {CheckConvergence, "state", "targetState"},
		{AdvanceChildren, "to_state", "targetState"}, {PickActionableIssue, "state", "workflowState"}, {BoardHealth, "project_number", "project"},
		{DetectPipelinePosition, "id", "number"},
	} {
		if got := tool(t, tc.tool).Aliases[tc.alias]; got != tc.arg {
			t.Errorf("%s: alias %s names %q, want %s", tc.tool, tc.alias, got, tc.arg)
		}
	}
	if len(tool(t, DescribeWorkflow).Aliases) != 0 {
		t.Error("describe_workflow takes no arguments, so it has no aliases")
	}
	if _, ok := tool(t, HandoffTicket).Aliases["to_state"]; ok {
		t.Error("an argument of the tool is not its alias")
	}
}
