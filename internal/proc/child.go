package proc

import (
	"context"
	"os"
	"os/exec"
	"sync"
)

// StderrTail is the number of trailing stderr bytes a Child keeps for error messages.
const StderrTail = 4 << 10

// Child is one supervised child, for ffmpeg and ffprobe (media) and Chrome's --version
// (cdpclient): its own process group (Start), killed as a group when ctx ends, on Kill, and once
// the leader has exited, and the last StderrTail bytes of its stderr.
type Child struct {
	g      *Group
	stderr *tailBuffer
	done   chan struct{} // closed once the child is reaped and the watcher has ended

	mu     sync.Mutex
	ctxErr error // set when ctx ended the child
}

// StartChild starts cmd as a Child. cmd.Stderr is the Child's; a nil cmd.Env is the service's
// allow-listed environment (Env), so that no admin token nor credential reaches the child.
func StartChild(ctx context.Context, cmd *exec.Cmd) (*Child, error) {
	c := &Child{stderr: &tailBuffer{max: StderrTail}, done: make(chan struct{})}
	if cmd.Env == nil {
		cmd.Env = Env(os.Environ())
	}
	cmd.Stderr = c.stderr
	g, err := Start(cmd) // own group: a kill reaches the child and anything it starts
	if err != nil {
		return nil, err
	}
	c.g = g
	go c.watch(ctx)
	return c, nil
}

// watch kills the group when ctx ends first, and closes done once the child is reaped.
func (c *Child) watch(ctx context.Context) {
	defer close(c.done)
	select {
	case <-ctx.Done():
		c.mu.Lock()
		if c.g.Kill() {
			c.ctxErr = ctx.Err()
		}
		c.mu.Unlock()
	case <-c.g.Exited():
	}
	<-c.g.Exited()
}

// PID is the child's process id, which is also its group id.
func (c *Child) PID() int { return c.g.PID() }

// Done is closed once the child is reaped.
func (c *Child) Done() <-chan struct{} { return c.done }

// Err is the child's exit as cmd.Wait reports it; nil before it is reaped (see Done).
func (c *Child) Err() error { return c.g.Err() }

// Kill sends SIGKILL to the group, and to nothing else (see Group.Kill).
func (c *Child) Kill() { c.g.Kill() }

// CtxErr returns the context error that killed the child, if any.
func (c *Child) CtxErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ctxErr
}

// Stderr is the last StderrTail bytes the child wrote to its stderr.
func (c *Child) Stderr() string { return c.stderr.String() }

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(b)
	if len(b) >= t.max {
		t.buf = append(t.buf[:0], b[len(b)-t.max:]...)
		return n, nil
	}
	if over := len(t.buf) + len(b) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, b...)
	return n, nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
