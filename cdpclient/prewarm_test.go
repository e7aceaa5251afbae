package cdpclient

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mafredri/cdp/protocol/browser"
	"github.com/mafredri/cdp/protocol/page"
	"github.com/mafredri/cdp/protocol/runtime"

	"github.com/shotd/shotd"
)

// TestDisposal: with context isolation, whatever its outcome, every render's browser context is
// disposed soon after it (the disposal waits for other loads, at most maxYield), and the pool is
// full again. TestWipe* cover the reuse of wipe isolation.
func TestDisposal(t *testing.T) {
	if shared.cfg.Isolation != IsolationContext {
		t.Skip("the shared browser reuses its tabs (wipe isolation); SHOTD_TEST_ISOLATION=context runs this")
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", htmlPage(`<p>hello</p>`))
	srv, _ := server(t, mux)
	quiet(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	contexts := func() []browser.ContextID {
		r, err := shared.browser.Target.GetBrowserContexts(ctx)
		if err != nil {
			t.Fatalf("get browser contexts: %v", err)
		}
		return r.BrowserContextIDs
	}
	before := contexts()

	var used []browser.ContextID
	testHookAfterStep = func(step string, tb *tab) {
		if step == "emulate" {
			used = append(used, tb.browserContext)
		}
	}
	defer func() { testHookAfterStep = nil }()
	for _, o := range []*shotd.Options{opts(srv.URL), opts(srv.URL), htmlOpts(`<p>x</p>`)} {
		mustRender(t, shared, o)
	}
	bad := opts(srv.URL)
	bad.WaitForSelector = "#never"
	bad.Timeout = time.Second
	if _, err := doRender(t, shared, bad); err == nil {
		t.Fatal("a render waiting for a missing element succeeded")
	}
	testHookAfterStep = nil
	if len(used) != 4 {
		t.Fatalf("%d renders seen, want 4", len(used))
	}

	deadline := time.Now().Add(5 * time.Second)
	for {
		now := contexts()
		left := slices.DeleteFunc(slices.Clone(used), func(id browser.ContextID) bool { return !slices.Contains(now, id) })
		if len(left) == 0 && len(shared.ready) == cap(shared.ready) && len(now) == len(before) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("contexts of renders still there: %v; %d of %d ready; %d contexts, %d before", left, len(shared.ready), cap(shared.ready), len(now), len(before))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestYieldToLoads: background work waits while a render loads its page, at most maxYield, and
// not at all when the pool it would refill is empty or the browser goes away.
func TestYieldToLoads(t *testing.T) {
	tests := []struct {
		name       string
		loading    int32
		ready      int // pre-warmed tabs in the pool
		whileReady bool
		closed     bool
		endAfter   time.Duration // the load ends after this long; 0: never
		wait       bool          // waits maxYield
	}{
		{name: "no load", ready: 1},
		{name: "a load", loading: 1, wait: true},
		{name: "a load that ends", loading: 1, endAfter: 20 * time.Millisecond},
		{name: "a load, refill, a tab ready", loading: 1, ready: 1, whileReady: true, wait: true},
		{name: "a load, refill, pool empty", loading: 1, whileReady: true},
		{name: "a load, browser closing", loading: 1, ready: 1, closed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			life, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			if tt.closed {
				cancel(errClosed)
			}
			p := &Process{life: life, ready: make(chan *tab, 1)}
			p.loading.Store(tt.loading)
			for range tt.ready {
				p.ready <- &tab{}
			}
			if tt.endAfter > 0 {
				time.AfterFunc(tt.endAfter, func() { p.loading.Store(0) })
			}
			start := time.Now()
			p.yieldToLoads(tt.whileReady)
			took := time.Since(start)
			switch {
			case tt.wait && (took < maxYield || took > maxYield+time.Second):
				t.Errorf("waited %v, want %v", took, maxYield)
			case !tt.wait && took > maxYield/2:
				t.Errorf("waited %v, want no wait", took)
			}
		})
	}
}

// TestWarmUp: a warmed tab's blank document is as it was (no element, no global), and a page
// loaded in it sees what it sees in a tab that was not warmed (history, paint entries): a render
// cannot tell a warmed tab from a new one.
func TestWarmUp(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/", htmlPage(`<p>hello</p>`))
	srv, _ := server(t, mux)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, html := range []bool{false, true} {
		var seen [2]string
		for i, warm := range []bool{false, true} {
			seen[i] = warmUpSeen(t, ctx, srv.URL, html, warm)
		}
		if seen[0] != seen[1] {
			t.Errorf("html %v: the page saw %s in a warmed tab, %s in a new one", html, seen[1], seen[0])
		}
	}
}

// warmUpSeen loads url (or writes a document, for html) in a new tab, warmed or not, and
// returns what the page sees of its history and performance entries.
func warmUpSeen(t *testing.T, ctx context.Context, url string, html, warm bool) string {
	t.Helper()
	const (
		blank = `JSON.stringify([document.documentElement.outerHTML, Object.keys(window).length, history.length])`
		// Entries whose number depends on timing are left out: long animation frames, say, and
		// Chrome's own favicon request, which comes sooner or later after the load.
		paged = `JSON.stringify([history.length, ...['paint', 'navigation', 'resource', 'mark', 'measure'].map(t =>
			performance.getEntriesByType(t).map(e => e.name).filter(n => !n.endsWith('/favicon.ico')))])`
	)
	tb, err := shared.newTab(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer shared.disposeTab(tb)
	eval := func(expr string) string {
		t.Helper()
		r, err := tb.c.Runtime.Evaluate(ctx, runtime.NewEvaluateArgs(expr).SetReturnByValue(true))
		if err != nil || r.ExceptionDetails != nil {
			t.Fatalf("evaluate %s: %v %v", expr, err, r.ExceptionDetails)
		}
		return string(r.Result.Value)
	}
	if warm {
		before := eval(blank)
		if err := tb.warmUp(ctx); err != nil {
			t.Fatalf("warm up: %v", err)
		}
		if after := eval(blank); after != before {
			t.Errorf("warm-up left a trace: %s, before %s", after, before)
		}
	}
	if html {
		if err := tb.c.Page.SetDocumentContent(ctx, page.NewSetDocumentContentArgs(tb.frameID, `<p>hello</p>`)); err != nil {
			t.Fatalf("set document content: %v", err)
		}
	} else {
		nav, err := tb.c.Page.Navigate(ctx, page.NewNavigateArgs(url))
		if err != nil || nav.ErrorText != nil && *nav.ErrorText != "" {
			t.Fatalf("navigate: %v %v", err, nav)
		}
	}
	for eval(`document.readyState`) != `"complete"` {
		time.Sleep(20 * time.Millisecond)
	}
	// Both paint entries come, in either tab, once the page has been drawn.
	for deadline := time.Now().Add(5 * time.Second); eval(`performance.getEntriesByType('paint').length`) != "2" && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	return eval(paged)
}

// TestPrewarmWarmsBehindAReadyTab: the pre-warmer warms a new tab only when another one is
// ready in the pool already; the tab that refills an empty pool goes there unwarmed, as a render
// may be waiting for it. What tells them apart is the paint timing of the blank document: warmUp
// paints text in it, which records first-contentful-paint, while an unwarmed about:blank has
// painted nothing.
func TestPrewarmWarmsBehindAReadyTab(t *testing.T) {
	p := launchIsolated(t, 2, IsolationContext) // the pool holds Prewarm tabs, none reused
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	full := func(n int) func() bool { return func() bool { return len(p.ready) == n } }
	waitCond(t, "the pool to fill", 15*time.Second, full(2))
	// Both places taken: the launch's tabs, warmed or not, are out of the way, and each release
	// below gives the pre-warmer exactly one place to fill.
	a, b := mustAcquire(t, ctx, p), mustAcquire(t, ctx, p)
	p.release(a, false)
	waitCond(t, "a tab in the empty pool", 15*time.Second, full(1))
	p.release(b, false)
	waitCond(t, "a second tab beside it", 15*time.Second, full(2))

	first, second := mustAcquire(t, ctx, p), mustAcquire(t, ctx, p) // ready is FIFO
	defer p.release(first, false)
	defer p.release(second, false)
	if n := paintEntries(t, ctx, first); n != "[]" {
		t.Errorf("the tab made for an empty pool was warmed: its blank document has painted %s", n)
	}
	// warmUp returned after its capture, so the entries are there; the wait only spares a
	// slow machine a false alarm.
	waitCond(t, "first-contentful-paint in the blank document of the tab made beside a ready one (a warm-up)", 5*time.Second, func() bool {
		return strings.Contains(paintEntries(t, ctx, second), "first-contentful-paint")
	})
}

// mustAcquire takes a tab from p's pool; it fails the test when the pool was empty, as acquire
// then makes a tab of its own, which holds no place in the pool.
func mustAcquire(t *testing.T, ctx context.Context, p *Process) *tab {
	t.Helper()
	tb, err := p.acquire(ctx)
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	if !tb.slot {
		p.release(tb, false)
		t.Fatal("acquire made a new tab: the pool was empty")
	}
	return tb
}

// paintEntries returns the names of the paint timing entries of tb's document, as JSON.
func paintEntries(t *testing.T, ctx context.Context, tb *tab) string {
	t.Helper()
	r, err := tb.c.Runtime.Evaluate(ctx, runtime.NewEvaluateArgs(
		`JSON.stringify(performance.getEntriesByType('paint').map(e => e.name))`).SetReturnByValue(true))
	if err != nil || r.ExceptionDetails != nil {
		t.Fatalf("read paint entries: %v %v", err, r.ExceptionDetails)
	}
	var s string
	if err := json.Unmarshal(r.Result.Value, &s); err != nil {
		t.Fatalf("paint entries %s: %v", r.Result.Value, err)
	}
	return s
}

// TestReleaseRefillsBesideDisposal: release gives the pool its place back at once, so the
// replacement is made beside the disposal of the used tab, not after it. The disposal is held
// back by real means: after disposeGrace it yields while another render loads its page
// (yieldToLoads, up to maxYield), and render b's page keeps loading here until the test lets its
// image go. The pre-warmer does not yield then, as the pool is empty, and creating the browser
// context is its first call. So the replacement's context appears while the used one still
// exists; were the place given back only after the disposal, the used context would always be
// gone first.
func TestReleaseRefillsBesideDisposal(t *testing.T) {
	arrived := make(chan string, 2)
	let := map[string]chan struct{}{"a": make(chan struct{}), "b": make(chan struct{})}
	mux := http.NewServeMux()
	srv, done := server(t, mux)
	mux.HandleFunc("/page/{name}", func(w http.ResponseWriter, r *http.Request) {
		htmlPage(`<p>waiting</p><img src="/hold/`+r.PathValue("name")+`">`)(w, r)
	})
	mux.HandleFunc("/hold/{name}", func(w http.ResponseWriter, r *http.Request) {
		arrived <- r.PathValue("name")
		select {
		case <-let[r.PathValue("name")]:
		case <-r.Context().Done():
		case <-done:
		}
	})
	p := launchIsolated(t, 1, IsolationContext) // every used tab disposed
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	contexts := func() []browser.ContextID {
		t.Helper()
		r, err := p.browser.Target.GetBrowserContexts(ctx)
		if err != nil {
			t.Fatalf("get browser contexts: %v", err)
		}
		return r.BrowserContextIDs
	}
	waitCond(t, "the pool to fill", 15*time.Second, func() bool { return len(p.ready) == 1 })
	// Nothing else takes from the pool, and the pre-warmer has no place to fill: look at the
	// ready tab and put it back.
	pooled := <-p.ready
	p.ready <- pooled
	used := pooled.browserContext

	results := make(chan error, 2)
	start := func(name string) {
		go func() {
			_, err := doRender(t, p, opts(srv.URL+"/page/"+name))
			results <- err
		}()
		select {
		case got := <-arrived:
			if got != name {
				t.Fatalf("render %s's image arrived, want %s's", got, name)
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("render %s's page never asked for its image", name)
		}
	}
	start("a") // takes the pooled tab
	start("b") // the pool is empty: a tab of its own, outside the pool
	if len(p.ready) != 0 {
		t.Fatalf("%d tabs ready while render a holds the only place", len(p.ready))
	}
	known := contexts()
	if !slices.Contains(known, used) {
		t.Fatalf("the pooled tab's context %s is not among %v", used, known)
	}

	close(let["a"]) // render a ends; b still loads, which holds a's disposal back
	var created browser.ContextID
	waitCond(t, "the replacement's browser context", 15*time.Second, func() bool {
		now := contexts()
		for _, id := range now {
			if !slices.Contains(known, id) {
				created = id
				if !slices.Contains(now, used) {
					t.Fatalf("the replacement's context %s appeared only after the used one %s was disposed", id, used)
				}
				return true
			}
		}
		return false
	})
	if err := <-results; err != nil {
		t.Fatalf("render a: %v", err)
	}
	waitCond(t, "the pool to refill", 15*time.Second, func() bool { return len(p.ready) == 1 })
	refill := <-p.ready
	p.ready <- refill
	if refill.browserContext != created {
		t.Errorf("the pool was refilled with context %s, want the new %s", refill.browserContext, created)
	}

	close(let["b"])
	if err := <-results; err != nil {
		t.Fatalf("render b: %v", err)
	}
	// The disposal was only put off: it still comes.
	waitCond(t, "the used context's disposal", 10*time.Second, func() bool { return !slices.Contains(contexts(), used) })
}

// waitCond polls cond until it holds, and fails the test when it does not within the bound.
func waitCond(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
