package cdpclient

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/internal/proc"
	"github.com/shotd/shotd/internal/testenv"
	"github.com/shotd/shotd/internal/testkit"
)

// launchHostile starts a Chrome of the test's own with cfg (Path and isolation from the
// environment).
func launchHostile(t *testing.T, cfg Config) *Process {
	t.Helper()
	cfg.Path = testenv.Browser()
	if cfg.Isolation == "" {
		cfg.Isolation = testenv.Isolation()
	}
	cfg.Dir = t.TempDir()
	cfg.Log = zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := Launch(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	return p
}

// renderers lists the renderer processes of p.
func renderers(p *Process) []int {
	var pids []int
	for _, pid := range testkit.GroupMembers(p.PID()) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err == nil && bytes.Contains(b, []byte("--type=renderer")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// rendererCPU is the CPU time of p's renderer processes.
func rendererCPU(p *Process) time.Duration {
	var d time.Duration
	for _, pid := range renderers(p) {
		if st, ok := proc.Read(pid); ok {
			d += st.CPU
		}
	}
	return d
}

const memoryBomb = `<p>bomb</p><script>let a = []; while (true) { a.push(new Array(1e6).fill(1)); }</script>`

// bombsBeside renders n memory bombs at once on p, and a normal page while they run, which must
// succeed; it returns the bombs' errors.
func bombsBeside(t *testing.T, p *Process, n int) []error {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range errs {
		wg.Go(func() {
			o := htmlOpts(memoryBomb)
			o.Timeout = 50 * time.Second
			_, errs[i] = doRender(t, p, o)
		})
	}
	mustRender(t, p, htmlOpts(`<p>beside the bombs</p>`))
	wg.Wait()
	return errs
}

// TestMemoryBomb: pages that allocate without end crash their tabs at the JavaScript heap cap
// and answer page_crashed, not a timeout; a normal render beside them succeeds, and so does the
// next one.
func TestMemoryBomb(t *testing.T) {
	p := launchHostile(t, Config{JSHeapMB: 256, Prewarm: 1})
	errs := bombsBeside(t, p, 2)
	for i, err := range errs {
		e := wantCode(t, err, shotd.CodePageCrashed)
		if !strings.Contains(e.Message, "memory") {
			t.Errorf("bomb %d: message %q does not say what happened", i, e.Message)
		}
	}
	mustRender(t, p, htmlOpts(`<p>after the bombs</p>`))
}

// TestCrossSiteFramesShareRenderer: a page with 20 iframes of 20 sites (loopback addresses
// 127.0.0.2 to 127.0.0.21) keeps Chrome within its renderer bound.
func TestCrossSiteFramesShareRenderer(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/", htmlPage(`<p style="background:#0f0">frame</p>`))
	var frames strings.Builder
	for i := 2; i <= 21; i++ {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.%d:0", i))
		if err != nil {
			t.Fatalf("listen on 127.0.0.%d: %v", i, err)
		}
		srv := httptest.NewUnstartedServer(mux)
		srv.Listener.Close()
		srv.Listener = ln
		srv.Start()
		t.Cleanup(srv.Close)
		fmt.Fprintf(&frames, `<iframe src="%s/" width=60 height=40></iframe>`, srv.URL)
	}
	// Two tabs (prewarm 1, renders 1), the start page, and one to spare: config's
	// RendererLimit of such a Chrome.
	const limit = 4
	p := launchHostile(t, Config{Prewarm: 1, Renders: 1, RendererLimit: limit})
	most := 0
	testHookAfterStep = func(step string, tb *tab) {
		if step == "wait" {
			most = max(most, len(renderers(p)))
		}
	}
	defer func() { testHookAfterStep = nil }()
	mustRender(t, p, htmlOpts(frames.String()))
	if most == 0 || most > limit {
		t.Errorf("%d renderer processes while 20 cross-site frames were loaded, want 1 to %d", most, limit)
	}
}

// TestDownloadDenied: a link that downloads a file, clicked, writes nothing to the disk.
func TestDownloadDenied(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home) // where Chrome would put Downloads
	mux := http.NewServeMux()
	mux.HandleFunc("/", htmlPage(`<a id=get href="/file.bin" download="shotd-download.bin">get</a>`))
	mux.HandleFunc("/file.bin", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(bytes.Repeat([]byte("x"), 64<<10))
	})
	srv, _ := server(t, mux)
	p := launchHostile(t, Config{Prewarm: 1})
	o := opts(srv.URL + "/")
	o.Click = "#get"
	o.Delay = 500 * time.Millisecond
	mustRender(t, p, o)
	for _, dir := range []string{home, p.dir, p.tmpDir, os.TempDir()} {
		filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err == nil && strings.Contains(d.Name(), "shotd-download") {
				t.Errorf("the download was written: %s", path)
			}
			return nil
		})
	}
}

// TestBusyLoop: a page whose script never yields is cut at its timeout, and its renderer does not
// go on burning CPU after the answer.
func TestBusyLoop(t *testing.T) {
	p := launchHostile(t, Config{Prewarm: 1})
	o := htmlOpts(`<p>busy</p><script>for (;;) {}</script>`)
	o.Timeout = 2 * time.Second
	_, err := doRender(t, p, o)
	wantCode(t, err, shotd.CodeTimeout)
	// The tab is replaced, not wiped (a timeout); give the disposal its moment, then measure.
	waitCond(t, "the pool to fill", 15*time.Second, func() bool { return len(p.ready) == cap(p.ready) })
	time.Sleep(time.Second)
	before := rendererCPU(p)
	time.Sleep(2 * time.Second)
	if used := rendererCPU(p) - before; used > 500*time.Millisecond {
		t.Errorf("the renderers used %v of CPU in 2 s after the answer: the busy page is still running", used)
	}
}
