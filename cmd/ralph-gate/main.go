// Command ralph-gate is the GitHub App that enforces the agent workflow on Projects V2 boards,
// and its tools: validate a config, evaluate policy decisions from scripts, and more.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=...".
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
	code := run(ctx, os.Args[1:], streams{in: os.Stdin, out: os.Stdout, err: os.Stderr})
	stop()
	os.Exit(code)
}

const usage = `ralph-gate enforces the agent workflow on GitHub Projects V2 boards.

Usage:
  ralph-gate demo [--keep] [--verbose]     watch ralph-gate work on the built-in GitHub simulator
  ralph-gate bench [--quick] [--json] [--rtt 50ms] [--rate 100]
                                           measure speed, API cost and scale on the simulator
  ralph-gate serve [--config FILE]         run the GitHub App (webhooks at /api/github/hook, MCP at /mcp)
  ralph-gate mcp --stdio --config FILE [--agent NAME]
                                           serve the MCP façade on stdio for one local agent
  ralph-gate audit [--item N] [--since T] [--limit N] [--json] [--config FILE | --driver D --dsn DSN]
                                           print recorded decisions
  ralph-gate validate [--config FILE]      check a configuration, reporting every problem
  ralph-gate register --org ORG [--webhook-url URL] [--out FILE | --k8s-secret NAME] [--github-url URL]
                                           create the GitHub App from app.yml and save its credentials
  ralph-gate doctor --config FILE          check the App registration, installation and project boards
  ralph-gate policy check --from A --to B [--actor human|agent|bypass|app] [--config FILE]
  ralph-gate policy resolve --command C (--intent I | --state S) [--config FILE]
  ralph-gate policy pipeline [--config FILE]   (reads the issues as JSON on stdin)
  ralph-gate policy graph [--format mermaid|dot] [--config FILE]
  ralph-gate version

Without --config the embedded default configuration (config.yml) is used.
Exit codes: 0 evaluated (whatever the verdict), 1 a refusal or error result, 2 usage error.
`

func run(ctx context.Context, args []string, s streams) int {
	if len(args) == 0 {
		fmt.Fprint(s.err, usage)
		return exitUsage
	}
	switch args[0] {
	case "demo":
		return runDemo(ctx, args[1:], s)
	case "bench":
		return runBench(ctx, args[1:], s)
	case "serve":
		return runServe(ctx, args[1:], s)
	case "mcp":
		return runMCP(ctx, args[1:], s)
	case "audit":
		return runAudit(ctx, args[1:], s)
	case "register":
		return runRegister(ctx, args[1:], s)
	case "doctor":
		return runDoctor(ctx, args[1:], s)
	case "validate":
		return runValidate(args[1:], s)
	case "policy":
		return runPolicy(args[1:], s)
	case "version", "--version":
		fmt.Fprintf(s.out, "ralph-gate %s\n", version)
		return exitOK
	case "help", "-h", "--help":
		fmt.Fprint(s.out, usage)
		return exitOK
	default:
		fmt.Fprintf(s.err, "ralph-gate: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
}
