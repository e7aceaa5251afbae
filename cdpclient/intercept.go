package cdpclient

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mafredri/cdp/protocol/fetch"
	"github.com/mafredri/cdp/protocol/network"
	"github.com/mafredri/cdp/protocol/page"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/egress"
)

// interceptor watches a render's documents and, with the Fetch domain, decides in Go the
// requests it pauses before Chrome sends them.
//
// With only the guard to apply it pauses nothing but URLs that carry credentials (on full
// Chromium every request, for its auth challenges: Process.pauseAll): the guard itself is
// the tab's egress route, which refuses what a page may not reach and records it
// (egress.Route.Troubles). The interceptor follows the main frame's documents
// (Page.frameNavigated) and fails the render when one is the route's refusal or error page, or
// Chrome's error page for a destination the route refused or could not reach, so that neither
// is ever captured. Request rules (blocking, extra headers) need every request, so only a render
// that has them pauses all its requests, and the guard also judges its documents there.
type interceptor struct {
	r         *render
	rules     *requestRules // nil: the guard alone
	paused    fetch.RequestPausedClient
	auth      fetch.AuthRequiredClient // challenges of paused requests (fetchArgs)
	navigated page.FrameNavigatedClient
	syncs     chan chan struct{} // sync's requests to serve
	served    chan struct{}      // closed when serve returns
	// failed is cancelled once a document of the main frame has failed on purpose: refused by
	// the guard, or answered by the egress route's own error page, or Chrome's error page for a
	// destination the route could not reach. It must never be waited for nor captured; failure
	// says why.
	failed   context.Context
	failMain context.CancelFunc
	refused  atomic.Bool            // the main frame's document was refused by the guard
	upstream atomic.Pointer[string] // why the main document's server could not be reached
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
	in := &interceptor{r: r, rules: rules, cancel: cancel, syncs: make(chan chan struct{}), served: make(chan struct{})}
	in.failed, in.failMain = context.WithCancel(context.Background())
	var err error
	fail := func(err error) (*interceptor, error) {
		for _, s := range []interface{ Close() error }{in.paused, in.auth, in.navigated} {
			if s != nil {
				s.Close()
			}
		}
		cancel()
		return nil, err
	}
	if in.paused, err = r.t.c.Fetch.RequestPaused(ctx); err != nil {
		return fail(err)
	}
	if in.auth, err = r.t.c.Fetch.AuthRequired(ctx); err != nil {
		return fail(err)
	}
	// Page is on: subscribing costs Chrome nothing.
	if in.navigated, err = r.t.c.Page.FrameNavigated(ctx); err != nil {
		return fail(err)
	}
	// A pre-warmed tab has the guard's patterns on already; rules need others.
	if rules != nil || !r.t.guardFetch {
		// Unknown patterns until it answers; the wipe puts the guard's back unless they are.
		r.t.guardFetch = false
		if err := r.t.c.Fetch.Enable(ctx, fetchArgs(rules, r.p.pauseAll)); err != nil {
			return fail(err)
		}
		r.t.guardFetch = rules == nil && r.p.cfg.Guard != nil
	}
	in.wg.Add(1)
	go in.serve(ctx)
	return in, nil
}

// fetchArgs turns Fetch on with fetchPatterns. The challenges of the requests it pauses come to
// the interceptor (handleAuthRequests), which answers them as a browser with nobody at the
// keyboard does, with the server's 401 answer.
func fetchArgs(rules *requestRules, all bool) *fetch.EnableArgs {
	return fetch.NewEnableArgs().SetPatterns(fetchPatterns(rules, all)).SetHandleAuthRequests(true)
}

// fetchPatterns are the requests a render pauses: every one for rules or when all is set
// (Process.pauseAll), else only URLs with credentials.
func fetchPatterns(rules *requestRules, all bool) []fetch.RequestPattern {
	if rules != nil || all {
		every := "*"
		return []fetch.RequestPattern{{URLPattern: &every, RequestStage: fetch.RequestStageRequest}}
	}
	// A URL with credentials (XMLHttpRequest.open with a user and password, a navigation to
	// user:password@host) puts them in the context's HTTP auth cache, which no CDP call clears
	// and from which Chrome authenticates later requests to that site: such a render's tab is
	// replaced, not wiped (interceptor.credentials). Only URLs with an "@" pause for it.
	creds := "http*://*@*"
	return []fetch.RequestPattern{{URLPattern: &creds, RequestStage: fetch.RequestStageRequest}}
}

// enableGuardFetch turns Fetch on in a pre-warmed tab with the patterns of a render that has
// the guard and no rules, the usual render, so that the render skips that call (a few
// milliseconds: Chrome installs the interception in its network service). Nothing requests
// anything in the blank document until the render, which subscribes to the pauses first.
func (p *Process) enableGuardFetch(ctx context.Context, t *tab) error {
	ctx, cancel := context.WithTimeout(ctx, disposeTimeout)
	defer cancel()
	if err := t.c.Fetch.Enable(ctx, fetchArgs(nil, p.pauseAll)); err != nil {
		return err
	}
	t.guardFetch = true
	return nil
}

