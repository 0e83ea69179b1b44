package main

import (
	"strings"
	"testing"
)

// Every command answers -h and --help with its synopsis and flags on stdout and exit 0, and a
// bad flag or a stray argument with one line naming the command and how to get help, exit 2.
func TestHelpAndUsageErrors(t *testing.T) {
	commands := [][]string{
		{"demo"}, {"bench"}, {"serve"}, {"mcp"}, {"audit"}, {"validate"}, {"register"}, {"doctor"},
		{"policy", "check"}, {"policy", "resolve"}, {"policy", "pipeline"}, {"policy", "graph"},
	}
	for _, cmd := range commands {
		name := strings.Join(cmd, " ")
		for _, help := range []string{"-h", "--help"} {
			code, out, errOut := runCLI(t, "", append(cmd, help)...)
			if code != exitOK || !strings.Contains(out, "Usage:\n  ralph-gate "+name) || !strings.Contains(out, "Flags:") || errOut != "" {
				t.Errorf("%s %s: exit %d\nstdout:\n%s\nstderr:\n%s", name, help, code, out, errOut)
			}
		}
		code, _, errOut := runCLI(t, "", append(cmd, "--no-such-flag")...)
		if code != exitUsage || !strings.Contains(errOut, "ralph-gate "+name+": run 'ralph-gate "+name+" --help'") {
			t.Errorf("%s --no-such-flag: exit %d, stderr:\n%s", name, code, errOut)
		}
		code, _, errOut = runCLI(t, "", append(cmd, "stray")...)
		if code != exitUsage || !strings.Contains(errOut, `ralph-gate `+name+`: unexpected argument "stray"`) {
			t.Errorf("%s stray: exit %d, stderr:\n%s", name, code, errOut)
		}
	}
	for _, help := range []string{"-h", "--help", "help"} {
		code, out, _ := runCLI(t, "", "policy", help)
		if code != exitOK || !strings.Contains(out, "ralph-gate policy check") {
			t.Errorf("policy %s: exit %d\n%s", help, code, out)
		}
	}
}
