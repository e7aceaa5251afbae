package cdpclient

import (
	"bytes"
	"image"
	"image/jpeg"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/image/webp"

	"github.com/shotd/shotd"
)

// decodeImage decodes png, jpeg or webp.
func decodeImage(t testing.TB, format string, data []byte) image.Image {
	t.Helper()
	var img image.Image
	var err error
	switch format {
	case shotd.FormatJPEG:
		img, err = jpeg.Decode(bytes.NewReader(data))
	case shotd.FormatWebP:
		img, err = webp.Decode(bytes.NewReader(data))
	default:
		img, err = pngDecode(data)
	}
	if err != nil {
		t.Fatalf("decode %s (%d bytes): %v", format, len(data), err)
	}
	return img
}

func alphaAt(img image.Image, x, y int) uint8 {
	_, _, _, a := img.At(x, y).RGBA()
	return uint8(a >> 8)
}

func TestResize(t *testing.T) {
	mux := http.NewServeMux()
	// 400x300 viewport: top half red, bottom half blue.
	mux.HandleFunc("/", htmlPage(`<body style="margin:0"><div style="height:150px;background:#f00"></div><div style="height:2000px;background:#00f"></div></body>`))
	srv, _ := server(t, mux)

	tests := []struct {
		name         string
		format       string
		w, h         int
		fullPage     bool
		wantW, wantH int
	}{
		{name: "png width keeps ratio", format: shotd.FormatPNG, w: 200, wantW: 200, wantH: 150},
		{name: "png height keeps ratio", format: shotd.FormatPNG, h: 600, wantW: 800, wantH: 600},
		{name: "png both exact", format: shotd.FormatPNG, w: 100, h: 100, wantW: 100, wantH: 100},
		{name: "jpeg width", format: shotd.FormatJPEG, w: 100, wantW: 100, wantH: 75},
		{name: "webp both", format: shotd.FormatWebP, w: 160, h: 90, wantW: 160, wantH: 90},
		{name: "full page width", format: shotd.FormatPNG, w: 100, fullPage: true, wantW: 100, wantH: 538},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := opts(srv.URL)
			o.Format, o.ImageWidth, o.ImageHeight, o.FullPage = tt.format, tt.w, tt.h, tt.fullPage
			out := mustRender(t, shared, o)
			img := decodeImage(t, tt.format, out.Data)
			b := img.Bounds()
			if b.Dx() != tt.wantW || b.Dy() != tt.wantH || out.Width != tt.wantW || out.Height != tt.wantH {
				t.Fatalf("image %dx%d (Output %dx%d), want %dx%d", b.Dx(), b.Dy(), out.Width, out.Height, tt.wantW, tt.wantH)
			}
			if out.ContentType != shotd.ContentTypes[tt.format] {
				t.Errorf("content type %s", out.ContentType)
			}
			// The picture is scaled, not cut: red at the top, blue at the bottom.
			top, bottom := rgbAt(img, b.Dx()/2, 2), rgbAt(img, b.Dx()/2, b.Dy()-3)
			if !near(top, red, 24) || !near(bottom, blue, 24) {
				t.Errorf("top %v bottom %v, want red and blue", top, bottom)
			}
		})
	}
}

func TestOmitBackground(t *testing.T) {
	page := `<body style="margin:0"><div style="width:100px;height:100px;background:#f00"></div></body>`
	tests := []struct {
		name        string
		format      string
		omit        bool
		transparent bool
	}{
		{"png", shotd.FormatPNG, true, true},
		{"webp", shotd.FormatWebP, true, true},
		{"png opaque by default", shotd.FormatPNG, false, false},
		{"jpeg ignores it", shotd.FormatJPEG, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := htmlOpts(page)
			o.Format, o.OmitBackground = tt.format, tt.omit
			img := decodeImage(t, tt.format, mustRender(t, shared, o).Data)
			if a := alphaAt(img, 300, 200); (a == 0) != tt.transparent {
				t.Errorf("alpha of the page background = %d, want transparent %v", a, tt.transparent)
			}
			if tt.format != shotd.FormatJPEG {
				if a := alphaAt(img, 50, 50); a != 255 || !near(rgbAt(img, 50, 50), red, 24) { // lossy webp shifts pure red a little
					t.Errorf("the box: %v alpha %d, want opaque red", rgbAt(img, 50, 50), a)
				}
			}
			if !tt.transparent && rgbAt(img, 300, 200) != white {
				t.Errorf("background %v, want white", rgbAt(img, 300, 200))
			}
		})
	}
}

// TestPNGCompression: png_compression=fast (the default) and best encode the same pixels; best
// makes the smaller file of a page with text and gradients.
func TestPNGCompression(t *testing.T) {
	html := `<body style="margin:0;background:linear-gradient(45deg,#fde,#def)">` + strings.Repeat(`<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit.</p>`, 40) + `</body>`
	sizes := map[string]int{}
	var imgs []image.Image
	for _, c := range []string{shotd.PNGFast, shotd.PNGBest} {
		o := htmlOpts(html)
		o.PNGCompression = c
		out := mustRender(t, shared, o)
		sizes[c] = len(out.Data)
		imgs = append(imgs, decodePNG(t, out.Data))
	}
	if sizes[shotd.PNGBest] >= sizes[shotd.PNGFast] {
		t.Errorf("best is %d bytes, fast %d: want best smaller", sizes[shotd.PNGBest], sizes[shotd.PNGFast])
	}
	b := imgs[0].Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 7 {
		for x := b.Min.X; x < b.Max.X; x += 7 {
			if imgs[0].At(x, y) != imgs[1].At(x, y) {
				t.Fatalf("pixel (%d,%d) differs between fast and best", x, y)
			}
		}
	}
	t.Logf("fast %d bytes, best %d bytes (+%.0f%%)", sizes[shotd.PNGFast], sizes[shotd.PNGBest], 100*float64(sizes[shotd.PNGFast]-sizes[shotd.PNGBest])/float64(sizes[shotd.PNGBest]))
}
