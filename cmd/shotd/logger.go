package main

import (
	"io"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
	"github.com/shotd/shotd/config"
)

// newLogger returns serve's logger. Its level is zerolog's global one, so that SIGHUP can change
// log.level for every logger derived from it.
func newLogger(w io.Writer, lc config.Log) zerolog.Logger {
	zerolog.SetGlobalLevel(lc.ZerologLevel())
	if jw, ok := w.(*journalWriter); ok {
		if lc.Format == config.LogConsole {
			jw.console = &zerolog.ConsoleWriter{NoColor: true, TimeFormat: time.TimeOnly}
		}
		return zerolog.New(jw).With().Timestamp().Logger()
	}
	if lc.Format == config.LogJSON || (lc.Format == config.LogAuto && !isTerminal(w)) {
		return zerolog.New(w).With().Timestamp().Logger()
	}
	return zerolog.New(zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly}).With().Timestamp().Logger()
}

// isTerminal reports whether w is a terminal: log.format auto writes console lines there only.
func isTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && isatty.IsTerminal(f.Fd())
}
