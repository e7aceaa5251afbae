package media

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestChildEnv: ffmpeg (any child startProc runs) gets the allow-listed environment alone, not
// the service's admin token or credentials.
func TestChildEnv(t *testing.T) {
	t.Setenv("SHOTD_ADMIN_TOKEN", "must-not-reach-ffmpeg")
	t.Setenv("CREDENTIALS_DIRECTORY", "/run/credentials/shotd.service")
	t.Setenv("LANG", "C.UTF-8")
	var out bytes.Buffer
	p, err := startProc(context.Background(), "/usr/bin/env", nil, nil, &out)
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
