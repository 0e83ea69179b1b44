package main

import (
	"io"
	"os"

	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/app/config"
)

// newLogger builds the process logger from the logging section. The console format colours
// its output only when it goes to a terminal: a file or a pipe gets plain text, without
// escape codes.
func newLogger(w io.Writer, l config.Logging) zerolog.Logger {
	level, err := zerolog.ParseLevel(l.Level)
	if err != nil {
		level = zerolog.InfoLevel
	}
	if l.Format == "console" {
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: "15:04:05.000", NoColor: !isTerminal(w)}
	}
	// Jobs, walks and servers log at once: one line is written whole before the next begins,
	// whatever w is (a file is safe for that, a buffer or a pipe's writer may not be).
	return zerolog.New(zerolog.SyncWriter(w)).Level(level).With().Timestamp().Str("service", "ralph-gate").Logger()
}

// isTerminal reports whether w is a terminal: an open file that is a character device.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
