package cdpclient

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/mafredri/cdp/protocol/browser"
	"github.com/mafredri/cdp/protocol/page"
	"github.com/mafredri/cdp/protocol/runtime"

	"github.com/shotd/shotd"
)

// TestDisposal: whatever its outcome, every render's browser context is disposed soon after it
// (the disposal waits for other loads, at most maxYield), and the pool is full again.
func TestDisposal(t *testing.T) {
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
