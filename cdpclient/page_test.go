package cdpclient

import (
	"fmt"
	"image"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shotd/shotd"
)

// colourAt renders o and returns the colour of the pixel at (x, y).
func colourAt(t *testing.T, o *shotd.Options, x, y int) [3]uint8 {
	t.Helper()
	return rgbAt(decodePNG(t, mustRender(t, shared, o).Data), x, y)
}

func TestMediaEmulation(t *testing.T) {
	page := `<style>
body { margin: 0; background: #fff; }
@media (prefers-color-scheme: dark) { body { background: #000; } }
#motion { height: 50px; background: #f00; }
@media (prefers-reduced-motion: reduce) { #motion { background: #0f0; } }
@media print { #media { background: #00f; } }
#media { height: 50px; }
</style><div id=motion></div><div id=media></div>`
	tests := []struct {
		name      string
		dark      bool
		reduced   bool
		media     string
		bg        [3]uint8 // at (200, 200)
		motion    [3]uint8 // at (200, 25)
		mediaCell [3]uint8 // at (200, 75)
	}{
		{name: "defaults", bg: white, motion: red, mediaCell: white},
		{name: "dark mode", dark: true, bg: black, motion: red, mediaCell: black},
		{name: "reduced motion", reduced: true, bg: white, motion: green, mediaCell: white},
		{name: "print media", media: "print", bg: white, motion: red, mediaCell: blue},
		{name: "all", dark: true, reduced: true, media: "print", bg: black, motion: green, mediaCell: blue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := htmlOpts(page)
			o.DarkMode, o.ReducedMotion, o.MediaType = tt.dark, tt.reduced, tt.media
			img := decodePNG(t, mustRender(t, shared, o).Data)
			wantPixels(t, img, map[image.Point][3]uint8{{200, 200}: tt.bg, {200, 25}: tt.motion, {200, 75}: tt.mediaCell})
		})
	}
}

func TestTimeZone(t *testing.T) {
	srv, b := reportServer(t,
		"tz", "Intl.DateTimeFormat().resolvedOptions().timeZone",
		"jan", "new Date(2024, 0, 15).getTimezoneOffset()",
		"jul", "new Date(2024, 6, 15).getTimezoneOffset()",
	)

	tests := []struct {
		name, tz, jan, jul string
	}{
		{"tokyo", "Asia/Tokyo", "-540", "-540"},
		{"new york", "America/New_York", "300", "240"},
		{"adelaide", "Australia/Adelaide", "-630", "-570"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := opts(srv.URL)
			o.TimeZone = tt.tz
			mustRender(t, shared, o)
			q, _ := b.last(t)
			if q.Get("tz") != tt.tz || q.Get("jan") != tt.jan || q.Get("jul") != tt.jul {
				t.Errorf("page saw zone %q offsets %s/%s, want %s %s/%s", q.Get("tz"), q.Get("jan"), q.Get("jul"), tt.tz, tt.jan, tt.jul)
			}
		})
	}
}

func TestWaitForSelector(t *testing.T) {
	mux := http.NewServeMux()
	// #late appears 700 ms after load, painting the page green.
	mux.HandleFunc("/late", htmlPage(`<body style="margin:0;background:#fff"><script>addEventListener('load', () => setTimeout(() =>
document.body.insertAdjacentHTML('beforeend', '<div id=late style="height:300px;background:#0f0"></div>'), 700))</script></body>`))
	// #shown is in the DOM from the start but hidden; it is revealed after 700 ms.
	mux.HandleFunc("/reveal", htmlPage(`<body style="margin:0;background:#fff"><div id=shown style="height:300px;background:#00f;visibility:hidden"></div>
<script>addEventListener('load', () => setTimeout(() => shown.style.visibility = 'visible', 700))</script></body>`))
	mux.HandleFunc("/hidden", htmlPage(`<body><div style="display:none"><p id=never>x</p></div><div id=empty></div></body>`))
	srv, _ := server(t, mux)

	tests := []struct {
		name string
		path string
		sel  string
		want [3]uint8
		code shotd.Code
	}{
		{name: "appears later", path: "/late", sel: "#late", want: green},
		{name: "becomes visible", path: "/reveal", sel: "#shown", want: blue},
		{name: "display none never visible", path: "/hidden", sel: "#never", code: shotd.CodeSelectorNotFound},
		{name: "empty box never visible", path: "/hidden", sel: "#empty", code: shotd.CodeSelectorNotFound},
		{name: "no match", path: "/hidden", sel: ".nothing", code: shotd.CodeSelectorNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := opts(srv.URL + tt.path)
			o.WaitForSelector = tt.sel
			o.Timeout = 2 * time.Second
			if tt.code != "" {
				o.Timeout = 1200 * time.Millisecond
			}
			if tt.code == "" {
				if got := colourAt(t, o, 200, 150); got != tt.want {
					t.Errorf("pixel %v, want %v", got, tt.want)
				}
				return
			}
			start := time.Now()
			_, err := doRender(t, shared, o)
			wantCode(t, err, tt.code)
			if took := time.Since(start); took < 900*time.Millisecond || took > 2500*time.Millisecond {
				t.Errorf("gave up after %v with a timeout of 1.2s", took)
			}
		})
	}
}

