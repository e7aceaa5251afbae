package cdpclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/internal/proc"
	"github.com/shotd/shotd/internal/testenv"
	"github.com/shotd/shotd/internal/testkit"
)

// shared is the one browser of the package's tests; each render gets a fresh context anyway.
var shared *Process

func TestMain(m *testing.M) {
	if dir := os.Getenv(orphanHelperEnv); dir != "" {
		os.Exit(orphanHelper(dir)) // a service that TestKillOrphans kills; see there
	}
	goroutines := runtime.NumGoroutine()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := Launch(ctx, Config{Path: testenv.Browser(), Isolation: testenv.Isolation(), Log: zerolog.New(os.Stderr).Level(zerolog.ErrorLevel)})
	if err != nil {
		fmt.Fprintln(os.Stderr, "launch chrome:", err)
		os.Exit(1)
	}
	shared = p
	code := m.Run()

	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "close chrome:", err)
		code = 1
	}
	if err := checkGone(p); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	if err := testkit.WaitGoroutines(goroutines, 5*time.Second); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// checkGone reports a Chrome leader that is still there (even as a zombie), a live process left
// in its group or naming its user-data dir, or a user-data dir left behind.
func checkGone(p *Process) error {
	if _, err := os.Stat(p.dir); !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("user-data dir %s left behind (stat: %v)", p.dir, err)
	}
	if err := testkit.ProcessGone(p.pid, 0); err != nil {
		return fmt.Errorf("chrome: %w", err)
	}
	return testkit.GroupGone(p.pid, p.dir, 5*time.Second)
}

// procState returns the state letter of pid.
func procState(pid int) (byte, bool) {
	st, ok := proc.Read(pid)
	return st.State, ok
}

// opts is a small render of url with the defaults the parser would set.
func opts(url string) *shotd.Options {
	return &shotd.Options{
		URL:               url,
		Format:            shotd.FormatPNG,
		ImageQuality:      80,
		ViewportWidth:     400,
		ViewportHeight:    300,
		DeviceScaleFactor: 1,
		WaitUntil:         shotd.WaitLoad,
		Timeout:           20 * time.Second,
	}
}

func htmlOpts(html string) *shotd.Options {
	o := opts("")
	o.HTML = html
	return o
}

func doRender(t testing.TB, p *Process, o *shotd.Options) (*shotd.Output, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return p.Render(ctx, o)
}

func mustRender(t testing.TB, p *Process, o *shotd.Options) *shotd.Output {
	t.Helper()
	out, err := doRender(t, p, o)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return out
}

// server serves mux on 127.0.0.1. release is closed before the server, so that handlers that
// hold a request can select on it and let Close finish.
func server(t testing.TB, mux *http.ServeMux) (srv *httptest.Server, release <-chan struct{}) {
	t.Helper()
	srv = httptest.NewServer(mux)
	done := make(chan struct{})
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(done) })
	return srv, done
}

func htmlPage(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, body)
	}
}

func decodePNG(t testing.TB, data []byte) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("decode png: %v", err)
	}
	return img
}

// rgbAt returns the 8-bit colour of a pixel.
func rgbAt(img image.Image, x, y int) [3]uint8 {
	r, g, b, _ := img.At(x, y).RGBA()
	return [3]uint8{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8)}
}

func wantCode(t testing.TB, err error, code shotd.Code) *shotd.Error {
	t.Helper()
	if err == nil {
		t.Fatalf("render succeeded, want %s", code)
	}
	var e *shotd.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T %v is not a *shotd.Error", err, err)
	}
	if e.Code != code {
		t.Fatalf("code = %s (%v), want %s", e.Code, err, code)
	}
	return e
}

func pngDecode(data []byte) (image.Image, error) { return png.Decode(bytes.NewReader(data)) }
