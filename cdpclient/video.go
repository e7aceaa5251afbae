package cdpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	_ "image/gif" // Render reads a gif's size from its header, as for the image formats
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mafredri/cdp/protocol/page"
	"github.com/mafredri/cdp/protocol/runtime"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/media"
)

// Video recording (mp4, webm, gif). A video render runs the steps of an image render up to the
// capture; record takes its place. It measures the page, starts Page.startScreencast (JPEG
// frames of the viewport in device pixels, a gif's at most 640 px wide), acknowledges every frame
// as it comes and hands it to a media.Encoder timed from the first frame (Chrome sends frames
// only when the page changes; the encoder makes the rate constant), and meanwhile scrolls the
// page at the output frame rate with media.ScrollPosition. A scrolling video ends on a frame that
// shows where the scroll ends, even one painted up to finalWait after the end (see scroll).
//
// Timeouts: as for an image, the timeout option bounds the loading of the page and delay comes
// after it (deadline.go); the recording then has its own deadline, its length plus an encoding
// allowance (recordAllowance), so a 30 s video never needs a 30 s timeout. The render as a whole
// is bounded by Options.RenderBudget, fixed before it starts.
const (
	defaultVideoHeight = 720 // viewport_height of a video when the parser did not set it
	defaultVideoFPS    = 24
	// screencastQuality is the JPEG quality of the frames Chrome sends: good enough for a video
	// that is compressed again, and cheap for Chrome to encode per frame.
	screencastQuality = 80
	// gifMaxWidth: a 1280x720 gif weighs ~6.5 MB per second; 640 px wide keeps it near a quarter.
	gifMaxWidth = 640
	// maxVideoPixels bounds a frame (4K UHD): a 3840x4320 viewport at scale 3 would be 150
	// million pixels a frame, more than ffmpeg encodes in any useful time. Larger viewports are
	// recorded scaled down, keeping the aspect ratio.
	maxVideoPixels = 3840 * 2160
	// firstFrameWait bounds the wait for Chrome's first screencast frame, which comes at once
	// for a live page.
	firstFrameWait = 10 * time.Second
	// recordTail is how long frames are still taken after the video's length, so that frames
	// drawn just before the end, still on their way, get in.
	recordTail = 100 * time.Millisecond
)

// recordAllowance is the recording's own deadline for a video of length d; a variable for tests.
var recordAllowance = shotd.VideoRecordAllowance

var errRecordTimeout = errors.New("video recording timeout")

// video is the video state of a render; nil for the other formats.
type video struct {
	fps          int
	duration     time.Duration // video_duration; 0: follows the page height
	maxDuration  time.Duration
	scroll, back bool
	easing       string
}

// initVideo sets up a video render (from newRender) with the defaults a parser would have set.
func (r *render) initVideo() {
	o := r.o
	v := &video{
		fps:         o.VideoFPS,
		duration:    o.VideoDuration,
		maxDuration: o.VideoMaxDuration,
		scroll:      o.VideoScroll,
		back:        o.VideoScrollBack,
		easing:      o.VideoScrollEasing,
	}
	if v.fps <= 0 {
		v.fps = defaultVideoFPS
	}
	if r.format == shotd.FormatGIF {
		v.fps = min(v.fps, media.MaxGIFFPS)
	}
	if v.maxDuration <= 0 {
		v.maxDuration = shotd.DefaultVideoMaxDuration
	}
	if r.height <= 0 {
		r.height = defaultVideoHeight
	}
	r.video = v
}

// measureJS returns the document's scroll height and the viewport height, in CSS pixels.
const measureJS = `(() => {
	const d = document.documentElement, b = document.body;
	return {page: Math.max(d ? d.scrollHeight : 0, b ? b.scrollHeight : 0), viewport: window.innerHeight};
})()`

// paintedJS resolves after two animation frames (the document has been painted), or after 1 s
// for a page whose frames do not come.
const paintedJS = `new Promise(done => {
	requestAnimationFrame(() => requestAnimationFrame(() => done()));
	setTimeout(done, 1000);
})`

// scrollJS scrolls the window to y at once, whatever the page's scroll-behavior says, and returns
// where it is then (a page shorter than when it was measured stops it earlier).
const scrollJS = `(window.scrollTo({left: 0, top: %d, behavior: "instant"}), window.scrollY)`

