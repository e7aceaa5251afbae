package config

import (
	_ "embed"
	"net"
	"net/netip"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/shotd/shotd"
)

// Example is the annotated configuration file with every key at its default. It parses to
// Default() (a test keeps them equal), so it can be printed as a starting point for operators.
//
//go:embed example.toml
var Example []byte

// DefaultPlan is the name of the plan that always exists; the account created at first start
// has it.
const DefaultPlan = "default"

// Config is the whole configuration. Build it with Default or Load; after Validate it is read-only.
type Config struct {
	Listen      string `toml:"listen"`       // public API, host:port
	AdminListen string `toml:"admin_listen"` // admin API, dashboard, /metrics
	// AdminToken is the Bearer token of the admin API; empty: generated at first start and stored
	// in the data directory (not by this package).
	AdminToken string `toml:"admin_token"`
	// AdminTokenFile holds the admin token instead of admin_token: read at load (Validate puts it
	// in AdminToken), or from $CREDENTIALS_DIRECTORY under systemd's LoadCredential= (secrets.go).
	AdminTokenFile string `toml:"admin_token_file"`
	DataDir        string `toml:"data_dir"`
	// PublicURL is the base of links in answers, without a trailing slash.
	PublicURL              string `toml:"public_url"`
	ShutdownTimeoutSeconds int    `toml:"shutdown_timeout_seconds"`
	// MetricsAuth says whether /metrics asks for the admin token: MetricsAuto (when admin_listen
	// is not a loopback address), MetricsToken or MetricsOpen.
	MetricsAuth string `toml:"metrics_auth"`

	Browser  Browser  `toml:"browser"`
	Network  Network  `toml:"network"`
	Storage  Storage  `toml:"storage"`
	Limits   Limits   `toml:"limits"`
	Webhooks Webhooks `toml:"webhooks"`
	Log      Log      `toml:"log"`
	Blocking Blocking `toml:"blocking"`
	Media    Media    `toml:"media"`
	Cluster  Cluster  `toml:"cluster"` // cluster.go; empty: a single node

	// Plans by name; each Plan's Name equals its key. Decoded through filePlan, hence "-".
	Plans map[string]shotd.Plan `toml:"-"`

	// credentials is $CREDENTIALS_DIRECTORY from the environment given to Load or Parse, where
	// the *_file secrets are looked up first.
	credentials string
}

// Browser is the [browser] table: the Chrome pool.
type Browser struct {
	Path                       string `toml:"path"` // empty: chromium, chromium-browser or google-chrome on PATH
	PoolSize                   int    `toml:"pool_size"`
	RendersPerProcess          int    `toml:"renders_per_process"`
	RecycleAfter               int    `toml:"recycle_after"`
	StartTimeoutSeconds        int    `toml:"start_timeout_seconds"`
	Prewarm                    int    `toml:"prewarm"`
	Isolation                  string `toml:"isolation"` // BrowserIsolationWipe or BrowserIsolationContext
	TabReuse                   int    `toml:"tab_reuse"`
	Sandbox                    string `toml:"sandbox"`                // auto, on or off
	User                       string `toml:"user"`                   // auto, self or a system user's name
	JSHeapMB                   int    `toml:"js_heap_mb"`             // 0: HeapMB's automatic value
	RendererProcessLimit       int    `toml:"renderer_process_limit"` // 0: RendererLimit's automatic value
	MemoryLimitMB              AutoMB `toml:"memory_limit_mb"`        // each Chrome's cgroup bound: MemoryLimit
	SlotWaitMs                 int    `toml:"slot_wait_ms"`
	RenderDeadlineGraceSeconds int    `toml:"render_deadline_grace_seconds"`
	// Nice is how many nice steps below the service's CPU priority Chrome and the encoders run:
	// when renders fill the CPU, the service still accepts, answers and routes at once.
	Nice int `toml:"nice"`
}

// Network is the [network] table: exceptions to the private-address guard.
type Network struct {
	AllowPrivate []string `toml:"allow_private"` // IP addresses or CIDRs
}

// Storage is the [storage] table.
type Storage struct {
	FileTTLSeconds int `toml:"file_ttl_seconds"`
	S3             S3  `toml:"s3"` // the service's own bucket (s3.go); empty: files in data_dir
}

