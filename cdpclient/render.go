package cdpclient

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	_ "image/jpeg" // DecodeConfig of captured jpeg
	_ "image/png"  // DecodeConfig of captured png
	"math"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/mafredri/cdp/protocol/dom"
	"github.com/mafredri/cdp/protocol/emulation"
	"github.com/mafredri/cdp/protocol/network"
	"github.com/mafredri/cdp/protocol/page"
	"github.com/mafredri/cdp/protocol/runtime"
	"github.com/mafredri/cdp/protocol/target"
	"github.com/mafredri/cdp/rpcc"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/markdown"
	"github.com/shotd/shotd/media"
)

// Fallbacks for options the parser normally fills in.
const (
	defaultWidth   = 1280
	defaultHeight  = 1024
	defaultQuality = 80
	touchMaxPoints = 5
)

var errRenderTimeout = errors.New("render timeout")

// testHookAfterStep, when set by a test, runs after each step of every render.
var testHookAfterStep func(step string, t *tab)

// networkQuiet is how long the network must stay without a request in flight for networkidle.
const networkQuiet = 500 * time.Millisecond

var waitValues = map[string]bool{
	"": true, shotd.WaitLoad: true, shotd.WaitDOMContentLoaded: true, shotd.WaitNetworkIdle: true, shotd.WaitCommit: true,
}

// render is the state of one Render call, passed from step to step.
type render struct {
	p *Process
	t *tab
	o *shotd.Options

	format string
	width  int
	height int
	scale  float64
	budget time.Duration // the whole render: Options.RenderBudget
	load   loadPhase     // the loading phase, bounded by the timeout option

	html      bool             // the source is html (o.HTML, or o.Markdown converted), set with Page.setDocumentContent
	source    string           // that html
	loaderID  network.LoaderID // the main frame's document's loader; "" for same-document, and html until wait
	net       *netTracker      // requests in flight, for networkidle and click
	intercept *interceptor     // Fetch interception; nil when nothing needs it
	rules     *requestRules    // blocking and extra headers; nil when the render has none
	wsScript  string           // rules' WebSocket blocking for pages and workers; "" for none
	watchKey  string           // what the full page's scroll asks watchMarkJS with; "" before watchMark
	blocker   Blocker          // list-based blocking; nil when the render asks for none
	video     *video           // the recording of mp4, webm and gif; nil for the other formats
	data      []byte

	// A still image that media encodes (avif, jp2, heif, tiff, gif_still): its size, and the
	// PNG it was encoded from, kept for full_page_slices only.
	stillSize image.Point
	stillPNG  []byte

	// workers announces the page's dedicated workers while WebSockets are blocked (workers.go).
	workers target.AttachedToTargetClient
	// nav follows the main frame's navigations, from just before the render's own on (mainnav.go).
	nav *mainNav
	// replaced: the page replaced its first document before it loaded; loaderID is the new one's.
	replaced bool

	side sideState // what it keeps beside the capture (finish.go)

	world runtime.ExecutionContextID // the helpers' world under disable_javascript; 0: none yet (waits.go)
}

// step is one stage of a render. Later options slot in as one more step or as code in one of
// these.
type step struct {
	name string
	run  func(context.Context) error
}

func (r *render) steps() []step {
	steps := []step{
		{"emulate", r.emulate},
		{"prepare", r.prepare},
		{"navigate", r.navBounded(r.navigate)}, // navigation_timeout (navwait.go)
		{"wait", r.navBounded(r.wait)},
		{"consent", r.consent}, // block_cookie_banners: autoconsent's reject click, before the hiding
		{"page", r.pageActions},
		{"settle", r.settle}, // ends the loading phase (deadline.go), then delay
		{"capture", r.capture},
	}
	loading := true
	for i := range steps {
		if steps[i].name == "settle" {
			loading = false
		}
		if loading {
			steps[i].run = r.loadBounded(steps[i].run)
		}
	}
	if r.video != nil {
		steps[len(steps)-1] = step{"record", r.record}
	}
	steps = append(steps, step{"finish", r.afterCapture}) // metadata and slices (finish.go)
	return steps
}

