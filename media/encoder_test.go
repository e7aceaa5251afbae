package media

import (
	"context"
	"image"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shotd/shotd"
)

// script is the irregular timing of a recording: Chrome sends a frame when the page changes.
var script = []struct {
	at   time.Duration
	name string
	c    color.RGBA
}{
	{0, "red", red},
	{40 * time.Millisecond, "green", green},
	{400 * time.Millisecond, "blue", blue},
	{1900 * time.Millisecond, "yellow", yellow},
}

// shownAt is the CFR rule, written independently of the encoder: output frame i shows the latest
// script frame with at <= i/fps, and the first frame before that.
func shownAt(i, fps int) int {
	k := 0
	for j, f := range script {
		if float64(f.at)/float64(time.Second) <= float64(i)/float64(fps)+1e-9 {
			k = j
		}
	}
	return k
}

// checkIndices are the output frames on both sides of every change, the first and the last.
func checkIndices(fps, total int) []int {
	idx := []int{0, total - 1}
	for _, f := range script[1:] {
		first := int(math.Ceil(f.at.Seconds()*float64(fps) - 1e-9))
		for _, i := range []int{first - 1, first} {
			if i >= 0 && i < total {
				idx = append(idx, i)
			}
		}
	}
	slices.Sort(idx)
	return slices.Compact(idx)
}

