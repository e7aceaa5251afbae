package cdpclient

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mafredri/cdp"
	"github.com/mafredri/cdp/protocol/browser"
	"github.com/mafredri/cdp/protocol/emulation"
	"github.com/mafredri/cdp/protocol/inspector"
	"github.com/mafredri/cdp/protocol/network"
	"github.com/mafredri/cdp/protocol/page"
	"github.com/mafredri/cdp/protocol/runtime"
	"github.com/mafredri/cdp/protocol/target"
	"github.com/mafredri/cdp/rpcc"

	"github.com/shotd/shotd/egress"
)

// tab is one browser context with one page target in it, connected and with the Page domain on.
//
// Each target has a flat session of its own on the DevTools pipe (pipe.go), seen as a plain
// rpcc.Conn whose events belong to that page alone: mafredri/cdp's session package would use the
// non-flat Target.sendMessageToTarget relay, which funnels every message of every render through
// one goroutine and a browser round trip.
type tab struct {
	browserContext browser.ContextID
	targetID       target.ID
	conn           *rpcc.Conn
	c              *cdp.Client
	frameID        page.FrameID
	lifecycle      page.LifecycleEventClient
	metrics        metrics     // the device metrics override in force
	crashed        atomic.Bool // the renderer of the target crashed
	leaving        atomic.Bool // the wipe is navigating the tab away (leave)
	// sharedWorker: a page of the tab started a shared worker, whose requests Fetch does not
	// see: one with credentials in its URL (XMLHttpRequest.open with a user and password) would
	// leave them in the context's HTTP auth cache, which no CDP call clears. Such a tab is
	// replaced, not wiped.
	sharedWorker atomic.Bool
	// guardFetch: Fetch is on with the patterns of the guard alone (enableGuardFetch).
	guardFetch bool
	// slot: t came from the pre-warmed pool and holds its place there until the render releases
	// it, so that the replacement is made after the render rather than competing with it for the
	// CPU.
	slot bool

	// route is the egress route of the tab's browser context, closed once the context is
	// disposed: a direct one (Guard.OpenDirectRoute) whose connections the wipe ends, or for a
	// render with the proxy option (proxied) a one-off through the user's proxy (proxy.go).
	// nil without a Guard: the context then uses the browser's proxy.
	route   *egress.Route
	proxied bool

	uses    int       // renders served, for Config.TabReuse
	over    overrides // what the current render changed (wipe.go)
	origins originSet // origins committed since the last wipe
}

// metrics is one Emulation.setDeviceMetricsOverride.
type metrics struct {
	width, height int
	scale         float64
	mobile        bool
	orientation   string // "" or an emulation.ScreenOrientation type
}

// baselineMedia is the emulated media of every tab between renders. Screen media is what a
// screenshot sees anyway; set ahead, it spares a PDF render (printed in screen media unless
// media_type says print) a call, and the restyle of the page that comes with it.
const baselineMedia = "screen"

func baselineMediaArgs() *emulation.SetEmulatedMediaArgs {
	return emulation.NewSetEmulatedMediaArgs().SetMedia(baselineMedia).SetFeatures([]emulation.MediaFeature{})
}

// defaultMetrics is the viewport of a render without viewport options. newTab sets it ahead, as
// the override resizes the page and costs a frame.
var defaultMetrics = metrics{width: defaultWidth, height: defaultHeight, scale: 1}

// setMetrics sets the device metrics override unless it is in force already.
func (t *tab) setMetrics(ctx context.Context, m metrics) error {
	if m == t.metrics {
		return nil
	}
	// Screen size = viewport, so that pages reading screen.width see the emulated device.
	args := emulation.NewSetDeviceMetricsOverrideArgs(m.width, m.height, m.scale, m.mobile).
		SetScreenWidth(m.width).SetScreenHeight(m.height)
	switch m.orientation {
	case "landscapePrimary":
		args.SetScreenOrientation(emulation.ScreenOrientation{Type: m.orientation, Angle: 90})
	case "portraitPrimary":
		args.SetScreenOrientation(emulation.ScreenOrientation{Type: m.orientation, Angle: 0})
	}
	if err := t.c.Emulation.SetDeviceMetricsOverride(ctx, args); err != nil {
		return err
	}
	t.metrics = m
	return nil
}

