package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/shotd/shotd/config"
)

// TestJournalPriorities: under journald every line starts with its syslog priority, in JSON and
// in console format, so that journalctl -p warning shows warnings and errors.
func TestJournalPriorities(t *testing.T) {
	for _, format := range []string{config.LogJSON, config.LogConsole} {
		var buf bytes.Buffer
		log := newLogger(&journalWriter{w: &buf}, config.Log{Level: "debug", Format: format})
		log.Debug().Msg("d")
		log.Info().Msg("i")
		log.Warn().Msg("w")
		log.Error().Msg("e")
		lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
		want := []string{"<7>", "<6>", "<4>", "<3>"}
		if len(lines) != len(want) {
			t.Fatalf("%s: %q", format, buf.String())
		}
		for i, l := range lines {
			if !strings.HasPrefix(l, want[i]) || strings.Contains(l, "\x1b[") {
				t.Errorf("%s line %d: %q, want it to start with %s and have no colour", format, i, l, want[i])
			}
		}
	}
}

// TestJournalStream: JOURNAL_STREAM counts only when it names the log output.
func TestJournalStream(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(w.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	if !journalStream(w, []string{fmt.Sprintf("JOURNAL_STREAM=%d:%d", st.Dev, st.Ino)}) {
		t.Error("the stream that JOURNAL_STREAM names was not taken for the journal")
	}
	if journalStream(w, []string{"JOURNAL_STREAM=1:2"}) || journalStream(w, nil) {
		t.Error("another stream, or none, was taken for the journal")
	}
}