// Limits is the [limits] table.
type Limits struct {
	MaxSourceBytes int `toml:"max_source_bytes"`
	MaxOutputBytes int `toml:"max_output_bytes"`
	BulkMaxItems   int `toml:"bulk_max_items"`
	// Refused requests (invalid options, bad signatures, unknown keys...) allowed in a minute
	// per client address and per access key, before 429 rate_limited; 0: not counted. They are
	// refused before any account limit applies, so without these nothing would throttle them.
	RefusedPerAddressPerMinute int `toml:"refused_per_address_per_minute"`
	RefusedPerKeyPerMinute     int `toml:"refused_per_key_per_minute"`
	// MaxConnsPerAddress caps the open connections of one client address on the public listener
	// (0: no cap). Behind a reverse proxy every client has the proxy's address: raise it or 0.
	MaxConnsPerAddress int `toml:"max_conns_per_address"`
	// ServiceMemoryMB is the soft memory limit of the service's own process, Chrome excluded:
	// the Go runtime's (ApplyServiceMemory). 0: none set here (GOMEMLIMIT from the
	// environment, if any, stays in force).
	ServiceMemoryMB int `toml:"service_memory_mb"`
}

// MinServiceMemoryMB is the least limits.service_memory_mb: below it the collector would run
// all the time (the service holds about 50 MB with EasyList and EasyPrivacy loaded).
const MinServiceMemoryMB = 64

// ApplyServiceMemory sets limits.service_memory_mb as the Go runtime's soft memory limit
// (debug.SetMemoryLimit): as the service's heap nears it, the collector runs more often and
// returns freed memory to the system sooner, so that a burst of large renders does not leave the
// process holding its peak. 0 changes nothing. It returns the limit in force before.
func (l Limits) ApplyServiceMemory() (previous int64) {
	if l.ServiceMemoryMB <= 0 {
		return debug.SetMemoryLimit(-1)
	}
	return debug.SetMemoryLimit(int64(l.ServiceMemoryMB) << 20)
}

// Webhooks is the [webhooks] table.
type Webhooks struct {
	RetryDelaysSeconds []int `toml:"retry_delays_seconds"` // delay before attempt 2, 3, ...
	TimeoutSeconds     int   `toml:"timeout_seconds"`
}

// Blocking is the [blocking] table: the filter lists of block_ads and block_trackers, which
// Debian's package webext-ublock-origin-chromium ships and keeps updated with the OS, and the
// consent-dialog script of block_cookie_banners.
type Blocking struct {
	EasyList    string `toml:"easylist"`    // block_ads
	EasyPrivacy string `toml:"easyprivacy"` // block_trackers
	// Autoconsent is DuckDuckGo's autoconsent.standalone.js, which block_cookie_banners puts
	// into every page to reject (or dismiss) consent dialogs before the capture; "" disables
	// it, and then banners are only hidden. scripts/install-deps.sh installs it at the default
	// path. A missing file is not fatal: serve warns and hides banners only.
	Autoconsent string `toml:"autoconsent"`
}

// DefaultAutoconsent is where scripts/install-deps.sh installs autoconsent's standalone script.
const DefaultAutoconsent = "/usr/local/share/shotd/autoconsent/autoconsent.standalone.js"

// Media is the [media] table: the programs of video output.
type Media struct {
	// FFmpegPath is the ffmpeg binary; empty: ffmpeg on PATH. serve checks it at start.
	FFmpegPath string `toml:"ffmpeg_path"`
}

// Log is the [log] table.
type Log struct {
	Level  string `toml:"level"`
	Format string `toml:"format"` // LogAuto, LogConsole or LogJSON
}

// HeapMB is the JavaScript heap cap of each renderer: js_heap_mb, or when 0 the machine's memory
// (memTotal bytes) shared among twice the renders that can run at once, between 256 MB and 4 GB.
// A renderer takes about its heap plus 200 MB, so every render running at once with a page at
// its cap still fits in half the machine.
func (b Browser) HeapMB(memTotal int64) int {
	if b.JSHeapMB > 0 {
		return b.JSHeapMB
	}
	if memTotal <= 0 {
		return 1024
	}
	per := memTotal >> 20 / int64(2*max(1, b.PoolSize*b.RendersPerProcess))
	return int(min(max(per, 256), 4096))
}

// AutoMB is a size in MB, or AutoMBAuto or AutoMBOff. The file may give the size as a TOML
// integer or as a string.
type AutoMB string

