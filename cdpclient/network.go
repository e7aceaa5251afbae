package cdpclient

import (
	"context"
	"errors"
	"time"

	"github.com/mafredri/cdp/protocol/network"
	"github.com/mafredri/cdp/protocol/page"
)

// netTracker counts the page's requests in flight from Network events. The three event streams
// are read independently, so a request may be seen done before it is seen started: a request is
// in flight when it is started and not done, whatever the order the events were read in. A
// redirect keeps its request id, so it stays one request.
type netTracker struct {
	sent     network.RequestWillBeSentClient
	finished network.LoadingFinishedClient
	failed   network.LoadingFailedClient
	started  map[network.RequestID]owner
	done     map[network.RequestID]bool
}

// owner is the frame and the document loader a request was made for.
type owner struct {
	frame  page.FrameID
	loader network.LoaderID
}

// trackNetwork subscribes to the request events of t and enables the Network domain. The streams
// end with ctx.
func trackNetwork(ctx context.Context, t *tab) (n *netTracker, err error) {
	n = &netTracker{started: map[network.RequestID]owner{}, done: map[network.RequestID]bool{}}
	if n.sent, err = t.c.Network.RequestWillBeSent(ctx); err != nil {
		return nil, err
	}
	if n.finished, err = t.c.Network.LoadingFinished(ctx); err != nil {
		return nil, err
	}
	if n.failed, err = t.c.Network.LoadingFailed(ctx); err != nil {
		return nil, err
	}
	if err := t.c.Network.Enable(ctx, network.NewEnableArgs()); err != nil {
		return nil, err
	}
	return n, nil
}

// inFlight counts the requests started and not done. With main set, the requests of main.frame
// for another document than main.loader are left out: a document replaced while loading gets no
// loadingFinished or loadingFailed for its requests in flight (Chromium 156), itself included.
func (n *netTracker) inFlight(main owner) int {
	c := 0
	for id, o := range n.started {
		if n.done[id] || (main.loader != "" && o.frame == main.frame && o.loader != main.loader) {
			continue
		}
		c++
	}
	return c
}

// waitIdle returns once no request has been in flight, and no request event seen, for quiet.
// main is the main frame's current document, or zero to count every request.
func (n *netTracker) waitIdle(ctx context.Context, quiet time.Duration, main owner) error {
	return n.waitIdleN(ctx, quiet, main, 0)
}

// waitIdleN is waitIdle that allows up to most requests in flight (networkidle2).
func (n *netTracker) waitIdleN(ctx context.Context, quiet time.Duration, main owner, most int) error {
	if n == nil {
		return errors.New("network tracking is off")
	}
	timer := time.NewTimer(quiet)
	defer timer.Stop()
	for {
		var err error
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			if n.inFlight(main) <= most {
				return nil
			}
			timer.Reset(quiet)
			continue
		case <-n.sent.Ready():
			var ev *network.RequestWillBeSentReply
			if ev, err = n.sent.Recv(); err == nil {
				var f page.FrameID
				if ev.FrameID != nil {
					f = *ev.FrameID
				}
				n.started[ev.RequestID] = owner{frame: f, loader: ev.LoaderID}
			}
		case <-n.finished.Ready():
			var ev *network.LoadingFinishedReply
			if ev, err = n.finished.Recv(); err == nil {
				n.done[ev.RequestID] = true
			}
		case <-n.failed.Ready():
			var ev *network.LoadingFailedReply
			if ev, err = n.failed.Recv(); err == nil {
				n.done[ev.RequestID] = true
			}
		}
		if err != nil {
			return err
		}
		timer.Reset(quiet)
	}
}
