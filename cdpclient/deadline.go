package cdpclient

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/shotd/shotd"
)

// Deadlines of a render. The render as a whole is bounded by Options.RenderBudget (timeout,
// delay, the capture's slack, a video's recording). Within it, the timeout option bounds the
// loading steps only (emulate to page actions, counted from the first of them): a page not
// ready by then is a timeout, whatever delay says. delay and the capture come after, and a video
// records after those with its own deadline (video.go).

var errLoadTimeout = errors.New("page load timeout")

// loadPhase is the deadline of the loading steps. Its cancellation comes from a timer (cause
// errLoadTimeout), not from a context deadline, so that end can disarm it: what the loading steps
// started on its context (interception, request counting, event streams) lives on through the
// delay, the capture and a recording, until the render ends.
type loadPhase struct {
	timeout  time.Duration
	deadline time.Time       // set by the first loading step
	ctx      context.Context // a loadContext; nil until the first loading step
	cancel   context.CancelCauseFunc
	timer    *time.Timer // cancels ctx at deadline while armed
	armed    atomic.Bool
	// watched: ctx is cancelled too once the interceptor fails the main frame's document,
	// whose page becomes an error page on which a loading step would wait until its bound.
	watched bool
}

// errMainFailed ends the loading steps when the main frame's document failed (interceptor.failed).
var errMainFailed = errors.New("the main document failed")

// loadContext is the context of the loading steps. While armed, Deadline reports the load
// deadline, so that the waits that keep a margin before the deadline (selector_not_found rather
// than timeout) see it rather than the render's.
type loadContext struct {
	context.Context // a cancelCtx of the render's context
	l               *loadPhase
}

func (c loadContext) Deadline() (time.Time, bool) {
	if c.l.armed.Load() {
		return c.l.deadline, true
	}
	return c.Context.Deadline()
}

// loadBounded runs a loading step on the load context; running out of time is a timeout.
func (r *render) loadBounded(run func(context.Context) error) func(context.Context) error {
	l := &r.load
	return func(ctx context.Context) error {
		if l.ctx == nil {
			// The clock starts with the first loading step, once the render has its tab.
			l.deadline = time.Now().Add(l.timeout)
			lctx, cancel := context.WithCancelCause(ctx)
			l.ctx, l.cancel = loadContext{lctx, l}, cancel
			l.armed.Store(true)
			l.timer = time.AfterFunc(time.Until(l.deadline), func() {
				if l.armed.CompareAndSwap(true, false) {
					cancel(errLoadTimeout)
				}
			})
			// However the render ends, no timer is left behind.
			context.AfterFunc(ctx, func() { l.timer.Stop() })
		}
		if !l.watched && r.intercept != nil {
			l.watched = true
			stop := context.AfterFunc(r.intercept.failed, func() { l.cancel(errMainFailed) })
			context.AfterFunc(l.ctx, func() { stop() })
		}
		err := run(l.ctx)
		if err != nil && ctx.Err() == nil && errors.Is(context.Cause(l.ctx), errLoadTimeout) {
			return l.timeoutError(err)
		}
		return err
	}
}

// end closes the loading phase: the page is ready. It fails with a timeout when the deadline has
// passed already.
func (l *loadPhase) end() error {
	if l.timer != nil {
		l.timer.Stop()
	}
	if l.armed.CompareAndSwap(true, false) || l.ctx == nil {
		return nil
	}
	return l.timeoutError(context.Cause(l.ctx))
}

func (l *loadPhase) timeoutError(cause error) error {
	return shotd.Wrap(shotd.CodeTimeout, cause, fmt.Sprintf("the page was not ready within the timeout of %s", l.timeout))
}