// record films the page with Page.startScreencast into a media.Encoder, scrolling it as the video
// options say, and leaves the file in r.data.
func (r *render) record(ctx context.Context) error {
	v := r.video
	var m struct{ Page, Viewport float64 }
	if err := r.eval(ctx, measureJS, &m); err != nil {
		return err
	}
	pageH, viewH := int(math.Ceil(m.Page)), int(math.Round(m.Viewport))
	d := v.duration
	if d <= 0 {
		d = media.DurationFor(pageH, viewH, v.maxDuration)
	}
	distance := 0.0
	if v.scroll && pageH > viewH {
		distance = float64(pageH - viewH)
	}
	// image_width and image_height (animate's width and height) set the output size; the
	// encoder scales each frame to it, and videoSize still bounds it.
	w, h := outputSize(r.devicePx(float64(r.width)), r.devicePx(float64(r.height)), r.o.ImageWidth, r.o.ImageHeight)
	w, h = videoSize(r.format, w, h)
	spec := media.VideoSpec{
		Format: r.format, FPS: v.fps, Duration: d, Width: w, Height: h,
		MaxBytes: r.p.cfg.MaxOutputBytes,
		TempDir:  r.p.cfg.Dir, // a dedicated Dir, emptied at start, also collects what a killed service left
		Nice:     r.p.cfg.Nice,
	}
	allowance := recordAllowance(d)
	recCtx, cancel := context.WithTimeoutCause(ctx, allowance, errRecordTimeout)
	defer cancel()
	err := r.film(recCtx, spec, distance)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(recCtx), errRecordTimeout) {
		if shotd.CodeOf(err) != shotd.CodeTimeout {
			err = shotd.Wrap(shotd.CodeTimeout, err, fmt.Sprintf("the video was not recorded within %s", allowance))
		}
	}
	return err
}

// videoSize is the size of the frames to record from a viewport of w x h device pixels: at most
// maxVideoPixels, at most gifMaxWidth wide for a gif, keeping the aspect ratio.
func videoSize(format string, w, h int) (int, int) {
	f := 1.0
	if px := float64(w) * float64(h); px > maxVideoPixels {
		f = math.Sqrt(maxVideoPixels / px)
	}
	if format == shotd.FormatGIF && float64(w)*f > gifMaxWidth {
		f = gifMaxWidth / float64(w)
	}
	if f == 1 {
		return w, h
	}
	return max(2, int(math.Round(float64(w)*f))), max(2, int(math.Round(float64(h)*f)))
}

// film runs the screencast and the scrolling for spec.Duration and encodes the frames. ctx is
// the recording's context: when it ends, ffmpeg is killed and the temp dir removed.
func (r *render) film(ctx context.Context, spec media.VideoSpec, distance float64) error {
	c := r.t.c
	enc, err := media.NewEncoder(ctx, spec, r.p.log)
	if err != nil {
		return err
	}
	defer enc.Close() // kills ffmpeg and removes the temp dir, unless Finish did already
	spec = enc.Spec()

	if distance > 0 {
		// The first frame shows the top, whatever a click or a script scrolled.
		if _, _, err := r.scrollTo(ctx, 0); err != nil {
			return err
		}
	}
	// The first frame Chrome sends is the compositor's latest: right after a load (and
	// setDocumentContent) that may still be the blank page. Two animation frames mean the
	// document has been painted at least once; a page that never paints waits no longer than
	// 1 s. A page that broke requestAnimationFrame or setTimeout only loses the wait.
	var script *errScript
	if err := r.eval(ctx, paintedJS, nil); err != nil && !contextGone(err) && !errors.As(err, &script) {
		return err
	}
	frames, err := c.Page.ScreencastFrame(ctx)
	if err != nil {
		return err
	}
	p := &pump{r: r, enc: enc, frames: frames, first: make(chan struct{}), done: make(chan struct{}),
		lastAt: time.Duration(spec.FrameCount()-1) * time.Second / time.Duration(spec.FPS)}
	if distance > 0 {
		p.final = make(chan struct{})
	}
	go p.run(ctx)
	defer func() {
		p.stop()
		enc.Close() // an Add blocked on a full pipe returns once ffmpeg is gone
		<-p.done
	}()
	args := page.NewStartScreencastArgs().SetFormat("jpeg").SetQuality(screencastQuality).
		SetMaxWidth(spec.Width).SetMaxHeight(spec.Height).SetEveryNthFrame(1)
	if err := c.Page.StartScreencast(ctx, args); err != nil {
		return err
	}

	// The video starts with the first frame; the scroll with it.
	wait := time.NewTimer(firstFrameWait)
	defer wait.Stop()
	select {
	case <-p.first:
	case <-p.done:
		return p.result()
	case <-wait.C:
		return shotd.Errorf(shotd.CodeInternalError, "the browser sent no video frame within %s", firstFrameWait)
	case <-ctx.Done():
		return ctx.Err()
	}
	late, err := r.scroll(ctx, p, spec, distance)
	if err != nil {
		return err
	}
	if err := c.Page.StopScreencast(ctx); err != nil {
		return err
	}
	p.stop()
	<-p.done
	if err := p.err; err != nil {
		return err
	}
	data, err := enc.Finish()
	if err != nil {
		return err
	}
	r.data = data
	// Render's result reads the size from r.width, r.height and r.scale where it cannot read it
	// from the file (mp4, webm): the video's own size from here on.
	r.width, r.height, r.scale = spec.Width, spec.Height, 1
	r.p.log.Debug().Str("format", spec.Format).Dur("duration", spec.Duration).Int("fps", spec.FPS).
		Int("frames_in", int(p.count.Load())).Dur("final_frame_late", late).Int("bytes", len(r.data)).
		Msg("video recorded")
	return nil
}

