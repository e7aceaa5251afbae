package cdpclient

import (
	"archive/zip"
	"bytes"
	"fmt"
	"image"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mafredri/cdp/protocol/network"

	"github.com/shotd/shotd"
)

// Tests of the ScreenshotOne options that act in the render (s1render.go).

func TestS1Metadata(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("X-Shotd-Test", "yes")
		w.WriteHeader(http.StatusNonAuthoritativeInfo)
		w.Write([]byte(`<!doctype html><html><head><title>The title</title>
<meta property="og:title" content="OG title"><meta property="og:image" content="/og.png">
<link rel="icon" type="image/png" href="/icon.png">
</head><body style="font-family: 'DejaVu Serif', serif"><h1>Hello <em>there</em></h1><p>Some text.</p></body></html>`))
	})
	srv, _ := server(t, mux)
	o := opts(srv.URL + "/")
	o.S1.MetaPageTitle, o.S1.MetaOpenGraph, o.S1.MetaIcon, o.S1.MetaFonts = true, true, true, true
	o.S1.MetaStatusCode, o.S1.MetaHeaders, o.S1.MetaImageSize, o.S1.MetaContent = true, true, true, true
	o.S1.MetaContentFormat = "markdown"
	out := mustRender(t, shared, o)
	m := out.Metadata
	if m == nil {
		t.Fatal("no metadata")
	}
	if m.PageTitle == nil || *m.PageTitle != "The title" {
		t.Errorf("page_title = %v", m.PageTitle)
	}
	if m.OpenGraph["title"] != "OG title" || m.OpenGraph["image"] != "/og.png" {
		t.Errorf("open_graph = %v", m.OpenGraph)
	}
	if m.Icon == nil || m.Icon.URL != srv.URL+"/icon.png" || m.Icon.Type != "image/png" {
		t.Errorf("icon = %+v", m.Icon)
	}
	if !strings.Contains(strings.Join(m.Fonts, ","), "DejaVu Serif") {
		t.Errorf("fonts = %v", m.Fonts)
	}
	if m.HTTPResponseStatusCode != http.StatusNonAuthoritativeInfo {
		t.Errorf("status = %d", m.HTTPResponseStatusCode)
	}
	if m.HTTPResponseHeaders["x-shotd-test"] != "yes" {
		t.Errorf("headers = %v", m.HTTPResponseHeaders)
	}
	if m.ImageSize == nil || m.ImageSize.Width != out.Width || m.ImageSize.Height != out.Height || out.Width != 400 {
		t.Errorf("image_size = %+v, image %dx%d", m.ImageSize, out.Width, out.Height)
	}
	if m.Content == nil || len(out.Extras) != 1 || m.Content.Extra != 0 {
		t.Fatalf("content = %+v, %d extras", m.Content, len(out.Extras))
	}
	md := string(out.Extras[0].Data)
	if !strings.Contains(md, "# Hello *there*") || !strings.Contains(md, "Some text.") || strings.Contains(md, "<h1>") {
		t.Errorf("markdown content = %q", md)
	}
	if out.Extras[0].ContentType != "text/markdown; charset=utf-8" {
		t.Errorf("content type = %q", out.Extras[0].ContentType)
	}
}

func TestS1ContentShadowDOM(t *testing.T) {
	t.Parallel()
	page := `<!doctype html><body><div id=host></div><p>outside</p>
<script>document.getElementById('host').attachShadow({mode: 'open'}).innerHTML = '<p>inside the ' + 'shadow</p>';</script></body>`
	for _, shadow := range []bool{false, true} {
		o := htmlOpts(page)
		o.S1.MetaContent, o.S1.MetaContentFormat, o.S1.IncludeShadowDOM = true, "html", shadow
		out := mustRender(t, shared, o)
		if len(out.Extras) != 1 {
			t.Fatalf("%d extras", len(out.Extras))
		}
		html := string(out.Extras[0].Data)
		if !strings.Contains(html, "outside") || strings.Contains(html, "inside the shadow") != shadow {
			t.Errorf("include_shadow_dom=%v: content %q", shadow, html)
		}
	}
}

// tallPage is 1000 CSS px high: 10 bands of 100 px, band i filled with grey level 20*i, and a
// red fixed header of 20 px.
const tallPage = `<!doctype html><style>body{margin:0} div.b{height:100px}
#hdr{position:fixed;top:0;left:0;right:0;height:20px;background:rgb(255,0,0)}</style><body>
<div id=hdr></div>
<div class=b style="background:rgb(0,0,0)"></div><div class=b style="background:rgb(20,20,20)"></div>
<div class=b style="background:rgb(40,40,40)"></div><div class=b style="background:rgb(60,60,60)"></div>
<div class=b style="background:rgb(80,80,80)"></div><div class=b style="background:rgb(100,100,100)"></div>
<div class=b style="background:rgb(120,120,120)"></div><div class=b style="background:rgb(140,140,140)"></div>
<div class=b style="background:rgb(160,160,160)"></div><div class=b style="background:rgb(180,180,180)"></div></body>`

