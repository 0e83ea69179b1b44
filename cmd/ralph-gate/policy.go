package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ralph-gate/ralph-gate/app"
	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/policy"
	"github.com/ralph-gate/ralph-gate/store"
)

// maxPipelineInput bounds what `policy pipeline` reads from stdin.
const maxPipelineInput = 8 << 20

// The policy subcommands answer in three ways: an evaluated result as JSON on stdout (exit
// 0); a refusal result — resolve refusing a known command, intent or state — as
// {"error": "… Recovery: …"} on stdout (exit 1); and bad input — a missing or conflicting
// flag, a name the workflow does not know, a malformed request — as one line on stderr,
// "ralph-gate policy <sub>: what. why. Recovery: …", whose Recovery names the subcommand's
// own flags (exit 2). backtest, which reads a store, prints its result for a person (JSON with
// --json); a proposed file with problems prints them as validate does, and a store that cannot
// be read fails as audit does (exit 1).

func runPolicy(ctx context.Context, args []string, s streams) int {
	subs := []string{"check", "resolve", "pipeline", "graph", "backtest"}
	if len(args) == 0 {
		return badInput(s, "policy", &policy.Refusal{Tried: "No subcommand was given", Why: "policy has the subcommands " + strings.Join(subs, ", "),
			Recovery: "run ralph-gate policy check, resolve, pipeline, graph or backtest (ralph-gate policy --help shows each)", Options: subs})
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
	case "backtest":
		return policyBacktest(ctx, args[1:], s)
	default:
		return badInput(s, "policy", &policy.Refusal{Tried: fmt.Sprintf("Unknown subcommand %q", args[0]), Why: "policy has the subcommands " + strings.Join(subs, ", "),
			Recovery: "run ralph-gate policy check, resolve, pipeline, graph or backtest (ralph-gate policy --help shows each)", Options: subs})
	}
}

// flagSpelling names a Recovery's arguments as the policy subcommands' flags.
func flagSpelling(a policy.Arg) string { return "--" + string(a) }

// badInput answers bad input of a policy subcommand: err in the three-part form, its Recovery
// naming the subcommand's flags, on stderr; exit 2.
func badInput(s streams, name string, err error) int {
	var r *policy.Refusal
	if errors.As(err, &r) {
		err = r.Spell(flagSpelling)
	}
	fmt.Fprintf(s.err, "ralph-gate %s: %v\n", name, err)
	return exitUsage
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
	fmt.Fprintf(s.err, "ralph-gate policy: %v\n", err)
	return nil, false
}

// missing refuses a required flag that was not given, suggesting its values.
func missing(flagName, why string, sg policy.Suggestion) error {
	return policy.NewRetryRefusal(fmt.Sprintf("--%s is missing", flagName), why, policy.Retry{With: []policy.Suggestion{sg}})
}

