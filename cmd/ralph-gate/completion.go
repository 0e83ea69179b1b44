package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
)

// completionShells are the shells `ralph-gate completion` writes scripts for.
func completionShells() []string { return []string{"bash", "zsh", "fish"} }

// runCompletion prints a completion script for a shell. Everything it completes comes from
// the command table (main.go), the usage text and each command's own flags (asked with
// --help), so the script cannot drift from the binary that wrote it.
func runCompletion(ctx context.Context, args []string, s streams) int {
	fs := newFlags("completion", s)
	shell := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		shell, args = args[0], args[1:]
	}
	if code, ok := parseFlags(fs, args, s); !ok {
		return code
	}
	if shell == "" {
		return fail(s, "completion", exitUsage, "name the shell to complete for", "run 'ralph-gate completion bash', 'zsh' or 'fish' (the README shows how to load the script)")
	}
	if !slices.Contains(completionShells(), shell) {
		return fail(s, "completion", exitUsage, fmt.Sprintf("no completion for shell %q", shell), "choose bash, zsh or fish")
	}
	tree := completionTree(ctx)
	switch shell {
	case "bash":
		writeBash(s.out, tree)
	case "zsh":
		writeZsh(s.out, tree)
	case "fish":
		writeFish(s.out, tree)
	}
	return exitOK
}

// compCommand is one word of the command line with what may follow it.
type compCommand struct {
	name  string // "audit", or "check" under policy
	about string
	flags []compFlag
	subs  []compCommand // policy's subcommands, completion's shells
}

// compFlag is one flag of a command.
type compFlag struct {
	name   string   // without dashes
	kind   string   // "" for a switch, else the value's name as flag prints it (string, int, duration…)
	about  string   // the flag's help
	values []string // the values it takes, when the usage text lists them (--format mermaid|dot)
	// placeholder is how the usage text names its value (FILE in --config FILE), if it shows it.
	placeholder string
}

// takesFile reports whether the flag's value is completed with file names: when the usage text
// shows it as a FILE or DSN (an SQLite file), or, for a flag it does not show, when the flag's
// name says it is a file.
func (f compFlag) takesFile() bool {
	if f.kind == "" {
		return false
	}
	if f.placeholder != "" {
		return f.placeholder == "FILE" || f.placeholder == "DSN" || f.placeholder == "DIR"
	}
	return regexp.MustCompile(`config|file|out|manifest|profile|dsn|dir`).MatchString(f.name)
}

// key is how scripts name a command: "audit", "policy check".
func (c compCommand) key(parent string) string {
	if parent == "" {
		return c.name
	}
	return parent + " " + c.name
}

// completionTree reads the command table into the tree the scripts complete: the commands
// in table order, a command with a subcommand ("policy check") grouped under its first word,
// each with its flags as its --help prints them.
func completionTree(ctx context.Context) []compCommand {
	var tree []compCommand
	for _, c := range commands() {
		words := strings.Fields(c.name)
		cmd := compCommand{name: words[len(words)-1], about: aboutOf(c.name), flags: flagsOf(ctx, c.name)}
		if c.name == "completion" {
			for _, sh := range completionShells() {
				cmd.subs = append(cmd.subs, compCommand{name: sh, about: "print the " + sh + " completion script"})
			}
		}
		if len(words) == 1 {
			tree = append(tree, cmd)
			continue
		}
		i := slices.IndexFunc(tree, func(t compCommand) bool { return t.name == words[0] })
		if i < 0 {
			tree = append(tree, compCommand{name: words[0], about: words[0] + " subcommands"})
			i = len(tree) - 1
		}
		tree[i].subs = append(tree[i].subs, cmd)
	}
	tree = append(tree, compCommand{name: "help", about: "print the usage"})
	return tree
}

// flagsOf asks a command for its flags, as `ralph-gate NAME --help` prints them (flag's
// PrintDefaults after "Flags:"), and adds the values the usage text lists for them.
func flagsOf(ctx context.Context, name string) []compFlag {
	var out bytes.Buffer
	run(ctx, append(strings.Fields(name), "--help"), streams{in: strings.NewReader(""), out: &out, err: io.Discard})
	_, defaults, _ := strings.Cut(out.String(), "Flags:\n")
	var flags []compFlag
	sc := bufio.NewScanner(strings.NewReader(defaults))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "  -"):
			head, _, _ := strings.Cut(line, "\t") // a one-letter switch has its help on its line
			fields := strings.Fields(head)
			f := compFlag{name: strings.TrimPrefix(fields[0], "-")}
			if len(fields) > 1 {
				f.kind = fields[1]
			}
			flags = append(flags, f)
		case len(flags) > 0:
			// The help follows on lines indented with a tab; keep the first sentence-ish line.
			if f := &flags[len(flags)-1]; f.about == "" {
				f.about = strings.TrimSpace(line)
			}
		}
	}
	syn := synopsis(name)
	choices := flagChoices(syn)
	for i := range flags {
		flags[i].values = choices[flags[i].name]
		if m := regexp.MustCompile(`--` + regexp.QuoteMeta(flags[i].name) + `[ =]([A-Z][A-Z_]*)\b`).FindStringSubmatch(syn); m != nil {
			flags[i].placeholder = m[1]
		}
	}
	return append(flags, compFlag{name: "help", about: "print the command's usage and flags"})
}

