package httpd_test

import (
	"bytes"
	"image/png"
	"net/http"
	"net/url"
	"testing"

	"github.com/shotd/shotd"
)

// scriptedPage's script paints the page red: with disable_javascript it stays white.
const scriptedPage = `<html><body style="margin:0;background:#fff"><p>text</p><script>document.body.style.background='rgb(255,0,0)'</script></body></html>`

// wantWhitePage fetches a job's file and checks the page was captured without its script.
func wantWhitePage(t *testing.T, accessKey string, res *renderResult) {
	t.Helper()
	if res == nil {
		t.Fatal("no result")
	}
	f := get(t, "/api/v1/files/"+res.FileID, url.Values{"access_key": {accessKey}})
	if f.status != http.StatusOK {
		t.Fatalf("file: status %d", f.status)
	}
	wantWhite(t, f.body)
}

func wantWhite(t *testing.T, data []byte) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	r, g, bl, _ := img.At(b.Dx()-5, b.Dy()-5).RGBA()
	if r>>8 != 255 || g>>8 != 255 || bl>>8 != 255 {
		t.Fatalf("corner pixel %d,%d,%d: the page's script ran", r>>8, g>>8, bl>>8)
	}
}

// TestRenderOptionsEveryPath: the options of issue 32 reach the renderer on the sync, async and
// bulk paths (a job keeps its options as JSON), and their rules answer invalid_options.
func TestRenderOptionsEveryPath(t *testing.T) {
	a := newAccount(t, "jobs", true)
	t.Run("sync", func(t *testing.T) {
		// The default viewport is 1280x1024: inside 100x100 is 100x80, cover exactly 100x100.
		for _, c := range []struct {
			fit  string
			w, h int
		}{{"inside", 100, 80}, {"cover", 100, 100}, {"outside", 125, 100}} {
			r := get(t, "/api/v1/screenshot", a.q("url", page("/"), "image_width", "100", "image_height", "100", "image_fit", c.fit))
			if r.status != http.StatusOK {
				t.Fatalf("%s: status %d: %s", c.fit, r.status, r.body)
			}
			if w, h := imageSize(t, "png", r.body); w != c.w || h != c.h {
				t.Errorf("%s: %dx%d, want %dx%d", c.fit, w, h, c.w, c.h)
			}
		}
		r := postJSON(t, "/api/v1/screenshot", a.key.AccessKey, mustJSON(t, map[string]any{
			"html": scriptedPage, "disable_javascript": true, "viewport_width": 300, "viewport_height": 200}))
		if r.status != http.StatusOK {
			t.Fatalf("disable_javascript: status %d: %s", r.status, r.body)
		}
		wantWhite(t, r.body)
	})
	t.Run("refused", func(t *testing.T) {
		for _, c := range []struct {
			name  string
			kv    []string
			field string
		}{
			{"scripts without javascript", []string{"disable_javascript", "true", "scripts", "document.title='x'"}, "scripts"},
			{"click without javascript", []string{"disable_javascript", "true", "click", "h1"}, "click"},
			{"range ending before it starts", []string{"format", "pdf", "pdf_page_ranges", "3-1"}, "pdf_page_ranges"},
			{"paper width alone", []string{"format", "pdf", "pdf_paper_width", "10cm"}, "pdf_paper_width"},
			{"paper too small", []string{"format", "pdf", "pdf_paper_width", "1mm", "pdf_paper_height", "10cm"}, "pdf_paper_width"},
			{"fit without both sides", []string{"image_width", "100", "image_fit", "cover"}, "image_fit"},
		} {
			t.Run(c.name, func(t *testing.T) {
				e := wantError(t, get(t, "/api/v1/screenshot", a.q(append([]string{"url", page("/")}, c.kv...)...)), 400, shotd.CodeInvalidOptions)
				if len(e.Errors) != 1 || e.Errors[0].Field != c.field {
					t.Fatalf("errors %+v, want one on %s", e.Errors, c.field)
				}
			})
		}
	})
	t.Run("async", func(t *testing.T) {
		id := submit(t, a.key.AccessKey, map[string]any{"url": page("/"), "image_width": 100, "image_height": 100, "image_fit": "inside"})
		j := waitFinal(t, a.key.AccessKey, id)
		if j.Status != "succeeded" {
			t.Fatalf("job %s: %s %s", j.Status, j.ErrorCode, j.ErrorMessage)
		}
		checkResult(t, a.key.AccessKey, j.Result, 100, 80)
		id = submit(t, a.key.AccessKey, map[string]any{"html": scriptedPage, "disable_javascript": true, "viewport_width": 300, "viewport_height": 200})
		j = waitFinal(t, a.key.AccessKey, id)
		if j.Status != "succeeded" {
			t.Fatalf("job %s: %s %s", j.Status, j.ErrorCode, j.ErrorMessage)
		}
		wantWhitePage(t, a.key.AccessKey, j.Result)
	})
	t.Run("bulk", func(t *testing.T) {
		batchID, ids := bulk(t, a.key.AccessKey, map[string]any{
			"defaults": map[string]any{"viewport_width": 400, "viewport_height": 300},
			"requests": []any{
				map[string]any{"url": page("/"), "image_width": 100, "image_height": 100, "image_fit": "inside"},
				map[string]any{"html": scriptedPage, "disable_javascript": true},
			},
		})
		b := waitBatch(t, a.key.AccessKey, batchID, ids)
		for i, j := range b.Jobs {
			if j.Status != "succeeded" {
				t.Fatalf("item %d: %s %s", i, j.ErrorCode, j.ErrorMessage)
			}
		}
		checkResult(t, a.key.AccessKey, b.Jobs[0].Result, 100, 75)
		wantWhitePage(t, a.key.AccessKey, b.Jobs[1].Result)
	})
	t.Run("bulk paper", func(t *testing.T) {
		// An item's own paper size replaces the defaults' format rather than conflicting.
		batchID, ids := bulk(t, a.key.AccessKey, map[string]any{
			"defaults": map[string]any{"format": "pdf", "pdf_paper_format": "a5"},
			"requests": []any{
				map[string]any{"html": "<p>a5</p>"},
				map[string]any{"html": "<p>own</p>", "pdf_paper_width": "4in", "pdf_paper_height": "6in"},
			},
		})
		for i, j := range waitBatch(t, a.key.AccessKey, batchID, ids).Jobs {
			if j.Status != "succeeded" || j.Result == nil || j.Result.Format != "pdf" {
				t.Fatalf("item %d: %s %s %s", i, j.Status, j.ErrorCode, j.ErrorMessage)
			}
		}
	})
}