func TestEncode(t *testing.T) {
	const dur = 2 * time.Second
	tests := []struct {
		name            string
		spec            VideoSpec
		frameW, frameH  int
		png             bool
		resize          map[int]image.Point // script index -> a different frame size
		perFramePalette bool
		wantFormat      string // one of ffprobe's format names
		wantCodec       string
		wantFPS         int
		wantW, wantH    int
		padded          map[int]bool // script index -> its frames are pillarboxed
	}{
		{name: "mp4", spec: VideoSpec{Format: "mp4", FPS: 24, Width: 640, Height: 360},
			frameW: 640, frameH: 360, wantFormat: "mp4", wantCodec: "h264", wantFPS: 24, wantW: 640, wantH: 360},
		{name: "mov", spec: VideoSpec{Format: "mov", FPS: 24, Width: 640, Height: 360},
			frameW: 640, frameH: 360, wantFormat: "mov", wantCodec: "h264", wantFPS: 24, wantW: 640, wantH: 360},
		{name: "avi", spec: VideoSpec{Format: "avi", FPS: 24, Width: 640, Height: 360},
			frameW: 640, frameH: 360, wantFormat: "avi", wantCodec: "mpeg4", wantFPS: 24, wantW: 640, wantH: 360},
		{name: "webm", spec: VideoSpec{Format: "webm", FPS: 24, Width: 640, Height: 360},
			frameW: 640, frameH: 360, wantFormat: "webm", wantCodec: "vp9", wantFPS: 24, wantW: 640, wantH: 360},
		{name: "gif clamps the frame rate to 15", spec: VideoSpec{Format: "gif", FPS: 24, Width: 320, Height: 180},
			frameW: 320, frameH: 180, wantFormat: "gif", wantCodec: "gif", wantFPS: 15, wantW: 320, wantH: 180},
		{name: "gif with a palette per frame from png frames", spec: VideoSpec{Format: "gif", FPS: 10, Width: 320, Height: 180},
			frameW: 320, frameH: 180, png: true, perFramePalette: true,
			wantFormat: "gif", wantCodec: "gif", wantFPS: 10, wantW: 320, wantH: 180},
		{name: "mp4 odd size is cropped to even", spec: VideoSpec{Format: "mp4", FPS: 30, Width: 641, Height: 361},
			frameW: 641, frameH: 361, wantFormat: "mp4", wantCodec: "h264", wantFPS: 30, wantW: 640, wantH: 360},
		{name: "webm double-density frames are scaled down", spec: VideoSpec{Format: "webm", FPS: 12, Width: 640, Height: 360},
			frameW: 1280, frameH: 720, wantFormat: "webm", wantCodec: "vp9", wantFPS: 12, wantW: 640, wantH: 360},
		{name: "mp4 square frames are pillarboxed", spec: VideoSpec{Format: "mp4", FPS: 24, Width: 640, Height: 360},
			frameW: 400, frameH: 400, wantFormat: "mp4", wantCodec: "h264", wantFPS: 24, wantW: 640, wantH: 360,
			padded: map[int]bool{0: true, 1: true, 2: true, 3: true}},
		{name: "gif frame of another size mid-stream is fitted in", spec: VideoSpec{Format: "gif", FPS: 15, Width: 320, Height: 180},
			frameW: 320, frameH: 180, resize: map[int]image.Point{2: {400, 300}},
			wantFormat: "gif", wantCodec: "gif", wantFPS: 15, wantW: 320, wantH: 180, padded: map[int]bool{2: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			checkNoLeaks(t, tmp)
			if tt.perFramePalette {
				old := gifPaletteBudget
				gifPaletteBudget = 0
				t.Cleanup(func() { gifPaletteBudget = old })
			}
			spec := tt.spec
			spec.Duration, spec.TempDir = dur, tmp
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			enc, err := NewEncoder(ctx, spec, testLog(t))
			if err != nil {
				t.Fatal(err)
			}
			defer enc.Close()
			for i, f := range script {
				w, h := tt.frameW, tt.frameH
				if p, ok := tt.resize[i]; ok {
					w, h = p.X, p.Y
				}
				img := solid(w, h, f.c)
				data := encodeJPEG(t, img, 85)
				if tt.png {
					data = encodePNG(t, img)
				}
				if err := enc.Add(Frame{Data: data, Timestamp: f.at}); err != nil {
					t.Fatalf("add %s: %v", f.name, err)
				}
			}
			start := time.Now()
			video, err := enc.Finish()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d bytes, finish took %s", len(video), time.Since(start).Round(time.Millisecond))
			if err := enc.Close(); err != nil {
				t.Errorf("close after finish: %v", err)
			}

			info, err := Probe(ctx, video)
			if err != nil {
				t.Fatal(err)
			}
			if !info.HasFormat(tt.wantFormat) {
				t.Errorf("format %q, want %s", info.Format, tt.wantFormat)
			}
			if info.Codec != tt.wantCodec {
				t.Errorf("codec %q, want %s", info.Codec, tt.wantCodec)
			}
			if math.Abs(info.FrameRate-float64(tt.wantFPS)) > 0.01 {
				t.Errorf("frame rate %v, want %d", info.FrameRate, tt.wantFPS)
			}
			if info.Width != tt.wantW || info.Height != tt.wantH {
				t.Errorf("size %dx%d, want %dx%d", info.Width, info.Height, tt.wantW, tt.wantH)
			}
			total := int(math.Round(dur.Seconds() * float64(tt.wantFPS)))
			if info.Frames < total-1 || info.Frames > total+1 {
				t.Errorf("%d frames, want %d±1", info.Frames, total)
			}
			if diff := math.Abs(info.Duration.Seconds() - dur.Seconds()); diff > dur.Seconds()/100 {
				t.Errorf("duration %s, want %s within 1%%", info.Duration, dur)
			}
			if tt.wantCodec != "gif" && info.PixFmt != "yuv420p" {
				t.Errorf("pixel format %q, want yuv420p", info.PixFmt)
			}

			for _, i := range checkIndices(tt.wantFPS, total) {
				img := frameAt(t, video, i, tt.wantFPS)
				b := img.Bounds()
				want := script[shownAt(i, tt.wantFPS)]
				if got := colourName(img.At(b.Dx()/2, b.Dy()/2)); got != want.name {
					t.Errorf("frame %d (%.3fs) shows %q, want %s", i, float64(i)/float64(tt.wantFPS), got, want.name)
				}
				edge := colourName(img.At(4, b.Dy()/2))
				if pad := tt.padded[shownAt(i, tt.wantFPS)]; pad && edge != "black" {
					t.Errorf("frame %d left edge is %q, want black padding", i, edge)
				} else if !pad && edge != want.name {
					t.Errorf("frame %d left edge is %q, want %s", i, edge, want.name)
				}
			}
		})
	}
}

