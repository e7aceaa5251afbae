package config

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/shotd/shotd"
)

// basicFile is the documented basic configuration file, verbatim: the keys operators'
// files already use, which must keep parsing to Default.
const basicFile = `
listen       = "127.0.0.1:8080"        # public API
admin_listen = "127.0.0.1:8081"        # admin API, dashboard, /metrics
admin_token  = ""                      # Bearer token for the admin API; empty: generated at first start and stored in data_dir
data_dir     = "./data"                # bbolt database and stored files
public_url   = "http://127.0.0.1:8080" # base of links in JSON results and documentation_url

[browser]
path      = ""      # Chrome or Chromium binary; empty: found on PATH (chromium, chromium-browser, google-chrome)
pool_size = 2       # Chrome processes kept running

[network]
# Addresses or CIDRs that the private-address guard lets through (for tests and trusted intranets).
# Everything private, loopback, link-local or otherwise internal is refused unless listed here.
allow_private = []

[storage]
file_ttl_seconds = 86400    # how long a stored result lives (expires_at)

[limits]
max_source_bytes = 5242880   # html / markdown / styles / scripts, each; larger: 413 content_too_large
max_output_bytes = 52428800  # a rendered file; larger: 413 content_too_large
bulk_max_items   = 50        # more: 400 invalid_request

[webhooks]
retry_delays_seconds = [10, 30, 120, 600, 1800, 3600]  # delay before attempt 2, 3, ...; then the delivery fails
timeout_seconds      = 10

# One table per plan. An account has exactly one plan.
[plans.default]
monthly_quota              = 1000
requests_per_minute        = 60
status_requests_per_minute = 600
concurrency                = 4
queue_limit                = 100
failures_per_minute        = 30
features                   = ["pdf", "video", "async", "bulk", "cache"]  # absent: all; [] : none
`

