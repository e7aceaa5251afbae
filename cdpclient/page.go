package cdpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/mafredri/cdp/protocol/input"
	"github.com/mafredri/cdp/protocol/runtime"
	"github.com/mafredri/cdp/rpcc"

	"github.com/shotd/shotd"
)

// The page's own JavaScript can overwrite the globals our helpers use (document.querySelector,
// Promise, ...). That can only spoil its own screenshot: every value read back is checked, and
// every wait is bounded by the render's deadline.

// Timing of the page actions.
const (
	pollInterval      = 50 * time.Millisecond  // selector polling inside the page
	pollChunk         = 2 * time.Second        // one evaluate of the polling; then Go asks again
	clickNavWindow    = 300 * time.Millisecond // how long after a click a navigation may start
	scriptNavWindow   = 100 * time.Millisecond // the same after scripts, which navigate synchronously
	settleQuiet       = 300 * time.Millisecond // quiet network after a click
	settleMax         = 3 * time.Second        // the network settling after a click ends here at the latest
	maxSelectorMargin = time.Second            // the largest margin kept before the deadline
	oneLook           = time.Second            // past the load deadline, the time of the one look for an element (a round trip on a busy host)
)

// pageActions runs the page behaviour options after the page has loaded, in this order:
// wait_for_selector, styles (hide_selectors, styles, the blocker's CSS), scripts, click; and the
// styles once more when scripts or click loaded a new document.
func (r *render) pageActions(ctx context.Context) error {
	if r.o.WaitForSelector != "" {
		sels := []string{r.o.WaitForSelector}
		if r.o.WaitForSelectorAlgorithm == "at_least_by_count" {
			// Every selector of the list must match, not just one of them.
			sels = splitSelectorList(r.o.WaitForSelector)
			if rest, ok := strings.CutPrefix(sels[0], shadowPrefix); ok && len(sels) > 1 {
				// shadow/ covers the whole list: each selector of it pierces.
				sels[0] = rest
				for i := range sels {
					sels[i] = shadowPrefix + sels[i]
				}
			}
		}
		for _, sel := range sels {
			if err := r.waitElement(ctx, "wait_for_selector", sel, true); err != nil {
				return err
			}
		}
	}
	if err := r.waitConditions(ctx); err != nil { // wait_for_expression, wait_for_selector_hidden (waits.go)
		return err
	}
	if err := r.addStyles(ctx); err != nil {
		return err
	}
	navigated := false
	if r.o.Scripts != "" {
		nav, err := r.runScripts(ctx)
		if err != nil {
			return err
		}
		navigated = nav
	}
	if r.o.Click != "" {
		nav, err := r.click(ctx)
		if err != nil {
			return err
		}
		navigated = navigated || nav
	}
	if navigated {
		// The styles went with the document they were added to: the new one gets them too.
		if err := r.addStyles(ctx); err != nil {
			return err
		}
	}
	return r.lastActions(ctx) // actions.go
}

// jsCall is the expression that calls the function fn with args, JSON-encoded (a valid JS
// literal: encoding/json escapes U+2028 and U+2029).
func jsCall(fn string, args ...any) string {
	var b strings.Builder
	b.WriteString("(")
	b.WriteString(fn)
	b.WriteString(")(")
	for i, a := range args {
		if i > 0 {
			b.WriteString(",")
		}
		j, err := json.Marshal(a)
		if err != nil {
			panic(err) // only our own plain values are passed
		}
		b.Write(j)
	}
	b.WriteString(")")
	return b.String()
}

// errScript is a helper of ours that threw in the page.
type errScript struct{ msg string }

func (e *errScript) Error() string { return "page script: " + e.msg }