func TestEncodeFrameTiming(t *testing.T) {
	// A later first frame fills the start; frames after Duration are ignored; a frame exactly on an
	// output time shows at it.
	tmp := t.TempDir()
	checkNoLeaks(t, tmp)
	const fps = 10
	enc, err := NewEncoder(context.Background(), VideoSpec{Format: "mp4", FPS: fps, Duration: time.Second,
		Width: 160, Height: 90, TempDir: tmp}, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	frames := []struct {
		at time.Duration
		c  color.RGBA
	}{
		{300 * time.Millisecond, red},
		{500 * time.Millisecond, green}, // exactly output frame 5
		{2 * time.Second, blue},         // after the end
	}
	for _, f := range frames {
		if err := enc.Add(Frame{Data: encodeJPEG(t, solid(160, 90, f.c), 90), Timestamp: f.at}); err != nil {
			t.Fatal(err)
		}
	}
	video, err := enc.Finish()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		frame int
		want  string
	}{
		{name: "first frame fills the start", frame: 0, want: "red"},
		{name: "before the change", frame: 4, want: "red"},
		{name: "on the change", frame: 5, want: "green"},
		{name: "a frame after the end is not shown", frame: 9, want: "green"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			img := frameAt(t, video, tt.frame, fps)
			if got := colourName(img.At(80, 45)); got != tt.want {
				t.Errorf("frame %d shows %q, want %s", tt.frame, got, tt.want)
			}
		})
	}
	info, err := Probe(context.Background(), video)
	if err != nil {
		t.Fatal(err)
	}
	if info.Frames != 10 {
		t.Errorf("%d frames, want 10", info.Frames)
	}
}

