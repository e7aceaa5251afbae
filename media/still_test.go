package media

import (
	"context"
	"image"
	"image/color"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/internal/testkit"
)

// stillSource is an odd-sized picture with four colour blocks, as a capture may be.
func stillSource() *image.RGBA {
	img := solid(301, 203, red)
	for y := 0; y < 203; y++ {
		for x := 0; x < 301; x++ {
			switch {
			case x >= 150 && y < 100:
				img.Set(x, y, green)
			case x < 150 && y >= 100:
				img.Set(x, y, blue)
			case x >= 150 && y >= 100:
				img.Set(x, y, yellow)
			}
		}
	}
	return img
}

// TestEncodeStill: each still format, from a PNG and from an image, is a file of its format (its
// magic bytes) with the source's size as an independent decoder reads it; nothing is left in the
// temp dir and no process outlives the call.
func TestEncodeStill(t *testing.T) {
	src := stillSource()
	pngData := encodePNG(t, src)
	for _, format := range []string{shotd.FormatAVIF, shotd.FormatJP2, shotd.FormatHEIF, shotd.FormatGIFStill, shotd.FormatTIFF} {
		t.Run(format, func(t *testing.T) {
			dir := t.TempDir()
			checkNoLeaks(t, dir)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			spec := StillSpec{Format: format, Quality: 80, TempDir: dir}
			fromPNG, err := EncodeStill(ctx, spec, pngData)
			if err != nil {
				t.Fatal(err)
			}
			fromImage, err := EncodeStillImage(ctx, spec, src)
			if err != nil {
				t.Fatal(err)
			}
			for _, data := range [][]byte{fromPNG, fromImage} {
				if w, h := testkit.ImageSize(t, format, data); w != 301 || h != 203 {
					t.Errorf("size %dx%d, want 301x203", w, h)
				}
			}
		})
	}
}

// TestStillQuality: image_quality changes the lossy formats' files; jp2 at 100 is lossless.
func TestStillQuality(t *testing.T) {
	pngData := encodePNG(t, noisy(200, 120))
	ctx := context.Background()
	for _, format := range []string{shotd.FormatAVIF, shotd.FormatJP2, shotd.FormatHEIF} {
		t.Run(format, func(t *testing.T) {
			low, err := EncodeStill(ctx, StillSpec{Format: format, Quality: 10}, pngData)
			if err != nil {
				t.Fatal(err)
			}
			high, err := EncodeStill(ctx, StillSpec{Format: format, Quality: 95}, pngData)
			if err != nil {
				t.Fatal(err)
			}
			if len(low) >= len(high) {
				t.Errorf("quality 10 gives %d bytes, quality 95 %d: want fewer", len(low), len(high))
			}
		})
	}
	lossless, err := EncodeStill(ctx, StillSpec{Format: shotd.FormatJP2, Quality: 100}, pngData)
	if err != nil {
		t.Fatal(err)
	}
	got := frameAt(t, lossless, 0, 1)
	want := noisy(200, 120)
	for _, p := range []image.Point{{0, 0}, {17, 33}, {199, 119}} {
		if r1, g1, b1, _ := got.At(p.X, p.Y).RGBA(); color.RGBAModel.Convert(want.At(p.X, p.Y)) != (color.RGBA{uint8(r1 >> 8), uint8(g1 >> 8), uint8(b1 >> 8), 255}) {
			t.Errorf("lossless jp2 at %v is %v, want %v", p, got.At(p.X, p.Y), want.At(p.X, p.Y))
		}
	}
}

// noisy is a picture that compresses badly, with a fixed pattern.
func noisy(w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = uint8(i*7919 + i/3*104729)
		if i%4 == 3 {
			img.Pix[i] = 255
		}
	}
	return img
}

// TestStillUnavailable: without heif-enc, heif is refused as invalid_options on the format,
// saying it is not available on this server; the other formats do not need it.
func TestStillUnavailable(t *testing.T) {
	old := heifEncBin
	heifEncBin = "/nonexistent/heif-enc"
	t.Cleanup(func() { heifEncBin = old })
	_, err := EncodeStill(context.Background(), StillSpec{Format: shotd.FormatHEIF}, encodePNG(t, stillSource()))
	e := shotd.AsError(err)
	if e.Code != shotd.CodeInvalidOptions || len(e.Fields) != 1 || e.Fields[0].Field != "format" || !strings.Contains(e.Message, "not available on this server") {
		t.Fatalf("got %v (%+v)", err, e.Fields)
	}
	if err := StillAvailable(shotd.FormatAVIF); err != nil {
		t.Fatalf("avif: %v", err)
	}
}

// TestStillEncoderFails: an encoder that fails is an internal_error; one that hangs is killed
// by the context's deadline as a timeout, with nothing left running nor in the temp dir.
func TestStillEncoderFails(t *testing.T) {
	_, err := EncodeStill(context.Background(), StillSpec{Format: shotd.FormatAVIF}, []byte("not a png"))
	wantCode(t, err, shotd.CodeInternalError)

	hung := filepath.Join(t.TempDir(), "ffmpeg")
	if err := os.WriteFile(hung, []byte("#!/bin/sh\nexec sleep 3600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	old := ffmpegBin
	ffmpegBin = hung
	t.Cleanup(func() { ffmpegBin = old })
	tmp := t.TempDir()
	checkNoLeaks(t, tmp)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = EncodeStill(ctx, StillSpec{Format: shotd.FormatJP2, TempDir: tmp}, encodePNG(t, stillSource()))
	wantCode(t, err, shotd.CodeTimeout)
}