func TestHideSelectorsAndStyles(t *testing.T) {
	// 80 px boxes: .ad at load, .ad.late added 300 ms after load above it, #keep; the body's
	// own background below them from 240 px.
	page := `<style>body { margin: 0; background: #fff; } .ad { height: 80px; background: #f00; } #keep { height: 80px; background: #00f; }</style>
<div class=ad></div><div id=keep></div>
<script>addEventListener('load', () => setTimeout(() => document.body.insertAdjacentHTML('afterbegin',
'<div class="ad late"></div>'), 300))</script>`
	tests := []struct {
		name   string
		hide   []string
		styles string
		pixels map[image.Point][3]uint8
		field  string
	}{
		{name: "nothing hidden", pixels: map[image.Point][3]uint8{{200, 40}: red, {200, 120}: red, {200, 200}: blue, {200, 280}: white}},
		{name: "hidden now and later", hide: []string{".ad"}, pixels: map[image.Point][3]uint8{{200, 40}: blue, {200, 120}: white}},
		{name: "several selectors", hide: []string{".late", "#keep"}, pixels: map[image.Point][3]uint8{{200, 40}: red, {200, 120}: white}},
		{name: "styles", styles: "body { background: rgb(0, 255, 0); } .ad { height: 40px; }",
			pixels: map[image.Point][3]uint8{{200, 20}: red, {200, 60}: red, {200, 100}: blue, {200, 170}: green, {200, 290}: green}},
		{name: "invalid hide selector", hide: []string{".ad", "##bad"}, field: "hide_selectors"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := htmlOpts(page)
			o.HideSelectors, o.Styles = tt.hide, tt.styles
			o.Delay = 600 * time.Millisecond // the late box is in
			if tt.field != "" {
				_, err := doRender(t, shared, o)
				e := wantCode(t, err, shotd.CodeInvalidOptions)
				if len(e.Fields) != 1 || e.Fields[0].Field != tt.field || !strings.Contains(e.Fields[0].Message, "##bad") {
					t.Errorf("fields %+v", e.Fields)
				}
				return
			}
			wantPixels(t, decodePNG(t, mustRender(t, shared, o).Data), tt.pixels)
		})
	}
}

func TestScripts(t *testing.T) {
	page := `<body style="margin:0;background:#fff"><script>window.pageValue = 'rgb(0, 0, 255)';</script></body>`
	tests := []struct {
		name    string
		script  string
		want    [3]uint8
		message string // invalid_options: in the field message
	}{
		{name: "sync", script: `document.body.style.background = 'rgb(255, 0, 0)'`, want: red},
		{name: "sees the page", script: `document.body.style.background = window.pageValue`, want: blue},
		{name: "promise awaited", script: `new Promise(r => setTimeout(() => { document.body.style.background = 'rgb(0, 255, 0)'; r(); }, 400))`, want: green},
		{name: "top-level await", script: `await new Promise(r => setTimeout(r, 300)); document.body.style.background = 'rgb(0, 0, 0)';`, want: black},
		{name: "value that cannot be serialised", script: `document.body.style.background = 'rgb(255, 0, 0)'; window`, want: red},
		{name: "throws", script: `throw new Error('boom from the script')`, message: "Error: boom from the script"},
		{name: "rejects", script: `Promise.reject(new TypeError('nope'))`, message: "TypeError: nope"},
		{name: "throws a string", script: `throw 'plain'`, message: "plain"},
		{name: "syntax error", script: `let = = 1`, message: "SyntaxError"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := htmlOpts(page)
			o.Scripts = tt.script
			if tt.message != "" {
				_, err := doRender(t, shared, o)
				e := wantCode(t, err, shotd.CodeInvalidOptions)
				if len(e.Fields) != 1 || e.Fields[0].Field != "scripts" || !strings.Contains(e.Fields[0].Message, tt.message) {
					t.Errorf("fields %+v, want scripts with %q", e.Fields, tt.message)
				}
				return
			}
			if got := colourAt(t, o, 200, 150); got != tt.want {
				t.Errorf("pixel %v, want %v", got, tt.want)
			}
		})
	}
}

