package cdpclient

import (
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/media"
)

// bandsPage is a 5000 px page in three bands: red at the top, green in the middle, blue at the
// bottom. A 450 px viewport shows one colour at every scroll position but the band edges. A
// 12 px white strip at each end shows at the viewport's edge only within a few pixels of the top
// or the bottom.
const bandsPage = `<!doctype html><html><head><style>html,body{margin:0}div{width:100%}</style></head><body>` +
	`<div style="height:12px;background:#fff"></div>` +
	`<div style="height:1188px;background:#f00"></div>` +
	`<div style="height:2600px;background:#0f0"></div>` +
	`<div style="height:1188px;background:#00f"></div>` +
	`<div style="height:12px;background:#fff"></div></body></html>`

// shortPage is 900 px tall: with a 450 px viewport, one screen to scroll.
const shortPage = `<!doctype html><html><head><style>html,body{margin:0}</style></head><body>` +
	`<div style="height:450px;background:#f00"></div><div style="height:450px;background:#00f"></div></body></html>`

// noisePage is a tall canvas of random pixels: every frame of its scroll differs and compresses
// badly.
const noisePage = `<!doctype html><html><head><style>html,body{margin:0}canvas{display:block}</style></head><body>` +
	`<canvas id=c width=800 height=3000></canvas><script>
const c = document.getElementById("c").getContext("2d"), img = c.createImageData(800, 3000);
for (let i = 0; i < img.data.length; i++) img.data[i] = (i % 4 == 3) ? 255 : Math.random() * 256;
c.putImageData(img, 0, 0);
</script></body></html>`

// videoOpts is a video render of html with the defaults the parser would set.
func videoOpts(format, html string, d time.Duration) *shotd.Options {
	o := htmlOpts(html)
	o.Format = format
	o.ViewportWidth, o.ViewportHeight = 800, 450
	o.VideoDuration = d
	o.VideoMaxDuration = 30 * time.Second
	o.VideoFPS = 24
	if format == shotd.FormatGIF {
		o.VideoFPS = 15
	}
	o.VideoScroll = true
	o.VideoScrollEasing = media.EasingEaseInOut
	return o
}

// colour names the dominant colour of a pixel, "" when none stands out.
func colour(c [3]uint8) string {
	r, g, b := int(c[0]), int(c[1]), int(c[2])
	switch {
	case r > 150 && g < 100 && b < 100:
		return "red"
	case g > 150 && r < 100 && b < 100:
		return "green"
	case b > 150 && r < 100 && g < 100:
		return "blue"
	case r > 200 && g > 200 && b > 200:
		return "white"
	}
	return ""
}

// frameColours decodes frames i of a video (index -1: the last one, n: the frame count) and names
// the colour at their centre.
func frameColours(t *testing.T, data []byte, format string, n int, idx ...int) []string {
	t.Helper()
	var names []string
	for _, img := range videoFrames(t, data, format, n, idx...) {
		names = append(names, nameAt(img, img.Bounds().Dx()/2, img.Bounds().Dy()/2))
	}
	return names
}

// nameAt names the colour of a pixel, or gives its value when it has no name.
func nameAt(img image.Image, x, y int) string {
	c := rgbAt(img, x, y)
	if name := colour(c); name != "" {
		return name
	}
	return fmt.Sprintf("rgb%v", c)
}

// videoFrames decodes frames i of a video (index -1: the last one, n: the frame count).
func videoFrames(t *testing.T, data []byte, format string, n int, idx ...int) []image.Image {
	t.Helper()
	dir := t.TempDir()
	in := filepath.Join(dir, "in."+format)
	if err := os.WriteFile(in, data, 0o600); err != nil {
		t.Fatal(err)
	}
	var imgs []image.Image
	for _, i := range idx {
		if i < 0 {
			i += n
		}
		out := filepath.Join(dir, fmt.Sprintf("f%d.png", i))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, "ffmpeg", "-v", "error", "-i", in,
			"-vf", fmt.Sprintf(`select=eq(n\,%d)`, i), "-fps_mode", "passthrough", "-frames:v", "1", "-y", out)
		b, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("extract frame %d: %v: %s", i, err, b)
		}
		png, err := os.ReadFile(out)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		imgs = append(imgs, decodePNG(t, png))
	}
	return imgs
}