func TestS1Slices(t *testing.T) {
	t.Parallel()
	o := htmlOpts(tallPage)
	o.FullPage, o.ResponseType = true, "json"
	o.S1.Slices, o.S1.SliceHeight, o.S1.SliceOverlap = true, 400, 100
	out := mustRender(t, shared, o)
	if out.Width != 400 || out.Height != 1000 {
		t.Fatalf("image %dx%d, want 400x1000", out.Width, out.Height)
	}
	want := []struct{ y, h int }{{0, 400}, {300, 400}, {600, 400}}
	if len(out.Slices) != len(want) {
		t.Fatalf("%d slices, want %d: %+v", len(out.Slices), len(want), out.Slices)
	}
	for i, s := range out.Slices {
		if s.Index != i || s.OffsetY != want[i].y || s.Height != want[i].h || s.Width != 400 {
			t.Errorf("slice %d = %+v, want offset %d height %d", i, s, want[i].y, want[i].h)
		}
		img := decodePNG(t, out.Extras[s.Extra].Data)
		if b := img.Bounds(); b.Dx() != 400 || b.Dy() != want[i].h {
			t.Errorf("slice %d image %v", i, b)
		}
		// Its first band below the header is band offset/100.
		if got, band := rgbAt(img, 200, 50), uint8(20*(want[i].y/100)); got != [3]uint8{band, band, band} && i > 0 {
			t.Errorf("slice %d at y=50: %v, want grey %d", i, got, band)
		}
	}

	o.ResponseType = "by_format"
	out = mustRender(t, shared, o)
	if out.ContentType != "application/zip" || len(out.Slices) != 0 {
		t.Fatalf("by_format: content type %q, %d slices", out.ContentType, len(out.Slices))
	}
	zr, err := zip.NewReader(bytes.NewReader(out.Data), int64(len(out.Data)))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := image.DecodeConfig(rc); err != nil {
			t.Errorf("%s: %v", f.Name, err)
		}
		rc.Close()
	}
	if strings.Join(names, " ") != "slice-000.png slice-001.png slice-002.png" {
		t.Errorf("zip holds %v", names)
	}
}

// TestS1BySections: by_sections captures the viewport at each position, so the fixed header
// shows at the top of every section; the default capture has it once.
func TestS1BySections(t *testing.T) {
	t.Parallel()
	for _, alg := range []string{"default", "by_sections"} {
		o := htmlOpts(tallPage)
		o.FullPage, o.S1.FullPageAlgorithm = true, alg
		img := decodePNG(t, mustRender(t, shared, o).Data)
		if b := img.Bounds(); b.Dy() != 1000 {
			t.Fatalf("%s: height %d", alg, b.Dy())
		}
		red := [3]uint8{255, 0, 0}
		if got := rgbAt(img, 200, 5); got != red {
			t.Errorf("%s: top %v, want the red header", alg, got)
		}
		if got := rgbAt(img, 200, 305); (got == red) != (alg == "by_sections") {
			t.Errorf("%s: y=305 (second section's top) is %v", alg, got)
		}
		if got := rgbAt(img, 200, 350); got != [3]uint8{60, 60, 60} {
			t.Errorf("%s: y=350 is %v, want band 3", alg, got)
		}
	}
}