func TestScriptNavigates(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/", htmlPage(`<body style="background:#fff">start</body>`))
	mux.HandleFunc("/next", htmlPage(`<body style="background:#0f0">next</body>`))
	srv, _ := server(t, mux)
	o := opts(srv.URL + "/")
	o.Scripts = `location.href = '/next'`
	if got := colourAt(t, o, 200, 150); got != green {
		t.Errorf("pixel %v, want the next page's green", got)
	}
}

func TestClick(t *testing.T) {
	b := &beacon{}
	mux := http.NewServeMux()
	mux.Handle("/beacon", b)
	mux.HandleFunc("/", htmlPage(`<body style="margin:0;background:#fff">
<div style="height:1200px"></div>
<button id=paint style="width:100px;height:40px" onclick="event.isTrusted && (document.body.style.background = 'rgb(255, 0, 0)')">paint</button>
<a id=go href="/next">next</a>
<button id=fetch onclick="fetch('/slow').then(r => r.text()).then(t => document.body.style.background = t)">fetch</button>
</body>`))
	mux.HandleFunc("/next", htmlPage(`<body style="background:#00f">next</body>`))
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(400 * time.Millisecond)
		w.Write([]byte("rgb(0, 255, 0)"))
	})
	srv, _ := server(t, mux)

	tests := []struct {
		name string
		sel  string
		want [3]uint8
		code shotd.Code
	}{
		{name: "trusted click below the fold", sel: "#paint", want: red},
		{name: "navigating link", sel: "#go", want: blue},
		{name: "network settles", sel: "#fetch", want: green},
		{name: "no match", sel: "#missing", code: shotd.CodeSelectorNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := opts(srv.URL)
			o.Click = tt.sel
			if tt.code != "" {
				o.Timeout = 1500 * time.Millisecond
				_, err := doRender(t, shared, o)
				wantCode(t, err, tt.code)
				return
			}
			// The viewport after a click on an element below the fold shows the element's
			// neighbourhood; sample a corner, which is page background.
			if got := colourAt(t, o, 390, 5); got != tt.want {
				t.Errorf("pixel %v, want %v", got, tt.want)
			}
		})
	}
}

// TestUnderCSP: a strict Content-Security-Policy of the page does not stop the options that
// change it from the outside.
func TestUnderCSP(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; script-src 'none'")
		htmlPage(`<link rel=stylesheet href="/s.css"><div class=ad></div><div id=b></div>`)(w, r)
	})
	mux.HandleFunc("/s.css", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/css")
		w.Write([]byte("body { margin: 0 } .ad { height: 100px; background: #f00 } #b { height: 100px; background: #00f }"))
	})
	srv, _ := server(t, mux)
	o := opts(srv.URL)
	o.HideSelectors = []string{".ad"}
	o.Styles = "html, body { background: rgb(0, 255, 0) !important; }"
	o.Scripts = "document.getElementById('b').style.height = '50px'"
	o.Format = shotd.FormatWebP
	o.ImageWidth = 200
	img := decodeImage(t, shotd.FormatWebP, mustRender(t, shared, o).Data)
	if b := img.Bounds(); b.Dx() != 200 || b.Dy() != 150 {
		t.Fatalf("webp %dx%d, want 200x150", b.Dx(), b.Dy())
	}
	// Halved: the blue box (50 px after the script) at the top, the green page below.
	if got := rgbAt(img, 100, 10); !near(got, blue, 24) {
		t.Errorf("top %v, want blue (.ad hidden)", got)
	}
	if got := rgbAt(img, 100, 100); !near(got, green, 24) {
		t.Errorf("below %v, want green (styles)", got)
	}
}

