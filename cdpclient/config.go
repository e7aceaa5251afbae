package cdpclient

// Config, what one Chrome is launched with, and its defaults.

import (
	"context"
	"time"

	"github.com/rs/zerolog"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/egress"
	"github.com/shotd/shotd/internal/cgroup"
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
	// Nice is how far below the service's own CPU priority this Chrome runs, in nice steps, with
	// every process it starts and the ffmpeg of its videos: when renders fill the CPU the
	// service's own work (accepting requests, health checks, cache hits, the egress routes the
	// pages load through) still runs at once. 0: the service's priority.
	Nice int
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