// eval evaluates expr in the page's main world, awaits a promise, and decodes the value into
// out (nil: ignore it).
func (r *render) eval(ctx context.Context, expr string, out any) error {
	args := runtime.NewEvaluateArgs(expr).SetAwaitPromise(true).SetReturnByValue(out != nil)
	if r.o != nil && r.o.DisableJavaScript {
		// The page's timers are off: the helpers run in a world of their own (waits.go).
		id, err := r.helperWorld(ctx)
		if err != nil {
			return err
		}
		args.SetContextID(id)
	}
	rep, err := r.t.c.Runtime.Evaluate(ctx, args)
	if err != nil {
		if contextGone(err) {
			r.world = 0 // the document went; the next helper makes a world in the new one
		}
		return err
	}
	if rep.ExceptionDetails != nil {
		return &errScript{msg: exceptionText(rep.ExceptionDetails)}
	}
	if out == nil {
		return nil
	}
	if len(rep.Result.Value) == 0 {
		return &errScript{msg: "no value"}
	}
	if err := json.Unmarshal(rep.Result.Value, out); err != nil {
		return &errScript{msg: "unexpected value: " + err.Error()}
	}
	return nil
}

// exceptionText is the first line of a thrown exception ("Error: boom"), clipped.
func exceptionText(d *runtime.ExceptionDetails) string {
	msg := d.Text
	if ex := d.Exception; ex != nil {
		switch {
		case ex.Description != nil && *ex.Description != "":
			msg = *ex.Description
		case len(ex.Value) > 0:
			var s string
			if json.Unmarshal(ex.Value, &s) == nil {
				msg = "Uncaught " + s
			} else {
				msg = "Uncaught " + string(ex.Value)
			}
		}
	}
	msg, _, _ = strings.Cut(msg, "\n")
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	return msg
}

// contextGone reports the errors of an evaluation whose document went away under it (the page
// navigated); the next evaluation runs in the new document.
func contextGone(err error) bool {
	var re *rpcc.ResponseError
	if !errors.As(err, &re) {
		return false
	}
	m := re.Message
	return strings.Contains(m, "Execution context was destroyed") ||
		strings.Contains(m, "Cannot find context") ||
		strings.Contains(m, "Inspected target navigated or closed")
}

// selectorDeadline is when waiting for a selector gives up: a little before the render's own
// deadline, so that the answer is selector_not_found and not timeout.
func selectorDeadline(ctx context.Context, timeout time.Duration) time.Time {
	d, ok := ctx.Deadline()
	if !ok {
		d = time.Now().Add(timeout)
	}
	return d.Add(-selectorMargin(timeout))
}

// selectorMargin is what a wait inside the page leaves before a deadline for the steps after it.
func selectorMargin(timeout time.Duration) time.Duration { return min(timeout/10, maxSelectorMargin) }

// waitElementJS polls for the first match of sel until it has a box (and, when visible is set,
// is not hidden by display, visibility or content-visibility) or budget ms have passed.
var waitElementJS = withShadowQuery(`async (sel, visible, budget, interval) => {
	const end = performance.now() + budget;
	for (;;) {
		let el;
		try { el = shotdQuery(sel); } catch (e) { return {invalid: String(e && e.message || e)}; }
		if (el) {
			const r = el.getBoundingClientRect();
			let ok = r.width > 0 && r.height > 0;
			if (ok && visible && el.checkVisibility) ok = el.checkVisibility({visibilityProperty: true});
			if (ok) return {found: true};
		}
		if (performance.now() >= end) return {found: false};
		await new Promise(res => setTimeout(res, interval));
	}
}`)

// waitElement waits for the first match of sel (option field) to have a box, or to be visible.
// Nothing in time is selector_not_found; a selector the browser cannot parse is
// invalid_options.
func (r *render) waitElement(ctx context.Context, field, sel string, visible bool) error {
	deadline := selectorDeadline(ctx, r.load.timeout)
	// The timeout counts from the first loading step, also for selector in the capture, which
	// runs after the loading phase (and after delay): no later than the load deadline allows,
	// but at least one look. While loading, ctx's deadline is the load deadline already.
	if !r.load.deadline.IsZero() && !r.load.armed.Load() {
		deadline = minTime(deadline, r.load.deadline.Add(-selectorMargin(r.load.timeout)))
		deadline = maxTime(deadline, time.Now().Add(oneLook))
	}
	notFound := func() error {
		what := "matched"
		if visible {
			what = "became visible"
		}
		return shotd.Errorf(shotd.CodeSelectorNotFound, "nothing %s %s %q within the timeout", what, field, clipText(sel))
	}
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return notFound()
		}
		wctx, cancel := context.WithDeadline(ctx, deadline)
		var res struct {
			Found   bool    `json:"found"`
			Invalid *string `json:"invalid"`
		}
		budget := min(left, pollChunk)
		err := r.eval(wctx, jsCall(waitElementJS, sel, visible, budget.Milliseconds(), pollInterval.Milliseconds()), &res)
		cancel()
		switch {
		case err == nil && res.Invalid != nil:
			return invalidOption(field, fmt.Sprintf("%q is not a valid CSS selector: %s", clipText(sel), *res.Invalid))
		case err == nil && res.Found:
			return nil
		case err == nil:
		case ctx.Err() != nil:
			return ctx.Err()
		case time.Until(deadline) <= 0:
			return notFound()
		case contextGone(err):
			// The page navigated; ask the new document after a moment.
			if err := sleep(ctx, pollInterval); err != nil {
				return err
			}
		default:
			return err
		}
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func clipText(s string) string {
	if len(s) > 100 {
		return s[:100] + "…"
	}
	return s
}

