package config

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ralph-gate/ralph-gate/policy"
)

// list is "[item(from), …, item(to-1)]".
func list(from, to int, item func(i int) string) string {
	items := make([]string, 0, to-from)
	for i := from; i < to; i++ {
		items = append(items, item(i))
	}
	return "[" + strings.Join(items, ", ") + "]"
}

// lines is item(from), …, item(to-1), one a line.
func lines(from, to int, item func(i int) string) string {
	var b strings.Builder
	for i := from; i < to; i++ {
		b.WriteString(item(i) + "\n")
	}
	return b.String()
}

// Each bound of a policy file: a file at the bound is not refused for it, one past it is,
// with the problem at the bound's key path and line (docs/CONFIGURATION.md, "Policy in the
// organization's repository").
func TestForOrganizationBounds(t *testing.T) {
	dep := deployment(t)
	const project = "projects: [{number: 1}]\n"
	def := policy.DefaultSpec()
	if refs := stateReferences(def); refs != 115 || len(def.States) != 11 || len(def.Commands) != 10 || len(def.Intents) != 7 {
		t.Fatalf("the default workflow has %d states, %d commands, %d intents and %d references to states: the documentation says 11, 10, 7 and 115",
			len(def.States), len(def.Commands), len(def.Intents), refs)
	}
	tests := []struct {
		name string
		// file is a file with n of what is bounded.
		file  func(n int) string
		bound int
		// want is the problem past the bound, as "line: path: message" (the message's start).
		want string
	}{
		{"projects", func(n int) string {
			return "projects: " + list(1, n+1, func(i int) string { return fmt.Sprintf("{number: %d}", i) }) + "\n"
		}, MaxOrgProjects, "1: projects: holds 1001 projects, more than the 1000 a policy file may: the file is refused without checking its workflow, actors and agents further"},
		{"states, the default's 11 included", func(n int) string {
			return project + "workflow:\n  states:\n" + lines(11, n, func(i int) string { return fmt.Sprintf("    - {name: S%d, kind: queue, next: [Done]}", i) })
		}, MaxOrgStates, "3: workflow.states: holds 501 states, more than the 500"},
		{"commands, the default's 10 included", func(n int) string {
			return project + "workflow:\n  commands:\n" + lines(10, n, func(i int) string { return fmt.Sprintf("    - {name: c%d, inputs: [Backlog], outputs: [Done]}", i) })
		}, MaxOrgCommands, "3: workflow.commands: holds 101 commands, more than the 100"},
		{"intents, the default's 7 included", func(n int) string {
			return project + "workflow:\n  intents:\n" + lines(7, n, func(i int) string { return fmt.Sprintf("    - {name: i%d, targets: {\"*\": Done}}", i) })
		}, MaxOrgCommands, "3: workflow.intents: holds 101 intents, more than the 100"},
		{"references to states, the default's 115 included", func(n int) string {
			// Backlog's next replaces the default's 4 moves.
			return project + "workflow:\n  states:\n    - name: Backlog\n      next: " + list(111, n, func(i int) string { return fmt.Sprintf("S%d", i) }) + "\n"
		}, MaxOrgStateReferences, "2: workflow: holds 10001 references to states, more than the 10000"},
		{"roles", func(n int) string {
			return project + "actors:\n  roles:\n" + lines(0, n, func(i int) string { return fmt.Sprintf("    r%d: {agents: [a%d], owns: [Backlog]}", i, i) })
		}, MaxOrgRoles, "3: actors.roles: holds 101 roles, more than the 100"},
		{"the entries of actors", func(n int) string {
			return project + "actors:\n  bypass: [ops]\n  agents: " + list(1, n, func(i int) string { return fmt.Sprintf("a%d", i) }) + "\n"
		}, MaxOrgActorEntries, "2: actors: holds 1001 agents, bypass logins and roles' agents, owns and commands, more than the 1000"},
		{"agents", func(n int) string {
			return project + "mcp:\n  agents:\n" + lines(0, n, func(i int) string { return fmt.Sprintf("    - {name: a%d}", i) })
		}, MaxOrgAgents, "3: mcp.agents: holds 101 agents, more than the 100"},
		{"the agents' commands", func(n int) string {
			return project + "mcp:\n  agents:\n    - {name: builder-1, commands: " + list(0, n, func(i int) string { return "impl" }) + "}\n"
		}, MaxOrgAgentCommands, "3: mcp.agents: holds 1001 commands of agents, more than the 1000"},
		{"a name", func(n int) string {
			return project + "workflow:\n  states:\n    - {name: " + strings.Repeat("é", n) + ", kind: queue, next: [Done]}\n"
		}, MaxOrgNameLength, "4: workflow.states[11].name: is 101 characters long, more than the 100 a name in a policy file may be"},
		{"a key", func(n int) string {
			return project + "actors:\n  roles:\n    " + strings.Repeat("r", n) + ": {agents: [a], owns: [Backlog]}\n"
		}, MaxOrgNameLength, "4: actors.roles." + strings.Repeat("r", 37) + "…: is a key of 101 characters, more than the 100"},
		{"the depth of a value", func(n int) string {
			return project + "x: " + strings.Repeat("{a: ", n-1) + "1" + strings.Repeat("}", n-1) + "\n"
		}, MaxOrgDepth, "2: x" + strings.Repeat(".a", 9) + ": nests deeper than the 10 levels a policy file may"},
		{"the keys of a mapping", func(n int) string {
			return project + "workflow:\n  gates:\n    wip_limits: {" + strings.Trim(list(0, n, func(i int) string { return fmt.Sprintf("S%d: 1", i) }), "[]") + "}\n"
		}, MaxOrgMappingKeys, "4: workflow.gates.wip_limits: holds 501 keys, more than the 500 a mapping in a policy file may"},
		{"the problems listed", func(n int) string {
			return project + lines(0, n, func(i int) string { return fmt.Sprintf("k%d: 1", i) })
		}, MaxProblems, "1: (file): … and 1 more not listed (only the first 100 problems of a policy file are): fix these first"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := strings.SplitN(tt.want, ": ", 3)[1]
			for _, n := range []int{tt.bound, tt.bound + 1} {
				_, problems := dep.ForOrganization("acme", []byte(tt.file(n)))
				var found []string
				for _, p := range problems {
					if got := fmt.Sprintf("%d: %s", p.Line, p); p.Path == path && strings.HasPrefix(got, tt.want) {
						found = append(found, got)
					}
				}
				switch {
				case n == tt.bound && len(found) > 0:
					t.Errorf("at the bound (%d): %s", n, found[0])
				case n > tt.bound && len(found) != 1:
					t.Errorf("past the bound (%d): no problem %q; got:\n  %s", n, tt.want, strings.Join(problemLines(problems), "\n  "))
				}
				if len(problems) > MaxProblems+1 {
					t.Errorf("%d: %d problems listed", n, len(problems))
				}
			}
		})
	}
}

func problemLines(ps Problems) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%d: %s", p.Line, cut(p.String(), 300)))
	}
	return out
}
