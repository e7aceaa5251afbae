package testkit

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/shotd/shotd/internal/proc"
)

// WaitGoroutines waits up to within for the number of goroutines to fall to base, and returns an
// error with every goroutine's stack when it does not. For TestMain, which has no test to fail.
func WaitGoroutines(base int, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		n := runtime.NumGoroutine()
		if n <= base {
			return nil
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			return fmt.Errorf("goroutine leak: %d running, %d before\n%s", n, base, buf)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// CheckGoroutines fails the test if it ends with more goroutines than it had when it called
// CheckGoroutines (after a grace of within). Call it first, so that its cleanup runs last.
func CheckGoroutines(t testing.TB, within time.Duration) {
	t.Helper()
	base := runtime.NumGoroutine()
	t.Cleanup(func() {
		if err := WaitGoroutines(base, within); err != nil {
			t.Error(err)
		}
	})
}

// Alive reports whether pid is a process that has not died: not a zombie, not dead.
func Alive(pid int) bool {
	st, ok := proc.Read(pid)
	return ok && st.State != 'Z' && st.State != 'X'
}

// ProcessGone waits up to within for pid to leave /proc: a zombie is still there, since nobody
// reaped it.
func ProcessGone(pid int, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		st, ok := proc.Read(pid)
		if !ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pid %d is still in /proc, state %c", pid, st.State)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// GroupGone waits up to within until no live process is in process group pgid or names mark on
// its command line (Chrome's crashpad handler leaves the group but names the user-data dir).
// Processes killed with the group are reparented to init, which reaps them in its own time: a
// zombie is dead, a live one is a leak.
func GroupGone(pgid int, mark string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		var live []int
		for _, pid := range append(GroupMembers(pgid), Mentioning(mark)...) {
			if Alive(pid) {
				live = append(live, pid)
			}
		}
		if len(live) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes of group %d still alive: %v", pgid, live)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// GroupMembers lists the pids whose process group is pgid.
func GroupMembers(pgid int) []int {
	var pids []int
	for _, st := range proc.Members(pgid) {
		pids = append(pids, st.PID)
	}
	return pids
}

// Mentioning lists the pids whose command line contains s ("" matches none).
func Mentioning(s string) []int {
	if s == "" {
		return nil
	}
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(s)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// DirEmpty fails the test (without stopping it) for every entry left in dir, such as a
// user-data dir that a closed browser left behind.
func DirEmpty(t testing.TB, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Error(err)
	}
	for _, e := range entries {
		t.Errorf("left behind: %s", filepath.Join(dir, e.Name()))
	}
}
