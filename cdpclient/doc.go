// Package cdpclient owns Chrome processes and speaks the raw Chrome DevTools Protocol to them
// through github.com/mafredri/cdp.
//
// A Process is one Chrome in its own process group (internal/proc) with its own throw-away
// user-data dir and, where the service may make one, a memory cgroup of its own that bounds
// Chrome with every process it starts (internal/cgroup, Config.MemoryLimitMB). Launch starts it
// and connects over the DevTools pipe; Close stops it (Browser.close, then SIGKILL to the group,
// then reap, then remove the cgroup and the dir) and waits for every goroutine it started.
// Its files follow that life: config.go (Config and its defaults), browser.go (which binary),
// flags.go (the command line), env.go (the environment and TMPDIR), sandbox.go and shm.go (the
// probes behind --no-sandbox and --disable-dev-shm-usage), launch.go, connect.go, targetwatch.go
// (popups closed, the origins of frames and workers noted), process.go (the Process and its
// goroutines) and shutdown.go.
// Exited and Disconnected report the two crash signals; the actor that owns the Process turns them
// into one message. KillOrphans, at start, kills the groups a killed run of the service left
// under its directory, and no other process. Chrome gets an allow list of the environment
// (internal/proc.Env); with a User (LookupUser, user.go) it runs as that system user, in a
// directory of its own, so that a service run as root still gives Chrome its sandbox. Every
// Chrome presents the desktop Chrome user agent
// of its own version, not HeadlessChrome's (useragent.go).
//
// Every tab is alone in a browser context of its own, so concurrent renders share no cookies,
// storage, cache or service workers. With IsolationWipe (the default) a Process keeps a pool of
// such tabs (tab.go): a render takes one, and after its answer has gone out the tab is wiped
// (wipe.go): with a Guard, each tab's context sends its connections to an egress route of its
// own (egress.Route), which the wipe blocks first, ending every connection the render left; the
// tab navigates to about:blank so that the page's unload handlers run, then the context's
// cookies and cache, the storage of every origin the render's frames and workers committed, the
// history, permissions and every override the render set are cleared. A tab that crashed, timed
// out, failed inside Chrome, could not be wiped, or whose page used a URL with credentials or
// started a shared worker (Chrome's HTTP auth cache, which no CDP call clears, keeps the
// credentials; the egress route tells of those of a ws:// handshake) is replaced, never
// reused; after Config.TabReuse renders it is replaced too. With IsolationContext every render gets a fresh
// context and target, disposed after it. Making a tab costs Chrome's UI thread more than a render
// of a small page, so tabs are made ahead (Config.Prewarm) and disposed off the response path,
// while no render is loading its page. Chrome runs Config.Nice steps below the service's CPU
// priority, so that renders filling the CPU leave the service's own work its turn; a Chrome that
// only cleans up runs at the lowest priority where the service may set it (priority.go). Windows the pages open are closed as they
// appear.
//
// A render runs in steps (render.go): emulate (viewport, touch, user agent, media type and
// features, time zone, transparent background), prepare (the interceptor: Fetch for URLs with
// credentials, or every request when the render has request rules, and the watch on the main
// frame's documents that fails the render on the egress route's refusals, intercept.go;
// cookies, scripts for every new document, request counting), navigate, wait (wait_until), consent
// (block_cookie_banners: the bounded wait for autoconsent's reject click, consent.go), page
// (wait_for_selector, wait_for_expression and wait_for_selector_hidden (waits.go), then
// hide_selectors/styles/the Blocker's CSS, then scripts, then click), settle (delay), capture (a
// PDF with its templates, ranges and paper, or the viewport, a clip, an element or the full page,
// resized and fitted as image_width, image_height and image_fit ask; by sections or cut into
// slices, fullpage.go; avif, jp2, heif, tiff and gif_still captured as PNG and encoded by
// package media; html and markdown serialize the DOM instead, without what the render hid,
// document.go), finish (the metadata of the JSON answer, metadata.go, and the slices,
// finish.go). Beside them: the watch of Network events for fail_if_request_failed and the
// document's answer (netwatch.go), navigation_timeout and scripts_wait_until (navwait.go), and
// block_socials and block_banners_by_heuristics (hide.go). disable_javascript turns
// the page's scripts off in emulate; the package's helpers then run in an isolated world of
// their own, where animation frames still come and stand in for timers (waits.go). An
// option that is not set costs no call to Chrome. A video (mp4, webm, gif) runs the same steps up
// to the capture and then record (video.go) in its place: the timeout option bounds the loading
// only, and the recording gets its own deadline of twice its length plus 30 s. A markdown source
// is converted by package markdown and rendered like html.
//
// A render with the proxy option runs in a browser context of its own, outside the pool and
// disposed after it, whose proxy is a route of the egress guard (egress.Route, proxy.go) that
// leaves through the user's proxy: the guard checks its connections as any other render's.
//
// A page that replaces its document while loading (location=, a click, a form, a meta refresh) is
// followed to its new document. A main-frame document the egress guard refuses, at any moment
// of the render, fails it with host_not_allowed, and one whose server the guard's proxy cannot
// reach with navigation_failed: neither the proxy's error page nor Chrome's is ever captured.
//
// Choices the public API leaves open:
//   - Scoped headers (authorization, and Cookie, Authorization or key/token-like names in
//     headers) go to requests whose host and port equal those of url; a default port equals no
//     port, so http and https of one host are one site. An html source has no site: they go
//     nowhere. Cookies go where Chrome sends them by their Domain, Path, Secure and SameSite.
//   - block_resources: fetch() and XMLHttpRequest cannot be told apart at interception, so
//     either name blocks both; document blocks frames, never the page itself; websocket (and a
//     block_requests pattern matching a ws:// URL) replaces the WebSocket constructor of every
//     frame and dedicated worker (workers.go), as Chrome lets no protocol domain block
//     WebSocket handshakes; shared and service workers are not covered. The pattern rule is on
//     urlPattern.
//   - selector wins over full_page; with a selector, clip_x, clip_y and clip_height cut inside
//     the element's box. A full page is cut at full_page_max_height, at 16,383 px for webp
//     (the format's limit) and 65,535 px for jpeg, and at 2^27 device pixels.
//   - media_type defaults to screen for PDFs too (print must be asked for); PDF margins default
//     to none (0).
//
// Every error that leaves the package is a *shotd.Error.
package cdpclient