// flagChoices finds the flags whose values the usage text enumerates: "--format mermaid|dot".
func flagChoices(text string) map[string][]string {
	out := map[string][]string{}
	choice := regexp.MustCompile(`--([a-z][a-z-]*)[ =]([a-z0-9]+(?:\|[a-z0-9]+)+)`)
	for _, m := range choice.FindAllStringSubmatch(text, -1) {
		out[m[1]] = strings.Split(m[2], "|")
	}
	return out
}

// aboutOf is the description the usage text gives a command: the text after the synopsis on
// its line, or else the last of the indented lines below it (a long synopsis may wrap first).
// Without one, it is the synopsis's arguments ("--from A --to B …").
func aboutOf(name string) string {
	about, args := "", ""
	for i, line := range strings.Split(strings.TrimRight(synopsis(name), "\n"), "\n") {
		line = strings.TrimSpace(line)
		if i == 0 {
			if _, inline, ok := strings.Cut(line, "   "); ok {
				return strings.TrimSpace(inline)
			}
			args = strings.TrimSpace(strings.TrimPrefix(line, "ralph-gate "+name))
			continue
		}
		about = line
	}
	return cmp.Or(about, args)
}

func bashWords(cmds []compCommand) string {
	var w []string
	for _, c := range cmds {
		w = append(w, c.name)
	}
	return strings.Join(w, " ")
}

func flagWords(flags []compFlag) string {
	var w []string
	for _, f := range flags {
		w = append(w, "--"+f.name)
	}
	return strings.Join(w, " ")
}

// flagPattern is a shell case pattern matching "KEY:--flag" and "KEY:-flag".
func flagPattern(key string, f compFlag) string {
	return fmt.Sprintf("'%s:--%s'|'%s:-%s'", key, f.name, key, f.name)
}

// eachCommand calls fn for every command that takes flags, with its key.
func eachCommand(tree []compCommand, fn func(key string, c compCommand)) {
	for _, c := range tree {
		fn(c.key(""), c)
		for _, sub := range c.subs {
			fn(sub.key(c.name), sub)
		}
	}
}

// groups are the commands whose next word is a subcommand (policy) or an argument
// (completion's shell).
func groups(tree []compCommand) []compCommand {
	var out []compCommand
	for _, c := range tree {
		if len(c.subs) > 0 {
			out = append(out, c)
		}
	}
	return out
}

func writeBash(w io.Writer, tree []compCommand) {
	var b strings.Builder
	b.WriteString(`# bash completion for ralph-gate, written by 'ralph-gate completion bash'.
# Load it in the current shell:   source <(ralph-gate completion bash)
# or for every shell:             ralph-gate completion bash > ~/.local/share/bash-completion/completions/ralph-gate
_ralph_gate() {
    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}"
    local cmd="" w i
    for ((i = 1; i < COMP_CWORD; i++)); do
        w="${COMP_WORDS[i]}"
        case "$w" in -*) continue ;; esac
        if [[ -z "$cmd" ]]; then
            cmd="$w"
        else
            case "$cmd" in
`)
	for _, g := range groups(tree) {
		fmt.Fprintf(&b, "            %s) cmd=\"$cmd $w\" ;;\n", g.name)
	}
	b.WriteString(`            esac
        fi
    done
    case "$cmd" in
`)
	fmt.Fprintf(&b, "    '') COMPREPLY=($(compgen -W %q -- \"$cur\")); return ;;\n", bashWords(tree))
	for _, g := range groups(tree) {
		fmt.Fprintf(&b, "    %s) if [[ \"$cur\" != -* ]]; then COMPREPLY=($(compgen -W %q -- \"$cur\")); return; fi ;;\n", g.name, bashWords(g.subs))
	}
	b.WriteString("    esac\n    case \"$cmd:$prev\" in\n")
	eachCommand(tree, func(key string, c compCommand) {
		for _, f := range c.flags {
			switch {
			case len(f.values) > 0:
				fmt.Fprintf(&b, "    %s) COMPREPLY=($(compgen -W %q -- \"$cur\")); return ;;\n", flagPattern(key, f), strings.Join(f.values, " "))
			case f.takesFile():
				// A path, DSN or address: file names (bash's default, complete -o default).
				fmt.Fprintf(&b, "    %s) COMPREPLY=(); return ;;\n", flagPattern(key, f))
			case f.kind != "":
				// A number, a duration, a name, a URL: nothing to offer, not even file names.
				fmt.Fprintf(&b, "    %s) compopt +o default 2>/dev/null; COMPREPLY=(); return ;;\n", flagPattern(key, f))
			}
		}
	})
	b.WriteString("    esac\n    case \"$cmd\" in\n")
	eachCommand(tree, func(key string, c compCommand) {
		if len(c.flags) > 0 {
			fmt.Fprintf(&b, "    '%s') COMPREPLY=($(compgen -W %q -- \"$cur\")) ;;\n", key, flagWords(c.flags))
		}
	})
	b.WriteString(`    esac
}
complete -o default -F _ralph_gate ralph-gate
`)
	io.WriteString(w, b.String())
}

