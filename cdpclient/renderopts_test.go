package cdpclient

import (
	"bytes"
	"fmt"
	"image"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mafredri/cdp/protocol/browser"

	"github.com/shotd/shotd"
)

// pagesHTML is a document of one page per word, each word alone on its page.
func pagesHTML(title string, words ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<title>%s</title><style>body{margin:0} div{break-after:page;font-size:20px}</style>", title)
	for _, w := range words {
		fmt.Fprintf(&b, "<div>%s</div>", w)
	}
	return b.String()
}

// TestPDFHeaderFooter: pdf_header and pdf_footer go on every page, with Chrome's page number,
// page count and title filled in, in the margin they get when none was given.
func TestPDFHeaderFooter(t *testing.T) {
	o := pdfOpts(pagesHTML("Quarterly", "alpha", "bravo", "charlie"))
	o.PDFHeader = `<div style="font-size:10px">Page <span class="pageNumber"></span> of <span class="totalPages"></span></div>`
	o.PDFFooter = `<div style="font-size:10px">Doc <span class="title"></span></div>`
	out := mustRender(t, shared, o)
	texts := pdfPageTexts(t, out.Data)
	if len(texts) != 3 {
		t.Fatalf("%d pages, want 3: %q", len(texts), texts)
	}
	for i, txt := range texts {
		for _, want := range []string{fmt.Sprintf("Page %d of 3", i+1), "Doc Quarterly", []string{"alpha", "bravo", "charlie"}[i]} {
			if !strings.Contains(txt, want) {
				t.Errorf("page %d reads %q, want %q in it", i+1, txt, want)
			}
		}
	}
}

// TestPDFTemplateThatLoads: a template linking a style sheet fails Chrome's whole print; that
// is invalid_options on the template, not an internal error, and nothing is fetched. The option
// package refuses such templates before rendering (checkTemplate): this is the fallback for a
// construct it does not know. Chrome sometimes crashes the tab's renderer with the failed print,
// which is then page_crashed: the test runs until it sees the print's own error, a few times at
// most.
func TestPDFTemplateThatLoads(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { t.Errorf("the template fetched %s", r.URL) })
	srv, _ := server(t, mux)
	o := pdfOpts(`<p>x</p>`)
	o.PDFFooter = `<link rel="stylesheet" href="` + srv.URL + `/s.css"><span class="pageNumber"></span>`
	var err error
	for range 5 {
		if _, err = doRender(t, shared, o); err == nil || shotd.CodeOf(err) != shotd.CodePageCrashed {
			break
		}
	}
	e := wantCode(t, err, shotd.CodeInvalidOptions)
	if len(e.Fields) != 1 || e.Fields[0].Field != "pdf_footer" {
		t.Fatalf("fields %+v, want pdf_footer", e.Fields)
	}
}

// TestPDFPageRanges: pdf_page_ranges keeps only the pages asked for; a range past the last page
// is invalid_options on pdf_page_ranges, not an internal error, and the tab serves on.
func TestPDFPageRanges(t *testing.T) {
	words := []string{"alpha", "bravo", "charlie", "delta"}
	tests := []struct {
		name   string
		ranges string
		want   []string
	}{
		{name: "two to three", ranges: "2-3", want: []string{"bravo", "charlie"}},
		{name: "single and open end", ranges: "1, 4-", want: []string{"alpha", "delta"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := pdfOpts(pagesHTML("r", words...))
			o.PDFPageRanges = tt.ranges
			texts := pdfPageTexts(t, mustRender(t, shared, o).Data)
			if len(texts) != len(tt.want) {
				t.Fatalf("%d pages %q, want %q", len(texts), texts, tt.want)
			}
			for i, w := range tt.want {
				if strings.TrimSpace(texts[i]) != w {
					t.Errorf("page %d reads %q, want %q", i+1, texts[i], w)
				}
			}
		})
	}
	t.Run("past the end", func(t *testing.T) {
		o := pdfOpts(pagesHTML("r", words...))
		o.PDFPageRanges = "7-9"
		_, err := doRender(t, shared, o)
		e := wantCode(t, err, shotd.CodeInvalidOptions)
		if len(e.Fields) != 1 || e.Fields[0].Field != "pdf_page_ranges" {
			t.Fatalf("fields %+v, want pdf_page_ranges", e.Fields)
		}
	})
}

