package service

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/shotd/shotd/cdpclient"
	"github.com/shotd/shotd/config"
	"github.com/shotd/shotd/internal/proc"
	"github.com/shotd/shotd/internal/testenv"
	"github.com/shotd/shotd/store"
)

// testConfig is the default configuration on loopback with one small Chrome, in dir.
func testConfig(dir string) *config.Config {
	cfg := config.Default()
	cfg.DataDir, cfg.Listen, cfg.AdminListen = dir, "127.0.0.1:0", "127.0.0.1:0"
	cfg.ShutdownTimeoutSeconds = 5
	cfg.Browser.Path, cfg.Browser.PoolSize, cfg.Browser.Prewarm = testenv.Browser(), 1, 1
	if iso := testenv.Isolation(); iso != "" {
		cfg.Browser.Isolation = iso
	}
	cfg.Browser.MemoryLimitMB = config.AutoMBOff
	return cfg
}

// noChromeLeft fails t when a Chrome of the service in dir still runs (and ends it).
func noChromeLeft(t *testing.T, dir string) {
	t.Helper()
	if n := cdpclient.KillOrphans(filepath.Join(dir, "chrome")); n > 0 {
		t.Errorf("%d Chrome process groups outlived the service", n)
	}
}

func get(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestOpenClose: a first Open bootstraps the data directory and serves both APIs on the given
// listeners once a browser is up; Close stops every Chrome; the next Open finds the key and
// the admin token the first one made.
func TestOpenClose(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	pub, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	adm, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(dir)
	svc, err := Open(ctx, cfg, WithListeners(pub, adm))
	if err != nil {
		t.Fatal(err)
	}
	fs := svc.FirstStart()
	if fs == nil || fs.AccessKey == "" || cfg.AdminToken == "" {
		t.Fatalf("first start: %+v, admin token %q", fs, cfg.AdminToken)
	}
	if svc.PublicAddr() != pub.Addr() || svc.AdminAddr() != adm.Addr() {
		t.Fatalf("serving on %v and %v, not the given listeners", svc.PublicAddr(), svc.AdminAddr())
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := svc.WaitReady(rctx); err != nil {
		t.Fatal(err)
	}
	if code := get(t, "http://"+pub.Addr().String()+"/readyz"); code != 200 {
		t.Errorf("/readyz answered %d", code)
	}
	// browser.nice: the service's Chrome runs below its own CPU priority.
	infos, err := svc.Renderer().Browsers(5 * time.Second)
	if err != nil || len(infos) == 0 {
		t.Fatalf("browsers: %v, %v", infos, err)
	}
	for _, b := range infos {
		raw, err := syscall.Getpriority(syscall.PRIO_PROCESS, b.PID)
		if want := min(proc.Nice()+cfg.Browser.Nice, proc.MaxNice); err != nil || 20-raw != want {
			t.Errorf("Chrome %d at nice %d (%v), want %d", b.PID, 20-raw, err, want)
		}
	}
	if code := get(t, "http://"+adm.Addr().String()+"/metrics"); code != 200 {
		t.Errorf("/metrics on a loopback admin_listen answered %d", code)
	}
	if err := svc.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	noChromeLeft(t, dir)
	if _, err := net.Dial("tcp", pub.Addr().String()); err == nil {
		t.Error("the public listener still accepts after Close")
	}

	token := cfg.AdminToken
	cfg = testConfig(dir)
	svc, err = Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := svc.Close(context.Background()); err != nil {
			t.Error(err)
		}
		noChromeLeft(t, dir)
	}()
	if svc.FirstStart() != nil || cfg.AdminToken != token {
		t.Errorf("second start: first start %+v, admin token changed: %v", svc.FirstStart(), cfg.AdminToken != token)
	}
	if keys, err := svc.Store().Keys("default"); err != nil || len(keys) != 1 || keys[0].AccessKey != fs.AccessKey {
		t.Errorf("keys of the default account: %v, %v", keys, err)
	}
}

// TestOpenFails: an Open that fails stops what it had started: no Chrome, no listener.
func TestOpenFails(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	tests := []struct {
		name string
		set  func(*config.Config)
		want string
	}{
		// The last step: everything else, the browser pool included, is running by then.
		{name: "admin_listen taken", set: func(c *config.Config) { c.AdminListen = taken.Addr().String() }, want: "admin_listen"},
		{name: "no filter list", set: func(c *config.Config) { c.Blocking.EasyList = filepath.Join(c.DataDir, "none.txt") }, want: "blocking.easylist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := testConfig(dir)
			tt.set(cfg)
			svc, err := Open(t.Context(), cfg)
			if err == nil {
				svc.Close(context.Background())
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not name %s", err, tt.want)
			}
			noChromeLeft(t, dir)
			// The store is closed: its file lock is free again.
			st, err := store.Open(dir, zerolog.Nop())
			if err != nil {
				t.Fatalf("the store stayed open: %v", err)
			}
			st.Close(context.Background())
		})
	}
}
