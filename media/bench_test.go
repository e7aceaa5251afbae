package media

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"testing"
	"time"

	"github.com/shotd/shotd"
)

// scrollingFrames renders n frames of a synthetic page (bands of colour and rows of text-like
// blocks) scrolled with ease_in_out, as JPEGs at Chrome's default screencast quality.
func scrollingFrames(b *testing.B, w, h, n int) [][]byte {
	page := image.NewRGBA(image.Rect(0, 0, w, 4*h))
	for y := range page.Rect.Dy() {
		band := color.RGBA{uint8(240 - (y/300)%5*20), uint8(235 - (y/450)%4*25), 245, 255}
		for x := range w {
			c := band
			// "text": short dark runs on 18-px lines, in columns
			if y%18 < 11 && x%(37+y/18%23) < 28 && x > 80 && x < w-80 {
				c = color.RGBA{uint8(30 + x%40), 40, uint8(60 + y%50), 255}
			}
			i := page.PixOffset(x, y)
			page.Pix[i], page.Pix[i+1], page.Pix[i+2], page.Pix[i+3] = c.R, c.G, c.B, c.A
		}
	}
	frames := make([][]byte, n)
	dist := float64(page.Rect.Dy() - h)
	for i := range n {
		off := int(ScrollPosition(time.Duration(i), time.Duration(n-1), dist, EasingEaseInOut, false))
		frames[i] = encodeJPEG(b, page.SubImage(image.Rect(0, off, w, off+h)), 80)
	}
	return frames
}

// BenchmarkEncode reports the encode time per second of video of a scrolling page at 1280x720,
// 24 fps (gif: 15), every output frame a new image.
func BenchmarkEncode(b *testing.B) {
	const (
		w, h  = 1280, 720
		fps   = 24
		video = 2 * time.Second
	)
	frames := scrollingFrames(b, w, h, int(video.Seconds()*fps))
	for _, format := range []string{"mp4", "webm", "gif"} {
		b.Run(format, func(b *testing.B) {
			tmp := b.TempDir()
			var bytes int
			for b.Loop() {
				enc, err := NewEncoder(context.Background(), VideoSpec{Format: format, FPS: fps, Duration: video,
					Width: w, Height: h, TempDir: tmp}, testLog(b))
				if err != nil {
					b.Fatal(err)
				}
				for i, f := range frames {
					if err := enc.Add(Frame{Data: f, Timestamp: time.Duration(i) * time.Second / fps}); err != nil {
						b.Fatal(err)
					}
				}
				out, err := enc.Finish()
				if err != nil {
					b.Fatal(err)
				}
				enc.Close()
				bytes = len(out)
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N)/video.Seconds(), "ms/video-s")
			b.ReportMetric(float64(bytes)/video.Seconds()/1024, "KiB/video-s")
		})
	}
}

// BenchmarkEncodeStill reports the time and size of each still format for a 1280x1024 capture of
// a synthetic page (as from Chrome: a PNG), the process start included.
func BenchmarkEncodeStill(b *testing.B) {
	page := scrollingFrames(b, 1280, 1024, 1)[0] // a JPEG: made a PNG below, as Chrome's capture
	img, _, err := image.Decode(bytes.NewReader(page))
	if err != nil {
		b.Fatal(err)
	}
	pngData := encodePNG(b, img)
	for _, format := range []string{shotd.FormatAVIF, shotd.FormatJP2, shotd.FormatHEIF, shotd.FormatTIFF, shotd.FormatGIFStill} {
		b.Run(format, func(b *testing.B) {
			var size int
			for b.Loop() {
				data, err := EncodeStill(context.Background(), StillSpec{Format: format}, pngData)
				if err != nil {
					b.Fatal(err)
				}
				size = len(data)
			}
			b.ReportMetric(float64(size), "bytes")
		})
	}
}
