package shotd

import (
	"testing"
	"time"
)

func TestRenderBudget(t *testing.T) {
	s := time.Second
	tests := []struct {
		name string
		o    Options
		want time.Duration
	}{
		{"defaults", Options{}, 30*s + RenderSlack},
		{"timeout and delay", Options{Timeout: 5 * s, Delay: 20 * s}, 25*s + RenderSlack},
		{"video of fixed length", Options{Format: FormatMP4, Timeout: s, VideoDuration: 20 * s}, s + RenderSlack + 70*s},
		{"video following the page", Options{Format: FormatGIF, Timeout: s, VideoMaxDuration: 10 * s}, s + RenderSlack + 50*s},
		{"video without lengths", Options{Format: FormatWebM}, 30*s + RenderSlack + 90*s},
		{"pdf is no video", Options{Format: FormatPDF, VideoDuration: 20 * s}, 30*s + RenderSlack},
		{"heif has its encoder's time", Options{Format: FormatHEIF, Timeout: s}, s + RenderSlack + StillEncodeAllowance},
		{"a still gif is no video", Options{Format: FormatGIFStill, Timeout: s, VideoDuration: 20 * s}, s + RenderSlack + StillEncodeAllowance},
		{"tiff is encoded in Go", Options{Format: FormatTIFF, Timeout: s}, s + RenderSlack},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.o.RenderBudget(); got != tt.want {
				t.Errorf("RenderBudget = %s, want %s", got, tt.want)
			}
		})
	}
}
