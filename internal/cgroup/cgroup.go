package cgroup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// LeafName is the child of a v2 cgroup that its processes move into before the memory
// controller is enabled for its children.
const LeafName = "shotd-service"

// childPrefix starts the name of every child that New makes.
const childPrefix = "shotd-chrome-"

// Parent is the cgroup in which children with a memory bound are made.
type Parent struct {
	dir string // in the cgroup filesystem
	v2  bool
	seq atomic.Int64
}

// Open finds the service's own cgroup and makes it ready for bounded children, or says why it
// cannot: no memory controller, a cgroup the service may not write to, ... It makes and
// removes one child to be sure.
func Open() (*Parent, error) {
	dir, v2, err := locateProc("self")
	if err != nil {
		return nil, err
	}
	if v2 && filepath.Base(dir) == LeafName {
		dir = filepath.Dir(dir) // an earlier Open moved the service there
	}
	p := &Parent{dir: dir, v2: v2}
	if v2 {
		if err := enableMemory(dir); err != nil {
			return nil, err
		}
	}
	c, err := p.New(64 << 20)
	if err != nil {
		return nil, err
	}
	if err := c.Remove(context.Background()); err != nil {
		return nil, err
	}
	return p, nil
}

// Dir is the cgroup directory in which the children are made.
func (p *Parent) Dir() string { return p.dir }

// V2 reports whether the cgroup is of the unified hierarchy (cgroup v2).
func (p *Parent) V2() bool { return p.v2 }

// ProcDir is where the proc filesystem is mounted. Tests of the readings (OfPID, and the
// pressure and metrics built on them) point it at a directory laid out like /proc, with
// mountinfo naming a directory laid out like a cgroup: this machine may have no memory cgroup.
var ProcDir = "/proc"

// locateProc is Locate for the process that /proc/<proc> names ("self" or a pid), through the
// service's own mounts.
func locateProc(proc string) (dir string, v2 bool, err error) {
	self, err := os.ReadFile(filepath.Join(ProcDir, proc, "cgroup"))
	if err != nil {
		return "", false, err
	}
	mounts, err := os.ReadFile(filepath.Join(ProcDir, "self", "mountinfo"))
	if err != nil {
		return "", false, err
	}
	return Locate(self, mounts)
}

// Locate returns the directory of the service's memory cgroup, given the text of
// /proc/self/cgroup and /proc/self/mountinfo: under v1 that of the memory controller's
// hierarchy, else (v2) that of the unified one.
func Locate(selfCgroup, mountinfo []byte) (dir string, v2 bool, err error) {
	var v1Path, v2Path string
	found1, found2 := false, false
	for line := range strings.SplitSeq(string(selfCgroup), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			v2Path, found2 = parts[2], true
			continue
		}
		for c := range strings.SplitSeq(parts[1], ",") {
			if c == "memory" {
				v1Path, found1 = parts[2], true
			}
		}
	}
	if found1 {
		dir, err := mountDir(mountinfo, v1Path, func(fstype, opts string) bool {
			if fstype != "cgroup" {
				return false
			}
			for o := range strings.SplitSeq(opts, ",") {
				if o == "memory" {
					return true
				}
			}
			return false
		})
		return dir, false, err
	}
	if found2 {
		dir, err := mountDir(mountinfo, v2Path, func(fstype, _ string) bool { return fstype == "cgroup2" })
		return dir, true, err
	}
	return "", false, errors.New("the service is in no memory cgroup (/proc/self/cgroup names neither a memory controller nor a unified hierarchy)")
}

// mountDir finds the mount that match accepts (by filesystem type and super options) and whose
// root holds cgroup path cg, and returns cg's directory under it.
func mountDir(mountinfo []byte, cg string, match func(fstype, opts string) bool) (string, error) {
	for line := range strings.SplitSeq(string(mountinfo), "\n") {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 3 || !match(g[0], g[2]) {
			continue
		}
		root, point := unescape(f[3]), unescape(f[4])
		rel, ok := within(cg, root)
		if !ok {
			continue
		}
		return filepath.Join(point, rel), nil
	}
	return "", fmt.Errorf("no cgroup mount holds %s (/proc/self/mountinfo)", cg)
}

