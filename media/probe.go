package media

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/shotd/shotd"
)

// ProbeInfo is what ffprobe says about the first video stream of a file.
type ProbeInfo struct {
	Format    string        // ffprobe's format_name: "mov,mp4,m4a,3gp,3g2,mj2", "matroska,webm", "gif"
	Codec     string        // "h264", "vp9", "gif"
	PixFmt    string        // "yuv420p", "bgra" ...
	Duration  time.Duration // of the container
	FrameRate float64       // the stream's r_frame_rate
	Width     int
	Height    int
	Frames    int // packets of the stream, counted by reading it through
}

// HasFormat reports whether name is one of the comma-separated names of Format.
func (p ProbeInfo) HasFormat(name string) bool {
	for f := range strings.SplitSeq(p.Format, ",") {
		if f == name {
			return true
		}
	}
	return false
}

// Probe runs ffprobe over data (written to a temp file, since mp4 needs seeking) under the same
// supervision as the encoder. Errors are internal_error, or timeout when ctx's deadline ended it.
func Probe(ctx context.Context, data []byte) (ProbeInfo, error) {
	dir, err := os.MkdirTemp("", "shotd-probe-")
	if err != nil {
		return ProbeInfo{}, shotd.Wrap(shotd.CodeInternalError, err, "cannot create the probe temp directory")
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "in")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		return ProbeInfo{}, shotd.Wrap(shotd.CodeInternalError, err, "cannot write the probe input")
	}
	var out bytes.Buffer
	p, err := startProc(ctx, ffprobeBin, []string{
		"-v", "error", "-count_packets", "-select_streams", "v:0",
		"-show_entries", "format=format_name,duration:stream=codec_name,pix_fmt,width,height,r_frame_rate,nb_read_packets",
		"-of", "json", file,
	}, nil, &out, 0)
	if err != nil {
		return ProbeInfo{}, shotd.Wrap(shotd.CodeInternalError, err, "cannot start ffprobe")
	}
	<-p.Done()
	if cerr := p.CtxErr(); cerr != nil {
		if errors.Is(cerr, context.DeadlineExceeded) {
			return ProbeInfo{}, shotd.Wrap(shotd.CodeTimeout, cerr, "the video was not probed before the timeout")
		}
		return ProbeInfo{}, shotd.Wrap(shotd.CodeInternalError, cerr, "the video probe was canceled")
	}
	if p.Err() != nil {
		return ProbeInfo{}, shotd.Wrap(shotd.CodeInternalError,
			fmt.Errorf("ffprobe: %w: %s", p.Err(), strings.TrimSpace(p.Stderr())), "the video probe failed")
	}
	return parseProbe(out.Bytes())
}

func parseProbe(b []byte) (ProbeInfo, error) {
	var doc struct {
		Streams []struct {
			CodecName    string `json:"codec_name"`
			PixFmt       string `json:"pix_fmt"`
			Width        int    `json:"width"`
			Height       int    `json:"height"`
			RFrameRate   string `json:"r_frame_rate"`
			NbReadPacket string `json:"nb_read_packets"`
		} `json:"streams"`
		Format struct {
			FormatName string `json:"format_name"`
			Duration   string `json:"duration"`
		} `json:"format"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return ProbeInfo{}, shotd.Wrap(shotd.CodeInternalError, err, "unreadable ffprobe output")
	}
	if len(doc.Streams) == 0 {
		return ProbeInfo{}, shotd.Errorf(shotd.CodeInternalError, "the file has no video stream")
	}
	st := doc.Streams[0]
	info := ProbeInfo{
		Format: doc.Format.FormatName,
		Codec:  st.CodecName,
		PixFmt: st.PixFmt,
		Width:  st.Width,
		Height: st.Height,
	}
	if d, err := strconv.ParseFloat(doc.Format.Duration, 64); err == nil {
		info.Duration = time.Duration(d * float64(time.Second))
	}
	if num, den, ok := strings.Cut(st.RFrameRate, "/"); ok {
		n, err1 := strconv.ParseFloat(num, 64)
		d, err2 := strconv.ParseFloat(den, 64)
		if err1 == nil && err2 == nil && d != 0 {
			info.FrameRate = n / d
		}
	}
	info.Frames, _ = strconv.Atoi(st.NbReadPacket)
	return info, nil
}
