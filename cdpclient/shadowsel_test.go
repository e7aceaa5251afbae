package cdpclient

import (
	"net/http"
	"testing"
	"time"

	"github.com/shotd/shotd"
)

// shadowPage puts its content in open shadow roots: #box and #paint in #host's, #deep in the
// shadow root of <inner-x> inside it. A plain CSS selector reaches none of them.
const shadowPage = `<body style="margin:0;background:#fff"><div id=host></div><script>
const root = document.getElementById('host').attachShadow({mode: 'open'});
root.innerHTML = '<div class=wrap><div id=box style="width:120px;height:90px;background:#00f"></div>' +
	'<button id=paint style="display:block;width:100px;height:40px" onclick="event.isTrusted && (document.body.style.background = \'rgb(255, 0, 0)\')">p</button>' +
	'<inner-x id=inner style="display:block"></inner-x></div>';
root.getElementById('inner').attachShadow({mode: 'open'}).innerHTML =
	'<p id=deep style="margin:0;width:50px;height:60px;background:#0f0"></p>';
</script></body>`

// TestShadowSelectors: ScreenshotOne's shadow/ selectors reach into open shadow roots for
// selector, click, wait_for_selector and hide_selectors, a descendant chain crossing the
// boundaries of two roots included.
func TestShadowSelectors(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/", htmlPage(shadowPage))
	srv, _ := server(t, mux)
	size := func(t *testing.T, o *shotd.Options) (int, int) {
		b := decodePNG(t, mustRender(t, shared, o).Data).Bounds()
		return b.Dx(), b.Dy()
	}

	t.Run("selector", func(t *testing.T) {
		o := opts(srv.URL)
		o.Selector = "shadow/#box"
		if w, h := size(t, o); w != 120 || h != 90 {
			t.Errorf("%dx%d, want the 120x90 box", w, h)
		}
	})
	t.Run("selector chain across two roots", func(t *testing.T) {
		o := opts(srv.URL)
		o.Selector = "shadow/#host .wrap > inner-x #deep"
		if w, h := size(t, o); w != 50 || h != 60 {
			t.Errorf("%dx%d, want the 50x60 #deep", w, h)
		}
	})
	t.Run("wait_for_selector", func(t *testing.T) {
		o := opts(srv.URL)
		o.WaitForSelector = "shadow/#deep"
		mustRender(t, shared, o)
	})
	t.Run("wait_for_selector by count", func(t *testing.T) {
		o := opts(srv.URL)
		o.WaitForSelector, o.WaitForSelectorAlgorithm = "shadow/#deep, #box", "at_least_by_count"
		mustRender(t, shared, o)
	})
	t.Run("click", func(t *testing.T) {
		o := opts(srv.URL)
		o.Click = "shadow/#paint"
		if got := colourAt(t, o, 390, 5); got != red {
			t.Errorf("pixel %v, want red (clicked)", got)
		}
	})
	t.Run("hide_selectors", func(t *testing.T) {
		o := opts(srv.URL)
		if got := colourAt(t, o, 5, 5); got != blue {
			t.Fatalf("pixel %v, want the blue box shown", got)
		}
		o.HideSelectors = []string{"shadow/.wrap"}
		if got := colourAt(t, o, 5, 5); got != white {
			t.Errorf("pixel %v, want white (hidden)", got)
		}
	})
	t.Run("chain that does not hold", func(t *testing.T) {
		o := opts(srv.URL)
		o.Selector, o.Timeout = "shadow/.nothing #deep", 1500*time.Millisecond
		_, err := doRender(t, shared, o)
		wantCode(t, err, shotd.CodeSelectorNotFound)
	})
	t.Run("invalid", func(t *testing.T) {
		o := opts(srv.URL)
		o.Selector = "shadow/##x"
		_, err := doRender(t, shared, o)
		if e := wantCode(t, err, shotd.CodeInvalidOptions); len(e.Fields) != 1 || e.Fields[0].Field != "selector" {
			t.Errorf("fields %+v, want selector", e.Fields)
		}
	})
}
