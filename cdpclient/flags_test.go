package cdpclient

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/shotd/shotd/internal/testkit"
)

func TestMergeFeatures(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{"none", []string{"--headless", "--a=b"}, []string{"--headless", "--a=b"}},
		{"one", []string{"--disable-features=A,B", "--x"}, []string{"--disable-features=A,B", "--x"}},
		{"repeated disable", []string{"--disable-features=A,B", "--x", "--disable-features=C"},
			[]string{"--disable-features=A,B,C", "--x"}},
		{"enable and disable apart", []string{"--enable-features=E", "--disable-features=A", "--enable-features=F", "--disable-features=B"},
			[]string{"--enable-features=E,F", "--disable-features=A,B"}},
		{"empty lists", []string{"--disable-features=", "--disable-features=A", "--disable-features="},
			[]string{"--disable-features=A"}},
		{"other flags with the prefix", []string{"--disable-features-x=1", "--disable-features=A"},
			[]string{"--disable-features-x=1", "--disable-features=A"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mergeFeatures(tt.in); !slices.Equal(got, tt.want) {
				t.Errorf("mergeFeatures(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestLaunchFlagsFeatures: ExtraFlags' features add to ours rather than replace them.
func TestLaunchFlagsFeatures(t *testing.T) {
	flags := mergeFeatures(append(launchFlags("/x"), "--disable-features=Foo"))
	n := 0
	for _, f := range flags {
		if strings.HasPrefix(f, "--disable-features=") {
			n++
			for _, want := range []string{"Translate", "SpareRendererForSitePerProcess", "Foo"} {
				if !slices.Contains(strings.Split(f[19:], ","), want) {
					t.Errorf("%s lacks %s", f, want)
				}
			}
		}
	}
	if n != 1 {
		t.Errorf("%d --disable-features flags, want 1", n)
	}
}

func TestDesktopUAFor(t *testing.T) {
	want := "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36"
	for _, v := range []string{"Chromium 156.0.8078.79 built on Debian GNU/Linux 12 (bookworm)\n", "Chromium 156.0.8078.79"} {
		if got := desktopUAFor(v); got != want {
			t.Errorf("desktopUAFor(%q) = %q", v, got)
		}
	}
	if got := desktopUAFor("chromium: not found"); got != "" {
		t.Errorf("no version: %q", got)
	}
}

// TestChromeEnv: Chrome's environment holds the allow-listed variables alone: no SHOTD_*
// variable, no credential of systemd or a cloud. The running Chrome's own environ is checked too.
func TestChromeEnv(t *testing.T) {
	got := chromeEnv([]string{"PATH=/usr/bin", "SHOTD_ADMIN_TOKEN=secret", "SHOTD_X=1", "AWS_SECRET_ACCESS_KEY=k", "HOME=/root",
		"SHOTDX=1", "CREDENTIALS_DIRECTORY=/run/credentials/shotd.service", "GOOGLE_APPLICATION_CREDENTIALS=/k.json", "LANG=C.UTF-8"})
	want := []string{"PATH=/usr/bin", "HOME=/root", "LANG=C.UTF-8"}
	if !slices.Equal(got, want) {
		t.Errorf("chromeEnv = %q, want %q", got, want)
	}
	t.Setenv("SHOTD_ADMIN_TOKEN", "must-not-reach-chrome")
	p := launchOwn(t, -1)
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.PID()))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(environ, []byte("SHOTD_")) {
		t.Error("the running Chrome's environment has a SHOTD_ variable")
	}
}

func TestSandboxable(t *testing.T) {
	tests := []struct {
		name                     string
		euid, maxNS, unprivClone int
		want                     bool
	}{
		{"root", 0, 1000, 1, false},
		{"user with namespaces", 1000, 1000, -1, true},
		{"namespaces off", 1000, 0, -1, false},
		{"unprivileged clone off", 1000, 1000, 0, false},
		{"unprivileged clone on", 1000, 1000, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := Sandboxable(tt.euid, tt.maxNS, tt.unprivClone)
			if got != tt.want || (!got && why == "") {
				t.Errorf("Sandboxable = %v %q, want %v with a reason when false", got, why, tt.want)
			}
		})
	}
	if on, _ := sandboxed(SandboxOff, os.Geteuid()); on {
		t.Error("sandbox off gave a sandbox")
	}
	if on, _ := sandboxed(SandboxOn, os.Geteuid()); !on {
		t.Error("sandbox on gave none")
	}
}

// TestDevToolsPipe: Chrome speaks DevTools over its pipe alone: its command line asks for the
// pipe and for no port, and no process of its group listens on TCP.
func TestDevToolsPipe(t *testing.T) {
	p := launchOwn(t, -1)
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.PID()))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(cmdline, []byte("--remote-debugging-pipe")) || bytes.Contains(cmdline, []byte("--remote-debugging-port")) {
		t.Errorf("command line %q", bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
	}
	// Listening sockets of the group, by the inodes of its fds and /proc/net/tcp{,6}.
	inodes := map[string]bool{}
	for _, pid := range testkit.GroupMembers(p.PID()) {
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		for _, fd := range fds {
			if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && strings.HasPrefix(l, "socket:[") {
				inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
			}
		}
	}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, _ := os.ReadFile(f)
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fields := strings.Fields(line)
			if len(fields) > 9 && fields[3] == "0A" && inodes[fields[9]] { // 0A: LISTEN
				t.Errorf("chrome listens on TCP: %s", line)
			}
		}
	}
}

// TestShmRoomy: Chrome keeps its shared memory in /dev/shm only where that is a tmpfs with room.
func TestShmRoomy(t *testing.T) {
	if shmRoomy(filepath.Join(t.TempDir(), "missing")) {
		t.Error("a missing dir is taken for a roomy /dev/shm")
	}
	var st unix.Statfs_t
	if err := unix.Statfs(".", &st); err == nil && st.Type != unix.TMPFS_MAGIC && shmRoomy(".") {
		t.Error("a dir that is not on a tmpfs is taken for a roomy /dev/shm")
	}
	// Chrome's flags follow the check: a dir that is not a tmpfs (the test's, where it is on
	// disk), and this host's /dev/shm where it is a roomy tmpfs.
	defer func(d string) { devShm = d }(devShm)
	dirs := map[string]bool{} // dir: want the flag
	if err := unix.Statfs(t.TempDir(), &st); err == nil && st.Type != unix.TMPFS_MAGIC {
		dirs[t.TempDir()] = true
	}
	if shmRoomy("/dev/shm") {
		dirs["/dev/shm"] = false
	}
	if len(dirs) == 0 {
		t.Skip("neither a disk dir nor a roomy /dev/shm on this host")
	}
	for dir, want := range dirs {
		devShm = dir
		flags := chromeFlags("/bin/true", t.TempDir(), Config{Log: zerolog.Nop()})
		if got := slices.Contains(flags, "--disable-dev-shm-usage"); got != want {
			t.Errorf("shared memory in %s: --disable-dev-shm-usage given: %v, want %v", dir, got, want)
		}
	}
}