// addStylesJS adopts constructed style sheets: the blocker's, the hiding one and the user's.
// Adopted sheets are not nodes, so the page's DOM changes cannot remove them, and the page's
// Content-Security-Policy does not apply to them; they come after the page's own sheets in the
// cascade and, being CSS rules, also apply to elements added later. A blocker sheet Chrome
// refuses is left out rather than failing the render.
//
// Constructed sheets ignore @import, so the user's imports are picked out (parsed in an inert
// document, which fetches nothing) and go into a style element at the end of the document, which
// keeps them after the page's sheets and before the user's own rules, as in one sheet; it
// resolves once they have loaded or failed. When the user's CSS brings imports or fonts, it also
// waits for the fonts that the new rules start loading, so the capture does not show a
// fallback.
var addStylesJS = withShadowQuery(`async (hide, blocker, theirs, imports) => {
	for (const s of hide) {
		try { shotdQuery(s); } catch (e) { return {field: 'hide_selectors', error: JSON.stringify(s) + ' is not a valid CSS selector: ' + String(e && e.message || e)}; }
	}
	// A shadow/ selector reaches into shadow roots, where the document's sheet does not apply:
	// its matches are hidden by their own style.
	for (const s of hide.filter(s => s.startsWith('shadow/'))) {
		for (const el of shotdQueryAll(s)) el.style.setProperty('display', 'none', 'important');
	}
	hide = hide.filter(s => !s.startsWith('shadow/'));
	const sheets = [];
	if (blocker) {
		try { const a = new CSSStyleSheet(); a.replaceSync(blocker); sheets.push(a); } catch (e) {}
	}
	if (hide.length) {
		const b = new CSSStyleSheet();
		b.replaceSync(hide.map(s => s + ' { display: none !important; }').join('\n'));
		sheets.push(b);
	}
	let imported = null;
	if (theirs) {
		const c = new CSSStyleSheet();
		try { c.replaceSync(theirs); } catch (e) { return {field: 'styles', error: String(e && e.message || e)}; }
		sheets.push(c);
		if (imports) {
			const inert = document.implementation.createHTMLDocument('');
			const parsed = inert.createElement('style');
			parsed.textContent = theirs;
			inert.head.appendChild(parsed);
			const imports = Array.from(parsed.sheet ? parsed.sheet.cssRules : []).filter(r => r.type === 3).map(r => r.cssText);
			if (imports.length) {
				const el = document.createElement('style');
				el.textContent = imports.join('\n');
				imported = new Promise(done => { el.onload = el.onerror = done; });
				(document.documentElement || document).appendChild(el);
			}
		}
	}
	document.adoptedStyleSheets = [...document.adoptedStyleSheets, ...sheets];
	if (imported || /@font-face/i.test(theirs)) {
		await imported;
		void document.documentElement.offsetWidth; // lay out with the new rules: their fonts start loading
		await document.fonts.ready;
	}
	return {};
}`)