// Render renders o in a fresh browser context and returns the file. Several Renders may run at
// once on one Process. o.RenderBudget bounds the whole render; o.Timeout its loading.
func (p *Process) Render(ctx context.Context, o *shotd.Options) (_ *shotd.Output, rerr error) {
	start := time.Now()
	r, err := newRender(p, o)
	if err != nil {
		return nil, err
	}
	if p.life.Err() != nil {
		return nil, shotd.Wrap(shotd.CodeRendererUnavailable, context.Cause(p.life), "the browser is not running")
	}

	rctx, cancelTimeout := context.WithTimeoutCause(ctx, r.budget, errRenderTimeout)
	defer cancelTimeout()
	rctx, cancel := context.WithCancelCause(rctx)
	defer cancel(nil)
	// Chrome exiting or its connection closing ends the render at once, whatever it waits for.
	stop := context.AfterFunc(p.life, func() { cancel(errBrowserStopped) })
	defer stop()

	// Until the page has loaded, the pre-warmer keeps off Chrome's UI thread (yieldToLoads).
	p.prio.renderStarts()
	defer p.prio.renderEnds()
	p.loading.Add(1)
	loaded := sync.OnceFunc(func() { p.loading.Add(-1) })
	defer loaded()

	if o.Proxy != nil {
		r.t, err = p.proxiedTab(rctx, o.Proxy)
	} else {
		r.t, err = p.acquire(rctx)
	}
	if err != nil {
		return nil, r.fail(ctx, rctx, "open target", err)
	}
	defer func() { p.release(r.t, reusableAfter(rerr)) }()
	// A panic of the render's own code (registered after the release, it runs before it):
	// the tab, in whatever state the panic left it, is replaced, not wiped for another.
	defer func() {
		if v := recover(); v != nil {
			p.cfg.Log.Error().Interface("panic", v).Bytes("stack", debug.Stack()).Msg("a render panicked")
			rerr = shotd.Errorf(shotd.CodeInternalError, "the render failed on the service's side")
		}
	}()
	// The tab's connection closing (its renderer crashed, watchTab) ends the render at once,
	// whatever it waits for.
	defer context.AfterFunc(r.t.conn.Context(), func() { cancel(errTabGone) })()
	if r.video != nil {
		r.t.over.tainted = true // the screencast and its frames: a fresh tab is simpler than undoing them
	}
	defer func() {
		if r.intercept != nil {
			r.intercept.stop()
			if r.intercept.credentials.Load() {
				r.t.over.tainted = true // a fresh context, without the credentials Chrome kept
			}
		}
		if r.nav != nil {
			r.nav.close()
		}
		if r.workers != nil {
			r.workers.Close()
		}
	}()

	for _, s := range r.steps() {
		err := r.runStep(rctx, s)
		// A main-frame document that failed on purpose at any time, even after the wait or
		// during the capture, means an error page: never an answer. It also cuts the step
		// short, whatever that step made of it.
		r.intercept.sync(rctx)
		if ferr := r.intercept.failure(); ferr != nil {
			err = ferr
		}
		if err != nil {
			return nil, r.fail(ctx, rctx, s.name, err)
		}
		if s.name == "wait" {
			loaded()
		}
		if testHookAfterStep != nil {
			testHookAfterStep(s.name, r.t)
		}
	}
	var w, h int
	switch {
	case r.video != nil:
		w, h = r.width, r.height // record set them to the video's size
	case r.side.zipped:
		w, h = r.side.width, r.side.height
	case media.IsStill(r.format):
		w, h = r.stillSize.X, r.stillSize.Y
	case r.format != shotd.FormatPDF && !shotd.IsDocument(r.format):
		w, h, err = imageSize(r.format, r.data)
		if err != nil {
			p.log.Warn().Err(err).Str("format", r.format).Msg("read captured image size")
			w, h = int(math.Round(float64(r.width)*r.scale)), int(math.Round(float64(r.height)*r.scale))
		}
	}
	out := &shotd.Output{
		Data:        r.data,
		Format:      r.format,
		ContentType: shotd.ContentTypes[r.format],
		Width:       w,
		Height:      h,
		RenderMs:    time.Since(start).Milliseconds(),
	}
	r.sideOutput(out)
	return out, nil
}

