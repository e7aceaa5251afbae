package cdpclient

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mafredri/cdp/protocol/fetch"
	"github.com/mafredri/cdp/protocol/network"

	"github.com/shotd/shotd/egress"
)

// interceptor pauses the page's requests with the Fetch domain and decides each one in Go before
// Chrome sends it. With only the guard to apply it pauses document requests alone (main frame,
// iframes, every redirect hop), before they are sent and when their answer arrives: two round
// trips per document, none per subresource.
type interceptor struct {
	r       *render
	paused  fetch.RequestPausedClient
	refused atomic.Bool // the main frame's document was refused by the guard
	// upstream is the egress proxy's reason when it could not reach the main document's server.
	upstream atomic.Pointer[string]
	wg       sync.WaitGroup
	cancel   context.CancelFunc
}

// startInterceptor enables Fetch for the render and serves paused requests until stop.
func startInterceptor(ctx context.Context, r *render) (*interceptor, error) {
	ctx, cancel := context.WithCancel(ctx)
	in := &interceptor{r: r, cancel: cancel}
	var err error
	if in.paused, err = r.t.c.Fetch.RequestPaused(ctx); err != nil {
		cancel()
		return nil, err
	}
	doc := network.ResourceTypeDocument
	args := fetch.NewEnableArgs().SetPatterns([]fetch.RequestPattern{
		{ResourceType: &doc, RequestStage: fetch.RequestStageRequest},
		{ResourceType: &doc, RequestStage: fetch.RequestStageResponse},
	})
	if err := r.t.c.Fetch.Enable(ctx, args); err != nil {
		in.paused.Close()
		cancel()
		return nil, err
	}
	in.wg.Add(1)
	go in.serve(ctx)
	return in, nil
}

func (in *interceptor) serve(ctx context.Context) {
	defer in.wg.Done()
	for {
		ev, err := in.paused.Recv()
		if err != nil {
			return // the render ended (ctx) or the tab went away
		}
		in.decide(ctx, ev)
	}
}

// decide lets one paused request go on or fails it inside Chrome (BlockedByClient).
func (in *interceptor) decide(ctx context.Context, ev *fetch.RequestPausedReply) {
	c := in.r.t.c.Fetch
	main := ev.FrameID == in.r.t.frameID
	if ev.ResponseStatusCode != nil || ev.ResponseErrorReason != nil {
		// The answer of a document: the proxy's own refusal or error page is not the site's page.
		for _, h := range ev.ResponseHeaders {
			switch {
			case strings.EqualFold(h.Name, egress.RefusedHeader):
				if main {
					in.refused.Store(true)
				}
			case strings.EqualFold(h.Name, egress.UpstreamErrorHeader):
				if main {
					reason := h.Value
					in.upstream.Store(&reason)
				}
			default:
				continue
			}
			_ = c.FailRequest(ctx, fetch.NewFailRequestArgs(ev.RequestID, network.ErrorReasonBlockedByClient))
			return
		}
		_ = c.ContinueRequest(ctx, fetch.NewContinueRequestArgs(ev.RequestID))
		return
	}
	if in.refuse(ctx, ev) {
		if main {
			in.refused.Store(true)
		}
		_ = c.FailRequest(ctx, fetch.NewFailRequestArgs(ev.RequestID, network.ErrorReasonBlockedByClient))
		return
	}
	_ = c.ContinueRequest(ctx, fetch.NewContinueRequestArgs(ev.RequestID))
}

// refuse reports whether the egress guard refuses the request's address, or its scheme is not
// one a page may load (file:, chrome:, view-source: and the like never reach the network).
func (in *interceptor) refuse(ctx context.Context, ev *fetch.RequestPausedReply) bool {
	g := in.r.p.cfg.Guard
	if g == nil {
		return false
	}
	u, err := url.Parse(ev.Request.URL)
	if err != nil {
		return true
	}
	switch u.Scheme {
	case "http", "https":
		return g.CheckURL(ctx, ev.Request.URL) != nil
	case "data", "blob", "about":
		return ev.FrameID == in.r.t.frameID && !in.r.html // a page may not navigate itself to data:
	default:
		return true
	}
}

// stop ends the interception and waits for its goroutine.
func (in *interceptor) stop() {
	in.cancel()
	in.paused.Close()
	in.wg.Wait()
}