// ffmpegChildren lists the ffmpeg processes this test binary started that are still there
// (zombies too: an unreaped child is a leak as well).
func ffmpegChildren() []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	me := strconv.Itoa(os.Getpid())
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		f := strings.Fields(s[end+1:]) // state ppid ...
		if s[open+1:end] == "ffmpeg" && len(f) > 1 && f[1] == me {
			pids = append(pids, pid)
		}
	}
	return pids
}

// latePage is red until, well after the load, it shows a blue image over the whole viewport.
const latePage = `<!doctype html><html><head><style>html,body{margin:0;height:100%;background:#f00}
img{position:fixed;inset:0;width:100%;height:100%}</style></head><body><script>
setTimeout(() => { const i = new Image(); i.src = "/blue.png"; document.body.append(i); }, 1300);
</script></body></html>`

func bluePNG(w http.ResponseWriter, _ *http.Request) {
	img := image.NewRGBA(image.Rect(0, 0, 8, 8))
	draw.Draw(img, img.Bounds(), image.NewUniform(color.RGBA{0, 0, 255, 255}), image.Point{}, draw.Src)
	w.Header().Set("Content-Type", "image/png")
	png.Encode(w, img)
}

func TestVideo(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/late", htmlPage(latePage))
	mux.HandleFunc("/blue.png", bluePNG)
	srv, _ := server(t, mux)

	tests := []struct {
		name          string
		o             *shotd.Options
		codec, format string
		w, h, fps     int
		duration      time.Duration
		// colours at the first frame, the middle, the back-up split, the last frame ("" unchecked)
		first, middle, split, last string
		// the last frame shows bandsPage's white strip at its top or bottom edge: the exact
		// final scroll position, not just its band ("" unchecked)
		end string
	}{
		{name: "mp4 scrolls top to bottom", o: videoOpts(shotd.FormatMP4, bandsPage, 2*time.Second),
			codec: "h264", format: "mp4", w: 800, h: 450, fps: 24, duration: 2 * time.Second,
			first: "red", middle: "green", last: "blue", end: "bottom"},
		{name: "webm scrolls top to bottom", o: videoOpts(shotd.FormatWebM, bandsPage, 2*time.Second),
			codec: "vp9", format: "webm", w: 800, h: 450, fps: 24, duration: 2 * time.Second,
			first: "red", middle: "green", last: "blue", end: "bottom"},
		{name: "gif at most 640 wide", o: videoOpts(shotd.FormatGIF, bandsPage, 2*time.Second),
			codec: "gif", format: "gif", w: 640, h: 360, fps: 15, duration: 2 * time.Second,
			first: "red", middle: "green", last: "blue", end: "bottom"},
		{name: "scroll back", o: func() *shotd.Options {
			o := videoOpts(shotd.FormatMP4, bandsPage, 2*time.Second)
			o.VideoScrollBack = true
			return o
		}(), codec: "h264", format: "mp4", w: 800, h: 450, fps: 24, duration: 2 * time.Second,
			first: "red", split: "blue", last: "red", end: "top"},
		{name: "no scroll", o: func() *shotd.Options {
			o := videoOpts(shotd.FormatWebM, bandsPage, 2*time.Second)
			o.VideoScroll = false
			return o
		}(), codec: "vp9", format: "webm", w: 800, h: 450, fps: 24, duration: 2 * time.Second,
			first: "red", middle: "red", last: "red"},
		{name: "linear, 10 fps, odd size", o: func() *shotd.Options {
			o := videoOpts(shotd.FormatMP4, bandsPage, 2*time.Second)
			o.VideoScrollEasing, o.VideoFPS = media.EasingLinear, 10
			o.ViewportWidth, o.ViewportHeight = 641, 361
			return o
		}(), codec: "h264", format: "mp4", w: 640, h: 360, fps: 10, duration: 2 * time.Second,
			first: "red", middle: "green", last: "blue", end: "bottom"},
		{name: "length follows the page", o: videoOpts(shotd.FormatMP4, shortPage, 0),
			// 2 s plus 1 s per screen scrolled.
			codec: "h264", format: "mp4", w: 800, h: 450, fps: 24, duration: 3 * time.Second,
			first: "red", last: "blue"},
		{name: "length capped by video_max_duration", o: func() *shotd.Options {
			o := videoOpts(shotd.FormatGIF, bandsPage, 0)
			o.VideoMaxDuration = 2 * time.Second
			return o
		}(), codec: "gif", format: "gif", w: 640, h: 360, fps: 15, duration: 2 * time.Second,
			first: "red", last: "blue", end: "bottom"},
		// timeout bounds the loading only; the interception started while loading keeps serving
		// the page's requests through the recording (block_requests pauses every request).
		{name: "longer than timeout, requests served while recording", o: func() *shotd.Options {
			o := videoOpts(shotd.FormatMP4, "", 2500*time.Millisecond)
			o.URL, o.Timeout, o.VideoScroll = srv.URL+"/late", time.Second, false
			o.BlockRequests = []string{"*/nothing-matches-this*"}
			return o
		}(), codec: "h264", format: "mp4", w: 800, h: 450, fps: 24, duration: 2500 * time.Millisecond,
			first: "red", last: "blue"},
		{name: "scale 2, gif scaled down", o: func() *shotd.Options {
			o := videoOpts(shotd.FormatGIF, bandsPage, time.Second)
			o.ViewportWidth, o.ViewportHeight, o.DeviceScaleFactor = 400, 300, 2
			return o
		}(), codec: "gif", format: "gif", w: 640, h: 480, fps: 15, duration: time.Second,
			first: "red", last: "blue", end: "bottom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			out := mustRender(t, shared, tt.o)
			took := time.Since(start)
			t.Logf("%s: %d bytes, render %s (RenderMs %d)", tt.format, len(out.Data), took.Round(time.Millisecond), out.RenderMs)
			if out.Format != tt.o.Format || out.ContentType != shotd.ContentTypes[tt.o.Format] {
				t.Errorf("format %q, content type %q", out.Format, out.ContentType)
			}
			if out.Width != tt.w || out.Height != tt.h {
				t.Errorf("output says %dx%d, want %dx%d", out.Width, out.Height, tt.w, tt.h)
			}
			if out.RenderMs < tt.duration.Milliseconds() {
				t.Errorf("RenderMs %d is shorter than the video", out.RenderMs)
			}
			info, err := media.Probe(t.Context(), out.Data)
			if err != nil {
				t.Fatalf("probe (%d bytes): %v", len(out.Data), err)
			}
			if !info.HasFormat(tt.format) || info.Codec != tt.codec {
				t.Errorf("container %q codec %q, want %s/%s", info.Format, info.Codec, tt.format, tt.codec)
			}
			if info.Width != tt.w || info.Height != tt.h {
				t.Errorf("video is %dx%d, want %dx%d", info.Width, info.Height, tt.w, tt.h)
			}
			if math.Abs(info.FrameRate-float64(tt.fps)) > 0.01 {
				t.Errorf("frame rate %.3f, want %d", info.FrameRate, tt.fps)
			}
			if diff := (info.Duration - tt.duration).Abs(); diff > tt.duration/10 {
				t.Errorf("duration %s, want %s within 10%%", info.Duration, tt.duration)
			}
			n := int(math.Round(tt.duration.Seconds() * float64(tt.fps)))
			if info.Frames != n {
				t.Errorf("%d frames, want %d", info.Frames, n)
			}
			checks := []struct {
				name, want string
				i          int
			}{
				{"first", tt.first, 0},
				{"middle", tt.middle, n / 2},
				{"split", tt.split, int(float64(n) * media.ScrollBackSplit)},
				{"last", tt.last, n - 1},
			}
			var idx []int
			for _, c := range checks {
				if c.want != "" {
					idx = append(idx, c.i)
				}
			}
			imgs := videoFrames(t, out.Data, tt.format, n, idx...)
			var last image.Image
			for _, c := range checks {
				if c.want == "" {
					continue
				}
				img := imgs[0]
				imgs = imgs[1:]
				if c.i == n-1 {
					last = img
				}
				if got := nameAt(img, img.Bounds().Dx()/2, img.Bounds().Dy()/2); got != c.want {
					t.Errorf("%s frame (%d of %d) is %s, want %s", c.name, c.i, n, got, c.want)
				}
			}
			if tt.end != "" && last != nil {
				// 3 px in from the edge: clear of the JPEG's and the scaling's blur.
				y := 2
				if tt.end == "bottom" {
					y = last.Bounds().Dy() - 3
				}
				if got := nameAt(last, last.Bounds().Dx()/2, y); got != "white" {
					t.Errorf("last frame's %s edge is %s, want white: the scroll did not end there", tt.end, got)
				}
			}
		})
	}
}

