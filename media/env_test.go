package media

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"

	iproc "github.com/shotd/shotd/internal/proc"
)

// TestChildEnv: ffmpeg (any child startProc runs) gets the allow-listed environment alone, not
// the service's admin token or credentials.
func TestChildEnv(t *testing.T) {
	t.Setenv("SHOTD_ADMIN_TOKEN", "must-not-reach-ffmpeg")
	t.Setenv("CREDENTIALS_DIRECTORY", "/run/credentials/shotd.service")
	t.Setenv("LANG", "C.UTF-8")
	var out bytes.Buffer
	p, err := startProc(context.Background(), "/usr/bin/env", nil, nil, &out, 0)
	if err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	env := out.String()
	if strings.Contains(env, "SHOTD_ADMIN_TOKEN") || strings.Contains(env, "CREDENTIALS_DIRECTORY") {
		t.Errorf("the child's environment:\n%s", env)
	}
	if !strings.Contains(env, "LANG=C.UTF-8") {
		t.Errorf("the child lost LANG:\n%s", env)
	}
}

// TestChildNice: a child started nice steps below the service runs there, and so does what it
// starts (the shell's cut reads its own stat).
func TestChildNice(t *testing.T) {
	var out bytes.Buffer
	p, err := startProc(context.Background(), "/bin/sh", []string{"-c", "sleep 0.3; cut -d' ' -f19 /proc/self/stat"}, nil, &out, 3)
	if err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	if got, want := strings.TrimSpace(out.String()), strconv.Itoa(min(iproc.Nice()+3, iproc.MaxNice)); got != want {
		t.Errorf("child at nice %q, want %s", got, want)
	}
}
