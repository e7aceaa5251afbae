package cdpclient

import (
	"context"
	"strings"
	"sync"

	"github.com/mafredri/cdp/protocol/network"

	"github.com/shotd/shotd"
)

// The watch of the page's Network events that metadata_http_* and fail_if_request_failed need,
// and the fail_if_request_failed check.

// netWatch reads the Network events that metadata_http_* and fail_if_request_failed need. It
// is read synchronously (drain): an event Chrome sent before the answer to a later command is
// buffered by then, so nothing is missed and nothing races.
type netWatch struct {
	mu       sync.Mutex
	sent     network.RequestWillBeSentClient
	received network.ResponseReceivedClient
	failed   network.LoadingFailedClient
	finished network.LoadingFinishedClient
	urls     map[network.RequestID]string
	ended    map[network.RequestID]bool
	doc      *network.Response // the main frame's latest document response
	// failures holds the error text of each request that failed. The streams are read in no
	// particular order among themselves, so a failure may be read before its request: the
	// URL is looked up at the check.
	failures map[network.RequestID]string
}

func (r *render) needsNetWatch() bool {
	s := r.o
	return len(s.FailIfRequestFailed) > 0 || (!r.html && (s.MetaStatusCode || s.MetaHeaders))
}

// startNetWatch subscribes to the events and enables Network (undone by the wipe).
func (r *render) startNetWatch(ctx context.Context) error {
	if !r.needsNetWatch() {
		return nil
	}
	n := &netWatch{urls: map[network.RequestID]string{}, ended: map[network.RequestID]bool{},
		failures: map[network.RequestID]string{}}
	var err error
	if n.sent, err = r.t.c.Network.RequestWillBeSent(ctx); err != nil {
		return err
	}
	if n.received, err = r.t.c.Network.ResponseReceived(ctx); err != nil {
		return err
	}
	if n.failed, err = r.t.c.Network.LoadingFailed(ctx); err != nil {
		return err
	}
	if n.finished, err = r.t.c.Network.LoadingFinished(ctx); err != nil {
		return err
	}
	r.side.net = n
	r.t.over.network = true
	return r.t.c.Network.Enable(ctx, network.NewEnableArgs())
}

// drain reads every event buffered so far.
func (n *netWatch) drain(main string) error {
	return n.read(context.Background(), main, false)
}

// read reads the events buffered so far; with wait set, it reads one event, blocking for it
// (or for ctx) when none is buffered.
func (n *netWatch) read(ctx context.Context, main string, wait bool) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	for {
		which := n.buffered()
		if which < 0 {
			if !wait {
				return nil
			}
			if err := n.await(ctx); err != nil {
				return err
			}
			continue
		}
		if err := n.handle(which, main); err != nil {
			return err
		}
		if wait {
			return nil
		}
	}
}

// streams are the Ready channels of the four event streams, in handle's numbering.
func (n *netWatch) streams() [4]<-chan struct{} {
	return [4]<-chan struct{}{n.sent.Ready(), n.received.Ready(), n.failed.Ready(), n.finished.Ready()}
}

// buffered returns the first stream with an event buffered, or -1.
func (n *netWatch) buffered() int {
	for i, ready := range n.streams() {
		select {
		case <-ready:
			return i
		default:
		}
	}
	return -1
}

// await blocks until a stream has an event, or ctx ends.
func (n *netWatch) await(ctx context.Context) error {
	s := n.streams()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-s[0]:
	case <-s[1]:
	case <-s[2]:
	case <-s[3]:
	}
	return nil
}

// handle reads one event of the stream which (streams' numbering).
func (n *netWatch) handle(which int, main string) error {
	switch which {
	case 0:
		ev, err := n.sent.Recv()
		if err != nil {
			return err
		}
		n.urls[ev.RequestID] = ev.Request.URL
	case 1:
		ev, err := n.received.Recv()
		if err != nil {
			return err
		}
		if ev.Type == network.ResourceTypeDocument && ev.FrameID != nil && string(*ev.FrameID) == main {
			resp := ev.Response
			n.doc = &resp
		}
	case 2:
		ev, err := n.failed.Recv()
		if err != nil {
			return err
		}
		n.ended[ev.RequestID] = true
		// Cancelled requests (a navigation away, an aborted fetch) and the ones the render
		// blocked itself (guard, block_* options) are not failures of the page.
		if (ev.Canceled != nil && *ev.Canceled) || ev.BlockedReason != "" ||
			strings.Contains(ev.ErrorText, "ERR_BLOCKED_BY_CLIENT") || strings.Contains(ev.ErrorText, "ERR_ABORTED") {
			return nil
		}
		n.failures[ev.RequestID] = ev.ErrorText
	case 3:
		ev, err := n.finished.Recv()
		if err != nil {
			return err
		}
		n.ended[ev.RequestID] = true
	}
	return nil
}

// pending reports whether a request matching one of pats was sent and has not ended.
func (n *netWatch) pending(pats []urlPattern) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for id, u := range n.urls {
		if n.ended[id] {
			continue
		}
		for _, p := range pats {
			if p.match(u) {
				return true
			}
		}
	}
	return false
}

// checkFailedRequests fails the render when a request that fail_if_request_failed names failed. The
// matching requests still under way are waited for, within the loading time, so that their
// outcome is known.
func (r *render) checkFailedRequests(ctx context.Context) error {
	pats := r.o.FailIfRequestFailed
	if len(pats) == 0 || r.side.net == nil {
		return nil
	}
	compiled := make([]urlPattern, 0, len(pats))
	for _, p := range pats {
		compiled = append(compiled, compilePattern(strings.TrimSpace(p)))
	}
	main := string(r.t.frameID)
	if err := r.side.net.drain(main); err != nil {
		return err
	}
	// A request that never ends (a long poll, or one of a replaced document, which gets no end
	// event) is waited for no longer than a selector would be: then what is known decides.
	wctx, cancel := context.WithDeadline(ctx, selectorDeadline(ctx, r.load.timeout))
	defer cancel()
	for r.side.net.pending(compiled) {
		if err := r.side.net.read(wctx, main, true); err != nil {
			if ctx.Err() == nil && wctx.Err() != nil {
				break
			}
			return err
		}
	}
	r.side.net.mu.Lock()
	defer r.side.net.mu.Unlock()
	for id, why := range r.side.net.failures {
		u := r.side.net.urls[id]
		for _, p := range compiled {
			if p.match(u) {
				name := netError.FindString(why)
				if name == "" {
					name = "a network error"
				}
				return shotd.Errorf(shotd.CodeNavigationFailed, "a request matching fail_if_request_failed failed: %s (%s)", clipText(u), name)
			}
		}
	}
	return nil
}
