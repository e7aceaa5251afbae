package cdpclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/mafredri/cdp/protocol/browser"
	"github.com/mafredri/cdp/protocol/emulation"
	"github.com/mafredri/cdp/protocol/fetch"
	"github.com/mafredri/cdp/protocol/input"
	"github.com/mafredri/cdp/protocol/network"
	"github.com/mafredri/cdp/protocol/page"
	"github.com/mafredri/cdp/protocol/runtime"
	"github.com/mafredri/cdp/protocol/storage"
	"github.com/mafredri/cdp/protocol/target"
	"golang.org/x/net/publicsuffix"
)

// Isolation modes (Config.Isolation).
const (
	// IsolationWipe reuses a tab, alone in its browser context, for up to Config.TabReuse
	// renders and wipes it clean after each (wipe).
	IsolationWipe = "wipe"
	// IsolationContext gives every render a fresh browser context and target, disposed after
	// it: separate renderer processes between renders, at about 60 to 130 ms of Chrome CPU each.
	IsolationContext = "context"
)

// Timing of a tab's cleaning.
const (
	// The whole cleaning; past it the tab is replaced. Replacing costs Chrome more than a
	// cleaning, so the bounds leave room for a machine under load, where a soak saw leaves of
	// over 2 s replace tab after tab.
	cleanTimeout = 8 * time.Second
	leaveTimeout = 5 * time.Second // the navigation to about:blank, the page's unload handlers included
	defaultReuse = 50              // Config.TabReuse
	blankURL     = "about:blank"   // where a cleaned tab rests
)

// overrides are what a render changed in its tab beyond a fresh tab's state, so that the wipe
// undoes exactly that. A render sets them as it makes each change.
type overrides struct {
	// Emulation and page settings.
	touch, userAgent, media, timeZone, background, bypassCSP bool
	noScript                                                 bool // Emulation.setScriptExecutionDisabled (disable_javascript)
	locale                                                   bool // Emulation.setLocaleOverride (locale.go)

	network     bool                    // Network.enable (networkidle, click)
	pointer     bool                    // the mouse was moved over the page (click, hover)
	autoAttach  bool                    // Target.setAutoAttach for dedicated workers
	permissions bool                    // Browser.grantPermissions or setPermission by a render
	geolocation bool                    // Emulation.setGeolocationOverride
	scripts     []page.ScriptIdentifier // Page.addScriptToEvaluateOnNewDocument
	tainted     bool                    // a change the wipe does not undo: replace the tab
}

// originSet collects the origins a tab's frames and workers committed, and the sites of its
// main frame's documents, for the wipe: Chrome keeps storage per storage key, the origin for a
// top-level document and its same-site frames, the origin and the top-level site for a
// cross-site frame (storage partitioning), and clears it per key.
type originSet struct {
	mu      sync.Mutex
	origins map[string]struct{}
	tops    map[string]struct{} // sites of main-frame documents
}

// add records the origin of rawURL (an origin or any URL of it), top for a main-frame document;
// opaque and non-network origins hold no storage and are skipped.
func (s *originSet) add(rawURL string, top bool) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return
	}
	o := u.Scheme + "://" + u.Host
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.origins == nil {
		s.origins, s.tops = map[string]struct{}{}, map[string]struct{}{}
	}
	s.origins[o] = struct{}{}
	if top {
		s.tops[site(u)] = struct{}{}
	}
}

// storageKeys returns what to clear: every origin, and every partitioned key of an origin under
// a top-level site of another site; it empties the set. A partitioned key is written as Chrome
// serialises it ("<origin>/^0<top-level site>", Chromium 156). Frames of a top-level site that
// sit below a cross-site frame get keys of a third kind, which are not cleared here.
func (s *originSet) storageKeys() (origins, partitioned []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for o := range s.origins {
		origins = append(origins, o)
		u, _ := url.Parse(o)
		for top := range s.tops {
			if top != site(u) {
				partitioned = append(partitioned, o+"/^0"+top)
			}
		}
	}
	s.origins, s.tops = nil, nil
	return origins, partitioned
}

// site is the schemeful site of u: its scheme and registrable domain (an IP address or a
// single-label host stands for itself), without the port.
func site(u *url.URL) string {
	host := u.Hostname()
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if net.ParseIP(u.Hostname()) == nil && strings.Contains(host, ".") {
		if d, err := publicsuffix.EffectiveTLDPlusOne(host); err == nil {
			host = d
		}
	}
	return u.Scheme + "://" + host
}

