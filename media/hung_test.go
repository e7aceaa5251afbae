package media

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shotd/shotd"
)

// TestEncoderHungFFmpeg: an ffmpeg that never reads and never exits (a script that sleeps) is
// killed by the encode's deadline; Add or Finish answer timeout, nothing is left running, and
// the next encode works.
func TestEncoderHungFFmpeg(t *testing.T) {
	dir := t.TempDir()
	hung := filepath.Join(dir, "ffmpeg")
	// exec: the sleep is ffmpeg's own process, so a kill that missed the group would leave it.
	if err := os.WriteFile(hung, []byte("#!/bin/sh\nexec sleep 3600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	old := ffmpegBin
	ffmpegBin = hung
	defer func() { ffmpegBin = old }()

	tmp := t.TempDir()
	checkNoLeaks(t, tmp)
	// encoder starts a second of 64x64 mp4 that must be done within limit.
	encoder := func(limit time.Duration) *Encoder {
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		t.Cleanup(cancel)
		enc, err := NewEncoder(ctx, VideoSpec{Format: "mp4", FPS: 24, Duration: time.Second,
			Width: 64, Height: 64, TempDir: tmp}, testLog(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { enc.Close() })
		return enc
	}
	enc := encoder(time.Second)
	var err error
	frame := encodeJPEG(t, solid(64, 64, red), 90)
	var pid int
	// Frames fill the pipe that nobody reads; the deadline must end the Add that blocks on it.
	for i := 0; err == nil && i < 10000; i++ {
		err = enc.Add(Frame{Data: frame, Timestamp: time.Duration(i) * time.Second / 24})
		if pid == 0 && procOf(enc) != nil {
			pid = procOf(enc).PID()
		}
	}
	if err == nil {
		_, err = enc.Finish()
	}
	wantCode(t, err, shotd.CodeTimeout)
	if pid == 0 {
		t.Fatal("the hung ffmpeg never started")
	}
	if alive(pid) {
		t.Errorf("the hung ffmpeg %d still exists after the deadline", pid)
	}
	if err := enc.Close(); err != nil {
		t.Error(err)
	}

	// The service goes on: the next encode, on the real ffmpeg, works.
	ffmpegBin = old
	next := encoder(60 * time.Second)
	for i := range 24 {
		if err := next.Add(Frame{Data: frame, Timestamp: time.Duration(i) * time.Second / 24}); err != nil {
			t.Fatalf("frame %d after the hung ffmpeg: %v", i, err)
		}
	}
	if out, err := next.Finish(); err != nil || len(out) == 0 {
		t.Fatalf("the encode after the hung ffmpeg: %d bytes, %v", len(out), err)
	}
}