// TestPDFPaperScaleCSS: a paper size of its own, the scale (a page that fills three pages at
// scale 1 fills two at 0.5), the page's @page size when asked for, and the outline and
// tagging.
func TestPDFPaperScaleCSS(t *testing.T) {
	t.Run("paper size", func(t *testing.T) {
		o := pdfOpts(`<p>custom</p>`)
		o.PDFPaperWidth, o.PDFPaperHeight = "10cm", "150mm"
		info := renderPDF(t, o)
		wantBox(t, info.boxes[0], 10/2.54, 150/25.4)
	})
	t.Run("scale", func(t *testing.T) {
		// 2.5 A4 pages of content at scale 1 (A4 is 1123 CSS px tall).
		page := `<style>body{margin:0}</style><div style="height:2800px;background:#eee">tall</div>`
		for _, c := range []struct {
			scale float64
			pages int
		}{{1, 3}, {0.5, 2}} {
			o := pdfOpts(page)
			o.PDFScale = c.scale
			if got := renderPDF(t, o).pages; got != c.pages {
				t.Errorf("scale %v: %d pages, want %d", c.scale, got, c.pages)
			}
		}
	})
	t.Run("css page size", func(t *testing.T) {
		page := `<style>@page { size: 4in 6in; }</style><p>sized</p>`
		for _, prefer := range []bool{false, true} {
			o := pdfOpts(page)
			o.PDFPreferCSSPageSize = prefer
			info := renderPDF(t, o)
			w, h := paperSizes["a4"][0], paperSizes["a4"][1]
			if prefer {
				w, h = 4, 6
			}
			wantBox(t, info.boxes[0], w, h)
		}
	})
	t.Run("outline and tagging", func(t *testing.T) {
		page := `<h1>First</h1><p>a</p><h2>Second</h2><p>b</p>`
		o := pdfOpts(page)
		o.PDFOutline = true
		data := mustRender(t, shared, o).Data
		if !strings.Contains(string(data), "/Outlines") {
			t.Errorf("pdf_outline: no /Outlines in the PDF")
		}
		o = pdfOpts(page)
		if !strings.Contains(string(mustRender(t, shared, o).Data), "/StructTreeRoot") {
			t.Errorf("default: the PDF is not tagged")
		}
		o.PDFUntagged = true
		if strings.Contains(string(mustRender(t, shared, o).Data), "/StructTreeRoot") {
			t.Errorf("pdf_tagged=false: the PDF is tagged")
		}
	})
}

// chartPage draws its "chart" (the body turns green) only after a while, and then sets its
// ready flag; before that the page is red. Its load event comes long before.
const chartPage = `<style>body{margin:0;background:rgb(255,0,0)}</style><script>
setTimeout(() => { document.body.style.background = 'rgb(0,255,0)'; window.chart = {done: true}; }, 700);
</script>`

// TestWaitForExpression: the capture waits for the page's own flag, which may throw while it is
// not there yet; a flag that never comes is a timeout naming the option, an expression that
// does not parse is invalid_options.
func TestWaitForExpression(t *testing.T) {
	green := [3]uint8{0, 255, 0}
	for _, expr := range []string{"window.chart && window.chart.done", "window.chart.done // throws until then", "new Promise(r => setTimeout(() => r(window.chart), 50))"} {
		t.Run(expr, func(t *testing.T) {
			o := htmlOpts(chartPage)
			o.WaitForExpression = expr
			img := decodePNG(t, mustRender(t, shared, o).Data)
			wantPixels(t, img, map[image.Point][3]uint8{{200, 150}: green})
		})
	}
	t.Run("never", func(t *testing.T) {
		o := htmlOpts(chartPage)
		o.WaitForExpression = "window.never.set"
		o.Timeout = 2 * time.Second
		_, err := doRender(t, shared, o)
		e := wantCode(t, err, shotd.CodeTimeout)
		if !strings.Contains(e.Message, "wait_for_expression") || !strings.Contains(e.Message, "(reading 'set')") {
			t.Errorf("message %q names neither the option nor the last error", e.Message)
		}
	})
	t.Run("syntax error", func(t *testing.T) {
		o := htmlOpts(chartPage)
		o.WaitForExpression = "window.chart &&"
		_, err := doRender(t, shared, o)
		e := wantCode(t, err, shotd.CodeInvalidOptions)
		if len(e.Fields) != 1 || e.Fields[0].Field != "wait_for_expression" {
			t.Fatalf("fields %+v", e.Fields)
		}
	})
}

// spinnerPage shows a spinner over the page until its data "arrives": removed in one variant,
// hidden in the other.
func spinnerPage(how string) string {
	return `<style>body{margin:0;background:rgb(0,0,255)} #spin{position:fixed;inset:0;background:rgb(255,0,0)}</style>
<div id="spin"></div><script>setTimeout(() => { const s = document.getElementById('spin'); ` + how + ` }, 700);</script>`
}