// errNotClean is the cause of a cleaning that could not finish: the tab is replaced.
var errNotClean = errors.New("tab not known clean")

// wipe returns t to the state of a fresh tab in a fresh browser context, so that the next render,
// of any account, finds nothing of this one:
//
//  1. Every request from now on is refused, so that nothing the leaving page sends (a beacon
//     from an unload handler, a keepalive fetch) can bring a cookie back after the wipe: the
//     tab's egress route ends every connection of the context (to the route, the tunnels to
//     the sites, its own to servers, so that no connection outlives the render either) and
//     answers 503 until the end of the wipe. Without a route (no Guard), Fetch fails every
//     request inside Chrome.
//  2. The tab navigates to about:blank (Page.navigate): the page's pagehide, unload and
//     visibilitychange handlers run now, before the wipe, and its timers, workers and frames
//     end. The navigation comes from the browser, so the page cannot intercept it (Navigation
//     API) or hold it with a pending navigation of its own; with RenderDocument off it stays
//     in the page's renderer process. The blank document has an opaque origin, as a fresh
//     tab's; window.name, which a same-site navigation keeps, is emptied.
//  3. The context's cookies and HTTP cache go, and every origin that a frame or worker of the
//     render committed loses its storage (localStorage, sessionStorage, IndexedDB, Cache
//     Storage, service workers, file systems, shared storage); the history is reset and the
//     context's permissions too.
//  4. What the render set in the tab (emulation, interception, Network, worker auto-attach) is
//     undone, and the route serves again. Its scripts for new documents go before the leave.
//
// Once the blank document has loaded nothing of the page runs any more, so the calls of 3 and 4
// and the emptying of window.name go out at once. Each costs Chrome what it costs (the leave
// about 19 ms of CPU, the HTTP cache about 5, the rest about 1 each, resetting the emulated
// media 5: BenchmarkWipeSteps), and only those a render can have needed are made.
//
// Any failure leaves the tab not known clean: the caller replaces it. So does what may have left
// credentials in the context's HTTP auth cache, which no CDP call clears: a shared worker (its
// requests are not the tab's to pause), or a ws:// handshake with credentials that the route
// saw (Route.SawCredentials); a URL with credentials that Fetch paused taints the tab already.
func (p *Process) wipe(t *tab) error {
	if t.over.tainted || t.crashed.Load() || t.sharedWorker.Load() || t.conn.Context().Err() != nil {
		return errNotClean
	}
	ctx, cancel := context.WithTimeout(p.life, cleanTimeout)
	defer cancel()
	c := t.c

	paused, err := c.Fetch.RequestPaused(ctx)
	if err != nil {
		return err
	}
	if t.route != nil {
		// Costs Chrome nothing: the route ends the context's connections and answers every
		// request with 503 until the end of the wipe. What the render's Fetch patterns still
		// pause is failed below.
		t.route.Block()
		if t.route.SawCredentials() {
			// A ws:// handshake with credentials: they are in the HTTP auth cache.
			paused.Close()
			return errNotClean
		}
	} else {
		all := "*"
		if err := c.Fetch.Enable(ctx, fetch.NewEnableArgs().SetPatterns([]fetch.RequestPattern{
			{URLPattern: &all, RequestStage: fetch.RequestStageRequest}})); err != nil {
			paused.Close()
			return fmt.Errorf("block requests: %w", err)
		}
		t.guardFetch = false
	}
	var blockers sync.WaitGroup
	blockers.Go(func() {
		for {
			ev, err := paused.Recv()
			if err != nil {
				return
			}
			_ = c.Fetch.FailRequest(ctx, fetch.NewFailRequestArgs(ev.RequestID, network.ErrorReasonBlockedByClient))
		}
	})
	defer func() {
		paused.Close()
		blockers.Wait()
	}()

	if err := t.removeScripts(ctx); err != nil {
		return err
	}
	if err := t.leave(ctx); err != nil {
		return err
	}
	// Nothing of the page runs any more: what is left are calls that do not depend on each
	// other, sent at once rather than one round trip after another.
	calls := append(p.clearCalls(ctx, t), t.undoCalls(ctx)...)
	calls = append(calls, t.checkBlank(ctx))
	if p.cfg.Guard != nil && !t.guardFetch {
		// Request rules paused every request: the guard's patterns alone again. The route
		// answers every request until the end of the wipe anyway.
		calls = append(calls, func() error {
			if err := p.enableGuardFetch(ctx, t); err != nil {
				return fmt.Errorf("guard patterns: %w", err)
			}
			return nil
		})
	}
	if err := concurrently(calls); err != nil {
		return err
	}
	t.over = overrides{}
	if p.cfg.Guard == nil {
		// Only now, once the state is cleared: Fetch was what failed every request.
		if err := c.Fetch.Disable(ctx); err != nil {
			return fmt.Errorf("fetch disable: %w", err)
		}
	}
	// The blank document's lifecycle events are no render's.
	if err := drainLifecycle(t); err != nil {
		return err
	}
	if t.sharedWorker.Load() {
		return errNotClean // started as the page left
	}
	if t.route != nil {
		t.route.Unblock()
	}
	return nil
}

