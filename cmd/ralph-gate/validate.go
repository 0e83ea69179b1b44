package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"

	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/policy"
)

// validateReport is `validate --json`'s output (docs/TROUBLESHOOTING.md documents it): the
// same shape whatever happened, so scripts read one thing.
type validateReport struct {
	// File is the configuration checked; "" for the embedded config.yml.
	File string `json:"file"`
	// For is what it was checked for: serve, mcp or file.
	For   config.Mode `json:"for"`
	Valid bool        `json:"valid"`
	// Problems lists every problem by key path; never null.
	Problems []config.Problem `json:"problems"`
	// Workflow counts the machine's parts when the configuration is valid.
	Workflow *workflowCounts `json:"workflow,omitempty"`
	// EffectiveWorkflow is the workflow in effect (the default extended by the file's
	// section), with --show-workflow, when one was decoded.
	EffectiveWorkflow *policy.Spec `json:"effective_workflow,omitempty"`
}

type workflowCounts struct {
	States   int `json:"states"`
	Commands int `json:"commands"`
	Intents  int `json:"intents"`
}

func runValidate(args []string, s streams) int {
	fs := newFlags("validate", s)
	file := fs.String("config", "", "configuration file (default: the embedded config.yml)")
	forFlag := fs.String("for", "", "check what this command needs: serve (the default with --config), mcp (mcp --stdio) or file (the file alone; the default without --config)")
	asJSON := fs.Bool("json", false, `print {"file","for","valid","problems":[{"path","message"}],"workflow"} as JSON`)
	showWorkflow := fs.Bool("show-workflow", false, `after the report, print the workflow in effect (the embedded default extended by the file's workflow section) as YAML, whole; with --json, as "effective_workflow"`)
	if code, ok := parseFlags(fs, args, s); !ok {
		return code
	}
	// The embedded config.yml lists no project and no secret: as a deployment it is never
	// valid, so without --config the file alone is checked.
	mode := config.ForServe
	if *file == "" {
		mode = config.ForFile
	}
	if *forFlag != "" {
		m, err := config.ParseMode(*forFlag)
		if err != nil {
			fmt.Fprintf(s.err, "ralph-gate validate: --for: %v\n", err)
			return exitUsage
		}
		mode = m
	}
	rep := validateReport{File: *file, For: mode, Problems: []config.Problem{}}
	// The environment counts as it does for the command checked for (GITHUB_APP_*,
	// RALPH_GATE_STORE_DSN, the agents' token_env variables).
	cfg, problems, err := config.Preflight(*file, mode, os.LookupEnv)
	switch {
	case err != nil:
		rep.Problems = append(rep.Problems, config.Problem{Path: "--config", Message: err.Error()})
	case len(problems) > 0:
		rep.Problems = append(rep.Problems, problems...)
	default:
		m, err := cfg.Machine()
		if err != nil {
			var ps config.Problems
			if !errors.As(err, &ps) {
				ps = config.Problems{{Path: "workflow", Message: err.Error()}}
			}
			rep.Problems = append(rep.Problems, ps...)
			break
		}
		rep.Valid = true
		rep.Workflow = &workflowCounts{States: len(m.States()), Commands: len(m.Commands()), Intents: len(m.Intents())}
	}
	// Nothing of a workflow decodes from a file that is not YAML (or cannot be read).
	decoded := err == nil && !reflect.ValueOf(cfg.Workflow).IsZero()
	if *showWorkflow && decoded {
		rep.EffectiveWorkflow = &cfg.Workflow
	}
	if *asJSON {
		enc := json.NewEncoder(s.out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintf(s.err, "ralph-gate validate: %v\n", err)
			return exitError
		}
	} else {
		printValidate(s, rep)
		if *showWorkflow {
			if code := printWorkflow(s, rep.EffectiveWorkflow); code != exitOK {
				return code
			}
		}
	}
	if !rep.Valid {
		return exitError
	}
	return exitOK
}

func printValidate(s streams, rep validateReport) {
	if rep.Valid {
		more := ""
		if rep.For == config.ForFile {
			more = " (validate --for serve also checks what serve needs)"
		}
		fmt.Fprintf(s.out, "%s is valid %s: %d states, %d commands, %d intents%s\n",
			describe(rep.File), checkedFor(rep.For), rep.Workflow.States, rep.Workflow.Commands, rep.Workflow.Intents, more)
		return
	}
	for _, p := range rep.Problems {
		fmt.Fprintln(s.out, p.String())
	}
	fmt.Fprintf(s.out, "%d problem(s) in %s, checked %s\n", len(rep.Problems), describe(rep.File), checkedFor(rep.For))
}

// printWorkflow prints the workflow in effect after the report, as a workflow section a file
// may hold (config.WorkflowYAML).
func printWorkflow(s streams, spec *policy.Spec) int {
	if spec == nil {
		fmt.Fprintln(s.out, "\n# No workflow to show: none was decoded (see the problems above).")
		return exitOK
	}
	text, err := config.WorkflowYAML(*spec)
	if err != nil {
		fmt.Fprintf(s.err, "ralph-gate validate: --show-workflow: %v\n", err)
		return exitError
	}
	fmt.Fprint(s.out, "\n# The workflow in effect, written whole (extends: none): pasted into a file, this section\n"+
		"# is exactly this workflow.\n")
	s.out.Write(text)
	return exitOK
}

// checkedFor says in words what a mode checked.
func checkedFor(m config.Mode) string {
	switch m {
	case config.ForServe:
		return "for serve"
	case config.ForMCP:
		return "for mcp --stdio"
	}
	return "as a file"
}

func describe(file string) string {
	if file == "" {
		return "the embedded config.yml"
	}
	return file
}