// reusableAfter tells whether a tab may serve again after a render that ended with err: after a
// success, or a failure of the page's own making that leaves the tab working. A timeout, a crash
// or an error inside Chrome replaces it.
func reusableAfter(err error) bool {
	switch shotd.CodeOf(err) {
	case "", shotd.CodeInvalidOptions, shotd.CodeSelectorNotFound, shotd.CodeNavigationFailed,
		shotd.CodeHostNotAllowed, shotd.CodeContentTooLarge:
		return true
	}
	return false
}

// runStep runs s; when the interceptor fails the main frame's document meanwhile, s's context is
// cancelled. The page is then becoming Chrome's error page, on which a step may wait for good: a
// capture started as a form posts the page away waits for a frame that never comes.
func (r *render) runStep(ctx context.Context, s step) error {
	if r.intercept == nil {
		return s.run(ctx) // no interception (yet): the prepare step starts it
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(r.intercept.failed, cancel)()
	return s.run(sctx)
}

func newRender(p *Process, o *shotd.Options) (*render, error) {
	if o == nil {
		return nil, shotd.Errorf(shotd.CodeInternalError, "no render options")
	}
	r := &render{p: p, o: o, format: o.Format, width: o.ViewportWidth, height: o.ViewportHeight,
		scale: o.DeviceScaleFactor, budget: o.RenderBudget()}
	r.load.timeout = o.LoadTimeout()
	switch {
	case o.URL != "":
	case o.HTML != "":
		r.html, r.source = true, o.HTML
	case o.Markdown != "":
		// A styled page of its own; dark_mode picks its dark palette (and, in emulate, the
		// preference as for any page).
		doc, err := markdown.ToHTML(o.Markdown, o.DarkMode)
		if err != nil {
			return nil, err
		}
		r.html, r.source = true, doc
	default:
		return nil, shotd.Errorf(shotd.CodeInternalError, "no source to render")
	}
	switch {
	case r.format == "":
		r.format = shotd.FormatPNG
	case shotd.IsVideo(o.Format):
		r.initVideo()
	case r.format == shotd.FormatPNG, r.format == shotd.FormatJPEG, r.format == shotd.FormatWebP, r.format == shotd.FormatPDF:
	case shotd.IsDocument(r.format): // document.go
	case media.IsStill(r.format):
		// Refused before a tab is taken: heif needs heif-enc, which the host may lack.
		if err := media.StillAvailable(r.format); err != nil {
			return nil, err
		}
	default:
		e := shotd.Errorf(shotd.CodeInvalidOptions, "format %s is not supported yet", r.format)
		e.Fields = []shotd.FieldError{{Field: "format", Message: "not supported yet"}}
		return nil, e
	}
	if !waitValues[o.WaitUntil] {
		e := shotd.Errorf(shotd.CodeInvalidOptions, "unknown wait_until %q", o.WaitUntil)
		e.Fields = []shotd.FieldError{{Field: "wait_until", Message: "unknown value"}}
		return nil, e
	}
	if r.width <= 0 {
		r.width = defaultWidth
	}
	if r.height <= 0 {
		r.height = defaultHeight
	}
	if r.scale <= 0 {
		r.scale = 1
	}
	if p.cfg.Blocker != nil {
		r.blocker = p.cfg.Blocker(o)
	}
	r.rules = newRequestRules(o, r.blocker)
	r.wsScript = r.rules.webSocketScript()
	return r, nil
}

// emulate sets the viewport, touch and user agent before anything loads.
func (r *render) emulate(ctx context.Context) error {
	c := r.t.c
	m := metrics{width: r.width, height: r.height, scale: r.scale, mobile: r.o.ViewportMobile}
	switch {
	case r.o.ViewportLandscape:
		// Width and height are already rotated by the parser; this is what screen.orientation
		// and the orientation media query report.
		m.orientation = "landscapePrimary"
	case r.o.ViewportMobile:
		// Without it a phone reports the orientation of the headless host screen.
		m.orientation = "portraitPrimary"
	}
	if err := r.t.setMetrics(ctx, m); err != nil {
		return err
	}
	if r.o.HasTouch {
		r.t.over.touch = true
		if err := c.Emulation.SetTouchEmulationEnabled(ctx, emulation.NewSetTouchEmulationEnabledArgs(true).SetMaxTouchPoints(touchMaxPoints)); err != nil {
			return err
		}
	}
	if r.o.UserAgent != "" {
		// The Emulation override covers both the User-Agent header and navigator.userAgent.
		r.t.over.userAgent = true
		if err := c.Emulation.SetUserAgentOverride(ctx, emulation.NewSetUserAgentOverrideArgs(r.o.UserAgent)); err != nil {
			return err
		}
	}
	if err := r.emulateLocale(ctx); err != nil { // Accept-Language (locale.go)
		return err
	}
	if args := r.emulatedMedia(); args != nil {
		r.t.over.media = true
		if err := c.Emulation.SetEmulatedMedia(ctx, args); err != nil {
			return err
		}
	}
	if r.o.DisableJavaScript {
		// The page's own scripts, event handlers and javascript: URLs stop; the helpers of
		// this package still run, through Runtime.evaluate. The wipe turns them back on.
		r.t.over.noScript = true
		if err := c.Emulation.SetScriptExecutionDisabled(ctx, emulation.NewSetScriptExecutionDisabledArgs(true)); err != nil {
			return err
		}
	}
	if r.o.TimeZone != "" {
		r.t.over.timeZone = true
		if err := c.Emulation.SetTimezoneOverride(ctx, emulation.NewSetTimezoneOverrideArgs(r.o.TimeZone)); err != nil {
			// The parser checks the name against Go's zone database; Chrome's ICU may still
			// not know it.
			if isResponseError(err) {
				return invalidOption("time_zone", fmt.Sprintf("%q is not a time zone the browser knows", r.o.TimeZone))
			}
			return err
		}
	}
	if r.o.OmitBackground && (r.format == shotd.FormatPNG || r.format == shotd.FormatWebP) {
		// Where the page paints no background of its own the capture stays transparent.
		transparent := 0.0
		r.t.over.background = true
		if err := c.Emulation.SetDefaultBackgroundColorOverride(ctx, emulation.NewSetDefaultBackgroundColorOverrideArgs().
			SetColor(dom.RGBA{A: &transparent})); err != nil {
			return err
		}
	}
	return nil
}

// emulatedMedia is the Emulation.setEmulatedMedia of the render, nil when the tab's baseline
// (screen media without preference features, set by newTab) already gives it. media_type
// defaults to screen for PDFs too, as documented: the baseline makes Chrome print with the
// screen style sheets, and pdf_fit_one_page measures the page with those same sheets.
func (r *render) emulatedMedia() *emulation.SetEmulatedMediaArgs {
	var features []emulation.MediaFeature
	if r.o.DarkMode {
		features = append(features, emulation.MediaFeature{Name: "prefers-color-scheme", Value: "dark"})
	}
	if r.o.ReducedMotion {
		features = append(features, emulation.MediaFeature{Name: "prefers-reduced-motion", Value: "reduce"})
	}
	media := r.o.MediaType
	if media == "" {
		media = baselineMedia
	}
	if len(features) == 0 && media == baselineMedia {
		return nil
	}
	return emulation.NewSetEmulatedMediaArgs().SetMedia(media).SetFeatures(features)
}

// prepare puts in place what must be there before the navigation starts: interception (guard,
// blocking, extra headers), cookies, the blocker's start script, request counting.
func (r *render) prepare(ctx context.Context) error {
	if err := r.beforeNavigation(ctx); err != nil {
		return err
	}
	if importsCSS(r.o.Styles) {
		// The styles' @import rules go into a style element (addStylesJS): the page's
		// Content-Security-Policy, which could refuse the element or the imported sheet, is
		// set aside for this render's documents. Only then: it must be set before the
		// navigation, and every other style is adopted, which no policy refuses.
		r.t.over.bypassCSP = true
		if err := r.t.c.Page.SetBypassCSP(ctx, page.NewSetBypassCSPArgs(true)); err != nil {
			return err
		}
	}
	if r.p.cfg.Guard != nil || r.rules != nil {
		in, err := startInterceptor(ctx, r, r.rules)
		if err != nil {
			return err
		}
		r.intercept = in
	}
	if len(r.o.Cookies) > 0 {
		if err := r.setCookies(ctx); err != nil {
			return err
		}
	}
	if r.wsScript != "" {
		if err := r.blockWorkerSockets(ctx, r.wsScript); err != nil {
			return err
		}
	}
	for _, s := range []string{r.wsScript, r.startScript(), r.watchMark()} {
		if s == "" {
			continue
		}
		// Every new document of every frame; an html source's own document is not one
		// (Page.setDocumentContent writes into the blank one): navigate runs them there.
		added, err := r.t.c.Page.AddScriptToEvaluateOnNewDocument(ctx, page.NewAddScriptToEvaluateOnNewDocumentArgs(s))
		if err != nil {
			r.t.over.tainted = true // it may be in place, under an identifier not known
			return err
		}
		r.t.over.scripts = append(r.t.over.scripts, added.Identifier)
	}
	if r.o.WaitUntil == shotd.WaitNetworkIdle || r.o.Click != "" || r.scriptsWaitIdle() {
		// Chrome's own networkIdle lifecycle event does not come reliably (never after
		// Page.setDocumentContent, for one), so requests are counted here. Only for networkidle
		// and for the settling after a click: Network events cost a message per request and
		// event.
		r.t.over.network = true
		n, err := trackNetwork(ctx, r.t)
		if err != nil {
			return err
		}
		r.net = n
	}
	return nil
}

// startScript is the blocker's script for every document, "" for none.
func (r *render) startScript() string {
	if s, ok := r.blocker.(StartScripter); ok {
		return s.StartScript()
	}
	return ""
}

// setCookies puts the cookies into the render's browser context with their Domain, Path,
// Secure and HttpOnly, so that Chrome itself sends each only where it belongs.
func (r *render) setCookies(ctx context.Context) error {
	cs := make([]network.CookieParam, 0, len(r.o.Cookies))
	for _, c := range r.o.Cookies {
		domain, path := c.Domain, c.Path
		if path == "" {
			path = "/"
		}
		p := network.CookieParam{Name: c.Name, Value: c.Value, Domain: &domain, Path: &path}
		if c.Secure {
			p.Secure = &c.Secure
		}
		if c.HTTPOnly {
			p.HTTPOnly = &c.HTTPOnly
		}
		cs = append(cs, p)
	}
	err := r.t.c.Network.SetCookies(ctx, network.NewSetCookiesArgs(cs))
	if err != nil && isResponseError(err) {
		return invalidOption("cookies", "the browser refused a cookie (check its Domain and Path)")
	}
	return err
}

// netError picks Chrome's net error name out of Page.navigate's errorText, the only part of it
// that is safe to show.
var netError = regexp.MustCompile(`net::ERR_[A-Z0-9_]+`)

// navigate loads the source and returns once the navigation has committed.
func (r *render) navigate(ctx context.Context) error {
	c := r.t.c
	// Subscribed before the navigation starts, so that its end, and a navigation the page asks
	// for while it loads, cannot be missed; Page and its lifecycle events are enabled, so this
	// costs no call to Chrome. Its lifecycle events are those sent from now on: none that the
	// blank document an html source is written into sent before.
	var err error
	if r.nav, err = watchMainNav(ctx, r.t, true); err != nil {
		return err
	}
	if r.html {
		// document.open keeps the window: the WebSocket replacement made now stays for the
		// document's own scripts. It erases event listeners, though, so the blocker's script
		// comes after the document is written.
		// So does the full page's watch of observers and scroll listeners (watchMark).
		for _, s := range []string{r.wsScript, r.watchMark()} {
			if s == "" {
				continue
			}
			if _, err := c.Runtime.Evaluate(ctx, runtime.NewEvaluateArgs(s)); err != nil {
				return err
			}
		}
		// setDocumentContent does document.open/write/close: the document gets the usual
		// DOMContentLoaded and load lifecycle events after an "init".
		if err := c.Page.SetDocumentContent(ctx, page.NewSetDocumentContentArgs(r.t.frameID, r.source)); err != nil {
			return err
		}
		if s := r.startScript(); s != "" {
			if _, err := c.Runtime.Evaluate(ctx, runtime.NewEvaluateArgs(s)); err != nil {
				return err
			}
		}
		return nil
	}
	r.t.origins.add(r.o.URL, true) // committed or not, its storage is wiped after
	nav, err := c.Page.Navigate(ctx, page.NewNavigateArgs(r.o.URL))
	if err != nil {
		return err
	}
	// The route refused the document or a redirect hop of it, or could not reach the server,
	// and answered with its own page (plain http), now or before the answer.
	r.intercept.sync(ctx)
	if err := r.intercept.failure(); err != nil {
		return err
	}
	if nav.ErrorText != nil && *nav.ErrorText != "" {
		name := netError.FindString(*nav.ErrorText)
		// An HTTP error answer with an empty body fails as ERR_HTTP_RESPONSE_CODE_FAILURE, but a
		// 4xx/5xx page is captured like any other.
		if name != "net::ERR_HTTP_RESPONSE_CODE_FAILURE" {
			// A tunnel the route refused or could not open (https): only the route knows why.
			if r.intercept.failByRoute() {
				return r.intercept.failure()
			}
			if name == "" {
				name = "unknown error"
			}
			return shotd.Wrap(shotd.CodeNavigationFailed, fmt.Errorf("navigate: %s", *nav.ErrorText),
				"the page could not be loaded: "+name)
		}
	}
	if nav.LoaderID != nil {
		r.loaderID = *nav.LoaderID
	}
	return nil
}

// wait blocks until the page is as loaded as wait_until asks.
func (r *render) wait(ctx context.Context) error {
	switch r.o.WaitUntil {
	case shotd.WaitCommit:
		if r.html {
			return nil // Page.setDocumentContent has answered: the document is there
		}
		// Page.navigate answers before the new document's renderer is attached; capturing then
		// fails with "Not attached to an active page". Its first lifecycle event, init, marks it.
		return r.waitLifecycle(ctx, "init")
	case shotd.WaitDOMContentLoaded:
		return r.waitLifecycle(ctx, "DOMContentLoaded")
	case shotd.WaitNetworkIdle:
		// As in Playwright: the load event, then no request in flight for networkQuiet.
		if err := r.waitLifecycle(ctx, "load"); err != nil {
			return err
		}
		var main owner // every request counts, unless the first document was replaced
		if r.replaced {
			main = owner{frame: r.t.frameID, loader: r.loaderID}
		}
		return r.net.waitIdle(ctx, networkQuiet, main)
	default:
		return r.waitLifecycle(ctx, "load")
	}
}

// waitLifecycle blocks until the lifecycle event name of the main frame's document: of the
// navigation's loader for a URL, after the "init" of document.open for HTML.
//
// A page may replace its document before that event (location=, a click, a form, a meta
// refresh): the first document then never gets it, and the new one announces itself with an init
// under a new loader, which is followed from then on. A navigation that loads no document (a 204
// answer, window.stop, a download) ends with the main frame's frameStoppedLoading, which also
// ends the wait: the frame is done loading whatever happened. A main-frame document failed by the
// interceptor ends it at once, before the new loader of Chrome's error page can be followed.
//
// A navigation the page requested and that has not started yet (a form submission is queued as
// a task: mainNav) holds the wait, even past the first document's load event and stop: it is
// waited for to start, then followed as above. One that never starts holds it navStartMax at
// most, from the document's event name or its stop (a stop while parsing: it may never get
// name). Same-document navigations request nothing and hold nothing.
func (r *render) waitLifecycle(ctx context.Context, name string) error {
	if !r.html && r.loaderID == "" {
		return nil // a same-document navigation has no lifecycle of its own
	}
	seenInit := false // the init of r.loaderID: no event before it is followed
	reached := false  // name came for r.loaderID
	n := r.nav
	var grace graceTimer
	defer grace.set(false)
	for {
		if reached && !n.asked() && !n.loading() {
			return nil
		}
		// The bound runs once the document would be done but for the request: it reached name,
		// or it stopped, which it may do without ever reaching name.
		grace.set((reached || n.stoppedAsked) && n.asked())
		life, requested, started, stopped := n.ready()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-r.intercept.mainFailed():
			return r.intercept.failure()
		case <-grace.c():
			grace.expired()
			return nil // the requested navigation did not start: the document stays
		case <-life:
		case <-requested:
		case <-started:
		case <-stopped:
		}
		// One event at a time, in the order Chrome sent them: a request before the first
		// document's load event holds the wait, and one after a new document's init is that
		// document's.
		kind, ev, err := n.next()
		if err != nil {
			return err
		}
		switch kind {
		case navStopped:
			if !n.asked() {
				return nil // the frame is done loading, whatever happened
			}
		case navLifecycle:
			switch {
			case ev.LoaderID == r.loaderID:
				seenInit = seenInit || ev.Name == "init"
				reached = reached || ev.Name == name
			case ev.Name == "init" && (seenInit || r.html):
				// For html the first init is document.open's; any later one is a new document that
				// replaced the first.
				r.replaced = seenInit
				r.loaderID, seenInit, reached = ev.LoaderID, true, name == "init"
				n.committed()
			}
		}
	}
}

