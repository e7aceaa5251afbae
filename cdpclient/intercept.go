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
// trips per document, none per subresource. Request rules (blocking, extra headers) need every
// request, so only a render that has them pauses its subresources too.
type interceptor struct {
	r       *render
	rules   *requestRules // nil: the guard alone
	paused  fetch.RequestPausedClient
	refused atomic.Bool // the main frame's document was refused by the guard
	// upstream is the egress proxy's reason when it could not reach the main document's server.
	upstream atomic.Pointer[string]
	// pageURL is the URL of the main frame's latest document request (redirect hops included),
	// the page the Blocker judges requests for.
	pageURL atomic.Pointer[string]
	wg      sync.WaitGroup
	cancel  context.CancelFunc
}

// startInterceptor enables Fetch for the render and serves paused requests until stop.
func startInterceptor(ctx context.Context, r *render, rules *requestRules) (*interceptor, error) {
	ctx, cancel := context.WithCancel(ctx)
	in := &interceptor{r: r, rules: rules, cancel: cancel}
	var err error
	if in.paused, err = r.t.c.Fetch.RequestPaused(ctx); err != nil {
		cancel()
		return nil, err
	}
	doc := network.ResourceTypeDocument
	var patterns []fetch.RequestPattern
	if rules != nil {
		all := "*"
		patterns = append(patterns, fetch.RequestPattern{URLPattern: &all, RequestStage: fetch.RequestStageRequest})
	} else {
		patterns = append(patterns, fetch.RequestPattern{ResourceType: &doc, RequestStage: fetch.RequestStageRequest})
	}
	if r.p.cfg.Guard != nil {
		// The answers of documents, to tell the egress proxy's own refusals and error pages.
		patterns = append(patterns, fetch.RequestPattern{ResourceType: &doc, RequestStage: fetch.RequestStageResponse})
	}
	args := fetch.NewEnableArgs().SetPatterns(patterns)
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
	doc := ev.ResourceType == network.ResourceTypeDocument
	if doc && in.refuse(ctx, ev) {
		if main {
			in.refused.Store(true)
		}
		_ = c.FailRequest(ctx, fetch.NewFailRequestArgs(ev.RequestID, network.ErrorReasonBlockedByClient))
		return
	}
	args := fetch.NewContinueRequestArgs(ev.RequestID)
	if rr := in.rules; rr != nil {
		if doc && main {
			u := ev.Request.URL
			in.pageURL.Store(&u)
		} else if rr.blocks(ev.Request.URL, ev.ResourceType, doc, in.page()) {
			// Fails at once inside Chrome, as net::ERR_BLOCKED_BY_CLIENT.
			_ = c.FailRequest(ctx, fetch.NewFailRequestArgs(ev.RequestID, network.ErrorReasonBlockedByClient))
			return
		}
		if hs := rr.headersFor(ev.Request.URL, ev.Request.Headers); hs != nil {
			// Per request, so that each redirect hop is judged by its own host.
			args.SetHeaders(hs)
		}
	}
	_ = c.ContinueRequest(ctx, args)
}

// page is the main document's URL as far as seen; "" for an html source.
func (in *interceptor) page() string {
	if p := in.pageURL.Load(); p != nil {
		return *p
	}
	return ""
}

// refuse reports whether the egress guard refuses the address of a document request, or its
// scheme is not one a page may load (file:, chrome:, view-source: and the like never reach the network).
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