// TestBrowserRejects: values the parser lets through but the browser refuses are invalid_options
// naming the option.
func TestBrowserRejects(t *testing.T) {
	tests := []struct {
		name  string
		set   func(o *shotd.Options)
		field string
	}{
		{"time zone", func(o *shotd.Options) { o.TimeZone = "Nowhere/Atlantis" }, "time_zone"},
		{"cookie without domain", func(o *shotd.Options) { o.Cookies = []shotd.Cookie{{Name: "a", Value: "b"}} }, "cookies"},
		{"invalid wait_for_selector", func(o *shotd.Options) { o.WaitForSelector = "a[" }, "wait_for_selector"},
		{"invalid click", func(o *shotd.Options) { o.Click = ":nope(" }, "click"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := htmlOpts(`<p>x</p>`)
			tt.set(o)
			_, err := doRender(t, shared, o)
			e := wantCode(t, err, shotd.CodeInvalidOptions)
			if len(e.Fields) != 1 || e.Fields[0].Field != tt.field {
				t.Errorf("fields %+v, want %s", e.Fields, tt.field)
			}
		})
	}
}

// TestStylesImport: @import rules in styles load, though constructed sheets ignore them: the
// imported sheet applies, before the user's own rules in the cascade, under a page whose
// Content-Security-Policy allows no style at all; a font that the import brings is in before the
// capture.
func TestStylesImport(t *testing.T) {
	var fontServed atomic.Bool
	mux := http.NewServeMux()
	mux.HandleFunc("/strict", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'none'")
		htmlPage(`<body style="margin:0"><p>strict</p></body>`)(w, r)
	})
	mux.HandleFunc("/plain", htmlPage(`<body style="margin:0"><p>plain</p></body>`))
	css := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/css")
			fmt.Fprint(w, body)
		}
	}
	mux.HandleFunc("/green.css", css("html, body { background: rgb(0, 255, 0) !important; }"))
	mux.HandleFunc("/red.css", css("html, body { background: rgb(255, 0, 0); }"))
	mux.HandleFunc("/font.css", css("@font-face { font-family: Slow; src: url(/slow.ttf); } p { font-family: Slow; }"))
	mux.HandleFunc("/slow.ttf", func(w http.ResponseWriter, r *http.Request) {
		font, err := os.ReadFile("/usr/share/fonts/truetype/liberation/LiberationMono-Regular.ttf")
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		w.Header().Set("Content-Type", "font/ttf")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		time.Sleep(500 * time.Millisecond) // a capture that does not wait for the font comes now
		fontServed.Store(true)             // before the body: a render that waited sees it set
		w.Write(font)
	})
	srv, _ := server(t, mux)
	tests := []struct {
		name, path, styles string
		want               [3]uint8
	}{
		{name: "import", path: "/plain", styles: `@import url("/green.css");`, want: green},
		{name: "import under a strict CSP", path: "/strict", styles: `@import "/green.css";`, want: green},
		{name: "own rules after the import", path: "/plain", styles: `@IMPORT url(/red.css); body { background: rgb(0, 0, 255) }`, want: blue},
		{name: "html source, absolute import", styles: `@import url("` + srv.URL + `/green.css");`, want: green},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := opts(srv.URL + tt.path)
			if tt.path == "" {
				o = htmlOpts(`<body style="margin:0"><p>html</p></body>`)
			}
			o.Styles = tt.styles
			wantPixels(t, decodePNG(t, mustRender(t, shared, o).Data), map[image.Point][3]uint8{{300, 250}: tt.want})
		})
	}
	t.Run("imported font loaded before the capture", func(t *testing.T) {
		o := opts(srv.URL + "/plain")
		o.Styles = `@import url(/font.css);`
		mustRender(t, shared, o)
		if !fontServed.Load() {
			t.Error("the capture did not wait for the font of the imported sheet")
		}
	})
}

// TestStylesAfterNavigation: a click that loads a new document gets hide_selectors and styles
// applied there too.
func TestStylesAfterNavigation(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/{$}", htmlPage(`<body style="margin:0"><a id=go href="/next" style="display:block;height:100px">next</a></body>`))
	mux.HandleFunc("/next", htmlPage(`<body style="margin:0"><div class=ad style="height:100px;background:#f00"></div><div style="height:100px;background:#00f"></div></body>`))
	srv, _ := server(t, mux)
	o := opts(srv.URL + "/")
	o.Click = "#go"
	o.HideSelectors = []string{".ad"}
	o.Styles = "html, body { background: rgb(0, 255, 0) !important; }"
	// .ad hidden: the blue box moves to the top; the page below it is green.
	wantPixels(t, decodePNG(t, mustRender(t, shared, o).Data), map[image.Point][3]uint8{{200, 50}: blue, {200, 150}: green})
}
