package cdpclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/internal/testenv"
	"github.com/shotd/shotd/internal/testkit"
)

// launchOwn starts a Process of the test's own, for tests that kill or close it.
func launchOwn(t *testing.T, prewarm int) *Process {
	t.Helper()
	return launchIsolated(t, prewarm, testenv.Isolation())
}

// launchIsolated is launchOwn with the isolation given.
func launchIsolated(t testing.TB, prewarm int, isolation string) *Process {
	t.Helper()
	return launchConfig(t, Config{Path: testenv.Browser(), Isolation: isolation, Prewarm: prewarm,
		Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)})
}

// launchIsolatedGuarded is launchIsolated behind an egress guard that allows loopback, as the
// service runs Chrome: every tab's browser context then has an egress route of its own.
func launchIsolatedGuarded(t testing.TB, prewarm int, isolation string) *Process {
	t.Helper()
	guard, flags := guardFor(t, "127.0.0.1/32", "::1/128")
	return launchConfig(t, Config{Path: testenv.Browser(), Isolation: isolation, Prewarm: prewarm, Guard: guard,
		ExtraFlags: flags, Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)})
}

// quiet waits until the shared Process is idle (pre-warmed tabs ready, disposals done) and
// returns the goroutine count then, the baseline of a leak check.
func quiet(t *testing.T) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	last, since := -1, time.Now()
	for time.Now().Before(deadline) {
		n := runtime.NumGoroutine()
		if n != last || len(shared.ready) < cap(shared.ready) {
			last, since = n, time.Now()
		} else if time.Since(since) > 300*time.Millisecond {
			return n
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the shared browser did not become idle")
	return 0
}

func closed(c <-chan struct{}, within time.Duration) bool {
	if isDone(c) {
		return true
	}
	select {
	case <-c:
		return true
	case <-time.After(within):
		return false
	}
}

// TestKillMidRender: SIGKILL of the whole group while a render waits answers renderer_unavailable
// at once, and both crash signals fire.
func TestKillMidRender(t *testing.T) {
	arrived := make(chan struct{}, 1)
	mux := http.NewServeMux()
	srv, release := server(t, mux)
	goroutines := quiet(t)
	p := launchOwn(t, 1)

	mux.HandleFunc("/", htmlPage(`<p>waiting</p><img src="/hang">`))
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		select {
		case arrived <- struct{}{}:
		default:
		}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})

	res := make(chan error, 1)
	go func() {
		o := opts(srv.URL)
		o.Timeout = 30 * time.Second
		_, err := doRender(t, p, o)
		res <- err
	}()
	select {
	case <-arrived:
	case <-time.After(15 * time.Second):
		t.Fatal("the page never asked for its image")
	}
	killedAt := time.Now()
	if err := syscall.Kill(-p.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-res:
	case <-time.After(5 * time.Second):
		t.Fatal("render did not return within 5s of the kill")
	}
	took := time.Since(killedAt)
	e := wantCode(t, err, shotd.CodeRendererUnavailable)
	if !shotd.Info(e.Code).Retryable || !strings.Contains(e.Message, "browser stopped") {
		t.Errorf("error %v: want a retryable 'browser stopped'", e)
	}
	if took > 2*time.Second {
		t.Errorf("render returned %v after the kill", took)
	}
	if !closed(p.Exited(), 5*time.Second) {
		t.Error("Exited not closed")
	}
	if !closed(p.Disconnected(), 5*time.Second) {
		t.Error("Disconnected not closed")
	}
	// A render on the dead process fails at once too.
	if _, err := doRender(t, p, opts(srv.URL)); shotd.CodeOf(err) != shotd.CodeRendererUnavailable {
		t.Errorf("render after the crash: %v", err)
	}
	if err := p.Close(context.Background()); err != nil {
		t.Errorf("close after crash: %v", err)
	}
	if err := checkGone(p); err != nil {
		t.Error(err)
	}
	srv.CloseClientConnections()
	if err := testkit.WaitGoroutines(goroutines, 5*time.Second); err != nil {
		t.Error(err)
	}
}

