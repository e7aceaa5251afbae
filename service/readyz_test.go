package service

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestReadyzChecks: /readyz runs the service's own checks. Each part taken away in turn is
// named under missing: ffmpeg gone leaves the node ready (200, video formats only), too
// little room in data_dir and a database file gone or a database that does not answer make it
// 503 "unavailable"; each part put back makes it ready again.
func TestReadyzChecks(t *testing.T) {
	dir := t.TempDir()
	real, err := exec.LookPath("ffmpeg")
	if err != nil {
		t.Fatal(err)
	}
	ffmpeg := filepath.Join(t.TempDir(), "ffmpeg")
	if err := os.Symlink(real, ffmpeg); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(dir)
	cfg.Media.FFmpegPath = ffmpeg
	svc, err := Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		svc.Close(context.Background())
		noChromeLeft(t, dir)
	}()
	rctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := svc.WaitReady(rctx); err != nil {
		t.Fatal(err)
	}
	url := "http://" + svc.PublicAddr().String() + "/readyz"
	// expect asks /readyz and wants code, status, and missing to name exactly the part given,
	// with a reason that starts with why ("" for none).
	expect := func(step string, code int, status, part, why string) {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var got struct {
			Status  string            `json:"status"`
			Missing map[string]string `json:"missing"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		names := slices.Sorted(maps.Keys(got.Missing))
		wantNames := []string{}
		if part != "" {
			wantNames = []string{part}
		}
		if resp.StatusCode != code || got.Status != status || !slices.Equal(names, wantNames) || !strings.HasPrefix(got.Missing[part], why) {
			t.Errorf("%s: %d %+v, want %d %q with missing %v: %q...", step, resp.StatusCode, got, code, status, wantNames, why)
		}
	}
	expect("all there", 200, "ready", "", "")

	if err := os.Remove(ffmpeg); err != nil {
		t.Fatal(err)
	}
	expect("ffmpeg removed", 200, "ready", "ffmpeg", "ffmpeg is gone (")
	if err := os.Symlink(real, ffmpeg); err != nil {
		t.Fatal(err)
	}
	expect("ffmpeg back", 200, "ready", "", "")

	reserve := svc.diskReserve.Load()
	svc.diskReserve.Store(1 << 62) // more than any disk has
	expect("disk low", 503, "unavailable", "disk", "data_dir has ")
	svc.diskReserve.Store(reserve)
	expect("disk room again", 200, "ready", "", "")

	db := svc.Store().DB().Path()
	if err := os.Rename(db, db+".away"); err != nil {
		t.Fatal(err)
	}
	expect("database file gone", 503, "unavailable", "database", "the database file is gone: ")
	if err := os.Rename(db+".away", db); err != nil {
		t.Fatal(err)
	}
	expect("database file back", 200, "ready", "", "")

	// Last: the service cannot use its store any more (Close of the store after it is a no-op).
	if err := svc.Store().DB().Close(); err != nil {
		t.Fatal(err)
	}
	expect("database closed", 503, "unavailable", "database", "the database does not answer: ")
}
