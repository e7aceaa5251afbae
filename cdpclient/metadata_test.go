package cdpclient

import (
	"net/http"
	"strings"
	"testing"
)

// Tests of the metadata of the JSON answer (metadata.go).

func TestMetadata(t *testing.T) {
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
	o.MetaPageTitle, o.MetaOpenGraph, o.MetaIcon, o.MetaFonts = true, true, true, true
	o.MetaStatusCode, o.MetaHeaders, o.MetaImageSize, o.MetaContent = true, true, true, true
	o.MetaContentFormat = "markdown"
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

func TestContentShadowDOM(t *testing.T) {
	t.Parallel()
	page := `<!doctype html><body><div id=host></div><p>outside</p>
<script>document.getElementById('host').attachShadow({mode: 'open'}).innerHTML = '<p>inside the ' + 'shadow</p>';</script></body>`
	for _, shadow := range []bool{false, true} {
		o := htmlOpts(page)
		o.MetaContent, o.MetaContentFormat, o.IncludeShadowDOM = true, "html", shadow
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
