package cdpclient

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/shotd/shotd/internal/proc"
	"github.com/shotd/shotd/internal/testkit"
)

// orphanHelperEnv makes the test binary play a service (orphanHelper) instead of running tests:
// its value is the Config.Dir, and orphanWrapperEnv the browser path.
const (
	orphanHelperEnv  = "SHOTD_TEST_ORPHAN_DIR"
	orphanWrapperEnv = "SHOTD_TEST_ORPHAN_BROWSER"
)

// orphanHelper launches Chrome as a service would, prints "ready PGID HOLDER" and waits to be
// killed.
func orphanHelper(dir string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := Launch(ctx, Config{Path: os.Getenv(orphanWrapperEnv), Dir: dir, Prewarm: 1, Log: zerolog.Nop()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "launch:", err)
		return 1
	}
	// Chrome quits when its DevTools pipe ends, as a Chrome that still runs its loop should; the
	// orphan that needs killing is one that does not (wedged, or slower than the next start). A
	// holder of the pipe's other end, out of Chrome's group, makes this Chrome that orphan.
	holder := exec.Command("/bin/sleep", "60")
	holder.ExtraFiles = []*os.File{p.pipe.w}
	holder.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := holder.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "holder:", err)
		return 1
	}
	fmt.Printf("ready %d %d\n", p.PID(), holder.Process.Pid)
	time.Sleep(time.Minute) // the test kills us long before
	p.Close(context.Background())
	return 1
}

// live reports whether a process of group pgid is alive (not a zombie).
func live(pgid int) bool {
	for _, st := range proc.Members(pgid) {
		if st.State != 'Z' && st.State != 'X' {
			return true
		}
	}
	return false
}

// startGroup starts a process of its own group with args on its command line, killed at the end
// of the test.
func startGroup(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("/bin/sh", append([]string{"-c", "sleep 60", "sh"}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	return cmd
}

// TestKillOrphans: a service runs Chrome through a wrapper script that does not exec it, and is
// killed with SIGKILL; a holder keeps Chrome's DevTools pipe open. Pdeathsig takes the script,
// Chrome stays; KillOrphans, at the next start, kills Chrome's whole group from the record Launch
// left. A process that merely names a profile under the directory on its command line is left
// alone.
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
	bystander := startGroup(t, "--user-data-dir="+filepath.Join(dir, "shotd-chrome-1", "p"))

	service := exec.Command(os.Args[0], "-test.run=^$")
	service.Env = append(os.Environ(), orphanHelperEnv+"="+dir, orphanWrapperEnv+"="+wrapper)
	service.Stderr = os.Stderr
	out, err := service.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := service.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { service.Process.Kill(); service.Wait() }()
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		ready <- line
	}()
	var pgid, holder int
	select {
	case line := <-ready:
		if _, err := fmt.Sscanf(line, "ready %d %d\n", &pgid, &holder); err != nil {
			t.Fatalf("service said %q", line)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the service did not launch Chrome")
	}
	defer syscall.Kill(-pgid, syscall.SIGKILL) // whatever happens below
	defer syscall.Kill(-holder, syscall.SIGKILL)

	service.Process.Kill()
	service.Wait()
	// Pdeathsig kills the script, the group's leader; Chrome, its child, stays.
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if st, ok := proc.Read(pgid); !ok || st.State == 'Z' {
			break
		}
		if time.Now().After(end) {
			t.Fatal("the wrapper outlived the service")
		}
	}
	if !live(pgid) {
		t.Fatal("Chrome died with its wrapper: the test could not fail")
	}

	if n := KillOrphans(dir); n != 1 {
		t.Errorf("KillOrphans signalled %d groups, want 1", n)
	}
	for end := time.Now().Add(5 * time.Second); live(pgid); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("processes of Chrome's group %d are left: %+v", pgid, proc.Members(pgid))
		}
	}
	// Nor is anything left that names the run's directory (the crashpad handler leaves the
	// group, and must die with Chrome), but the bystander.
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var left []int
		for _, pid := range testkit.Mentioning(dir) {
			if st, ok := procState(pid); ok && st != 'Z' && pid != bystander.Process.Pid {
				left = append(left, pid)
			}
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("processes naming %s are left: %v", dir, left)
		}
	}
	if err := bystander.Process.Signal(syscall.Signal(0)); err != nil {
		t.Error("a process that names a profile under the directory was killed")
	}
}

// TestKillOrphansRecords: a record is acted on only when its group is alive in this boot with a
// member started within the record's window; a group that reuses the id, or a record of another
// boot, is left alone.
func TestKillOrphansRecords(t *testing.T) {
	boot := proc.BootID()
	tests := []struct {
		name   string
		record func(st proc.Stat) groupRecord
		killed bool
	}{
		{"ours", func(st proc.Stat) groupRecord {
			return groupRecord{PGID: st.PGID, Boot: boot, Start: st.Start, End: st.Start + 100}
		}, true},
		{"ours, a member started within the window", func(st proc.Stat) groupRecord {
			return groupRecord{PGID: st.PGID, Boot: boot, Start: st.Start - 5, End: st.Start + 100}
		}, true},
		{"a later group with the same id", func(st proc.Stat) groupRecord {
			return groupRecord{PGID: st.PGID, Boot: boot, Start: st.Start - 500, End: st.Start - 1}
		}, false},
		{"another boot", func(st proc.Stat) groupRecord {
			return groupRecord{PGID: st.PGID, Boot: "00000000-0000-0000-0000-000000000000", Start: st.Start, End: st.Start + 100}
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := startGroup(t)
			st, ok := proc.Read(cmd.Process.Pid)
			if !ok {
				t.Fatal("the process is not in /proc")
			}
			rec := tt.record(st)
			sub := filepath.Join(dir, "shotd-chrome-1")
			if err := os.Mkdir(sub, 0o700); err != nil {
				t.Fatal(err)
			}
			line := fmt.Sprintf("%d %s %d %d\n", rec.PGID, rec.Boot, rec.Start, rec.End)
			if err := os.WriteFile(filepath.Join(sub, groupFile), []byte(line), 0o600); err != nil {
				t.Fatal(err)
			}
			n := KillOrphans(dir)
			killed := false
			for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
				if st, ok := proc.Read(cmd.Process.Pid); !ok || st.State == 'Z' {
					killed = true
					break
				}
				if !tt.killed {
					break // nothing was signalled: no need to wait
				}
			}
			if killed != tt.killed || (n == 1) != tt.killed {
				t.Errorf("KillOrphans = %d, killed %v; want killed %v", n, killed, tt.killed)
			}
		})
	}
}

// TestGroupRecord: Launch records its group, with a window that holds Chrome's start, and
// Close removes the record with the profile.
func TestGroupRecord(t *testing.T) {
	p := launchOwn(t, 0)
	rec, err := readGroupRecord(filepath.Join(p.dir, groupFile))
	if err != nil {
		t.Fatal(err)
	}
	st, ok := proc.Read(p.PID())
	if !ok {
		t.Fatal("Chrome is not in /proc")
	}
	if rec.PGID != p.PID() || rec.Boot != proc.BootID() || rec.Start != st.Start || rec.End <= rec.Start {
		t.Errorf("record %+v; Chrome %+v", rec, st)
	}
	if !rec.ours(proc.BootID(), proc.All()) {
		t.Error("a live Chrome's record is not taken for ours")
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(p.dir, groupFile)); !os.IsNotExist(err) {
		t.Errorf("record after Close: %v", err)
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