// newTab creates a browser context, a target in it, and connects to the target. On error it
// disposes what it created.
func (p *Process) newTab(ctx context.Context) (t *tab, err error) {
	if p.cfg.Guard == nil {
		return p.newTabIn(ctx, contextArgs())
	}
	route, err := p.cfg.Guard.OpenDirectRoute(p.log)
	if err != nil {
		return nil, err
	}
	return p.newTabVia(ctx, route)
}

// newTabVia makes a tab whose browser context sends every connection to route, loopback too
// ("<-loopback>", as ProxyFlags does for the browser); the tab owns the route from then on, and
// on failure it is closed.
func (p *Process) newTabVia(ctx context.Context, route *egress.Route) (*tab, error) {
	t, err := p.newTabIn(ctx, contextArgs().SetProxyServer("http://"+route.Addr()).SetProxyBypassList("<-loopback>"))
	if err != nil {
		p.closeRoute(&tab{route: route})
		return nil, err
	}
	t.route = route
	return t, nil
}

// contextArgs are the arguments of every browser context. disposeOnDetach false: the context
// belongs to the render, not to a connection, and is disposed explicitly by disposeTab.
func contextArgs() *target.CreateBrowserContextArgs {
	return target.NewCreateBrowserContextArgs().SetDisposeOnDetach(false)
}

// newTabIn is newTab with the context made by args.
func (p *Process) newTabIn(ctx context.Context, args *target.CreateBrowserContextArgs) (t *tab, err error) {
	bc, err := p.browser.Target.CreateBrowserContext(ctx, args)
	if err != nil {
		return nil, err
	}
	t = &tab{browserContext: bc.BrowserContextID}
	defer func() {
		if err != nil {
			p.disposeTab(t)
			t = nil
		}
	}()
	if err := p.browser.Browser.SetDownloadBehavior(ctx, browser.NewSetDownloadBehaviorArgs("deny").SetBrowserContextID(t.browserContext)); err != nil {
		return t, err
	}
	tr, err := p.browser.Target.CreateTarget(ctx, target.NewCreateTargetArgs("about:blank").SetBrowserContextID(t.browserContext))
	if err != nil {
		return t, err
	}
	t.targetID = tr.TargetID
	att, err := p.browser.Target.AttachToTarget(ctx, target.NewAttachToTargetArgs(tr.TargetID).SetFlatten(true))
	if err != nil {
		return t, err
	}
	t.conn, err = p.pipe.dial(ctx, string(att.SessionID))
	if err != nil {
		return t, err
	}
	t.c = cdp.NewClient(t.conn)
	// The stream lives as long as the connection; Render filters its events by frame and loader.
	t.lifecycle, err = t.c.Page.LifecycleEvent(context.Background())
	if err != nil {
		return t, err
	}
	dialogs, err := t.c.Page.JavascriptDialogOpening(context.Background())
	if err != nil {
		return t, err
	}
	crashes, err := t.c.Inspector.TargetCrashed(context.Background())
	if err != nil {
		return t, err
	}
	// Chrome sends these anyway with Page enabled: frames of the page's own process. Frames in
	// other processes and workers come from the browser's target events (watchTargets).
	navigated, err := t.c.Page.FrameNavigated(context.Background())
	if err != nil {
		return t, err
	}
	// The goroutine gets its own copy: the deferred cleanup above sets the named result t to nil
	// on error while the watcher may still be reading it.
	watched := t
	p.tabs.Store(t.browserContext, t)
	if !p.spawn(func() { p.watchTab(watched, dialogs, crashes, navigated) }) {
		return t, errClosed
	}
	if err = t.c.Inspector.Enable(ctx); err != nil {
		return t, err
	}
	if err = t.c.Page.Enable(ctx); err != nil {
		return t, err
	}
	// Lifecycle events give init, DOMContentLoaded and load per loader, for URL and HTML
	// sources alike.
	if err = t.c.Page.SetLifecycleEventsEnabled(ctx, page.NewSetLifecycleEventsEnabledArgs(true)); err != nil {
		return t, err
	}
	ft, err := t.c.Page.GetFrameTree(ctx)
	if err != nil {
		return t, err
	}
	t.frameID = ft.FrameTree.Frame.ID
	// Bounded on its own: the pre-warmer's ctx has no deadline, and a load that never comes
	// (a document replaced before it) must cost a new tab, not a worker.
	lctx, cancel := context.WithTimeout(ctx, disposeTimeout)
	err = t.awaitLoad(lctx, ft.FrameTree.Frame.LoaderID)
	cancel()
	if err != nil {
		return t, fmt.Errorf("the new tab's blank document did not load: %w", err)
	}
	if err = t.setMetrics(ctx, defaultMetrics); err != nil {
		return t, err
	}
	if err = t.c.Emulation.SetEmulatedMedia(ctx, baselineMediaArgs()); err != nil {
		return t, err
	}
	return t, nil
}

