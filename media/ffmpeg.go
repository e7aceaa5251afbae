package media

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	iproc "github.com/shotd/shotd/internal/proc"
)

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
	cmd := exec.CommandContext(ctx, bin, "-hide_banner", "-version")
	cmd.Env = iproc.Env(os.Environ())
	out, err := cmd.Output()
	if err != nil {
		return "", "", fmt.Errorf("%s -version: %w", bin, err)
	}
	version, _, _ = strings.Cut(string(out), "\n")
	version, _, _ = strings.Cut(version, " Copyright")
	return bin, strings.TrimSpace(version), nil
}

// UseFFmpeg makes the encoder run bin (from FindFFmpeg). Call it once, before any render.
func UseFFmpeg(bin string) { ffmpegBin = bin }
