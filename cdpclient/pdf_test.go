package cdpclient

import (
	"bytes"
	"compress/zlib"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/option"
)

// pdfInfo is what the tests read from a PDF: Chrome (Skia) writes plain objects, no object
// streams, so the page objects can be found by their text.
type pdfInfo struct {
	pages   int          // /Type /Page objects
	count   int          // /Count of the /Pages tree
	boxes   [][4]float64 // /MediaBox of each page, in points
	content string       // every Flate stream that inflates, concatenated (page contents)
}

var (
	pdfPageRe  = regexp.MustCompile(`/Type\s*/Page[\s/>]`)
	pdfBoxRe   = regexp.MustCompile(`/MediaBox\s*\[\s*([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)\s*\]`)
	pdfCountRe = regexp.MustCompile(`/Type\s*/Pages[^>]*?/Count\s+(\d+)|/Count\s+(\d+)[^>]*?/Type\s*/Pages`)
	pdfStream  = regexp.MustCompile(`(?s)stream\r?\n(.*?)\r?\nendstream`)
)

func parsePDF(t *testing.T, data []byte) pdfInfo {
	t.Helper()
	if !bytes.HasPrefix(data, []byte("%PDF-")) {
		t.Fatalf("not a pdf (%d bytes)", len(data))
	}
	var info pdfInfo
	info.pages = len(pdfPageRe.FindAll(data, -1))
	for _, m := range pdfBoxRe.FindAllSubmatch(data, -1) {
		var b [4]float64
		for i := range b {
			b[i], _ = strconv.ParseFloat(string(m[i+1]), 64)
		}
		info.boxes = append(info.boxes, b)
	}
	if m := pdfCountRe.FindSubmatch(data); m != nil {
		n := m[1]
		if len(n) == 0 {
			n = m[2]
		}
		info.count, _ = strconv.Atoi(string(n))
	}
	var content strings.Builder
	for _, m := range pdfStream.FindAllSubmatch(data, -1) {
		zr, err := zlib.NewReader(bytes.NewReader(m[1]))
		if err != nil {
			continue
		}
		b, err := io.ReadAll(zr)
		if err == nil {
			content.Write(b)
			content.WriteByte('\n')
		}
	}
	info.content = content.String()
	if info.pages != info.count || len(info.boxes) != info.pages {
		t.Fatalf("pdf with %d page objects, /Count %d, %d media boxes", info.pages, info.count, len(info.boxes))
	}
	return info
}

func pdfOpts(html string) *shotd.Options {
	o := htmlOpts(html)
	o.Format = shotd.FormatPDF
	o.PDFPrintBackground = true
	return o
}

func renderPDF(t *testing.T, o *shotd.Options) pdfInfo {
	t.Helper()
	out := mustRender(t, shared, o)
	if out.ContentType != "application/pdf" || out.Format != shotd.FormatPDF || out.Width != 0 || out.Height != 0 {
		t.Errorf("Output %s %s %dx%d", out.ContentType, out.Format, out.Width, out.Height)
	}
	return parsePDF(t, out.Data)
}

// wantBox checks the page size in inches; Chrome rounds the paper to its own units (A4 comes
// out 595.92 pt wide, not 595.28), hence the tolerance.
func wantBox(t *testing.T, b [4]float64, w, h float64) {
	t.Helper()
	gw, gh := (b[2]-b[0])/72, (b[3]-b[1])/72
	if math.Abs(gw-w) > 0.02 || math.Abs(gh-h) > 0.02 {
		t.Errorf("page %.3fx%.3f in, want %.3fx%.3f", gw, gh, w, h)
	}
}

func TestPDFPaper(t *testing.T) {
	for _, name := range option.PaperFormats {
		for _, landscape := range []bool{false, true} {
			if landscape && name != "a4" && name != "ledger" {
				continue // the turn is the same for every size; ledger is landscape already
			}
			label := name
			if landscape {
				label += " landscape"
			}
			t.Run(label, func(t *testing.T) {
				o := pdfOpts(`<p>paper</p>`)
				o.PDFPaperFormat, o.PDFLandscape = name, landscape
				info := renderPDF(t, o)
				if info.pages != 1 {
					t.Fatalf("%d pages", info.pages)
				}
				w, h := paperSizes[name][0], paperSizes[name][1]
				if landscape {
					w, h = max(w, h), min(w, h)
				}
				wantBox(t, info.boxes[0], w, h)
			})
		}
	}
}

