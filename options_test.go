package shotd

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// TestOptionsLegacyS1Record: a job record written before the ScreenshotOne options were folded
// into Options keeps them in an "S1" object; it still decodes to the options it was asked with.
func TestOptionsLegacyS1Record(t *testing.T) {
	old := `{"URL":"https://a.example/","Format":"png","FullPage":true,"S1":{"Hover":"#menu",` +
		`"FullPageAlgorithm":"by_sections","FullPageScrollDelay":500000000,"Slices":true,"SliceHeight":4000,` +
		`"MetaFonts":true,"ScriptsWaitUntil":["load"],"Proxy":{"Host":"proxy.example:80","Sealed":"AQI=","Bypass":["*.b.example"]},` +
		`"ExternalIdentifier":"order-7","NoWebhookErrors":true}}`
	var got Options
	if err := json.Unmarshal([]byte(old), &got); err != nil {
		t.Fatal(err)
	}
	want := Options{URL: "https://a.example/", Format: "png", FullPage: true, Hover: "#menu",
		FullPageAlgorithm: "by_sections", FullPageScrollDelay: 500 * time.Millisecond, Slices: true, SliceHeight: 4000,
		MetaFonts: true, ScriptsWaitUntil: []string{"load"},
		Proxy:              &UpstreamProxy{Host: "proxy.example:80", Sealed: []byte{1, 2}, Bypass: []string{"*.b.example"}},
		ExternalIdentifier: "order-7", NoWebhookErrors: true}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("legacy record read as\n%+v\nwant\n%+v", got, want)
	}

	// And the current form round-trips.
	b, err := json.Marshal(&want)
	if err != nil {
		t.Fatal(err)
	}
	var again Options
	if err := json.Unmarshal(b, &again); err != nil || !reflect.DeepEqual(again, want) {
		t.Fatalf("round trip: %v\n%+v", err, again)
	}
}

func TestFormatKinds(t *testing.T) {
	tests := []struct {
		name                   string
		format                 string
		image, document, video bool
		contentType, extension string
	}{
		{"png", FormatPNG, true, false, false, "image/png", "png"},
		{"still gif", FormatGIFStill, true, false, false, "image/gif", "gif"},
		{"gif video", FormatGIF, false, false, true, "image/gif", "gif"},
		{"avif", FormatAVIF, true, false, false, "image/avif", "avif"},
		{"tiff", FormatTIFF, true, false, false, "image/tiff", "tiff"},
		{"jp2", FormatJP2, true, false, false, "image/jp2", "jp2"},
		{"heif", FormatHEIF, true, false, false, "image/heif", "heif"},
		{"html", FormatHTML, false, true, false, "text/html; charset=utf-8", "html"},
		{"markdown", FormatMarkdown, false, true, false, "text/markdown; charset=utf-8", "md"},
		{"pdf", FormatPDF, false, false, false, "application/pdf", "pdf"},
		{"unknown", "bmp", false, false, false, "", "bmp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsImage(tt.format); got != tt.image {
				t.Errorf("IsImage = %v", got)
			}
			if got := IsDocument(tt.format); got != tt.document {
				t.Errorf("IsDocument = %v", got)
			}
			if got := IsVideo(tt.format); got != tt.video {
				t.Errorf("IsVideo = %v", got)
			}
			if got := ContentTypes[tt.format]; got != tt.contentType {
				t.Errorf("ContentTypes = %q", got)
			}
			if got := Extension(tt.format); got != tt.extension {
				t.Errorf("Extension = %q", got)
			}
		})
	}
}
