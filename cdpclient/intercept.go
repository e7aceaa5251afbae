package cdpclient

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mafredri/cdp/protocol/fetch"
	"github.com/mafredri/cdp/protocol/network"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/egress"
)

// interceptor pauses the page's requests with the Fetch domain and decides each one in Go before
// Chrome sends it. With only the guard to apply it pauses document requests alone (main frame,
// iframes, every redirect hop), before they are sent and when their answer arrives: two round
// trips per document, none per subresource but those whose URL carries credentials. Request
// rules (blocking, extra headers) need every request, so only a render that has them pauses all
// its subresources.
type interceptor struct {
	r      *render
	rules  *requestRules // nil: the guard alone
	paused fetch.RequestPausedClient
	auth   fetch.AuthRequiredClient // challenges of paused requests (fetchArgs)
	// failed is cancelled once a document of the main frame has been failed on purpose: refused
	// by the guard, or answered by the egress proxy's own error page. Chrome then loads its error
	// page under a new loader, which must never be waited for nor captured; failure says why.
	failed   context.Context
	failMain context.CancelFunc     // signals, before Chrome hears of it, that failed is so
	refused  atomic.Bool            // the main frame's document was refused by the guard
	upstream atomic.Pointer[string] // the egress proxy's reason when it could not reach the main document's server
	// pageURL is the URL of the main frame's latest document request (redirect hops included),
	// the page the Blocker judges requests for.
	pageURL atomic.Pointer[string]
	// credentials: a request's URL carried a user name or password, which Chrome keeps for
	// the site in the context's HTTP auth cache; the tab must not serve another render.
	credentials atomic.Bool
	wg          sync.WaitGroup
	cancel      context.CancelFunc
}

// startInterceptor enables Fetch for the render and serves paused requests until stop.
func startInterceptor(ctx context.Context, r *render, rules *requestRules) (*interceptor, error) {
	ctx, cancel := context.WithCancel(ctx)
	in := &interceptor{r: r, rules: rules, cancel: cancel}
	in.failed, in.failMain = context.WithCancel(context.Background())
	var err error
	if in.paused, err = r.t.c.Fetch.RequestPaused(ctx); err != nil {
		cancel()
		return nil, err
	}
	if in.auth, err = r.t.c.Fetch.AuthRequired(ctx); err != nil {
		in.paused.Close()
		cancel()
		return nil, err
	}
	// A pre-warmed tab has the guard's patterns on already; rules need others.
	if rules != nil || !r.t.guardFetch {
		// Unknown patterns until it answers; the wipe puts the guard's back unless they are.
		r.t.guardFetch = false
		if err := r.t.c.Fetch.Enable(ctx, fetchArgs(r.p.cfg.Guard != nil, rules)); err != nil {
			in.paused.Close()
			in.auth.Close()
			cancel()
			return nil, err
		}
		r.t.guardFetch = rules == nil && r.p.cfg.Guard != nil
	}
	in.wg.Add(1)
	go in.serve(ctx)
	return in, nil
}

// fetchArgs turns Fetch on with fetchPatterns. The challenges of the requests it pauses come to
// the interceptor (handleAuthRequests), which answers them as a browser with nobody at the
// keyboard does, with the server's 401 page: left to Chrome, full Chromium fails such a
// document (net::ERR_INVALID_AUTH_CREDENTIALS) where the headless shell shows the page.
func fetchArgs(guard bool, rules *requestRules) *fetch.EnableArgs {
	return fetch.NewEnableArgs().SetPatterns(fetchPatterns(guard, rules)).SetHandleAuthRequests(true)
}