func TestPDFLayout(t *testing.T) {
	// 1000 CSS px of content: one A4 page (1122 px) without margins, two with an inch at top
	// and bottom.
	page1000 := `<body style="margin:0"><div style="height:1000px;background:#f00"></div></body>`
	tests := []struct {
		name   string
		o      func(o *shotd.Options)
		html   string
		pages  int
		height float64 // inches of the first page, 0 = A4
		red    *bool   // the background's red fill is printed
	}{
		{name: "no margin", html: page1000, pages: 1},
		{name: "margin in", html: page1000, o: func(o *shotd.Options) { o.PDFMargin = "1in" }, pages: 2},
		{name: "margin mm", html: page1000, o: func(o *shotd.Options) { o.PDFMargin = "25.4mm" }, pages: 2},
		{name: "margin cm", html: page1000, o: func(o *shotd.Options) { o.PDFMargin = "2.54cm" }, pages: 2},
		{name: "margin px", html: page1000, o: func(o *shotd.Options) { o.PDFMargin = "96px" }, pages: 2},
		{name: "top margin alone", html: page1000, o: func(o *shotd.Options) { o.PDFMarginTop = "200px" }, pages: 2},
		{name: "sides override", html: page1000, o: func(o *shotd.Options) { o.PDFMargin = "1in"; o.PDFMarginTop, o.PDFMarginBottom = "0", "0" }, pages: 1},
		{name: "long page", html: `<body style="margin:0"><div style="height:3000px"></div></body>`, pages: 3},
		{name: "fit one page", html: `<body style="margin:0"><div style="height:3000px"></div></body>`,
			o: func(o *shotd.Options) { o.PDFFitOnePage = true }, pages: 1, height: 3001.0 / 96},
		{name: "fit one page with margins", html: `<body style="margin:0"><div style="height:3000px"></div></body>`,
			o: func(o *shotd.Options) { o.PDFFitOnePage = true; o.PDFMargin = "0.5in" }, pages: 1, height: 3001.0/96 + 1},
		{name: "fit one page reflows to the paper width", html: `<body style="margin:0"><div style="width:100%;aspect-ratio:1"></div></body>`,
			o: func(o *shotd.Options) { o.PDFFitOnePage = true; o.PDFPaperFormat = "letter" }, pages: 1, height: 8.5 + 1.0/96},
		{name: "fit one very tall page", html: `<body style="margin:0"><div style="height:20000px"></div></body>`,
			o: func(o *shotd.Options) { o.PDFFitOnePage = true }, pages: 1, height: 20001.0 / 96},
		{name: "background printed", html: page1000, pages: 1, red: ptr(true)},
		{name: "background not printed", html: page1000, o: func(o *shotd.Options) { o.PDFPrintBackground = false }, pages: 1, red: ptr(false)},
		// media_type defaults to screen; print must be asked for.
		{name: "screen media", html: `<style>@media print { #x { height: 3000px } }</style><div id=x></div>`, pages: 1},
		{name: "print media", html: `<style>@media print { #x { height: 3000px } }</style><div id=x></div>`,
			o: func(o *shotd.Options) { o.MediaType = "print" }, pages: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := pdfOpts(tt.html)
			if tt.o != nil {
				tt.o(o)
			}
			info := renderPDF(t, o)
			if info.pages != tt.pages {
				t.Errorf("%d pages, want %d", info.pages, tt.pages)
			}
			w, h := paperSizes["a4"][0], paperSizes["a4"][1]
			if o.PDFPaperFormat != "" {
				w = paperSizes[o.PDFPaperFormat][0]
			}
			if tt.height > 0 {
				h = tt.height
			}
			wantBox(t, info.boxes[0], w, h)
			if tt.red != nil {
				if got := strings.Contains(info.content, "1 0 0 rg"); got != *tt.red {
					t.Errorf("red fill in the page content: %v, want %v", got, *tt.red)
				}
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestPDFMarginRoom: the margins are checked against the paper as it is printed. A4 is 8.27 by
// 11.69 in: 4.2 in on both sides of the short side leaves no room, on the long side plenty. So
// turned for pdf_landscape, wide left and right margins render, and wide top and bottom ones are
// refused as invalid_options before Chrome is asked (which would fail the print, an
// internal_error).
func TestPDFMarginRoom(t *testing.T) {
	tests := []struct {
		name       string
		landscape  bool
		leftRight  bool // the 4.2 in margins on the left and right, else top and bottom
		wantRefuse bool
	}{
		{name: "portrait left and right", leftRight: true, wantRefuse: true},
		{name: "portrait top and bottom", wantRefuse: false},
		{name: "landscape left and right", landscape: true, leftRight: true, wantRefuse: false},
		{name: "landscape top and bottom", landscape: true, wantRefuse: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := pdfOpts(`<p>margins</p>`)
			o.PDFLandscape = tt.landscape
			if tt.leftRight {
				o.PDFMarginLeft, o.PDFMarginRight = "4.2in", "4.2in"
			} else {
				o.PDFMarginTop, o.PDFMarginBottom = "4.2in", "4.2in"
			}
			if tt.wantRefuse {
				_, err := doRender(t, shared, o)
				e := wantCode(t, err, shotd.CodeInvalidOptions)
				if !strings.Contains(e.Error(), "no room") {
					t.Errorf("error %v, want the margins' lack of room", e)
				}
				return
			}
			info := renderPDF(t, o)
			w, h := paperSizes["a4"][0], paperSizes["a4"][1]
			if tt.landscape {
				w, h = h, w
			}
			wantBox(t, info.boxes[0], w, h)
		})
	}
}

// TestPDFMaxOutputBytes: a PDF larger than limits.max_output_bytes is content_too_large, its read
// from Chrome cut at the limit; a smaller one comes whole.
func TestPDFMaxOutputBytes(t *testing.T) {
	p := videoProcess(t, Config{Dir: t.TempDir(), MaxOutputBytes: 20_000})
	big := pdfOpts(strings.Repeat(`<p style="font-size:40px">A page that prints many pages of text.</p>`, 400))
	_, err := doRender(t, p, big)
	wantCode(t, err, shotd.CodeContentTooLarge)
	out, err := doRender(t, p, pdfOpts(`<p>small</p>`))
	if err != nil {
		t.Fatalf("small pdf: %v", err)
	}
	if !strings.HasPrefix(string(out.Data), "%PDF") || len(out.Data) > 20_000 {
		t.Errorf("small pdf: %d bytes starting %q", len(out.Data), out.Data[:min(8, len(out.Data))])
	}
}
