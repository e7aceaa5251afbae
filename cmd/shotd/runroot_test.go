package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// runRoot is a short root of a test run of the real binary (not t.TempDir: Chrome's TMPDIR lives
// below it, and the unix socket paths Chrome makes there may not exceed 108 bytes), with the
// service's TMPDIR, its data_dir and the binary built into it. Every process of the run (the
// service, Chrome with its profile under data_dir, ffmpeg) names root in its command line or its
// environment.
type runRoot struct {
	root, tmpDir, dataDir, bin string
}

func newRunRoot(ctx context.Context, t *testing.T, prefix string) runRoot {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the binary")
	}
	root, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(root); err != nil {
			t.Errorf("remove %s: %v", root, err)
		}
	})
	r := runRoot{root: root, tmpDir: filepath.Join(root, "tmp"), dataDir: filepath.Join(root, "data"), bin: filepath.Join(root, "shotd")}
	for _, d := range []string{r.tmpDir, r.dataDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	build := exec.CommandContext(ctx, goBin, "build", "-o", r.bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return r
}
