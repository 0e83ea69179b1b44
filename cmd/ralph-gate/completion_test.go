package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// helpFlags reads a command's flags from its --help, independently of completion.go.
func helpFlags(t *testing.T, name string) []string {
	t.Helper()
	code, out, errOut := runCLI(t, "", append(strings.Fields(name), "--help")...)
	if code != exitOK {
		t.Fatalf("%s --help: exit %d: %s", name, code, errOut)
	}
	var flags []string
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`).FindAllStringSubmatch(out, -1) {
		flags = append(flags, m[1])
	}
	return flags
}

// Every shell's script names every command of the table and, in that command's own entry,
// every flag its --help lists.
func TestCompletionCoversEveryCommandAndFlag(t *testing.T) {
	scripts := map[string]string{}
	for _, sh := range completionShells() {
		code, out, errOut := runCLI(t, "", "completion", sh)
		if code != exitOK || errOut != "" {
			t.Fatalf("completion %s: exit %d: %s", sh, code, errOut)
		}
		scripts[sh] = out
	}
	for _, c := range commands() {
		words := strings.Fields(c.name)
		flags := append(helpFlags(t, c.name), "help")
		for sh, script := range scripts {
			for _, w := range words {
				if !regexp.MustCompile(`\b` + regexp.QuoteMeta(w) + `\b`).MatchString(script) {
					t.Errorf("%s script lacks the command %q", sh, c.name)
				}
			}
			entry := commandEntry(t, sh, script, c.name)
			for _, f := range flags {
				want := "--" + f
				if sh == "fish" {
					want = "-l " + f + " "
				}
				if !strings.Contains(entry, want) {
					t.Errorf("%s script: %q lacks the flag --%s:\n%s", sh, c.name, f, entry)
				}
			}
		}
	}
}

// commandEntry is the part of a script that completes the flags of one command.
func commandEntry(t *testing.T, shell, script, name string) string {
	t.Helper()
	var lines []string
	for _, line := range strings.Split(script, "\n") {
		switch shell {
		case "bash":
			if strings.HasPrefix(strings.TrimSpace(line), "'"+name+"') COMPREPLY=") {
				lines = append(lines, line)
			}
		case "zsh":
			if strings.HasPrefix(strings.TrimSpace(line), "'"+name+"') items=(") {
				lines = append(lines, line)
			}
		case "fish":
			words := strings.Fields(name)
			cond := "__fish_seen_subcommand_from " + words[0]
			if len(words) == 2 {
				cond += "; and __fish_seen_subcommand_from " + words[1]
			}
			if strings.Contains(line, "-n '"+cond+"' -l ") {
				lines = append(lines, line)
			}
		}
	}
	if len(lines) == 0 {
		t.Errorf("%s script has no entry for %q", shell, name)
	}
	return strings.Join(lines, "\n") + "\n"
}

// completionTry is one completion a person asks for.
type completionTry struct {
	words []string // after "ralph-gate"; the last is the word being completed
	want  []string // all of these offered; nil: nothing, or only file names when files is set
	files bool     // the shell completes file names here
}

func completionTries(t *testing.T) []completionTry {
	tries := []completionTry{
		{words: []string{""}, want: []string{"demo", "bench", "serve", "mcp", "audit", "validate", "register", "doctor", "policy", "completion", "version", "help"}},
		{words: []string{"po"}, want: []string{"policy"}},
		{words: []string{"policy", ""}, want: []string{"check", "resolve", "pipeline", "graph"}},
		{words: []string{"completion", ""}, want: []string{"bash", "zsh", "fish"}},
		{words: []string{"policy", "check", "--actor", ""}, want: []string{"human", "agent", "bypass", "app"}},
		{words: []string{"policy", "check", "--from", "Backlog", "--ac"}, want: []string{"--actor"}},
		{words: []string{"policy", "graph", "--format", ""}, want: []string{"mermaid", "dot"}},
		{words: []string{"audit", "--driver", ""}, want: []string{"sqlite", "postgres"}},
		{words: []string{"audit", "--d"}, want: []string{"--driver", "--dsn"}},
		{words: []string{"audit", "--dsn", ""}, files: true},
		{words: []string{"demo", "--listen", ""}}, // an address: nothing to offer
		{words: []string{"demo", "--"}, want: []string{"--keep", "--listen", "--sim-listen", "--verbose", "--help"}},
	}
	for _, c := range commands() {
		for _, f := range helpFlags(t, c.name) {
			tries = append(tries, completionTry{words: append(strings.Fields(c.name), "--"+f[:min(2, len(f))]), want: []string{"--" + f}})
		}
	}
	return tries
}

// shellWords quotes words for a POSIX shell, zsh or fish.
func shellWords(words []string) string {
	var q []string
	for _, w := range words {
		q = append(q, "'"+w+"'")
	}
	return strings.Join(q, " ")
}

// Each script, loaded into its shell (when installed), completes what a person types:
// commands, policy subcommands, shells, every flag of every command by its prefix, the values
// the usage text lists, file names where a file is expected and nothing where it is not.
func TestCompletionInShells(t *testing.T) {
	drivers := map[string]func(script string, tries []completionTry) string{
		"bash": func(script string, tries []completionTry) string {
			var b strings.Builder
			b.WriteString(script)
			b.WriteString(`try() { COMP_WORDS=(ralph-gate "$@"); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); COMPREPLY=(); _ralph_gate; echo "${COMPREPLY[*]}"; }` + "\n")
			for _, tr := range tries {
				b.WriteString("try " + shellWords(tr.words) + "\n")
			}
			return b.String()
		},
		// zsh's completion system needs a terminal; its functions are stood in for by ones
		// that print what they would offer.
		"zsh": func(script string, tries []completionTry) string {
			var b strings.Builder
			b.WriteString(`compdef() { :; }
