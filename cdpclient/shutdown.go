package cdpclient

// Close: the end of a Chrome, and what it leaves behind.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/internal/cgroup"
	"github.com/shotd/shotd/internal/proc"
)

// Close stops Chrome: Browser.close with a short deadline, SIGKILL to the process group, reap,
// remove the user-data dir, and wait for every goroutine of the Process. Renders still running
// fail with internal_error. Close is idempotent; later calls return the first result.
func (p *Process) Close(ctx context.Context) error {
	p.closeOnce.Do(func() { p.closeErr = p.shutdown(ctx, true) })
	return p.closeErr
}

func (p *Process) shutdown(ctx context.Context, graceful bool) error {
	p.mu.Lock()
	p.closing = true
	p.mu.Unlock()
	p.cancelLife(errClosed)

	if graceful && p.browser != nil && !isDone(p.disconnected) {
		// A polite close lets Chrome end its children itself; the kill below is the guarantee.
		bctx, cancel := context.WithTimeout(ctx, browserCloseTimeout)
		err := p.browser.Browser.Close(bctx)
		cancel()
		if err == nil {
			t := time.NewTimer(gracefulExitWait)
			select {
			case <-p.exited:
			case <-t.C:
			case <-ctx.Done():
			}
			t.Stop()
		} else {
			p.log.Debug().Err(err).Msg("browser.close failed")
		}
	}
	p.killGroup()

	// After SIGKILL the exit is a matter of milliseconds; wait for it, and for the goroutines,
	// even when the caller's ctx has run out, so that nothing is left behind. Bounded all the
	// same, should the kernel hold a process (uninterruptible I/O).
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reapTimeout)
	defer cancel()
	var errs []error
	select {
	case <-p.exited:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("chrome pid %d did not exit: %w", p.pid, ctx.Err()))
	}
	if p.cgroup != nil {
		// What is left in it (the crashpad handler, outside the group) goes now.
		if err := p.cgroup.Remove(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if p.conn != nil {
		p.conn.Close()
	}
	if p.pipe != nil {
		p.pipe.Close() // ends every tab's session
	}
	p.drainReady() // ready is nil after a failed Launch: never ready
	// With the group dead nobody holds the write end any more; closing the read end also
	// unblocks the reader should an escaped helper still hold it.
	select {
	case <-p.stderrDone:
	case <-time.After(500 * time.Millisecond):
		p.stderr.Close()
	}
	if err := proc.WaitGroup(ctx, &p.wg); err != nil {
		errs = append(errs, fmt.Errorf("goroutines of chrome pid %d did not end: %w", p.pid, err))
	}
	if err := removeDir(ctx, p.dir); err != nil {
		errs = append(errs, err)
	}
	if err := removeDir(ctx, p.tmpDir); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return shotd.Wrap(shotd.CodeInternalError, errors.Join(errs...), "the browser did not stop cleanly")
	}
	p.log.Debug().Msg("chrome closed")
	return nil
}

// removeCgroup removes c after a failed launch, within reapTimeout.
func removeCgroup(c *cgroup.Child) {
	ctx, cancel := context.WithTimeout(context.Background(), reapTimeout)
	defer cancel()
	_ = c.Remove(ctx)
}

// removeDir removes the user-data dir, retrying while the crashpad handler, which outlives Chrome
// by a moment, may still add files to it.
func removeDir(ctx context.Context, dir string) error {
	var err error
	for range 10 {
		if err = os.RemoveAll(dir); err == nil {
			return nil
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return err
		}
	}
	return err
}