// fetchPatterns are the requests a render pauses: documents and URLs with credentials for the
// guard, every request for rules, and with the guard the answers of documents too, to tell the
// egress proxy's own refusals and error pages.
func fetchPatterns(guard bool, rules *requestRules) []fetch.RequestPattern {
	doc := network.ResourceTypeDocument
	var patterns []fetch.RequestPattern
	if rules != nil {
		all := "*"
		patterns = append(patterns, fetch.RequestPattern{URLPattern: &all, RequestStage: fetch.RequestStageRequest})
	} else {
		// A URL with credentials (XMLHttpRequest.open with a user and password, a navigation
		// to user:password@host) puts them in the context's HTTP auth cache, which no CDP call
		// clears and from which Chrome authenticates later requests to that site: such a
		// render's tab is replaced, not wiped (interceptor.credentials). Only URLs with an "@"
		// pause for it.
		creds := "http*://*@*"
		patterns = append(patterns,
			fetch.RequestPattern{ResourceType: &doc, RequestStage: fetch.RequestStageRequest},
			fetch.RequestPattern{URLPattern: &creds, RequestStage: fetch.RequestStageRequest})
	}
	if guard {
		// Only a plain-http answer can be the egress proxy's own (proxyAnswer): an https
		// document's answer comes through a tunnel, and pausing it would cost every such
		// render a round trip through Chrome's UI thread for nothing.
		plain := "http://*"
		patterns = append(patterns, fetch.RequestPattern{URLPattern: &plain, ResourceType: &doc, RequestStage: fetch.RequestStageResponse})
	}
	return patterns
}

// enableGuardFetch turns Fetch on in a pre-warmed tab with the patterns of a render that has
// the guard and no rules, the usual render, so that the render skips that call (a few
// milliseconds: Chrome installs the interception in its network service). Nothing requests
// anything in the blank document until the render, which subscribes to the pauses first.
func (t *tab) enableGuardFetch(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, disposeTimeout)
	defer cancel()
	if err := t.c.Fetch.Enable(ctx, fetchArgs(true, nil)); err != nil {
		return err
	}
	t.guardFetch = true
	return nil
}

func (in *interceptor) serve(ctx context.Context) {
	defer in.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return // the render ended
		case <-in.paused.Ready():
			ev, err := in.paused.Recv()
			if err != nil {
				return // the tab went away
			}
			in.decide(ctx, ev)
		case <-in.auth.Ready():
			ev, err := in.auth.Recv()
			if err != nil {
				return
			}
			cancelAuth := fetch.AuthChallengeResponse{Response: "CancelAuth"}
			_ = in.r.t.c.Fetch.ContinueWithAuth(ctx, fetch.NewContinueWithAuthArgs(ev.RequestID, cancelAuth))
		}
	}
}