// awaitLoad reads t's lifecycle events until the main frame's document of loader has had its
// load event: a blank document that serves a render must be done loading. An html source is
// written into it (Page.setDocumentContent), whose lifecycle events carry the same loader, and a
// blank document's own init and load that came in late, under load, would end that render's wait
// before its document had loaded; a document.open into a document that is still loading can lose
// what was written.
func (t *tab) awaitLoad(ctx context.Context, loader network.LoaderID) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.lifecycle.Ready():
		}
		ev, err := t.lifecycle.Recv()
		if err != nil {
			return err
		}
		if ev.FrameID == t.frameID && ev.LoaderID == loader && ev.Name == "load" {
			return nil
		}
	}
}

// warmUpScript lays out and paints a line of text in each generic font family in the
// about:blank document of a new target, and resolves after the frame that shows it. A new
// renderer process loads its fonts, shaper and raster caches at its first text; this way it does
// so before a render needs it, which takes a few percent off the first render in the target
// (Chromium 156, small page; warmUp's one-pixel capture included). The render's navigation or
// setDocumentContent replaces the document; the script defines no global.
const warmUpScript = `(() => {
	document.documentElement.innerHTML = '<body>' +
		['serif', 'sans-serif', 'monospace'].map(f => '<p style="font-family:' + f + '">Warm up 0123456789 <b>bold</b> <i>italic</i></p>').join('') +
		'</body>';
	return new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() => {
		document.documentElement.innerHTML = '<head></head><body></body>';
		done(true);
	})));
})()`

// warmUp runs warmUpScript in t, then captures one pixel, which sets up the capture path
// between the renderer, the compositor and the browser; all bounded by disposeTimeout.
func (t *tab) warmUp(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, disposeTimeout)
	defer cancel()
	if _, err := t.c.Runtime.Evaluate(ctx, runtime.NewEvaluateArgs(warmUpScript).SetAwaitPromise(true)); err != nil {
		return err
	}
	_, err := t.c.Page.CaptureScreenshot(ctx, page.NewCaptureScreenshotArgs().SetFormat("png").
		SetClip(page.Viewport{Width: 1, Height: 1, Scale: 1}))
	return err
}

// watchTab dismisses JavaScript dialogs, which would stall the page (and its load event) until
// the timeout, ends the target's connection when its renderer crashes, so that the render
// fails at once, and records the origins the page's frames commit for the wipe. It returns when
// the connection closes.
func (p *Process) watchTab(t *tab, dialogs page.JavascriptDialogOpeningClient, crashes inspector.TargetCrashedClient, navigated page.FrameNavigatedClient) {
	for {
		select {
		case <-navigated.Ready():
			ev, err := navigated.Recv()
			if err != nil {
				return
			}
			t.origins.add(ev.Frame.SecurityOrigin, ev.Frame.ParentID == nil)
		case <-dialogs.Ready():
			ev, err := dialogs.Recv()
			if err != nil {
				return
			}
			// Dismiss: alert and confirm return, prompt gets null, beforeunload stays. Only the
			// wipe's leave is let go: a page kept then would be replaced after leaveTimeout.
			accept := ev.Type == page.DialogTypeBeforeunload && t.leaving.Load()
			ctx, cancel := context.WithTimeout(context.Background(), disposeTimeout)
			err = t.c.Page.HandleJavaScriptDialog(ctx, page.NewHandleJavaScriptDialogArgs(accept))
			cancel()
			if err != nil {
				p.log.Debug().Err(err).Str("dialog", string(ev.Type)).Msg("dismiss dialog")
			}
		case <-crashes.Ready():
			if _, err := crashes.Recv(); err != nil {
				return
			}
			p.log.Warn().Str("target", string(t.targetID)).Msg("page renderer crashed")
			t.crashed.Store(true)
			t.conn.Close()
			return
		}
	}
}