// TestClose: Close stops Chrome and its helpers, removes the profile and is idempotent.
func TestClose(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/", htmlPage("<p>hello</p>"))
	srv, _ := server(t, mux)
	goroutines := quiet(t)
	p := launchOwn(t, 2)
	mustRender(t, p, opts(srv.URL))

	members := testkit.GroupMembers(p.PID())
	if len(members) < 2 {
		t.Fatalf("group %d has members %v, want Chrome and its helpers", p.PID(), members)
	}
	if _, err := os.Stat(p.dir); err != nil {
		t.Fatalf("user-data dir: %v", err)
	}
	start := time.Now()
	if err := p.Close(context.Background()); err != nil {
		t.Fatalf("close: %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("close took %v", took)
	}
	if err := p.Close(context.Background()); err != nil {
		t.Errorf("second close: %v", err)
	}
	if !closed(p.Exited(), 0) || !closed(p.Disconnected(), 0) {
		t.Error("Exited or Disconnected still open after Close")
	}
	if err := checkGone(p); err != nil {
		t.Error(err)
	}
	if ents, _ := os.ReadDir(p.cfg.Dir); len(ents) != 0 {
		t.Errorf("left in Config.Dir: %v", ents)
	}
	if _, err := doRender(t, p, opts(srv.URL)); shotd.CodeOf(err) != shotd.CodeRendererUnavailable {
		t.Errorf("render after close: %v", err)
	}
	srv.CloseClientConnections()
	if err := testkit.WaitGoroutines(goroutines, 5*time.Second); err != nil {
		t.Error(err)
	}
}

// TestLaunchFailure: a launch that fails leaves no process, no directory and no goroutine.
func TestLaunchFailure(t *testing.T) {
	scripts := t.TempDir()
	write := func(name, body string) string {
		path := filepath.Join(scripts, name)
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
		return path
	}
	tests := []struct {
		name    string
		path    string
		timeout time.Duration
		pids    string // file the script writes its pids to
	}{
		{name: "no such binary", path: filepath.Join(scripts, "missing")},
		{name: "not executable", path: func() string {
			p := filepath.Join(scripts, "plain")
			os.WriteFile(p, []byte("x"), 0o644)
			return p
		}()},
		{name: "exits at once", path: write("exits", "echo boom >&2\nexit 3\n")},
		{name: "never ready", path: write("hangs", fmt.Sprintf(
			"echo $$ > %[1]s/pids\nsleep 60 &\necho $! >> %[1]s/pids\nwait\n", scripts)),
			timeout: 700 * time.Millisecond, pids: filepath.Join(scripts, "pids")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			goroutines := quiet(t)
			start := time.Now()
			p, err := Launch(context.Background(), Config{Path: tt.path, StartTimeout: tt.timeout, Log: zerolog.Nop()})
			if p != nil || err == nil {
				t.Fatalf("launch = %v, %v; want an error", p, err)
			}
			var e *shotd.Error
			if !errors.As(err, &e) || e.Code != shotd.CodeRendererUnavailable {
				t.Errorf("error %v, want renderer_unavailable", err)
			}
			if took := time.Since(start); took > tt.timeout+3*time.Second {
				t.Errorf("failed after %v", took)
			}
			if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
				t.Errorf("left in TMPDIR: %v", ents)
			}
			if tt.pids != "" {
				b, err := os.ReadFile(tt.pids)
				if err != nil {
					t.Fatal(err)
				}
				// Killed at once, gone within moments (a loaded host may still be running
				// the exit of a process just signalled).
				for _, f := range strings.Fields(string(b)) {
					pid, _ := strconv.Atoi(f)
					st, ok := procState(pid)
					for end := time.Now().Add(3 * time.Second); ok && st != 'Z' && time.Now().Before(end); st, ok = procState(pid) {
						time.Sleep(20 * time.Millisecond)
					}
					if ok && st != 'Z' {
						t.Errorf("pid %d of the failed launch still alive (state %c)", pid, st)
					}
				}
			}
			if err := testkit.WaitGoroutines(goroutines, 3*time.Second); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestFindBrowser(t *testing.T) {
	tests := []struct {
		name    string
		path    string
		wantErr bool
	}{
		{"default", "", false},
		{"absolute", "/bin/sh", false},
		{"name on PATH", "sh", false},
		{"missing", "/nonexistent/chrome", true},
		{"directory", "/tmp", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FindBrowser(tt.path)
			if (err != nil) != tt.wantErr {
				t.Fatalf("FindBrowser(%q) = %q, %v", tt.path, got, err)
			}
			if err != nil && shotd.CodeOf(err) != shotd.CodeRendererUnavailable {
				t.Errorf("code %s", shotd.CodeOf(err))
			}
			if err == nil && !filepath.IsAbs(got) {
				t.Errorf("path %q is not absolute", got)
			}
		})
	}
}

// TestTmpDir: Chrome's TMPDIR, where it makes its sockets and the dirs a SIGKILL leaves behind,
// is in Config.Dir when the socket paths fit there, else in the system temp dir; Close removes it
// either way.
func TestTmpDir(t *testing.T) {
	tests := []struct {
		name   string
		dir    func(t *testing.T) string
		inDir  bool
		prefix string
	}{
		{name: "in Dir", dir: func(t *testing.T) string { return t.TempDir() }, inDir: true, prefix: "t-"},
		{name: "Dir too long for sockets", dir: func(t *testing.T) string {
			d := filepath.Join(t.TempDir(), strings.Repeat("d", maxTmpDir))
			if err := os.Mkdir(d, 0o700); err != nil {
				t.Fatal(err)
			}
			return d
		}, prefix: "shotd-tmp-"},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", htmlPage("<p>hello</p>"))
	srv, _ := server(t, mux)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tt.dir(t)
			// The system temp dir of the test: short, as t.TempDir's names are too long for
			// Chrome's sockets.
			sysTmp, err := os.MkdirTemp("", "shotd-test-")
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(sysTmp)
			t.Setenv("TMPDIR", sysTmp)
			p, err := Launch(context.Background(), Config{Path: testenv.Browser(), Prewarm: -1, Dir: dir, Log: zerolog.Nop()})
			if err != nil {
				t.Fatalf("launch: %v", err)
			}
			defer p.Close(context.Background())
			env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.PID()))
			if err != nil {
				t.Fatal(err)
			}
			var tmp string
			for _, kv := range strings.Split(string(env), "\x00") {
				if v, ok := strings.CutPrefix(kv, "TMPDIR="); ok {
					tmp = v
				}
			}
			parent := sysTmp
			if tt.inDir {
				parent = dir
			}
			if filepath.Dir(tmp) != parent || !strings.HasPrefix(filepath.Base(tmp), tt.prefix) {
				t.Errorf("Chrome's TMPDIR is %q, want %s/%s...", tmp, parent, tt.prefix)
			}
			if len(tmp) > maxTmpDir {
				t.Errorf("TMPDIR %q is %d bytes long, more than %d", tmp, len(tmp), maxTmpDir)
			}
			mustRender(t, p, opts(srv.URL))
			if err := p.Close(context.Background()); err != nil {
				t.Fatalf("close: %v", err)
			}
			for _, d := range []string{dir, sysTmp} {
				if ents, _ := os.ReadDir(d); len(ents) != 0 {
					t.Errorf("left in %s: %v", d, ents)
				}
			}
		})
	}
}
