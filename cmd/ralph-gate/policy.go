package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/policy"
)

// maxPipelineInput bounds what `policy pipeline` reads from stdin.
const maxPipelineInput = 8 << 20

func runPolicy(args []string, s streams) int {
	if len(args) == 0 {
		fmt.Fprint(s.err, "policy: missing subcommand (check, resolve, pipeline, graph)\n")
		return exitUsage
	}
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Fprintf(s.out, "Usage:\n%s", synopsis("policy"))
		return exitOK
	case "check":
		return policyCheck(args[1:], s)
	case "resolve":
		return policyResolve(args[1:], s)
	case "pipeline":
		return policyPipeline(args[1:], s)
	case "graph":
		return policyGraph(args[1:], s)
	default:
		fmt.Fprintf(s.err, "policy: unknown subcommand %q (check, resolve, pipeline, graph)\n", args[0])
		return exitUsage
	}
}

// policyFlags declares the flags every policy subcommand shares.
func policyFlags(name string, s streams) (*flag.FlagSet, *string) {
	fs := newFlags("policy "+name, s)
	file := fs.String("config", "", "configuration file (default: the embedded config.yml)")
	return fs, file
}

func loadMachine(file string, s streams) (*policy.Machine, bool) {
	cfg, err := config.Load(file)
	if err == nil {
		var m *policy.Machine
		if m, err = cfg.Machine(); err == nil {
			return m, true
		}
	}
	fmt.Fprintf(s.err, "ralph-gate: %v\n", err)
	return nil, false
}

func policyCheck(args []string, s streams) int {
	fs, file := policyFlags("check", s)
	from := fs.String("from", "", `current state ("" for an item with no value yet)`)
	to := fs.String("to", "", "requested state")
	actor := fs.String("actor", "human", "actor kind: human, agent, bypass or app")
	if code, ok := parseFlags(fs, args, s); !ok {
		return code
	}
	if *to == "" {
		fmt.Fprint(s.err, "policy check: --to is required\n")
		return exitUsage
	}
	kind, err := policy.ParseActorKind(*actor)
	if err != nil {
		fmt.Fprintf(s.err, "policy check: %v\n", err)
		return exitUsage
	}
	m, ok := loadMachine(*file, s)
	if !ok {
		return exitError
	}
	if _, known := m.State(*from); *from != "" && !known {
		return writeError(s, fmt.Errorf("current state %q is not a state of the workflow. Recovery: retry with --from one of: %s", *from, strings.Join(m.States(), ", ")))
	}
	return writeJSON(s, m.Check(*from, *to, kind), true, exitOK)
}

func policyResolve(args []string, s streams) int {
	fs, file := policyFlags("resolve", s)
	command := fs.String("command", "", "agent command, bare (research) or prefixed (ralph_research)")
	intent := fs.String("intent", "", "semantic intent, as a word (lock) or marker (__LOCK__)")
	state := fs.String("state", "", "direct state name")
	if code, ok := parseFlags(fs, args, s); !ok {
		return code
	}
	if *command == "" || (*intent == "") == (*state == "") {
		fmt.Fprint(s.err, "policy resolve: --command and exactly one of --intent or --state are required\n")
		return exitUsage
	}
	m, ok := loadMachine(*file, s)
	if !ok {
		return exitError
	}
	var (
		resolved string
		err      error
	)
	if *intent != "" {
		resolved, err = m.ResolveIntent(*command, *intent)
	} else {
		resolved, err = m.ResolveState(*command, *state)
	}
	if err != nil {
		return writeError(s, err)
	}
	return writeJSON(s, map[string]string{"state": resolved}, false, exitOK)
}

func policyPipeline(args []string, s streams) int {
	fs, file := policyFlags("pipeline", s)
	if code, ok := parseFlags(fs, args, s); !ok {
		return code
	}
	if _, ok := loadMachine(*file, s); !ok {
		return exitError
	}
	in, err := decodePipelineInput(io.LimitReader(s.in, maxPipelineInput+1))
	if err != nil {
		return writeError(s, err)
	}
	return writeJSON(s, policy.DetectPipeline(in), true, exitOK)
}

// decodePipelineInput reads stdin, bounded, and decodes it strictly.
func decodePipelineInput(r io.Reader) (policy.PipelineInput, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return policy.PipelineInput{}, fmt.Errorf("read stdin: %w", err)
	}
	if len(data) > maxPipelineInput {
		return policy.PipelineInput{}, fmt.Errorf("input is larger than %d bytes. Recovery: send fewer issues", maxPipelineInput)
	}
	return policy.DecodePipelineRequest(data)
}

func policyGraph(args []string, s streams) int {
	fs, file := policyFlags("graph", s)
	format := fs.String("format", "mermaid", "diagram format: mermaid or dot")
	if code, ok := parseFlags(fs, args, s); !ok {
		return code
	}
	if *format != "mermaid" && *format != "dot" {
		fmt.Fprintf(s.err, "policy graph: unknown --format %q (mermaid or dot)\n", *format)
		return exitUsage
	}
	m, ok := loadMachine(*file, s)
	if !ok {
		return exitError
	}
	if *format == "dot" {
		fmt.Fprint(s.out, m.Dot())
	} else {
		fmt.Fprint(s.out, m.Mermaid())
	}
	return exitOK
}

// writeJSON prints v; multi-field results are indented for people, one-field results stay
// on one line for shell scripts.
func writeJSON(s streams, v any, indent bool, code int) int {
	var (
		data []byte
		err  error
	)
	if indent {
		data, err = json.MarshalIndent(v, "", "  ")
	} else {
		data, err = json.Marshal(v)
	}
	if err != nil {
		fmt.Fprintf(s.err, "ralph-gate: encode result: %v\n", err)
		return exitError
	}
	fmt.Fprintf(s.out, "%s\n", data)
	return code
}

func writeError(s streams, err error) int {
	return writeJSON(s, map[string]string{"error": err.Error()}, false, exitError)
}
