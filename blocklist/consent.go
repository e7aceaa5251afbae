package blocklist

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// maxAutoconsentBytes bounds the file read at start; the standalone script is about 400 KB.
const maxAutoconsentBytes = 16 << 20

// LoadAutoconsent reads DuckDuckGo's autoconsent.standalone.js (MPL-2.0, installed by
// scripts/install-deps.sh from the npm package @duckduckgo/autoconsent; not shipped with shotd)
// and returns the start script that block_cookie_banners puts into every document, for
// Library.Consent. It fails when the file cannot be read or is not the standalone build (the
// ESM or CJS builds would throw in a page instead of running).
//
// The standalone script starts autoconsent in the page's main world with its own rules and
// settings; the returned script wraps it so that it:
//   - rejects: autoAction is optOut, which clicks a consent platform's "reject all" (or unticks
//     the purposes and saves) and never falls back to accepting. A dialog it cannot reject stays
//     for the element hiding of the cookie-banner list. A screenshot wants the dialog gone with
//     the least tracking: accepting would load the trackers and ad slots the capture then shows.
//   - keeps the heuristic detector of dialogs of no known platform at tier1: it may click a
//     "reject" or, on a notice that offers no choice, an "OK / got it" button, but not an
//     "accept" (the standalone ships tier2, which accepts).
//   - stays quiet: the standalone logs every step to the console; the logs are switched off
//     (its initialisation runs with console.log and console.warn muted, synchronously, before
//     any script of the page exists), leaving a few lines per detected dialog.
//
// Nothing of the page sees the settings change: autoconsent schedules its detection for when
// the page is idle, after this script has returned.
func LoadAutoconsent(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", path)
	}
	if st.Size() > maxAutoconsentBytes {
		return "", fmt.Errorf("%s is %d bytes, more than the %d an autoconsent script can be", path, st.Size(), maxAutoconsentBytes)
	}
	b := make([]byte, st.Size())
	if _, err := f.ReadAt(b, 0); err != nil {
		return "", err
	}
	src := string(b)
	if !strings.Contains(src, "window.autoconsentStandalone") || strings.Contains(src, "\nexport ") {
		return "", errors.New(path + " is not autoconsent's standalone build (dist/autoconsent.standalone.js)")
	}
	return autoconsentPrologue + src + autoconsentEpilogue, nil
}

// The wrapper of LoadAutoconsent. The standalone begins with its own "use strict", which inside
// the try block is a plain string: the wrapper's directive keeps it strict.
const (
	autoconsentPrologue = `(() => {
"use strict";
if (window.autoconsentStandalone) return;
const con = console, log = con.log, warn = con.warn;
con.log = con.warn = () => {};
try {
`
	autoconsentEpilogue = `
} finally { con.log = log; con.warn = warn; }
try {
	const cfg = window.autoconsentStandalone.instance.config;
	cfg.autoAction = 'optOut';
	cfg.heuristicMode = 'tier1';
	for (const k of Object.keys(cfg.logs)) cfg.logs[k] = false;
} catch (e) {}
})();
`
)
