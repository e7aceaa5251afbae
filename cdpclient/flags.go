package cdpclient

// Chrome's command line.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ProxyFlags makes Chrome send every connection through the egress proxy at addr: loopback too
// ("<-loopback>" removes Chrome's implicit loopback bypass), and WebRTC may not use UDP outside
// the proxy (the switch, and the profile's preference that Launch writes from it), so no page
// can reach an address the guard has not checked.
func ProxyFlags(addr string) []string {
	return []string{
		"--proxy-server=http://" + addr,
		"--proxy-bypass-list=<-loopback>",
		webrtcPolicySwitch + "disable_non_proxied_udp",
	}
}

// webrtcPolicySwitch sets the WebRTC IP handling policy; the headless shell reads it, full
// Chromium ignores it and reads the profile's preference alone (writeProfilePrefs).
const webrtcPolicySwitch = "--force-webrtc-ip-handling-policy="

// writeProfilePrefs writes the preferences of a new profile at dir: the WebRTC IP handling
// policy of flags, if they set one, so that full Chromium keeps WebRTC's UDP off the network as
// the headless shell does (without it a page's STUN requests reached any address, past the
// egress proxy). The browser contexts of the renders take the profile's preference. With user,
// the files are that user's, who runs Chrome.
func writeProfilePrefs(dir string, flags []string, user *User) error {
	policy := ""
	for _, f := range flags {
		if v, ok := strings.CutPrefix(f, webrtcPolicySwitch); ok {
			policy = v // the last one, as Chrome reads switches
		}
	}
	if policy == "" {
		return nil
	}
	prefs, err := json.Marshal(map[string]any{"webrtc": map[string]string{"ip_handling_policy": policy}})
	if err != nil {
		return err
	}
	def := filepath.Join(dir, "Default")
	file := filepath.Join(def, "Preferences")
	if err := os.MkdirAll(def, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(file, prefs, 0o600); err != nil {
		return err
	}
	if user != nil {
		for _, p := range []string{dir, def, file} {
			if err := os.Chown(p, int(user.UID), int(user.GID)); err != nil {
				return err
			}
		}
	}
	return nil
}

// launchFlags are the Chrome flags of a render-farm browser: headless, no background traffic of
// its own, nothing that waits for a user.
func launchFlags(userDataDir string) []string {
	return []string{
		"--headless",
		"--disable-gpu",
		"--disable-quic", // QUIC is UDP and would go around the HTTP proxy of the egress guard
		"--no-first-run",
		"--no-default-browser-check",
		"--disable-background-networking", // no safe-browsing, variations or other fetches of its own
		"--disable-component-update",
		"--disable-sync",
		"--disable-default-apps",
		"--disable-extensions",
		// The crashpad handler still starts, in a session of its own (setsid), so outside our
		// group; it exits by itself when Chrome does. --disable-crashpad-for-testing would keep
		// it away but makes every navigation fail with ERR_ABORTED (Chromium 156). Its database
		// is under XDG_CONFIG_HOME, which Launch points into the user-data dir.
		"--disable-breakpad",
		"--metrics-recording-only",     // record nothing to upload, upload nothing
		"--disable-domain-reliability", // no reliability beacons to Google
		"--disable-client-side-phishing-detection",
		"--disable-field-trial-config", // no A/B field trials: the same page renders the same on every host
		"--password-store=basic",       // never ask a desktop keyring (it can block without a session bus)
		"--use-mock-keychain",          // the same on macOS
		"--no-pings",                   // no hyperlink auditing pings
		"--deny-permission-prompts",    // notification/geolocation prompts are refused, never pending
		"--disable-hang-monitor",       // no "page unresponsive" handling for slow pages
		"--disable-prompt-on-repost",
		"--disable-background-timer-throttling",    // targets are never focused; their timers must run at full rate
		"--disable-backgrounding-occluded-windows", // nor be treated as hidden windows
		"--disable-renderer-backgrounding",         // nor get background renderer priority
		"--force-color-profile=srgb",               // the same colours whatever the host's display profile
		"--hide-scrollbars",
		"--mute-audio",
		// Cross-site iframes stay in their page's renderer instead of one process each, so a
		// page of many such frames cannot multiply the renderers (and the memory) of a render.
		// Renders are apart from each other anyway: every tab has a browser context, and
		// contexts never share a renderer.
		"--disable-site-isolation-trials",
		// Background services a render farm never wants; the back-forward cache is useless for
		// one-shot targets.
		"--disable-features=" + strings.Join([]string{
			"Translate", "OptimizationHints", "MediaRouter", "DialMediaRouteProvider",
			"AutofillServerCommunication", "CertificateTransparencyComponentUpdater",
			"InterestFeedContentSuggestions", "PrivacySandboxSettings4", "BackForwardCache",
			// Every browser context gets a window of its own, and every window built the
			// omnibox's WebUI popups (two chrome:// pages) and a spare renderer process that a
			// one-page context never uses: half of the cost of a fresh context (Chromium 156).
			// Without the spare, a cross-site frame starts its process when it needs one.
			"WebUIOmniboxPopup", "WebUIOmniboxAimPopup", "SpareRendererForSitePerProcess",
			// A new RenderFrameHost for every document: a render's navigation, and the wipe's
			// leave to about:blank, then cost a frame's creation and swap each. Without it a
			// same-process navigation reuses the frame: a third less Chrome CPU per render of
			// a small page, and half the wipe (Chromium 156).
			"RenderDocument",
			// Local Network Access: a document reached without an initiator (the wipe's
			// about:blank) is public to Chrome, and may not load from loopback or private
			// addresses, where a fresh tab's first document may. The egress guard decides
			// where a page may connect; behind its proxy Chrome never sees the address anyway.
			"LocalNetworkAccessChecks",
		}, ","),
		// DevTools over fds 3 and 4 (pipe.go), not a TCP port that any local process or page
		// could reach.
		"--remote-debugging-pipe",
		"--user-data-dir=" + userDataDir,
	}
}

// mergeFeatures joins the lists of repeated --disable-features and --enable-features flags into
// one flag each, at the place of the first: Chrome reads only the last of a repeated flag, so
// the features of ExtraFlags would otherwise replace ours instead of adding to them.
func mergeFeatures(flags []string) []string {
	out := make([]string, 0, len(flags))
	first := map[string]int{} // flag name -> index in out
	for _, f := range flags {
		name, list, ok := strings.Cut(f, "=")
		if !ok || (name != "--disable-features" && name != "--enable-features") {
			out = append(out, f)
			continue
		}
		i, seen := first[name]
		switch {
		case !seen:
			first[name] = len(out)
			out = append(out, f)
		case list != "":
			if strings.HasSuffix(out[i], "=") {
				out[i] += list
			} else {
				out[i] += "," + list
			}
		}
	}
	return out
}

// chromeFlags is Chrome's command line for the profile dir, the configuration's bounds and
// its extra flags, without the first URL.
func chromeFlags(path, dir string, cfg Config) []string {
	flags := launchFlags(dir)
	if !shmRoomy(devShm) {
		// Shared memory then goes to Chrome's TMPDIR, on the data dir's disk filesystem.
		flags = append(flags, "--disable-dev-shm-usage")
	}
	euid := os.Geteuid()
	if cfg.User != nil {
		euid = int(cfg.User.UID)
	}
	if sandbox, why := sandboxed(cfg.Sandbox, euid); !sandbox {
		flags = append(flags, "--no-sandbox")
		if _, seen := warnedSandbox.LoadOrStore(why, true); !seen && cfg.Sandbox != SandboxOff {
			cfg.Log.Warn().Str("reason", why).Msg("Chrome runs without its sandbox: a renderer exploit would run as the service's user (see docs/security.md)")
		}
	}
	if cfg.JSHeapMB > 0 {
		flags = append(flags, fmt.Sprintf("--js-flags=--max-old-space-size=%d", cfg.JSHeapMB))
	}
	if cfg.RendererLimit > 0 {
		flags = append(flags, fmt.Sprintf("--renderer-process-limit=%d", cfg.RendererLimit))
	}
	if ua := desktopUserAgent(path, min(cfg.StartTimeout, 10*time.Second)); ua != "" {
		flags = append(flags, "--user-agent="+ua) // before ExtraFlags, which may set their own
	} else {
		cfg.Log.Warn().Str("browser", path).Msg("could not read the browser version: pages see Chrome's headless User-Agent")
	}
	return mergeFeatures(append(flags, cfg.ExtraFlags...))
}
