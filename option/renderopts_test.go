package option

import (
	"testing"

	"github.com/shotd/shotd"
)

// TestRenderOptionRules: the values and rules of the options of renderopts.go.
func TestRenderOptionRules(t *testing.T) {
	u := []string{"url", "https://example.com/"}
	cases := []struct {
		name  string
		kv    []string
		field string // "" when accepted
	}{
		{"ranges", []string{"pdf_page_ranges", "1-3, 5,8-"}, ""},
		{"range backwards", []string{"pdf_page_ranges", "5-2"}, "pdf_page_ranges"},
		{"page zero", []string{"pdf_page_ranges", "0-2"}, "pdf_page_ranges"},
		{"range open start", []string{"pdf_page_ranges", "-3"}, "pdf_page_ranges"},
		{"range words", []string{"pdf_page_ranges", "all"}, "pdf_page_ranges"},
		{"range empty item", []string{"pdf_page_ranges", "1,,2"}, "pdf_page_ranges"},
		{"page past the bound", []string{"pdf_page_ranges", "1-100001"}, "pdf_page_ranges"},
		{"paper size", []string{"format", "pdf", "pdf_paper_width", "4in", "pdf_paper_height", "600px"}, ""},
		{"paper height alone", []string{"pdf_paper_height", "4in"}, "pdf_paper_width"},
		{"paper with format", []string{"pdf_paper_format", "a5", "pdf_paper_width", "4in", "pdf_paper_height", "6in"}, "pdf_paper_format"},
		{"paper too large", []string{"pdf_paper_width", "201in", "pdf_paper_height", "6in"}, "pdf_paper_width"},
		{"paper without unit", []string{"pdf_paper_width", "4", "pdf_paper_height", "6in"}, "pdf_paper_width"},
		{"ranges with fit one page", []string{"pdf_fit_one_page", "true", "pdf_page_ranges", "1"}, "pdf_page_ranges"},
		{"css size with fit one page", []string{"pdf_fit_one_page", "true", "pdf_prefer_css_page_size", "true"}, "pdf_prefer_css_page_size"},
		{"scale with fit one page", []string{"pdf_fit_one_page", "true", "pdf_scale", "0.5"}, "pdf_scale"},
		{"outline untagged", []string{"pdf_outline", "true", "pdf_tagged", "false"}, "pdf_outline"},
		{"scale too small", []string{"pdf_scale", "0.05"}, "pdf_scale"},
		{"template too long", []string{"pdf_header", string(make([]byte, maxTemplateBytes+1))}, "pdf_header"},
		{"template links a style sheet", []string{"pdf_footer", `<LINK rel="stylesheet" href="/s.css"><span class="pageNumber"></span>`}, "pdf_footer"},
		{"template imports a style sheet", []string{"pdf_header", `<style>@import url(/s.css)</style>`}, "pdf_header"},
		{"blank expression", []string{"wait_for_expression", "  "}, "wait_for_expression"},
		{"hidden selector", []string{"wait_for_selector_hidden", ".spinner"}, ""},
		{"javascript off with scripts", []string{"disable_javascript", "true", "scripts", "1"}, "scripts"},
		{"javascript off with expression", []string{"disable_javascript", "true", "wait_for_expression", "true"}, "wait_for_expression"},
		{"javascript off with banners", []string{"disable_javascript", "true", "block_cookie_banners", "true"}, "block_cookie_banners"},
		{"javascript off alone", []string{"disable_javascript", "true", "wait_for_selector", "h1"}, ""},
		{"fit cover", []string{"image_width", "10", "image_height", "10", "image_fit", "cover", "image_position", "top_left"}, ""},
		{"fit one side", []string{"image_width", "10", "image_fit", "cover"}, "image_fit"},
		{"position with fill", []string{"image_width", "10", "image_height", "10", "image_position", "top"}, "image_position"},
		{"background with cover", []string{"image_width", "10", "image_height", "10", "image_fit", "cover", "image_background", "000000"}, "image_background"},
		{"background bad", []string{"image_width", "10", "image_height", "10", "image_fit", "contain", "image_background", "red"}, "image_background"},
		{"jpeg transparent", []string{"format", "jpeg", "image_width", "10", "image_height", "10", "image_fit", "contain", "image_background", "transparent"}, "image_background"},
		{"fit on pdf", []string{"format", "pdf", "image_width", "10", "image_height", "10", "image_fit", "cover"}, "image_fit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseOptions(q(append(u, c.kv...)...), Limits{})
			if c.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			wantCode(t, err, shotd.CodeInvalidOptions, c.field)
		})
	}
}

func TestRenderOptionValues(t *testing.T) {
	o := mustParse(t, q("url", "https://example.com/", "image_width", "10", "image_height", "10", "image_fit", "contain",
		"image_background", "#11223344", "pdf_tagged", "false"))
	if o.ImageBackground != [4]uint8{0x11, 0x22, 0x33, 0x44} || o.ImageFit != shotd.FitContain || !o.PDFUntagged {
		t.Fatalf("background %v fit %q untagged %v", o.ImageBackground, o.ImageFit, o.PDFUntagged)
	}
	d := mustParse(t, q("url", "https://example.com/"))
	if d.ImageFit != shotd.FitFill || d.ImagePosition != "center" || d.ImageBackground != [4]uint8{255, 255, 255, 255} ||
		d.PDFScale != 1 || d.PDFUntagged || d.DisableJavaScript {
		t.Fatalf("defaults: %+v", d)
	}
	for _, c := range []struct {
		v  string
		in float64
	}{{"0", 0}, {"96px", 1}, {"2.54cm", 1}, {"25.4mm", 1}, {"1.5in", 1.5}} {
		if got, ok := LengthInches(c.v); !ok || got < c.in-1e-9 || got > c.in+1e-9 {
			t.Errorf("LengthInches(%q) = %v, %v; want %v", c.v, got, ok, c.in)
		}
	}
}

// TestRenderOptionsInCacheKey: each option of renderopts.go changes the response-cache key.
func TestRenderOptionsInCacheKey(t *testing.T) {
	base := q("url", "https://example.com/", "image_width", "10", "image_height", "10")
	key := mustParse(t, base).ResponseCacheKey("acc")
	for _, kv := range [][]string{
		{"image_fit", "cover"}, {"pdf_header", "<b>h</b>"}, {"pdf_footer", "<b>f</b>"}, {"pdf_page_ranges", "2"},
		{"pdf_scale", "0.5"}, {"pdf_prefer_css_page_size", "true"}, {"pdf_tagged", "false"}, {"pdf_outline", "true"},
		{"wait_for_expression", "window.ok"}, {"wait_for_selector_hidden", ".spin"}, {"disable_javascript", "true"},
	} {
		if got := mustParse(t, append(q(kv...), base...)).ResponseCacheKey("acc"); got == key {
			t.Errorf("%s=%s leaves the cache key as it was", kv[0], kv[1])
		}
	}
}