func TestVideoSize(t *testing.T) {
	tests := []struct {
		name         string
		format       string
		w, h         int
		wantW, wantH int
	}{
		{"mp4 as is", shotd.FormatMP4, 1280, 720, 1280, 720},
		{"gif at most 640 wide", shotd.FormatGIF, 1280, 720, 640, 360},
		{"narrow gif as is", shotd.FormatGIF, 390, 844, 390, 844},
		{"4k as is", shotd.FormatWebM, 3840, 2160, 3840, 2160},
		{"larger than 4k pixels scaled down", shotd.FormatMP4, 3840 * 3, 4320 * 3, 2715, 3055},
		{"gif of a huge viewport", shotd.FormatGIF, 3840 * 3, 4320 * 3, 640, 720},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, h := videoSize(tt.format, tt.w, tt.h)
			if w != tt.wantW || h != tt.wantH {
				t.Errorf("videoSize(%s, %d, %d) = %dx%d, want %dx%d", tt.format, tt.w, tt.h, w, h, tt.wantW, tt.wantH)
			}
		})
	}
}

func TestScrollHold(t *testing.T) {
	tests := []struct {
		name string
		d    time.Duration
		fps  int
		want time.Duration
	}{
		{"a tenth", 3 * time.Second, 24, 300 * time.Millisecond},
		{"at least three frames", time.Second, 5, 500 * time.Millisecond},
		{"at most a second", 30 * time.Second, 24, time.Second},
		{"at most half", time.Second, 5, 500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := scrollHold(tt.d, tt.fps); got != tt.want {
				t.Errorf("scrollHold(%s, %d) = %s, want %s", tt.d, tt.fps, got, tt.want)
			}
		})
	}
}

