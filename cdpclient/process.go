package cdpclient

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mafredri/cdp"
	"github.com/mafredri/cdp/protocol/browser"
	"github.com/mafredri/cdp/protocol/target"
	"github.com/mafredri/cdp/rpcc"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/egress"
	"github.com/shotd/shotd/internal/cgroup"
	"github.com/shotd/shotd/internal/proc"
)

// Config configures one Chrome process.
type Config struct {
	Path         string        // browser binary; "" = FindBrowser("")
	ExtraFlags   []string      // appended to the launch flags (e.g. --proxy-server=...); a repeated flag wins over ours, but feature lists are merged
	StartTimeout time.Duration // deadline for "DevTools listening on"; default 20s
	// Prewarm is the number of tabs (a browser context with its target) kept ready beyond
	// those serving; default 2, < 0: none, and no tab is reused either.
	Prewarm int
	// Isolation is IsolationWipe (default) or IsolationContext.
	Isolation string
	// Renders is how many renders run on this Chrome at once (browser.renders_per_process).
	// With wipe isolation the pool holds a tab for each of them plus Prewarm; default 4.
	Renders int
	// TabReuse is how many renders one tab serves before it is replaced, with wipe isolation;
	// default 50.
	TabReuse int
	// JSHeapMB caps the JavaScript heap of each renderer (V8's old space): a page that allocates
	// past it crashes its tab, and the render fails with page_crashed. 0: Chrome's own limit
	// (about 4 GB).
	JSHeapMB int
	// Sandbox is SandboxAuto (default: on where Sandboxable says it can work), SandboxOn or
	// SandboxOff (--no-sandbox).
	Sandbox string
	// RendererLimit bounds the renderer processes of this Chrome (--renderer-process-limit);
	// 0: Chrome's own bound, from the machine's memory.
	RendererLimit int
	// MemoryLimitMB bounds the memory of this Chrome's whole process tree with a cgroup of its
	// own, made in Cgroups: past it the kernel's OOM killer ends the largest process, a page's
	// renderer, whose render fails with page_crashed. 0 or a nil Cgroups: no such bound.
	MemoryLimitMB int
	Cgroups       *cgroup.Parent
	// User, when set, is the system user Chrome runs as (see User); the service must be root.
	// nil: the service's own user.
	User *User
	// Dir is the parent of the user-data dirs, and of Chrome's TMPDIR when the path is short
	// enough for Chrome's unix sockets (else that goes to os.TempDir()); "" = os.TempDir(). A
	// service killed without Close leaves its dirs (Chrome itself dies with it): a dedicated Dir
	// can be emptied at start.
	Dir string
	// Guard, when set, gives each tab's context an egress route of its own, which checks every
	// connection and records what it refuses or cannot reach (the render fails on a main-frame
	// document that is one of those), judges the documents a render pauses anyway (request
	// rules, full Chromium), and has a tab whose page used credentials replaced. The service
	// always sets it; without it (tests) a tab is wiped with Fetch instead of its route, and
	// credentials go unseen.
	Guard Guard
	// Blocker, when set, picks the list-based blocker of one render from its options
	// (block_ads, block_trackers, block_cookie_banners, block_chats); it returns nil when the
	// render asks for none. nil: no list-based blocking at all.
	Blocker func(o *shotd.Options) Blocker
	// MaxOutputBytes bounds a PDF, read from Chrome in chunks, and a recorded video
	// (limits.max_output_bytes): a larger one is content_too_large, the PDF's read stops there
	// and ffmpeg stops writing soon after it passes the limit. 0: no limit.
	MaxOutputBytes int64
	Log            zerolog.Logger
}

// Guard is the egress guard as cdpclient uses it; *egress.Guard implements it.
type Guard interface {
	CheckURL(ctx context.Context, rawURL string) error
	// OpenRoute starts the one-off egress proxy of a render with the proxy option (proxy.go).
	OpenRoute(ctx context.Context, up egress.Upstream, log zerolog.Logger) (*egress.Route, error)
	// OpenDirectRoute starts the egress proxy of one tab's browser context (tab.go, wipe.go).
	OpenDirectRoute(log zerolog.Logger) (*egress.Route, error)
}

// ProxyFlags makes Chrome send every connection through the egress proxy at addr: loopback too
// ("<-loopback>" removes Chrome's implicit loopback bypass), and WebRTC may not use UDP outside
// the proxy, so no page can reach an address the guard has not checked.
func ProxyFlags(addr string) []string {
	return []string{
		"--proxy-server=http://" + addr,
		"--proxy-bypass-list=<-loopback>",
		"--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
	}
}

