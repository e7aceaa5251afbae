package testkit

import (
	"bytes"
	"context"
	"image"
	_ "image/gif"  // DecodeConfig of gif_still
	_ "image/jpeg" // DecodeConfig of jpeg
	_ "image/png"  // DecodeConfig of png
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "golang.org/x/image/tiff" // DecodeConfig of tiff
)

// imageMagic is how a file of each image format starts: the bytes at an offset.
var imageMagic = map[string]struct {
	at    int
	magic string
}{
	"png":       {0, "\x89PNG\r\n\x1a\n"},
	"jpeg":      {0, "\xff\xd8\xff"},
	"gif_still": {0, "GIF89a"},
	"tiff":      {0, "II*\x00"},
	"jp2":       {0, "\x00\x00\x00\x0cjP  \r\n\x87\n"},
	"avif":      {4, "ftypavif"},
	"heif":      {4, "ftypheic"},
}

// ImageSize checks that data starts as a file of format does and returns its pixel size, read
// by a decoder independent of the code that wrote it: Go's for png, jpeg, gif and tiff, ffprobe
// for avif and jp2, heif-info (libheif) for heif.
func ImageSize(t testing.TB, format string, data []byte) (w, h int) {
	t.Helper()
	m, ok := imageMagic[format]
	if !ok {
		t.Fatalf("ImageSize: no magic known for %q", format)
	}
	if len(data) < m.at+len(m.magic) || string(data[m.at:m.at+len(m.magic)]) != m.magic {
		t.Fatalf("%s: the file starts with %q, want %q at %d", format, head(data, 16), m.magic, m.at)
	}
	switch format {
	case "avif", "jp2":
		out := runTool(t, data, "ffprobe", "-v", "error", "-select_streams", "v:0",
			"-show_entries", "stream=codec_name,width,height", "-of", "csv=p=0")
		var codec string
		parts := strings.Split(strings.TrimSpace(out), ",")
		if len(parts) == 3 {
			codec = parts[0]
			w, _ = strconv.Atoi(parts[1])
			h, _ = strconv.Atoi(parts[2])
		}
		want := map[string]string{"avif": "av1", "jp2": "jpeg2000"}[format]
		if codec != want || w <= 0 || h <= 0 {
			t.Fatalf("%s: ffprobe says %q, want a %s stream", format, out, want)
		}
		return w, h
	case "heif":
		out := runTool(t, data, "heif-info")
		sm := regexp.MustCompile(`image: (\d+)x(\d+) \(id=\d+\), primary`).FindStringSubmatch(out)
		if sm == nil {
			t.Fatalf("heif: heif-info says %q", out)
		}
		w, _ = strconv.Atoi(sm[1])
		h, _ = strconv.Atoi(sm[2])
		return w, h
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", format, err)
	}
	return cfg.Width, cfg.Height
}

// runTool runs name with args and the file holding data last, and returns its output.
func runTool(t testing.TB, data []byte, name string, args ...string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "image")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, append(args, file)...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v: %s", name, err, out)
	}
	return string(out)
}

func head(b []byte, n int) string { return string(b[:min(n, len(b))]) }
