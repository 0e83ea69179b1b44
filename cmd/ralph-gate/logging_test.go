package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ralph-gate/ralph-gate/app/config"
)

// The console format colours only a terminal: written to a file or a pipe (as when stderr is
// redirected to a log file) it carries no escape code; the JSON format never does.
func TestConsoleLogsCarryNoEscapeCodesOutsideATerminal(t *testing.T) {
	tests := []struct {
		name   string
		format string
		open   func(t *testing.T) (io.Writer, func() string)
	}{
		{"console to a file", "console", toFile},
		{"console to a pipe", "console", toPipe},
		{"console to a buffer", "console", toBuffer},
		{"json to a file", "json", toFile},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, read := tt.open(t)
			logger := newLogger(w, config.Logging{Level: "debug", Format: tt.format})
			logger.Info().Str("actor", "agent-1").Int("issue", 3).Msg("reverted an illegal move")
			logger.Warn().Msg("github asked us to wait")
			logger.Error().Msg("processing failed; will retry")
			got := read()
			if !strings.Contains(got, "reverted an illegal move") || !strings.Contains(got, "agent-1") {
				t.Fatalf("the lines are missing:\n%q", got)
			}
			if strings.ContainsRune(got, '\x1b') {
				t.Errorf("escape codes written:\n%q", got)
			}
		})
	}
}

func toFile(t *testing.T) (io.Writer, func() string) {
	f, err := os.Create(filepath.Join(t.TempDir(), "ralph-gate.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, func() string {
		b, err := os.ReadFile(f.Name())
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
}

func toPipe(t *testing.T) (io.Writer, func() string) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return w, func() string {
		w.Close()
		b, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
}

func toBuffer(*testing.T) (io.Writer, func() string) {
	var b bytes.Buffer
	return &b, b.String
}

// A character device is taken for a terminal; files, pipes and other writers are not.
func TestIsTerminal(t *testing.T) {
	f, _ := toFile(t)
	p, _ := toPipe(t)
	if isTerminal(f) || isTerminal(p) || isTerminal(&bytes.Buffer{}) {
		t.Error("a file, a pipe or a buffer is taken for a terminal")
	}
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no %s: %v", os.DevNull, err)
	}
	defer null.Close()
	if !isTerminal(null) {
		t.Errorf("%s, a character device, is not taken for a terminal", os.DevNull)
	}
}

// Lines logged at once from many goroutines (jobs, walks, servers) come out whole, one after
// the other, whatever the writer (under -race, an unsynchronized one is a data race).
func TestLogLinesFromManyGoroutinesStayWhole(t *testing.T) {
	for _, format := range []string{"json", "console"} {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			logger := newLogger(&buf, config.Logging{Level: "info", Format: format})
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range 50 {
						logger.Info().Int("goroutine", g).Int("line", i).Msg("decision")
					}
				}()
			}
			wg.Wait()
			lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
			if len(lines) != 400 {
				t.Fatalf("%d lines, want 400", len(lines))
			}
			for _, l := range lines {
				if strings.Count(l, "decision") != 1 {
					t.Fatalf("a line is not whole: %q", l)
				}
			}
		})
	}
}
