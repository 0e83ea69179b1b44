package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/ralph-gate/ralph-gate/app/config"
)

func runValidate(args []string, s streams) int {
	fs := newFlags("validate", s)
	file := fs.String("config", "", "configuration file (default: the embedded config.yml)")
	if code, ok := parseFlags(fs, args, s); !ok {
		return code
	}
	// The environment counts as it does for serve (RALPH_GATE_STORE_DSN, GITHUB_APP_*).
	cfg, err := config.LoadWithEnv(*file, os.LookupEnv)
	if err != nil {
		var problems config.Problems
		if errors.As(err, &problems) {
			for _, p := range problems {
				fmt.Fprintln(s.out, p.String())
			}
			fmt.Fprintf(s.out, "%d problem(s) in %s\n", len(problems), describe(*file))
			return exitError
		}
		fmt.Fprintf(s.err, "validate: %v\n", err)
		return exitError
	}
	m, err := cfg.Machine()
	if err != nil {
		fmt.Fprintf(s.err, "validate: %v\n", err)
		return exitError
	}
	fmt.Fprintf(s.out, "%s is valid: %d states, %d commands, %d intents\n",
		describe(*file), len(m.States()), len(m.Commands()), len(m.Intents()))
	return exitOK
}

func describe(file string) string {
	if file == "" {
		return "the embedded config.yml"
	}
	return file
}
