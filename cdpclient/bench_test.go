package cdpclient

import (
	"net/http"
	"slices"
	"testing"
	"time"
)

const benchPage = `<!doctype html><html><body><h1>bench</h1><p>A small page.</p></body></html>`

// BenchmarkRender: one full Render (fresh context, emulate, navigate, load, png) per op.
func BenchmarkRender(b *testing.B) {
	mux := http.NewServeMux()
	mux.HandleFunc("/", htmlPage(benchPage))
	srv, _ := server(b, mux)
	o := opts(srv.URL)
	o.ViewportWidth, o.ViewportHeight = 1280, 1024
	for b.Loop() {
		mustRender(b, shared, o)
	}
}

// BenchmarkRenderWarm: the latency of one Render when the pre-warmed pairs are ready, as at a
// request rate the pre-warmer keeps up with.
func BenchmarkRenderWarm(b *testing.B) {
	mux := http.NewServeMux()
	mux.HandleFunc("/", htmlPage(benchPage))
	srv, _ := server(b, mux)
	o := opts(srv.URL)
	o.ViewportWidth, o.ViewportHeight = 1280, 1024
	for b.Loop() {
		b.StopTimer()
		for len(shared.ready) < cap(shared.ready) {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(100 * time.Millisecond) // let the last disposal finish
		b.StartTimer()
		mustRender(b, shared, o)
	}
}

// BenchmarkRawLoop: the floor, one reused target; reports the median iteration.
func BenchmarkRawLoop(b *testing.B) {
	mux := http.NewServeMux()
	mux.HandleFunc("/", htmlPage(benchPage))
	srv, _ := server(b, mux)
	b.ResetTimer()
	durs, err := RawLoop(b.Context(), shared, srv.URL, b.N)
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	slices.Sort(durs)
	b.ReportMetric(float64(durs[len(durs)/2])/float64(time.Millisecond), "median-ms")
}
