// Command ghsim runs the in-memory GitHub simulator (package ghsim) as its own process:
//
//	ghsim serve --seed seed.yaml --listen 127.0.0.1:PORT [--webhook-url URL]
//
// It prints "ghsim listening on http://127.0.0.1:PORT" once ready and stops gracefully on SIGINT
// or SIGTERM. On a running simulator (ghsim serve, or ralph-gate demo --keep),
//
//	ghsim move --sim URL --token TOKEN [--wait 20s] ISSUE STATE
//
// changes an issue's Workflow State as the seeded user holding TOKEN.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/ralph-gate/ralph-gate/ghsim"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: ghsim serve --seed FILE [--listen 127.0.0.1:PORT] [--webhook-url URL] [--random-seed N] [--rate-limit N]
       ghsim move [--sim URL] --token TOKEN [--field NAME] [--wait DURATION] ISSUE STATE

serve runs an in-memory GitHub (REST under /api/v3/, GraphQL at /api/graphql, signed webhooks,
fault injection and inspection under /_sim/) built from a seed file.
move sets an issue's Workflow State on a running simulator as the seeded user holding TOKEN
(ISSUE is 3, app#3 or acme/app#3), and with --wait prints what became of the move.
`

// run is main without the process: exit code 0 after a clean shutdown, 1 on failure, 2 on
// usage errors.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "move" {
		return runMove(ctx, args[1:], stdout, stderr)
	}
	if len(args) == 0 || args[0] != "serve" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprint(stdout, usage)
			return 0
		}
		fmt.Fprint(stderr, usage)
		return 2
	}
	fs := flag.NewFlagSet("ghsim serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seedPath := fs.String("seed", "", "seed YAML file (required)")
	listen := fs.String("listen", "127.0.0.1:8090", "loopback address to listen on (port 0 picks a free one)")
	webhookURL := fs.String("webhook-url", "", "where to deliver webhooks (overrides the seed's app.webhook_url)")
	randomSeed := fs.Uint64("random-seed", 1, "seed for fault draws, delivery GUIDs and tokens")
	rateLimit := fs.Int("rate-limit", 5000, "hourly request budget per identity and resource")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *seedPath == "" || fs.NArg() > 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	seed, err := ghsim.LoadSeed(*seedPath)
	if err != nil {
		fmt.Fprintf(stderr, "ghsim: %v\n", err)
		return 1
	}
	srv, err := ghsim.New(seed, ghsim.Options{WebhookURL: *webhookURL, RandomSeed: *randomSeed, RateLimit: *rateLimit})
	if err != nil {
		fmt.Fprintf(stderr, "ghsim: %v\n", err)
		return 1
	}
	url, err := srv.Start(ctx, *listen)
	if err != nil {
		fmt.Fprintf(stderr, "ghsim: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "ghsim listening on %s\n", url)
	<-ctx.Done()
	if err := srv.Close(); err != nil {
		fmt.Fprintf(stderr, "ghsim: shutdown: %v\n", err)
		return 1
	}
	return 0
}
