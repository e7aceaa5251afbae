package cdpclient

import (
	"context"
	"time"
)

// The consent step of block_cookie_banners. The blocker's start script (blocklist's wrapper of
// DuckDuckGo's autoconsent) runs in every document before the page's scripts: it finds the
// consent platform once the DOM is ready, and clicks "reject" (opt-out) on its dialog. It works
// on its own time: a detection pass when the page is idle, then up to 20 more, 500 ms apart
// (and, from the third on, only after a DOM change). The capture must not come in the middle of
// a click, nor wait that long for pages that have no dialog, so consent waits after the load,
// before the element hiding (which would hide the dialog from autoconsent's visibility
// checks), and ends:
//   - at once when autoconsent reports its result (optOutResult, or optInResult from a platform
//     rule of its own), or reports nothingDetected (its detection gave up);
//   - at once when one detection pass of autoconsent's own rules, run by this step, finds no
//     platform on the page and autoconsent has reported none. autoconsent's own verdict of "no
//     platform" (nothingDetected) comes only after all its retries, seconds later, so this
//     pass is what keeps the step near free on a page without a dialog;
//   - when a platform is there but none of its dialogs has shown for consentDialogGrace (regions
//     where the platform asks nothing, consent already given);
//   - at consentMax at the latest, and always some margin before the render's deadline.
//
// Whatever autoconsent leaves (a dialog it cannot reject, one that comes later) is hidden by the
// cookie-banner list afterwards. Nothing here fails a render: a page that broke the helpers or
// navigated away only ends the wait.
const (
	consentMax         = 2500 * time.Millisecond
	consentDialogGrace = time.Second
	consentPoll        = 50 * time.Millisecond
	consentCheckMax    = 200 * time.Millisecond // one rule's detectPopup, which may wait for visibility
	consentSlack       = 500 * time.Millisecond // for the evaluation's round trip after the in-page budget
)

// consentWaitJS is the in-page wait. It reads window.autoconsentStandalone (the standalone
// build's instance and message list) and calls the instance's rules through autoconsent's typed
// AutoCMP interface (checkRunContext, detectCmp, detectPopup, name): the same side-effect-free
// checks autoconsent itself repeats on every pass. Any surprise in their shape ends the wait
// rather than the render.
const consentWaitJS = `async (budget, interval, grace, checkMax) => {
	const ac = window.autoconsentStandalone;
	const inst = ac && ac.instance;
	const msgs = ac && ac.messages;
	if (!inst || !Array.isArray(msgs)) return {outcome: 'absent'};
	const t0 = performance.now(), end = t0 + budget;
	const left = () => Math.max(0, end - performance.now());
	const sleep = (ms) => new Promise(res => setTimeout(res, ms));
	// The rules that hold true within max (and the budget); one that throws or waits longer does not.
	const check = async (cmps, fn, max) => {
		let timer;
		const expired = new Promise(res => { timer = setTimeout(res, Math.min(max, left()), false); });
		const hits = await Promise.all(cmps.map(c => Promise.race([Promise.resolve().then(() => fn(c)).catch(() => false), expired])));
		clearTimeout(timer);
		return cmps.filter((c, i) => hits[i] === true);
	};
	let rules;
	try { rules = inst.rules.filter(c => c.checkRunContext()); } catch (e) { return {outcome: 'unknown', error: String(e)}; }
	const names = new Set();
	for (let first = true; ; first = false) {
		for (const m of msgs) {
			if (!m) continue;
			if (m.type === 'optOutResult' || m.type === 'optInResult') {
				return {outcome: !m.result ? 'failed' : m.type === 'optOutResult' ? 'rejected' : 'accepted', cmp: String(m.cmp)};
			}
			if (m.type === 'cmpDetected') names.add(String(m.cmp));
		}
		const life = String(inst.state && inst.state.lifecycle);
		if (life === 'nothingDetected') return {outcome: 'none'};
		const busy = life === 'openPopupDetected' || life === 'runningOptOut' || life === 'runningOptIn';
		if (!busy) {
			if (first && names.size === 0) {
				for (const c of await check(rules, c => c.detectCmp(), budget)) names.add(String(c.name));
				if (names.size === 0) return {outcome: 'none'};
			}
			const present = rules.filter(c => names.has(String(c.name)));
			const shown = (await check(present, c => c.detectPopup(), checkMax)).length > 0;
			if (!shown && performance.now() - t0 >= grace) return {outcome: 'no dialog', cmp: [...names].join(',')};
		}
		if (left() <= 0) return {outcome: 'timeout', cmp: [...names].join(','), lifecycle: life};
		await sleep(Math.min(interval, left()));
	}
}`

// consentResult is what consentWaitJS answers.
type consentResult struct {
	Outcome   string `json:"outcome"` // absent, none, rejected, accepted, failed, no dialog, timeout, unknown
	CMP       string `json:"cmp"`
	Lifecycle string `json:"lifecycle"`
	Error     string `json:"error"`
}

// consent waits, boundedly, for the consent-dialog script of block_cookie_banners to finish; see
// the comment at the top of this file. It returns an error only when ctx ends.
func (r *render) consent(ctx context.Context) error {
	if !r.o.BlockCookieBanners || r.startScript() == "" {
		return nil
	}
	budget := consentMax
	if d, ok := ctx.Deadline(); ok {
		// The same margin as a selector wait keeps: the capture still has time after it.
		budget = min(budget, time.Until(d)-selectorMargin(r.load.timeout)-consentSlack)
	}
	if budget <= 0 {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, budget+consentSlack)
	defer cancel()
	start := time.Now()
	var res consentResult
	err := r.eval(wctx, jsCall(consentWaitJS, budget.Milliseconds(), consentPoll.Milliseconds(),
		consentDialogGrace.Milliseconds(), consentCheckMax.Milliseconds()), &res)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	ev := r.p.log.Debug().Dur("took", time.Since(start))
	if err != nil {
		// The page navigated, broke the helpers, or kept its main thread busy past the budget.
		ev.Err(err).Msg("consent wait ended")
		return nil
	}
	ev.Str("outcome", res.Outcome).Str("cmp", res.CMP).Str("lifecycle", res.Lifecycle).Str("error", res.Error).Msg("consent wait ended")
	return nil
}
