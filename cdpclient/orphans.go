package cdpclient

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// KillOrphans kills the Chrome processes that a previous run of the service left running under
// dir (the Config.Dir of that run): every process whose --user-data-dir lies below dir, with its
// process group. It returns how many groups or processes it signalled.
//
// Chrome dies with the service that started it (Pdeathsig), and Close kills its group. Neither
// helps when browser.path is a wrapper script that runs Chrome as its child instead of exec'ing
// it (Debian's /usr/bin/chromium-headless-shell does): a killed service then takes only the script
// with it. The service calls KillOrphans at start, before its first Launch, so a restart never
// runs beside what the killed run left.
func KillOrphans(dir string) int {
	root, err := filepath.Abs(dir)
	if err != nil {
		return 0
	}
	root = filepath.Clean(root) + string(filepath.Separator)
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	self, own := os.Getpid(), syscall.Getpgrp()
	groups := map[int]bool{}
	n := 0
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		udd, ok := userDataDir(pid)
		if !ok || !strings.HasPrefix(udd+string(filepath.Separator), root) {
			continue
		}
		pgid, err := syscall.Getpgid(pid)
		switch {
		case err != nil:
			continue
		case pgid == own || pgid <= 1:
			// Never our own group (a Chrome we started in it would be a bug elsewhere): the
			// process alone.
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				n++
			}
		case !groups[pgid]:
			groups[pgid] = true
			if syscall.Kill(-pgid, syscall.SIGKILL) == nil {
				n++
			}
		}
	}
	return n
}

// userDataDir returns the absolute --user-data-dir of process pid, a relative one resolved
// against the process's working directory.
func userDataDir(pid int) (string, bool) {
	proc := filepath.Join("/proc", strconv.Itoa(pid))
	cmdline, err := os.ReadFile(filepath.Join(proc, "cmdline"))
	if err != nil {
		return "", false
	}
	const flag = "--user-data-dir="
	for _, arg := range bytes.Split(cmdline, []byte{0}) {
		v, ok := bytes.CutPrefix(arg, []byte(flag))
		if !ok || len(v) == 0 {
			continue
		}
		p := string(v)
		if !filepath.IsAbs(p) {
			cwd, err := os.Readlink(filepath.Join(proc, "cwd"))
			if err != nil {
				return "", false
			}
			p = filepath.Join(cwd, p)
		}
		return filepath.Clean(p), true
	}
	return "", false
}

var warnedWrappers sync.Map // browser paths wrapperWithoutExec has looked at

// wrapperWithoutExec reports whether path is a shell script that never execs: it then runs
// Chrome as its child, out of reach of Pdeathsig, which kills only the script when the service
// dies. Debian's /usr/bin/chromium execs; /usr/bin/chromium-headless-shell does not (use
// /usr/lib/chromium/chromium-headless-shell).
func wrapperWithoutExec(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 64<<10)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	if !bytes.HasPrefix(head, []byte("#!")) {
		return false
	}
	for _, line := range bytes.Split(head, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if bytes.HasPrefix(line, []byte("exec ")) || bytes.Contains(line, []byte(" exec ")) {
			return false
		}
	}
	return true
}
