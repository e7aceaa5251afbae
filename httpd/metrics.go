package httpd

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the service's own Prometheus series, served on the admin listener's /metrics.
type Metrics struct {
	requests *prometheus.CounterVec
	renders  *prometheus.HistogramVec
}

// NewMetrics registers the series on reg. browsersUp reports the browsers that can render.
func NewMetrics(reg prometheus.Registerer, browsersUp func() float64) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shotd_requests_total", Help: "Public API answers by route and status.",
		}, []string{"route", "status"}),
		renders: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "shotd_render_seconds", Help: "Time of successful sync renders by format.",
			Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 90},
		}, []string{"format"}),
	}
	reg.MustRegister(m.requests, m.renders)
	if browsersUp != nil {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "shotd_browsers_up", Help: "Chrome processes that accept renders.",
		}, browsersUp))
	}
	return m
}

func (m *Metrics) request(route string, status int) {
	if m != nil {
		m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	}
}

func (m *Metrics) render(format string, ms int64) {
	if m != nil {
		m.renders.WithLabelValues(format).Observe(float64(ms) / 1000)
	}
}