// Values of an AutoMB beside a number.
const (
	AutoMBAuto AutoMB = "auto"
	AutoMBOff  AutoMB = "off"
)

// UnmarshalText takes a TOML integer (go-toml hands it over as text) as well as a string.
func (a *AutoMB) UnmarshalText(b []byte) error {
	*a = AutoMB(b)
	return nil
}

// mb reads a as a number of MB; false for auto, off and anything else.
func (a AutoMB) mb() (int, bool) {
	n, err := strconv.Atoi(strings.TrimSpace(string(a)))
	return n, err == nil
}

// MinMemoryLimitMB is the least memory_limit_mb, and the floor of its automatic value: Chrome's
// browser process and one renderer of an ordinary page.
const MinMemoryLimitMB = 1024

// MemoryLimit is the bound of each Chrome's whole process tree in MB (a memory cgroup per
// Chrome; 0: none): memory_limit_mb, or for "auto" 80% of the machine's memory (memTotal bytes)
// shared among the pool's Chromes, at least MinMemoryLimitMB. The remaining 20% keeps the
// service, the page cache and the kernel alive whatever the pages do. Unknown memory: none.
func (b Browser) MemoryLimit(memTotal int64) int {
	if n, ok := b.MemoryLimitMB.mb(); ok {
		return n
	}
	if b.MemoryLimitMB != AutoMBAuto || memTotal <= 0 {
		return 0
	}
	per := memTotal >> 20 * 8 / 10 / int64(max(1, b.PoolSize))
	return int(max(per, MinMemoryLimitMB))
}

// RendererLimit is each Chrome's bound on renderer processes: renderer_process_limit, or when
// 0 one per tab the Chrome keeps (renders_per_process + prewarm) and two to spare.
func (b Browser) RendererLimit() int {
	if b.RendererProcessLimit > 0 {
		return b.RendererProcessLimit
	}
	return b.RendersPerProcess + b.Prewarm + 2
}

// Browser isolation between renders (browser.isolation).
const (
	IsolationWipe    = "wipe"    // reused tabs, each alone in its context, wiped after every render
	IsolationContext = "context" // a fresh browser context and tab per render
)

// Values of metrics_auth.
const (
	MetricsAuto  = "auto"  // the admin token unless admin_listen is a loopback address
	MetricsToken = "token" // always the admin token
	MetricsOpen  = "open"  // never: for a scraper that cannot send a token, on a closed network
)

// MetricsNeedToken reports whether /metrics asks for the admin token under metrics_auth.
func (c *Config) MetricsNeedToken() bool {
	switch c.MetricsAuth {
	case MetricsOpen:
		return false
	case MetricsToken:
		return true
	}
	host, _, err := net.SplitHostPort(c.AdminListen)
	if err != nil {
		return true
	}
	if host == "localhost" {
		return false
	}
	ip, err := netip.ParseAddr(host)
	return err != nil || !ip.IsLoopback() // "" and 0.0.0.0 listen everywhere
}

// Log formats. LogAuto is console on a terminal and JSON otherwise (a pipe, a file, the journal),
// so that colour codes never reach a log collector.
const (
	LogAuto    = "auto"
	LogConsole = "console"
	LogJSON    = "json"
)

// Default returns the embedded defaults, the values example.toml shows.
// Every call returns a fresh copy that the caller may change.
func Default() *Config {
	return &Config{
		Listen:                 "127.0.0.1:8080",
		AdminListen:            "127.0.0.1:8081",
		AdminToken:             "",
		DataDir:                "./data",
		PublicURL:              "http://127.0.0.1:8080",
		ShutdownTimeoutSeconds: 30,
		MetricsAuth:            MetricsAuto,
		Browser: Browser{
			Path:                       "",
			PoolSize:                   2,
			RendersPerProcess:          4,
			RecycleAfter:               200,
			StartTimeoutSeconds:        20,
			Prewarm:                    2,
			Isolation:                  IsolationWipe,
			TabReuse:                   50,
			Sandbox:                    "auto",
			User:                       "auto",
			MemoryLimitMB:              AutoMBAuto,
			SlotWaitMs:                 2000,
			Nice:                       10,
			RenderDeadlineGraceSeconds: 10,
		},
		Network: Network{AllowPrivate: []string{}},
		Storage: Storage{FileTTLSeconds: 86400},
		Limits: Limits{MaxSourceBytes: 5242880, MaxOutputBytes: 52428800, BulkMaxItems: 50,
			RefusedPerAddressPerMinute: 60, RefusedPerKeyPerMinute: 60, MaxConnsPerAddress: 128},
		Webhooks: Webhooks{RetryDelaysSeconds: []int{10, 30, 120, 600, 1800, 3600}, TimeoutSeconds: 10},
		Log:      Log{Level: "info", Format: LogAuto},
		Blocking: Blocking{
			EasyList:    "/usr/share/chromium/extensions/ublock-origin/assets/thirdparties/easylist/easylist.txt",
			EasyPrivacy: "/usr/share/chromium/extensions/ublock-origin/assets/thirdparties/easylist/easyprivacy.txt",
			Autoconsent: DefaultAutoconsent,
		},
		Media: Media{FFmpegPath: ""},
		Plans: map[string]shotd.Plan{DefaultPlan: basePlan(DefaultPlan)},
	}
}

