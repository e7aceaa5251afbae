package media

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/shotd/shotd"
	iproc "github.com/shotd/shotd/internal/proc"
)

// exitGrace is how long a failing ffmpeg may take to exit on its own before it is killed.
const exitGrace = 5 * time.Second

// MaxGIFFPS is the highest frame rate of a gif; VideoSpec.Normalized clamps to it.
const MaxGIFFPS = 15

// gifPaletteBudget bounds the frames ffmpeg may hold for a single gif palette (estimated at 4
// bytes per pixel per frame); above it each frame gets its own palette. A variable for tests.
var gifPaletteBudget int64 = 256 << 20

// Frame is one screencast frame.
type Frame struct {
	Data      []byte        // one JPEG or PNG image as Page.screencastFrame delivers it
	Timestamp time.Duration // since the recording started (from the frame's metadata.timestamp)
}

// VideoSpec describes the file an Encoder writes.
type VideoSpec struct {
	Format        string        // "mp4", "webm", "gif", "mov" or "avi"
	FPS           int           // output frame rate; a gif uses at most MaxGIFFPS
	Duration      time.Duration // exact output length
	Width, Height int           // output size in pixels; mp4 and webm round each down to even
	MaxBytes      int64         // largest file accepted, else content_too_large; 0: unlimited
	TempDir       string        // where the private temp dir is made; "": os.TempDir()
	Nice          int           // ffmpeg's nice steps below the service's CPU priority
}

// Normalized returns the spec the Encoder really uses (gif frame rate clamped, mp4 and webm
// sizes rounded down to even), or an internal_error for a spec no video can have.
func (s VideoSpec) Normalized() (VideoSpec, error) {
	switch s.Format {
	case shotd.FormatMP4, shotd.FormatWebM, shotd.FormatMOV, shotd.FormatAVI:
		s.Width &^= 1
		s.Height &^= 1
	case shotd.FormatGIF:
		s.FPS = min(s.FPS, MaxGIFFPS)
	default:
		return s, shotd.Errorf(shotd.CodeInternalError, "unknown video format %q", s.Format)
	}
	switch {
	case s.FPS <= 0:
		return s, shotd.Errorf(shotd.CodeInternalError, "video frame rate %d is not positive", s.FPS)
	case s.Duration <= 0:
		return s, shotd.Errorf(shotd.CodeInternalError, "video duration %s is not positive", s.Duration)
	case s.Width <= 0 || s.Height <= 0 || s.Width > 16384 || s.Height > 16384:
		return s, shotd.Errorf(shotd.CodeInternalError, "video size %dx%d is out of range", s.Width, s.Height)
	}
	return s, nil
}

// FrameCount is the number of frames of the file: round(Duration*FPS), at least 1.
func (s VideoSpec) FrameCount() int {
	return max(1, int(math.Round(s.Duration.Seconds()*float64(s.FPS))))
}

// Encoder is one supervised ffmpeg subprocess fed through a pipe. Add and Finish are meant for
// one goroutine; Close may be called from any goroutine at any time, and always should be
// (deferred), since only Close removes the temp dir after a failure.
type Encoder struct {
	ctx   context.Context
	spec  VideoSpec
	log   zerolog.Logger
	dir   string // private temp dir, holds the output file
	out   string
	total int // output frames

	p atomic.Pointer[iproc.Child] // nil until the first frame; Close reads it without mu

	mu      sync.Mutex // the stream state below
	stdin   *os.File
	stream  imageInfo // kind and size of the first frame, which all others are made to match
	cur     []byte    // the frame showing now
	next    int       // index of the next output frame
	err     error     // sticky failure
	done    bool      // Finish or Close ran
	started time.Time

	closeOnce sync.Once
	closeErr  error
}

// NewEncoder checks the spec and makes the temp dir. ffmpeg starts with the first frame, whose
// encoding and size decide the input side of the pipe. ctx bounds the whole encoding: when it
// ends, ffmpeg is killed and Add or Finish return timeout (deadline) or internal_error.
func NewEncoder(ctx context.Context, spec VideoSpec, log zerolog.Logger) (*Encoder, error) {
	spec, err := spec.Normalized()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(spec.TempDir, "shotd-video-")
	if err != nil {
		return nil, shotd.Wrap(shotd.CodeInternalError, err, "cannot create the video temp directory")
	}
	return &Encoder{
		ctx:   ctx,
		spec:  spec,
		log:   log.With().Str("format", spec.Format).Logger(),
		dir:   dir,
		out:   filepath.Join(dir, "out."+spec.Format),
		total: spec.FrameCount(),
	}, nil
}

// Spec returns the normalized spec the encoder writes.
func (e *Encoder) Spec() VideoSpec { return e.spec }