func policyCheck(args []string, s streams) int {
	const name = "policy check"
	fs, file := policyFlags("check", s)
	from := fs.String("from", "", `current state ("" for an item with no value yet)`)
	to := fs.String("to", "", "requested state")
	actor := fs.String("actor", "human", "actor kind: human, agent, bypass or app")
	role := fs.String("role", "", "judge an agent of this worker role (actors.roles); implies --actor agent")
	fields := fieldValues{}
	fs.Var(fields, "field", "a project field's value on the item, NAME=VALUE (repeatable), for workflow.requirements")
	pr := fs.String("pr", "", "merged: a merged pull request closes the issue, for workflow.requirements")
	if code, ok := parseFlags(fs, args, s); !ok {
		return code
	}
	if *pr != "" && *pr != policy.PullRequestMerged {
		return badInput(s, name, policy.NewRetryRefusal(fmt.Sprintf("--pr %s was given", *pr), "--pr takes one value, merged",
			policy.Retry{With: []policy.Suggestion{{Arg: "pr", Kind: policy.Word, Values: []string{policy.PullRequestMerged}}}}))
	}
	m, ok := loadMachine(*file, s)
	if !ok {
		return exitError
	}
	kind, err := policy.ParseActorKind(*actor)
	if err != nil {
		return badInput(s, name, err)
	}
	if *role != "" {
		if err := requireRole(m, *role, kind, *actor); err != nil {
			return badInput(s, name, err)
		}
		kind = policy.ActorAgent
	}
	if *from != "" {
		if err := m.RequireState(policy.ArgFrom, *from); err != nil {
			var r *policy.Refusal
			if errors.As(err, &r) && r.Retry != nil {
				r.Retry.With[0].Optional = true // no --from: an item with no value
			}
			return badInput(s, name, err)
		}
	}
	// The states the actor may move to from --from, for a Recovery about --to.
	next := policy.Suggestion{Arg: policy.ArgTo, Kind: policy.Text, Values: m.AllowedNext(*from, kind)}
	if len(next.Values) == 0 {
		next.Values = m.States()
	}
	if *to == "" {
		return badInput(s, name, missing("to", "policy check judges a move, and needs the state it goes to", next))
	}
	if err := m.RequireState(policy.ArgTo, *to); err != nil {
		var r *policy.Refusal
		if errors.As(err, &r) {
			err = policy.NewRetryRefusal(r.Tried, r.Why, policy.Retry{With: []policy.Suggestion{next}})
		}
		return badInput(s, name, err)
	}
	res := m.Check(*from, *to, kind)
	if *role != "" {
		res = m.CheckRole(*from, *to, *role)
	}
	return writeJSON(s, m.WithRequirements(res, *to, kind, fields, *pr == policy.PullRequestMerged), true, exitOK)
}

// fieldValues is --field NAME=VALUE, repeatable.
type fieldValues map[string]string

func (f fieldValues) String() string { return "" }

func (f fieldValues) Set(v string) error {
	name, value, ok := strings.Cut(v, "=")
	if !ok || strings.TrimSpace(name) == "" {
		return fmt.Errorf("want NAME=VALUE (e.g. Estimate=S), got %q", v)
	}
	f[strings.TrimSpace(name)] = value
	return nil
}

// requireRole refuses a --role the configuration does not have, or one given for a person.
func requireRole(m *policy.Machine, role string, kind policy.ActorKind, actorFlag string) error {
	names := m.Roles().Names()
	switch {
	case len(names) == 0:
		return &policy.Refusal{Tried: fmt.Sprintf("--role %s was given", role), Why: "The configuration has no worker roles (actors.roles)",
			Recovery: "retry without --role, or with a --config whose actors.roles defines it", Options: []string{}, Unknown: true}
	case !m.Roles().Has(role):
		r := policy.NewRetryRefusal(fmt.Sprintf("Unknown role %q", role), "The roles are "+strings.Join(names, ", "),
			policy.Retry{With: []policy.Suggestion{{Arg: policy.ArgRole, Kind: policy.Word, Values: names}}})
		r.Unknown = true
		return r
	case kind != policy.ActorAgent && actorFlag != "human":
		return &policy.Refusal{Tried: fmt.Sprintf("--role %s with --actor %s", role, actorFlag), Why: "Roles are for agents",
			Recovery: "retry without --actor (--role implies an agent)", Options: []string{}}
	}
	return nil
}