// within returns path relative to root when it lies under it.
func within(path, root string) (string, bool) {
	if root == "/" {
		return path, true
	}
	if path == root {
		return "/", true
	}
	rest, ok := strings.CutPrefix(path, root+"/")
	return "/" + rest, ok
}

// unescape undoes mountinfo's octal escapes (\040 for a space, ...).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// enableMemory enables the memory controller for the children of v2 cgroup dir. When its own
// processes keep the kernel from it (the "no internal processes" rule: EBUSY), they move into
// LeafName first.
func enableMemory(dir string) error {
	ctrl, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return err
	}
	if !hasWord(ctrl, "memory") {
		return fmt.Errorf("the memory controller is not delegated to the service's cgroup %s (under systemd: Delegate=yes)", dir)
	}
	if sub, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control")); err == nil && hasWord(sub, "memory") {
		return nil
	}
	err = writeControl(dir, "cgroup.subtree_control", "+memory")
	if !errors.Is(err, unix.EBUSY) {
		return err
	}
	leaf := filepath.Join(dir, LeafName)
	if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	// Processes may start meanwhile: move until none is left.
	for range 10 {
		pids, err := readPids(dir)
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			break
		}
		for _, pid := range pids {
			// One that ended meanwhile (ESRCH) is no obstacle.
			if err := writeControl(leaf, "cgroup.procs", strconv.Itoa(pid)); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("move process %d into %s: %w", pid, leaf, err)
			}
		}
	}
	return writeControl(dir, "cgroup.subtree_control", "+memory")
}

// writeControl is write; a test puts in the kernel's answers.
var writeControl = write

func hasWord(b []byte, w string) bool {
	for _, f := range strings.Fields(string(b)) {
		if f == w {
			return true
		}
	}
	return false
}

// Child is one cgroup with a memory bound, made by New.
type Child struct {
	dir string
	v2  bool
	fd  int // v2: the open directory that the kernel clones a process into; -1 under v1
}

// New makes a child with a bound of limit bytes on its memory, swap included where the kernel
// accounts it.
func (p *Parent) New(limit int64) (*Child, error) {
	name := childPrefix + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(p.seq.Add(1), 10)
	c := &Child{dir: filepath.Join(p.dir, name), v2: p.v2, fd: -1}
	if err := os.Mkdir(c.dir, 0o755); err != nil {
		return nil, fmt.Errorf("create cgroup: %w", err)
	}
	n := strconv.FormatInt(limit, 10)
	var err error
	if p.v2 {
		err = write(c.dir, "memory.max", n)
		if err == nil {
			err = writeIfPresent(c.dir, "memory.swap.max", "0")
		}
		if err == nil {
			c.fd, err = unix.Open(c.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		}
	} else {
		// memsw (memory and swap) may not be below the memory limit: it comes second.
		err = write(c.dir, "memory.limit_in_bytes", n)
		if err == nil {
			err = writeIfPresent(c.dir, "memory.memsw.limit_in_bytes", n)
		}
	}
	if err != nil {
		_ = c.Remove(context.Background())
		return nil, fmt.Errorf("bound cgroup %s: %w", c.dir, err)
	}
	return c, nil
}

// Dir is the child's directory in the cgroup filesystem.
func (c *Child) Dir() string { return c.dir }

// v1Start is the shell that moves itself into the cgroup whose cgroup.procs is $0, then execs
// the command: the pid, the process group and the open files stay the command's.
const v1Start = `echo $$ > "$0" && exec "$@"`

// AllowUser lets a command that runs as uid enter the child: under v1 the command writes its
// own pid into cgroup.procs, which takes write access to it; under v2 the kernel clones it in
// and nothing is needed.
func (c *Child) AllowUser(uid, gid int) error {
	if c.v2 {
		return nil
	}
	return os.Chown(filepath.Join(c.dir, "cgroup.procs"), uid, gid)
}

// Enter makes cmd, not yet started, start inside the child.
func (c *Child) Enter(cmd *exec.Cmd) {
	if c.v2 {
		if cmd.SysProcAttr == nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{}
		}
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = c.fd
		return
	}
	args := append([]string{"/bin/sh", "-c", v1Start, filepath.Join(c.dir, "cgroup.procs"), cmd.Path}, cmd.Args[1:]...)
	cmd.Path, cmd.Args = "/bin/sh", args
}