// TestWaitForSelectorHidden: the capture waits until the spinner is gone, removed or hidden; one
// that stays is a timeout naming the option.
func TestWaitForSelectorHidden(t *testing.T) {
	blue := [3]uint8{0, 0, 255}
	for _, how := range []string{"s.remove();", "s.style.display = 'none';", "s.style.visibility = 'hidden';"} {
		t.Run(how, func(t *testing.T) {
			o := htmlOpts(spinnerPage(how))
			o.WaitForSelectorHidden = "#spin"
			wantPixels(t, decodePNG(t, mustRender(t, shared, o).Data), map[image.Point][3]uint8{{200, 150}: blue})
		})
	}
	t.Run("stays", func(t *testing.T) {
		o := htmlOpts(spinnerPage(""))
		o.WaitForSelectorHidden = "#spin"
		o.Timeout = 2 * time.Second
		_, err := doRender(t, shared, o)
		e := wantCode(t, err, shotd.CodeTimeout)
		if !strings.Contains(e.Message, "wait_for_selector_hidden") {
			t.Errorf("message %q does not name the option", e.Message)
		}
	})
}

// hidingPage's script hides its text and paints the page red: with JavaScript off, the capture
// shows the text on white.
const hidingPage = `<style>body{margin:0;background:#fff} #t{font-size:80px;line-height:1;margin:0;color:rgb(0,0,0)}</style>
<p id="t">&#9608;&#9608;&#9608;</p><script>document.getElementById('t').style.display = 'none'; document.body.style.background = 'rgb(255,0,0)';</script>`

// TestDisableJavaScript: with disable_javascript the page's script does not run, for a url and
// an html source alike, while the render's own helpers (wait_for_selector here) still work; the
// wipe turns scripts back on, so the next render in the same tab runs them again.
func TestDisableJavaScript(t *testing.T) {
	black, white, red := [3]uint8{0, 0, 0}, [3]uint8{255, 255, 255}, [3]uint8{255, 0, 0}
	noJS := map[image.Point][3]uint8{{30, 40}: black, {380, 280}: white}
	withJS := map[image.Point][3]uint8{{30, 40}: red, {380, 280}: red}
	mux := http.NewServeMux()
	mux.HandleFunc("/", htmlPage(hidingPage))
	srv, _ := server(t, mux)
	for _, src := range []string{"url", "html"} {
		t.Run(src, func(t *testing.T) {
			o := htmlOpts(hidingPage)
			if src == "url" {
				o = opts(srv.URL + "/")
			}
			o.DisableJavaScript = true
			o.WaitForSelector = "#t"
			wantPixels(t, decodePNG(t, mustRender(t, shared, o).Data), noJS)
		})
	}
	t.Run("the wipe turns scripts on", func(t *testing.T) {
		p := launchIsolated(t, 1, IsolationWipe)
		poolFull(t, p)
		o := htmlOpts(hidingPage)
		o.DisableJavaScript = true
		used := renderContext(t, p, o)
		nextTab(t, p, used)
		var id browser.ContextID
		testHookAfterStep = func(step string, tb *tab) {
			if step == "emulate" {
				id = tb.browserContext
			}
		}
		defer func() { testHookAfterStep = nil }()
		got := decodePNG(t, mustRender(t, p, opts(srv.URL+"/")).Data)
		if id != used {
			t.Fatalf("the next render ran in context %s, not in the wiped tab's %s", id, used)
		}
		wantPixels(t, got, withJS)
	})
}

// stripsPage is 400 x 300: a green strip on the left, a blue one on the right, red between.
const stripsPage = `<style>body{margin:0;background:rgb(255,0,0)} div{position:fixed;top:0;bottom:0;width:100px}</style>
<div style="left:0;background:rgb(0,255,0)"></div><div style="right:0;background:rgb(0,0,255)"></div>`

