package cdpclient

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shotd/shotd"
)

var (
	red   = [3]uint8{255, 0, 0}
	green = [3]uint8{0, 255, 0}
	blue  = [3]uint8{0, 0, 255}
	white = [3]uint8{255, 255, 255}
	black = [3]uint8{0, 0, 0}
)

// bandPage is a page of n bands of h CSS px each, band i painted bandColor(i).
func bandPage(n, h int) string {
	var b strings.Builder
	b.WriteString(`<!doctype html><html><body style="margin:0">`)
	for i := range n {
		c := bandColor(i)
		fmt.Fprintf(&b, `<div style="height:%dpx;background:rgb(%d,%d,%d)"></div>`, h, c[0], c[1], c[2])
	}
	b.WriteString(`</body></html>`)
	return b.String()
}

func bandColor(i int) [3]uint8 {
	return [3]uint8{uint8(40 + (i*37)%200), uint8(40 + (i*91)%200), uint8(40 + (i*53)%200)}
}

// wantPixels checks the colour at each point.
func wantPixels(t *testing.T, img image.Image, points map[image.Point][3]uint8) {
	t.Helper()
	for p, want := range points {
		if got := rgbAt(img, p.X, p.Y); got != want {
			t.Errorf("pixel %v = %v, want %v", p, got, want)
		}
	}
}

func TestFullPage(t *testing.T) {
	mux := http.NewServeMux()
	// Red top half, blue bottom half, 3000 CSS px in all.
	mux.HandleFunc("/halves", htmlPage(`<body style="margin:0"><div style="height:1500px;background:#f00"></div><div style="height:1500px;background:#00f"></div></body>`))
	// A box at 2500 px turns green once it has been seen in the viewport, like a lazy image.
	mux.HandleFunc("/lazy", htmlPage(`<body style="margin:0"><div style="height:2500px;background:#fff"></div>
<div id=lazy style="height:200px;background:#888"></div><div style="height:300px"></div>
<script>new IntersectionObserver(es => es.forEach(e => { if (e.isIntersecting) e.target.style.background = '#0f0'; })).observe(lazy);</script></body>`))
	// Infinite scroll: each time the sentinel is seen, 1000 px more, up to three times.
	mux.HandleFunc("/infinite", htmlPage(`<body style="margin:0"><div id=feed><div style="height:1000px;background:#f00"></div></div><div id=end style="height:10px"></div>
<script>let n = 0; new IntersectionObserver(es => { if (es[0].isIntersecting && n < 3) { n++;
const d = document.createElement('div'); d.style.cssText = 'height:1000px;background:#00f'; feed.appendChild(d); } }).observe(end);</script></body>`))
	// A lazy image far below the fold, served slowly.
	mux.HandleFunc("/lazyimg", htmlPage(`<body style="margin:0;background:#fff"><div style="height:5000px"></div>
<img loading=lazy src="/red.png" width=100 height=100 style="display:block"><div style="height:400px"></div></body>`))
	mux.HandleFunc("/red.png", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(800 * time.Millisecond) // longer than the scroll's remaining steps
		img := image.NewRGBA(image.Rect(0, 0, 100, 100))
		draw.Draw(img, img.Bounds(), image.NewUniform(color.RGBA{255, 0, 0, 255}), image.Point{}, draw.Src)
		w.Header().Set("Content-Type", "image/png")
		png.Encode(w, img)
	})
	srv, _ := server(t, mux)

	tests := []struct {
		name      string
		path      string
		scroll    bool
		maxHeight int
		scale     float64
		wantH     int
		pixels    map[image.Point][3]uint8
	}{
		{name: "real height", path: "/halves", wantH: 3000, pixels: map[image.Point][3]uint8{{200, 10}: red, {200, 1490}: red, {200, 1510}: blue, {200, 2990}: blue}},
		{name: "max height cuts", path: "/halves", maxHeight: 2000, wantH: 2000, pixels: map[image.Point][3]uint8{{200, 1999}: blue}},
		{name: "device scale", path: "/halves", scale: 2, wantH: 6000, pixels: map[image.Point][3]uint8{{400, 2990}: red, {400, 3010}: blue}},
		{name: "no scroll leaves lazy content", path: "/lazy", wantH: 3000, pixels: map[image.Point][3]uint8{{200, 2600}: {136, 136, 136}}},
		{name: "scroll loads lazy content", path: "/lazy", scroll: true, wantH: 3000, pixels: map[image.Point][3]uint8{{200, 2600}: green, {200, 10}: white}},
		{name: "scroll waits for lazy images", path: "/lazyimg", scroll: true, wantH: 5500, pixels: map[image.Point][3]uint8{{50, 5050}: red, {200, 5050}: white}},
		{name: "no scroll no more content", path: "/infinite", wantH: 1010},
		{name: "scroll loads more content", path: "/infinite", scroll: true, wantH: 4010, pixels: map[image.Point][3]uint8{{200, 10}: red, {200, 3900}: blue}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := opts(srv.URL + tt.path)
			o.FullPage, o.FullPageScroll, o.FullPageMaxHeight = true, tt.scroll, tt.maxHeight
			scale := 1
			if tt.scale > 0 {
				o.DeviceScaleFactor, scale = tt.scale, int(tt.scale)
			}
			out := mustRender(t, shared, o)
			img := decodePNG(t, out.Data)
			if b := img.Bounds(); b.Dx() != 400*scale || b.Dy() != tt.wantH || out.Width != b.Dx() || out.Height != b.Dy() {
				t.Fatalf("png %dx%d (Output %dx%d), want %dx%d", b.Dx(), b.Dy(), out.Width, out.Height, 400*scale, tt.wantH)
			}
			wantPixels(t, img, tt.pixels)
		})
	}
}