func TestDefaults(t *testing.T) {
	want := &Config{
		Listen: "127.0.0.1:8080", AdminListen: "127.0.0.1:8081", AdminToken: "", DataDir: "./data",
		PublicURL: "http://127.0.0.1:8080", ShutdownTimeoutSeconds: 30, MetricsAuth: "auto",
		Browser: Browser{Path: "", PoolSize: 2, RendersPerProcess: 4, RecycleAfter: 200,
			StartTimeoutSeconds: 20, Prewarm: 2, Isolation: "wipe", TabReuse: 50, Sandbox: "auto", User: "auto", MemoryLimitMB: "auto", SlotWaitMs: 2000, Nice: 10, RenderDeadlineGraceSeconds: 10},
		Network: Network{AllowPrivate: []string{}},
		Storage: Storage{FileTTLSeconds: 86400},
		Limits: Limits{MaxSourceBytes: 5242880, MaxOutputBytes: 52428800, BulkMaxItems: 50,
			RefusedPerAddressPerMinute: 60, RefusedPerKeyPerMinute: 60, MaxConnsPerAddress: 128},
		Webhooks: Webhooks{RetryDelaysSeconds: []int{10, 30, 120, 600, 1800, 3600}, TimeoutSeconds: 10},
		Log:      Log{Level: "info", Format: "auto"},
		Blocking: Blocking{EasyList: "/usr/share/chromium/extensions/ublock-origin/assets/thirdparties/easylist/easylist.txt",
			EasyPrivacy: "/usr/share/chromium/extensions/ublock-origin/assets/thirdparties/easylist/easyprivacy.txt",
			Autoconsent: "/usr/local/share/shotd/autoconsent/autoconsent.standalone.js"},
		Plans: map[string]shotd.Plan{"default": {Name: "default", MonthlyQuota: 1000,
			PlanLimits: shotd.PlanLimits{RequestsPerMinute: 60, StatusRequestsPerMinute: 600,
				Concurrency: 4, QueueLimit: 100, FailuresPerMinute: 30, FailuresPerDay: 100},
			Features: []string{"pdf", "video", "async", "bulk", "cache"}}},
	}
	tests := []struct {
		name string
		got  func(t *testing.T) *Config
	}{
		{"Default", func(*testing.T) *Config { return Default() }},
		{"Load without file", func(t *testing.T) *Config { return mustLoad(t, "", nil) }},
		{"basic file verbatim", func(t *testing.T) *Config { return mustParse(t, basicFile, nil) }},
		{"embedded example", func(t *testing.T) *Config { return mustParse(t, string(Example), nil) }},
		{"empty file", func(t *testing.T) *Config { return mustParse(t, "# nothing\n", nil) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.got(t); !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}
	if err := Default().Validate(); err != nil {
		t.Errorf("defaults do not validate: %v", err)
	}
}

func TestDefaultIsAFreshCopy(t *testing.T) {
	a := Default()
	a.Webhooks.RetryDelaysSeconds[0] = 99
	a.Plans["default"].Features[0] = "x"
	a.Plans["pro"] = shotd.Plan{}
	b := Default()
	if b.Webhooks.RetryDelaysSeconds[0] != 10 || b.Plans["default"].Features[0] != "pdf" || len(b.Plans) != 1 {
		t.Fatalf("Default shares state between calls: %+v", b)
	}
}

const fullFile = `
listen = "0.0.0.0:9000"
admin_listen = "127.0.0.1:9001"
admin_token = "s3cret-token-s3cret-token-s3cret-token"
data_dir = "/var/lib/shotd"
public_url = "https://shots.example.com/base/"
shutdown_timeout_seconds = 5
metrics_auth = "token"

[browser]
path = "/bin/sh"
pool_size = 8
renders_per_process = 2
recycle_after = 50
start_timeout_seconds = 7
prewarm = 1
isolation = "context"
tab_reuse = 9
sandbox = "off"
user = "self"
memory_limit_mb = 2048
slot_wait_ms = 0
nice = 0
render_deadline_grace_seconds = 3

[network]
allow_private = ["127.0.0.1", "10.0.0.0/8", "::1", "fd00::/8"]

[storage]
file_ttl_seconds = 3600

[limits]
max_source_bytes = 1000
max_output_bytes = 2000
bulk_max_items = 5
refused_per_address_per_minute = 0
refused_per_key_per_minute = 7
max_conns_per_address = 9

[webhooks]
retry_delays_seconds = [1, 2]
timeout_seconds = 4

[blocking]
autoconsent = ""

[log]
level = "debug"
format = "json"

[plans.default]
monthly_quota = 10
features = []

[plans.pro]
monthly_quota = 100000
requests_per_minute = 600
status_requests_per_minute = 6000
concurrency = 16
queue_limit = 1000
failures_per_minute = 300
failures_per_day = 1000
features = ["pdf", "cache"]

[plans.all-but-quota]
monthly_quota = 5
`

func fullConfig() *Config {
	return &Config{
		Listen: "0.0.0.0:9000", AdminListen: "127.0.0.1:9001", AdminToken: "s3cret-token-s3cret-token-s3cret-token",
		DataDir: "/var/lib/shotd", PublicURL: "https://shots.example.com/base", ShutdownTimeoutSeconds: 5, MetricsAuth: "token",
		Browser: Browser{Path: "/bin/sh", PoolSize: 8, RendersPerProcess: 2, RecycleAfter: 50,
			StartTimeoutSeconds: 7, Prewarm: 1, Isolation: "context", TabReuse: 9, Sandbox: "off", User: "self", MemoryLimitMB: "2048", SlotWaitMs: 0, Nice: 0, RenderDeadlineGraceSeconds: 3},
		Network: Network{AllowPrivate: []string{"127.0.0.1", "10.0.0.0/8", "::1", "fd00::/8"}},
		Storage: Storage{FileTTLSeconds: 3600},
		Limits: Limits{MaxSourceBytes: 1000, MaxOutputBytes: 2000, BulkMaxItems: 5,
			RefusedPerAddressPerMinute: 0, RefusedPerKeyPerMinute: 7, MaxConnsPerAddress: 9},
		Webhooks: Webhooks{RetryDelaysSeconds: []int{1, 2}, TimeoutSeconds: 4},
		Log:      Log{Level: "debug", Format: "json"},
		Blocking: Blocking{EasyList: "/usr/share/chromium/extensions/ublock-origin/assets/thirdparties/easylist/easylist.txt",
			EasyPrivacy: "/usr/share/chromium/extensions/ublock-origin/assets/thirdparties/easylist/easyprivacy.txt",
			Autoconsent: ""},
		Plans: map[string]shotd.Plan{
			"default": {Name: "default", MonthlyQuota: 10,
				PlanLimits: shotd.PlanLimits{RequestsPerMinute: 60, StatusRequestsPerMinute: 600,
					Concurrency: 4, QueueLimit: 100, FailuresPerMinute: 30, FailuresPerDay: 100},
				Features: []string{}},
			"pro": {Name: "pro", MonthlyQuota: 100000,
				PlanLimits: shotd.PlanLimits{RequestsPerMinute: 600, StatusRequestsPerMinute: 6000,
					Concurrency: 16, QueueLimit: 1000, FailuresPerMinute: 300, FailuresPerDay: 1000},
				Features: []string{"pdf", "cache"}},
			"all-but-quota": {Name: "all-but-quota", MonthlyQuota: 5,
				PlanLimits: shotd.PlanLimits{RequestsPerMinute: 60, StatusRequestsPerMinute: 600,
					Concurrency: 4, QueueLimit: 100, FailuresPerMinute: 30, FailuresPerDay: 100},
				Features: shotd.AllFeatures},
		},
	}
}

func TestFullFileRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shotd.toml")
	if err := os.WriteFile(path, []byte(fullFile), 0o600); err != nil {
		t.Fatal(err)
	}
	got := mustLoad(t, path, nil)
	if want := fullConfig(); !reflect.DeepEqual(got, want) {
		t.Fatalf("load:\ngot  %+v\nwant %+v", got, want)
	}
	data, err := got.TOML()
	if err != nil {
		t.Fatal(err)
	}
	again := mustParse(t, string(data), nil)
	if !reflect.DeepEqual(again, got) {
		t.Fatalf("TOML() does not read back equal:\n%s\ngot  %+v\nwant %+v", data, again, got)
	}
	if !strings.Contains(string(data), "features = []") {
		t.Errorf("an empty features list must be written as [] (absent means all):\n%s", data)
	}
}

func TestPlans(t *testing.T) {
	tests := []struct {
		name string
		file string
		plan string
		want shotd.Plan
	}{
		{"features absent means all", "[plans.a]\nconcurrency = 1\n", "a",
			withPlan(func(p *shotd.Plan) { p.Name = "a"; p.Concurrency = 1 })},
		{"features empty means none", "[plans.a]\nfeatures = []\n", "a",
			withPlan(func(p *shotd.Plan) { p.Name = "a"; p.Features = []string{} })},
		{"features listed", "[plans.a]\nfeatures = [\"bulk\"]\n", "a",
			withPlan(func(p *shotd.Plan) { p.Name = "a"; p.Features = []string{"bulk"} })},
		{"default kept when another plan is added", "[plans.a]\n", "default", withPlan(nil)},
		{"partial default takes embedded values", "[plans.default]\nqueue_limit = 7\n", "default",
			withPlan(func(p *shotd.Plan) { p.QueueLimit = 7 })},
		{"quoted table key", "[plans.\"team-2\"]\nmonthly_quota = 3\n", "team-2",
			withPlan(func(p *shotd.Plan) { p.Name = "team-2"; p.MonthlyQuota = 3 })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustParse(t, tt.file, nil)
			got, ok := c.Plan(tt.plan)
			if !ok {
				t.Fatalf("plan %q missing: %v", tt.plan, c.Plans)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
			if got.Features == nil {
				t.Fatal("features must never be nil after Load")
			}
		})
	}
}

func withPlan(fn func(*shotd.Plan)) shotd.Plan {
	p := Default().Plans["default"]
	if fn != nil {
		fn(&p)
	}
	return p
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name string
		file string
		want []string // each must appear in the error
	}{
		{"unknown top-level key", "listne = \"x\"\n", []string{"line 1", "listne: unknown key"}},
		{"unknown key in a section", "\n[browser]\npoolsize = 3\n", []string{"line 3", "browser.poolsize: unknown key"}},
		{"unknown section", "[brwoser]\npool_size = 3\n", []string{"brwoser", "unknown key"}},
		{"unknown key in a plan", "[plans.pro]\nmonthly_qouta = 1\n", []string{"line 2", "plans.pro.monthly_qouta: unknown key"}},
		{"every unknown key at once", "a = 1\n[log]\nb = 2\n", []string{"line 1: a: unknown key", "line 3: log.b: unknown key"}},
		{"plans name Plan fields only", "[plans.pro]\nname = \"x\"\n", []string{"plans.pro.name: unknown key"}},
		{"string for an int", "[browser]\npool_size = \"two\"\n", []string{"line 2", "browser.pool_size", "got a TOML string, want an integer"}},
		{"float for a memory limit", "[browser]\nmemory_limit_mb = 1.5\n", []string{"browser.memory_limit_mb", `number of MB, got "1.5"`}},
		{"int for a string", "listen = 8080\n", []string{"line 1", "listen", "got a TOML integer, want a string"}},
		{"float for an int", "[limits]\nbulk_max_items = 1.5\n", []string{"line 2", "limits.bulk_max_items"}},
		{"string for a list", "[network]\nallow_private = \"10.0.0.0/8\"\n", []string{"network.allow_private"}},
		{"wrong item type in a list", "[webhooks]\nretry_delays_seconds = [1, \"2\"]\n", []string{"webhooks.retry_delays_seconds"}},
		{"wrong type in a plan", "[plans.pro]\nconcurrency = \"x\"\n", []string{"line 2", "plans.pro.concurrency", "want an integer"}},
		{"a section as a value", "browser = 1\n", []string{"line 1", "browser"}},
		{"syntax error", "listen = = 1\n", []string{"line 1"}},
		{"unterminated string", "\n\nlisten = \"x\n", []string{"line 3"}},
		{"duplicate key", "listen = \"a:1\"\nlisten = \"b:2\"\n", []string{"line 2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.file), nil)
			if err == nil {
				t.Fatalf("accepted: %+v", c)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestLoadNamesTheFile(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(bad, []byte("[browser]\npool_size = 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		want []string
	}{
		{"missing file", filepath.Join(dir, "nope.toml"), []string{"nope.toml", "no such file"}},
		{"invalid value", bad, []string{"bad.toml", "browser.pool_size: must be between 1 and 64, got 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(tt.path, nil)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestValidate(t *testing.T) {
	notExecutable := filepath.Join(t.TempDir(), "chromium")
	if err := os.WriteFile(notExecutable, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		change func(c *Config)
		want   string // "" = valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"listen without port", func(c *Config) { c.Listen = "127.0.0.1" }, `listen: must be host:port, got "127.0.0.1"`},
		{"listen empty", func(c *Config) { c.Listen = "" }, `listen: must be host:port, got ""`},
		{"listen port not a number", func(c *Config) { c.Listen = "127.0.0.1:http" }, `listen: port must be a number between 0 and 65535, got "http"`},
		{"listen port too large", func(c *Config) { c.Listen = "127.0.0.1:65536" }, "listen: port must be a number between 0 and 65535"},
		{"listen all interfaces", func(c *Config) { c.Listen = ":8080" }, ""},
		{"listen IPv6", func(c *Config) { c.Listen = "[::1]:8080" }, ""},
		{"listen host name", func(c *Config) { c.Listen = "localhost:8080" }, ""},
		{"admin_listen bad", func(c *Config) { c.AdminListen = "x" }, `admin_listen: must be host:port, got "x"`},
		{"admin_listen equal to listen", func(c *Config) { c.AdminListen = c.Listen }, "admin_listen: must differ from listen"},
		{"both on random ports", func(c *Config) { c.Listen, c.AdminListen = "127.0.0.1:0", "127.0.0.1:0" }, ""},
		{"admin_token with space", func(c *Config) { c.AdminToken = "a b" }, "admin_token: must not contain spaces"},
		{"admin_token with newline", func(c *Config) { c.AdminToken = "ab\n" }, "admin_token: must not contain spaces or control characters"},
		// Issue 19: a short token guards every account and key.
		{"admin_token short", func(c *Config) { c.AdminToken = strings.Repeat("t", MinAdminToken-1) }, "admin_token: must be at least 32 bytes"},
		{"data_dir empty", func(c *Config) { c.DataDir = " " }, "data_dir: must not be empty"},
		{"public_url ftp", func(c *Config) { c.PublicURL = "ftp://example.com" }, `public_url: scheme must be http or https, got "ftp://example.com"`},
		{"public_url relative", func(c *Config) { c.PublicURL = "/shots" }, "public_url: scheme must be http or https"},
		{"public_url empty", func(c *Config) { c.PublicURL = "" }, `public_url: must be an http:// or https:// URL, got ""`},
		{"public_url no host", func(c *Config) { c.PublicURL = "https://" }, "public_url: must name a host"},
		{"public_url with query", func(c *Config) { c.PublicURL = "https://a.example?x=1" }, "public_url: must not have user info, a query or a fragment"},
		{"public_url with fragment", func(c *Config) { c.PublicURL = "https://a.example#x" }, "public_url: must not have user info, a query or a fragment"},
		{"public_url with user", func(c *Config) { c.PublicURL = "https://u:p@a.example" }, "public_url: must not have user info"},
		{"public_url unparsable", func(c *Config) { c.PublicURL = "http://a b/" }, "public_url: must be an http:// or https:// URL"},
		{"public_url with path", func(c *Config) { c.PublicURL = "https://a.example/shotd/" }, ""},
		{"shutdown_timeout_seconds zero", func(c *Config) { c.ShutdownTimeoutSeconds = 0 }, "shutdown_timeout_seconds: must be between 1 and 3600, got 0"},
		{"blocking.autoconsent empty disables", func(c *Config) { c.Blocking.Autoconsent = "" }, ""},
		{"blocking.autoconsent missing file is not refused", func(c *Config) { c.Blocking.Autoconsent = "/nonexistent/autoconsent.js" }, ""},
		{"blocking.autoconsent spaces", func(c *Config) { c.Blocking.Autoconsent = " /x.js" }, `blocking.autoconsent: must be the path of autoconsent.standalone.js`},
		{"blocking.autoconsent blank", func(c *Config) { c.Blocking.Autoconsent = "  " }, `blocking.autoconsent: must be the path`},
		{"blocking.easylist empty", func(c *Config) { c.Blocking.EasyList = "" }, "blocking.easylist: must name a filter list file"},
		{"browser.path missing", func(c *Config) { c.Browser.Path = "/nonexistent/chromium" }, `browser.path: "/nonexistent/chromium" is not an executable file`},
		{"browser.path not executable", func(c *Config) { c.Browser.Path = notExecutable }, "browser.path:"},
		{"browser.path a directory", func(c *Config) { c.Browser.Path = "/" }, `browser.path: "/" is not an executable file`},
		{"browser.path on PATH", func(c *Config) { c.Browser.Path = "sh" }, ""},
		{"browser.pool_size zero", func(c *Config) { c.Browser.PoolSize = 0; c.Browser.Prewarm = 0 }, "browser.pool_size: must be between 1 and 64, got 0"},
		{"browser.pool_size too large", func(c *Config) { c.Browser.PoolSize = 65 }, "browser.pool_size: must be between 1 and 64, got 65"},
		{"browser.renders_per_process zero", func(c *Config) { c.Browser.RendersPerProcess = 0 }, "browser.renders_per_process: must be between 1 and 64, got 0"},
		{"browser.recycle_after zero", func(c *Config) { c.Browser.RecycleAfter = 0 }, "browser.recycle_after: must be between 1 and 1000000, got 0"},
		{"browser.start_timeout_seconds zero", func(c *Config) { c.Browser.StartTimeoutSeconds = 0 }, "browser.start_timeout_seconds: must be between 1 and 300, got 0"},
		{"browser.prewarm negative", func(c *Config) { c.Browser.Prewarm = -1 }, "browser.prewarm: must be between 0 and 16, got -1"},
		{"browser.prewarm above 16", func(c *Config) { c.Browser.Prewarm = 17 }, "browser.prewarm: must be between 0 and 16, got 17"},
		{"browser.prewarm zero", func(c *Config) { c.Browser.Prewarm = 0 }, ""},
		{"browser.isolation unknown", func(c *Config) { c.Browser.Isolation = "none" }, `browser.isolation: must be "wipe" or "context", got "none"`},
		{"browser.isolation context", func(c *Config) { c.Browser.Isolation = "context" }, ""},
		{"browser.sandbox unknown", func(c *Config) { c.Browser.Sandbox = "yes" }, `browser.sandbox: must be "auto", "on" or "off", got "yes"`},
		{"browser.user empty", func(c *Config) { c.Browser.User = "" }, `browser.user: must be "auto", "self" or a user name, got ""`},
		{"browser.tab_reuse zero", func(c *Config) { c.Browser.TabReuse = 0 }, "browser.tab_reuse: must be between 1 and 100000, got 0"},
		{"browser.js_heap_mb too small", func(c *Config) { c.Browser.JSHeapMB = 10 }, "browser.js_heap_mb: must be between 64 and 65536, got 10"},
		{"browser.memory_limit_mb too small", func(c *Config) { c.Browser.MemoryLimitMB = "100" }, "browser.memory_limit_mb: must be between 1024 and 4194304, got 100"},
		{"browser.memory_limit_mb a word", func(c *Config) { c.Browser.MemoryLimitMB = "lots" }, `browser.memory_limit_mb: must be "auto", "off" or a number of MB, got "lots"`},
		{"browser.memory_limit_mb off", func(c *Config) { c.Browser.MemoryLimitMB = "off" }, ""},
		{"browser.memory_limit_mb zero", func(c *Config) { c.Browser.MemoryLimitMB = "0" }, ""},
		{"browser.renderer_process_limit negative", func(c *Config) { c.Browser.RendererProcessLimit = -1 }, "browser.renderer_process_limit: must be between 0 and 1000, got -1"},
		{"browser.nice negative", func(c *Config) { c.Browser.Nice = -1 }, "browser.nice: must be between 0 and 19, got -1"},
		{"browser.nice past 19", func(c *Config) { c.Browser.Nice = 20 }, "browser.nice: must be between 0 and 19, got 20"},
		{"browser.slot_wait_ms negative", func(c *Config) { c.Browser.SlotWaitMs = -1 }, "browser.slot_wait_ms: must be between 0 and 600000, got -1"},
		{"browser.render_deadline_grace_seconds negative", func(c *Config) { c.Browser.RenderDeadlineGraceSeconds = -1 }, "browser.render_deadline_grace_seconds: must be between 0 and 600, got -1"},
		{"allow_private garbage", func(c *Config) { c.Network.AllowPrivate = []string{"10.0.0.0/8", "intranet"} }, `network.allow_private[1]: "intranet" is not an IP address or CIDR`},
		{"allow_private bad mask", func(c *Config) { c.Network.AllowPrivate = []string{"10.0.0.0/33"} }, `network.allow_private[0]: "10.0.0.0/33" is not an IP address or CIDR`},
		{"allow_private zone", func(c *Config) { c.Network.AllowPrivate = []string{"fe80::1%eth0"} }, "network.allow_private[0]"},
		{"allow_private spaces", func(c *Config) { c.Network.AllowPrivate = []string{" 10.0.0.1"} }, "network.allow_private[0]"},
		{"allow_private host name", func(c *Config) { c.Network.AllowPrivate = []string{"localhost"} }, "network.allow_private[0]"},
		{"allow_private valid", func(c *Config) { c.Network.AllowPrivate = []string{"127.0.0.1", "::1", "192.168.0.0/16"} }, ""},
		{"storage.file_ttl_seconds zero", func(c *Config) { c.Storage.FileTTLSeconds = 0 }, "storage.file_ttl_seconds: must be between 1 and 315360000, got 0"},
		// Past ten years the duration would overflow into a negative lifetime: every file born expired.
		{"storage.file_ttl_seconds past a duration", func(c *Config) { c.Storage.FileTTLSeconds = 10_000_000_000 }, "storage.file_ttl_seconds: must be between 1 and 315360000"},
		{"limits.max_source_bytes zero", func(c *Config) { c.Limits.MaxSourceBytes = 0 }, "limits.max_source_bytes: must be at least 1, got 0"},
		{"limits.max_output_bytes negative", func(c *Config) { c.Limits.MaxOutputBytes = -5 }, "limits.max_output_bytes: must be at least 1, got -5"},
		{"limits.bulk_max_items zero", func(c *Config) { c.Limits.BulkMaxItems = 0 }, "limits.bulk_max_items: must be between 1 and 10000, got 0"},
		{"webhooks.retry_delays_seconds zero item", func(c *Config) { c.Webhooks.RetryDelaysSeconds = []int{10, 0} }, "webhooks.retry_delays_seconds[1]: must be between 1 and 604800, got 0"},
		{"webhooks.retry_delays_seconds empty", func(c *Config) { c.Webhooks.RetryDelaysSeconds = []int{} }, ""},
		{"webhooks.timeout_seconds zero", func(c *Config) { c.Webhooks.TimeoutSeconds = 0 }, "webhooks.timeout_seconds: must be between 1 and 300, got 0"},
		{"log.level unknown", func(c *Config) { c.Log.Level = "verbose" }, `log.level: must be one of trace, debug, info, warn, error, got "verbose"`},
		{"log.format unknown", func(c *Config) { c.Log.Format = "text" }, `log.format: must be "auto", "console" or "json", got "text"`},
		{"no default plan", func(c *Config) { delete(c.Plans, "default") }, "plans.default: must exist"},
		{"plan name invalid", func(c *Config) { c.Plans["Pro Plan"] = withPlan(func(p *shotd.Plan) { p.Name = "" }) }, "plans.Pro Plan: plan name must be"},
		{"plan name differs", func(c *Config) { c.Plans["pro"] = withPlan(nil) }, `plans.pro: name "default" differs from the table key`},
		{"plan name filled", func(c *Config) { c.Plans["pro"] = withPlan(func(p *shotd.Plan) { p.Name = "" }) }, ""},
		{"plan monthly_quota zero", func(c *Config) { setDefaultPlan(c, func(p *shotd.Plan) { p.MonthlyQuota = 0 }) }, "plans.default.monthly_quota: must be at least 1, got 0"},
		{"plan requests_per_minute zero", func(c *Config) { setDefaultPlan(c, func(p *shotd.Plan) { p.RequestsPerMinute = 0 }) }, "plans.default.requests_per_minute: must be at least 1, got 0"},
		{"plan status_requests_per_minute zero", func(c *Config) { setDefaultPlan(c, func(p *shotd.Plan) { p.StatusRequestsPerMinute = 0 }) }, "plans.default.status_requests_per_minute: must be at least 1, got 0"},
		{"plan concurrency negative", func(c *Config) { setDefaultPlan(c, func(p *shotd.Plan) { p.Concurrency = -1 }) }, "plans.default.concurrency: must be at least 1, got -1"},
		{"plan queue_limit zero", func(c *Config) { setDefaultPlan(c, func(p *shotd.Plan) { p.QueueLimit = 0 }) }, "plans.default.queue_limit: must be at least 1, got 0"},
		{"plan failures_per_minute zero", func(c *Config) { setDefaultPlan(c, func(p *shotd.Plan) { p.FailuresPerMinute = 0 }) }, "plans.default.failures_per_minute: must be at least 1, got 0"},
		{"plan failures_per_day zero", func(c *Config) { setDefaultPlan(c, func(p *shotd.Plan) { p.FailuresPerDay = 0 }) }, ""},
		{"plan failures_per_day negative", func(c *Config) { setDefaultPlan(c, func(p *shotd.Plan) { p.FailuresPerDay = -1 }) }, "plans.default.failures_per_day: must be between 0 and 100000000, got -1"},
		{"metrics_auth unknown", func(c *Config) { c.MetricsAuth = "yes" }, `metrics_auth: must be "auto", "token" or "open", got "yes"`},
		{"refused_per_address_per_minute negative", func(c *Config) { c.Limits.RefusedPerAddressPerMinute = -1 }, "limits.refused_per_address_per_minute: must be between 0 and 1000000, got -1"},
		{"max_conns_per_address off", func(c *Config) { c.Limits.MaxConnsPerAddress = 0 }, ""},
		{"service_memory_mb", func(c *Config) { c.Limits.ServiceMemoryMB = 256 }, ""},
		{"service_memory_mb too small", func(c *Config) { c.Limits.ServiceMemoryMB = 32 }, "limits.service_memory_mb: must be 0 (none) or between 64 and 1048576, got 32"},
		{"service_memory_mb negative", func(c *Config) { c.Limits.ServiceMemoryMB = -1 }, "limits.service_memory_mb: must be 0 (none) or between 64 and 1048576, got -1"},
		{"plan unknown feature", func(c *Config) { setDefaultPlan(c, func(p *shotd.Plan) { p.Features = []string{"pdf", "PNG"} }) }, `plans.default.features[1]: unknown feature "PNG", want one of pdf, video, async, bulk, cache`},
		{"plan duplicate feature", func(c *Config) {
			setDefaultPlan(c, func(p *shotd.Plan) { p.Features = []string{"pdf", "bulk", "pdf"} })
		}, `plans.default.features[2]: "pdf" is listed twice`},
		{"plan no features", func(c *Config) { setDefaultPlan(c, func(p *shotd.Plan) { p.Features = []string{} }) }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			tt.change(c)
			err := c.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted, want %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not contain %q", err, tt.want)
			}
			var ce *Error
			if !errors.As(err, &ce) || len(ce.Problems) != 1 {
				t.Fatalf("want one problem as *Error, got %#v", err)
			}
		})
	}
}

func setDefaultPlan(c *Config, fn func(*shotd.Plan)) {
	p := c.Plans["default"]
	fn(&p)
	c.Plans["default"] = p
}

func TestValidateListsEveryProblem(t *testing.T) {
	c := Default()
	c.Browser.PoolSize = 0
	c.Limits.BulkMaxItems = 0
	c.Log.Format = "xml"
	c.Browser.Prewarm = 99
	err := c.Validate()
	var ce *Error
	if !errors.As(err, &ce) || len(ce.Problems) != 4 { // pool_size, prewarm, bulk, format
		t.Fatalf("want 4 problems, got %v", err)
	}
}

func TestValidateNormalizes(t *testing.T) {
	c := Default()
	c.PublicURL = "https://shots.example.com/x//"
	c.Plans["pro"] = shotd.Plan{MonthlyQuota: 1,
		PlanLimits: shotd.PlanLimits{RequestsPerMinute: 1, StatusRequestsPerMinute: 1, Concurrency: 1,
			QueueLimit: 1, FailuresPerMinute: 1}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.PublicURL != "https://shots.example.com/x" {
		t.Errorf("public_url = %q, want the trailing slashes gone", c.PublicURL)
	}
	if c.Plans["pro"].Name != "pro" {
		t.Errorf("plan name = %q, want it filled from the key", c.Plans["pro"].Name)
	}
}

func TestEnvOverrides(t *testing.T) {
	tests := []struct {
		name  string
		file  string
		env   []string
		check func(c *Config) bool
		err   string // "" = must load
	}{
		{"section int", "", []string{"SHOTD_BROWSER_POOL_SIZE=5"},
			func(c *Config) bool { return c.Browser.PoolSize == 5 }, ""},
		{"env beats file", "[browser]\npool_size = 3\n", []string{"SHOTD_BROWSER_POOL_SIZE=6"},
			func(c *Config) bool { return c.Browser.PoolSize == 6 }, ""},
		{"file kept without env", "[browser]\npool_size = 3\n", nil,
			func(c *Config) bool { return c.Browser.PoolSize == 3 }, ""},
		{"top-level keys", "", []string{"SHOTD_LISTEN=127.0.0.1:9000", "SHOTD_ADMIN_LISTEN=127.0.0.1:9001",
			"SHOTD_ADMIN_TOKEN=tok-tok-tok-tok-tok-tok-tok-tok-tok", "SHOTD_DATA_DIR=/tmp/x", "SHOTD_PUBLIC_URL=https://a.example/",
			"SHOTD_SHUTDOWN_TIMEOUT_SECONDS=9"},
			func(c *Config) bool {
				return c.Listen == "127.0.0.1:9000" && c.AdminListen == "127.0.0.1:9001" && c.AdminToken == "tok-tok-tok-tok-tok-tok-tok-tok-tok" &&
					c.DataDir == "/tmp/x" && c.PublicURL == "https://a.example" && c.ShutdownTimeoutSeconds == 9
			}, ""},
		{"string in section", "", []string{"SHOTD_BROWSER_PATH=sh", "SHOTD_LOG_FORMAT=json", "SHOTD_LOG_LEVEL=warn"},
			func(c *Config) bool { return c.Browser.Path == "sh" && c.Log.Format == "json" && c.Log.Level == "warn" }, ""},
		{"string list", "", []string{"SHOTD_NETWORK_ALLOW_PRIVATE=127.0.0.1, 10.0.0.0/8"},
			func(c *Config) bool {
				return reflect.DeepEqual(c.Network.AllowPrivate, []string{"127.0.0.1", "10.0.0.0/8"})
			}, ""},
		{"empty list", "[network]\nallow_private = [\"127.0.0.1\"]\n", []string{"SHOTD_NETWORK_ALLOW_PRIVATE="},
			func(c *Config) bool { return len(c.Network.AllowPrivate) == 0 && c.Network.AllowPrivate != nil }, ""},
		{"memory limit", "", []string{"SHOTD_BROWSER_MEMORY_LIMIT_MB=off"},
			func(c *Config) bool { return c.Browser.MemoryLimitMB == AutoMBOff }, ""},
		{"memory limit in the file as a string", "[browser]\nmemory_limit_mb = \"3000\"\n", nil,
			func(c *Config) bool { return c.Browser.MemoryLimit(0) == 3000 }, ""},
		{"autoconsent path", "", []string{"SHOTD_BLOCKING_AUTOCONSENT=/opt/ac.js"},
			func(c *Config) bool { return c.Blocking.Autoconsent == "/opt/ac.js" }, ""},
		{"autoconsent disabled", "", []string{"SHOTD_BLOCKING_AUTOCONSENT="},
			func(c *Config) bool { return c.Blocking.Autoconsent == "" }, ""},
		{"int list", "", []string{"SHOTD_WEBHOOKS_RETRY_DELAYS_SECONDS=1,2,3"},
			func(c *Config) bool { return reflect.DeepEqual(c.Webhooks.RetryDelaysSeconds, []int{1, 2, 3}) }, ""},
		{"later duplicate wins", "", []string{"SHOTD_LIMITS_BULK_MAX_ITEMS=7", "SHOTD_LIMITS_BULK_MAX_ITEMS=8"},
			func(c *Config) bool { return c.Limits.BulkMaxItems == 8 }, ""},
		{"other variables ignored", "", []string{"PATH=/bin", "SHOTD_E2E_TARGET=x", "SHOTD_CONFIG=/etc/shotd.toml", "NOEQUALS"},
			func(c *Config) bool { return reflect.DeepEqual(c, Default()) }, ""},
		{"plan value", "", []string{"SHOTD_PLANS_DEFAULT_MONTHLY_QUOTA=5000", "SHOTD_PLANS_DEFAULT_STATUS_REQUESTS_PER_MINUTE=7",
			"SHOTD_PLANS_DEFAULT_REQUESTS_PER_MINUTE=8"},
			func(c *Config) bool {
				p := c.Plans["default"]
				return p.MonthlyQuota == 5000 && p.StatusRequestsPerMinute == 7 && p.RequestsPerMinute == 8
			}, ""},
		{"plan from file matched case-insensitively", "[plans.pro_max]\n", []string{"SHOTD_PLANS_PRO_MAX_CONCURRENCY=9"},
			func(c *Config) bool { return c.Plans["pro_max"].Concurrency == 9 && len(c.Plans) == 2 }, ""},
		{"new plan from env", "", []string{"SHOTD_PLANS_TEAM_FEATURES=pdf,bulk"},
			func(c *Config) bool {
				p := c.Plans["team"]
				return p.Name == "team" && reflect.DeepEqual(p.Features, []string{"pdf", "bulk"}) && p.MonthlyQuota == 1000
			}, ""},
		{"plan features none", "", []string{"SHOTD_PLANS_DEFAULT_FEATURES="},
			func(c *Config) bool { f := c.Plans["default"].Features; return f != nil && len(f) == 0 }, ""},
		{"not an integer", "", []string{"SHOTD_BROWSER_POOL_SIZE=two"}, nil,
			`SHOTD_BROWSER_POOL_SIZE: browser.pool_size: not an integer: "two"`},
		{"bad list item", "", []string{"SHOTD_WEBHOOKS_RETRY_DELAYS_SECONDS=1,x"}, nil,
			`SHOTD_WEBHOOKS_RETRY_DELAYS_SECONDS: webhooks.retry_delays_seconds: item 2: not an integer: "x"`},
		{"unknown key under a section", "", []string{"SHOTD_BROWSER_POOLSIZE=2"}, nil,
			`SHOTD_BROWSER_POOLSIZE: no key "poolsize" in [browser]`},
		{"unknown plan key", "", []string{"SHOTD_PLANS_DEFAULT_QUOTA=2"}, nil,
			"SHOTD_PLANS_DEFAULT_QUOTA: no plan key in the name"},
		{"plan not an integer", "", []string{"SHOTD_PLANS_DEFAULT_CONCURRENCY=many"}, nil,
			`SHOTD_PLANS_DEFAULT_CONCURRENCY: plans.default.concurrency: not an integer: "many"`},
		{"env values are validated", "", []string{"SHOTD_BROWSER_POOL_SIZE=0", "SHOTD_BROWSER_PREWARM=0"}, nil,
			"browser.pool_size: must be between 1 and 64, got 0"},
		{"env plan values are validated", "", []string{"SHOTD_PLANS_DEFAULT_FEATURES=pdf,gif"}, nil,
			`plans.default.features[1]: unknown feature "gif"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.file), tt.env)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(c) {
				t.Fatalf("override not applied: %+v", c)
			}
		})
	}
}

func TestHelpers(t *testing.T) {
	c := mustParse(t, fullFile, nil)
	tests := []struct {
		name string
		got  any
		want any
	}{
		{"RetryDelays", c.Webhooks.RetryDelays(), []time.Duration{time.Second, 2 * time.Second}},
		{"Default RetryDelays", Default().Webhooks.RetryDelays(), []time.Duration{10 * time.Second, 30 * time.Second,
			2 * time.Minute, 10 * time.Minute, 30 * time.Minute, time.Hour}},
		{"Webhooks.Timeout", c.Webhooks.Timeout(), 4 * time.Second},
		{"ShutdownTimeout", c.ShutdownTimeout(), 5 * time.Second},
		{"StartTimeout", c.Browser.StartTimeout(), 7 * time.Second},
		{"SlotWait", Default().Browser.SlotWait(), 2 * time.Second},
		{"RenderDeadlineGrace", c.Browser.RenderDeadlineGrace(), 3 * time.Second},
		{"FileTTL", Default().Storage.FileTTL(), 24 * time.Hour},
		{"AllowPrivatePrefixes", c.Network.AllowPrivatePrefixes(), []netip.Prefix{
			netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("10.0.0.0/8"),
			netip.MustParsePrefix("::1/128"), netip.MustParsePrefix("fd00::/8")}},
		{"AllowPrivatePrefixes masks and unmaps", Network{AllowPrivate: []string{"10.1.2.3/8", "::ffff:127.0.0.1"}}.AllowPrivatePrefixes(),
			[]netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("127.0.0.1/32")}},
		{"AllowPrivatePrefixes empty", Default().Network.AllowPrivatePrefixes(), []netip.Prefix{}},
		{"ZerologLevel", c.Log.ZerologLevel(), zerolog.DebugLevel},
		{"ZerologLevel default", Default().Log.ZerologLevel(), zerolog.InfoLevel},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !reflect.DeepEqual(tt.got, tt.want) {
				t.Fatalf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
}

func mustParse(t *testing.T, doc string, env []string) *Config {
	t.Helper()
	c, err := Parse([]byte(doc), env)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustLoad(t *testing.T, path string, env []string) *Config {
	t.Helper()
	c, err := Load(path, env)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestBrowserMemory(t *testing.T) {
	const gb = int64(1) << 30
	tests := []struct {
		name     string
		b        Browser
		mem      int64
		heap     int
		renderer int
	}{
		{"defaults on 24 GB", Default().Browser, 24 * gb, 1536, 8},
		{"small machine floors at 256 MB", Default().Browser, 2 * gb, 256, 8},
		{"large machine caps at 4 GB", Browser{PoolSize: 1, RendersPerProcess: 1}, 64 * gb, 4096, 3},
		{"unknown memory", Default().Browser, 0, 1024, 8},
		{"configured", Browser{JSHeapMB: 700, RendererProcessLimit: 5, PoolSize: 2, RendersPerProcess: 4}, 24 * gb, 700, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.b.HeapMB(tt.mem); got != tt.heap {
				t.Errorf("HeapMB = %d, want %d", got, tt.heap)
			}
			if got := tt.b.RendererLimit(); got != tt.renderer {
				t.Errorf("RendererLimit = %d, want %d", got, tt.renderer)
			}
		})
	}
}

func TestMemoryLimit(t *testing.T) {
	const gb = int64(1) << 30
	auto := Default().Browser
	tests := []struct {
		name  string
		limit AutoMB
		pool  int
		mem   int64
		want  int
	}{
		{"auto: 80% of 24 GB over 2 Chromes", "auto", 2, 24 * gb, 9830},
		{"auto: one Chrome", "auto", 1, 8 * gb, 6553},
		{"auto floors at 1024 MB", "auto", 16, 8 * gb, MinMemoryLimitMB},
		{"auto with unknown memory: none", "auto", 2, 0, 0},
		{"off", "off", 2, 24 * gb, 0},
		{"zero", "0", 2, 24 * gb, 0},
		{"configured", "1536", 2, 24 * gb, 1536},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := auto
			b.MemoryLimitMB, b.PoolSize = tt.limit, tt.pool
			if got := b.MemoryLimit(tt.mem); got != tt.want {
				t.Errorf("MemoryLimit = %d, want %d", got, tt.want)
			}
		})
	}
}

// TestUnknownEnv: a SHOTD_ variable that names no key is listed for serve's warning; known keys,
// plans and other prefixes are not.
func TestUnknownEnv(t *testing.T) {
	got := UnknownEnv([]string{"SHOTD_DATADIR=x", "SHOTD_DATA_DIR=y", "SHOTD_BROWSER_POOL_SIZE=2",
		"SHOTD_PLANS_PRO_MONTHLY_QUOTA=5", "HOME=/root", "SHOTD_STORAGE_S3_BUCKET=b", "SHOTD_NOPE"})
	if len(got) != 1 || got[0] != "SHOTD_DATADIR" {
		t.Errorf("UnknownEnv = %q, want [SHOTD_DATADIR]", got)
	}
}

// TestApplyServiceMemory: limits.service_memory_mb becomes the Go runtime's soft memory limit;
// 0 leaves the limit in force as it is.
func TestApplyServiceMemory(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	if prev := (Limits{ServiceMemoryMB: 256}).ApplyServiceMemory(); prev != before {
		t.Errorf("ApplyServiceMemory returned %d, the limit before was %d", prev, before)
	}
	if got := debug.SetMemoryLimit(-1); got != 256<<20 {
		t.Fatalf("soft memory limit %d, want 256 MB", got)
	}
	Limits{}.ApplyServiceMemory()
	if got := debug.SetMemoryLimit(-1); got != 256<<20 {
		t.Fatalf("0 changed the limit to %d", got)
	}
}
