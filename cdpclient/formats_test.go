package cdpclient

import (
	"archive/zip"
	"bytes"
	"image"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/image/tiff"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/internal/testkit"
)

// stillPage is 400 px wide: 150 px of red, then blue for 2000 px.
const stillPage = `<body style="margin:0"><div style="height:150px;background:#f00"></div><div style="height:2000px;background:#00f"></div></body>`

// TestStillFormats: each format that media encodes comes out of a real render as a file of its
// format (magic bytes) of the capture's size as an independent decoder reads it, with its content
// type, for the viewport, a full page and a resized capture; tiff and gif_still, which Go
// decodes, show the page's colours where they are.
func TestStillFormats(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/", htmlPage(stillPage))
	srv, _ := server(t, mux)
	areas := []struct {
		name         string
		fullPage     bool
		w            int
		wantW, wantH int
	}{
		{name: "viewport", wantW: 400, wantH: 300},
		{name: "full page", fullPage: true, wantW: 400, wantH: 2150},
		{name: "resized", w: 200, wantW: 200, wantH: 150},
	}
	for _, format := range []string{shotd.FormatAVIF, shotd.FormatTIFF, shotd.FormatJP2, shotd.FormatHEIF, shotd.FormatGIFStill} {
		for _, a := range areas {
			t.Run(format+" "+a.name, func(t *testing.T) {
				o := opts(srv.URL)
				o.Format, o.FullPage, o.ImageWidth = format, a.fullPage, a.w
				out := mustRender(t, shared, o)
				w, h := testkit.ImageSize(t, format, out.Data)
				if w != a.wantW || h != a.wantH || out.Width != w || out.Height != h {
					t.Fatalf("image %dx%d (Output %dx%d), want %dx%d", w, h, out.Width, out.Height, a.wantW, a.wantH)
				}
				if out.Format != format || out.ContentType != shotd.ContentTypes[format] {
					t.Errorf("format %q, content type %q", out.Format, out.ContentType)
				}
				var img image.Image
				var err error
				switch format {
				case shotd.FormatTIFF:
					img, err = tiff.Decode(bytes.NewReader(out.Data))
				case shotd.FormatGIFStill:
					img, _, err = image.Decode(bytes.NewReader(out.Data))
				default:
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if top, bottom := rgbAt(img, w/2, 2), rgbAt(img, w/2, h-3); !near(top, red, 24) || !near(bottom, blue, 24) {
					t.Errorf("top %v bottom %v, want red and blue", top, bottom)
				}
			})
		}
	}
}

// TestStillSlices: full_page_slices cuts the pixels of a still format and encodes each slice in
// it; the zip's names carry the file extension.
func TestStillSlices(t *testing.T) {
	o := htmlOpts(tallPage)
	// avif: no Go decoder could read the encoded capture back to cut it.
	o.Format, o.FullPage = shotd.FormatAVIF, true
	o.Slices, o.SliceHeight = true, 400
	out := mustRender(t, shared, o)
	if out.ContentType != "application/zip" || out.Width != 400 || out.Height != 1000 {
		t.Fatalf("content type %q, %dx%d", out.ContentType, out.Width, out.Height)
	}
	zr, err := zip.NewReader(bytes.NewReader(out.Data), int64(len(out.Data)))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"slice-000.avif", "slice-001.avif", "slice-002.avif"}
	if len(zr.File) != len(want) {
		t.Fatalf("%d files in the zip, want %d", len(zr.File), len(want))
	}
	for i, f := range zr.File {
		if f.Name != want[i] {
			t.Errorf("file %d is %q, want %q", i, f.Name, want[i])
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		_, _ = b.ReadFrom(rc)
		rc.Close()
		if w, h := testkit.ImageSize(t, shotd.FormatAVIF, b.Bytes()); w != 400 || h != min(400, 1000-400*i) {
			t.Errorf("slice %d is %dx%d", i, w, h)
		}
	}
}

// documentPage changes itself from a script, hides nothing by itself, and has what the render's
// hiding removes.
const documentPage = `<!DOCTYPE html><html><head><title>doc</title></head><body>
<h1>Static title</h1>
<p id=later>before the script</p>
<div class=cookie-banner>We use cookies</div>
<p><a href="/next">Next page</a> and <a href="https://example.com/abs">elsewhere</a></p>
<script>document.getElementById('later').textContent = 'changed by the script';
const h = document.createElement('h2'); h.textContent = 'Added heading'; document.body.appendChild(h);</script>
</body></html>`

// TestDocumentFormats: html is the DOM after the page's script changed it, without what
// hide_selectors hid, as text/html; markdown is that DOM converted, headings and links included
// (relative links made absolute against the page), as text/markdown. Neither has a size.
func TestDocumentFormats(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/", htmlPage(documentPage))
	srv, _ := server(t, mux)

	o := opts(srv.URL)
	o.Format, o.HideSelectors = shotd.FormatHTML, []string{".cookie-banner"}
	out := mustRender(t, shared, o)
	html := string(out.Data)
	if out.ContentType != "text/html; charset=utf-8" || out.Width != 0 || out.Height != 0 {
		t.Errorf("content type %q, size %dx%d", out.ContentType, out.Width, out.Height)
	}
	for _, want := range []string{"<!DOCTYPE html>", "changed by the script", "<h2>Added heading</h2>", "<h1>Static title</h1>"} {
		if !strings.Contains(html, want) {
			t.Errorf("html lacks %q:\n%s", want, html)
		}
	}
	for _, gone := range []string{"before the script", "We use cookies"} {
		if strings.Contains(html, gone) {
			t.Errorf("html still has %q:\n%s", gone, html)
		}
	}

	o = opts(srv.URL + "/")
	o.Format = shotd.FormatMarkdown
	out = mustRender(t, shared, o)
	md := string(out.Data)
	if out.ContentType != "text/markdown; charset=utf-8" {
		t.Errorf("content type %q", out.ContentType)
	}
	for _, want := range []string{"# Static title", "## Added heading", "changed by the script", "We use cookies",
		"[Next page](" + srv.URL + "/next)", "[elsewhere](https://example.com/abs)"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "<h1>") || strings.Contains(md, "getElementById") {
		t.Errorf("markdown holds html or the script:\n%s", md)
	}
}

// TestDocumentHidingRules: the html format leaves out what block_socials, the styles option's
// display: none rules, a blocker's element hiding and block_banners_by_heuristics hid, and
// keeps what the page hides by itself.
func TestDocumentHidingRules(t *testing.T) {
	shared.cfg.Blocker = func(o *shotd.Options) Blocker { return recordBlocker{block: "blocked.invalid"} }
	t.Cleanup(func() { shared.cfg.Blocker = nil })
	page := `<!DOCTYPE html><html><body style="margin:0">
<main><p>kept text</p><p style="display:none">page hides this itself</p></main>
<div class="ad-box">advert</div>
<blockquote class="twitter-tweet">a tweet</blockquote>
<div id=mine>styled away</div>
<div style="position:fixed;bottom:0;left:0;width:100%;height:80px;background:#ccc">fixed banner</div>
</body></html>`
	o := htmlOpts(page)
	o.Format, o.BlockSocials, o.BlockBannersByHeuristics = shotd.FormatHTML, true, true
	o.Styles = "@media screen { #mine { display: none } }"
	out := mustRender(t, shared, o)
	html := string(out.Data)
	for _, want := range []string{"kept text", "page hides this itself"} {
		if !strings.Contains(html, want) {
			t.Errorf("html lacks %q:\n%s", want, html)
		}
	}
	for _, gone := range []string{"advert", "a tweet", "styled away", "fixed banner"} {
		if strings.Contains(html, gone) {
			t.Errorf("html still has %q:\n%s", gone, html)
		}
	}
}

// TestHEIFUnavailable: without its encoder heif is refused as invalid_options on the format,
// saying it is not available on this server.
func TestHEIFUnavailable(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // heif-enc is looked up on PATH at each render
	o := htmlOpts("<p>x</p>")
	o.Format = shotd.FormatHEIF
	_, err := doRender(t, shared, o)
	e := wantCode(t, err, shotd.CodeInvalidOptions)
	if len(e.Fields) != 1 || e.Fields[0].Field != "format" || !strings.Contains(e.Message, "not available on this server") {
		t.Fatalf("got %v (%+v)", err, e.Fields)
	}
}