// TestFullPageScrollFrames: the lazy-load scroll waits one rendering update per step, not two
// frames: the page counts its animation frames from the scroll's first step to its return to
// the top and draws the count as the width of a black bar (2 px a frame).
func TestFullPageScrollFrames(t *testing.T) {
	const height, steps = 6000, 6000 / 300 // the viewport of opts is 300 px high
	mux := http.NewServeMux()
	mux.HandleFunc("/", htmlPage(fmt.Sprintf(`<body style="margin:0;background:#fff"><div id=bar style="height:10px;width:0;background:#000"></div>
<div style="height:%dpx"></div><script>
let frames = 0, start = -1;
const tick = () => { frames++; requestAnimationFrame(tick); };
requestAnimationFrame(tick);
addEventListener('scroll', () => {
	if (scrollY > 0 && start < 0) start = frames;
	if (scrollY === 0 && start >= 0) bar.style.width = (frames - start) * 2 + 'px';
});
</script></body>`, height-10)))
	srv, _ := server(t, mux)
	o := opts(srv.URL)
	o.FullPage, o.FullPageScroll = true, true
	img := decodePNG(t, mustRender(t, shared, o).Data)
	frames := 0
	for x := 0; x < img.Bounds().Dx() && rgbAt(img, x, 5) == black; x++ {
		frames++
	}
	frames /= 2
	// One frame a step and a few at the end; two frames a step would be 2*steps and more.
	if frames == 0 || frames >= steps*3/2 {
		t.Fatalf("%d animation frames during a scroll of %d steps, want about one a step", frames, steps)
	}
}