// addStyles adds hide_selectors, styles and the blocker's element hiding to the page.
func (r *render) addStyles(ctx context.Context) error {
	blocker := ""
	if r.blocker != nil {
		blocker = r.blocker.HideCSS(r.pageURL())
	}
	if len(r.o.HideSelectors) == 0 && r.o.Styles == "" && blocker == "" {
		return nil
	}
	hide := r.o.HideSelectors
	if hide == nil {
		hide = []string{}
	}
	var res struct {
		Field string `json:"field"`
		Error string `json:"error"`
	}
	if err := r.eval(ctx, jsCall(addStylesJS, hide, blocker, r.o.Styles, importsCSS(r.o.Styles)), &res); err != nil {
		return err
	}
	if res.Field != "" {
		return invalidOption(res.Field, res.Error)
	}
	return nil
}

// importsCSS tells whether css may hold an @import rule: prepare sets the page's CSP aside for
// it, and addStylesJS looks for the rules (the inert parse decides for sure).
func importsCSS(css string) bool { return strings.Contains(strings.ToLower(css), "@import") }

// pageURL is the URL of the main document as the interceptor saw it ("" for an html source).
func (r *render) pageURL() string {
	if r.intercept != nil {
		return r.intercept.page()
	}
	if !r.html {
		return r.o.URL
	}
	return ""
}

// runScripts evaluates the scripts option in the page's main world. A promise it returns is
// awaited; so is a script with a top-level await. An exception fails the render as
// invalid_options naming scripts. A script that navigates the page is waited for like a click;
// navigated tells whether it did.
func (r *render) runScripts(ctx context.Context) (navigated bool, err error) {
	w, err := r.watchNavigation(ctx)
	if err != nil {
		return false, err
	}
	defer w.close()
	eval := func(expr string) (*runtime.EvaluateReply, error) {
		// The value is not needed, and a value that cannot be serialised must not fail the render.
		return r.t.c.Runtime.Evaluate(ctx, runtime.NewEvaluateArgs(expr).SetAwaitPromise(true).SetUserGesture(true))
	}
	rep, err := eval(r.o.Scripts)
	if err == nil && rep.ExceptionDetails != nil && isTopLevelAwait(rep.ExceptionDetails) {
		// A syntax error means nothing ran: run it again as the body of an async function.
		rep, err = eval("(async () => {\n" + r.o.Scripts + "\n})()")
	}
	switch {
	case err != nil && contextGone(err):
		// The script navigated the page.
	case err != nil:
		return false, err
	case rep.ExceptionDetails != nil:
		msg := exceptionText(rep.ExceptionDetails)
		e := shotd.Errorf(shotd.CodeInvalidOptions, "scripts threw an exception: %s", msg)
		e.Fields = []shotd.FieldError{{Field: "scripts", Message: "the script threw an exception: " + msg}}
		return false, e
	}
	navigated, err = w.settle(ctx, scriptNavWindow, false)
	if err != nil {
		return navigated, err
	}
	if most := r.scriptsIdleMax(); most >= 0 {
		// scripts_wait_until networkidle0/2: what the scripts started loads first. load and
		// domcontentloaded are met once settle has seen a navigation stop loading.
		var main owner
		if navigated {
			main = owner{} // every request counts: the new document's are the only ones left
		}
		if err := r.net.waitIdleN(ctx, networkQuiet, main, most); err != nil {
			return navigated, err
		}
	}
	return navigated, nil
}

func isTopLevelAwait(d *runtime.ExceptionDetails) bool {
	ex := d.Exception
	return ex != nil && ex.ClassName != nil && *ex.ClassName == "SyntaxError" && ex.Description != nil &&
		strings.Contains(*ex.Description, "await is only valid")
}

// clickPointJS scrolls the first match of sel into view and returns the middle of its visible
// part, in viewport coordinates.
var clickPointJS = withShadowQuery(`async (sel) => {
	const el = shotdQuery(sel);
	if (!el) return {found: false};
	el.scrollIntoView({block: 'center', inline: 'center', behavior: 'instant'});
	await new Promise(res => requestAnimationFrame(() => requestAnimationFrame(res)));
	const r = el.getBoundingClientRect();
	const x0 = Math.max(r.left, 0), x1 = Math.min(r.right, innerWidth);
	const y0 = Math.max(r.top, 0), y1 = Math.min(r.bottom, innerHeight);
	if (x1 <= x0 || y1 <= y0) return {found: false};
	return {found: true, x: (x0 + x1) / 2, y: (y0 + y1) / 2};
}`)

