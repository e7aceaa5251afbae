package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shotd/shotd/config"
	"github.com/shotd/shotd/internal/testkit"
	shotdsvc "github.com/shotd/shotd/service"
)

// TestInstall runs `make install` into a temporary DESTDIR, checks the unit (with
// systemd-analyze verify where it exists), then does what systemd would: it runs the unit's
// ExecStart line, with the unit's environment and working directory, against the installed
// config, every absolute path moved into DESTDIR. The service must tell the notify socket it is
// ready, answer /healthz and /readyz, keep the first-start secrets out of its output, and stop
// cleanly on SIGTERM.
func TestInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and installs the binary and runs Chrome")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// A short root (not t.TempDir): Chrome's socket paths below TMPDIR must stay under 108 bytes.
	root, err := os.MkdirTemp("", "shotd-in-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(root); err != nil {
			t.Errorf("remove %s: %v", root, err)
		}
	})
	dest := filepath.Join(root, "d")
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	mk := exec.CommandContext(ctx, "make", "--no-print-directory", "-C", repo, "install", "DESTDIR="+dest, "BIN="+filepath.Join(root, "shotd"))
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}

	unitPath := filepath.Join(dest, "usr/local/lib/systemd/system/shotd.service")
	unit := readUnit(t, unitPath)
	for key, want := range map[string]string{
		"Type": "notify", "Restart": "on-failure", "DynamicUser": "yes", "StateDirectory": "shotd",
		"ConfigurationDirectory": "shotd", "ExecStart": "/usr/local/bin/shotd serve --config /etc/shotd/shotd.toml",
		"TimeoutStopSec": shotdsvc.StopBudget(config.Default()).String(),
	} {
		got := unit[key]
		if key == "TimeoutStopSec" {
			d, err := time.ParseDuration(strings.TrimSuffix(got[0], "s") + "s")
			if err != nil {
				t.Fatalf("TimeoutStopSec %q: %v", got, err)
			}
			got = []string{d.String()}
		}
		if len(got) != 1 || got[0] != want {
			t.Errorf("unit %s = %q, want %q", key, got, want)
		}
	}
	// Every installed path exists in DESTDIR.
	for _, p := range []string{"usr/local/bin/shotd", "etc/shotd/shotd.toml", "usr/local/share/doc/shotd/LICENSE",
		"usr/local/share/doc/shotd/README.md", "usr/local/share/doc/shotd/THIRD_PARTY_NOTICES.md",
		"usr/local/share/doc/shotd/docs/operations.md", "usr/local/share/doc/shotd/docs/dashboard.png"} {
		if _, err := os.Stat(filepath.Join(dest, p)); err != nil {
			t.Error(err)
		}
	}
	inDest := func(p string) string { return filepath.Join(dest, p) }
	// The config may hold the admin token and the S3 secret: no world-readable copy.
	if fi, err := os.Stat(inDest("/etc/shotd/shotd.toml")); err != nil {
		t.Error(err)
	} else if fi.Mode().Perm() != 0o640 {
		t.Errorf("installed config has mode %v, want 0640", fi.Mode().Perm())
	}

	t.Run("systemd-analyze verify", func(t *testing.T) {
		sa, err := exec.LookPath("systemd-analyze")
		if err != nil {
			t.Skip("no systemd-analyze (Debian package systemd)")
		}
		// verify checks that ExecStart's binary exists: point it at the installed one.
		b, err := os.ReadFile(unitPath)
		if err != nil {
			t.Fatal(err)
		}
		checked := filepath.Join(root, "shotd.service")
		text := strings.ReplaceAll(string(b), "ExecStart=/usr/local/bin/shotd", "ExecStart="+inDest("/usr/local/bin/shotd"))
		if err := os.WriteFile(checked, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.CommandContext(ctx, sa, "verify", checked).CombinedOutput()
		// verify exits 0 on unknown keys and only prints them: any output is a finding.
		if err != nil || len(strings.TrimSpace(string(out))) > 0 {
			t.Errorf("systemd-analyze verify: %v\n%s", err, out)
		}
	})

	// What StateDirectory= would create, and the installed config pointing there.
	cfgPath := inDest("/etc/shotd/shotd.toml")
	cfgText, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cfgText), `data_dir     = "/var/lib/shotd"`) {
		t.Fatalf("installed config does not put data_dir in /var/lib/shotd:\n%s", cfgText)
	}
	if err := os.WriteFile(cfgPath, []byte(strings.ReplaceAll(string(cfgText), `"/var/lib/shotd"`, `"`+inDest("/var/lib/shotd")+`"`)), 0o644); err != nil {
		t.Fatal(err)
	}
	dataDir := inDest("/var/lib/shotd")
	tmpDir := filepath.Join(root, "tmp") // PrivateTmp=
	for _, d := range []string{dataDir, tmpDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	notifyPath := filepath.Join(root, "notify")
	notify, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: notifyPath, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer notify.Close()

	argv := strings.Fields(unit["ExecStart"][0])
	for i, a := range argv {
		if strings.HasPrefix(a, "/") {
			argv[i] = inDest(a)
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = inDest(unit["WorkingDirectory"][0])
	for _, e := range unit["Environment"] {
		name, value, _ := strings.Cut(e, "=")
		if strings.HasPrefix(value, "/") {
			value = inDest(value)
		}
		cmd.Env = append(cmd.Env, name+"="+value)
	}
	// Free ports instead of the fixed ones, and one light browser: the environment overrides the
	// file, as an Environment= line in a drop-in would.
	cmd.Env = append(cmd.Env, "NOTIFY_SOCKET="+notifyPath, "SHOTD_LISTEN=127.0.0.1:0", "SHOTD_ADMIN_LISTEN=127.0.0.1:0",
		"SHOTD_BROWSER_POOL_SIZE=1", "SHOTD_BROWSER_PREWARM=1", "SHOTD_NETWORK_ALLOW_PRIVATE=127.0.0.1/32")
	svc := startServiceCmd(ctx, t, cmd, tmpDir, "installed")

	if got := readNotify(t, notify); got != "READY=1\nSTATUS=serving" {
		t.Errorf("notify socket got %q, want READY=1", got)
	}
	// First-start secrets: in a 0600 file in data_dir, not in the output (which would be the journal).
	if svc.secretKey == "" {
		t.Errorf("no key pair in the first start's credentials file; stdout:\n%s", svc.stdout())
	} else if out := svc.stdout() + svc.logTail(); strings.Contains(out, svc.secretKey) {
		t.Errorf("the secret key reached the output:\n%s", out)
	}
	if fi, err := os.Stat(filepath.Join(dataDir, shotdsvc.CredentialsFile)); err != nil {
		t.Error(err)
	} else if fi.Mode().Perm() != 0o600 {
		t.Errorf("credentials file mode %v, want 0600", fi.Mode().Perm())
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := httpClient.Get(svc.base + path)
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]string
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != 200 || err != nil {
			t.Errorf("GET %s: %d, %v", path, resp.StatusCode, err)
		}
		// /readyz names the browser it found at start, as the start's log line does.
		if path == "/readyz" && !strings.Contains(body["browser"], "Chrom") {
			t.Errorf("/readyz browser = %q, want a Chrome or Chromium version", body["browser"])
		}
	}

	// SIGHUP while a render is under way: the plan changes, the render is not dropped.
	fx := testkit.StartPages(t, 3*time.Second)
	cl := &client{t: t, ctx: ctx, key: svc.accessKey}
	rendered := make(chan int, 1)
	go func() {
		var res map[string]any
		rendered <- cl.do("GET", svc.base+"/api/v1/screenshot?response_type=json&url="+url.QueryEscape(fx.URL("/slow")), nil, &res)
	}()
	for fx.Slow() == 0 {
		select {
		case code := <-rendered:
			t.Fatalf("render ended (%d) before the page was served", code)
		case <-time.After(20 * time.Millisecond):
		}
	}
	installed, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(installed), "requests_per_minute        = 60", "requests_per_minute        = 61", 1)
	if changed == string(installed) {
		t.Fatal("the installed config has no plans.default requests_per_minute = 60 to change")
	}
	if err := os.WriteFile(cfgPath, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := svc.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if got := readNotify(t, notify); got != "RELOADING=1\nSTATUS=reloading" {
		t.Errorf("notify socket got %q at SIGHUP, want RELOADING=1", got)
	}
	if got := readNotify(t, notify); got != "READY=1\nSTATUS=serving" {
		t.Errorf("notify socket got %q after the reload, want READY=1", got)
	}
	if code := <-rendered; code != 200 {
		t.Errorf("the render under way at SIGHUP answered %d", code)
	}
	var usage struct {
		RequestsPerMinute int `json:"requests_per_minute"`
	}
	if code := cl.do("GET", svc.base+"/api/v1/usage", nil, &usage); code != 200 || usage.RequestsPerMinute != 61 {
		t.Errorf("usage after the reload: %d, requests_per_minute %d; want 61", code, usage.RequestsPerMinute)
	}

	svc.stop(t, shotdsvc.StopBudget(config.Default()))
	if got := readNotify(t, notify); got != "STOPPING=1" {
		t.Errorf("notify socket got %q at stop, want STOPPING=1", got)
	}
	waitNoProcesses(t, root, 10*time.Second, "after the installed service stopped")
}

// readUnit reads a unit file as key -> values (in order), ignoring sections and comments.
func readUnit(t *testing.T, path string) map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '[' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s: line %q has no =", path, line)
		}
		out[k] = append(out[k], v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// readNotify returns the next datagram on the notify socket; a service that never sends one
// fails the test after a minute instead of hanging it.
func readNotify(t *testing.T, c *net.UnixConn) string {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(time.Minute))
	buf := make([]byte, 4096)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatalf("notify socket: %v", err)
	}
	return string(buf[:n])
}
