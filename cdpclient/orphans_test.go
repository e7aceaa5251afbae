package cdpclient

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// processesUnder lists the processes whose --user-data-dir lies below dir.
func processesUnder(dir string) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if udd, ok := userDataDir(pid); ok && strings.HasPrefix(udd, dir+"/") {
			out = append(out, pid)
		}
	}
	return out
}

// TestKillOrphans: a Chrome started through a wrapper script that does not exec it outlives the
// wrapper (as it would outlive a killed service whose Pdeathsig reached only the script);
// KillOrphans finds it by its user-data dir and kills it with its helpers, and nothing else.
func TestKillOrphans(t *testing.T) {
	chrome, err := FindBrowser("")
	if err != nil {
		t.Fatal(err)
	}
	// Short paths: Chrome's socket names below TMPDIR may not exceed 108 bytes.
	root, err := os.MkdirTemp("", "shotd-orph-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(root)
	dir := filepath.Join(root, "run")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	wrapper := filepath.Join(root, "chrome.sh")
	if err := os.WriteFile(wrapper, []byte("#!/bin/sh\n"+chrome+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(wrapper, append(launchFlags(filepath.Join(dir, "profile")), "about:blank")...)
	cmd.Env = append(os.Environ(), "TMPDIR="+root)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	defer syscall.Kill(-pgid, syscall.SIGKILL) // whatever happens below
	// Bystanders that must survive: a user-data dir outside dir, and one whose name only starts
	// like dir's.
	var bystanders []*exec.Cmd
	for _, udd := range []string{filepath.Join(root, "other", "p"), dir + "x/p"} {
		b := exec.Command("/bin/sh", "-c", "sleep 60", "sh", "--user-data-dir="+udd)
		b.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := b.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { b.Process.Kill(); b.Wait() }()
		bystanders = append(bystanders, b)
	}

	// Wait for Chrome itself to run: not only the scripts (ours and Debian's, which execs it).
	isChrome := func(pid int) bool {
		exe, _ := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "exe"))
		return strings.Contains(filepath.Base(exe), "chrom")
	}
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if slices.ContainsFunc(processesUnder(dir), isChrome) {
			break
		}
		if time.Now().After(end) {
			t.Fatal("Chrome did not start")
		}
	}
	// The wrapper dies; Chrome, its child, stays.
	cmd.Process.Kill()
	cmd.Wait()
	time.Sleep(200 * time.Millisecond)
	if len(processesUnder(dir)) == 0 {
		t.Fatal("Chrome died with its wrapper: the test could not fail")
	}

	if n := KillOrphans(dir); n == 0 {
		t.Fatal("KillOrphans signalled nothing")
	}
	for end := time.Now().Add(5 * time.Second); len(processesUnder(dir)) > 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("processes left under %s: %v", dir, processesUnder(dir))
		}
	}
	// Its helpers (zygote, renderers, gpu) were in its group: none is left.
	for end := time.Now().Add(5 * time.Second); syscall.Kill(-pgid, 0) == nil; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("processes of Chrome's group are left")
		}
	}
	for _, b := range bystanders {
		if err := b.Process.Signal(syscall.Signal(0)); err != nil {
			t.Errorf("bystander %v was killed", b.Args)
		}
	}
}

func TestWrapperWithoutExec(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, content string
		want          bool
	}{
		{"runs chrome as a child", "#!/bin/sh -e\n\n/usr/lib/chromium/chromium-headless-shell \"$@\"\n", true},
		{"execs", "#!/bin/sh\nset -e\nif [ -n \"$X\" ]; then\n  exec /usr/lib/chromium/chromium \"$@\"\nfi\n", false},
		{"exec after a command", "#!/bin/sh\ncd /tmp && exec chrome \"$@\"\n", false},
		{"a binary", "\x7fELF\x02\x01\x01", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_"))
			if err := os.WriteFile(p, []byte(tt.content), 0o755); err != nil {
				t.Fatal(err)
			}
			if got := wrapperWithoutExec(p); got != tt.want {
				t.Errorf("wrapperWithoutExec = %v, want %v", got, tt.want)
			}
		})
	}
	if wrapperWithoutExec(filepath.Join(dir, "missing")) {
		t.Error("a missing file is no wrapper")
	}
}