// zshQuote quotes s for zsh in single quotes.
func zshQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func zshItems(cmds []compCommand) string {
	var items []string
	for _, c := range cmds {
		items = append(items, zshQuote(c.name+":"+c.about))
	}
	return strings.Join(items, " ")
}

func writeZsh(w io.Writer, tree []compCommand) {
	var b strings.Builder
	b.WriteString(`#compdef ralph-gate
# zsh completion for ralph-gate, written by 'ralph-gate completion zsh'.
# Load it in the current shell (after compinit):  source <(ralph-gate completion zsh)
# or for every shell: save it as _ralph-gate in a directory of $fpath.
_ralph-gate() {
  local cmd="" w i
  local -a items
  for (( i = 2; i < CURRENT; i++ )); do
    w=${words[i]}
    [[ $w == -* ]] && continue
    if [[ -z $cmd ]]; then
      cmd=$w
    else
      case $cmd in
`)
	for _, g := range groups(tree) {
		fmt.Fprintf(&b, "        %s) cmd=\"$cmd $w\" ;;\n", g.name)
	}
	b.WriteString(`      esac
    fi
  done
  local prev=${words[CURRENT-1]}
  case $cmd in
`)
	fmt.Fprintf(&b, "    '') items=(%s); _describe -t commands 'ralph-gate command' items; return ;;\n", zshItems(tree))
	for _, g := range groups(tree) {
		fmt.Fprintf(&b, "    %s) if [[ $PREFIX != -* ]]; then items=(%s); _describe -t commands '%s subcommand' items; return; fi ;;\n", g.name, zshItems(g.subs), g.name)
	}
	b.WriteString("  esac\n  case \"$cmd:$prev\" in\n")
	eachCommand(tree, func(key string, c compCommand) {
		for _, f := range c.flags {
			switch {
			case len(f.values) > 0:
				fmt.Fprintf(&b, "    %s) compadd -- %s; return ;;\n", flagPattern(key, f), strings.Join(f.values, " "))
			case f.takesFile():
				fmt.Fprintf(&b, "    %s) _files; return ;;\n", flagPattern(key, f))
			case f.kind != "":
				fmt.Fprintf(&b, "    %s) _message %s; return ;;\n", flagPattern(key, f), zshQuote(cmp.Or(f.placeholder, f.kind)))
			}
		}
	})
	b.WriteString("  esac\n  case $cmd in\n")
	eachCommand(tree, func(key string, c compCommand) {
		if len(c.flags) == 0 {
			return
		}
		var items []string
		for _, f := range c.flags {
			items = append(items, zshQuote("--"+f.name+":"+f.about))
		}
		fmt.Fprintf(&b, "    '%s') items=(%s); _describe -t options 'flag' items ;;\n", key, strings.Join(items, " "))
	})
	b.WriteString(`  esac
}
if [[ $funcstack[1] == _ralph-gate ]]; then
  _ralph-gate "$@"
else
  compdef _ralph-gate ralph-gate
fi
`)
	io.WriteString(w, b.String())
}

// fishQuote quotes s for fish in single quotes.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

func writeFish(w io.Writer, tree []compCommand) {
	var b strings.Builder
	b.WriteString(`# fish completion for ralph-gate, written by 'ralph-gate completion fish'.
# Load it in the current shell:  ralph-gate completion fish | source
# or for every shell:            ralph-gate completion fish > ~/.config/fish/completions/ralph-gate.fish
complete -c ralph-gate -f
`)
	desc := func(about string) string {
		if about == "" {
			return ""
		}
		return " -d " + fishQuote(about)
	}
	for _, c := range tree {
		fmt.Fprintf(&b, "complete -c ralph-gate -n __fish_use_subcommand -a %s%s\n", c.name, desc(c.about))
	}
	for _, g := range groups(tree) {
		for _, sub := range g.subs {
			fmt.Fprintf(&b, "complete -c ralph-gate -n %s -a %s%s\n",
				fishQuote("__fish_seen_subcommand_from "+g.name+"; and not __fish_seen_subcommand_from "+bashWords(g.subs)), sub.name, desc(sub.about))
		}
	}
	flagLines := func(cond string, c compCommand) {
		for _, f := range c.flags {
			arg := ""
			switch {
			case len(f.values) > 0:
				arg = " -x -a " + fishQuote(strings.Join(f.values, " "))
			case f.takesFile():
				arg = " -r -F"
			case f.kind != "":
				arg = " -x"
			}
			fmt.Fprintf(&b, "complete -c ralph-gate -n %s -l %s%s%s\n", fishQuote(cond), f.name, arg, desc(f.about))
		}
	}
	for _, c := range tree {
		flagLines("__fish_seen_subcommand_from "+c.name, c)
		for _, sub := range c.subs {
			flagLines("__fish_seen_subcommand_from "+c.name+"; and __fish_seen_subcommand_from "+sub.name, sub)
		}
	}
	io.WriteString(w, b.String())
}
