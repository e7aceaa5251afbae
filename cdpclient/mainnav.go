package cdpclient

import (
	"context"
	"time"

	"github.com/mafredri/cdp"
	"github.com/mafredri/cdp/protocol/page"
)

// A page may ask to navigate its main frame some time before the navigation starts:
// form.submit() and a submit button queue the submission as a task, and the document that asked
// may finish loading (its load event, or a stop when the submission cut its parsing short) before
// that task runs. The renderer announces the request at once with Page.frameRequestedNavigation
// (location, links, forms; never a same-document navigation nor a javascript: URL, Chromium 156),
// and the start comes with Page.frameStartedLoading (with Page.frameStartedNavigating, which
// mafredri/cdp does not know). mainNav follows the two, and the stops, so that neither the wait
// nor the settling after a script or a click ends between the request and the start.

// navStartMax bounds the wait for a requested navigation to start. A queued submission starts
// after the renderer's current task and a round trip to the browser, a few milliseconds
// (Chromium 156, 2 cores), which a busy host may stretch well past that. One that never starts
// (window.stop, or a later navigation that cancelled it, before its task ran) holds a wait or
// the settling after an action this much longer, and only then. A variable for the tests, which
// raise it where a navigation must start (a busy host must not fail them).
var navStartMax = time.Second

// testHookNavGrace, when set by a test, runs when a wait gives a requested navigation
// navStartMax to start (expired false), and when that time ran out (true).
var testHookNavGrace func(expired bool)

type navState int

const (
	navIdle    navState = iota
	navAsked            // the page requested a navigation of the main frame that has not started
	navLoading          // that navigation started, and has not yet committed or stopped
)

// navKind is what one event of mainNav was, for the main frame.
type navKind int

const (
	navOther     navKind = iota // another frame's, or a navigation to a new tab or a download
	navRequested                // the page requested a navigation of the main frame
	navStarted                  // the main frame started loading
	navStopped                  // the main frame stopped loading
	navLifecycle                // a lifecycle event of the main frame (of a mainNav that reads them)
)

// mainNav reads the main frame's navigation events, and its lifecycle events when asked to, in
// the order Chrome sent them (the streams are synchronised), and keeps the state of the
// navigation the page requested.
type mainNav struct {
	frame     page.FrameID
	life      page.LifecycleEventClient // nil unless asked for
	requested page.FrameRequestedNavigationClient
	started   page.FrameStartedLoadingClient
	stopped   page.FrameStoppedLoadingClient
	state     navState
	// stoppedAsked: the main frame stopped loading while a navigation is asked for (a submission
	// that cut parsing short, window.stop while parsing). The document may then never get the
	// event a wait is for: the requested navigation is given navStartMax to start from then on.
	stoppedAsked bool
}

// watchMainNav subscribes to t's navigation events, and to its lifecycle events if lifecycle is
// set; Page and its lifecycle events are enabled, so this costs no round trip. The streams end
// with ctx or close. Every stream must be read: one event left unread holds back the others.
func watchMainNav(ctx context.Context, t *tab, lifecycle bool) (*mainNav, error) {
	n := &mainNav{frame: t.frameID}
	var err error
	if lifecycle {
		// A stream of its own, not the tab's: streams in sync stay so, and the tab's outlives
		// the render.
		if n.life, err = t.c.Page.LifecycleEvent(ctx); err != nil {
			return nil, err
		}
	}
	if n.requested, err = t.c.Page.FrameRequestedNavigation(ctx); err != nil {
		n.close()
		return nil, err
	}
	if n.started, err = t.c.Page.FrameStartedLoading(ctx); err != nil {
		n.close()
		return nil, err
	}
	if n.stopped, err = t.c.Page.FrameStoppedLoading(ctx); err != nil {
		n.close()
		return nil, err
	}
	// A fast navigation's start must not be read before its request, nor its stop before its
	// start; nor a request a document made after its init before that init, which resets the
	// state (committed).
	sync := func() error { return cdp.Sync(n.requested, n.started, n.stopped) }
	if n.life != nil {
		sync = func() error { return cdp.Sync(n.requested, n.started, n.stopped, n.life) }
	}
	if err := sync(); err != nil {
		n.close()
		return nil, err
	}
	return n, nil
}