const (
	defaultStartTimeout = 20 * time.Second
	defaultPrewarm      = 2
	defaultRenders      = 4
	browserCloseTimeout = 2 * time.Second        // Browser.close before the group is killed
	gracefulExitWait    = time.Second            // how long Chrome may take to exit after Browser.close
	reapTimeout         = 10 * time.Second       // bound of the waits after the SIGKILL, whatever Close's ctx
	disposeTimeout      = 5 * time.Second        // disposal of one browser context
	maxYield            = 200 * time.Millisecond // the longest background work waits for loads to end
	yieldPoll           = 5 * time.Millisecond
	disposeGrace        = 20 * time.Millisecond // before a used tab is disposed (release)
)

var (
	errBrowserStopped = errors.New("chrome stopped")
	errTabGone        = errors.New("the tab's connection closed")
	errClosed         = errors.New("process closed")
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

// chromeEnv is the environment Chrome gets: the service's allow-listed variables (proc.Env), so
// that a renderer exploit finds no credential in /proc/self/environ.
func chromeEnv(env []string) []string { return proc.Env(env) }

// maxTmpDir bounds the length of Chrome's TMPDIR. Chrome puts unix sockets there
// (<TMPDIR>/org.chromium.Chromium.XXXXXX/SingletonSocket, 45 bytes more), a socket path may
// not exceed 108 bytes, and Chrome aborts when one would.
const maxTmpDir = 60

// tmpParent is where Chrome's TMPDIR is made, and its name pattern: in Config.Dir, which a
// service can empty at start after a SIGKILL left it behind, when the path is short enough for
// sockets; else in os.TempDir().
func tmpParent(dir string) (parent, pattern string) {
	if dir == "" {
		return "", "shotd-tmp-"
	}
	abs, err := filepath.Abs(dir)
	// MkdirTemp adds "/t-" and at most 10 digits.
	if err != nil || len(abs)+len("/t-")+10 > maxTmpDir {
		return "", "shotd-tmp-"
	}
	return abs, "t-"
}

// Process is one running Chrome, owned by one actor.
type Process struct {
	cfg   Config
	log   zerolog.Logger
	group *proc.Group
	pid   int
	dir   string    // user-data dir, removed by Close
	pipe  *pipeConn // DevTools, every session

	conn    *rpcc.Conn // the browser's session
	browser *cdp.Client

	// life is cancelled when Chrome exits, its connection closes or Close starts; renders and the
	// pre-warmer stop with it.
	life       context.Context
	cancelLife context.CancelCauseFunc

	exited       chan struct{}
	disconnected chan struct{}
	stderr       *os.File
	stderrDone   chan struct{}

	tmpDir string        // Chrome's TMPDIR, removed with dir
	cgroup *cgroup.Child // Chrome's memory bound, removed by Close; nil: none

	mu      sync.Mutex // protects closing and wg.Add after Launch
	closing bool
	wg      sync.WaitGroup

	// pauseAll: the browser is not the headless shell. Full Chromium answers a challenge (401
	// with WWW-Authenticate) to a request Fetch does not pause with a login prompt that nobody
	// can answer: a document fails (net::ERR_INVALID_AUTH_CREDENTIALS), and an image or a
	// synchronous XMLHttpRequest holds the page's load until the timeout. Paused, every
	// challenge comes to the interceptor, which cancels it, so that the server's 401 answer is
	// what the page gets, as the headless shell gives it by itself.
	pauseAll bool

	ready   chan *tab     // tabs ready for a render: pre-warmed, or wiped after one
	tabs    sync.Map      // browser.ContextID -> *tab, for the origins of watchTargets
	slots   chan struct{} // one token per pair the pre-warmer may create
	loading atomic.Int32  // renders between their start and the end of their wait step
	// background counts the tabs being wiped, disposed or created off the renders' path: work
	// on Chrome's UI thread that a render sent to this browser would wait behind.
	background atomic.Int32
	prio       *priority // the group's CPU priority while it only cleans up

	closeOnce sync.Once
	closeErr  error
}

// Launch starts Chrome and connects to it. A failed Launch leaves no process and no directory.
func Launch(ctx context.Context, cfg Config) (*Process, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	path, err := FindBrowser(cfg.Path)
	if err != nil {
		return nil, err
	}
	warnAboutBrowser(path, cfg)
	// Everything made before Chrome runs is undone by one path on failure.
	var undo []func()
	fail := func(err error, msg string) (*Process, error) {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
		return nil, shotd.Wrap(shotd.CodeRendererUnavailable, err, msg)
	}
	dir, err := os.MkdirTemp(cfg.Dir, "shotd-chrome-")
	if err != nil {
		return fail(err, "cannot create the browser profile directory")
	}
	undo = append(undo, func() { os.RemoveAll(dir) })
	// Chrome writes outside --user-data-dir to $XDG_CONFIG_HOME (the crash database) and
	// $XDG_CACHE_HOME; keep all of it in the dir that Close removes. TMPDIR too: Chrome killed
	// with SIGKILL cannot remove the org.chromium.* dirs it makes there.
	// With a User, Chrome gets a directory of its own (its profile, home and TMPDIR) and dir,
	// the service's, keeps only the records.
	profile, tmp, env := dir, "", []string(nil)
	if cfg.User != nil {
		if tmp, err = cfg.User.makeDir(dir); err != nil {
			return fail(err, "cannot create the browser's directory for user "+cfg.User.Name)
		}
		profile = filepath.Join(tmp, "profile")
		env = []string{"HOME=" + tmp, "TMPDIR=" + filepath.Join(tmp, "tmp")}
	} else {
		if tmp, err = os.MkdirTemp(tmpParent(cfg.Dir)); err != nil {
			return fail(err, "cannot create the browser temp directory")
		}
		env = []string{"TMPDIR=" + tmp}
	}
	undo = append(undo, func() { os.RemoveAll(tmp) })
	// Three pipes: stderr, and DevTools' two (pipe.go). Chrome's ends are closed here once it
	// holds them; ours on failure, or by Close.
	var files [6]*os.File // stderr r, w; commands r, w; answers r, w
	for i := 0; i < len(files); i += 2 {
		if files[i], files[i+1], err = os.Pipe(); err != nil {
			return fail(err, "cannot start the browser")
		}
		undo = append(undo, func() { files[i].Close(); files[i+1].Close() })
	}
	stderrR, stderrW, cmdR, cmdW, ansR, ansW := files[0], files[1], files[2], files[3], files[4], files[5]

	flags := chromeFlags(path, profile, cfg)
	cmd := exec.Command(path, append(flags, "about:blank")...)
	if cfg.User != nil {
		// The pipes are inherited descriptors: they work across the switch of user.
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cfg.User.credential()}
	}
	// Our own stderr pipe instead of cmd.StderrPipe: Wait must not close it under the reader,
	// which keeps draining so Chrome never blocks on a full pipe.
	cmd.Stderr = stderrW
	cmd.ExtraFiles = []*os.File{cmdR, ansW} // Chrome's fd 3 and 4 (--remote-debugging-pipe)
	// Ours last: exec keeps the last value of a repeated name.
	cmd.Env = append(append(chromeEnv(os.Environ()), env...),
		"XDG_CONFIG_HOME="+filepath.Join(profile, "xdg-config"),
		"XDG_CACHE_HOME="+filepath.Join(profile, "xdg-cache"))
	var memory *cgroup.Child
	if cfg.Cgroups != nil && cfg.MemoryLimitMB > 0 {
		if memory, err = cfg.Cgroups.New(int64(cfg.MemoryLimitMB) << 20); err != nil {
			return fail(err, "cannot bound the browser's memory")
		}
		undo = append(undo, func() { removeCgroup(memory) })
		if cfg.User != nil {
			if err := memory.AllowUser(int(cfg.User.UID), int(cfg.User.GID)); err != nil {
				return fail(err, "cannot bound the browser's memory")
			}
		}
		memory.Enter(cmd) // Chrome, and so every process it starts, is in it from the start
	}
	// Own group: Close kills Chrome and all its helpers at once.
	group, err := proc.Start(cmd)
	if err != nil {
		return fail(err, "cannot start the browser")
	}
	// Chrome holds its ends now: EOF on ours comes when its whole group is gone.
	stderrW.Close()
	cmdR.Close()
	ansW.Close()
	if err := writeGroupRecord(dir, group.PID(), cfg.StartTimeout); err != nil {
		// Without the record a wrapper's Chrome could outlive a killed service unnoticed.
		group.Kill()
		<-group.Exited()
		return fail(err, "cannot record the browser's process group")
	}

	life, cancelLife := context.WithCancelCause(context.Background())
	p := &Process{
		cfg:          cfg,
		pauseAll:     filepath.Base(path) != filepath.Base(HeadlessShell),
		log:          cfg.Log.With().Int("pid", group.PID()).Logger(),
		group:        group,
		pid:          group.PID(),
		dir:          dir,
		tmpDir:       tmp,
		cgroup:       memory,
		life:         life,
		cancelLife:   cancelLife,
		exited:       make(chan struct{}),
		disconnected: make(chan struct{}),
		stderr:       stderrR,
		stderrDone:   make(chan struct{}),
		pipe:         newPipeConn(cmdW, ansR, func() { cancelLife(errBrowserStopped) }),
		prio:         newPriority(group.PID()),
	}
	p.wg.Add(2)
	go p.reap()
	go p.readStderr()

	if err := p.connect(ctx); err != nil {
		// shutdown removes the dir and waits for both goroutines.
		if serr := p.shutdown(context.Background(), false); serr != nil {
			p.log.Warn().Err(serr).Msg("cleanup after failed launch")
		}
		return nil, err
	}

	p.startPool()
	p.log.Info().Str("user_data_dir", dir).Msg("chrome started")
	return p, nil
}

