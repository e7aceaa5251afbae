// Package config owns the service configuration: the TOML file of the operator contract
// (section 2) plus the keys added since, the embedded defaults, the SHOTD_* environment overrides
// and the one validation pass that runs before anything starts.
//
// The file is decoded in strict mode: an unknown key stops the service with its name and line,
// because a misspelled limit that silently keeps its default is worse than a refusal. Every
// error names the key and the problem, e.g. "browser.pool_size: must be between 1 and 64, got 0".
//
// Keys beyond operator contract section 2 (defaults shown; example.toml is the full annotated
// file and a test keeps it equal to Default):
//
//	shutdown_timeout_seconds = 30   # top level: how long serve waits for renders and jobs to stop
//
//	[browser]
//	renders_per_process           = 4     # concurrent renders one Chrome serves
//	recycle_after                 = 200   # renders before a Chrome is replaced
//	start_timeout_seconds         = 20    # launch until DevTools answers
//	prewarm                       = 2     # fresh browser contexts (with a tab) kept ready per Chrome, off the request path (0..16)
//	slot_wait_ms                  = 2000  # how long a render waits for a free slot before renderer_busy
//	render_deadline_grace_seconds = 10    # added to a render's own timeout before it is abandoned
//	memory_limit_mb               = "auto" # each Chrome's memory cgroup bound, in MB; "auto": 80% of memory / pool_size; "off"
//
//	[blocking]
//	easylist    = "/usr/share/chromium/extensions/ublock-origin/assets/thirdparties/easylist/easylist.txt"
//	easyprivacy = "/usr/share/chromium/extensions/ublock-origin/assets/thirdparties/easylist/easyprivacy.txt"
//	autoconsent = "/usr/local/share/shotd/autoconsent/autoconsent.standalone.js"  # block_cookie_banners answers consent dialogs with it; "" disables, a missing file is a warning
//
//	[media]
//	ffmpeg_path = ""    # ffmpeg of video output; empty: ffmpeg on PATH (serve checks it at start)
//
//	[log]
//	level  = "info"     # trace, debug, info, warn, error
//	format = "auto"     # auto (console on a terminal, JSON otherwise), console or json
//
// Plans: the embedded plans.default always exists; a [plans.NAME] table in the file overrides it
// or adds a plan, and every key the table omits takes the value of the contract's plans.default
// (features omitted: all features; features = []: none).
//
// Environment: SHOTD_<SECTION>_<KEY> (SHOTD_BROWSER_POOL_SIZE), SHOTD_<KEY> for top-level keys
// (SHOTD_LISTEN, SHOTD_DATA_DIR, SHOTD_SHUTDOWN_TIMEOUT_SECONDS) and SHOTD_PLANS_<NAME>_<KEY>
// (SHOTD_PLANS_DEFAULT_MONTHLY_QUOTA; NAME lower-cased, a new name adds a plan) override the file.
// Lists are comma-separated ("" is the empty list). An unknown variable under a known section
// prefix (SHOTD_BROWSER_POOLSIZE) is refused like an unknown file key; other SHOTD_* variables
// are left alone for tools that share the prefix.
package config