// click clicks the first match of the click option with a real (trusted) mouse click in its
// middle, then lets the page settle: a navigation it starts loads, the network goes quiet.
func (r *render) click(ctx context.Context) (navigated bool, err error) {
	if err := r.waitElement(ctx, "click", r.o.Click, false); err != nil {
		return false, err
	}
	var pt struct {
		Found bool    `json:"found"`
		X     float64 `json:"x"`
		Y     float64 `json:"y"`
	}
	if err := r.eval(ctx, jsCall(clickPointJS, r.o.Click), &pt); err != nil {
		return false, err
	}
	if !pt.Found || math.IsNaN(pt.X) || math.IsNaN(pt.Y) {
		return false, shotd.Errorf(shotd.CodeSelectorNotFound, "click %q matched nothing that can be clicked", clipText(r.o.Click))
	}
	w, err := r.watchNavigation(ctx)
	if err != nil {
		return false, err
	}
	defer w.close()
	in := r.t.c.Input
	r.t.over.pointer = true // the wipe moves it away
	if err := in.DispatchMouseEvent(ctx, input.NewDispatchMouseEventArgs("mouseMoved", pt.X, pt.Y)); err != nil {
		return false, err
	}
	if err := in.DispatchMouseEvent(ctx, input.NewDispatchMouseEventArgs("mousePressed", pt.X, pt.Y).
		SetButton(input.MouseButtonLeft).SetButtons(1).SetClickCount(1)); err != nil {
		return false, err
	}
	if err := in.DispatchMouseEvent(ctx, input.NewDispatchMouseEventArgs("mouseReleased", pt.X, pt.Y).
		SetButton(input.MouseButtonLeft).SetClickCount(1)); err != nil {
		return false, err
	}
	return w.settle(ctx, clickNavWindow, true)
}

// navWatch sees whether the main frame starts loading a new document after an action.
type navWatch struct {
	r   *render
	nav *mainNav
}

// watchNavigation subscribes to the main frame's navigation events; Page is enabled already, so
// this costs no round trip.
func (r *render) watchNavigation(ctx context.Context) (*navWatch, error) {
	n, err := watchMainNav(ctx, r.t, false)
	if err != nil {
		return nil, err
	}
	return &navWatch{r: r, nav: n}, nil
}

func (w *navWatch) close() { w.nav.close() }

// settle waits up to window for a navigation of the main frame to start and, if one does,
// until it has stopped loading (bounded by the render's deadline); then, when network is set
// and requests are counted, until the network has been quiet for settleQuiet, at most
// settleMax. navigated tells whether the main frame started loading. A navigation the page
// requested (a form submission, queued as a task) and that has not started when the settling
// would end, at the end of window or at a stop, is given navStartMax more to start.
func (w *navWatch) settle(ctx context.Context, window time.Duration, network bool) (navigated bool, err error) {
	n := w.nav
	timer := time.NewTimer(window)
	defer timer.Stop()
	windowC := timer.C
	var grace graceTimer
	defer grace.set(false)
	due := false // the settling would end now but for a requested navigation
	for !due || n.asked() {
		grace.set(due)
		_, requested, started, stopped := n.ready()
		select {
		case <-ctx.Done():
			return navigated, ctx.Err()
		case <-windowC:
			windowC, due = nil, true
			continue
		case <-grace.c():
			grace.expired()
			return navigated, w.quiet(ctx, network) // it did not start
		case <-requested:
		case <-started:
		case <-stopped:
		}
		kind, _, err := n.next()
		if err != nil {
			return navigated, err
		}
		switch {
		case kind == navStarted:
			navigated, windowC, due = true, nil, false
		case kind == navStopped && navigated: // a stop before the start is an earlier load's
			due = true
		}
	}
	return navigated, w.quiet(ctx, network)
}

// quiet waits, when network is set and requests are counted, until the network has been quiet
// for settleQuiet, at most settleMax.
func (w *navWatch) quiet(ctx context.Context, network bool) error {
	if !network || w.r.net == nil {
		return nil
	}
	qctx, cancel := context.WithTimeout(ctx, settleMax)
	defer cancel()
	if err := w.r.net.waitIdle(qctx, settleQuiet, owner{}); err != nil && ctx.Err() == nil && qctx.Err() == nil {
		return err
	}
	return ctx.Err()
}