// basePlan is the embedded plans.default under another name: the base of every plan table, so
// a table only lists what differs.
func basePlan(name string) shotd.Plan {
	return shotd.Plan{
		Name:         name,
		MonthlyQuota: 1000,
		PlanLimits: shotd.PlanLimits{
			RequestsPerMinute:       60,
			StatusRequestsPerMinute: 600,
			Concurrency:             4,
			QueueLimit:              100,
			FailuresPerMinute:       30,
			FailuresPerDay:          100,
		},
		Features: slices.Clone(shotd.AllFeatures),
	}
}

// ShutdownTimeout is shutdown_timeout_seconds.
func (c *Config) ShutdownTimeout() time.Duration { return seconds(c.ShutdownTimeoutSeconds) }

// Plan returns the plan called name.
func (c *Config) Plan(name string) (shotd.Plan, bool) {
	p, ok := c.Plans[name]
	return p, ok
}

// StartTimeout is start_timeout_seconds.
func (b Browser) StartTimeout() time.Duration { return seconds(b.StartTimeoutSeconds) }

// SlotWait is slot_wait_ms.
func (b Browser) SlotWait() time.Duration { return time.Duration(b.SlotWaitMs) * time.Millisecond }

// RenderDeadlineGrace is render_deadline_grace_seconds.
func (b Browser) RenderDeadlineGrace() time.Duration {
	return seconds(b.RenderDeadlineGraceSeconds)
}

// AllowPrivatePrefixes returns allow_private as prefixes; a single address becomes a /32 or /128
// (IPv4-mapped IPv6 addresses are unmapped). Entries that do not parse are skipped: Validate
// refuses them, so after Validate every entry is here.
func (n Network) AllowPrivatePrefixes() []netip.Prefix {
	out := make([]netip.Prefix, 0, len(n.AllowPrivate))
	for _, s := range n.AllowPrivate {
		if p, err := parsePrefix(s); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// FileTTL is file_ttl_seconds.
func (s Storage) FileTTL() time.Duration { return seconds(s.FileTTLSeconds) }

// RetryDelays is retry_delays_seconds: the delay before attempt 2, 3, ...; after the last one
// the delivery fails.
func (w Webhooks) RetryDelays() []time.Duration {
	out := make([]time.Duration, len(w.RetryDelaysSeconds))
	for i, s := range w.RetryDelaysSeconds {
		out[i] = seconds(s)
	}
	return out
}

// Timeout is timeout_seconds: the limit of one delivery attempt.
func (w Webhooks) Timeout() time.Duration { return seconds(w.TimeoutSeconds) }

// ZerologLevel is level as a zerolog level (info when it does not parse; Validate refuses that).
func (l Log) ZerologLevel() zerolog.Level {
	if lv, ok := logLevels[l.Level]; ok {
		return lv
	}
	return zerolog.InfoLevel
}

var logLevels = map[string]zerolog.Level{
	"trace": zerolog.TraceLevel,
	"debug": zerolog.DebugLevel,
	"info":  zerolog.InfoLevel,
	"warn":  zerolog.WarnLevel,
	"error": zerolog.ErrorLevel,
}

func seconds(n int) time.Duration { return time.Duration(n) * time.Second }

// parsePrefix reads an address or a CIDR. Zones are refused: a prefix cannot carry one.
func parsePrefix(s string) (netip.Prefix, error) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	if a.Zone() != "" {
		return netip.Prefix{}, errZone
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}