// scrollHold is how long before the end of the video the scroll arrives: a tenth of the video,
// at least three output frames, at most a second. A scroll shows in the frames only after the
// command's round trip and the next paint; the hold lets the end (the bottom, or the top again)
// show for a while. The last frame shows it even when it is painted late (see scroll).
func scrollHold(d time.Duration, fps int) time.Duration {
	return min(max(d/10, 3*time.Second/time.Duration(fps)), time.Second, d/2)
}

// scroll drives the scroll at the output frame rate until the video's length (plus recordTail)
// has passed, and then, for a video that scrolls, until a frame that shows the final position
// has come, for at most finalWait (on a loaded host the last scroll's round trip and paint can
// come after the end; the pump gives that frame the last place in the video). late is how long
// after the end the video ended.
func (r *render) scroll(ctx context.Context, p *pump, spec media.VideoSpec, distance float64) (late time.Duration, err error) {
	start := time.Now()
	end := spec.Duration + recordTail
	span := spec.Duration - scrollHold(spec.Duration, spec.FPS)
	tick := time.NewTicker(time.Second / time.Duration(spec.FPS))
	defer tick.Stop()
	last, finalSet := 0, distance <= 0
	for {
		select {
		case <-tick.C:
		case <-p.done:
			return 0, p.result()
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		t := time.Since(start)
		if !finalSet {
			y := int(math.Round(media.ScrollPosition(t, span, distance, r.video.easing, r.video.back)))
			switch {
			case t >= span:
				// The final position, set again even if a rounding reached it early, to read where
				// the window really is. A tick that came only after end (a slow round trip) still
				// sets it.
				at, ok, err := r.scrollTo(ctx, y)
				if err != nil {
					return 0, err
				}
				p.setFinal(at, ok)
				finalSet = true
			case y != last:
				if _, _, err := r.scrollTo(ctx, y); err != nil {
					return 0, err
				}
				last = y
			}
		}
		if t >= end {
			break
		}
	}
	if p.final == nil {
		return 0, nil
	}
	// A page may keep the window from resting where the scroll left it (scroll snapping, a
	// handler that scrolls): no frame then shows that position, and the video ends on the
	// latest one after finalWait rather than failing.
	wait := time.NewTimer(finalWait)
	defer wait.Stop()
	select {
	case <-p.final:
	case <-wait.C:
		p.giveUp()
	case <-p.done:
		return 0, p.result()
	case <-ctx.Done():
		return 0, ctx.Err() // the recording's deadline: record reports a timeout
	}
	return max(0, time.Since(start)-end), nil
}

// finalWait bounds the wait, past the video's end, for a frame that shows the final scroll
// position. A late paint on a loaded host came within a second in the tests; a page that never
// shows that position must not cost more.
const finalWait = 2 * time.Second

// scrollTo scrolls the window and returns where it is then. A document that went away under it
// (the page navigated itself) is no error: the video shows what the new one does; ok is false.
func (r *render) scrollTo(ctx context.Context, y int) (at float64, ok bool, err error) {
	rep, err := r.t.c.Runtime.Evaluate(ctx, runtime.NewEvaluateArgs(fmt.Sprintf(scrollJS, y)).SetReturnByValue(true))
	switch {
	case err != nil && contextGone(err):
		return 0, false, nil
	case err != nil:
		return 0, false, err
	case rep.ExceptionDetails != nil:
		return 0, false, &errScript{msg: exceptionText(rep.ExceptionDetails)}
	}
	// A page that redefined scrollY gets no wait for its final frame.
	ok = json.Unmarshal(rep.Result.Value, &at) == nil
	return at, ok, nil
}

// pump acknowledges every screencast frame as it comes and hands it to the encoder, timed from
// the first frame. Chrome keeps at most a couple of frames unacknowledged; while the encoder
// is busy it skips frames rather than queue them, and the encoder holds the previous one.
//
// For a scrolling video it also watches for the frame that shows the final scroll position
// (Page.screencastFrame's metadata carries the scroll offset the frame was painted at). Until
// that frame has come, a frame later than the last output frame's time (lastAt) is handed in at
// lastAt: it takes the last output frame's place instead of being dropped as past the end, so
// the video keeps its length and ends on the final position even when that is painted late.
type pump struct {
	r        *render
	enc      *media.Encoder
	frames   page.ScreencastFrameClient
	first    chan struct{} // closed with the first frame
	done     chan struct{} // closed when run returns
	err      error         // why run returned; read after done
	stopping atomic.Bool
	stopOnce sync.Once
	count    atomic.Int64

	lastAt time.Duration // the time of the video's last output frame
	final  chan struct{} // closed once a frame at the final position is in; nil: no scroll

	mu       sync.Mutex // the fields below
	frameY   float64    // scroll offset of the latest frame handed in
	haveY    bool       // a frame has been handed in
	finalY   float64    // the final scroll position, once finalSet
	finalSet bool
	reached  bool // final is closed
}

func (p *pump) run(ctx context.Context) {
	defer close(p.done)
	p.err = p.loop(ctx)
}

// result is the error of a pump that ended before it was stopped.
func (p *pump) result() error {
	if p.err != nil {
		return p.err
	}
	return errors.New("the screencast ended early")
}

func (p *pump) loop(ctx context.Context) error {
	var t0 float64
	for {
		ev, err := p.frames.Recv()
		if err != nil {
			if p.stopping.Load() {
				return nil
			}
			return err
		}
		if err := p.r.t.c.Page.ScreencastFrameAck(ctx, page.NewScreencastFrameAckArgs(ev.SessionID)); err != nil {
			if p.stopping.Load() {
				return nil
			}
			return err
		}
		ts := float64(ev.Metadata.Timestamp)
		if ts == 0 {
			// No swap time (older browsers): the arrival time is the next best thing.
			ts = float64(time.Now().UnixNano()) / 1e9
		}
		if p.count.Add(1) == 1 {
			t0 = ts
			close(p.first)
		}
		at := time.Duration((ts - t0) * float64(time.Second))
		if at > p.lastAt && p.awaiting() {
			at = p.lastAt
		}
		if err := p.enc.Add(media.Frame{Data: ev.Data, Timestamp: max(at, 0)}); err != nil {
			return err
		}
		p.handed(ev.Metadata.ScrollOffsetY)
	}
}

// awaiting reports whether the frame at the final scroll position is yet to come.
func (p *pump) awaiting() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.final != nil && !p.reached
}