typeset -a offered
_describe() { local arr=${@[-1]} x; for x in ${(P)arr}; do offered+=(${x%%:*}); done; }
compadd() { while [[ $1 != -- ]]; do shift; done; shift; offered+=("$@"); }
_files() { offered+=('<files>'); }
_message() { :; }
`)
			b.WriteString(script)
			b.WriteString(`try() { offered=(); words=(ralph-gate "$@"); CURRENT=${#words}; PREFIX=${words[CURRENT]}; _ralph-gate; print -r -- "${offered[*]}"; }` + "\n")
			for _, tr := range tries {
				b.WriteString("try " + shellWords(tr.words) + "\n")
			}
			return b.String()
		},
		"fish": func(script string, tries []completionTry) string {
			var b strings.Builder
			b.WriteString(script)
			b.WriteString(`function try; set -l found; for line in (complete -C "ralph-gate $argv"); set -a found (string split -m1 -- \t $line)[1]; end; echo "$found"; end` + "\n")
			for _, tr := range tries {
				b.WriteString("try " + shellWords(tr.words) + "\n")
			}
			return b.String()
		},
	}
	tries := completionTries(t)
	for _, sh := range completionShells() {
		t.Run(sh, func(t *testing.T) {
			bin, err := exec.LookPath(sh)
			if err != nil {
				t.Skipf("%s is not installed", sh)
			}
			_, script, _ := runCLI(t, "", "completion", sh)
			dir := t.TempDir()
			file := filepath.Join(dir, "driver")
			if err := os.WriteFile(file, []byte(drivers[sh](script, tries)), 0o600); err != nil {
				t.Fatal(err)
			}
			args := []string{file}
			if sh == "bash" {
				args = []string{"--norc", "--noprofile", file}
			} else if sh == "zsh" {
				args = []string{"-f", file}
			}
			cmd := exec.Command(bin, args...)
			cmd.Dir = dir // file names offered come from an empty directory
			cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+dir, "XDG_DATA_HOME="+dir)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", sh, err, out)
			}
			got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
			if len(got) != len(tries) {
				t.Fatalf("%s printed %d lines for %d tries:\n%s", sh, len(got), len(tries), out)
			}
			for i, tr := range tries {
				offered := strings.Fields(got[i])
				if tr.files {
					// bash leaves file names to its default completion (complete -o default);
					// zsh's stand-in _files says "<files>"; fish lists the directory's files.
					file := map[string]string{"zsh": "<files>", "fish": "driver"}[sh]
					if file != "" && !slices.Contains(offered, file) {
						t.Errorf("ralph-gate %s<TAB> offered %v, not file names", strings.Join(tr.words, " "), offered)
					}
					offered = nil
				}
				if tr.want == nil && len(offered) > 0 {
					t.Errorf("ralph-gate %s<TAB> offered %v, want nothing", strings.Join(tr.words, " "), offered)
				}
				for _, w := range tr.want {
					if !slices.Contains(offered, w) {
						t.Errorf("ralph-gate %s<TAB> offered %v, lacking %q", strings.Join(tr.words, " "), offered, w)
					}
				}
			}
		})
	}
}

