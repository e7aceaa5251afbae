package media

import (
	"context"
	"io"
	"os"
	"os/exec"
	"sync"

	iproc "github.com/shotd/shotd/internal/proc"
)

// The binaries; tests point them elsewhere to provoke failures.
var (
	ffmpegBin  = "/usr/bin/ffmpeg"
	ffprobeBin = "/usr/bin/ffprobe"
)

// stderrTail is the number of trailing stderr bytes kept for error messages.
const stderrTail = 4 << 10

// proc is one supervised child: its own process group, killed as a group when ctx ends, on kill,
// and once the leader has exited.
type proc struct {
	g      *iproc.Group
	pid    int
	stderr *tailBuffer
	done   chan struct{} // closed once the child is reaped and the watcher has ended
	err    error         // Wait's result; read after done

	mu     sync.Mutex
	ctxErr error // set when ctx ended the child
}

// startProc starts bin with args. stdin and stdout may be nil (/dev/null); stdin, when an
// *os.File, is handed to the child as is and closed here after the start.
func startProc(ctx context.Context, bin string, args []string, stdin *os.File, stdout io.Writer) (*proc, error) {
	p := &proc{stderr: &tailBuffer{max: stderrTail}, done: make(chan struct{})}
	cmd := exec.Command(bin, args...)
	cmd.Env = iproc.Env(os.Environ()) // no admin token nor credential for ffmpeg to leak
	if stdin != nil {
		cmd.Stdin = stdin
	}
	cmd.Stdout = stdout
	cmd.Stderr = p.stderr
	g, err := iproc.Start(cmd) // own group: a kill reaches ffmpeg and anything it starts
	if stdin != nil {
		stdin.Close() // the child holds its own copy
	}
	if err != nil {
		return nil, err
	}
	p.g = g
	p.pid = g.PID()
	go p.watch(ctx)
	return p, nil
}

// watch kills the group when ctx ends first, and closes done once the child is reaped.
func (p *proc) watch(ctx context.Context) {
	defer close(p.done)
	select {
	case <-ctx.Done():
		p.mu.Lock()
		if p.g.Kill() {
			p.ctxErr = ctx.Err()
		}
		p.mu.Unlock()
	case <-p.g.Exited():
	}
	<-p.g.Exited()
	p.err = p.g.Err()
}

// kill sends SIGKILL to the group, and to nothing else (see proc.Group.Kill).
func (p *proc) kill() { p.g.Kill() }

// ctxError returns the context error that killed the child, if any.
func (p *proc) ctxError() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ctxErr
}

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