func policyResolve(args []string, s streams) int {
	const name = "policy resolve"
	fs, file := policyFlags("resolve", s)
	command := fs.String("command", "", "agent command, bare (research) or prefixed (ralph_research)")
	intent := fs.String("intent", "", "semantic intent, as a word (lock) or marker (__LOCK__)")
	state := fs.String("state", "", "direct state name")
	if code, ok := parseFlags(fs, args, s); !ok {
		return code
	}
	m, ok := loadMachine(*file, s)
	if !ok {
		return exitError
	}
	if *command == "" {
		return badInput(s, name, missing("command", "policy resolve resolves an intent or a state for a command",
			policy.Suggestion{Arg: policy.ArgCommand, Kind: policy.Word, Values: m.Commands()}))
	}
	if (*intent == "") == (*state == "") {
		tried := "Neither --intent nor --state was given"
		if *intent != "" {
			tried = "Both --intent and --state were given"
		}
		rt, ok := m.Retries(*command)
		if !ok {
			// An unknown command (or one that asks for nothing) explains itself.
			_, err := m.ResolveIntent(*command, "")
			return badInput(s, name, err)
		}
		return badInput(s, name, policy.NewRetryRefusal(tried, "policy resolve resolves exactly one: an intent, or a direct state", rt))
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
	var r *policy.Refusal
	switch {
	case errors.As(err, &r) && r.Unknown:
		return badInput(s, name, err)
	case r != nil:
		return writeError(s, r.Spell(flagSpelling))
	case err != nil:
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
	data, err := io.ReadAll(io.LimitReader(s.in, maxPipelineInput+1))
	if err != nil {
		fmt.Fprintf(s.err, "ralph-gate policy pipeline: read stdin: %v\n", err)
		return exitError
	}
	if len(data) > maxPipelineInput {
		return badInput(s, "policy pipeline", &policy.Refusal{Tried: fmt.Sprintf("The input is larger than %d bytes", maxPipelineInput),
			Why: "policy pipeline reads one group's issues", Recovery: "send fewer issues", Options: []string{}})
	}
	in, err := policy.DecodePipelineRequest(data)
	if err != nil {
		return badInput(s, "policy pipeline", err)
	}
	return writeJSON(s, policy.DetectPipeline(in), true, exitOK)
}

func policyGraph(args []string, s streams) int {
	fs, file := policyFlags("graph", s)
	format := fs.String("format", "mermaid", "diagram format: mermaid or dot")
	if code, ok := parseFlags(fs, args, s); !ok {
		return code
	}
	if *format != "mermaid" && *format != "dot" {
		return badInput(s, "policy graph", policy.NewRetryRefusal(fmt.Sprintf("Unknown format %q", *format), "policy graph draws mermaid or dot",
			policy.Retry{With: []policy.Suggestion{{Arg: "format", Kind: policy.Word, Values: []string{"mermaid", "dot"}}}}))
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

// maxBacktestDays bounds --days: the audit log of a busy organization over months is more than
// one backtest replays (app.MaxBacktestMoves).
const maxBacktestDays = 90

// policyBacktest replays an organization's moves recorded in the last days under a proposed
// policy file and says what it would decide differently from what was decided (app.Backtest):
// the policy in force is the one the store keeps for the organization. A file with problems
// prints them, by key path and line, as validate does, and exits 1.
func policyBacktest(ctx context.Context, args []string, s streams) int {
	const name = "policy backtest"
	fs := newFlags(name, s)
	org := fs.String("org", "", "the organization whose policy file is proposed (its login)")
	file := fs.String("file", "", "the proposed policy file, as the organization's repository would hold it (ralph-gate.yml)")
	cfgFile := fs.String("config", "", "the deployment's configuration, which the organizations' files extend and which names the store (default: the embedded config.yml; RALPH_GATE_STORE_DSN counts as for serve)")
	days := fs.Int("days", app.DefaultBacktestDays, fmt.Sprintf("replay the moves recorded in this many days, up to now (1 to %d)", maxBacktestDays))
	asJSON := fs.Bool("json", false, "print the result as JSON")
	driver := fs.String("driver", "", "store driver, overriding the config: sqlite or postgres (default with --dsn: postgres for a postgres:// URL, else sqlite)")
	dsn := fs.String("dsn", "", "store DSN, overriding the config: an existing SQLite file or a postgres:// URL")
	if code, ok := parseFlags(fs, args, s); !ok {
		return code
	}
	switch {
	case strings.TrimSpace(*org) == "":
		return badInput(s, name, &policy.Refusal{Tried: "--org is missing", Why: "policy backtest replays one organization's recorded moves",
			Recovery: "give the organization's login, e.g. --org acme", Options: []string{}})
	case *file == "":
		return badInput(s, name, &policy.Refusal{Tried: "--file is missing", Why: "policy backtest replays the moves under a proposed policy file",
			Recovery: "give the proposed file, e.g. --file .github/ralph-gate.yml", Options: []string{}})
	case *days < 1 || *days > maxBacktestDays:
		return badInput(s, name, &policy.Refusal{Tried: fmt.Sprintf("--days %d was given", *days), Why: fmt.Sprintf("policy backtest replays 1 to %d days", maxBacktestDays),
			Recovery: fmt.Sprintf("retry with --days %d, or fewer days", app.DefaultBacktestDays), Options: []string{}})
	}
	cfg, err := config.LoadFor(*cfgFile, config.ForFile, os.LookupEnv)
	if err != nil {
		var problems config.Problems
		if errors.As(err, &problems) {
			printProblems(s, name, err, *cfgFile) // every problem by its key path
			return exitError
		}
		return fail(s, name, exitError, "cannot read the configuration: "+err.Error(), "check --config, or leave it out to use the embedded config.yml with --dsn")
	}
	data, err := readPolicyFile(*file)
	if err != nil {
		return fail(s, name, exitError, "cannot read the proposed policy: "+err.Error(), "check --file")
	}
	proposed, problems := cfg.ForOrganization(*org, data)
	if len(problems) > 0 {
		return printFileProblems(s, *file, *org, problems, *asJSON)
	}
	setStore(&cfg, *driver, *dsn)
	st, err := store.OpenReadOnly(ctx, cfg.Store.Driver, cfg.Store.DSN)
	if err != nil {
		return fail(s, name, exitError, storeProblem(err), storeHint(err, cfg.Store.Driver, cfg.Store.DSN, *dsn != ""))
	}
	defer st.Close()
	var behind *store.SchemaBehindError
	if errors.As(st.CheckSchema(ctx), &behind) {
		fail(s, name, exitOK, fmt.Sprintf("warning: the store's schema is at version %d, older than this ralph-gate's %d", behind.Applied, behind.Known),
			"the service writing it runs an older version or has not started since an upgrade; decisions are read as they are")
	}
	// The policy in force: the organization's last valid file, as the store keeps it (none:
	// no project of it is enforced).
	var current config.Config
	kept, found, err := st.GetOrgPolicy(ctx, *org)
	if err != nil {
		return fail(s, name, exitError, "cannot read the policy in force: "+storeProblem(err), "check that the store is reachable and is the one the service writes")
	}
	if found && kept.SHA != "" {
		var ps config.Problems
		if current, ps = cfg.ForOrganization(*org, []byte(kept.Text)); len(ps) > 0 {
			return fail(s, name, exitError, fmt.Sprintf("the policy in force (commit %s) does not pass this configuration: %s", shortSHA(kept.SHA), fileProblem(ps[0])),
				"give --config the deployment's config.yml, which the organizations' files extend")
		}
	}
	until := time.Now()
	res, err := app.Backtest(ctx, st, *org, current, proposed, "", until.Add(-time.Duration(*days)*24*time.Hour), until)
	if err != nil {
		return fail(s, name, exitError, "cannot replay the moves: "+storeProblem(err), "check that the store is reachable and is the one the service writes")
	}
	if *asJSON {
		return writeJSON(s, res, true, exitOK)
	}
	fmt.Fprint(s.out, res.Text())
	return exitOK
}

// readPolicyFile reads a proposed policy file, at most one byte more than a policy file may
// hold (config.Config.ForOrganization refuses a larger one as a problem of the file).
func readPolicyFile(file string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, config.MaxFileBytes+1))
}

// printFileProblems prints every problem of a proposed policy file, by key path and line, and
// exits as validate does (1); with --json, as validate --json's report.
func printFileProblems(s streams, file, org string, problems config.Problems, asJSON bool) int {
	if asJSON {
		return writeJSON(s, struct {
			File     string           `json:"file"`
			Org      string           `json:"org"`
			Valid    bool             `json:"valid"`
			Problems []config.Problem `json:"problems"`
		}{file, org, false, problems}, true, exitError)
	}
	for _, p := range problems {
		fmt.Fprintln(s.out, fileProblem(p))
	}
	fmt.Fprintf(s.out, "%d problem(s) in %s, checked as %s's policy file: nothing was replayed\n", len(problems), file, terminalText(org))
	return exitError
}

// fileProblem is a problem of an organization's file with its line: "projects[0].mode (line 3): …".
func fileProblem(p config.Problem) string {
	if p.Line > 0 {
		return fmt.Sprintf("%s (line %d): %s", p.Path, p.Line, p.Message)
	}
	return p.String()
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