// TestS1ScrollBy: full_page_scroll_by sets the step of the scroll; the page reports every
// position it is scrolled to.
func TestS1ScrollBy(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := map[int]bool{}
	mux := http.NewServeMux()
	mux.HandleFunc("/", htmlPage(`<!doctype html><body style="margin:0;height:1000px">
<script>addEventListener('scroll', () => navigator.sendBeacon('/y?v=' + Math.round(scrollY)));</script></body>`))
	mux.HandleFunc("/y", func(w http.ResponseWriter, r *http.Request) {
		v, _ := strconv.Atoi(r.URL.Query().Get("v"))
		mu.Lock()
		seen[v] = true
		mu.Unlock()
	})
	srv, _ := server(t, mux)
	o := opts(srv.URL + "/")
	o.FullPage, o.FullPageScroll, o.S1.FullPageScrollBy = true, true, 150
	mustRender(t, shared, o)
	// The beacons of the scroll may still be on their way after the answer.
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		ok := seen[150] && seen[300] && seen[450]
		got := len(seen)
		mu.Unlock()
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("scroll positions seen: %d, missing 150, 300 or 450 (%v)", got, seen)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestS1ScrollDelay: full_page_scroll_delay holds each scroll step for that long. The page
// stamps each scroll event with its own clock (performance.now), so the gaps are measured in page
// time, and only from below: a timer never fires early, and without the delay a step follows the
// last one within a few frames.
func TestS1ScrollDelay(t *testing.T) {
	t.Parallel()
	const delay = 400 * time.Millisecond
	var mu sync.Mutex
	at := map[int]float64{} // scroll position -> page time of its first scroll event, in ms
	mux := http.NewServeMux()
	mux.HandleFunc("/", htmlPage(`<!doctype html><body style="margin:0;height:1000px">
<script>addEventListener('scroll', () => navigator.sendBeacon('/y?v=' + Math.round(scrollY) + '&t=' + performance.now()));</script></body>`))
	mux.HandleFunc("/y", func(w http.ResponseWriter, r *http.Request) {
		v, _ := strconv.Atoi(r.URL.Query().Get("v"))
		ms, _ := strconv.ParseFloat(r.URL.Query().Get("t"), 64)
		mu.Lock()
		if old, ok := at[v]; !ok || ms < old {
			at[v] = ms
		}
		mu.Unlock()
	})
	srv, _ := server(t, mux)
	o := opts(srv.URL + "/")
	o.FullPage, o.FullPageScroll, o.S1.FullPageScrollBy, o.S1.FullPageScrollDelay = true, true, 150, delay
	mustRender(t, shared, o)
	steps := []int{150, 300, 450, 600}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := 0
		for _, y := range steps {
			if _, ok := at[y]; ok {
				n++
			}
		}
		mu.Unlock()
		if n == len(steps) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("scroll positions seen: %v, want %v", at, steps)
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	// A little under the delay: the page's clock is coarsened to a tenth of a millisecond.
	const least = float64(delay/time.Millisecond) - 1
	for i := 1; i < len(steps); i++ {
		if gap := at[steps[i]] - at[steps[i-1]]; gap < least {
			t.Errorf("scroll to %d came %.1f ms after the scroll to %d, want at least %v", steps[i], gap, steps[i-1], delay)
		}
	}
}

func TestS1NavigationTimeout(t *testing.T) {
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
	o.S1.NavigationTimeout = 20 * time.Second
	o.WaitUntil = shotd.WaitDOMContentLoaded
	mustRender(t, shared, o)

	o = opts(srv.URL + "/")
	o.S1.NavigationTimeout = time.Second
	_, err := doRender(t, shared, o)
	e := wantCode(t, err, shotd.CodeTimeout)
	if !strings.Contains(e.Message, "navigation_timeout") {
		t.Errorf("message %q does not name navigation_timeout", e.Message)
	}
}

// TestS1ScriptsWaitUntil: networkidle0 waits for what the scripts fetch.
func TestS1ScriptsWaitUntil(t *testing.T) {
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
	o.S1.ScriptsWaitUntil = []string{"networkidle0"}
	img := decodePNG(t, mustRender(t, shared, o).Data)
	if got := rgbAt(img, 10, 10); got != [3]uint8{255, 0, 0} {
		t.Errorf("pixel %v: the capture did not wait for the scripts' fetch", got)
	}
}

// TestS1WaitForSelectorByCount: at_least_by_count waits for every selector of the list.
func TestS1WaitForSelectorByCount(t *testing.T) {
	t.Parallel()
	page := `<!doctype html><body style="margin:0"><div id=a style="height:10px">a</div>
<script>setTimeout(() => { const b = document.createElement('div'); b.id = 'b';
b.style.cssText = 'height:200px;background:rgb(255,0,0)'; document.body.appendChild(b); }, 500);</script></body>`
	o := htmlOpts(page)
	o.WaitForSelector, o.S1.WaitForSelectorAlgorithm = "#a, #b", "at_least_by_count"
	img := decodePNG(t, mustRender(t, shared, o).Data)
	if got := rgbAt(img, 10, 50); got != [3]uint8{255, 0, 0} {
		t.Errorf("pixel %v: #b was not waited for", got)
	}
	if got := splitSelectorList(`a[title="x,y"], :is(b, c) , d`); strings.Join(got, "|") != `a[title="x,y"]|:is(b, c)|d` {
		t.Errorf("split = %q", got)
	}
}

// TestS1SelectorNoScroll: selector_scroll_into_view=false leaves the page where it is; the page
// turns red once scrolled.
func TestS1SelectorNoScroll(t *testing.T) {
	t.Parallel()
	page := `<!doctype html><body style="margin:0;height:3000px;background:#fff">
<div id=el style="position:absolute;top:2000px;width:100px;height:100px"></div>
<script>addEventListener('scroll', () => { document.body.style.background = 'rgb(255,0,0)'; });</script></body>`
	for _, noScroll := range []bool{false, true} {
		o := htmlOpts(page)
		o.Selector, o.S1.SelectorNoScroll = "#el", noScroll
		img := decodePNG(t, mustRender(t, shared, o).Data)
		if red := rgbAt(img, 50, 50) == [3]uint8{255, 0, 0}; red == noScroll {
			t.Errorf("selector_scroll_into_view=%v: scrolled = %v", !noScroll, red)
		}
	}
}

func TestS1FailIfRequestFailed(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("/broken.png", func(w http.ResponseWriter, r *http.Request) {
		// The connection closes without an answer: a network failure (ERR_EMPTY_RESPONSE).
		c, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			c.Close()
		}
	})
	srv, _ := server(t, mux)
	mux.HandleFunc("/", htmlPage(`<!doctype html><body><img src="/broken.png"></body>`))
	o := opts(srv.URL + "/")
	o.S1.FailIfRequestFailed = []string{srv.URL + "/*.png"}
	_, err := doRender(t, shared, o)
	e := wantCode(t, err, shotd.CodeNavigationFailed)
	if !strings.Contains(e.Message, "fail_if_request_failed") || !strings.Contains(e.Message, "/broken.png") {
		t.Errorf("message %q", e.Message)
	}
	o = opts(srv.URL + "/")
	o.S1.FailIfRequestFailed = []string{"*/other.png"}
	mustRender(t, shared, o)
}

