package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"
)

// newFlags declares a subcommand's flag set: errors go to stderr in one form, and -h/--help
// prints the command's synopsis (from the usage text) and its flags to stdout.
func newFlags(name string, s streams) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(s.err)
	fs.Usage = func() {} // parseFlags prints help itself, to the right stream
	return fs
}

// parseFlags parses a subcommand's arguments and rejects positional ones. When it returns
// false the command ends with the returned code: 0 after -h/--help, 2 for a usage error.
func parseFlags(fs *flag.FlagSet, args []string, s streams) (int, bool) {
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		printHelp(fs, s)
		return exitOK, false
	case err != nil:
		// flag has printed "flag provided but not defined: -x" or the like.
		fmt.Fprintf(s.err, "ralph-gate %s: run 'ralph-gate %s --help' for its flags\n", fs.Name(), fs.Name())
		return exitUsage, false
	case fs.NArg() > 0:
		fmt.Fprintf(s.err, "ralph-gate %s: unexpected argument %q; run 'ralph-gate %s --help' for its flags\n", fs.Name(), fs.Arg(0), fs.Name())
		return exitUsage, false
	}
	return exitOK, true
}

// printHelp prints a subcommand's synopsis lines from the usage text, then its flags.
func printHelp(fs *flag.FlagSet, s streams) {
	fmt.Fprintf(s.out, "Usage:\n%s\nFlags:\n", synopsis(fs.Name()))
	fs.SetOutput(s.out)
	fs.PrintDefaults()
	fs.SetOutput(s.err)
}

// synopsis is the part of the usage text that describes one command (its line and the
// indented lines after it).
func synopsis(name string) string {
	var b strings.Builder
	in := false
	for _, line := range strings.Split(usage, "\n") {
		switch {
		case strings.HasPrefix(line, "  ralph-gate "+name+" ") || line == "  ralph-gate "+name:
			in = true
		case strings.HasPrefix(line, "  ralph-gate ") || !strings.HasPrefix(line, "   "):
			in = false
		}
		if in {
			b.WriteString(line + "\n")
		}
	}
	if b.Len() == 0 {
		return "  ralph-gate " + name + "\n"
	}
	return b.String()
}