// videoProcess launches a browser of its own for the tests that need Config settings.
func videoProcess(t *testing.T, cfg Config) *Process {
	t.Helper()
	cfg.Log = zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	cfg.Prewarm = -1
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := Launch(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := p.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
		if err := checkGone(p); err != nil {
			t.Error(err)
		}
	})
	return p
}

// leftovers reports ffmpeg processes and video temp dirs in dir that outlived a render.
func leftovers(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for len(ffmpegChildren()) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if pids := ffmpegChildren(); len(pids) > 0 {
		t.Errorf("ffmpeg still running after the render: %v", pids)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "shotd-video-*"))
	if len(left) > 0 {
		t.Errorf("video temp dirs left behind: %v", left)
	}
}

// TestVideoEnds: a video render that fails while it records (the caller gives up, the recording
// runs out of time, the file is too large) leaves neither ffmpeg nor a temp dir behind; a page
// that does not load within timeout fails after timeout, not after the recording's allowance.
func TestVideoEnds(t *testing.T) {
	dir := t.TempDir()
	p := videoProcess(t, Config{Dir: dir, MaxOutputBytes: 50_000})
	mux := http.NewServeMux()
	mux.HandleFunc("/", htmlPage(bandsPage))
	mux.HandleFunc("/noise", htmlPage(noisePage))
	srv, release := server(t, mux)
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})

	tests := []struct {
		name   string
		o      func() *shotd.Options
		cancel bool          // cancel the caller's context once ffmpeg runs
		budget time.Duration // recordAllowance for the test; 0: the real one
		code   shotd.Code
		within time.Duration
	}{
		{name: "cancelled mid-recording", cancel: true, code: shotd.CodeInternalError, within: 5 * time.Second,
			o: func() *shotd.Options { o := videoOpts(shotd.FormatMP4, "", 10*time.Second); o.URL = srv.URL; return o }},
		{name: "recording out of time", budget: 1500 * time.Millisecond, code: shotd.CodeTimeout, within: 5 * time.Second,
			o: func() *shotd.Options { o := videoOpts(shotd.FormatWebM, "", 10*time.Second); o.URL = srv.URL; return o }},
		// ffmpeg stops at the limit: the render ends long before the video would.
		{name: "too large", code: shotd.CodeContentTooLarge, within: 6 * time.Second,
			o: func() *shotd.Options {
				o := videoOpts(shotd.FormatMP4, "", 10*time.Second)
				o.URL = srv.URL + "/noise"
				return o
			}},
		{name: "page load timeout", code: shotd.CodeTimeout, within: 3 * time.Second,
			o: func() *shotd.Options {
				o := videoOpts(shotd.FormatMP4, "", 30*time.Second)
				o.URL, o.Timeout = srv.URL+"/hang", time.Second
				return o
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.budget > 0 {
				saved := recordAllowance
				recordAllowance = func(time.Duration) time.Duration { return tt.budget }
				t.Cleanup(func() { recordAllowance = saved })
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if tt.cancel {
				go func() {
					for len(ffmpegChildren()) == 0 && ctx.Err() == nil {
						time.Sleep(10 * time.Millisecond)
					}
					time.Sleep(300 * time.Millisecond)
					cancel()
				}()
			}
			start := time.Now()
			_, err := p.Render(ctx, tt.o())
			took := time.Since(start)
			e := wantCode(t, err, tt.code)
			t.Logf("%s after %s: %s", e.Code, took.Round(time.Millisecond), e.Message)
			if took > tt.within {
				t.Errorf("the render took %s, want at most %s", took, tt.within)
			}
			if tt.cancel && !errors.Is(ctx.Err(), context.Canceled) {
				t.Errorf("the render ended before it was cancelled")
			}
			leftovers(t, dir)
		})
	}
}

