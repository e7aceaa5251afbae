package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/shotd/shotd"
)

// Error lists every problem found at once, so an operator fixes a file in one go. Each problem
// starts with the key it is about.
type Error struct {
	Problems []error
}

func (e *Error) Error() string {
	msgs := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		msgs[i] = p.Error()
	}
	return strings.Join(msgs, "; ")
}

// Unwrap gives errors.Is and errors.As every problem.
func (e *Error) Unwrap() []error { return e.Problems }

var errZone = errors.New("an address with a zone cannot be a prefix")

var planName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// Validate checks every key and returns an *Error listing all problems, each as
// "key: problem". It also normalizes: public_url loses its trailing slash and a plan without a
// Name gets its key.
// MinAdminToken is the shortest admin_token accepted.
const MinAdminToken = 32

func (c *Config) Validate() error {
	v := &validator{}

	v.listen("listen", c.Listen)
	v.listen("admin_listen", c.AdminListen)
	if c.Listen != "" && c.Listen == c.AdminListen && !strings.HasSuffix(c.Listen, ":0") {
		v.addf("admin_listen", "must differ from listen, both are %q", c.Listen)
	}
	switch {
	case c.AdminTokenFile != "" && c.AdminToken != "":
		v.addf("admin_token_file", "give admin_token or admin_token_file, not both")
	case c.AdminTokenFile != "":
		// Read once, here: Validate runs once per Load.
		c.AdminToken = readSecretFile(v, "admin_token_file", c.AdminTokenFile, c.credentials)
	}
	if strings.ContainsFunc(c.AdminToken, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		v.addf("admin_token", "must not contain spaces or control characters")
	} else if c.AdminToken != "" && len(c.AdminToken) < MinAdminToken {
		// It guards every account and key: a short one falls to guessing.
		v.addf("admin_token", "must be at least %d bytes (or empty: one is generated at first start)", MinAdminToken)
	}
	if strings.TrimSpace(c.DataDir) == "" {
		v.addf("data_dir", "must not be empty")
	}
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	v.publicURL("public_url", c.PublicURL)
	v.between("shutdown_timeout_seconds", c.ShutdownTimeoutSeconds, 1, 3600)
	if c.MetricsAuth != MetricsAuto && c.MetricsAuth != MetricsToken && c.MetricsAuth != MetricsOpen {
		v.addf("metrics_auth", "must be %q, %q or %q, got %q", MetricsAuto, MetricsToken, MetricsOpen, c.MetricsAuth)
	}

	for _, l := range []struct{ key, path string }{{"blocking.easylist", c.Blocking.EasyList}, {"blocking.easyprivacy", c.Blocking.EasyPrivacy}} {
		if strings.TrimSpace(l.path) == "" {
			v.addf(l.key, "must name a filter list file")
		}
	}
	// Empty is valid (autoconsent off); a missing file is only a warning at serve, so that a host
	// without it still renders, with banners hidden.
	if a := c.Blocking.Autoconsent; a != "" && (strings.TrimSpace(a) != a || strings.ContainsRune(a, 0)) {
		v.addf("blocking.autoconsent", "must be the path of autoconsent.standalone.js without surrounding spaces, or empty to disable, got %q", a)
	}

	b := c.Browser
	if b.Path != "" {
		if _, err := exec.LookPath(b.Path); err != nil {
			v.addf("browser.path", "%q is not an executable file or not found on PATH", b.Path)
		}
	}
	v.between("browser.pool_size", b.PoolSize, 1, 64)
	v.between("browser.renders_per_process", b.RendersPerProcess, 1, 64)
	v.between("browser.recycle_after", b.RecycleAfter, 1, 1_000_000)
	v.between("browser.start_timeout_seconds", b.StartTimeoutSeconds, 1, 300)
	if b.Prewarm < 0 || b.Prewarm > 16 {
		v.addf("browser.prewarm", "must be between 0 and 16, got %d", b.Prewarm)
	}
	if b.Isolation != IsolationWipe && b.Isolation != IsolationContext {
		v.addf("browser.isolation", "must be %q or %q, got %q", IsolationWipe, IsolationContext, b.Isolation)
	}
	v.between("browser.tab_reuse", b.TabReuse, 1, 100_000)
	if b.Sandbox != "auto" && b.Sandbox != "on" && b.Sandbox != "off" {
		v.addf("browser.sandbox", "must be \"auto\", \"on\" or \"off\", got %q", b.Sandbox)
	}
	if b.User == "" || strings.ContainsAny(b.User, ":/ \t\n") {
		v.addf("browser.user", "must be \"auto\", \"self\" or a user name, got %q", b.User)
	}
	if b.JSHeapMB != 0 {
		v.between("browser.js_heap_mb", b.JSHeapMB, 64, 65_536)
	}
	v.between("browser.renderer_process_limit", b.RendererProcessLimit, 0, 1_000)
	if n, ok := b.MemoryLimitMB.mb(); ok {
		if n != 0 {
			v.between("browser.memory_limit_mb", n, MinMemoryLimitMB, 4<<20)
		}
	} else if b.MemoryLimitMB != AutoMBAuto && b.MemoryLimitMB != AutoMBOff {
		v.addf("browser.memory_limit_mb", "must be \"auto\", \"off\" or a number of MB, got %q", string(b.MemoryLimitMB))
	}
	v.between("browser.slot_wait_ms", b.SlotWaitMs, 0, 600_000)
	v.between("browser.nice", b.Nice, 0, 19)
	v.between("browser.render_deadline_grace_seconds", b.RenderDeadlineGraceSeconds, 0, 600)

	for i, s := range c.Network.AllowPrivate {
		if _, err := parsePrefix(strings.TrimSpace(s)); err != nil || strings.TrimSpace(s) != s {
			v.addf(fmt.Sprintf("network.allow_private[%d]", i), "%q is not an IP address or CIDR", s)
		}
	}

	v.between("storage.file_ttl_seconds", c.Storage.FileTTLSeconds, 1, 10*365*24*3600) // ten years; more overflows a duration
	c.Storage.S3.validate(v, c.credentials)
	c.Cluster.validate(v, c.Storage.S3)
	v.positive("limits.max_source_bytes", c.Limits.MaxSourceBytes)
	v.positive("limits.max_output_bytes", c.Limits.MaxOutputBytes)
	v.between("limits.bulk_max_items", c.Limits.BulkMaxItems, 1, 10_000)
	v.between("limits.refused_per_address_per_minute", c.Limits.RefusedPerAddressPerMinute, 0, 1_000_000)
	v.between("limits.refused_per_key_per_minute", c.Limits.RefusedPerKeyPerMinute, 0, 1_000_000)
	v.between("limits.max_conns_per_address", c.Limits.MaxConnsPerAddress, 0, 1_000_000)
	if m := c.Limits.ServiceMemoryMB; m != 0 && (m < MinServiceMemoryMB || m > 1<<20) {
		v.addf("limits.service_memory_mb", "must be 0 (none) or between %d and %d, got %d", MinServiceMemoryMB, 1<<20, m)
	}

	for i, d := range c.Webhooks.RetryDelaysSeconds {
		v.between(fmt.Sprintf("webhooks.retry_delays_seconds[%d]", i), d, 1, 7*24*3600)
	}
	v.between("webhooks.timeout_seconds", c.Webhooks.TimeoutSeconds, 1, 300)

	if _, ok := logLevels[c.Log.Level]; !ok {
		v.addf("log.level", "must be one of trace, debug, info, warn, error, got %q", c.Log.Level)
	}
	if c.Log.Format != LogAuto && c.Log.Format != LogConsole && c.Log.Format != LogJSON {
		v.addf("log.format", "must be %q, %q or %q, got %q", LogAuto, LogConsole, LogJSON, c.Log.Format)
	}

	v.plans(c.Plans)
	if len(v.problems) > 0 {
		return &Error{Problems: v.problems}
	}
	return nil
}