// settle runs after the page is loaded and before the capture: it ends the loading phase, then
// waits for delay.
func (r *render) settle(ctx context.Context) error {
	if err := r.load.end(); err != nil {
		return err
	}
	if r.o.Delay <= 0 {
		return nil
	}
	t := time.NewTimer(r.o.Delay)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-r.intercept.mainFailed():
		return r.intercept.failure()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// capture produces the file: a PDF, the page's DOM as text, or an image of the area the options
// ask for.
func (r *render) capture(ctx context.Context) error {
	if r.format == shotd.FormatPDF {
		return r.printPDF(ctx)
	}
	if shotd.IsDocument(r.format) {
		return r.captureDocument(ctx)
	}
	return r.screenshot(ctx)
}

// quality is the jpeg and webp quality, 1..100.
func (r *render) quality() int {
	if q := r.o.ImageQuality; q > 0 {
		return min(q, 100)
	}
	return defaultQuality
}

// shoot has Chrome encode one capture; clip nil is the viewport.
func (r *render) shoot(ctx context.Context, format string, clip *page.Viewport) ([]byte, error) {
	args := page.NewCaptureScreenshotArgs().SetFormat(format)
	switch {
	case format == shotd.FormatJPEG || format == shotd.FormatWebP:
		args.SetQuality(r.quality())
	case format != r.format || r.o.PNGCompression != shotd.PNGBest:
		// A PNG that is only an intermediate (tiles, resizing, webp) always; the file itself
		// unless png_compression=best asks for the smallest.
		args.SetOptimizeForSpeed(true)
	}
	if clip != nil {
		// Beyond the viewport: Chrome lays out a larger view just for the capture, without
		// scrolling; 100vh elements and fixed elements keep their viewport geometry.
		args.SetClip(*clip).SetCaptureBeyondViewport(true)
	}
	for attempt := 1; ; attempt++ {
		shot, err := r.t.c.Page.CaptureScreenshot(ctx, args)
		if err == nil {
			return shot.Data, nil
		}
		// A page that navigates itself (a script or meta redirect) is briefly between renderers.
		var re *rpcc.ResponseError
		if attempt == 3 || !errors.As(err, &re) || !strings.Contains(re.Message, "Not attached to an active page") {
			return nil, err
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// isResponseError reports an error answer of Chrome to a command (as opposed to a broken
// connection or a cancelled context).
func isResponseError(err error) bool {
	var re *rpcc.ResponseError
	return errors.As(err, &re)
}

// invalidOption is the invalid_options error of one field.
func invalidOption(field, msg string) *shotd.Error {
	e := shotd.Errorf(shotd.CodeInvalidOptions, "%s: %s", field, msg)
	e.Fields = []shotd.FieldError{{Field: field, Message: msg}}
	return e
}

// fail turns the error of a step into a catalogue error: the render's own deadline is a timeout,
// a vanished browser or connection is a retryable internal error, the caller's cancellation
// likewise.
func (r *render) fail(ctx, rctx context.Context, stepName string, err error) *shotd.Error {
	cause := fmt.Errorf("%s: %w", stepName, err)
	var e *shotd.Error
	switch {
	case r.t != nil && r.t.crashed.Load():
		// Whatever the step made of it: a crash also closes the connection, and a step may
		// have been waiting for the deadline.
		e = shotd.Wrap(shotd.CodePageCrashed, cause, "the page crashed its tab during the render, most often by using more memory than a page may")
	case rctx.Err() != nil && errors.Is(context.Cause(rctx), errRenderTimeout):
		e = shotd.Wrap(shotd.CodeTimeout, cause, fmt.Sprintf("the render did not finish within %s (timeout, delay, and %s for the capture)", r.budget, shotd.RenderSlack))
	case rctx.Err() != nil && errors.Is(context.Cause(rctx), errBrowserStopped):
		// The service's fault, not the page's: renderer_unavailable is released, not counted
		// against the account, and a job tries again.
		e = shotd.Wrap(shotd.CodeRendererUnavailable, cause, "the browser stopped during the render")
	case ctx.Err() != nil:
		e = shotd.Wrap(shotd.CodeInternalError, cause, "the render was cancelled")
	case errors.As(err, &e):
	case r.p.life.Err() != nil, errors.Is(context.Cause(rctx), errTabGone):
		// The tab's connection closes first when the whole browser goes.
		e = shotd.Wrap(shotd.CodeRendererUnavailable, cause, "the browser stopped during the render")
	case isConnClosed(err):
		e = shotd.Wrap(shotd.CodeInternalError, cause, "the tab's connection closed during the render")
	default:
		e = shotd.Wrap(shotd.CodeInternalError, cause, "the render failed")
	}
	r.p.log.Debug().Err(cause).Str("code", string(e.Code)).Msg("render failed")
	return e
}

// isConnClosed reports rpcc's "connection is closing" errors.
func isConnClosed(err error) bool {
	var c interface{ Closed() bool }
	return errors.As(err, &c) && c.Closed()
}

// imageSize reads the pixel size from the image header.
func imageSize(format string, data []byte) (int, int, error) {
	if format == shotd.FormatWebP {
		return webpSize(data)
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return 0, 0, err
	}
	return cfg.Width, cfg.Height, nil
}

// webpSize reads the canvas size of a RIFF WebP file (lossy VP8, lossless VP8L or extended VP8X).
func webpSize(b []byte) (int, int, error) {
	if len(b) < 30 || string(b[0:4]) != "RIFF" || string(b[8:12]) != "WEBP" {
		return 0, 0, errors.New("not a webp file")
	}
	switch string(b[12:16]) {
	case "VP8 ":
		// frame tag (3 bytes), start code 9d 01 2a, then 14-bit width and height.
		if b[23] != 0x9d || b[24] != 0x01 || b[25] != 0x2a {
			return 0, 0, errors.New("bad vp8 start code")
		}
		return int(binary.LittleEndian.Uint16(b[26:28]) & 0x3fff), int(binary.LittleEndian.Uint16(b[28:30]) & 0x3fff), nil
	case "VP8L":
		if b[20] != 0x2f {
			return 0, 0, errors.New("bad vp8l signature")
		}
		bits := binary.LittleEndian.Uint32(b[21:25])
		return int(bits&0x3fff) + 1, int((bits>>14)&0x3fff) + 1, nil
	case "VP8X":
		w := int(b[24]) | int(b[25])<<8 | int(b[26])<<16
		h := int(b[27]) | int(b[28])<<8 | int(b[29])<<16
		return w + 1, h + 1, nil
	}
	return 0, 0, fmt.Errorf("unknown webp chunk %q", b[12:16])
}