// leave navigates the tab to about:blank and waits for the blank document to load. A navigation
// from the browser costs Chrome about 10% less CPU than the page's own (location.href) and a few
// milliseconds less (Chromium 156).
func (t *tab) leave(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, leaveTimeout)
	defer cancel()
	t.leaving.Store(true)
	defer t.leaving.Store(false)
	nav, err := t.c.Page.Navigate(ctx, page.NewNavigateArgs(blankURL))
	if err != nil {
		return fmt.Errorf("leave: %w", err)
	}
	if nav.ErrorText != nil && *nav.ErrorText != "" {
		return fmt.Errorf("leave: %w: %s", errNotClean, *nav.ErrorText)
	}
	if nav.LoaderID == nil {
		return fmt.Errorf("leave: %w: the navigation to %s made no document", errNotClean, blankURL)
	}
	// Its load comes after the commit, and after the page's handlers have run.
	if err := t.awaitLoad(ctx, *nav.LoaderID); err != nil {
		return fmt.Errorf("leave: %w", err) // a page that holds on (a busy loop)
	}
	return nil
}

// checkBlank empties the blank document's window.name, which a same-site navigation keeps, and
// checks that its origin is opaque, as a fresh tab's is: an html source written into it next
// must not run as the previous page's origin.
func (t *tab) checkBlank(ctx context.Context) func() error {
	return func() error {
		res, err := t.c.Runtime.Evaluate(ctx, runtime.NewEvaluateArgs(`window.name='';location.origin`).SetReturnByValue(true))
		if err != nil {
			return fmt.Errorf("leave: %w", err)
		}
		if res.ExceptionDetails != nil || string(res.Result.Value) != `"null"` {
			return fmt.Errorf("leave: %w: the blank document's origin is %s", errNotClean, res.Result.Value)
		}
		return nil
	}
}