// TestFullPageTall: a 20,000 px page is taller than Chrome's texture limit at device scale 1;
// its tiles must come out in order, neither repeated nor blank.
func TestFullPageTall(t *testing.T) {
	const bands, bandH = 40, 500
	mux := http.NewServeMux()
	mux.HandleFunc("/", htmlPage(bandPage(bands, bandH)))
	srv, _ := server(t, mux)

	tests := []struct {
		name         string
		format       string
		width        int // image_width
		scale        float64
		wantW, wantH int
		tol          int
	}{
		{name: "png", format: shotd.FormatPNG, wantW: 200, wantH: bands * bandH},
		{name: "jpeg", format: shotd.FormatJPEG, wantW: 200, wantH: bands * bandH, tol: 6},
		// Tiles of 5461 CSS px are 8191.5 device px: the seams round.
		{name: "png fractional scale", format: shotd.FormatPNG, scale: 1.5, wantW: 300, wantH: bands * bandH * 3 / 2},
		// WebP cannot be taller than 16,383 px: the full page is cut there.
		{name: "webp cut", format: shotd.FormatWebP, wantW: 200, wantH: 16383, tol: 20}, // lossy: the colours shift a little
		// Tiles, stitched, halved, and encoded by Chrome.
		{name: "webp resized", format: shotd.FormatWebP, width: 100, wantW: 100, wantH: bands * bandH / 2, tol: 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := opts(srv.URL)
			o.ViewportWidth = 200
			o.FullPage, o.FullPageMaxHeight, o.Format, o.ImageQuality, o.ImageWidth = true, 30000, tt.format, 95, tt.width
			if tt.scale > 0 {
				o.DeviceScaleFactor = tt.scale
			}
			out := mustRender(t, shared, o)
			img := decodeImage(t, tt.format, out.Data)
			if b := img.Bounds(); b.Dx() != tt.wantW || b.Dy() != tt.wantH || out.Width != tt.wantW || out.Height != tt.wantH {
				t.Fatalf("image %dx%d (Output %dx%d), want %dx%d", b.Dx(), b.Dy(), out.Width, out.Height, tt.wantW, tt.wantH)
			}
			scale := float64(tt.wantW) / 200 // image pixels per CSS px
			// Top, middle, bottom, and every row around the tile seams.
			rows := []int{5, tt.wantH / 2, tt.wantH - 3}
			for _, seam := range []int{8192, 16384, 24576} {
				for y := seam - 3; y <= seam+2; y++ {
					rows = append(rows, y)
				}
			}
			for _, sy := range rows {
				if sy >= tt.wantH {
					continue
				}
				band := int(float64(sy)/scale) / bandH
				if got := rgbAt(img, tt.wantW/2, sy); !near(got, bandColor(band), tt.tol) || alphaAt(img, tt.wantW/2, sy) != 255 {
					t.Errorf("y=%d: pixel %v alpha %d, want band %d's %v", sy, got, alphaAt(img, tt.wantW/2, sy), band, bandColor(band))
				}
			}
		})
	}
}

func near(a, b [3]uint8, tol int) bool {
	for i := range a {
		d := int(a[i]) - int(b[i])
		if d < -tol || d > tol {
			return false
		}
	}
	return true
}

const boxPage = `<!doctype html><html><body style="margin:0;background:#fff">
<div style="height:900px"></div>
<div id=box style="margin-left:50px;width:120px;height:80px;background:#f00;border-top:10px solid #00f"></div>
<p class=twice>first</p><p class=twice>second</p>
<div style="height:2000px"></div></body></html>`

func TestSelector(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/", htmlPage(boxPage))
	// The box comes 600 ms after load.
	mux.HandleFunc("/late", htmlPage(`<body style="margin:0"><script>addEventListener('load', () => setTimeout(() =>
document.body.insertAdjacentHTML('beforeend', '<div id=box style="width:30px;height:40px;background:#0f0"></div>'), 600))</script></body>`))
	srv, _ := server(t, mux)

	tests := []struct {
		name         string
		path         string
		sel          string
		scale        float64
		clip         bool
		clipY, clipH int
		wantW, wantH int
		pixels       map[image.Point][3]uint8
		code         shotd.Code
		field        string
	}{
		{name: "box below the fold", path: "/", sel: "#box", wantW: 120, wantH: 90,
			pixels: map[image.Point][3]uint8{{60, 2}: blue, {1, 12}: red, {118, 88}: red}},
		{name: "device scale", path: "/", sel: "#box", scale: 2, wantW: 240, wantH: 180,
			pixels: map[image.Point][3]uint8{{120, 5}: blue, {2, 24}: red, {237, 177}: red}},
		{name: "first match", path: "/", sel: ".twice", wantW: 400},
		{name: "clip inside the box", path: "/", sel: "#box", clip: true, clipY: 10, clipH: 30, wantW: 120, wantH: 30,
			pixels: map[image.Point][3]uint8{{1, 1}: red}},
		{name: "waits for the element", path: "/late", sel: "#box", wantW: 30, wantH: 40, pixels: map[image.Point][3]uint8{{15, 20}: green}},
		{name: "no match", path: "/", sel: "#nothing", code: shotd.CodeSelectorNotFound},
		{name: "invalid selector", path: "/", sel: "##x", code: shotd.CodeInvalidOptions, field: "selector"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := opts(srv.URL + tt.path)
			o.Selector = tt.sel
			if tt.scale > 0 {
				o.DeviceScaleFactor = tt.scale
			}
			if tt.clip {
				o.HasClip, o.ClipY, o.ClipHeight = true, tt.clipY, tt.clipH
			}
			if tt.code != "" {
				o.Timeout = 1500 * time.Millisecond
				start := time.Now()
				_, err := doRender(t, shared, o)
				e := wantCode(t, err, tt.code)
				if tt.field != "" && (len(e.Fields) != 1 || e.Fields[0].Field != tt.field) {
					t.Errorf("fields %+v, want %s", e.Fields, tt.field)
				}
				if took := time.Since(start); took > 2500*time.Millisecond {
					t.Errorf("took %v with a timeout of 1.5s", took)
				}
				return
			}
			out := mustRender(t, shared, o)
			img := decodePNG(t, out.Data)
			b := img.Bounds()
			if b.Dx() != tt.wantW || (tt.wantH > 0 && b.Dy() != tt.wantH) {
				t.Fatalf("png %dx%d, want %dx%d", b.Dx(), b.Dy(), tt.wantW, tt.wantH)
			}
			wantPixels(t, img, tt.pixels)
		})
	}
}

