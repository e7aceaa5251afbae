package cdpclient

import (
	"bytes"
	"image"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf16"
)

// TestOperatorFont: a font the operator puts in a fontconfig directory that the service's Chrome
// reads (here $XDG_DATA_HOME/fonts, which Chrome inherits from the service, as README's "Fonts"
// says) is the font a page that names it gets. The font is Debian's Liberation Mono under a
// family name no installed font has: a Chrome without the directory falls back to its default
// font for it.
func TestOperatorFont(t *testing.T) {
	src, err := os.ReadFile("/usr/share/fonts/truetype/liberation/LiberationMono-Regular.ttf")
	if err != nil {
		t.Fatalf("fonts-liberation (scripts/install-deps.sh): %v", err)
	}
	// The same number of characters, so that the name table's offsets and lengths hold: as
	// ASCII (Macintosh names) and as UTF-16BE (Windows names).
	const from, to = "Liberation Mono", "Shotd Test Mono"
	font := bytes.ReplaceAll(src, []byte(from), []byte(to))
	font = bytes.ReplaceAll(font, utf16be(from), utf16be(to))
	if bytes.Equal(font, src) {
		t.Fatal("the family name was not found in the font")
	}
	data := t.TempDir()
	if err := os.MkdirAll(filepath.Join(data, "fonts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "fonts", "ShotdTestMono.ttf"), font, 0o644); err != nil {
		t.Fatal(err)
	}
	page := func(family string) string {
		return `<body style="margin:0;background:#fff"><p style="margin:0;font:48px '` + family + `', serif;color:#000">iiiWWW mmm</p></body>`
	}
	t.Setenv("XDG_DATA_HOME", data) // before the launch: Chrome takes the service's environment
	p := launchIsolated(t, 0, IsolationWipe)

	withFont := decodePNG(t, mustRender(t, p, htmlOpts(page(to))).Data)
	liberation := decodePNG(t, mustRender(t, p, htmlOpts(page(from))).Data)
	without := decodePNG(t, mustRender(t, shared, htmlOpts(page(to))).Data)
	if !sameImage(withFont, liberation) {
		t.Errorf("the page naming %q is not set in the installed font", to)
	}
	if sameImage(without, liberation) {
		t.Errorf("a Chrome without the font directory renders %q as the font too: the test shows nothing", to)
	}
}

func utf16be(s string) []byte {
	var b []byte
	for _, u := range utf16.Encode([]rune(s)) {
		b = append(b, byte(u>>8), byte(u))
	}
	return b
}

func sameImage(a, b image.Image) bool {
	if a.Bounds() != b.Bounds() {
		return false
	}
	for y := a.Bounds().Min.Y; y < a.Bounds().Max.Y; y++ {
		for x := a.Bounds().Min.X; x < a.Bounds().Max.X; x++ {
			if rgbAt(a, x, y) != rgbAt(b, x, y) {
				return false
			}
		}
	}
	return true
}
