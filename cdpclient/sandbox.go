package cdpclient

// Whether Chrome can run in its sandbox.

import (
	"os"
	"strconv"
	"strings"
	"sync"
)

// Sandbox settings (Config.Sandbox, browser.sandbox).
const (
	SandboxAuto = "auto"
	SandboxOn   = "on"
	SandboxOff  = "off"
)

// warnedSandbox: the reason the sandbox is off is logged once per reason.
var warnedSandbox sync.Map

// sandboxed decides whether Chrome runs in its sandbox, and if not, why.
func sandboxed(setting string, euid int) (bool, string) {
	switch setting {
	case SandboxOn:
		return true, ""
	case SandboxOff:
		return false, "browser.sandbox is off"
	}
	return Sandboxable(euid, readInt("/proc/sys/user/max_user_namespaces"), readInt("/proc/sys/kernel/unprivileged_userns_clone"))
}

// Sandboxable tells whether Chrome's sandbox can work for a service of effective user euid:
// Chrome refuses it to root, and without its setuid helper (Debian ships none) it needs
// unprivileged user namespaces: max_user_namespaces above 0 and, on kernels that have the
// switch, unprivileged_userns_clone not 0 (-1: no such file).
func Sandboxable(euid, maxUserNS, unprivClone int) (bool, string) {
	switch {
	case euid == 0:
		return false, "the service runs as root, and Chrome's sandbox refuses root: run shotd as a user of its own"
	case maxUserNS == 0:
		return false, "user namespaces are disabled (user.max_user_namespaces = 0)"
	case unprivClone == 0:
		return false, "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone = 0)"
	}
	return true, ""
}

// readInt reads a number from a /proc file; -1 when it cannot.
func readInt(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return -1
	}
	return n
}