func (n *mainNav) close() {
	for _, s := range []interface{ Close() error }{n.life, n.requested, n.started, n.stopped} {
		if s != nil {
			s.Close()
		}
	}
}

// ready returns the streams' Ready channels, all nil (never ready) for a nil mainNav, life nil
// unless lifecycle events are read; when one fires, next reads its event.
func (n *mainNav) ready() (life, requested, started, stopped <-chan struct{}) {
	if n == nil {
		return nil, nil, nil, nil
	}
	if n.life != nil {
		life = n.life.Ready()
	}
	return life, n.requested.Ready(), n.started.Ready(), n.stopped.Ready()
}

// next reads the one event that is ready (the streams are synchronised: at most one is), or
// returns navOther when none is, and moves the state on; ev is the main frame's lifecycle event
// for navLifecycle. A start counts as the requested navigation's only after a request: the
// render's own Page.navigate starts loading unasked. A stop while a navigation is asked for is
// the requesting document's own.
func (n *mainNav) next() (kind navKind, ev *page.LifecycleEventReply, err error) {
	life, _, _, _ := n.ready()
	select {
	case <-life:
		ev, err := n.life.Recv()
		if err != nil || ev.FrameID != n.frame {
			return navOther, nil, err
		}
		return navLifecycle, ev, nil
	case <-n.requested.Ready():
		ev, err := n.requested.Recv()
		if err != nil || ev.FrameID != n.frame || ev.Disposition != page.ClientNavigationDispositionCurrentTab {
			return navOther, nil, err
		}
		if n.state != navAsked {
			n.state, n.stoppedAsked = navAsked, false
		}
		return navRequested, nil, nil
	case <-n.started.Ready():
		ev, err := n.started.Recv()
		if err != nil || ev.FrameID != n.frame {
			return navOther, nil, err
		}
		if n.state == navAsked {
			n.state, n.stoppedAsked = navLoading, false
		}
		return navStarted, nil, nil
	case <-n.stopped.Ready():
		ev, err := n.stopped.Recv()
		if err != nil || ev.FrameID != n.frame {
			return navOther, nil, err
		}
		switch n.state {
		case navLoading:
			n.state = navIdle
		case navAsked:
			n.stoppedAsked = true
		}
		return navStopped, nil, nil
	default:
		return navOther, nil, nil
	}
}

// committed records that the main frame committed a new document: what was asked for before
// has arrived.
func (n *mainNav) committed() {
	if n != nil {
		n.state, n.stoppedAsked = navIdle, false
	}
}

// asked reports a requested navigation that has not started yet.
func (n *mainNav) asked() bool { return n != nil && n.state == navAsked }

// loading reports a requested navigation that started and has neither committed nor stopped.
func (n *mainNav) loading() bool { return n != nil && n.state == navLoading }

// graceTimer gives a requested navigation navStartMax to start, from the moment a wait would
// have ended but for it.
type graceTimer struct{ t *time.Timer }

// set runs the timer while on, stops it otherwise.
func (g *graceTimer) set(on bool) {
	switch {
	case on && g.t == nil:
		g.t = time.NewTimer(navStartMax)
		if testHookNavGrace != nil {
			testHookNavGrace(false)
		}
	case !on && g.t != nil:
		g.t.Stop()
		g.t = nil
	}
}

// expired records that the time ran out: the caller stops waiting.
func (g *graceTimer) expired() {
	if testHookNavGrace != nil {
		testHookNavGrace(true)
	}
}

// c is the timer's channel, nil (never ready) while it does not run.
func (g *graceTimer) c() <-chan time.Time {
	if g.t == nil {
		return nil
	}
	return g.t.C
}
