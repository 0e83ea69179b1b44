package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/ralph-gate/ralph-gate/app/config"
)

func runServe(ctx context.Context, args []string, s streams) int {
	fs := newFlags("serve", s)
	file := fs.String("config", "", "configuration file (default: the embedded config.yml, which lists no project)")
	if code, ok := parseFlags(fs, args, s); !ok {
		return code
	}
	// The same checks as validate and doctor (config.Preflight), for what serving needs.
	cfg, err := config.LoadFor(*file, config.ForServe, os.LookupEnv)
	if err != nil {
		printProblems(s, "serve", err, *file)
		return exitError
	}
	logger := newLogger(s.err, cfg.Logging)
	ctx = logger.WithContext(ctx)
	addr := net.JoinHostPort(cfg.Server.Address, strconv.Itoa(cfg.Server.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		logger.Error().Err(err).Msg("cannot listen")
		return exitError
	}
	// Until the App has authenticated, the port answers: alive, not ready (starting.go).
	wait := serveStarting(ln)
	// CheckBoards: /readyz stays 503 until every enforced board has the workflow's options.
	a, err := newWhenGitHubAnswers(ctx, cfg, wait)
	if err != nil {
		wait.stop()
		if ctx.Err() != nil {
			logger.Info().Msg("ralph-gate stopped before it could start")
			return exitOK
		}
		logger.Error().Err(err).Msg("ralph-gate cannot start")
		return exitError
	}
	wait.stop()
	if ln, err = net.Listen("tcp", ln.Addr().String()); err != nil {
		logger.Error().Err(err).Msg("cannot listen")
		return exitError
	}
	if err := a.Serve(ctx, ln); err != nil {
		logger.Error().Err(err).Msg("ralph-gate stopped with an error")
		return exitError
	}
	logger.Info().Msg("ralph-gate stopped")
	return exitOK
}

// printProblems prints every configuration problem, one per line.
func printProblems(s streams, cmd string, err error, file string) {
	var problems config.Problems
	if errors.As(err, &problems) {
		for _, p := range problems {
			fmt.Fprintln(s.err, p.String())
		}
		fmt.Fprintf(s.err, "%d problem(s) in %s\n", len(problems), describe(file))
		if file == "" {
			fmt.Fprintln(s.err, "(no --config was given: the embedded config.yml names no project and no App; give --config FILE)")
		}
		return
	}
	fmt.Fprintf(s.err, "ralph-gate %s: %v\n", cmd, err)
}