// startPool starts watching the connection and pre-warming tabs: Prewarm of them, and with
// wipe isolation room for the tabs of the renders in flight, which rest in the pool between
// renders.
func (p *Process) startPool() {
	n := max(p.cfg.Prewarm, 0)
	if p.cfg.Isolation == IsolationWipe && n > 0 {
		n += p.cfg.Renders
	}
	p.ready = make(chan *tab, n)
	p.slots = make(chan struct{}, n)
	for range n {
		p.slots <- struct{}{}
	}
	p.wg.Add(1)
	go p.watchConn()
	for range prewarmWorkers(n) {
		p.wg.Add(1)
		go p.prewarm()
	}
}

// setDefaults fills what cfg leaves zero and refuses an isolation it does not know.
func (cfg *Config) setDefaults() error {
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = defaultStartTimeout
	}
	if cfg.Prewarm == 0 {
		cfg.Prewarm = defaultPrewarm
	}
	switch cfg.Isolation {
	case "":
		cfg.Isolation = IsolationWipe
	case IsolationWipe, IsolationContext:
	default:
		return shotd.Errorf(shotd.CodeInternalError, "unknown browser isolation %q", cfg.Isolation)
	}
	if cfg.Renders <= 0 {
		cfg.Renders = defaultRenders
	}
	if cfg.TabReuse <= 0 {
		cfg.TabReuse = defaultReuse
	}
	return nil
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