// Procs lists the processes in the child.
func (c *Child) Procs() ([]int, error) { return readPids(c.dir) }

// Peak is the most memory the child has used, in bytes (v1 memory.max_usage_in_bytes, v2
// memory.peak); false where the kernel does not tell.
func (c *Child) Peak() (int64, bool) { return c.number("memory.max_usage_in_bytes", "memory.peak") }

// OOMKills is how many processes the kernel's OOM killer has ended in the child (the oom_kill
// line of v1 memory.oom_control, v2 memory.events); false where the kernel does not tell.
func (c *Child) OOMKills() (int, bool) {
	b, err := c.read("memory.oom_control", "memory.events")
	if err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "oom_kill "); ok {
			n, err := strconv.Atoi(strings.TrimSpace(rest))
			return n, err == nil
		}
	}
	return 0, false
}

// Remove kills what is left in the child and removes it, retrying while killed processes are
// still on their way out; it gives up when ctx ends.
func (c *Child) Remove(ctx context.Context) error {
	if c.fd >= 0 {
		_ = unix.Close(c.fd)
		c.fd = -1
	}
	return remove(ctx, c.dir)
}

func remove(ctx context.Context, dir string) error {
	for {
		pids, _ := readPids(dir)
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		err := unix.Rmdir(dir)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("remove cgroup %s: %w", dir, err)
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return fmt.Errorf("remove cgroup %s: %w (processes left: %v)", dir, err, pids)
		}
	}
}

// Sweep removes the children that services no longer running left in p (a service killed
// before it could remove them), killing what still runs in them, and returns how many.
func (p *Parent) Sweep(ctx context.Context) int {
	ents, err := os.ReadDir(p.dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), childPrefix)
		if !e.IsDir() || !ok {
			continue
		}
		owner, _, _ := strings.Cut(rest, "-")
		if pid, err := strconv.Atoi(owner); err == nil && (pid == os.Getpid() || alive(pid)) {
			continue // a running service's, maybe another in the same cgroup
		}
		if remove(ctx, filepath.Join(p.dir, e.Name())) == nil {
			n++
		}
	}
	return n
}

// alive reports whether a process of that pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

func readPids(dir string) ([]int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// write writes value to a control file, which must exist.
func write(dir, name, value string) error {
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func writeIfPresent(dir, name, value string) error {
	err := write(dir, name, value)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// OfPID returns the child (made by New, of this or an earlier service) that process pid is in,
// to read its OOM kills and peak; false when pid is in no such child or its cgroup cannot be
// found. The child is for reading only: it has no directory open for Enter.
func OfPID(pid int) (*Child, bool) {
	dir, v2, err := locateProc(strconv.Itoa(pid))
	if err != nil || !strings.HasPrefix(filepath.Base(dir), childPrefix) {
		return nil, false
	}
	return &Child{dir: dir, v2: v2, fd: -1}, true
}

// Current is the memory the child uses now, in bytes (v1 memory.usage_in_bytes, v2
// memory.current); false where the kernel does not tell.
func (c *Child) Current() (int64, bool) { return c.number("memory.usage_in_bytes", "memory.current") }

// read reads the child's file named v1 under cgroup v1, v2 under v2.
func (c *Child) read(v1, v2 string) ([]byte, error) {
	name := v1
	if c.v2 {
		name = v2
	}
	return os.ReadFile(filepath.Join(c.dir, name))
}

// number reads a child's file that holds one number; false where it is absent or not a number.
func (c *Child) number(v1, v2 string) (int64, bool) {
	b, err := c.read(v1, v2)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n, err == nil
}
