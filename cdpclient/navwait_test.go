package cdpclient

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shotd/shotd"
)

// Tests of navigation_timeout, scripts_wait_until and wait_for_selector_algorithm (navwait.go).

func TestNavigationTimeout(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	srv, release := server(t, mux)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		select { // never answers within the test
		case <-release:
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/fine", htmlPage(`<p>fine</p>`))
	// Within it: the render goes on past the navigation (its events are read in wait).
	o := opts(srv.URL + "/fine")
	o.NavigationTimeout = 20 * time.Second
	o.WaitUntil = shotd.WaitDOMContentLoaded
	mustRender(t, shared, o)

	o = opts(srv.URL + "/")
	o.NavigationTimeout = time.Second
	_, err := doRender(t, shared, o)
	e := wantCode(t, err, shotd.CodeTimeout)
	if !strings.Contains(e.Message, "navigation_timeout") {
		t.Errorf("message %q does not name navigation_timeout", e.Message)
	}
}

// TestScriptsWaitUntil: networkidle0 waits for what the scripts fetch.
func TestScriptsWaitUntil(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("/", htmlPage(`<!doctype html><body style="margin:0;background:#fff"></body>`))
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(700 * time.Millisecond)
		w.Write([]byte("ok"))
	})
	srv, _ := server(t, mux)
	o := opts(srv.URL + "/")
	o.Scripts = `fetch('/slow').then(r => r.text()).then(() => { document.body.style.background = 'rgb(255,0,0)'; })`
	o.ScriptsWaitUntil = []string{"networkidle0"}
	img := decodePNG(t, mustRender(t, shared, o).Data)
	if got := rgbAt(img, 10, 10); got != [3]uint8{255, 0, 0} {
		t.Errorf("pixel %v: the capture did not wait for the scripts' fetch", got)
	}
}

// TestWaitForSelectorByCount: at_least_by_count waits for every selector of the list.
func TestWaitForSelectorByCount(t *testing.T) {
	t.Parallel()
	page := `<!doctype html><body style="margin:0"><div id=a style="height:10px">a</div>
<script>setTimeout(() => { const b = document.createElement('div'); b.id = 'b';
b.style.cssText = 'height:200px;background:rgb(255,0,0)'; document.body.appendChild(b); }, 500);</script></body>`
	o := htmlOpts(page)
	o.WaitForSelector, o.WaitForSelectorAlgorithm = "#a, #b", "at_least_by_count"
	img := decodePNG(t, mustRender(t, shared, o).Data)
	if got := rgbAt(img, 10, 50); got != [3]uint8{255, 0, 0} {
		t.Errorf("pixel %v: #b was not waited for", got)
	}
	if got := splitSelectorList(`a[title="x,y"], :is(b, c) , d`); strings.Join(got, "|") != `a[title="x,y"]|:is(b, c)|d` {
		t.Errorf("split = %q", got)
	}
}