// decide lets one paused request go on or fails it inside Chrome (BlockedByClient).
func (in *interceptor) decide(ctx context.Context, ev *fetch.RequestPausedReply) {
	c := in.r.t.c.Fetch
	main := ev.FrameID == in.r.t.frameID
	if ev.ResponseStatusCode != nil || ev.ResponseErrorReason != nil {
		// The answer of a document: the proxy's own refusal or error page is not the site's page.
		refused, upstream, fromProxy := proxyAnswer(ev.Request.URL, ev.ResponseHeaders)
		if !fromProxy {
			_ = c.ContinueRequest(ctx, fetch.NewContinueRequestArgs(ev.RequestID))
			return
		}
		if main {
			if refused {
				in.refused.Store(true)
			} else {
				in.upstream.Store(&upstream)
			}
			in.failMain()
		}
		_ = c.FailRequest(ctx, fetch.NewFailRequestArgs(ev.RequestID, network.ErrorReasonBlockedByClient))
		return
	}
	if hasCredentials(ev.Request.URL) {
		in.credentials.Store(true)
	}
	doc := ev.ResourceType == network.ResourceTypeDocument
	if doc {
		switch v, reason := in.judge(ctx, ev); v {
		case refusedDoc:
			if main {
				in.refused.Store(true)
				in.failMain()
			}
			_ = c.FailRequest(ctx, fetch.NewFailRequestArgs(ev.RequestID, network.ErrorReasonBlockedByClient))
			return
		case unresolvedDoc:
			// Failed here as Chrome would fail it, rather than passed on to the proxy to be
			// looked up (and time out, on a slow resolver) a second time.
			if main {
				in.upstream.Store(&reason)
				in.failMain()
			}
			_ = c.FailRequest(ctx, fetch.NewFailRequestArgs(ev.RequestID, network.ErrorReasonNameNotResolved))
			return
		}
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

// hasCredentials reports whether rawURL carries a user name or password. Most paused requests
// (every one, with request rules) have no "@" at all and are not parsed for it.
func hasCredentials(rawURL string) bool {
	if !strings.Contains(rawURL, "@") {
		return false
	}
	u, err := url.Parse(rawURL)
	return err == nil && u.User != nil
}

// proxyAnswer tells whether the answer to a document request is the egress proxy's own: its
// refusal (refused) or its error page (upstream, the reason), marked by its headers. Only a
// plain-http answer can be: an https one comes through a tunnel the proxy cannot write into (its
// refusal of a tunnel is a failed CONNECT, and the request stage refuses such documents first),
// so there the headers could only be the site's own, and the proxy strips them from what it
// forwards.
func proxyAnswer(url string, headers []fetch.HeaderEntry) (refused bool, upstream string, fromProxy bool) {
	if !strings.HasPrefix(url, "http:") {
		return false, "", false
	}
	for _, h := range headers {
		switch {
		case strings.EqualFold(h.Name, egress.RefusedHeader):
			return true, "", true
		case strings.EqualFold(h.Name, egress.UpstreamErrorHeader):
			return false, h.Value, true
		}
	}
	return false, "", false
}

// failure is the render's error once a main-frame document was failed on purpose, else nil. A
// refusal wins over an unreachable server: some hop was refused either way.
func (in *interceptor) failure() error {
	if in == nil {
		return nil
	}
	if in.failed.Err() == nil {
		return nil
	}
	if in.refused.Load() {
		return shotd.Errorf(shotd.CodeHostNotAllowed, "the page or one of its redirects leads to a private, local or internal address")
	}
	reason := "unknown error"
	if p := in.upstream.Load(); p != nil {
		reason = *p
	}
	return shotd.Errorf(shotd.CodeNavigationFailed, "the page could not be loaded: %s", reason)
}

// mainFailed is closed when failure is set; nil (never ready) without interception.
func (in *interceptor) mainFailed() <-chan struct{} {
	if in == nil {
		return nil
	}
	return in.failed.Done()
}

// page is the main document's URL as far as seen; "" for an html source.
func (in *interceptor) page() string {
	if p := in.pageURL.Load(); p != nil {
		return *p
	}
	return ""
}

// docVerdict is what the egress guard makes of a document request.
type docVerdict int

const (
	allowedDoc    docVerdict = iota
	refusedDoc               // a private, local or internal address, or a scheme a page may not load
	unresolvedDoc            // the name does not resolve
)

// judge applies the egress guard to a document request: its address, or its scheme when it is
// not one a page may load (file:, chrome:, view-source: and the like never reach the network).
// For unresolvedDoc, reason says why.
func (in *interceptor) judge(ctx context.Context, ev *fetch.RequestPausedReply) (docVerdict, string) {
	g := in.r.p.cfg.Guard
	if g == nil {
		return allowedDoc, ""
	}
	u, err := url.Parse(ev.Request.URL)
	if err != nil {
		return refusedDoc, ""
	}
	switch u.Scheme {
	case "http", "https":
		// The proxy checks again when it dials: a name may resolve otherwise by then.
		switch err := g.CheckURL(ctx, ev.Request.URL); {
		case err == nil:
			return allowedDoc, ""
		case shotd.CodeOf(err) == shotd.CodeNavigationFailed:
			return unresolvedDoc, shotd.AsError(err).Message
		default:
			return refusedDoc, ""
		}
	case "data", "blob", "about":
		if ev.FrameID == in.r.t.frameID && !in.r.html { // a page may not navigate itself to data:
			return refusedDoc, ""
		}
		return allowedDoc, ""
	default:
		return refusedDoc, ""
	}
}

// stop ends the interception and waits for its goroutine.
func (in *interceptor) stop() {
	in.cancel()
	in.paused.Close()
	in.auth.Close()
	in.wg.Wait()
}