// connect opens the browser's session on the DevTools pipe and makes its first calls, all within
// StartTimeout: Chrome answers once it is up.
func (p *Process) connect(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.StartTimeout)
	defer cancel()
	var err error
	if p.conn, err = p.pipe.dial(ctx, ""); err != nil {
		return shotd.Wrap(shotd.CodeRendererUnavailable, err, "cannot connect to the browser")
	}
	p.browser = cdp.NewClient(p.conn)
	// Downloads are denied in every context (newTab denies them in its own): no page writes to
	// the disk.
	if err := p.browser.Browser.SetDownloadBehavior(ctx, browser.NewSetDownloadBehaviorArgs("deny")); err != nil {
		switch {
		case isDone(p.pipe.done):
			// The pipe ended: Chrome died, or the binary is not Chrome.
			return shotd.Wrap(shotd.CodeRendererUnavailable, err, "the browser exited before it was ready")
		case ctx.Err() != nil:
			return shotd.Wrap(shotd.CodeRendererUnavailable, ctx.Err(), "the browser did not become ready in time")
		}
		return shotd.Wrap(shotd.CodeRendererUnavailable, err, "cannot connect to the browser")
	}
	return p.watchTargets(ctx)
}

// watchTargets closes every window a page opens (window.open, a target=_blank link or form) as
// soon as Chrome reports it, and records for the wipe the origins of the frames in processes of
// their own (cross-site iframes) and of the workers of every tab, which the tab's own connection
// does not see. A popup takes the focus from its opener, whose captures then wait for a frame
// that never comes; it is outside the render's Fetch interception too (the egress proxy still
// guards it). Renders' own targets have no opener, popups always have one, even with noopener.
// The watcher ends with the browser connection.
func (p *Process) watchTargets(ctx context.Context) error {
	created, err := p.browser.Target.TargetCreated(p.life)
	if err != nil {
		return shotd.Wrap(shotd.CodeRendererUnavailable, err, "cannot watch the browser's targets")
	}
	changed, err := p.browser.Target.TargetInfoChanged(p.life)
	if err != nil {
		created.Close()
		return shotd.Wrap(shotd.CodeRendererUnavailable, err, "cannot watch the browser's targets")
	}
	var filter target.Filter
	for _, kind := range []string{"page", "iframe", "worker", "shared_worker", "service_worker"} {
		filter = append(filter, target.FilterEntry{Type: &kind})
	}
	if err := p.browser.Target.SetDiscoverTargets(ctx, target.NewSetDiscoverTargetsArgs(true).SetFilter(filter)); err != nil {
		created.Close()
		changed.Close()
		return shotd.Wrap(shotd.CodeRendererUnavailable, err, "cannot watch the browser's targets")
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer created.Close()
		defer changed.Close()
		for {
			var info target.Info
			select {
			case <-created.Ready():
				ev, err := created.Recv()
				if err != nil {
					return
				}
				info = ev.TargetInfo
			case <-changed.Ready():
				ev, err := changed.Recv()
				if err != nil {
					return
				}
				info = ev.TargetInfo
			}
			p.noteOrigin(info)
			if info.Type != "page" || info.OpenerID == nil {
				continue
			}
			cctx, cancel := context.WithTimeout(p.life, disposeTimeout)
			_, err = p.browser.Target.CloseTarget(cctx, target.NewCloseTargetArgs(info.TargetID))
			cancel()
			if err != nil && p.life.Err() == nil {
				p.log.Debug().Err(err).Str("target", string(info.TargetID)).Msg("close popup")
			}
		}
	}()
	return nil
}

