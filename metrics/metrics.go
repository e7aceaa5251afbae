package metrics

import (
	"context"
	"runtime"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/shotd/shotd"
	"github.com/shotd/shotd/pressure"
)

// Metrics are the registry that the admin listener's /metrics serves and the service's own
// series in it. Components report through its methods (service/ wires them), so that every
// series is declared here, in one place. The methods of a nil *Metrics record nothing.
type Metrics struct {
	requests    *prometheus.CounterVec
	refusedCode *prometheus.CounterVec
	slotWait    prometheus.Histogram
	queueWait   prometheus.Histogram
	duration    *prometheus.HistogramVec
	renderErrs  *prometheus.CounterVec
	webhooks    *prometheus.CounterVec
	chromeDown  *prometheus.CounterVec
	refusals    *prometheus.CounterVec
	cacheLookup *prometheus.CounterVec
	reg         *prometheus.Registry
}

// waitBuckets span no wait to the longest slot wait (browser.slot_wait, seconds).
var waitBuckets = []float64{.001, .01, .05, .1, .25, .5, 1, 2, 5, 10}

// queueBuckets span no wait to an hour of backlog.
var queueBuckets = []float64{.01, .1, .5, 1, 5, 15, 60, 300, 900, 3600}

// renderBuckets span a small page (~50 ms) to a long video recording.
var renderBuckets = []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 90}

// New makes a registry with the process's own series (Go runtime, process) and shotd's.
// browsersUp, when set, reports the browsers that can render.
func New(browsersUp func() float64) *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := &Metrics{
		reg: reg,
		requests: counters("shotd_requests_total",
			"Public API answers by route and status.", "route", "status"),
		refusedCode: counters("shotd_refusals_total",
			"Public API answers with an error, by error code (rate_limited, renderer_busy, timeout, ...).", "code"),
		slotWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "shotd_render_slot_wait_seconds", Help: "Time a render waited for a free slot of the browser pool before it started (0 when one was free).",
			Buckets: waitBuckets,
		}),
		queueWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "shotd_job_queue_wait_seconds", Help: "Time a background job waited in the queue for a slot of its account before its render started.",
			Buckets: queueBuckets,
		}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "shotd_render_duration_seconds", Help: "Time in the browser pool of every render, sync and job, by format and outcome (success or error).",
			Buckets: renderBuckets,
		}, []string{"format", "outcome"}),
		renderErrs: counters("shotd_render_errors_total",
			"Renders that failed in the browser pool, by error code.", "code"),
		webhooks: counters("shotd_webhook_attempts_total",
			"Webhook delivery attempts by outcome: delivered, retry (another attempt follows) or failed (the last one).", "outcome"),
		chromeDown: counters("shotd_chrome_restarts_total",
			"Chrome processes replaced, by reason (recycled after browser.recycle_after renders, process exited, cdp connection closed, unresponsive, ...).", "reason"),
		refusals: counters("shotd_egress_refusals_total",
			"Connections the egress guard refused (URL checks, page requests, webhook dials) by reason.", "reason"),
		cacheLookup: counters("shotd_cache_lookups_total",
			"Response cache lookups (cache=true), sync and job, by result: hit or miss.", "result"),
	}
	reg.MustRegister(m.requests, m.refusedCode, m.slotWait, m.queueWait, m.duration, m.renderErrs, m.webhooks, m.chromeDown, m.refusals, m.cacheLookup)
	if browsersUp != nil {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "shotd_browsers_up", Help: "Chrome processes that accept renders.",
		}, browsersUp))
	}
	return m
}

// counters declares a counter series of one or more labels.
func counters(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

// Registry is what /metrics serves.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Request records one answer of the public API, by route (without ids) and status.
func (m *Metrics) Request(route string, status int) {
	if m != nil {
		m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	}
}

// Refused records one public API answer with an error code.
func (m *Metrics) Refused(code string) {
	if m != nil && code != "" {
		m.refusedCode.WithLabelValues(code).Inc()
	}
}

// SlotWaited records how long one render waited for a slot of the browser pool.
func (m *Metrics) SlotWaited(d time.Duration) {
	if m != nil {
		m.slotWait.Observe(d.Seconds())
	}
}

// JobQueueWaited records how long one job waited in the queue before its render started.
func (m *Metrics) JobQueueWaited(d time.Duration) {
	if m != nil {
		m.queueWait.Observe(d.Seconds())
	}
}

// BuildInfo adds shotd_build_info, 1 with the version and the Go version as labels, so that a
// dashboard can show which build each node runs.
func (m *Metrics) BuildInfo(version string) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "shotd_build_info", Help: "1, labelled with the running build's version and Go version.",
		ConstLabels: prometheus.Labels{"version": version, "goversion": runtime.Version()}})
	g.Set(1)
	m.reg.MustRegister(g)
}

// Rendered records one render through the browser pool.
func (m *Metrics) Rendered(format string, took time.Duration, err error) {
	if m == nil {
		return
	}
	outcome := "success"
	if err != nil {
		outcome = "error"
		m.renderErrs.WithLabelValues(string(shotd.CodeOf(err))).Inc()
	}
	m.duration.WithLabelValues(format, outcome).Observe(took.Seconds())
}

// WebhookAttempted records one delivery attempt's outcome.
func (m *Metrics) WebhookAttempted(outcome string) {
	if m != nil {
		m.webhooks.WithLabelValues(outcome).Inc()
	}
}

