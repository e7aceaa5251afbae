package option

import (
	"testing"

	"github.com/shotd/shotd"
)

// TestFormatValues: every format of the table parses, with a content type; gif stays the video
// on shotd's own parse; ScreenshotOne's twelve /take names map to formats the table accepts.
func TestFormatValues(t *testing.T) {
	for _, f := range Formats {
		t.Run(f, func(t *testing.T) {
			o := mustParse(t, q("url", "https://a.example/", "format", f))
			if o.Format != f || shotd.ContentTypes[f] == "" {
				t.Fatalf("format %q parsed as %q, content type %q", f, o.Format, shotd.ContentTypes[f])
			}
		})
	}
	if o := mustParse(t, q("url", "https://a.example/", "format", "gif")); !shotd.IsVideo(o.Format) {
		t.Errorf("gif parsed as %q, not the video", o.Format)
	}
	s1 := []string{"jpg", "jpeg", "png", "webp", "gif", "jp2", "tiff", "avif", "heif", "pdf", "html", "markdown"}
	if len(S1TakeFormats) != len(s1) {
		t.Errorf("S1TakeFormats has %d names, want %d", len(S1TakeFormats), len(s1))
	}
	for _, n := range s1 {
		f, ok := S1TakeFormats[n]
		if !ok {
			t.Errorf("S1TakeFormats lacks %q", n)
			continue
		}
		if shotd.IsVideo(f) {
			t.Errorf("their %q maps to the video %q", n, f)
		}
		mustParse(t, q("url", "https://a.example/", "format", f))
	}
}

// TestDocumentFormatRefusals: what only an image has is refused with the document formats, as
// with pdf, as invalid_options naming the option.
func TestDocumentFormatRefusals(t *testing.T) {
	cases := []struct {
		name  string
		ps    Params
		field string
	}{
		{"html image size", q("url", "https://a.example/", "format", "html", "metadata_image_size", "true"), "metadata_image_size"},
		{"markdown slices", q("url", "https://a.example/", "format", "markdown", "full_page", "true", "full_page_slices", "true"), "full_page_slices"},
		{"html image_fit", q("url", "https://a.example/", "format", "html", "image_width", "10", "image_height", "10", "image_fit", "cover"), "image_fit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseOptions(c.ps, Limits{})
			wantCode(t, err, shotd.CodeInvalidOptions, c.field)
		})
	}
	// The still formats are images: their slices and image size are kept.
	mustParse(t, q("url", "https://a.example/", "format", "avif", "metadata_image_size", "true", "full_page", "true", "full_page_slices", "true"))
}
