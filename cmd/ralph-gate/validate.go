package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"

	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/policy"
)

// validateReport is `validate --json`'s output (docs/TROUBLESHOOTING.md documents it): the
// same shape whatever happened, so scripts read one thing.
type validateReport struct {
	// File is the configuration checked; "" for the embedded config.yml. With --org-policy,
	// the deployment's configuration the organization's file is checked against.
	File string `json:"file"`
	// OrgPolicy is the organization's policy file checked (--org-policy), and Org the
	// organization whose file it is.
	OrgPolicy string `json:"org_policy,omitempty"`
	Org       string `json:"org,omitempty"`
	// For is what it was checked for: serve, mcp or file.
	For   config.Mode `json:"for"`
	Valid bool        `json:"valid"`
	// Problems lists every problem by key path (with --org-policy, each with its line in the
	// organization's file); never null.
	Problems []config.Problem `json:"problems"`
	// Workflow counts the machine's parts when the configuration is valid.
	Workflow *workflowCounts `json:"workflow,omitempty"`
	// Projects counts the organization's projects when its file is valid (--org-policy).
	Projects int `json:"projects,omitempty"`
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
	forFlag := fs.String("for", "", "check what this command needs: serve (the default with --config), mcp (mcp --stdio) or file (the file alone; the default without --config, and with --org-policy)")
	asJSON := fs.Bool("json", false, `print {"file","for","valid","problems":[{"path","message"}],"workflow"} as JSON`)
	showWorkflow := fs.Bool("show-workflow", false, `after the report, print the workflow in effect (the embedded default extended by the file's workflow section) as YAML, whole; with --json, as "effective_workflow"`)
	orgPolicy := fs.String("org-policy", "", "check this organization's policy file (.github/ralph-gate.yml) as the App checks a push of it, against the deployment's configuration (--config; checked --for file unless --for says otherwise)")
	org := fs.String("org", "", "with --org-policy: the organization whose file it is (default: the owner its projects name)")
	if code, ok := parseFlags(fs, args, s); !ok {
		return code
	}
	if *org != "" && *orgPolicy == "" {
		fmt.Fprintln(s.err, "ralph-gate validate: --org goes with --org-policy FILE (the organization whose policy file it is)")
		return exitUsage
	}
	// The embedded config.yml lists no project and no secret: as a deployment it is never
	// valid, so without --config the file alone is checked. An organization's file is
	// checked against the deployment's file alone: its secrets are the operator's.
	mode := config.ForServe
	if *file == "" || *orgPolicy != "" {
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
	case *orgPolicy != "":
		rep.OrgPolicy, rep.Org = *orgPolicy, *org
		if cfg, err = checkOrgPolicy(&rep, cfg); err != nil {
			fmt.Fprintf(s.err, "ralph-gate validate: %v\n", err)
			return exitUsage
		}
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
	// Nothing of a workflow decodes from a file that is not YAML (or cannot be read); an
	// organization's file gives its workflow only when it is valid.
	decoded := err == nil && !reflect.ValueOf(cfg.Workflow).IsZero() && (*orgPolicy == "" || rep.Valid)
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

// checkOrgPolicy checks the organization's policy file rep.OrgPolicy as the App checks a push
// of it: config.Config.ForOrganization against the deployment's configuration dep, then the
// machine it compiles. It returns the organization's configuration when the file is valid.
// The error is a usage error: no organization was given, and the file's projects name none.
func checkOrgPolicy(rep *validateReport, dep config.Config) (config.Config, error) {
	data, err := readOrgPolicy(rep.OrgPolicy)
	if err != nil {
		rep.Problems = append(rep.Problems, config.Problem{Path: "--org-policy", Message: err.Error()})
		return config.Config{}, nil
	}
	if rep.Org == "" {
		rep.Org = config.OrgPolicyOwner(data)
	}
	if rep.Org == "" {
		return config.Config{}, fmt.Errorf("--org-policy %s: give --org LOGIN, the organization whose file it is (its projects name no owner)", rep.OrgPolicy)
	}
	cfg, problems := dep.ForOrganization(rep.Org, data)
	if len(problems) > 0 {
		rep.Problems = append(rep.Problems, problems...)
		return config.Config{}, nil
	}
	m, err := cfg.Machine()
	if err != nil {
		rep.Problems = append(rep.Problems, config.Problem{Path: "workflow", Message: err.Error()})
		return config.Config{}, nil
	}
	rep.Valid = true
	rep.Projects = len(cfg.Projects)
	rep.Workflow = &workflowCounts{States: len(m.States()), Commands: len(m.Commands()), Intents: len(m.Intents())}
	return cfg, nil
}

// readOrgPolicy reads an organization's policy file, up to one byte more than one may hold
// (config.Config.ForOrganization refuses a larger one).
func readOrgPolicy(file string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("read the policy file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, config.MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read the policy file: %w", err)
	}
	return data, nil
}

func printValidate(s streams, rep validateReport) {
	if rep.OrgPolicy != "" {
		printOrgPolicy(s, rep)
		return
	}
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

// printOrgPolicy prints the report on an organization's policy file: each problem with its
// line in the file, as the App words them in the push's check run.
func printOrgPolicy(s streams, rep validateReport) {
	against := "against " + describe(rep.File)
	if rep.Valid {
		fmt.Fprintf(s.out, "%s is valid as %s's policy file %s: %d project(s), %d states, %d commands, %d intents\n",
			rep.OrgPolicy, rep.Org, against, rep.Projects, rep.Workflow.States, rep.Workflow.Commands, rep.Workflow.Intents)
		return
	}
	for _, p := range rep.Problems {
		if p.Line > 0 {
			fmt.Fprintf(s.out, "%s (line %d): %s\n", p.Path, p.Line, p.Message)
		} else {
			fmt.Fprintln(s.out, p.String())
		}
	}
	if rep.Org == "" { // the deployment's configuration, or the file, could not be read
		fmt.Fprintf(s.out, "%d problem(s) before %s could be checked %s\n", len(rep.Problems), rep.OrgPolicy, against)
		return
	}
	fmt.Fprintf(s.out, "%d problem(s) in %s, checked as %s's policy file %s\n", len(rep.Problems), rep.OrgPolicy, rep.Org, against)
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