func TestEncoderKilledWithItsContext(t *testing.T) {
	tests := []struct {
		name     string
		ctx      func() (context.Context, context.CancelFunc)
		end      func(cancel context.CancelFunc) // ends ctx while ffmpeg runs
		wantCode shotd.Code
	}{
		{
			name: "deadline",
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 400*time.Millisecond)
			},
			end:      func(context.CancelFunc) {},
			wantCode: shotd.CodeTimeout,
		},
		{
			name:     "cancel",
			ctx:      func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
			end:      func(cancel context.CancelFunc) { time.AfterFunc(300*time.Millisecond, cancel) },
			wantCode: shotd.CodeInternalError,
		},
	}
	// Noise frames keep ffmpeg busy far longer than the context lives.
	noise := noiseJPEGs(t, 4, 1280, 720)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			checkNoLeaks(t, tmp)
			ctx, cancel := tt.ctx()
			defer cancel()
			enc, err := NewEncoder(ctx, VideoSpec{Format: "webm", FPS: 30, Duration: 30 * time.Second,
				Width: 1280, Height: 720, TempDir: tmp}, testLog(t))
			if err != nil {
				t.Fatal(err)
			}
			defer enc.Close()
			var pid int
			tt.end(cancel)
			for i := 0; ; i++ {
				err = enc.Add(Frame{Data: noise[i%len(noise)], Timestamp: time.Duration(i) * time.Second})
				if pid == 0 && procOf(enc) != nil {
					pid = procOf(enc).PID()
					if !alive(pid) {
						t.Fatalf("ffmpeg %d is not running after the first frame", pid)
					}
				}
				if err != nil {
					break
				}
				if i > 30 {
					t.Fatal("encoding was not stopped by the context")
				}
			}
			wantCode(t, err, tt.wantCode)
			if pid == 0 {
				t.Fatal("ffmpeg never started")
			}
			// Killed and reaped by the context alone, before Close.
			if alive(pid) {
				t.Errorf("ffmpeg %d still exists after the context ended", pid)
			}
			if _, err := enc.Finish(); err == nil {
				t.Error("finish after the context ended succeeded")
			}
			if err := enc.Close(); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestEncoderCloseWhileAdding(t *testing.T) {
	tmp := t.TempDir()
	checkNoLeaks(t, tmp)
	enc, err := NewEncoder(context.Background(), VideoSpec{Format: "mp4", FPS: 30, Duration: 30 * time.Second,
		Width: 1280, Height: 720, TempDir: tmp}, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := enc.Add(Frame{Data: noiseJPEG(t, 1280, 720, 1)}); err != nil {
		t.Fatal(err)
	}
	pid := procOf(enc).PID()
	next := noiseJPEG(t, 1280, 720, 2)
	errc := make(chan error, 1)
	go func() {
		// 900 output frames: far more than ffmpeg encodes before Close.
		errc <- enc.Add(Frame{Data: next, Timestamp: 30 * time.Second})
	}()
	time.Sleep(300 * time.Millisecond)
	var wg sync.WaitGroup
	for range 3 { // Close is idempotent and safe from several goroutines
		wg.Go(func() {
			if err := enc.Close(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	select {
	case err := <-errc:
		wantCode(t, err, shotd.CodeInternalError)
	case <-time.After(10 * time.Second):
		t.Fatal("add still blocked after close")
	}
	if alive(pid) {
		t.Errorf("ffmpeg %d still exists after close", pid)
	}
	if err := enc.Add(Frame{Data: noiseJPEG(t, 16, 16, 3)}); err == nil {
		t.Error("add after close succeeded")
	}
}

func TestEncoderMaxBytes(t *testing.T) {
	tests := []struct {
		name     string
		format   string
		maxBytes int64
		wantCode shotd.Code // "" for success
	}{
		{name: "mp4 over the limit", format: "mp4", maxBytes: 20_000, wantCode: shotd.CodeContentTooLarge},
		{name: "webm over the limit", format: "webm", maxBytes: 20_000, wantCode: shotd.CodeContentTooLarge},
		{name: "gif over the limit", format: "gif", maxBytes: 20_000, wantCode: shotd.CodeContentTooLarge},
		{name: "mp4 under the limit", format: "mp4", maxBytes: 50 << 20},
	}
	frames := noiseJPEGs(t, 6, 320, 240)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			checkNoLeaks(t, tmp)
			enc, err := NewEncoder(context.Background(), VideoSpec{Format: tt.format, FPS: 15, Duration: 2 * time.Second,
				Width: 320, Height: 240, MaxBytes: tt.maxBytes, TempDir: tmp}, testLog(t))
			if err != nil {
				t.Fatal(err)
			}
			defer enc.Close()
			var pid int
			for i := range 30 {
				if err = enc.Add(Frame{Data: frames[i%len(frames)], Timestamp: time.Duration(i) * time.Second / 15}); err != nil {
					break
				}
				pid = procOf(enc).PID()
			}
			var video []byte
			if err == nil {
				video, err = enc.Finish()
			}
			if tt.wantCode == "" {
				if err != nil {
					t.Fatal(err)
				}
				if int64(len(video)) > tt.maxBytes || len(video) == 0 {
					t.Errorf("%d bytes, limit %d", len(video), tt.maxBytes)
				}
				return
			}
			wantCode(t, err, tt.wantCode)
			if err := enc.Close(); err != nil {
				t.Error(err)
			}
			if alive(pid) {
				t.Errorf("ffmpeg %d still exists", pid)
			}
		})
	}
}

func TestEncoderFFmpegFailure(t *testing.T) {
	dir := t.TempDir()
	failing := filepath.Join(dir, "ffmpeg")
	if err := os.WriteFile(failing, []byte("#!/bin/sh\necho 'boom: no encoder here' >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		bin       string
		wantCause string
	}{
		{name: "ffmpeg exits with an error", bin: failing, wantCause: "boom: no encoder here"},
		{name: "ffmpeg is missing", bin: filepath.Join(dir, "missing"), wantCause: "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			checkNoLeaks(t, tmp)
			old := ffmpegBin
			ffmpegBin = tt.bin
			defer func() { ffmpegBin = old }()
			enc, err := NewEncoder(context.Background(), VideoSpec{Format: "mp4", FPS: 24, Duration: time.Second,
				Width: 64, Height: 64, TempDir: tmp}, testLog(t))
			if err != nil {
				t.Fatal(err)
			}
			defer enc.Close()
			err = enc.Add(Frame{Data: encodeJPEG(t, solid(64, 64, red), 90)})
			if err == nil {
				_, err = enc.Finish()
			}
			wantCode(t, err, shotd.CodeInternalError)
			se := shotd.AsError(err)
			if se.Cause == nil || !strings.Contains(se.Cause.Error(), tt.wantCause) {
				t.Errorf("cause %v, want it to contain %q", se.Cause, tt.wantCause)
			}
			if strings.Contains(se.Message, "boom") {
				t.Errorf("message %q shows ffmpeg's stderr", se.Message)
			}
		})
	}
}

func TestEncoderMisuse(t *testing.T) {
	frame := encodeJPEG(t, solid(64, 64, red), 90)
	tests := []struct {
		name string
		run  func(enc *Encoder) error // returns the error that must come
	}{
		{name: "finish without frames", run: func(enc *Encoder) error {
			_, err := enc.Finish()
			return err
		}},
		{name: "unreadable frame is refused and the encoder goes on", run: func(enc *Encoder) error {
			err := enc.Add(Frame{Data: []byte("not an image")})
			if err == nil {
				return nil
			}
			if err := enc.Add(Frame{Data: frame}); err != nil {
				t.Errorf("add after a refused frame: %v", err)
			}
			if _, err := enc.Finish(); err != nil {
				t.Errorf("finish after a refused frame: %v", err)
			}
			return err
		}},
		{name: "finish twice", run: func(enc *Encoder) error {
			if err := enc.Add(Frame{Data: frame}); err != nil {
				t.Fatal(err)
			}
			if _, err := enc.Finish(); err != nil {
				t.Fatal(err)
			}
			_, err := enc.Finish()
			return err
		}},
		{name: "add after finish", run: func(enc *Encoder) error {
			if err := enc.Add(Frame{Data: frame}); err != nil {
				t.Fatal(err)
			}
			if _, err := enc.Finish(); err != nil {
				t.Fatal(err)
			}
			return enc.Add(Frame{Data: frame})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			checkNoLeaks(t, tmp)
			enc, err := NewEncoder(context.Background(), VideoSpec{Format: "mp4", FPS: 10, Duration: time.Second,
				Width: 64, Height: 64, TempDir: tmp}, testLog(t))
			if err != nil {
				t.Fatal(err)
			}
			wantCode(t, tt.run(enc), shotd.CodeInternalError)
			for range 2 {
				if err := enc.Close(); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

func TestVideoSpecNormalized(t *testing.T) {
	ok := VideoSpec{Format: "mp4", FPS: 24, Duration: time.Second, Width: 1280, Height: 720}
	tests := []struct {
		name    string
		edit    func(*VideoSpec)
		want    func(*VideoSpec) // nil: an error is wanted
		wantErr bool
	}{
		{name: "valid", edit: func(*VideoSpec) {}, want: func(*VideoSpec) {}},
		{name: "mp4 odd size rounds down", edit: func(s *VideoSpec) { s.Width, s.Height = 1281, 721 },
			want: func(s *VideoSpec) { s.Width, s.Height = 1280, 720 }},
		{name: "webm odd size rounds down", edit: func(s *VideoSpec) { s.Format, s.Width, s.Height = "webm", 375, 667 },
			want: func(s *VideoSpec) { s.Format, s.Width, s.Height = "webm", 374, 666 }},
		{name: "gif keeps odd size, clamps fps", edit: func(s *VideoSpec) { s.Format, s.Width, s.FPS = "gif", 375, 30 },
			want: func(s *VideoSpec) { s.Format, s.Width, s.FPS = "gif", 375, 15 }},
		{name: "gif keeps a low fps", edit: func(s *VideoSpec) { s.Format, s.FPS = "gif", 5 },
			want: func(s *VideoSpec) { s.Format, s.FPS = "gif", 5 }},
		{name: "unknown format", edit: func(s *VideoSpec) { s.Format = "png" }, wantErr: true},
		{name: "zero fps", edit: func(s *VideoSpec) { s.FPS = 0 }, wantErr: true},
		{name: "zero duration", edit: func(s *VideoSpec) { s.Duration = 0 }, wantErr: true},
		{name: "size 1x1 rounds to zero for mp4", edit: func(s *VideoSpec) { s.Width, s.Height = 1, 1 }, wantErr: true},
		{name: "huge size", edit: func(s *VideoSpec) { s.Width = 20000 }, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := ok
			tt.edit(&in)
			got, err := in.Normalized()
			if tt.wantErr {
				wantCode(t, err, shotd.CodeInternalError)
				if _, err := NewEncoder(context.Background(), in, testLog(t)); err == nil {
					t.Error("NewEncoder accepted the spec")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := ok
			tt.want(&want)
			if got != want {
				t.Errorf("got %+v, want %+v", got, want)
			}
		})
	}
}

func TestFrameCount(t *testing.T) {
	tests := []struct {
		name string
		spec VideoSpec
		want int
	}{
		{name: "whole", spec: VideoSpec{FPS: 24, Duration: 2 * time.Second}, want: 48},
		{name: "rounds half up", spec: VideoSpec{FPS: 15, Duration: 2500 * time.Millisecond}, want: 38},
		{name: "rounds down", spec: VideoSpec{FPS: 24, Duration: 1010 * time.Millisecond}, want: 24},
		{name: "at least one", spec: VideoSpec{FPS: 5, Duration: time.Millisecond}, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.spec.FrameCount(); got != tt.want {
				t.Errorf("FrameCount() = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestGIFPaletteMode(t *testing.T) {
	tests := []struct {
		name         string
		spec         VideoSpec
		wantPerFrame bool
	}{
		{name: "short small gif has one palette", spec: VideoSpec{Format: "gif", FPS: 15, Duration: 5 * time.Second, Width: 640, Height: 360}},
		{name: "long hd gif has a palette per frame", spec: VideoSpec{Format: "gif", FPS: 15, Duration: 30 * time.Second, Width: 1280, Height: 720},
			wantPerFrame: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := strings.Join(ffmpegArgs(tt.spec, imageInfo{kindJPEG, tt.spec.Width, tt.spec.Height}, "out.gif"), " ")
			if got := strings.Contains(args, "stats_mode=single"); got != tt.wantPerFrame {
				t.Errorf("per-frame palette %v, want %v: %s", got, tt.wantPerFrame, args)
			}
		})
	}
}

func TestProbeRefusesGarbage(t *testing.T) {
	checkNoLeaks(t, "")
	_, err := Probe(context.Background(), []byte("this is not a video"))
	wantCode(t, err, shotd.CodeInternalError)
}

func TestFitFilter(t *testing.T) {
	spec := VideoSpec{Format: "mp4", Width: 640, Height: 360}
	tests := []struct {
		name       string
		w, h       int
		wantPrefix string // "" for no filter
	}{
		{name: "same size", w: 640, h: 360, wantPrefix: ""},
		{name: "one pixel wider and taller", w: 641, h: 361, wantPrefix: "crop=640:360:0:0"},
		{name: "one pixel wider", w: 641, h: 360, wantPrefix: "crop=640:360:0:0"},
		{name: "two pixels wider", w: 642, h: 360, wantPrefix: "scale=640:360:force_original_aspect_ratio=decrease"},
		{name: "double density", w: 1280, h: 720, wantPrefix: "scale=640:360:force_original_aspect_ratio=decrease"},
		{name: "smaller", w: 639, h: 360, wantPrefix: "scale=640:360:force_original_aspect_ratio=decrease"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := fitFilter(imageInfo{kindJPEG, tt.w, tt.h}, spec)
			if (tt.wantPrefix == "") != (got == "") || !strings.HasPrefix(got, tt.wantPrefix) {
				t.Errorf("fitFilter(%dx%d) = %q, want prefix %q", tt.w, tt.h, got, tt.wantPrefix)
			}
		})
	}
}