// TestImageFit: image_fit places the 400 x 300 capture in image_width x image_height as sharp's
// fits do: cover crops at image_position, contain pads with image_background, inside and outside
// keep the aspect ratio without either; fill (the default) stretches.
func TestImageFit(t *testing.T) {
	red, green, blue, grey := [3]uint8{255, 0, 0}, [3]uint8{0, 255, 0}, [3]uint8{0, 0, 255}, [3]uint8{128, 128, 128}
	tests := []struct {
		name     string
		fit, pos string
		format   string
		w, h     int
		wantW    int
		wantH    int
		pixels   map[image.Point][3]uint8
	}{
		// 400x300 to 100x100: fill squeezes, the strips become 25 px.
		{name: "fill", fit: shotd.FitFill, w: 100, h: 100, wantW: 100, wantH: 100,
			pixels: map[image.Point][3]uint8{{10, 50}: green, {50, 50}: red, {90, 50}: blue}},
		// cover scales to 133x100: the strips are 33 px; the crop keeps the middle, or an edge.
		{name: "cover center", fit: shotd.FitCover, pos: "center", w: 100, h: 100, wantW: 100, wantH: 100,
			pixels: map[image.Point][3]uint8{{5, 50}: green, {21, 50}: red, {79, 50}: red, {95, 50}: blue}},
		{name: "cover left", fit: shotd.FitCover, pos: "left", w: 100, h: 100, wantW: 100, wantH: 100,
			pixels: map[image.Point][3]uint8{{30, 50}: green, {95, 50}: red}},
		{name: "cover right", fit: shotd.FitCover, pos: "right", w: 100, h: 100, wantW: 100, wantH: 100,
			pixels: map[image.Point][3]uint8{{5, 50}: red, {70, 50}: blue}},
		// contain scales to 100x75, padded with grey: 12 px above and below, or all below.
		{name: "contain center", fit: shotd.FitContain, pos: "center", w: 100, h: 100, wantW: 100, wantH: 100,
			pixels: map[image.Point][3]uint8{{50, 5}: grey, {50, 50}: red, {50, 95}: grey, {10, 50}: green}},
		{name: "contain top jpeg", fit: shotd.FitContain, pos: "top", format: shotd.FormatJPEG, w: 100, h: 100, wantW: 100, wantH: 100,
			pixels: map[image.Point][3]uint8{{50, 5}: red, {50, 90}: grey}},
		{name: "inside", fit: shotd.FitInside, w: 100, h: 100, wantW: 100, wantH: 75,
			pixels: map[image.Point][3]uint8{{10, 40}: green, {50, 40}: red}},
		{name: "outside", fit: shotd.FitOutside, w: 100, h: 100, wantW: 133, wantH: 100,
			pixels: map[image.Point][3]uint8{{10, 50}: green, {66, 50}: red, {125, 50}: blue}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := htmlOpts(stripsPage)
			o.ImageWidth, o.ImageHeight, o.ImageFit, o.ImagePosition = tt.w, tt.h, tt.fit, tt.pos
			o.ImageBackground = [4]uint8{128, 128, 128, 255}
			if tt.format != "" {
				o.Format = tt.format
			}
			out := mustRender(t, shared, o)
			if out.Width != tt.wantW || out.Height != tt.wantH {
				t.Fatalf("%dx%d, want %dx%d", out.Width, out.Height, tt.wantW, tt.wantH)
			}
			img, _, err := image.Decode(bytes.NewReader(out.Data))
			if err != nil {
				t.Fatal(err)
			}
			if b := img.Bounds(); b.Dx() != tt.wantW || b.Dy() != tt.wantH {
				t.Fatalf("the file is %dx%d, want %dx%d", b.Dx(), b.Dy(), tt.wantW, tt.wantH)
			}
			wantPixelsNear(t, img, tt.pixels)
		})
	}
}

// wantPixelsNear is wantPixels with room for jpeg's loss.
func wantPixelsNear(t *testing.T, img image.Image, points map[image.Point][3]uint8) {
	t.Helper()
	for p, want := range points {
		got := rgbAt(img, p.X, p.Y)
		for i := range got {
			if d := int(got[i]) - int(want[i]); d > 24 || d < -24 {
				t.Errorf("pixel (%d,%d) = %v, want %v", p.X, p.Y, got, want)
				break
			}
		}
	}
}

// TestDisableJavaScriptHelpers: with the page's JavaScript off, the render's own steps that
// run in the page still work, though no timer fires there: a full page (scrolled first), an
// element's capture, hiding, a webp encoded by Chrome.
func TestDisableJavaScriptHelpers(t *testing.T) {
	page := `<style>body{margin:0;background:#fff} #tall{height:900px;background:rgb(0,0,255)} #ad{height:50px;background:rgb(255,0,0)}</style>
<div id="ad"></div><div id="tall"></div><script>document.body.style.background='rgb(0,255,0)'</script>`
	o := htmlOpts(page)
	o.DisableJavaScript = true
	o.FullPage, o.FullPageScroll, o.FullPageMaxHeight = true, true, 20000
	o.HideSelectors = []string{"#ad"}
	out := mustRender(t, shared, o)
	if out.Height != 900 {
		t.Errorf("full page %dx%d, want 900 high (the ad hidden)", out.Width, out.Height)
	}
	wantPixels(t, decodePNG(t, out.Data), map[image.Point][3]uint8{{10, 10}: {0, 0, 255}})
	o = htmlOpts(page)
	o.DisableJavaScript = true
	o.Selector = "#ad"
	if out := mustRender(t, shared, o); out.Height != 50 {
		t.Errorf("element %dx%d, want 50 high", out.Width, out.Height)
	}
	// A resized webp is encoded by Chrome's canvas, in a world of its own.
	o = htmlOpts(page)
	o.DisableJavaScript = true
	o.Format, o.ImageWidth = shotd.FormatWebP, 200
	if out := mustRender(t, shared, o); out.Width != 200 || out.Height != 150 {
		t.Errorf("webp %dx%d, want 200x150", out.Width, out.Height)
	}
}
