package media

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/image/tiff"

	"github.com/shotd/shotd"
)

// The still images that Chrome does not encode. Chrome captures PNG; these write it again:
//
//   - tiff in Go (golang.org/x/image/tiff, Deflate with the horizontal predictor): lossless,
//     about 75 ms for 1100x2153 px, without a process;
//   - avif, jp2 and gif_still through ffmpeg (libaom-av1 in its all-intra mode at cpu-used 8,
//     libopenjpeg's irreversible wavelet, palettegen + paletteuse);
//   - heif through heif-enc of libheif (x265), the only HEIF writer in Debian: ffmpeg has no
//     HEIF muxer.
//
// Each process runs as an internal/proc.Child like the video encoder, on files in a private temp
// dir (heif-enc reads only files, the avif muxer seeks in its output).

// heifEncBin is heif-enc, looked up on PATH at each use: the package libheif-examples may come
// or go without a restart. A variable for tests.
var heifEncBin = "heif-enc"

// DefaultStillQuality is the quality of a spec without one, image_quality's default.
const DefaultStillQuality = 80

// StillSpec describes one still image to write.
type StillSpec struct {
	Format  string // shotd.FormatAVIF, FormatJP2, FormatHEIF, FormatGIFStill or FormatTIFF
	Quality int    // 1..100 for avif, jp2 and heif (100: jp2 lossless); 0: DefaultStillQuality
	TempDir string // where the private temp dir is made; "": os.TempDir()
	Nice    int    // the encoder's nice steps below the service's CPU priority
}

// IsStill reports whether format is one that EncodeStill writes.
func IsStill(format string) bool {
	switch format {
	case shotd.FormatAVIF, shotd.FormatJP2, shotd.FormatHEIF, shotd.FormatGIFStill, shotd.FormatTIFF:
		return true
	}
	return false
}

// StillAvailable returns nil when this server can write format, else the invalid_options error
// that says it is not available here (heif without heif-enc).
func StillAvailable(format string) error {
	if format != shotd.FormatHEIF {
		return nil
	}
	if _, err := exec.LookPath(heifEncBin); err != nil {
		e := shotd.Wrap(shotd.CodeInvalidOptions, err,
			"format heif is not available on this server: its encoder, heif-enc (Debian package libheif-examples), is not installed")
		e.Fields = []shotd.FieldError{{Field: "format", Message: "heif is not available on this server"}}
		return e
	}
	return nil
}

// EncodeStillImage writes img as spec.Format: tiff directly, the others from a PNG of it.
func EncodeStillImage(ctx context.Context, spec StillSpec, img image.Image) ([]byte, error) {
	if spec.Format == shotd.FormatTIFF {
		return encodeTIFF(img)
	}
	var buf bytes.Buffer
	// Speed over size: the PNG only carries the pixels to the encoder.
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&buf, img); err != nil {
		return nil, shotd.Wrap(shotd.CodeInternalError, err, "the image could not be encoded")
	}
	return EncodeStill(ctx, spec, buf.Bytes())
}

// EncodeStill writes the PNG pngData as spec.Format. Errors are *shotd.Error: invalid_options
// for a format this server cannot write (StillAvailable), timeout when ctx's deadline ended the
// encoder, internal_error otherwise (the encoder's stderr is in the cause, for the log only).
func EncodeStill(ctx context.Context, spec StillSpec, pngData []byte) ([]byte, error) {
	if err := StillAvailable(spec.Format); err != nil {
		return nil, err
	}
	if spec.Format == shotd.FormatTIFF {
		img, err := png.Decode(bytes.NewReader(pngData))
		if err != nil {
			return nil, shotd.Wrap(shotd.CodeInternalError, err, "the capture could not be read")
		}
		return encodeTIFF(img)
	}
	q := spec.Quality
	if q <= 0 || q > 100 {
		q = DefaultStillQuality
	}
	dir, err := os.MkdirTemp(spec.TempDir, "shotd-still-")
	if err != nil {
		return nil, shotd.Wrap(shotd.CodeInternalError, err, "cannot create the image temp directory")
	}
	defer os.RemoveAll(dir)
	in, out := filepath.Join(dir, "in.png"), filepath.Join(dir, "out."+shotd.Extension(spec.Format))
	if err := os.WriteFile(in, pngData, 0o600); err != nil {
		return nil, shotd.Wrap(shotd.CodeInternalError, err, "cannot write the encoder's input")
	}
	bin, args := stillCommand(spec.Format, q, in, out)
	if bin == "" {
		return nil, shotd.Errorf(shotd.CodeInternalError, "no still encoder for format %q", spec.Format)
	}
	if err := runStill(ctx, bin, args, spec); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return nil, shotd.Wrap(shotd.CodeInternalError, err, "the encoder wrote no image")
	}
	return data, nil
}