// disposeTab closes the page connection and disposes the browser context, which closes its target
// and drops its cookies, storage, cache and service workers. It uses its own deadline, detached
// from any render.
func (p *Process) disposeTab(t *tab) {
	// The route outlives the context: a port freed earlier could be another render's route
	// before the context's last connections are gone.
	defer p.closeRoute(t)
	if t.conn != nil {
		t.conn.Close()
	}
	p.tabs.Delete(t.browserContext)
	if p.life.Err() != nil {
		return // the browser is gone or going, and its contexts with it
	}
	ctx, cancel := context.WithTimeout(context.Background(), disposeTimeout)
	defer cancel()
	if err := p.browser.Target.DisposeBrowserContext(ctx, target.NewDisposeBrowserContextArgs(t.browserContext)); err != nil && p.life.Err() == nil {
		p.log.Warn().Err(err).Str("browser_context", string(t.browserContext)).Msg("dispose browser context")
	}
}

// release takes t back after a render. With wipe isolation a tab that may serve again
// (reusable: the render did not time out or fail inside Chrome, t has served fewer than
// Config.TabReuse renders and is not proxied) is wiped off the caller's path and returns to the
// pool; every other tab is disposed and replaced. Close waits for both.
func (p *Process) release(t *tab, reusable bool) {
	if p.cfg.Isolation == IsolationWipe && reusable && t.uses < p.cfg.TabReuse && !t.proxied {
		if !t.slot {
			// A tab made inline joins the pool when it has a free place, which the pre-warmer
			// then need not fill.
			select {
			case <-p.slots:
				t.slot = true
			default:
			}
		}
		if t.slot {
			p.background.Add(1)
			if p.spawn(func() { defer p.background.Add(-1); p.recycle(t) }) {
				return
			}
			p.background.Add(-1)
		}
	}
	p.discard(t)
}

// recycle wipes t and puts it back among the ready tabs, or replaces it when the wipe fails.
func (p *Process) recycle(t *tab) {
	// Under load the next render starts a few milliseconds after this one answered: give it
	// the moment to announce itself, then keep off Chrome's UI thread while it loads, as long
	// as another tab is ready for the render after it.
	select {
	case <-time.After(disposeGrace):
	case <-p.life.Done():
	}
	p.yieldToLoads(true)
	p.prio.background(len(p.ready) > 0)
	err := p.wipe(t)
	p.prio.backgroundEnds()
	if err != nil {
		if p.life.Err() == nil {
			p.log.Info().Err(err).Str("browser_context", string(t.browserContext)).Msg("tab not known clean: replaced")
		}
		p.discard(t)
		return
	}
	p.putFirst(t)
	if p.life.Err() != nil {
		p.drainReady() // Close may have drained ready already
	}
}

// putFirst puts t, just wiped, before the other ready tabs, so that the next render takes it:
// each tab has a renderer process of its own, and the one that served last is the warmest. Taken
// first in, first out, a render at low load met a renderer that had been idle for as many
// renders as the pool has tabs. A fresh pre-warmed tab goes last. It never blocks: t holds its
// slot's place.
func (p *Process) putFirst(t *tab) {
	p.readyMu.Lock()
	defer p.readyMu.Unlock()
	rest := make([]*tab, 0, len(p.ready))
	for len(p.ready) > 0 {
		rest = append(rest, <-p.ready)
	}
	p.ready <- t
	for _, r := range rest {
		p.ready <- r
	}
}

// discard disposes t off the caller's path and lets the pre-warmer replace it. The disposal
// waits for the other renders' pages to load (yieldToLoads): closing a window occupies Chrome's
// UI thread for tens of milliseconds, which a navigation next to it would wait for. The page's
// connection closes at once.
func (p *Process) discard(t *tab) {
	if t.conn != nil {
		t.conn.Close()
	}
	// The replacement is made at once, beside the disposal rather than after it: the pool's
	// next tab matters to the next render, the disposal only frees memory. The pool holds one
	// undisposed tab more for a moment.
	if t.slot {
		t.slot = false
		p.slots <- struct{}{}
	}
	// When Close has begun nothing is spawned: the browser and its contexts are about to go.
	p.background.Add(1)
	if !p.spawn(func() {
		defer p.background.Add(-1)
		select {
		case <-time.After(disposeGrace):
		case <-p.life.Done():
		}
		p.yieldToLoads(false)
		p.prio.background(len(p.ready) > 0)
		p.disposeTab(t)
		p.prio.backgroundEnds()
	}) {
		p.background.Add(-1)
		p.closeRoute(t) // the browser is going, and the context with it
	}
}

