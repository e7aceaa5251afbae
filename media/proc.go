package media

import (
	"context"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
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
	cmd    *exec.Cmd
	pid    int
	stderr *tailBuffer
	exited chan struct{} // closed once the child is reaped
	done   chan struct{} // closed once the child is reaped and both goroutines have ended
	err    error         // Wait's result; read after done

	mu     sync.Mutex
	reaped bool
	ctxErr error // set when ctx ended the child
}

// startProc starts bin with args. stdin and stdout may be nil (/dev/null); stdin, when an
// *os.File, is handed to the child as is and closed here after the start.
func startProc(ctx context.Context, bin string, args []string, stdin *os.File, stdout io.Writer) (*proc, error) {
	p := &proc{stderr: &tailBuffer{max: stderrTail}, exited: make(chan struct{}), done: make(chan struct{})}
	cmd := exec.Command(bin, args...)
	if stdin != nil {
		cmd.Stdin = stdin
	}
	cmd.Stdout = stdout
	cmd.Stderr = p.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid: true, // own group: a kill reaches ffmpeg and anything it starts
		// ffmpeg dies with us. The signal follows the forking OS thread; the Go runtime does not
		// retire threads of unlocked goroutines, so in practice it follows the service.
		Pdeathsig: syscall.SIGKILL,
	}
	err := cmd.Start()
	if stdin != nil {
		stdin.Close() // the child holds its own copy
	}
	if err != nil {
		return nil, err
	}
	p.cmd = cmd
	p.pid = cmd.Process.Pid
	watched := make(chan struct{})
	go p.reap(watched)
	go p.watch(ctx, watched)
	return p, nil
}

// reap is the only caller of cmd.Wait. It first waits without reaping: while the leader is an
// unreaped zombie its pid, and so the group id, cannot be reused, so killing the group then can
// only reach our own processes.
func (p *proc) reap(watched <-chan struct{}) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, p.pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			break
		}
	}
	p.mu.Lock()
	_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	p.reaped = true
	p.mu.Unlock()
	p.err = p.cmd.Wait()
	close(p.exited)
	<-watched
	close(p.done)
}

// watch kills the group when ctx ends first.
func (p *proc) watch(ctx context.Context, watched chan<- struct{}) {
	defer close(watched)
	select {
	case <-ctx.Done():
		p.mu.Lock()
		if !p.reaped {
			p.ctxErr = ctx.Err()
			_ = syscall.Kill(-p.pid, syscall.SIGKILL)
		}
		p.mu.Unlock()
	case <-p.exited:
	}
}

// kill sends SIGKILL to the group, and to nothing else: once the leader is reaped the group id
// may belong to someone else, so it does nothing then.
func (p *proc) kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.reaped {
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	}
}

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