// stillCommand is the program and arguments that write in (a PNG) as format at quality q into
// out; "" for a format no process writes.
func stillCommand(format string, q int, in, out string) (string, []string) {
	ff := func(args ...string) (string, []string) {
		base := []string{"-hide_banner", "-nostats", "-loglevel", "error", "-i", in, "-frames:v", "1"}
		return ffmpegBin, append(append(base, args...), "-y", out)
	}
	switch format {
	case shotd.FormatAVIF:
		// allintra at cpu-used 8: measured 0.3 s of CPU for 1100x2153 px where the default
		// "good" mode took 4.8 s, for files about 45% larger at the same PSNR. libavif's mapping
		// of quality to the quantizer (0..63).
		crf := ((100-q)*63 + 50) / 100
		return ff("-c:v", "libaom-av1", "-usage", "allintra", "-cpu-used", "8", "-row-mt", "1",
			"-crf", strconv.Itoa(crf), "-pix_fmt", "yuv420p", "-still-picture", "1", "-f", "avif")
	case shotd.FormatJP2:
		// compression_level is half the compression ratio: quality 80 is about 42:1 of the raw
		// pixels; 100 is the lossless reversible wavelet.
		args := []string{"-c:v", "libopenjpeg", "-pix_fmt", "rgb24"}
		if q < 100 {
			args = append(args, "-irreversible", "1", "-compression_level", strconv.Itoa(101-q))
		}
		return ff(append(args, "-f", "image2")...)
	case shotd.FormatGIFStill:
		// One palette made for this image, as the video's gif does for its frames.
		return ff("-filter_complex", "split[a][b];[a]palettegen=stats_mode=full[p];[b][p]paletteuse", "-f", "gif")
	case shotd.FormatHEIF:
		return heifEncBin, []string{"-q", strconv.Itoa(q), "-o", out, in}
	}
	return "", nil
}

// runStill runs one still encoder of spec to its end.
func runStill(ctx context.Context, bin string, args []string, spec StillSpec) error {
	format := spec.Format
	p, err := startProc(ctx, bin, args, nil, nil, spec.Nice)
	if err != nil {
		return shotd.Wrap(shotd.CodeInternalError, err, "the image encoder could not start")
	}
	<-p.Done()
	if cerr := p.CtxErr(); cerr != nil {
		if errors.Is(cerr, context.DeadlineExceeded) {
			return shotd.Wrap(shotd.CodeTimeout, cerr, "the image was not encoded before the timeout")
		}
		return shotd.Wrap(shotd.CodeInternalError, cerr, "the image encoding was canceled")
	}
	if p.Err() != nil {
		cause := fmt.Errorf("%s (%s): %w: %s", filepath.Base(bin), format, p.Err(), strings.TrimSpace(p.Stderr()))
		return shotd.Wrap(shotd.CodeInternalError, cause, "the image encoding failed")
	}
	return nil
}

// encodeTIFF writes img as a Deflate-compressed TIFF.
func encodeTIFF(img image.Image) ([]byte, error) {
	var buf bytes.Buffer
	if err := tiff.Encode(&buf, img, &tiff.Options{Compression: tiff.Deflate, Predictor: true}); err != nil {
		return nil, shotd.Wrap(shotd.CodeInternalError, err, "the image could not be encoded as tiff")
	}
	return buf.Bytes(), nil
}