// noteOrigin records the origin of a frame or worker target with the tab of its browser context,
// and a shared worker there.
func (p *Process) noteOrigin(info target.Info) {
	if info.BrowserContextID == nil {
		return
	}
	if t, ok := p.tabs.Load(*info.BrowserContextID); ok {
		t.(*tab).origins.add(info.URL, info.Type == "page")
		if info.Type == "shared_worker" {
			t.(*tab).sharedWorker.Store(true)
		}
	}
}

// reap turns the end of Chrome's group (its leader reaped, the rest killed) into Exited.
func (p *Process) reap() {
	defer p.wg.Done()
	<-p.group.Exited()
	// Renders that saw the pipe close tell a dead browser by life: end it before logging.
	p.cancelLife(errBrowserStopped)
	p.log.Info().Err(p.group.Err()).Msg("chrome exited")
	close(p.exited)
}

// killGroup sends SIGKILL to Chrome's process group while its leader is unreaped.
func (p *Process) killGroup() { p.group.Kill() }

// readStderr drains Chrome's stderr, logging it at debug, so that Chrome never blocks on a full
// pipe.
func (p *Process) readStderr() {
	defer p.wg.Done()
	defer close(p.stderrDone)
	defer p.stderr.Close()
	br := bufio.NewReaderSize(p.stderr, 16<<10)
	for {
		line, err := br.ReadString('\n')
		if line = strings.TrimRight(line, "\r\n"); line != "" {
			if len(line) > 2000 {
				line = line[:2000]
			}
			p.log.Debug().Str("line", line).Msg("chrome stderr")
		}
		if err != nil {
			return
		}
	}
}

// watchConn turns the end of the browser connection into Disconnected.
func (p *Process) watchConn() {
	defer p.wg.Done()
	<-p.conn.Context().Done()
	p.log.Debug().Msg("chrome connection closed")
	p.cancelLife(errBrowserStopped)
	close(p.disconnected)
}

// ReadyTabs is how many tabs wait ready for a render: pre-warmed, or wiped after one.
func (p *Process) ReadyTabs() int { return len(p.ready) }

// Background is how many tabs this browser is wiping, disposing or creating off the renders'
// path. A scheduler that has the choice sends a render to the browser with the least of it.
func (p *Process) Background() int { return int(p.background.Load()) }

// PID is the process id of Chrome, which is also its process group id.
func (p *Process) PID() int { return p.pid }

// Exited is closed once the Chrome process has exited and been reaped.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Disconnected is closed once the browser's DevTools websocket is gone.
func (p *Process) Disconnected() <-chan struct{} { return p.disconnected }

// Close stops Chrome: Browser.close with a short deadline, SIGKILL to the process group, reap,
// remove the user-data dir, and wait for every goroutine of the Process. Renders still running
// fail with internal_error. Close is idempotent; later calls return the first result.
func (p *Process) Close(ctx context.Context) error {
	p.closeOnce.Do(func() { p.closeErr = p.shutdown(ctx, true) })
	return p.closeErr
}