func (in *interceptor) serve(ctx context.Context) {
	defer in.wg.Done()
	defer close(in.served)
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
		case <-in.navigated.Ready():
			if !in.recvNavigated() {
				return
			}
		case done := <-in.syncs:
			for ready := true; ready; {
				select {
				case <-in.navigated.Ready():
					ready = in.recvNavigated()
				default:
					ready = false
				}
			}
			close(done)
		}
	}
}

// recvNavigated takes one Page.frameNavigated; false when the tab went away.
func (in *interceptor) recvNavigated() bool {
	ev, err := in.navigated.Recv()
	if err != nil {
		return false
	}
	if ev.Frame.ID == in.r.t.frameID && in.r.t.route != nil {
		if t, ok := troubleOf(in.r.t.route.Troubles(), ev.Frame); ok {
			in.fail(t)
		}
	}
	return true
}

// troubleOf finds the route's trouble that a main-frame document is: the route's own answer to
// a plain-http request (matched by its URL), or Chrome's error page for a destination whose
// tunnel the route refused or could not open (by host and port).
func troubleOf(ts []egress.Trouble, f page.Frame) (egress.Trouble, bool) {
	target, docURL := "", ""
	if f.UnreachableURL != nil && *f.UnreachableURL != "" {
		u, err := url.Parse(*f.UnreachableURL)
		if err != nil {
			return egress.Trouble{}, false
		}
		target = egress.TroubleTarget(u.Hostname(), u.Port(), defaultPort(u.Scheme))
	} else {
		docURL = f.URL // without its fragment, as the request's
	}
	for i := len(ts) - 1; i >= 0; i-- {
		if (target != "" && ts[i].Target == target) || (docURL != "" && ts[i].URL == docURL) {
			return ts[i], true
		}
	}
	return egress.Trouble{}, false
}

// defaultPort is the port of a URL of scheme that names none.
func defaultPort(scheme string) string {
	if scheme == "http" || scheme == "ws" {
		return "80"
	}
	return "443"
}

// fail marks the main frame's document as failed for t's reason: the route's, or the guard's
// verdict on a paused document.
func (in *interceptor) fail(t egress.Trouble) {
	if t.Refused {
		in.refused.Store(true)
	} else {
		reason := t.Reason
		in.upstream.Store(&reason)
	}
	in.failMain()
}

// failByRoute fails the main frame's document with the route's worst trouble of the render,
// for a navigation that Chrome reports failed: a refusal if any, else the last destination the
// route could not reach. It reports whether there was any.
func (in *interceptor) failByRoute() bool {
	if in == nil || in.r.t.route == nil {
		return false
	}
	ts := in.r.t.route.Troubles()
	if len(ts) == 0 {
		return false
	}
	t := ts[len(ts)-1]
	for _, x := range ts {
		if x.Refused {
			t = x
		}
	}
	in.fail(t)
	return true
}

// sync returns once the interceptor has taken in every Page.frameNavigated that Chrome sent
// before the last answer the render received: a document that failed before a step ended is
// then known to failure.
func (in *interceptor) sync(ctx context.Context) {
	if in == nil {
		return
	}
	done := make(chan struct{})
	select {
	case in.syncs <- done:
	case <-in.served:
		return
	case <-ctx.Done():
		return
	}
	select {
	case <-done:
	case <-in.served:
	case <-ctx.Done():
	}
}

// decide lets one paused request go on or fails it inside Chrome (BlockedByClient).
func (in *interceptor) decide(ctx context.Context, ev *fetch.RequestPausedReply) {
	c := in.r.t.c.Fetch
	main := ev.FrameID == in.r.t.frameID
	if hasCredentials(ev.Request.URL) {
		in.credentials.Store(true)
	}
	doc := ev.ResourceType == network.ResourceTypeDocument
	if doc {
		switch v, reason := in.judge(ctx, ev); v {
		case refusedDoc:
			if main {
				in.fail(egress.Trouble{Refused: true})
			}
			_ = c.FailRequest(ctx, fetch.NewFailRequestArgs(ev.RequestID, network.ErrorReasonBlockedByClient))
			return
		case unresolvedDoc:
			// Failed here as Chrome would fail it, rather than passed on to the proxy to be
			// looked up (and time out, on a slow resolver) a second time.
			if main {
				in.fail(egress.Trouble{Reason: reason})
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

// judge applies the egress guard to a paused document request (with request rules, or with
// credentials in its URL; the route refuses the others as they connect): its address, or its
// scheme when it is not one a page may load (file:, chrome:, view-source: and the like never
// reach the network). For unresolvedDoc, reason says why.
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
	in.navigated.Close()
	in.wg.Wait()
}
