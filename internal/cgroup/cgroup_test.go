package cgroup

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

const (
	// A hybrid host (this project's CI): v1 controllers, and an unused unified hierarchy.
	hybridCgroup = `9:name=systemd:/
4:memory:/process_api/4133
3:cpu,cpuacct:/
0::/
`
	hybridMounts = `30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
31 30 0:28 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`
	// systemd with the unified hierarchy only.
	unifiedCgroup = "0::/system.slice/shotd.service\n"
	unifiedMounts = `24 31 0:22 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
`
	// A container whose mount shows only its own part of the host's hierarchy.
	containerCgroup = "12:memory:/docker/abc\n"
	containerMounts = `700 690 0:31 /docker/abc /sys/fs/cgroup/memory ro,nosuid - cgroup cgroup rw,memory
`
)

func TestLocate(t *testing.T) {
	tests := []struct {
		name           string
		cgroup, mounts string
		dir            string
		v2, fails      bool
	}{
		{name: "v1 beside an unused unified hierarchy", cgroup: hybridCgroup, mounts: hybridMounts, dir: "/sys/fs/cgroup/memory/process_api/4133"},
		{name: "v2", cgroup: unifiedCgroup, mounts: unifiedMounts, dir: "/sys/fs/cgroup/system.slice/shotd.service", v2: true},
		{name: "v1 mount of a sub-tree", cgroup: containerCgroup, mounts: containerMounts, dir: "/sys/fs/cgroup/memory"},
		{name: "v2 root", cgroup: "0::/\n", mounts: unifiedMounts, dir: "/sys/fs/cgroup", v2: true},
		{name: "escaped mount point", cgroup: "0::/a\n", mounts: `1 0 0:1 / /mnt/cg\040two rw - cgroup2 none rw` + "\n", dir: "/mnt/cg two/a", v2: true},
		{name: "memory controller not mounted", cgroup: "4:memory:/x\n", mounts: hybridMounts[:strings.Index(hybridMounts, "34 ")], fails: true},
		{name: "mount of another sub-tree", cgroup: "12:memory:/docker/other\n", mounts: containerMounts, fails: true},
		{name: "no cgroup at all", cgroup: "", mounts: unifiedMounts, fails: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, v2, err := Locate([]byte(tt.cgroup), []byte(tt.mounts))
			if tt.fails {
				if err == nil {
					t.Errorf("Locate = %q, %v; want an error", dir, v2)
				}
				return
			}
			if err != nil || dir != tt.dir || v2 != tt.v2 {
				t.Errorf("Locate = %q, %v, %v; want %q, %v", dir, v2, err, tt.dir, tt.v2)
			}
		})
	}
}

// TestEnableMemoryFakeV2: a directory of plain files stands in for a v2 cgroup: one with memory
// already enabled for its children is left as it is, one without the controller is refused
// with the reason.
func TestEnableMemoryFakeV2(t *testing.T) {
	dir := t.TempDir()
	must := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	must("cgroup.controllers", "cpu io memory pids\n")
	must("cgroup.subtree_control", "memory\n")
	if err := enableMemory(dir); err != nil {
		t.Errorf("memory already enabled: %v", err)
	}
	must("cgroup.controllers", "cpu pids\n")
	if err := enableMemory(dir); err == nil || !strings.Contains(err.Error(), "Delegate=yes") {
		t.Errorf("no memory controller: %v, want a word on Delegate=yes", err)
	}
}

