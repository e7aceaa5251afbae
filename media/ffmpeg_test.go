package media

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFindFFmpeg(t *testing.T) {
	notExec := filepath.Join(t.TempDir(), "ffmpeg")
	if err := os.WriteFile(notExec, []byte("not a program"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
		ok         bool
	}{
		{"on PATH", "", true},
		{"absolute", ffmpegBin, true},
		{"missing", "/nonexistent/ffmpeg", false},
		{"not executable", notExec, false},
		{"not ffmpeg", "/bin/false", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bin, version, err := FindFFmpeg(t.Context(), tt.path)
			if (err == nil) != tt.ok {
				t.Fatalf("FindFFmpeg(%q) = %q, %q, %v; want ok=%v", tt.path, bin, version, err, tt.ok)
			}
			if tt.ok && (!filepath.IsAbs(bin) || !strings.HasPrefix(version, "ffmpeg version")) {
				t.Errorf("FindFFmpeg(%q) = %q, %q", tt.path, bin, version)
			}
		})
	}
}
