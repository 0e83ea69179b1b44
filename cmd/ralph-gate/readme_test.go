package main

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ralph-gate/ralph-gate/app/config"
)

var update = flag.Bool("update", false, "rewrite generated sections of README.md")

const (
	graphStart = "<!-- workflow-graph:start"
	graphEnd   = "<!-- workflow-graph:end -->"
)

// TestReadmeWorkflowGraph keeps the README's diagram equal to the machine config.yml builds.
func TestReadmeWorkflowGraph(t *testing.T) {
	cfg, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	m, err := cfg.Machine()
	if err != nil {
		t.Fatal(err)
	}
	want := "```mermaid\n" + m.Mermaid() + "```\n"
	readme := filepath.Join("..", "..", "README.md")
	data, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	start := strings.Index(text, graphStart)
	end := strings.Index(text, graphEnd)
	if start < 0 || end < start {
		t.Fatalf("README.md lacks the %q … %q markers", graphStart, graphEnd)
	}
	bodyStart := start + strings.Index(text[start:], "-->\n") + len("-->\n")
	if got := text[bodyStart:end]; got != want {
		if *update {
			text = text[:bodyStart] + want + text[end:]
			if err := os.WriteFile(readme, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("README.md's workflow graph drifted from config.yml; run: go test ./cmd/ralph-gate -run TestReadmeWorkflowGraph -update\ngot:\n%s\nwant:\n%s", got, want)
	}
}

// readmeCommands finds every ralph-gate command line README.md shows — in code blocks
// (`go run ./cmd/ralph-gate …`, `$ ralph-gate …`, `source <(ralph-gate …)`) and in inline code (`ralph-gate …`) — as the
// words after "ralph-gate", up to a pipe or a shell comment.
func readmeCommands(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	block := regexp.MustCompile(`(?:go run \./cmd/|^\s*(?:\$ )?|<\()ralph-gate ([a-z].*)`)
	inline := regexp.MustCompile("`ralph-gate ([a-z][^`]*)`")
	fenced := false
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		var found []string
		if fenced {
			if m := block.FindStringSubmatch(line); m != nil {
				found = append(found, m[1])
			}
		} else {
			for _, m := range inline.FindAllStringSubmatch(line, -1) {
				found = append(found, m[1])
			}
		}
		for _, f := range found {
			f, _, _ = strings.Cut(f, " #")
			f, _, _ = strings.Cut(f, " |")
			lines = append(lines, strings.TrimSpace(f))
		}
	}
	return lines
}

// Every ralph-gate command line README.md shows names a command of the command table and only
// flags that command takes, so the quick start and the examples work as written.
func TestReadmeCommandsExist(t *testing.T) {
	table := map[string]bool{"help": true, "policy": true}
	for _, c := range commands() {
		table[c.name] = true
	}
	lines := readmeCommands(t)
	if len(lines) == 0 {
		t.Fatal("found no ralph-gate command in README.md")
	}
	flagRE := regexp.MustCompile(`(?:^|[\s\[(|])--([a-z][a-z0-9-]*)`)
	for _, line := range lines {
		words := strings.Fields(line)
		name := strings.Trim(words[0], "`.,;:)")
		if name == "policy" && len(words) > 1 && table["policy "+words[1]] {
			name += " " + words[1]
		}
		if !table[name] {
			t.Errorf("README.md shows `ralph-gate %s`, but %q is not a command", line, name)
			continue
		}
		if name == "help" || name == "policy" {
			continue
		}
		known := helpFlags(t, name)
		for _, m := range flagRE.FindAllStringSubmatch(line, -1) {
			if m[1] != "help" && !slices.Contains(known, m[1]) {
				t.Errorf("README.md shows `ralph-gate %s`, but %s takes no --%s (it takes %v)", line, name, m[1], known)
			}
		}
	}
}

// README.md tells how to load the completion script of every shell `completion` writes.
func TestReadmeDocumentsCompletion(t *testing.T) {
	lines := strings.Join(readmeCommands(t), "\n")
	for _, sh := range completionShells() {
		if !strings.Contains(lines, "completion "+sh) {
			t.Errorf("README.md does not show `ralph-gate completion %s`", sh)
		}
	}
}
