package media

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/shotd/shotd"
	iproc "github.com/shotd/shotd/internal/proc"
	"github.com/shotd/shotd/internal/testkit"
)

// The colours of the synthetic frames; far apart so that compression cannot confuse them.
var (
	red    = color.RGBA{220, 30, 30, 255}
	green  = color.RGBA{30, 200, 30, 255}
	blue   = color.RGBA{30, 30, 220, 255}
	yellow = color.RGBA{230, 220, 40, 255}
	black  = color.RGBA{0, 0, 0, 255}
)

var palette = map[string]color.RGBA{"red": red, "green": green, "blue": blue, "yellow": yellow, "black": black}

func testLog(t testing.TB) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
}

func solid(w, h int, c color.RGBA) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = c.R, c.G, c.B, c.A
	}
	return img
}

func encodeJPEG(t testing.TB, img image.Image, q int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: q}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func encodePNG(t testing.TB, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// noiseJPEG is a frame that compresses badly, for the size limit.
func noiseJPEG(t testing.TB, w, h int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = uint8(r.Uint32())
	}
	return encodeJPEG(t, img, 90)
}

// noiseJPEGs is n noise frames, seeded 0 to n-1.
func noiseJPEGs(t testing.TB, n, w, h int) [][]byte {
	frames := make([][]byte, n)
	for i := range frames {
		frames[i] = noiseJPEG(t, w, h, uint64(i))
	}
	return frames
}

// frameAt decodes output frame i of a video: -ss half a frame before its start, so that the
// first frame at or after that time is frame i whatever the container's timestamp rounding.
func frameAt(t testing.TB, video []byte, i, fps int) image.Image {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "v")
	if err := os.WriteFile(file, video, 0o600); err != nil {
		t.Fatal(err)
	}
	ss := 0.0
	if i > 0 {
		ss = (float64(i) - 0.5) / float64(fps)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, stderr bytes.Buffer
	args := []string{"-v", "error", "-ss", strconv.FormatFloat(ss, 'f', 4, 64), "-i", file}
	if len(video) >= 12 && string(video[:4]) == "RIFF" && string(video[8:12]) == "AVI " {
		// The AVI demuxer seeks to the frame showing at ss (frame i-1 at the midpoint), the
		// others to the next one: pick frame i by its number instead.
		args = []string{"-v", "error", "-i", file, "-vf", "select=eq(n\\," + strconv.Itoa(i) + ")"}
	}
	args = append(args, "-frames:v", "1", "-f", "image2", "-c:v", "png", "pipe:1")
	cmd := exec.CommandContext(ctx, ffmpegBin, args...)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("decode frame %d: %v: %s", i, err, stderr.String())
	}
	img, err := png.Decode(&out)
	if err != nil {
		t.Fatalf("decode frame %d: %d bytes of output: %v", i, out.Len(), err)
	}
	return img
}

// colourName names the palette colour nearest to c, or "" when none is near.
func colourName(c color.Color) string {
	r, g, b, _ := c.RGBA()
	best, bestD := "", 3*48*48
	for name, p := range palette {
		dr, dg, db := int(r>>8)-int(p.R), int(g>>8)-int(p.G), int(b>>8)-int(p.B)
		if d := dr*dr + dg*dg + db*db; d < bestD {
			best, bestD = name, d
		}
	}
	return best
}

// alive reports whether pid still exists (a zombie counts: it was not reaped).
func alive(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return err == nil
}

// checkNoLeaks fails the test if, at its end, goroutines outlive it or dir is not empty.
func checkNoLeaks(t *testing.T, dir string) {
	t.Helper()
	if dir != "" {
		t.Cleanup(func() { testkit.DirEmpty(t, dir) }) // after the goroutines are checked
	}
	testkit.CheckGoroutines(t, 3*time.Second)
}

func wantCode(t testing.TB, err error, code shotd.Code) {
	t.Helper()
	var se *shotd.Error
	if !errors.As(err, &se) {
		t.Fatalf("error %v is not a *shotd.Error, want %s", err, code)
	}
	if se.Code != code {
		t.Fatalf("error code %s (%v), want %s", se.Code, err, code)
	}
}

func procOf(e *Encoder) *iproc.Child { return e.p.Load() }