// BenchmarkVideo: an mp4 of 3 s at 1280x720 and 24 fps of a scrolling page, per op; reports the
// render time per second of video.
func BenchmarkVideo(b *testing.B) {
	const d = 3 * time.Second
	o := videoOpts(shotd.FormatMP4, bandsPage, d)
	o.ViewportWidth, o.ViewportHeight = 1280, 720
	var total time.Duration
	for b.Loop() {
		start := time.Now()
		mustRender(b, shared, o)
		total += time.Since(start)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N)/d.Seconds(), "ms/video-s")
}

// slowEndPage scrolls like bandsPage, but its scroll handler stalls the main thread for 800 ms
// when the page reaches its final position (the bottom, or the top again after it scrolled away
// when back is set), and only then turns a fixed overlay from red to blue. The frame
// that shows the final position is painted well after the scroll that set it.
const slowEndPage = `<!doctype html><html><head><style>html,body{margin:0}
#m{position:fixed;inset:0;background:#f00}</style></head><body><div id=m></div>
<div style="height:5000px"></div><script>
const back = %t, m = document.getElementById("m");
let away = false;
addEventListener("scroll", () => {
	if (scrollY > 1000) away = true;
	const end = back ? away && scrollY == 0 : scrollY >= document.documentElement.scrollHeight - innerHeight;
	if (!end) return;
	const t = performance.now();
	while (performance.now() - t < 800) {}
	m.style.background = "#00f";
});
</script></body></html>`

// TestVideoLateFinalFrame: the recording waits for the frame that shows the final scroll
// position, however late it is painted, and the video keeps its length.
func TestVideoLateFinalFrame(t *testing.T) {
	tests := []struct {
		name   string
		format string
		back   bool
	}{
		{name: "bottom", format: shotd.FormatMP4},
		{name: "top again after scrolling back", format: shotd.FormatWebM, back: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const d = 2 * time.Second
			o := videoOpts(tt.format, fmt.Sprintf(slowEndPage, tt.back), d)
			o.VideoScrollBack = tt.back
			out := mustRender(t, shared, o)
			info, err := media.Probe(t.Context(), out.Data)
			if err != nil {
				t.Fatalf("probe: %v", err)
			}
			n := int(math.Round(d.Seconds() * float64(o.VideoFPS)))
			if info.Frames != n {
				t.Errorf("%d frames, want %d", info.Frames, n)
			}
			if diff := (info.Duration - d).Abs(); diff > d/10 {
				t.Errorf("duration %s, want %s within 10%%", info.Duration, d)
			}
			got := frameColours(t, out.Data, tt.format, n, 0, -1)
			if got[0] != "red" || got[1] != "blue" {
				t.Errorf("first and last frames are %s and %s, want red and blue", got[0], got[1])
			}
		})
	}
}

// TestVideoPageHoldsTheScroll: a page that never rests where the scroll leaves it (its scroll
// handler takes the window back to the top) still gets its video, of the asked length, rather
// than a timeout while the recording waits for a frame at a position the page never shows.
func TestVideoPageHoldsTheScroll(t *testing.T) {
	const d = 2 * time.Second
	page := `<body style="margin:0"><div style="height:4000px;background:linear-gradient(red,blue)"></div>
<script>addEventListener('scroll', () => { if (scrollY > 0) scrollTo(0, 0); });</script></body>`
	o := videoOpts(shotd.FormatMP4, page, d)
	out := mustRender(t, shared, o)
	info, err := media.Probe(t.Context(), out.Data)
	if err != nil {
		t.Fatalf("probe: %v", err)
	}
	if n := int(math.Round(d.Seconds() * float64(o.VideoFPS))); info.Frames != n {
		t.Errorf("%d frames, want %d", info.Frames, n)
	}
}
