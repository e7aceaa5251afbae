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

	"github.com/shotd/shotd"
)

// Tests of full_page_algorithm=by_sections and full_page_slices (fullpage.go).

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

func TestSlices(t *testing.T) {
	t.Parallel()
	o := htmlOpts(tallPage)
	o.FullPage, o.ResponseType = true, "json"
	o.Slices, o.SliceHeight, o.SliceOverlap = true, 400, 100
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

// TestBySections: by_sections captures the viewport at each position, so the fixed header
// shows at the top of every section; the default capture has it once.
func TestBySections(t *testing.T) {
	t.Parallel()
	for _, alg := range []string{"default", "by_sections"} {
		o := htmlOpts(tallPage)
		o.FullPage, o.FullPageAlgorithm = true, alg
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

// TestScrollBy: full_page_scroll_by sets the step of the scroll; the page reports every
// position it is scrolled to.
func TestScrollBy(t *testing.T) {
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
	o.FullPage, o.FullPageScroll, o.FullPageScrollBy = true, true, 150
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

// TestScrollDelay: full_page_scroll_delay holds each scroll step for that long. The page
// stamps each scroll event with its own clock (performance.now), so the gaps are measured in page
// time, and only from below: a timer never fires early, and without the delay a step follows the
// last one within a few frames.
func TestScrollDelay(t *testing.T) {
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
	o.FullPage, o.FullPageScroll, o.FullPageScrollBy, o.FullPageScrollDelay = true, true, 150, delay
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

// TestSlicesBounded: a page whose height makes more than shotd.MaxSlices slices, or slices
// holding more than the capture's pixel cap, fails the render with content_too_large, refused
// from the image's size before any slice is encoded (2,001 slices at a 1 px step once took
// seconds and held them all in memory).
func TestSlicesBounded(t *testing.T) {
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
			o.Slices, o.SliceHeight, o.SliceOverlap = true, c.height, c.overlap
			_, err := doRender(t, shared, o)
			wantCode(t, err, shotd.CodeContentTooLarge)
		})
	}
}

// seenBoxPage is 3000 CSS px high with a grey box at 2500 px that script turns green once it is
// in the viewport (the 300 px of opts), as a lazy loader would load it.
func seenBoxPage(script string) string {
	return `<!doctype html><body style="margin:0"><div style="height:2500px;background:#fff"></div>
<div id=box style="height:200px;background:#888"></div><div style="height:300px"></div>
<script>const inView = () => { const r = box.getBoundingClientRect(); return r.top < innerHeight && r.bottom > 0; };
const seen = () => { if (inView()) box.style.background = '#0f0'; };
` + script + `</script></body>`
}

// scrolledFullPage renders o as a full page with the lazy-load scroll and checks its height.
func scrolledFullPage(t *testing.T, o *shotd.Options, wantH int) image.Image {
	t.Helper()
	o.FullPage, o.FullPageScroll = true, true
	img := decodePNG(t, mustRender(t, shared, o).Data)
	if b := img.Bounds(); b.Dy() != wantH {
		t.Fatalf("height %d, want %d", b.Dy(), wantH)
	}
	return img
}

// TestFullPageScrollWatchers: the lazy-load scroll steps through every viewport whenever
// something of the page may react to it, whichever way it watches: an intersection observer the
// page kept no reference to (in a page of its own and in an html source), a scroll listener on
// the window or the document, an onscroll attribute, an observer in a frame (its scripts are not
// looked at; any frame makes the scroll step). Each page is captured whole, its box turned green.
func TestFullPageScrollWatchers(t *testing.T) {
	t.Parallel()
	pages := map[string]string{ // path: the page's way of watching
		"/observer":          `new IntersectionObserver(es => es.forEach(e => { if (e.isIntersecting) box.style.background = '#0f0'; })).observe(box);`,
		"/window-listener":   `addEventListener('scroll', seen);`,
		"/document-listener": `document.addEventListener('scroll', seen, {passive: true});`,
		"/onscroll":          `document.body.setAttribute('onscroll', 'seen()');`,
	}
	mux := http.NewServeMux()
	names := []string{"/frame"}
	for path, script := range pages {
		mux.HandleFunc(path, htmlPage(seenBoxPage(script)))
		names = append(names, path)
	}
	mux.HandleFunc("/frame", htmlPage(`<!doctype html><body style="margin:0;background:#fff"><div style="height:2500px"></div>
<iframe src="/framed" style="display:block;border:0;width:400px;height:200px"></iframe><div style="height:300px"></div></body>`))
	mux.HandleFunc("/framed", htmlPage(`<!doctype html><body style="margin:0"><div id=box style="height:200px;background:#888"></div>
<script>new IntersectionObserver(es => es.forEach(e => { if (e.isIntersecting) box.style.background = '#0f0'; })).observe(box);</script></body>`))
	srv, _ := server(t, mux)
	for _, path := range append(names, "html observer") {
		t.Run(strings.TrimPrefix(path, "/"), func(t *testing.T) {
			o := opts(srv.URL + path)
			if path == "html observer" { // the mark's script runs in an html source's document too
				o = htmlOpts(seenBoxPage(pages["/observer"]))
			}
			img := scrolledFullPage(t, o, 3000)
			if got := rgbAt(img, 200, 2600); got != green {
				t.Errorf("the box is %v, want green: the scroll did not reach it", got)
			}
		})
	}
}

// TestFullPageScrollWatchNative: while the lazy-load scroll watches a page, the methods it wraps
// still look native to the page (their source text, name and length), and still work: the
// page's observer sees the box the scroll reaches. Nor does the watch put a property or a
// symbol on the window once the page has observed and listened (red body).
func TestFullPageScrollWatchNative(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("/", htmlPage(seenBoxPage(`
const before = new Set(Object.keys(globalThis));
const native = (f, name, length) => /^function \w*\(\) \{\s*\[native code\]\s*\}$/.test(Function.prototype.toString.call(f)) &&
	f.name === name && f.length === length;
if (native(IntersectionObserver.prototype.observe, 'observe', 1) && native(EventTarget.prototype.addEventListener, 'addEventListener', 2)) {
	document.body.style.background = '#0f0';
}
new IntersectionObserver(es => es.forEach(e => { if (e.isIntersecting) box.style.background = '#0f0'; })).observe(box);
addEventListener('scroll', () => {});
if (Object.getOwnPropertySymbols(globalThis).length || Object.keys(globalThis).some(k => !before.has(k))) {
	document.body.style.background = '#f00';
}`)))
	srv, _ := server(t, mux)
	img := scrolledFullPage(t, opts(srv.URL), 3000)
	if got := rgbAt(img, 200, 2600); got != green {
		t.Errorf("the box is %v, want green: the scroll did not reach it", got)
	}
	if got := rgbAt(img, 200, 2900); got != green {
		t.Errorf("the body is %v, want green: a wrapped method does not look native to the page (white), or the watch marked the window (red)", got)
	}
}

// TestFullPageScrollLazyImages: on a page whose scripts do not watch the scroll, the steps are
// longer than the viewport by less than Chrome's reach for lazy images, so that each of the 20
// lazy images spread down the page is loaded and captured.
func TestFullPageScrollLazyImages(t *testing.T) {
	t.Parallel()
	const n, gap = 20, 290
	var b strings.Builder
	fmt.Fprintf(&b, `<!doctype html><body style="margin:0;background:#fff;position:relative;height:%dpx">`, (n+2)*gap)
	for i := range n {
		fmt.Fprintf(&b, `<img loading=lazy src="/red.svg?%d" width=100 height=100 style="position:absolute;left:0;top:%dpx">`, i, (i+1)*gap)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", htmlPage(b.String()))
	mux.HandleFunc("/red.svg", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/svg+xml")
		fmt.Fprint(w, `<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100"><rect width="100" height="100" fill="#f00"/></svg>`)
	})
	srv, _ := server(t, mux)
	img := scrolledFullPage(t, opts(srv.URL), (n+2)*gap)
	for i := range n {
		if got := rgbAt(img, 50, (i+1)*gap+50); got != red {
			t.Errorf("lazy image %d at %d px is %v, want red", i, (i+1)*gap, got)
		}
	}
}

// TestFullPageScrollSkipped: a page with nothing that reacts to the scroll (no observer, no
// scroll listener, no lazy image, no frame) is not scrolled at all. The page polls scrollY on
// every animation frame (a way of watching the scroll that is not looked for) and paints a black
// bar at its top once it has seen the page scrolled.
func TestFullPageScrollSkipped(t *testing.T) {
	t.Parallel()
	img := scrolledFullPage(t, htmlOpts(scrollPollPage("")), 5010)
	if got := rgbAt(img, 200, 5); got != white {
		t.Errorf("the bar is %v: the page was scrolled", got)
	}
}

// TestFullPageScrollObserveReplaced: a page that replaced IntersectionObserver's observe by a
// function that does not pass on what it returns gives the scroll no answer from the watch; it
// is scrolled as a page that watches would be (the bar turns black), not skipped.
func TestFullPageScrollObserveReplaced(t *testing.T) {
	t.Parallel()
	img := scrolledFullPage(t, htmlOpts(scrollPollPage(`const orig = IntersectionObserver.prototype.observe;
IntersectionObserver.prototype.observe = function (el) { orig.call(this, el); };`)), 5010)
	if got := rgbAt(img, 200, 5); got != black {
		t.Errorf("the bar is %v, want black: the page was not scrolled", got)
	}
}

// scrollPollPage is a page 5,010 px tall that polls scrollY on every animation frame and paints
// the bar at its top black once it has seen the page scrolled; script runs first.
func scrollPollPage(script string) string {
	return `<!doctype html><body style="margin:0;background:#fff"><div id=bar style="height:10px;background:#fff"></div>
<div style="height:5000px"></div><script>` + script + `
const poll = () => { if (scrollY > 0) bar.style.background = '#000'; else requestAnimationFrame(poll); };
requestAnimationFrame(poll);
</script></body>`
}