func TestClip(t *testing.T) {
	mux := http.NewServeMux()
	// Left half red, right half blue; green from 1000 px down.
	mux.HandleFunc("/", htmlPage(`<body style="margin:0"><div style="display:flex;height:1000px"><div style="flex:1;background:#f00"></div><div style="flex:1;background:#00f"></div></div>
<div style="height:1000px;background:#0f0"></div></body>`))
	srv, _ := server(t, mux)

	tests := []struct {
		name       string
		x, y, w, h int
		scale      float64
		pixels     map[image.Point][3]uint8
	}{
		{name: "across the middle", x: 150, y: 20, w: 100, h: 40, pixels: map[image.Point][3]uint8{{10, 20}: red, {90, 20}: blue}},
		{name: "below the viewport", x: 0, y: 980, w: 50, h: 40, pixels: map[image.Point][3]uint8{{25, 5}: red, {25, 35}: green}},
		{name: "device scale", x: 190, y: 0, w: 20, h: 10, scale: 2, pixels: map[image.Point][3]uint8{{5, 5}: red, {35, 15}: blue}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := opts(srv.URL)
			o.HasClip, o.ClipX, o.ClipY, o.ClipWidth, o.ClipHeight = true, tt.x, tt.y, tt.w, tt.h
			s := 1
			if tt.scale > 0 {
				o.DeviceScaleFactor, s = tt.scale, int(tt.scale)
			}
			img := decodePNG(t, mustRender(t, shared, o).Data)
			if b := img.Bounds(); b.Dx() != tt.w*s || b.Dy() != tt.h*s {
				t.Fatalf("png %dx%d, want %dx%d", b.Dx(), b.Dy(), tt.w*s, tt.h*s)
			}
			wantPixels(t, img, tt.pixels)
		})
	}
}

// TestSelectorNoScroll: selector_scroll_into_view=false leaves the page where it is; the page
// turns red once scrolled.
func TestSelectorNoScroll(t *testing.T) {
	t.Parallel()
	page := `<!doctype html><body style="margin:0;height:3000px;background:#fff">
<div id=el style="position:absolute;top:2000px;width:100px;height:100px"></div>
<script>addEventListener('scroll', () => { document.body.style.background = 'rgb(255,0,0)'; });</script></body>`
	for _, noScroll := range []bool{false, true} {
		o := htmlOpts(page)
		o.Selector, o.SelectorNoScroll = "#el", noScroll
		img := decodePNG(t, mustRender(t, shared, o).Data)
		if red := rgbAt(img, 50, 50) == [3]uint8{255, 0, 0}; red == noScroll {
			t.Errorf("selector_scroll_into_view=%v: scrolled = %v", !noScroll, red)
		}
	}
}
