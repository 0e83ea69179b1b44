// Command ralph-gate is the GitHub App that enforces the agent workflow on Projects V2 boards,
// and its tools: validate a config, evaluate policy decisions from scripts, and more.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=..."; without it, main takes
// it from the module's build information (chooseVersion).
var version = "dev"

// Exit codes shared by every subcommand.
const (
	exitOK    = 0 // evaluated, whatever the verdict
	exitError = 1 // a refusal or error result
	exitUsage = 2 // the command line was wrong
)

// streams are the process's standard streams, passed down so commands are testable.
type streams struct {
	in       io.Reader
	out, err io.Writer
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	version = chooseVersion(version, debug.ReadBuildInfo)
	code := run(ctx, os.Args[1:], streams{in: os.Stdin, out: os.Stdout, err: os.Stderr})
	stop()
	os.Exit(code)
}

// chooseVersion is what `ralph-gate version` prints: the -ldflags "-X main.version=…" value
// when the build set one, else the module's build information — the version `go install
// …@vX` records, or the commit of a local build (with +dirty when the tree was modified),
// as Go stamps it — and "dev" when neither says anything.
func chooseVersion(stamped string, buildInfo func() (*debug.BuildInfo, bool)) string {
	if stamped != "" && stamped != "dev" {
		return stamped
	}
	info, ok := buildInfo()
	if !ok || info == nil {
		return "dev"
	}
	v := info.Main.Version
	if v == "" || v == "(devel)" {
		v = "dev"
	}
	var meta []string
	for _, kv := range info.Settings {
		switch {
		case kv.Key == "vcs.revision" && kv.Value != "":
			rev := kv.Value[:min(12, len(kv.Value))]
			if !strings.Contains(v, rev) {
				meta = append(meta, rev)
			}
		case kv.Key == "vcs.modified" && kv.Value == "true" && !strings.Contains(v, "dirty"):
			meta = append(meta, "dirty")
		}
	}
	if len(meta) > 0 {
		sep := "+" // semver build metadata, as Go's own +dirty
		if strings.Contains(v, "+") {
			sep = "."
		}
		v += sep + strings.Join(meta, ".")
	}
	return v
}

const usage = `ralph-gate enforces the agent workflow on GitHub Projects V2 boards.

Usage:
  ralph-gate demo [--keep] [--listen ADDR] [--sim-listen ADDR] [--verbose]
                                           watch ralph-gate work on the built-in GitHub simulator
  ralph-gate bench [--quick] [--json] [--rtt 50ms] [--rate 100]
                                           measure speed, API cost and scale on the simulator
  ralph-gate serve [--config FILE]         run the GitHub App (webhooks at /api/github/hook, MCP at /mcp)
  ralph-gate mcp --stdio --config FILE [--agent NAME] [--create-store]
                                           serve the MCP façade on stdio for one local agent
  ralph-gate audit [--item N] [--since T] [--verdict V] [--limit N] [--json]
                   [--config FILE | --driver sqlite|postgres --dsn DSN]
                                           print recorded decisions (reads an existing store, never creates one)
  ralph-gate audit --policy [--org LOGIN] [--since T] [--limit N] [--json] [--config FILE | --dsn DSN]
                                           print the organizations' policy changes: each push, its pusher and outcome
  ralph-gate report [--project OWNER/N | --facade] [--json] [--config FILE | --driver sqlite|postgres --dsn DSN]
                                           print each enforced project's health (reads an existing store, never creates one)
  ralph-gate validate [--config FILE] [--for serve|mcp|file] [--json] [--show-workflow]
                      [--org-policy FILE [--org LOGIN]]
                                           check a configuration, or an organization's policy file
                                           against it, reporting every problem
  ralph-gate register --org ORG [--webhook-url URL] [--out FILE | --k8s-secret NAME] [--github-url URL]
                                           create the GitHub App from app.yml and save its credentials
  ralph-gate doctor [--config FILE] [--json]
                                           check the App registration, installation and project boards
  ralph-gate policy check --from A --to B [--actor human|agent|bypass|app] [--role NAME] [--config FILE]
  ralph-gate policy resolve --command C (--intent I | --state S) [--config FILE]
  ralph-gate policy pipeline [--config FILE]   (reads the issues as JSON on stdin)
  ralph-gate policy graph [--format mermaid|dot] [--config FILE]
  ralph-gate policy backtest --org LOGIN --file FILE [--days 7] [--json]
                    [--config FILE | --driver sqlite|postgres --dsn DSN]
                                           replay an organization's recorded moves under a proposed policy file
  ralph-gate completion bash|zsh|fish      print a shell completion script (see the README to load it)
  ralph-gate version                       print the version

Without --config the embedded default configuration (config.yml) is used.
Run 'ralph-gate COMMAND --help' for a command's flags.
Exit codes: 0 evaluated (whatever the verdict), 1 a refusal or error result, 2 usage error.
`

// command is one command of the command line: its name as typed after "ralph-gate" ("policy
// check" for a subcommand) and what runs it with the arguments after the name. Dispatch,
// shell completion (completion.go) and the test that keeps the usage text complete all read
// this one table.
type command struct {
	name string
	run  func(ctx context.Context, args []string, s streams) int
}

func commands() []command {
	policySub := func(sub string) func(context.Context, []string, streams) int {
		return func(ctx context.Context, args []string, s streams) int {
			return runPolicy(ctx, append([]string{sub}, args...), s)
		}
	}
	return []command{
		{"demo", runDemo},
		{"bench", runBench},
		{"serve", runServe},
		{"mcp", runMCP},
		{"audit", runAudit},
		{"report", runReport},
		{"validate", func(_ context.Context, args []string, s streams) int { return runValidate(args, s) }},
		{"register", runRegister},
		{"doctor", runDoctor},
		{"policy check", policySub("check")},
		{"policy resolve", policySub("resolve")},
		{"policy pipeline", policySub("pipeline")},
		{"policy graph", policySub("graph")},
		{"policy backtest", policySub("backtest")},
		{"completion", runCompletion},
		{"version", runVersion},
	}
}

func run(ctx context.Context, args []string, s streams) int {
	if len(args) == 0 {
		fmt.Fprint(s.err, usage)
		return exitUsage
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, args[1:], s)
		}
	}
	switch args[0] {
	case "policy":
		// policy's own dispatch answers a missing or unknown subcommand and policy --help.
		return runPolicy(ctx, args[1:], s)
	case "--version":
		return runVersion(ctx, nil, s)
	case "help", "-h", "--help":
		fmt.Fprint(s.out, usage)
		return exitOK
	default:
		return fail(s, "", exitUsage, fmt.Sprintf("unknown command %q", args[0]), "run 'ralph-gate help' for the commands")
	}
}

func runVersion(_ context.Context, args []string, s streams) int {
	fs := newFlags("version", s)
	if code, ok := parseFlags(fs, args, s); !ok {
		return code
	}
	fmt.Fprintf(s.out, "ralph-gate %s\n", version)
	return exitOK
}

// fail prints an error in the one form every command uses — "ralph-gate CMD: what went wrong
// and why; what to do" on one line, as parseFlags does for usage errors — and returns code.
// cmd "" is the top level.
func fail(s streams, cmd string, code int, what, hint string) int {
	prefix := "ralph-gate"
	if cmd != "" {
		prefix += " " + cmd
	}
	if hint != "" {
		what += "; " + hint
	}
	fmt.Fprintf(s.err, "%s: %s\n", prefix, what)
	return code
}