// ChromeReplaced records the replacement of a Chrome, with why: "recycled" for the planned one
// (recycle_after), the cause of a fault otherwise.
func (m *Metrics) ChromeReplaced(reason string) {
	if m != nil {
		m.chromeDown.WithLabelValues(reason).Inc()
	}
}

// EgressRefused records one refusal of the egress guard.
func (m *Metrics) EgressRefused(reason string) {
	if m != nil {
		m.refusals.WithLabelValues(reason).Inc()
	}
}

// CacheLookup records one response-cache lookup.
func (m *Metrics) CacheLookup(hit bool) {
	if m == nil {
		return
	}
	result := "miss"
	if hit {
		result = "hit"
	}
	m.cacheLookup.WithLabelValues(result).Inc()
}

// JobCounter counts the jobs of this run: the job actor implements it.
type JobCounter interface {
	Stats() shotd.JobStats
}

// BrowserPool lists the browsers of the render pool: the render pool of the actors implements
// it. A pool that does not answer within timeout returns an error.
type BrowserPool interface {
	Browsers(timeout time.Duration) ([]shotd.BrowserInfo, error)
}

// WatchJobs adds the job series, read from jobs.Stats at every scrape.
func (m *Metrics) WatchJobs(jobs JobCounter) {
	m.reg.MustRegister(funcCollector{descs: []*prometheus.Desc{jobsDesc, jobsEndedDesc}, collect: func(ch chan<- prometheus.Metric) {
		c := jobs.Stats()
		ch <- prometheus.MustNewConstMetric(jobsDesc, prometheus.GaugeValue, float64(c.Queued), "queued")
		ch <- prometheus.MustNewConstMetric(jobsDesc, prometheus.GaugeValue, float64(c.Rendering), "rendering")
		ch <- prometheus.MustNewConstMetric(jobsEndedDesc, prometheus.CounterValue, float64(c.Succeeded), "succeeded")
		ch <- prometheus.MustNewConstMetric(jobsEndedDesc, prometheus.CounterValue, float64(c.Failed), "failed")
	}})
}

var (
	jobsDesc      = prometheus.NewDesc("shotd_jobs", "Background jobs of this run now queued or rendering.", []string{"state"}, nil)
	jobsEndedDesc = prometheus.NewDesc("shotd_jobs_ended_total", "Background jobs that ended since start, by final state.", []string{"state"}, nil)
	inflightDesc  = prometheus.NewDesc("shotd_browser_renders_inflight", "Renders running in each Chrome process.", []string{"browser"}, nil)
	tabsDesc      = prometheus.NewDesc("shotd_browser_tabs_ready", "Tabs of each Chrome process ready for a render (pre-warmed, or wiped after one).", []string{"browser"}, nil)
	memoryDesc    = prometheus.NewDesc("shotd_chrome_memory_bytes", "Memory of each Chrome's process tree: its memory cgroup's usage, or the resident memory of its processes without one.", []string{"browser"}, nil)
	oomDesc       = prometheus.NewDesc("shotd_chrome_oom_kills_total", "Processes the kernel's OOM killer ended in the memory cgroup of each Chrome (starts again at 0 when the Chrome is replaced; absent without cgroups).", []string{"browser"}, nil)
)

// WatchBrowsers adds the per-process render count, asked of the pool's supervisor at every
// scrape; a pool that does not answer within a second (busy or stopping) leaves the series out
// of that scrape.
func (m *Metrics) WatchBrowsers(pool BrowserPool) {
	m.reg.MustRegister(funcCollector{descs: []*prometheus.Desc{inflightDesc, tabsDesc, memoryDesc, oomDesc}, collect: func(ch chan<- prometheus.Metric) {
		bs, err := pool.Browsers(time.Second)
		if err != nil {
			return
		}
		for _, b := range bs {
			ch <- prometheus.MustNewConstMetric(inflightDesc, prometheus.GaugeValue, float64(b.Inflight), strconv.Itoa(b.ID))
			ch <- prometheus.MustNewConstMetric(tabsDesc, prometheus.GaugeValue, float64(b.ReadyTabs), strconv.Itoa(b.ID))
			if b.Up && b.PID > 0 {
				mem := pressure.ReadMemory(b.PID)
				ch <- prometheus.MustNewConstMetric(memoryDesc, prometheus.GaugeValue, float64(mem.Bytes), strconv.Itoa(b.ID))
				if mem.Cgroup {
					ch <- prometheus.MustNewConstMetric(oomDesc, prometheus.CounterValue, float64(mem.OOMKills), strconv.Itoa(b.ID))
				}
			}
		}
	}})
}

// funcCollector collects series computed at scrape time with fixed descriptions.
type funcCollector struct {
	descs   []*prometheus.Desc
	collect func(chan<- prometheus.Metric)
}

func (c funcCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c funcCollector) Collect(ch chan<- prometheus.Metric) { c.collect(ch) }

// Meter returns r with every render recorded: its time by format and outcome, and the error
// code of a failure. service/ puts it under both the public API and the job actor, so that both
// paths count.
func (m *Metrics) Meter(r shotd.Renderer) shotd.Renderer {
	return shotd.RenderFunc(func(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
		start := time.Now()
		out, err := r.Render(ctx, o)
		m.Rendered(string(o.Format), time.Since(start), err)
		return out, err
	})
}
