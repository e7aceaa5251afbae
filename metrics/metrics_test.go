package metrics_test

import (
	"testing"

	"github.com/shotd/shotd/metrics"
)

// TestMetricsChromeReplaced: each replacement of a Chrome counts once, under its reason.
func TestMetricsChromeReplaced(t *testing.T) {
	m := metrics.New(nil)
	for _, r := range []string{"recycled", "process exited", "process exited"} {
		m.ChromeReplaced(r)
	}
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "shotd_chrome_restarts_total" {
			continue
		}
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				got[`shotd_chrome_restarts_total{reason="`+l.GetValue()+`"}`] = s.GetCounter().GetValue()
			}
		}
	}
	for series, want := range map[string]float64{
		`shotd_chrome_restarts_total{reason="process exited"}`: 2,
		`shotd_chrome_restarts_total{reason="recycled"}`:       1,
	} {
		if got[series] != want {
			t.Errorf("%s = %v, want %v", series, got[series], want)
		}
	}
}
