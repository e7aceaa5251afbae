package cdpclient

// Which browser binary runs, and the warnings about one that works worse.

import (
	"os/exec"
	"strings"

	"github.com/shotd/shotd"
)

// HeadlessShell is Debian's chromium-headless-shell binary (package chromium-headless-shell):
// the same Chromium without the browser's windows and UI, so a new tab costs about half the CPU
// and a render about two thirds. The default browser when installed. Its /usr/bin wrapper
// script runs it as a child instead of exec'ing it, so the binary itself is named here.
const HeadlessShell = "/usr/lib/chromium/chromium-headless-shell"

// browserNames are tried on PATH, in order, when Config.Path is empty and HeadlessShell is
// missing.
var browserNames = []string{"chromium", "chromium-browser", "google-chrome"}

// FindBrowser returns path when it is set and executable (a bare name is looked up on PATH), else
// HeadlessShell, else the first of chromium, chromium-browser, google-chrome found on PATH.
func FindBrowser(path string) (string, error) {
	if path != "" {
		p, err := exec.LookPath(path)
		if err != nil {
			return "", shotd.Wrap(shotd.CodeRendererUnavailable, err, "the configured browser is not an executable file")
		}
		return p, nil
	}
	if p, err := exec.LookPath(HeadlessShell); err == nil {
		return p, nil
	}
	for _, name := range browserNames {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", shotd.Errorf(shotd.CodeRendererUnavailable, "no browser found (tried %s, then %s on PATH)", HeadlessShell, strings.Join(browserNames, ", "))
}

// warnAboutBrowser warns, once per path, about a browser that works worse than the default:
// full Chromium in place of the missing headless shell, or a script that does not exec Chrome.
// Read once per path: the warning once, and no 64 KiB read at every relaunch.
func warnAboutBrowser(path string, cfg Config) {
	if _, seen := warnedWrappers.LoadOrStore(path, true); seen {
		return
	}
	if cfg.Path == "" && path != HeadlessShell {
		cfg.Log.Warn().Str("browser", path).Msg("chromium-headless-shell is not installed (" + HeadlessShell + "): falling back to full Chromium, which renders slower and costs more CPU per tab")
	}
	if wrapperWithoutExec(path) {
		cfg.Log.Warn().Str("browser", path).Msg("the browser is a script that does not exec Chrome: Chrome outlives a killed service until its next start; point browser.path at the binary itself")
	}
}
