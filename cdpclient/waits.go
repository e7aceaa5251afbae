package cdpclient

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mafredri/cdp/protocol/page"
	"github.com/mafredri/cdp/protocol/runtime"

	"github.com/shotd/shotd"
)

// waitExpressionJS polls the user's expression, compiled once as the body of an arrow function,
// until it is truthy (a promise it gives is awaited) or budget ms have passed. A throw counts as
// not yet (window.chart.done before the chart exists) and is reported with the last look. The
// expression is the user's own code on the user's own render, as scripts is: it is put in the
// text, not passed to eval, which the page's Content-Security-Policy may refuse. The newlines
// keep a trailing // comment of the expression from eating the wrapper.
func waitExpressionJS(expr string) string {
	return `(async (budget, interval) => {
	const check = async () => (
` + expr + `
	);
	const end = performance.now() + budget;
	let last = '';
	for (;;) {
		try { if (await check()) return {done: true}; last = ''; }
		catch (e) { last = String(e && e.message || e).slice(0, 300); }
		if (performance.now() >= end) return {done: false, error: last};
		await new Promise(res => setTimeout(res, interval));
	}
})`
}

// waitHiddenJS polls until no element matching sel is visible: none in the document, or none
// with a box that display, visibility or content-visibility leave shown.
var waitHiddenJS = withShadowQuery(`async (sel, budget, interval) => {
	const end = performance.now() + budget;
	for (;;) {
		let els;
		try { els = shotdQueryAll(sel); } catch (e) { return {invalid: String(e && e.message || e)}; }
		const shown = Array.from(els).some(el => {
			const r = el.getBoundingClientRect();
			return r.width > 0 && r.height > 0 && (!el.checkVisibility || el.checkVisibility({visibilityProperty: true, opacityProperty: true}));
		});
		if (!shown) return {done: true};
		if (performance.now() >= end) return {done: false};
		await new Promise(res => setTimeout(res, interval));
	}
}`)

// pollReturn is the time an in-page poll leaves itself to answer before the deadline.
const pollReturn = 100 * time.Millisecond

// waitConditions waits for wait_for_expression to be true, then for wait_for_selector_hidden to
// be gone. Each is bounded like wait_for_selector: a little before the loading deadline, so that
// the answer names the option rather than being a bare timeout.
func (r *render) waitConditions(ctx context.Context) error {
	if e := r.o.WaitForExpression; e != "" {
		err := r.poll(ctx, "wait_for_expression", func(budget time.Duration) string {
			return "(" + waitExpressionJS(e) + ")(" + fmt.Sprint(budget.Milliseconds()) + "," + fmt.Sprint(pollInterval.Milliseconds()) + ")"
		}, func(last string) error {
			msg := "wait_for_expression did not become true within the timeout"
			if last != "" {
				msg += "; it last threw: " + last
			}
			return shotd.Errorf(shotd.CodeTimeout, "%s", msg)
		})
		if err != nil {
			return err
		}
	}
	if sel := r.o.WaitForSelectorHidden; sel != "" {
		return r.poll(ctx, "wait_for_selector_hidden", func(budget time.Duration) string {
			return jsCall(waitHiddenJS, sel, budget.Milliseconds(), pollInterval.Milliseconds())
		}, func(string) error {
			return shotd.Errorf(shotd.CodeTimeout, "an element matching wait_for_selector_hidden %q was still visible when the timeout ran out", clipText(sel))
		})
	}
	return nil
}

// poll evaluates the expression that expr makes for a budget, in chunks of pollChunk, until it
// reports done, the deadline passes (notDone), or the page's evaluation fails. A document that
// goes away (the page navigated) is asked again in its successor.
func (r *render) poll(ctx context.Context, field string, expr func(budget time.Duration) string, notDone func(last string) error) error {
	deadline := selectorDeadline(ctx, r.load.timeout)
	last := ""
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return notDone(last)
		}
		wctx, cancel := context.WithDeadline(ctx, deadline)
		var res struct {
			Done    bool    `json:"done"`
			Error   string  `json:"error"`
			Invalid *string `json:"invalid"`
		}
		// The page's loop ends a little before the deadline, so that its last look (and the
		// error it saw) comes back rather than being cut off.
		err := r.eval(wctx, expr(max(0, min(left-pollReturn, pollChunk))), &res)
		cancel()
		var se *errScript
		switch {
		case err == nil && res.Invalid != nil:
			return invalidOption(field, fmt.Sprintf("not a valid CSS selector: %s", *res.Invalid))
		case err == nil && res.Done:
			return nil
		case err == nil:
			last = res.Error
		case ctx.Err() != nil:
			return ctx.Err()
		case time.Until(deadline) <= 0:
			return notDone(last)
		case contextGone(err):
			if err := sleep(ctx, pollInterval); err != nil {
				return err
			}
		case errors.As(err, &se):
			// The wrapper itself threw: the expression does not parse.
			return invalidOption(field, "not a valid JavaScript expression: "+se.msg)
		default:
			return err
		}
	}
}

// noScriptTimers gives the helpers' world timers again under disable_javascript. With
// Emulation.setScriptExecutionDisabled no setTimeout fires in any world of the page, but
// animation frames still come to an isolated world (Chromium 156): setTimeout there waits for
// frames until its time has come. The page's own world keeps no timer.
const noScriptTimers = `(() => {
	const raf = requestAnimationFrame.bind(window);
	window.setTimeout = (fn, ms, ...args) => {
		const end = performance.now() + (+ms || 0);
		const tick = () => performance.now() >= end ? fn(...args) : raf(tick);
		raf(tick);
		return 0;
	};
})()`

// helperWorld returns the isolated world in which the helpers run under disable_javascript,
// made on first use in the current document. The page's scripts cannot reach it, as with any
// isolated world; it shares the DOM.
func (r *render) helperWorld(ctx context.Context) (runtime.ExecutionContextID, error) {
	if r.world != 0 {
		return r.world, nil
	}
	w, err := r.t.c.Page.CreateIsolatedWorld(ctx, page.NewCreateIsolatedWorldArgs(r.t.frameID).SetWorldName("shotd-helpers"))
	if err != nil {
		return 0, err
	}
	rep, err := r.t.c.Runtime.Evaluate(ctx, runtime.NewEvaluateArgs(noScriptTimers).SetContextID(w.ExecutionContextID))
	if err != nil {
		return 0, err
	}
	if rep.ExceptionDetails != nil {
		return 0, &errScript{msg: exceptionText(rep.ExceptionDetails)}
	}
	r.world = w.ExecutionContextID
	return r.world, nil
}
