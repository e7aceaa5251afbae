package cdpclient

import (
	"net/http"
	"testing"
	"time"

	"github.com/shotd/shotd"
)

// TestLoadDeadline: timeout bounds the loading of the page only. delay comes on top of it (also a
// delay longer than the timeout), the element of selector is still found after it, and a page
// that is not ready by the timeout fails then, not after the delay.
func TestLoadDeadline(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/box", htmlPage(`<div id="box" style="width:50px;height:40px;background:#f00"></div>`))
	srv, release := server(t, mux)
	mux.HandleFunc("/never", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})

	o := opts(srv.URL + "/box")
	o.Timeout, o.Delay, o.Selector = 3*time.Second, 3500*time.Millisecond, "#box"
	out := mustRender(t, shared, o)
	if out.Width != 50 || out.Height != 40 {
		t.Errorf("element capture is %dx%d, want 50x40", out.Width, out.Height)
	}
	if out.RenderMs < 3500 {
		t.Errorf("RenderMs %d, shorter than the delay", out.RenderMs)
	}

	o = opts(srv.URL + "/never")
	o.Timeout, o.Delay = time.Second, 20*time.Second
	start := time.Now()
	_, err := doRender(t, shared, o)
	wantCode(t, err, shotd.CodeTimeout)
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("a page that never loads failed after %s: the delay must not extend the timeout", took)
	}
}
