package proc

import (
	"context"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Group is a command started as the leader of a process group of its own, so that one kill
// reaches it and everything it starts.
type Group struct {
	cmd    *exec.Cmd
	pid    int
	exited chan struct{} // closed once the leader is reaped
	err    error         // cmd.Wait's result; read after exited

	mu     sync.Mutex // serialises the group kill with reaping the leader
	reaped bool
}

// Start starts cmd as the leader of a new process group and reaps it: once the leader exits,
// what is left of its group is killed, the leader is reaped and Exited is closed. The group
// dies with the service too (Pdeathsig). The cmd.SysProcAttr the caller set is kept, with
// Setpgid and Pdeathsig added; nothing else may call cmd.Wait.
func Start(cmd *exec.Cmd) (*Group, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	// The signal follows the forking OS thread; the Go runtime does not retire threads of
	// unlocked goroutines, so in practice it follows the service.
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	g := &Group{cmd: cmd, pid: cmd.Process.Pid, exited: make(chan struct{})}
	go g.reap()
	return g, nil
}

// reap first waits without reaping: while the leader is an unreaped zombie its pid, and so the
// group id, cannot be reused, so killing the group then can only reach our own processes.
func (g *Group) reap() {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, g.pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			break
		}
	}
	g.mu.Lock()
	// Helpers of a dead leader are of no use: take them down with it.
	_ = syscall.Kill(-g.pid, syscall.SIGKILL)
	g.reaped = true
	g.mu.Unlock()
	g.err = g.cmd.Wait()
	close(g.exited)
}

// PID is the leader's process id, which is also the group id.
func (g *Group) PID() int { return g.pid }

// Kill sends SIGKILL to the group, and to nothing else: once the leader is reaped the group id
// may belong to someone else, so it does nothing then. It reports whether it signalled.
func (g *Group) Kill() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.reaped {
		return false
	}
	_ = syscall.Kill(-g.pid, syscall.SIGKILL)
	return true
}

// Exited is closed once the leader has exited, the rest of its group has been killed and the
// leader has been reaped.
func (g *Group) Exited() <-chan struct{} { return g.exited }

// Err is the leader's exit as cmd.Wait reports it; nil before Exited is closed.
func (g *Group) Err() error {
	select {
	case <-g.exited:
		return g.err
	default:
		return nil
	}
}

// WaitGroup waits for wg until ctx ends, and returns ctx's error if that came first. The
// goroutine that waits for wg stays until wg is done.
func WaitGroup(ctx context.Context, wg *sync.WaitGroup) error {
	return Wait(ctx, wg.Wait)
}

// Wait runs f on a goroutine and waits for it to return or for ctx to end, whichever is first:
// the shape of a Close(ctx) that may not wait past its caller's deadline. f keeps running after
// ctx ends; Wait then returns ctx.Err().
func Wait(ctx context.Context, f func()) error {
	done := make(chan struct{})
	go func() {
		f()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// WaitOrCut waits for wg up to ctx; past it, it calls cut (which cancels what wg waits for) and
// waits up to grace more. It reports whether wg is done, and ctx's error when ctx ended first.
func WaitOrCut(ctx context.Context, wg *sync.WaitGroup, cut func(), grace time.Duration) (bool, error) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true, nil
	case <-ctx.Done():
	}
	cut()
	select {
	case <-done:
		return true, ctx.Err()
	case <-time.After(grace):
		return false, ctx.Err()
	}
}
