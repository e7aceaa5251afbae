package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// journalWriter starts each log line with its syslog priority as "<N>", which journald reads off
// a service's stderr stream (sd-daemon(3)), so that `journalctl -p warning` shows the warnings
// and errors. Each line is one Write.
type journalWriter struct {
	mu      sync.Mutex
	w       io.Writer
	console *zerolog.ConsoleWriter // nil: the JSON lines are written as they are
	buf     bytes.Buffer
}

func (j *journalWriter) Write(p []byte) (int, error) { return j.WriteLevel(zerolog.NoLevel, p) }

// WriteLevel writes one line with the priority of level.
func (j *journalWriter) WriteLevel(level zerolog.Level, p []byte) (int, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.buf.Reset()
	fmt.Fprintf(&j.buf, "<%d>", priority(level))
	if j.console != nil {
		j.console.Out = &j.buf
		if _, err := j.console.Write(p); err != nil {
			return 0, err
		}
	} else {
		j.buf.Write(p)
	}
	if _, err := j.w.Write(j.buf.Bytes()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// priority maps a zerolog level to a syslog priority (0 emerg ... 7 debug).
func priority(l zerolog.Level) int {
	switch l {
	case zerolog.TraceLevel, zerolog.DebugLevel:
		return 7
	case zerolog.WarnLevel:
		return 4
	case zerolog.ErrorLevel:
		return 3
	case zerolog.FatalLevel, zerolog.PanicLevel:
		return 2
	}
	return 6 // info, and lines without a level
}

// journalStream reports whether the log output w is journald's stream: JOURNAL_STREAM
// ("device:inode", set by systemd for a service whose stderr goes to the journal) names w
// when w is a file, and is set at all otherwise.
func journalStream(w io.Writer, env []string) bool {
	var stream string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "JOURNAL_STREAM="); ok {
			stream = v
		}
	}
	if stream == "" {
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return true
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return false
	}
	return stream == fmt.Sprintf("%d:%d", st.Dev, st.Ino)
}
