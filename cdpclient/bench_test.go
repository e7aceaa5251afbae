package cdpclient

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"
)

const benchPage = `<!doctype html><html><body><h1>bench</h1><p>A small page.</p></body></html>`

// benchServer serves benchPage at every path.
func benchServer(t testing.TB) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/", htmlPage(benchPage))
	srv, _ := server(t, mux)
	return srv
}

// BenchmarkRender: one full Render (fresh context, emulate, navigate, load, png) per op.
func BenchmarkRender(b *testing.B) {
	srv := benchServer(b)
	o := opts(srv.URL)
	o.ViewportWidth, o.ViewportHeight = 1280, 1024
	for b.Loop() {
		mustRender(b, shared, o)
	}
}

// BenchmarkRenderWarm: the latency of one Render when the pre-warmed pairs are ready, as at a
// request rate the pre-warmer keeps up with.
func BenchmarkRenderWarm(b *testing.B) {
	srv := benchServer(b)
	o := opts(srv.URL)
	o.ViewportWidth, o.ViewportHeight = 1280, 1024
	for b.Loop() {
		b.StopTimer()
		for len(shared.ready) < cap(shared.ready) {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(100 * time.Millisecond) // let the last disposal finish
		b.StartTimer()
		mustRender(b, shared, o)
	}
}

// TestPlainRenderCalls: a render that sets none of the page, area, output and blocking options
// sends Chrome nothing but the navigation and the capture (the viewport is the pre-warmed one),
// so that options cost only the renders that use them.
func TestPlainRenderCalls(t *testing.T) {
	srv := benchServer(t)
	// What the pre-warmer and the disposal send meanwhile on other connections.
	background := map[string]bool{
		"Target.createBrowserContext": true, "Target.createTarget": true, "Inspector.enable": true,
		"Page.enable": true, "Page.setLifecycleEventsEnabled": true, "Page.getFrameTree": true,
		"Emulation.setDeviceMetricsOverride": true, "Target.disposeBrowserContext": true,
	}
	for len(shared.ready) < cap(shared.ready) {
		time.Sleep(10 * time.Millisecond)
	}
	var mu sync.Mutex
	var sent []string
	hook := func(msg []byte) {
		var m struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(msg, &m) == nil && !background[m.Method] {
			mu.Lock()
			sent = append(sent, m.Method)
			mu.Unlock()
		}
	}
	testHookWrite.Store(&hook)
	o := opts(srv.URL)
	o.ViewportWidth, o.ViewportHeight = defaultWidth, defaultHeight
	o.MediaType, o.FullPageScroll, o.PDFPrintBackground = "screen", true, true // parser defaults that act only with their options
	mustRender(t, shared, o)
	testHookWrite.Store(nil)
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"Page.navigate", "Page.captureScreenshot"}; !slices.Equal(sent, want) {
		t.Errorf("a plain render sent %v, want %v", sent, want)
	}
}
