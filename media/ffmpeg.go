package media

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	iproc "github.com/shotd/shotd/internal/proc"
)

// The binaries; tests point them elsewhere to provoke failures.
var (
	ffmpegBin  = "/usr/bin/ffmpeg"
	ffprobeBin = "/usr/bin/ffprobe"
)

// startProc starts bin with args as a supervised child (proc.StartChild), killed with its group
// when ctx ends, nice steps below the service's CPU priority (an encoder is render work, as
// Chrome is: VideoSpec.Nice). stdin and stdout may be nil (/dev/null); stdin, when an *os.File,
// is handed to the child as is and closed here after the start.
func startProc(ctx context.Context, bin string, args []string, stdin *os.File, stdout io.Writer, nice int) (*iproc.Child, error) {
	cmd := exec.Command(bin, args...)
	if stdin != nil {
		cmd.Stdin = stdin
	}
	cmd.Stdout = stdout
	p, err := iproc.StartChild(ctx, cmd)
	if stdin != nil {
		stdin.Close() // the child holds its own copy
	}
	if err == nil && nice > 0 {
		_, _ = p.Lower(nice) // best effort: the encoder works as well at the service's priority
	}
	return p, err
}

// FindFFmpeg resolves path ("" = ffmpeg on PATH) and runs it with -version, so that a wrong
// media.ffmpeg_path stops serve at start instead of failing every video render. It returns the
// absolute path and the first line of the version output.
func FindFFmpeg(ctx context.Context, path string) (bin, version string, err error) {
	if path == "" {
		path = "ffmpeg"
	}
	bin, err = exec.LookPath(path)
	if err != nil {
		return "", "", fmt.Errorf("ffmpeg not found: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var out bytes.Buffer
	p, err := startProc(ctx, bin, []string{"-hide_banner", "-version"}, nil, &out, 0)
	if err == nil {
		<-p.Done()
		if err = p.CtxErr(); err == nil {
			err = p.Err()
		}
	}
	if err != nil {
		return "", "", fmt.Errorf("%s -version: %w", bin, err)
	}
	version, _, _ = strings.Cut(out.String(), "\n")
	version, _, _ = strings.Cut(version, " Copyright")
	return bin, strings.TrimSpace(version), nil
}

// UseFFmpeg makes the encoder run bin (from FindFFmpeg). Call it once, before any render.
func UseFFmpeg(bin string) { ffmpegBin = bin }