// handed records the scroll offset of the frame just handed to the encoder.
func (p *pump) handed(y float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.frameY, p.haveY = y, true
	p.check()
}

// setFinal says where the scroll ended (the window's scrollY after the last scroll); final
// closes once a frame at y is in, the latest one included. ok false (the document went away):
// there is nothing to wait for.
func (p *pump) setFinal(y float64, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finalY, p.finalSet = y, true
	if !ok {
		p.reach()
	}
	p.check()
}

// giveUp stops waiting for the frame at the final position: later frames are past the end.
func (p *pump) giveUp() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reach()
}

// check closes final when the latest frame shows the final position. Called with mu held.
func (p *pump) check() {
	// Positions are whole CSS pixels apart; scrollY and the metadata can differ by the
	// snapping to device pixels at a fractional scale.
	if p.finalSet && p.haveY && math.Abs(p.frameY-p.finalY) < 0.5 {
		p.reach()
	}
}

// reach ends the wait for the final frame, once. Called with mu held.
func (p *pump) reach() {
	if !p.reached {
		p.reached = true
		close(p.final)
	}
}

// stop ends the frame stream; run returns soon after.
func (p *pump) stop() {
	p.stopOnce.Do(func() {
		p.stopping.Store(true)
		p.frames.Close()
	})
}