// Add takes the next frame; frames come in timestamp order. It first writes to ffmpeg every
// output frame that the previous frame covers, up to this frame's timestamp; a frame past the end
// is then ignored. Add keeps f.Data: do not change it afterwards. A frame that is not a readable
// JPEG or PNG is refused with an internal_error and skipped (the previous frame keeps showing);
// any other error is final.
func (e *Encoder) Add(f Frame) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.usable(); err != nil {
		return err
	}
	if e.cur != nil {
		// The previous frame shows at every i with i/FPS < f.Timestamp.
		for e.next < e.total && time.Duration(e.next)*time.Second < f.Timestamp*time.Duration(e.spec.FPS) {
			if err := e.write(e.cur); err != nil {
				return err
			}
		}
		if e.next >= e.total {
			return nil
		}
	}
	info, err := sniff(f.Data)
	if err != nil {
		return shotd.Wrap(shotd.CodeInternalError, err, "unreadable video frame")
	}
	data := f.Data
	if e.p.Load() == nil {
		if err := e.start(info); err != nil {
			return e.fail(err)
		}
	} else if info != e.stream {
		if data, err = conform(data, e.stream); err != nil {
			return shotd.Wrap(shotd.CodeInternalError, err, "unreadable video frame")
		}
	}
	e.cur = data
	return nil
}

// Finish holds the last frame until Duration, ends the input and returns the encoded file. The
// temp dir is gone when it returns.
func (e *Encoder) Finish() ([]byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.usable(); err != nil {
		return nil, err
	}
	defer e.cleanup()
	e.done = true
	if e.cur == nil {
		e.err = shotd.Errorf(shotd.CodeInternalError, "no video frame was captured")
		return nil, e.err
	}
	for e.next < e.total {
		if err := e.write(e.cur); err != nil {
			return nil, err
		}
	}
	if err := e.stdin.Close(); err != nil {
		return nil, e.fail(err)
	}
	p := e.p.Load()
	<-p.Done()
	if p.Err() != nil {
		return nil, e.fail(p.Err())
	}
	if err := e.checkSize(); err != nil {
		e.err = err
		return nil, err
	}
	data, err := os.ReadFile(e.out)
	if err != nil {
		return nil, e.fail(err)
	}
	e.log.Debug().Int("pid", p.PID()).Int("frames", e.total).Int("bytes", len(data)).
		Dur("took", time.Since(e.started)).Msg("video encoded")
	return data, nil
}

// Close kills ffmpeg with its whole process group, waits for it and removes the temp dir. It is
// idempotent, safe after Finish, and safe while Add or Finish run in another goroutine (they
// return an error once ffmpeg is gone).
func (e *Encoder) Close() error {
	e.closeOnce.Do(func() {
		// Kill before taking the lock: an Add blocked on a full pipe returns once ffmpeg is dead.
		if p := e.p.Load(); p != nil {
			p.Kill()
			<-p.Done()
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		if !e.done && e.err == nil {
			e.err = shotd.Errorf(shotd.CodeInternalError, "the video encoder was closed")
		}
		e.done = true
		e.closeErr = e.cleanup()
	})
	return e.closeErr
}

// usable reports why the encoder takes no more input, if it does not.
func (e *Encoder) usable() error {
	switch {
	case e.err != nil:
		return e.err
	case e.done:
		return shotd.Errorf(shotd.CodeInternalError, "the video encoder has finished")
	case e.ctx.Err() != nil:
		return e.fail(e.ctx.Err())
	}
	return nil
}

// start launches ffmpeg for a stream of frames like the first one.
func (e *Encoder) start(first imageInfo) error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	args := ffmpegArgs(e.spec, first, e.out)
	p, err := startProc(e.ctx, ffmpegBin, args, r, nil, e.spec.Nice)
	if err != nil {
		w.Close()
		return err
	}
	e.p.Store(p)
	e.stdin, e.stream, e.started = w, first, time.Now()
	e.log.Debug().Int("pid", p.PID()).Strs("args", args).Msg("ffmpeg started")
	return nil
}

// write sends one output frame.
func (e *Encoder) write(frame []byte) error {
	if _, err := e.stdin.Write(frame); err != nil {
		return e.fail(err)
	}
	e.next++
	return nil
}

// fail records the final error that cause led to. A broken pipe or exit is explained by what
// ended ffmpeg: the context, the size limit (-fs stops it), or its own failure.
func (e *Encoder) fail(cause error) error {
	if e.err != nil {
		return e.err
	}
	p := e.p.Load()
	if p != nil {
		if e.ctx.Err() != nil {
			p.Kill()
		}
		// A dead pipe means ffmpeg is going or gone; give it a moment to say why.
		select {
		case <-p.Done():
		case <-time.After(exitGrace):
			p.Kill()
			<-p.Done()
		}
	}
	ctxErr := e.ctx.Err()
	if p != nil && p.CtxErr() != nil {
		ctxErr = p.CtxErr()
	}
	switch {
	case errors.Is(ctxErr, context.DeadlineExceeded):
		e.err = shotd.Wrap(shotd.CodeTimeout, ctxErr, "the video was not encoded before the timeout")
	case ctxErr != nil:
		e.err = shotd.Wrap(shotd.CodeInternalError, ctxErr, "the video encoding was canceled")
	default:
		if err := e.checkSize(); err != nil {
			e.err = err
			break
		}
		if p != nil {
			if p.Err() != nil {
				cause = p.Err()
			}
			if tail := strings.TrimSpace(p.Stderr()); tail != "" {
				cause = fmt.Errorf("ffmpeg: %w: %s", cause, tail)
			} else {
				cause = fmt.Errorf("ffmpeg: %w", cause)
			}
		}
		e.err = shotd.Wrap(shotd.CodeInternalError, cause, "the video encoding failed")
	}
	if ctxErr == nil && shotd.AsError(e.err).Code == shotd.CodeInternalError {
		e.log.Warn().Err(e.err).Msg("video encoding failed")
	} else {
		e.log.Debug().Err(e.err).Msg("video encoding stopped")
	}
	return e.err
}