type validator struct {
	problems []error
}

func (v *validator) addf(key, format string, args ...any) {
	v.problems = append(v.problems, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
}

func (v *validator) between(key string, n, lo, hi int) {
	if n < lo || n > hi {
		v.addf(key, "must be between %d and %d, got %d", lo, hi, n)
	}
}

func (v *validator) positive(key string, n int) {
	if n < 1 {
		v.addf(key, "must be at least 1, got %d", n)
	}
}

func (v *validator) listen(key, addr string) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		v.addf(key, "must be host:port, got %q", addr)
		return
	}
	if strings.ContainsAny(host, " /") {
		v.addf(key, "invalid host %q", host)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		v.addf(key, "port must be a number between 0 and 65535, got %q", port)
	}
}

func (v *validator) publicURL(key, s string) {
	u, err := url.Parse(s)
	switch {
	case err != nil || s == "":
		v.addf(key, "must be an http:// or https:// URL, got %q", s)
	case u.Scheme != "http" && u.Scheme != "https":
		v.addf(key, "scheme must be http or https, got %q", s)
	case u.Host == "" || u.Hostname() == "":
		v.addf(key, "must name a host, got %q", s)
	case u.User != nil || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(s, "?") || strings.HasSuffix(s, "#"):
		v.addf(key, "must not have user info, a query or a fragment, got %q", s)
	}
}

func (v *validator) plans(plans map[string]shotd.Plan) {
	if _, ok := plans[DefaultPlan]; !ok {
		v.addf("plans."+DefaultPlan, "must exist: the account created at first start has it")
	}
	names := make([]string, 0, len(plans))
	for name := range plans {
		names = append(names, name)
	}
	slices.Sort(names) // problems in a stable order
	for _, name := range names {
		p := plans[name]
		key := "plans." + name
		if !planName.MatchString(name) {
			v.addf(key, "plan name must be 1 to 64 of a-z, 0-9, _ and -, starting with a letter or digit")
		}
		if p.Name == "" {
			p.Name = name
			plans[name] = p
		} else if p.Name != name {
			v.addf(key, "name %q differs from the table key", p.Name)
		}
		v.positive(key+".monthly_quota", p.MonthlyQuota)
		v.positive(key+".requests_per_minute", p.RequestsPerMinute)
		v.positive(key+".status_requests_per_minute", p.StatusRequestsPerMinute)
		v.positive(key+".concurrency", p.Concurrency)
		v.positive(key+".queue_limit", p.QueueLimit)
		v.positive(key+".failures_per_minute", p.FailuresPerMinute)
		v.between(key+".failures_per_day", p.FailuresPerDay, 0, 100_000_000)
		for i, f := range p.Features {
			switch {
			case !slices.Contains(shotd.AllFeatures, f):
				v.addf(fmt.Sprintf("%s.features[%d]", key, i), "unknown feature %q, want one of %s", f, strings.Join(shotd.AllFeatures, ", "))
			case slices.Index(p.Features, f) < i:
				v.addf(fmt.Sprintf("%s.features[%d]", key, i), "%q is listed twice", f)
			}
		}
	}
}
