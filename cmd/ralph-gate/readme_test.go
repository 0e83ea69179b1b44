package main

import (
	"flag"
	"os"
	"path/filepath"
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