// concurrently runs calls at once and joins their errors.
func concurrently(calls []func() error) error {
	errs := make([]error, len(calls))
	var wg sync.WaitGroup
	for i, f := range calls {
		wg.Go(func() { errs[i] = f() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// originStorage is what the wipe clears per origin and storage key: every kind of storage a page
// can write, but not "all", which adds the origin's cookies (the context's are cleared at once
// anyway) and the GPU shader cache, and costs the browser a quarter more per wipe.
const originStorage = "local_storage,indexeddb,cache_storage,service_workers,file_systems,websql,shared_storage,storage_buckets,interest_groups"

// clearCalls are the calls that drop the browser context's cookies and HTTP cache (and the
// permissions a render granted), the storage of every origin the tab committed, and the history:
// each CDP call costs the browser's UI thread, so none is made that a render cannot need.
func (p *Process) clearCalls(ctx context.Context, t *tab) []func() error {
	c := t.c
	calls := []func() error{
		func() error { return c.Network.ClearBrowserCookies(ctx) },
		func() error { return c.Network.ClearBrowserCache(ctx) },
		func() error { return c.Page.ResetNavigationHistory(ctx) },
	}
	if t.over.permissions {
		// A page cannot grant itself a permission (--deny-permission-prompts): only a render's
		// own option can, and then they go.
		calls = append(calls, func() error {
			return p.browser.Browser.ResetPermissions(ctx, browser.NewResetPermissionsArgs().SetBrowserContextID(t.browserContext))
		})
	}
	origins, partitioned := t.origins.storageKeys()
	for _, o := range origins {
		calls = append(calls, func() error {
			return c.Storage.ClearDataForOrigin(ctx, storage.NewClearDataForOriginArgs(o, originStorage))
		})
	}
	for _, k := range partitioned {
		calls = append(calls, func() error {
			return c.Storage.ClearDataForStorageKey(ctx, storage.NewClearDataForStorageKeyArgs(k, originStorage))
		})
	}
	for i, f := range calls {
		calls[i] = func() error {
			if err := f(); err != nil {
				return fmt.Errorf("clear: %w", err)
			}
			return nil
		}
	}
	return calls
}

// undoCalls are the calls that reset what the render set in the tab; a fresh tab has none of
// it. The wipe empties t.over once they have all succeeded.
func (t *tab) undoCalls(ctx context.Context) []func() error {
	c, o := t.c, &t.over
	var calls []func() error
	do := func(set bool, f func() error) {
		if set {
			calls = append(calls, func() error {
				if err := f(); err != nil {
					return fmt.Errorf("remove scripts for new documents: %w", err)
				}
				return nil
			})
		}
	}
	do(o.touch, func() error {
		return c.Emulation.SetTouchEmulationEnabled(ctx, emulation.NewSetTouchEmulationEnabledArgs(false))
	})
	// An empty user agent, time zone or colour ends that override; media returns to the baseline.
	do(o.userAgent, func() error {
		return c.Emulation.SetUserAgentOverride(ctx, emulation.NewSetUserAgentOverrideArgs(""))
	})
	do(o.media, func() error { return c.Emulation.SetEmulatedMedia(ctx, baselineMediaArgs()) })
	do(o.timeZone, func() error {
		return c.Emulation.SetTimezoneOverride(ctx, emulation.NewSetTimezoneOverrideArgs(""))
	})
	do(o.locale, func() error { return t.undoLocale(ctx) })
	do(o.background, func() error {
		return c.Emulation.SetDefaultBackgroundColorOverride(ctx, emulation.NewSetDefaultBackgroundColorOverrideArgs())
	})
	do(o.bypassCSP, func() error { return c.Page.SetBypassCSP(ctx, page.NewSetBypassCSPArgs(false)) })
	do(o.noScript, func() error {
		return c.Emulation.SetScriptExecutionDisabled(ctx, emulation.NewSetScriptExecutionDisabledArgs(false))
	})
	do(o.geolocation, func() error { return c.Emulation.ClearGeolocationOverride(ctx) })
	do(o.network, func() error { return c.Network.Disable(ctx) })
	// The pointer stays where a click or hover left it, over the next render's page too, whose
	// element there would show its :hover style; a fresh tab's pointer is nowhere. Moved out of
	// the view, it is over nothing.
	do(o.pointer, func() error {
		return c.Input.DispatchMouseEvent(ctx, input.NewDispatchMouseEventArgs("mouseMoved", -1, -1))
	})
	do(o.autoAttach, func() error {
		return c.Target.SetAutoAttach(ctx, target.NewSetAutoAttachArgs(false, false))
	})
	return calls
}

// removeScripts removes the render's scripts for new documents (all at once) before the leave:
// the blank document would run them, and an html source written into it next keeps its window,
// with what they did to it (a replaced WebSocket, wrapped methods, the blocker's state).
func (t *tab) removeScripts(ctx context.Context) error {
	calls := make([]func() error, len(t.over.scripts))
	for i, id := range t.over.scripts {
		calls[i] = func() error {
			if err := t.c.Page.RemoveScriptToEvaluateOnNewDocument(ctx, page.NewRemoveScriptToEvaluateOnNewDocumentArgs(id)); err != nil {
				return fmt.Errorf("undo overrides: %w", err)
			}
			return nil
		}
	}
	if err := concurrently(calls); err != nil {
		return err
	}
	t.over.scripts = nil
	return nil
}

// drainLifecycle reads away the tab's buffered lifecycle events: the render reads its own
// ordered stream (mainNav), so the tab's long-lived one fills during a render until the wipe.
func drainLifecycle(t *tab) error {
	for {
		select {
		case <-t.lifecycle.Ready():
			if _, err := t.lifecycle.Recv(); err != nil {
				return err
			}
		default:
			return nil
		}
	}
}