func (p *Process) shutdown(ctx context.Context, graceful bool) error {
	p.mu.Lock()
	p.closing = true
	p.mu.Unlock()
	p.cancelLife(errClosed)

	if graceful && p.browser != nil && !isDone(p.disconnected) {
		// A polite close lets Chrome end its children itself; the kill below is the guarantee.
		bctx, cancel := context.WithTimeout(ctx, browserCloseTimeout)
		err := p.browser.Browser.Close(bctx)
		cancel()
		if err == nil {
			t := time.NewTimer(gracefulExitWait)
			select {
			case <-p.exited:
			case <-t.C:
			case <-ctx.Done():
			}
			t.Stop()
		} else {
			p.log.Debug().Err(err).Msg("browser.close failed")
		}
	}
	p.killGroup()

	// After SIGKILL the exit is a matter of milliseconds; wait for it, and for the goroutines,
	// even when the caller's ctx has run out, so that nothing is left behind. Bounded all the
	// same, should the kernel hold a process (uninterruptible I/O).
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reapTimeout)
	defer cancel()
	var errs []error
	select {
	case <-p.exited:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("chrome pid %d did not exit: %w", p.pid, ctx.Err()))
	}
	if p.cgroup != nil {
		// What is left in it (the crashpad handler, outside the group) goes now.
		if err := p.cgroup.Remove(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if p.conn != nil {
		p.conn.Close()
	}
	if p.pipe != nil {
		p.pipe.Close() // ends every tab's session
	}
	p.drainReady() // ready is nil after a failed Launch: never ready
	// With the group dead nobody holds the write end any more; closing the read end also
	// unblocks the reader should an escaped helper still hold it.
	select {
	case <-p.stderrDone:
	case <-time.After(500 * time.Millisecond):
		p.stderr.Close()
	}
	if err := proc.WaitGroup(ctx, &p.wg); err != nil {
		errs = append(errs, fmt.Errorf("goroutines of chrome pid %d did not end: %w", p.pid, err))
	}
	if err := removeDir(ctx, p.dir); err != nil {
		errs = append(errs, err)
	}
	if err := removeDir(ctx, p.tmpDir); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return shotd.Wrap(shotd.CodeInternalError, errors.Join(errs...), "the browser did not stop cleanly")
	}
	p.log.Debug().Msg("chrome closed")
	return nil
}

// removeCgroup removes c after a failed launch, within reapTimeout.
func removeCgroup(c *cgroup.Child) {
	ctx, cancel := context.WithTimeout(context.Background(), reapTimeout)
	defer cancel()
	_ = c.Remove(ctx)
}

// removeDir removes the user-data dir, retrying while the crashpad handler, which outlives Chrome
// by a moment, may still add files to it.
func removeDir(ctx context.Context, dir string) error {
	var err error
	for range 10 {
		if err = os.RemoveAll(dir); err == nil {
			return nil
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return err
		}
	}
	return err
}

// spawn runs f on a goroutine that Close waits for; once Close has begun it runs nothing and
// reports false.
func (p *Process) spawn(f func()) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closing {
		return false
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		f()
	}()
	return true
}

func isDone(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// Probe asks the browser process for its version: an answer within ctx shows that its UI thread
// and DevTools connection work. Renders do not wait for it.
func (p *Process) Probe(ctx context.Context) error {
	if p.life.Err() != nil {
		return context.Cause(p.life)
	}
	_, err := p.browser.Browser.GetVersion(ctx)
	return err
}

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

// devShm is where Chrome keeps its shared memory unless told --disable-dev-shm-usage; a
// variable for the tests alone.
var devShm = "/dev/shm"

// minDevShm is the free room in /dev/shm below which Chrome is told to keep its shared memory in
// its TMPDIR instead: a container's /dev/shm (64 MiB by default) fills up under a few large
// captures, and Chrome then crashes. Where there is room, tmpfs it is: on a disk filesystem
// every new buffer of the compositor is a file whose pages fault in through the filesystem and
// are written back to disk, which the capture of every frame pays for.
const minDevShm = 1 << 30

// shmRoomy reports whether dir is a tmpfs with at least minDevShm bytes free.
func shmRoomy(dir string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return false
	}
	return st.Type == unix.TMPFS_MAGIC && st.Bavail*uint64(st.Bsize) >= minDevShm
}