// checkSize returns content_too_large when the output is over MaxBytes.
func (e *Encoder) checkSize() error {
	if e.spec.MaxBytes <= 0 {
		return nil
	}
	if st, err := os.Stat(e.out); err == nil && st.Size() > e.spec.MaxBytes {
		return shotd.Errorf(shotd.CodeContentTooLarge,
			"the video is larger than the %d bytes allowed", e.spec.MaxBytes)
	}
	return nil
}

// cleanup closes our end of the pipe and removes the temp dir. Called with mu held.
func (e *Encoder) cleanup() error {
	if e.stdin != nil {
		e.stdin.Close()
	}
	if e.dir == "" {
		return nil
	}
	err := os.RemoveAll(e.dir)
	e.dir = ""
	return err
}

// ffmpegArgs builds the command line: an image2pipe stream of first's codec at the output rate on
// stdin, fitted to the spec size, encoded to out.
func ffmpegArgs(s VideoSpec, first imageInfo, out string) []string {
	args := []string{
		"-hide_banner", "-nostats", "-loglevel", "error",
		"-f", "image2pipe", "-c:v", first.kind.decoder(), "-framerate", strconv.Itoa(s.FPS),
		"-i", "pipe:0",
		"-an", "-sn", "-dn",
	}
	fit := fitFilter(first, s)
	switch s.Format {
	case shotd.FormatMP4, shotd.FormatWebM, shotd.FormatMOV, shotd.FormatAVI:
		// Tagged BT.709 limited range, what players assume for HD; the JPEGs are BT.601 full range.
		vf := "scale=out_color_matrix=bt709:out_range=tv,format=yuv420p"
		if fit != "" {
			vf = fit + "," + vf
		}
		args = append(args, "-vf", vf,
			"-colorspace", "bt709", "-color_primaries", "bt709", "-color_trc", "bt709", "-color_range", "tv")
		switch s.Format {
		case shotd.FormatMP4, shotd.FormatMOV:
			args = append(args, "-c:v", "libx264", "-preset", "veryfast", "-crf", "23",
				"-movflags", "+faststart", "-f", s.Format) // the mov muxer takes faststart too
		case shotd.FormatAVI:
			// ffmpeg's own MPEG-4 Part 2 tagged XVID: what AVI players decode, unlike H.264 in AVI.
			args = append(args, "-c:v", "mpeg4", "-q:v", "4", "-vtag", "XVID", "-f", "avi")
		default:
			args = append(args, "-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8",
				"-row-mt", "1", "-b:v", "0", "-crf", "35", "-f", "webm")
		}
	case shotd.FormatGIF:
		pal := "palettegen=stats_mode=full[p];[b][p]paletteuse=diff_mode=rectangle"
		if int64(s.Width)*int64(s.Height)*4*int64(s.FrameCount()) > gifPaletteBudget {
			pal = "palettegen=stats_mode=single[p];[b][p]paletteuse=new=1:diff_mode=rectangle"
		}
		graph := "[0:v]"
		if fit != "" {
			graph += fit + ","
		}
		graph += "split[a][b];[a]" + pal
		args = append(args, "-filter_complex", graph, "-loop", "0", "-f", "gif")
	}
	if s.MaxBytes > 0 {
		// ffmpeg stops once the file passes the limit; the size check then refuses it.
		args = append(args, "-fs", strconv.FormatInt(s.MaxBytes+1, 10))
	}
	return append(args, "-y", out)
}

// fitFilter makes frames of first's size spec-sized: nothing when they are, a crop when they are
// at most one pixel larger (the even rounding of mp4 and webm), else scale keeping the aspect
// ratio and pad with black.
func fitFilter(first imageInfo, s VideoSpec) string {
	dw, dh := first.w-s.Width, first.h-s.Height
	switch {
	case dw == 0 && dh == 0:
		return ""
	case dw >= 0 && dw <= 1 && dh >= 0 && dh <= 1:
		return fmt.Sprintf("crop=%d:%d:0:0", s.Width, s.Height)
	}
	flags := "bicubic"
	if s.Format == shotd.FormatGIF {
		flags = "lanczos"
	}
	return fmt.Sprintf("scale=%d:%d:force_original_aspect_ratio=decrease:flags=%s,"+
		"pad=%d:%d:(ow-iw)/2:(oh-ih)/2,setsar=1", s.Width, s.Height, flags, s.Width, s.Height)
}
