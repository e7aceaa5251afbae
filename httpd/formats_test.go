package httpd_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/internal/testkit"
)

// TestFormatAnswers: /api/v1/screenshot answers the still formats with their type and a file of
// their format, html as a sandboxed download of the DOM a script changed, markdown with the
// converted headings; a bad combination and a format the server cannot
// write answer catalogue errors, never 500.
func TestFormatAnswers(t *testing.T) {
	a := newAccount(t, "default", true)
	for _, format := range []string{"avif", "tiff", "jp2", "heif", "gif_still"} {
		r := get(t, "/api/v1/screenshot", a.q("url", page("/"), "format", format, "viewport_width", "320", "viewport_height", "200"))
		if r.status != http.StatusOK || r.header.Get("Content-Type") != shotd.ContentTypes[format] {
			t.Fatalf("%s: %d %s: %.200s", format, r.status, r.header.Get("Content-Type"), r.body)
		}
		if w, h := testkit.ImageSize(t, format, r.body); w != 320 || h != 200 {
			t.Errorf("%s: %dx%d, want 320x200", format, w, h)
		}
	}

	doc := `<html><body><h1>Title</h1><p id=p>old</p><script>document.getElementById('p').textContent='new text'</script></body></html>`
	r := get(t, "/api/v1/screenshot", a.q("html", doc, "format", "html"))
	if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
		t.Fatalf("html: %d %s", r.status, r.header.Get("Content-Type"))
	}
	if !strings.Contains(string(r.body), "new text") || strings.Contains(string(r.body), ">old<") {
		t.Errorf("html is not the DOM after the script: %s", r.body)
	}
	if r.header.Get("Content-Security-Policy") != "sandbox" || r.header.Get("X-Content-Type-Options") != "nosniff" ||
		!strings.HasPrefix(r.header.Get("Content-Disposition"), "attachment") {
		t.Errorf("html answer headers %v: want a sandboxed, unsniffed download", r.header)
	}
	r = get(t, "/api/v1/screenshot", a.q("html", doc, "format", "markdown"))
	if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "text/markdown") ||
		!strings.Contains(string(r.body), "# Title") || !strings.Contains(string(r.body), "new text") {
		t.Errorf("markdown: %d %s: %s", r.status, r.header.Get("Content-Type"), r.body)
	}

	wantError(t, get(t, "/api/v1/screenshot", a.q("url", page("/"), "format", "html", "metadata_image_size", "true")),
		http.StatusBadRequest, shotd.CodeInvalidOptions)
	wantError(t, get(t, "/api/v1/screenshot", a.q("url", page("/"), "format", "bmp")), http.StatusBadRequest, shotd.CodeInvalidOptions)
	t.Setenv("PATH", t.TempDir()) // no heif-enc
	e := wantError(t, get(t, "/api/v1/screenshot", a.q("url", page("/"), "format", "heif")), http.StatusBadRequest, shotd.CodeInvalidOptions)
	if !strings.Contains(e.ErrorMessage, "not available on this server") {
		t.Errorf("heif without its encoder: %q", e.ErrorMessage)
	}
}