// zsh and fish, when installed, accept their scripts.
func TestCompletionScriptsParse(t *testing.T) {
	for _, tt := range []struct{ shell, check string }{{"bash", "-n"}, {"zsh", "-n"}, {"fish", "--no-execute"}} {
		t.Run(tt.shell, func(t *testing.T) {
			bin, err := exec.LookPath(tt.shell)
			if err != nil {
				t.Skipf("%s is not installed", tt.shell)
			}
			_, script, _ := runCLI(t, "", "completion", tt.shell)
			file := filepath.Join(t.TempDir(), "script")
			if err := os.WriteFile(file, []byte(script), 0o600); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(bin, tt.check, file).CombinedOutput(); err != nil {
				t.Errorf("%s %s: %v\n%s", tt.shell, tt.check, err, out)
			}
		})
	}
}

func TestCompletionUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"completion"}, "ralph-gate completion: name the shell to complete for; run 'ralph-gate completion bash'"},
		{[]string{"completion", "tcsh"}, `ralph-gate completion: no completion for shell "tcsh"; choose bash, zsh or fish`},
		{[]string{"completion", "bash", "extra"}, `ralph-gate completion: unexpected argument "extra"`},
	}
	for _, tt := range tests {
		code, out, errOut := runCLI(t, "", tt.args...)
		if code != exitUsage || out != "" || !strings.HasPrefix(errOut, tt.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", tt.args, code, out, errOut, tt.want)
		}
	}
}

// The usage text and the command table agree: every command of the table has its synopsis
// in the usage text (so --help and completion describe it), and every command the usage
// text shows is in the table (so it runs and completes).
func TestUsageMatchesCommandTable(t *testing.T) {
	table := map[string]bool{}
	for _, c := range commands() {
		table[c.name] = true
		if !strings.Contains(usage, "\n  ralph-gate "+c.name+" ") && !strings.Contains(usage, "\n  ralph-gate "+c.name+"\n") {
			t.Errorf("the usage text lacks a line for %q", c.name)
		}
		code, out, errOut := runCLI(t, "", append(strings.Fields(c.name), "--help")...)
		if code != exitOK || !strings.HasPrefix(out, "Usage:\n  ralph-gate "+c.name) || !strings.Contains(out, "Flags:") || errOut != "" {
			t.Errorf("%s --help: exit %d\n%s%s", c.name, code, out, errOut)
		}
	}
	for _, m := range regexp.MustCompile(`(?m)^  ralph-gate ([a-z]+)(?: ([a-z]+))?`).FindAllStringSubmatch(usage, -1) {
		name := m[1]
		if m[1] == "policy" {
			name += " " + m[2]
		}
		if !table[name] {
			t.Errorf("the usage text shows %q, which is not in the command table", name)
		}
	}
	if t.Failed() {
		t.Logf("usage text:\n%s", usage)
	}
}
