package cdpclient

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/mafredri/cdp/protocol/browser"

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