func TestS1BlockSocials(t *testing.T) {
	t.Parallel()
	page := `<!doctype html><body style="margin:0;background:#fff"><blockquote class="twitter-tweet" style="margin:0;height:100px;background:rgb(255,0,0)"></blockquote></body>`
	for _, block := range []bool{false, true} {
		o := htmlOpts(page)
		o.S1.BlockSocials = block
		img := decodePNG(t, mustRender(t, shared, o).Data)
		if red := rgbAt(img, 10, 10) == [3]uint8{255, 0, 0}; red == block {
			t.Errorf("block_socials=%v: the embed shows = %v", block, red)
		}
	}
	o := htmlOpts(page)
	o.S1.BlockSocials = true
	rr := newRequestRules(o, nil)
	for u, want := range map[string]bool{
		"https://platform.twitter.com/widgets.js":            true,
		"https://connect.facebook.net/en_US/sdk.js":          true,
		"https://www.facebook.com/plugins/like.php?href=x":   true,
		"https://www.instagram.com/embed.js":                 true,
		"https://example.com/twitter.js":                     false,
		"https://www.facebook.com/somepage":                  false,
		"https://static.example.org/platform.twitter.com.js": false,
	} {
		if got := rr.blocks(u, network.ResourceTypeScript, false, ""); got != want {
			t.Errorf("blocks(%s) = %v, want %v", u, got, want)
		}
	}
}

func TestS1BannersByHeuristics(t *testing.T) {
	t.Parallel()
	page := `<!doctype html><body style="margin:0;background:#fff;height:2000px">
<header style="position:fixed;top:0;left:0;right:0;height:40px;background:rgb(0,0,255)"><nav>menu</nav></header>
<div style="position:fixed;bottom:0;left:0;right:0;height:60px;background:rgb(255,0,0)">We use cookies</div></body>`
	for _, block := range []bool{false, true} {
		o := htmlOpts(page)
		o.S1.BlockBannersByHeuristics = block
		img := decodePNG(t, mustRender(t, shared, o).Data)
		if red := rgbAt(img, 200, 280) == [3]uint8{255, 0, 0}; red == block {
			t.Errorf("block_banners_by_heuristics=%v: the banner shows = %v", block, red)
		}
		if got := rgbAt(img, 200, 10); got != [3]uint8{0, 0, 255} {
			t.Errorf("block_banners_by_heuristics=%v: the header is %v, want kept", block, got)
		}
	}
}

// TestS1SlicesBounded: a page whose height makes more than shotd.MaxSlices slices, or slices
// holding more than the capture's pixel cap, fails the render with content_too_large, refused
// from the image's size before any slice is encoded (2,001 slices at a 1 px step once took
// seconds and held them all in memory).
func TestS1SlicesBounded(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name            string
		pageHeight      int
		height, overlap int
	}{
		{"2001 slices at a 1 px step", 3000, 1000, 999},
		{"overlaps past the pixel cap", 20000, 16000, 15800},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := htmlOpts(fmt.Sprintf(`<!doctype html><body style="margin:0"><div style="height:%dpx;background:#888"></div>`, c.pageHeight))
			o.FullPage, o.ResponseType = true, "json"
			o.S1.Slices, o.S1.SliceHeight, o.S1.SliceOverlap = true, c.height, c.overlap
			_, err := doRender(t, shared, o)
			wantCode(t, err, shotd.CodeContentTooLarge)
		})
	}
}
