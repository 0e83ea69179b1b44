package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/mcpserver/toolspec"
	"github.com/ralph-gate/ralph-gate/policy"
)

// spelling is how a tool names the arguments a refusal's Recovery asks for (policy.Arg roles
// and the façade's own): handoff_ticket's direct state is to_state, check_convergence's target
// is targetState. A role the tool does not rename keeps its name (command, intent, project, …).
func spelling(tool string) func(policy.Arg) string {
	names := map[policy.Arg]string{}
	switch tool {
	case toolspec.HandoffTicket:
		names[policy.ArgState] = "to_state"
	case toolspec.CheckConvergence, toolspec.AdvanceChildren:
		names[policy.ArgTarget] = "targetState"
	case toolspec.PickActionableIssue:
		names[enforce.ArgPickState] = "workflowState"
		names[policy.ArgEstimate] = "maxEstimate"
	}
	return func(a policy.Arg) string { return names[a] }
}

// checkArguments is a receiving middleware that checks every tool call's arguments before the
// SDK validates them against the tool's input schema, so a bad call (a missing reason,
// "number": "5", an argument the tool does not have) is a tool error in the façade's
// three-part form naming the tool's real arguments, not the schema validator's text. Should
// the SDK still reject arguments this check let through, its message is wrapped the same way.
func (s *server) checkArguments(specs map[string]toolspec.Spec) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			call, ok := req.(*mcp.CallToolRequest)
			if !ok || call.Params == nil {
				return next(ctx, method, req)
			}
			sp, known := specs[call.Params.Name]
			if !known {
				return next(ctx, method, req)
			}
			caller := s.callerOf(req)
			in := s.as(caller)
			agent := in.agent(caller)
			if err := sp.CheckArguments(call.Params.Arguments, func(arg string) []string { return in.argumentValues(arg, agent) }); err != nil {
				res := &mcp.CallToolResult{}
				res.SetError(ruled(err, policy.RuleArguments))
				return res, nil
			}
			res, err := next(ctx, method, req)
			if tr, ok := res.(*mcp.CallToolResult); ok && err == nil && tr.IsError {
				var refusal *policy.Refusal
				if e := tr.GetError(); e != nil && !errors.As(e, &refusal) {
					wrapped := &mcp.CallToolResult{}
					wrapped.SetError(schemaRefusal(sp, e))
					return wrapped, nil
				}
			}
			return res, err
		}
	}
}

// schemaRefusal wraps an argument error of the SDK (its schema validation, or decoding the
// arguments) in the three-part form, listing the tool's arguments.
func schemaRefusal(sp toolspec.Spec, err error) *policy.Refusal {
	var args []string
	for _, a := range sp.Arguments() {
		n := fmt.Sprintf("%s (%s", a.Name, a.Type)
		if a.Required {
			n += ", required"
		}
		args = append(args, n+")")
	}
	list := "no arguments"
	if len(args) > 0 {
		list = strings.Join(args, ", ")
	}
	return &policy.Refusal{Tried: sp.Name + ": the arguments do not match the tool's input schema", Why: err.Error(),
		Recovery: "retry with only these arguments, each of its type: " + list, Options: []string{}, Rule: policy.RuleArguments}
}

// argumentValues are an argument's valid values where the façade knows them, for Recovery
// lines; nil otherwise.
func (s *server) argumentValues(arg string, agent Agent) []string {
	m := s.opts.Facade.Machine()
	switch arg {
	case "command":
		cmds := m.Commands()
		if len(agent.Commands) > 0 {
			cmds = []string{}
			for _, c := range agent.Commands {
				if got, ok := s.opts.Facade.CanonicalCommand(c); ok && !slices.Contains(cmds, got) {
					cmds = append(cmds, got)
				}
			}
		}
		return cmds
	case "intent":
		return m.Intents()
	case "to_state", "workflowState":
		return m.States()
	case "targetState":
		return m.Pipeline()
	case "maxEstimate":
		return policy.Estimates()
	case "owner":
		return s.owners()
	case "project":
		var out []string
		for _, p := range s.opts.Projects {
			out = append(out, fmt.Sprint(p.Number))
		}
		return out
	}
	return nil
}
