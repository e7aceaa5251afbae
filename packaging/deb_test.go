package packaging

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shotd/shotd/blocklist"
)

// TestDeb builds the package with `make deb`, checks its metadata and contents (and lintian's
// verdict where lintian is installed), unpacks it with dpkg into a scratch root (never this host's
// own dpkg database), runs the installed binary's version and config check, and runs the postinst
// against the scratch root with stub commands that record what it does.
func TestDeb(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and the package")
	}
	for _, tool := range []string{"dpkg-deb", "dpkg", "make"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s: the Debian package is built and tested on Debian only", tool)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	const version = "v9.8.7-3-gabcdef1"
	mk := exec.CommandContext(ctx, "make", "--no-print-directory", "-C", repo, "deb", "DEBDIR="+out, "VERSION="+version)
	if b, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make deb: %v\n%s", err, b)
	}
	debs, _ := filepath.Glob(filepath.Join(out, "*.deb"))
	if len(debs) != 1 {
		t.Fatalf("make deb wrote %v, want one .deb", debs)
	}
	deb := debs[0]
	run := func(name string, args ...string) string {
		t.Helper()
		b, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, b)
		}
		return string(b)
	}

	// Metadata.
	field := func(name string) string { return strings.TrimSpace(run("dpkg-deb", "-f", deb, name)) }
	if got := field("Package"); got != "shotd" {
		t.Errorf("Package %q", got)
	}
	if got := field("Version"); got != "9.8.7+3.gabcdef1" {
		t.Errorf("Version %q, want 9.8.7+3.gabcdef1 (from %s)", got, version)
	}
	if filepath.Base(deb) != "shotd_9.8.7+3.gabcdef1_"+field("Architecture")+".deb" {
		t.Errorf("file name %s", filepath.Base(deb))
	}
	depends := strings.Split(field("Depends"), ", ")
	for _, want := range []string{"chromium-headless-shell | chromium", "ffmpeg", "libheif-examples", "fonts-liberation", "fonts-noto-color-emoji",
		"fonts-noto-cjk", "webext-ublock-origin-chromium", "ca-certificates", "adduser (>= 3.134)"} {
		if !slices.Contains(depends, want) {
			t.Errorf("Depends %q lacks %q", depends, want)
		}
	}
	if got := strings.TrimSpace(run("dpkg-deb", "-I", deb, "conffiles")); got != "/etc/shotd/shotd.toml" {
		t.Errorf("conffiles %q, want /etc/shotd/shotd.toml", got)
	}

	// Contents: path -> mode as dpkg-deb -c lists it.
	contents := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(run("dpkg-deb", "-c", deb)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 6 {
			contents[strings.TrimPrefix(f[5], ".")] = f[0] + " " + f[1]
		}
	}
	for path, want := range map[string]string{
		"/usr/bin/shotd":                                         "-rwxr-xr-x root/root",
		"/usr/lib/systemd/system/shotd.service":                  "-rw-r--r-- root/root",
		"/etc/shotd/shotd.toml":                                  "-rw-r----- root/root",
		"/usr/share/shotd/autoconsent/autoconsent.standalone.js": "-rw-r--r-- root/root",
		"/usr/share/shotd/autoconsent/LICENSE":                   "-rw-r--r-- root/root",
		"/usr/share/doc/shotd/copyright":                         "-rw-r--r-- root/root",
		"/usr/share/doc/shotd/changelog.gz":                      "-rw-r--r-- root/root",
		"/usr/share/doc/shotd/README.md":                         "-rw-r--r-- root/root",
		"/usr/share/doc/shotd/docs/operations.md":                "-rw-r--r-- root/root",
	} {
		if got := contents[path]; got != want {
			t.Errorf("%s: %q, want %q", path, got, want)
		}
	}
	for path := range contents {
		if strings.HasPrefix(path, "/usr/local/") {
			t.Errorf("%s: a package installs nothing under /usr/local", path)
		}
	}

	t.Run("lintian", func(t *testing.T) {
		if _, err := exec.LookPath("lintian"); err != nil {
			t.Skip("no lintian (Debian package lintian)")
		}
		b, _ := exec.CommandContext(ctx, "lintian", "--no-tag-display-limit", deb).CombinedOutput() // exits 1 on errors
		for _, line := range strings.Split(string(b), "\n") {
			switch {
			case strings.HasPrefix(line, "E: "):
				t.Errorf("lintian: %s", line)
			case strings.HasPrefix(line, "W: "):
				t.Logf("lintian: %s", line)
			}
		}
	})

	// The scratch root: dpkg's database and the files land there. --unpack runs no maintainer
	// script (the package has no preinst); dpkg would run the postinst chrooted into the root,
	// which has no shell, so the postinst runs below with stubs instead.
	root := filepath.Join(t.TempDir(), "root")
	admin := filepath.Join(root, "var/lib/dpkg")
	for _, d := range []string{filepath.Join(admin, "info"), filepath.Join(admin, "updates"), filepath.Join(admin, "triggers")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"status", "available"} {
		if err := os.WriteFile(filepath.Join(admin, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run("dpkg", "--root="+root, "--admindir="+admin, "--force-depends", "--force-not-root", "--unpack", deb)
	if got := run("dpkg-query", "--admindir="+admin, "-W", "-f=${Status}|${Conffiles}", "shotd"); !strings.HasPrefix(got, "install ok unpacked|") ||
		!strings.Contains(got, "/etc/shotd/shotd.toml ") {
		t.Errorf("dpkg-query in the scratch root: %q, want unpacked with /etc/shotd/shotd.toml a conffile", got)
	}
	// A conffile is unpacked beside its place and moved there at configure, as here (a first
	// install: no file of the operator's to keep).
	cfgPath := filepath.Join(root, "etc/shotd/shotd.toml")
	st, err := os.Stat(cfgPath + ".dpkg-new")
	if err != nil || st.Mode().Perm() != 0o640 {
		t.Fatalf("unpacked config: %v, %v; want mode 0640", st, err)
	}
	if err := os.Rename(cfgPath+".dpkg-new", cfgPath); err != nil {
		t.Fatal(err)
	}
	unit, err := os.ReadFile(filepath.Join(root, "usr/lib/systemd/system/shotd.service"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\nExecStart=/usr/bin/shotd serve --config /etc/shotd/shotd.toml\n", "\nStateDirectory=shotd\n", "\nUser=shotd\n",
		"\nDocumentation=file:///usr/share/doc/shotd/README.md\n"} {
		if !strings.Contains(string(unit), want) {
			t.Errorf("installed unit lacks %q", strings.TrimSpace(want))
		}
	}
	cfg, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`data_dir     = "/var/lib/shotd"`, `autoconsent = "/usr/share/shotd/autoconsent/autoconsent.standalone.js"`} {
		if !strings.Contains(string(cfg), want) {
			t.Errorf("installed config lacks %q", want)
		}
	}
	// The autoconsent it carries is the script block_cookie_banners loads.
	if _, err := blocklist.LoadAutoconsent(filepath.Join(root, "usr/share/shotd/autoconsent/autoconsent.standalone.js")); err != nil {
		t.Errorf("packaged autoconsent: %v", err)
	}

	// The installed binary runs: its version, and config check of the installed config (the
	// browser, ffmpeg and filter lists its dependencies bring, as this host has them).
	bin := filepath.Join(root, "usr/bin/shotd")
	if got := run(bin, "version"); got != "shotd "+version+"\n" {
		t.Errorf("shotd version: %q", got)
	}
	if got := run(bin, "config", "check", cfgPath); !strings.Contains(got, ": ok (browser ") {
		t.Errorf("shotd config check: %q", got)
	}

	t.Run("postinst", func(t *testing.T) { testPostinst(t, ctx, filepath.Join(admin, "info", "shotd.postinst"), root) })
}

// testPostinst runs the unpacked postinst against root with every command it calls replaced by a
// stub that records its arguments (and nothing else on PATH), as on a booted systemd: first a
// fresh install, then an upgrade, where the user exists.
func testPostinst(t *testing.T, ctx context.Context, postinst, root string) {
	if err := os.MkdirAll(filepath.Join(root, "run/systemd/system"), 0o755); err != nil {
		t.Fatal(err)
	}
	stubs := t.TempDir()
	log := filepath.Join(t.TempDir(), "calls")
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	for _, name := range []string{"getent", "addgroup", "adduser", "install", "chgrp", "chmod", "systemctl", "deb-systemd-invoke"} {
		// getent finds the user and group only when SHOTD_USER_EXISTS is set.
		script := "#!" + sh + "\necho \"" + name + " $*\" >> " + log + "\n"
		if name == "getent" {
			script += "[ -n \"$SHOTD_USER_EXISTS\" ]\n"
		}
		if err := os.WriteFile(filepath.Join(stubs, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	configure := func(env []string, args ...string) []string {
		t.Helper()
		_ = os.Remove(log)
		cmd := exec.CommandContext(ctx, sh, append([]string{postinst, "configure"}, args...)...)
		cmd.Env = append([]string{"PATH=" + stubs, "DPKG_ROOT=" + root}, env...)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("postinst configure %v: %v\n%s", args, err, b)
		}
		b, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}

	calls := configure(nil)
	for _, want := range []string{
		"addgroup --system --quiet shotd",
		"adduser --system --quiet --ingroup shotd --home /var/lib/shotd --no-create-home --shell /usr/sbin/nologin --comment shotd screenshot service shotd",
		"install -d -m 0700 -o shotd -g shotd " + root + "/var/lib/shotd",
		"chgrp shotd " + root + "/etc/shotd/shotd.toml",
		"chmod 0640 " + root + "/etc/shotd/shotd.toml",
		"systemctl --system daemon-reload",
	} {
		if !slices.Contains(calls, want) {
			t.Errorf("first install: no %q in\n%s", want, strings.Join(calls, "\n"))
		}
	}
	for _, c := range calls {
		if strings.Contains(c, "restart") || strings.Contains(c, "start ") {
			t.Errorf("a first install starts the service: %q", c)
		}
	}

	calls = configure([]string{"SHOTD_USER_EXISTS=1"}, "9.8.6")
	for _, c := range calls {
		if strings.HasPrefix(c, "adduser") || strings.HasPrefix(c, "addgroup") {
			t.Errorf("an upgrade makes the user again: %q", c)
		}
	}
	for _, want := range []string{"systemctl --system daemon-reload", "deb-systemd-invoke try-restart shotd.service"} {
		if !slices.Contains(calls, want) {
			t.Errorf("upgrade: no %q in\n%s", want, strings.Join(calls, "\n"))
		}
	}
}