// drainReady closes the connections and routes of the tabs left in ready.
func (p *Process) drainReady() {
	for {
		select {
		case t := <-p.ready:
			t.conn.Close()
			p.closeRoute(t)
		default:
			return
		}
	}
}

// acquire returns a ready tab, or creates one inline when none is ready.
func (p *Process) acquire(ctx context.Context) (*tab, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err // a render that waited out its time takes no clean tab to waste it
		}
		p.readyMu.Lock() // not while putFirst has the ready tabs out
		select {
		case t := <-p.ready:
			p.readyMu.Unlock()
			t.slot = true
			if t.conn.Context().Err() != nil {
				p.discard(t) // its target died while waiting
				continue
			}
			t.uses++
			return t, nil
		default:
			p.readyMu.Unlock()
		}
		t, err := p.newTab(ctx)
		if err == nil {
			t.uses++
		}
		return t, err
	}
}

// prewarmParallel bounds the tabs created at once. Most of a tab's creation is the wait for its
// new renderer process (Page.enable); two at a time refill the pool about a third faster than one
// in a tight render loop on two cores.
const prewarmParallel = 2

func prewarmWorkers(prewarm int) int { return min(prewarm, prewarmParallel) }

// yieldToLoads waits, at most maxYield, while a render loads its page (from its start to the end
// of its wait step), so that background work (disposal, pre-warming) does not hold up its
// navigation: creating a target or closing a window occupies Chrome's UI thread for tens of
// milliseconds, the thread a navigation needs to start and commit. With whileReady, it waits
// only while a pre-warmed tab is ready for the next render.
func (p *Process) yieldToLoads(whileReady bool) {
	deadline := time.Now().Add(maxYield)
	for p.loading.Load() > 0 && (!whileReady || len(p.ready) > 0) && time.Now().Before(deadline) {
		select {
		case <-time.After(yieldPoll):
		case <-p.life.Done():
			return
		}
	}
}

// prewarm keeps up to Config.Prewarm tabs ready; each worker creates one at a time.
func (p *Process) prewarm() {
	defer p.wg.Done()
	const minBackoff, maxBackoff = 50 * time.Millisecond, 2 * time.Second
	backoff := minBackoff
	for {
		select {
		case <-p.slots:
		case <-p.life.Done():
			return
		}
		p.yieldToLoads(true)
		p.background.Add(1)
		p.prio.background(len(p.ready) > 0)
		t, err := p.newTab(p.life)
		if err != nil {
			p.prio.backgroundEnds()
			p.background.Add(-1)
			p.slots <- struct{}{}
			if p.life.Err() != nil {
				return
			}
			p.log.Warn().Err(err).Msg("pre-warm a browser context")
			timer := time.NewTimer(backoff)
			select {
			case <-timer.C:
			case <-p.life.Done():
				timer.Stop()
				return
			}
			backoff = min(2*backoff, maxBackoff)
			continue
		}
		backoff = minBackoff
		// Warm only a tab that no render waits for: another one is ready for the next render.
		// Under a load that keeps the pool empty, the warm-up would only add CPU.
		if len(p.ready) > 0 {
			if err := t.warmUp(p.life); err != nil && p.life.Err() == nil {
				p.log.Debug().Err(err).Msg("warm up a pre-warmed tab")
			}
		}
		if p.cfg.Guard != nil {
			if err := p.enableGuardFetch(p.life, t); err != nil && p.life.Err() == nil {
				p.log.Debug().Err(err).Msg("enable Fetch in a pre-warmed tab")
			}
		}
		p.prio.backgroundEnds()
		p.background.Add(-1)
		p.ready <- t // never blocks: one slot token per place in ready
		if p.life.Err() != nil {
			p.drainReady() // Close may have drained ready already; leave none behind
			return
		}
	}
}