// TestEnableMemoryMovesProcesses: where the kernel refuses +memory because the cgroup has
// processes of its own (EBUSY), they move into the leaf, and then it is enabled. Plain files
// stand in for the cgroup; writeControl plays the kernel.
func TestEnableMemoryMovesProcesses(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{"cgroup.controllers": "memory pids\n", "cgroup.subtree_control": "", "cgroup.procs": "10\n11\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	procs := []string{"10", "11"}
	var moved []string
	writeControl = func(d, name, value string) error {
		switch {
		case d == dir && name == "cgroup.subtree_control":
			if len(procs) > 0 {
				return unix.EBUSY
			}
			return os.WriteFile(filepath.Join(d, name), []byte("memory\n"), 0o644)
		case d == filepath.Join(dir, LeafName) && name == "cgroup.procs":
			moved = append(moved, value)
			procs = slices.DeleteFunc(procs, func(p string) bool { return p == value })
			return os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strings.Join(procs, "\n")), 0o644)
		}
		return fmt.Errorf("unexpected write of %q to %s/%s", value, d, name)
	}
	defer func() { writeControl = write }()
	if err := enableMemory(dir); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(moved, []string{"10", "11"}) {
		t.Errorf("moved %v into the leaf, want 10 and 11", moved)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control")); !hasWord(b, "memory") {
		t.Errorf("memory not enabled for the children: %q", b)
	}
}

// bounded opens the service's cgroup or skips the test, saying why.
func bounded(t *testing.T) *Parent {
	t.Helper()
	p, err := Open()
	if err != nil {
		t.Skipf("no memory cgroup for this test to make children in: %v", err)
	}
	return p
}

// TestChildEnter: a command entered into a child runs in it from its start, with its children,
// keeps its pid and its extra files, and the child goes with Remove.
func TestChildEnter(t *testing.T) {
	p := bounded(t)
	c, err := p.New(256 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Remove(context.Background())
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// fd 3 is w: the script writes there its pid and the cgroup of a child of its own.
	cmd := exec.Command("/bin/sh", "-c", `echo $$ >&3; cat /proc/self/cgroup >&3; exec 3>&-; sleep 30`)
	cmd.ExtraFiles = []*os.File{w}
	c.Enter(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	out, err := readAll(r)
	if err != nil {
		t.Fatal(err)
	}
	first, rest, _ := strings.Cut(out, "\n")
	if pid, _ := strconv.Atoi(first); pid != cmd.Process.Pid {
		t.Errorf("the command says pid %q, started as %d", first, cmd.Process.Pid)
	}
	rel := strings.TrimPrefix(c.Dir(), "/sys/fs/cgroup/memory")
	if p.V2() {
		rel = filepath.Base(c.Dir())
	}
	if !strings.Contains(rest, rel+"\n") {
		t.Errorf("the command's child is in\n%s\nwant %s", rest, rel)
	}
	pids, err := c.Procs()
	if err != nil || !slices.Contains(pids, cmd.Process.Pid) {
		t.Errorf("Procs = %v, %v; want %d among them", pids, err, cmd.Process.Pid)
	}
	if of, ok := OfPID(cmd.Process.Pid); !ok || of.Dir() != c.Dir() {
		t.Errorf("OfPID(the command) = %v, %v; want %s", of, ok, c.Dir())
	} else if n, ok := of.Current(); !ok || n <= 0 {
		t.Errorf("Current of the command's child = %d, %v", n, ok)
	}
	if _, ok := OfPID(os.Getpid()); ok {
		t.Error("OfPID(the test) found a child; the test is in none")
	}
	if err := c.Remove(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.Dir()); !os.IsNotExist(err) {
		t.Errorf("the child is still there: %v", err)
	}
}

// TestSweep: a child of a service that is gone is removed with what runs in it; one of a
// running service is left.
func TestSweep(t *testing.T) {
	p := bounded(t)
	mine, err := p.New(64 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer mine.Remove(context.Background())
	// A dead service's child: a pid that cannot be running (above pid_max).
	stale := filepath.Join(p.Dir(), childPrefix+"99999999-1")
	if err := os.Mkdir(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	defer remove(context.Background(), stale)
	cmd := exec.Command("sleep", "30")
	(&Child{dir: stale, fd: -1}).Enter(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	if n := p.Sweep(context.Background()); n < 1 {
		t.Errorf("Sweep = %d, want the stale child", n)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale child is still there: %v", err)
	}
	if err := <-done; err == nil {
		t.Error("the process in the stale child was not killed")
	}
	if _, err := os.Stat(mine.Dir()); err != nil {
		t.Errorf("Sweep removed a running service's child: %v", err)
	}
}

func readAll(f *os.File) (string, error) {
	b, err := io.ReadAll(f)
	return string(b), err
}
