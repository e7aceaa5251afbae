package cdpclient

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sync"
	"time"

	"github.com/shotd/shotd/internal/proc"
)

// Headless Chrome names itself "HeadlessChrome/<version>" in its User-Agent header and in
// navigator.userAgent, which many sites answer with a bot wall or a degraded page. A render
// without user_agent (or a device preset's) should get what a visitor on desktop Chrome gets, so
// every Chrome is launched with --user-agent set to the desktop Chrome UA of its own major version,
// in Chrome's reduced form (MAJOR.0.0.0). The client-hint brands are "Chromium" already.

var (
	versionOf  = regexp.MustCompile(`\b(\d+)\.\d+\.\d+\.\d+\b`)
	desktopUAs sync.Map // browser path -> desktop UA ("" when the version could not be read)
)

// desktopUserAgent returns the desktop User-Agent for the browser at path, from its --version
// (run within wait, in a process group of its own that is killed with it, and remembered per
// path once read), or "" when that cannot be read.
func desktopUserAgent(path string, wait time.Duration) string {
	if ua, ok := desktopUAs.Load(path); ok {
		return ua.(string)
	}
	var out bytes.Buffer
	cmd := exec.Command(path, "--version")
	cmd.Env = chromeEnv(os.Environ())
	cmd.Stdout = &out
	cmd.WaitDelay = time.Second // a child that kept stdout open must not hold the reaping
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	c, err := proc.StartChild(ctx, cmd)
	if err != nil {
		return ""
	}
	<-c.Done()
	ua := desktopUAFor(out.String())
	if ua != "" { // a failed read is tried again at the next launch
		desktopUAs.Store(path, ua)
	}
	return ua
}

// desktopUAFor builds the UA from a --version line ("Chromium 156.0.8078.79 built on Debian").
func desktopUAFor(version string) string {
	m := versionOf.FindStringSubmatch(version)
	if m == nil {
		return ""
	}
	return fmt.Sprintf("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/%s.0.0.0 Safari/537.36", m[1])
}
