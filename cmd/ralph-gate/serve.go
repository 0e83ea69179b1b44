package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/app"
	"github.com/ralph-gate/ralph-gate/app/config"
)

func runServe(ctx context.Context, args []string, s streams) int {
	fs := newFlags("serve", s)
	file := fs.String("config", "", "configuration file (default: the embedded config.yml)")
	if code, ok := parseFlags(fs, args, s); !ok {
		return code
	}
	cfg, err := config.LoadForServe(*file)
	if err != nil {
		printProblems(s, err, *file)
		return exitError
	}
	logger := newLogger(s.err, cfg.Logging)
	ctx = logger.WithContext(ctx)
	a, err := app.New(ctx, cfg, app.Options{Version: version})
	if err != nil {
		logger.Error().Err(err).Msg("ralph-gate cannot start")
		return exitError
	}
	ln, err := net.Listen("tcp", a.ListenAddress())
	if err != nil {
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
func printProblems(s streams, err error, file string) {
	var problems config.Problems
	if errors.As(err, &problems) {
		for _, p := range problems {
			fmt.Fprintln(s.err, p.String())
		}
		fmt.Fprintf(s.err, "%d problem(s) in %s\n", len(problems), describe(file))
		return
	}
	fmt.Fprintf(s.err, "ralph-gate: %v\n", err)
}

// newLogger builds the process logger from the logging section.
func newLogger(w io.Writer, l config.Logging) zerolog.Logger {
	level, err := zerolog.ParseLevel(l.Level)
	if err != nil {
		level = zerolog.InfoLevel
	}
	if l.Format == "console" {
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: "15:04:05.000"}
	}
	return zerolog.New(w).Level(level).With().Timestamp().Str("service", "ralph-gate").Logger()
}
