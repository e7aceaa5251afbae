package cdpclient

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/shotd/shotd/internal/testenv"
	"github.com/shotd/shotd/internal/testkit"
)

// chromeUser returns the system user the tests run Chrome as, made when absent; it skips
// unless the test runs as root, the only user that can switch to it.
func chromeUser(t *testing.T) *User {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("only root runs Chrome as another user")
	}
	u, err := LookupUser(DefaultUser, true)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// uids returns the real, effective, saved and filesystem uids of pid.
func uids(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "Uid:") {
			return strings.Join(strings.Fields(strings.TrimPrefix(line, "Uid:")), " ")
		}
	}
	return ""
}

// TestLaunchAsUser: with a User, Chrome and every process of its group run as that user, in
// Chrome's own sandbox (no --no-sandbox: the user is not root), with the allow-listed
// environment and a home, profile and TMPDIR of its own outside Dir, which Close removes; the
// DevTools pipes work across the switch (it renders).
func TestLaunchAsUser(t *testing.T) {
	u := chromeUser(t)
	t.Setenv("SHOTD_ADMIN_TOKEN", "must-not-reach-chrome")
	p := launchConfig(t, Config{Path: testenv.Browser(), Prewarm: 1, User: u,
		Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)})
	mustRender(t, p, htmlOpts(`<p>as a user of its own</p>`))
	want := fmt.Sprintf("%d %d %d %d", u.UID, u.UID, u.UID, u.UID)
	for _, pid := range testkit.GroupMembers(p.PID()) {
		if got := uids(t, pid); got != "" && got != want {
			t.Errorf("process %d of Chrome's group has uids %q, want %q", pid, got, want)
		}
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.PID()))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(cmdline, []byte("--no-sandbox")) {
		t.Error("Chrome runs as its own user without its sandbox")
	}
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.PID()))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(environ, []byte("SHOTD_")) || !bytes.Contains(environ, []byte("HOME="+p.tmpDir+"\x00")) {
		t.Errorf("Chrome's environment: %q", bytes.ReplaceAll(environ, []byte{0}, []byte{' '}))
	}
	if filepath.Dir(p.tmpDir) != u.base {
		t.Errorf("the user's directory %s is not in %s", p.tmpDir, u.base)
	}
	fi, err := os.Stat(p.tmpDir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("the user's directory has mode %v", fi.Mode().Perm())
	}
	dir := p.tmpDir
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the user's directory %s is left after Close: %v", dir, err)
	}
}

// TestLaunchAsUserCgroup: a Chrome that runs as a User is held by its memory cgroup too.
func TestLaunchAsUserCgroup(t *testing.T) {
	u := chromeUser(t)
	cg := testCgroups(t)
	p := launchHostile(t, Config{Cgroups: cg, MemoryLimitMB: 2048, Prewarm: 1, User: u})
	mustRender(t, p, htmlOpts(`<p>in the cgroup, as a user of its own</p>`))
	inside, err := p.cgroup.Procs()
	if err != nil {
		t.Fatal(err)
	}
	if len(inside) == 0 || !containsInt(inside, p.PID()) {
		t.Errorf("Chrome %d is not in its cgroup, which holds %v", p.PID(), inside)
	}
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestKillOrphansUserDir: the directory of a User's Chrome that a killed service left in
// os.TempDir() goes with the orphans; a path that is not one is left alone.
func TestKillOrphansUserDir(t *testing.T) {
	dir := t.TempDir()
	left, err := os.MkdirTemp("", userDirPrefix)
	if err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	for name, target := range map[string]string{"a": left, "b": other} {
		rec := filepath.Join(dir, name)
		if err := os.Mkdir(rec, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(rec, userDirFile), []byte(target), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	KillOrphans(dir)
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		os.RemoveAll(left)
		t.Errorf("the user's directory %s is left: %v", left, err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("a path that is no user's directory was removed: %v", err)
	}
}

func TestReachable(t *testing.T) {
	open := t.TempDir() // 0700: closed to others
	if reachable(open) {
		t.Errorf("%s (mode 0700) is reachable", open)
	}
	if !reachable("/") {
		t.Error("/ is not reachable")
	}
}
