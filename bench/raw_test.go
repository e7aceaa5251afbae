package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mafredri/cdp/protocol/runtime"
	"github.com/rs/zerolog"

	"github.com/shotd/shotd/cdpclient"
	"github.com/shotd/shotd/internal/testenv"
)

// chrome is the package's one browser, launched as the cdpclient tests launch theirs.
var chrome *cdpclient.Process

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	p, err := cdpclient.Launch(ctx, cdpclient.Config{Path: testenv.Browser(), Isolation: testenv.Isolation(),
		Log: zerolog.New(os.Stderr).Level(zerolog.ErrorLevel)})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench tests:", err)
		os.Exit(1)
	}
	chrome = p
	code := m.Run()
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "bench tests: close Chrome:", err)
		code = 1
	}
	os.Exit(code)
}

// countingPages serves the bench's fixtures and counts the page loads.
func countingPages(t testing.TB) (*httptest.Server, *atomic.Int32) {
	var loads atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/small" || r.URL.Path == "/heavy" {
			loads.Add(1)
		}
		fixtures(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &loads
}

// TestRawLoop: each kind of the floor loads the page once per iteration and captures it.
func TestRawLoop(t *testing.T) {
	tests := []struct {
		name, page, kind string
	}{
		{"png", "/small", rawPNG},
		{"pdf", "/small", rawPDF},
		{"full page", "/heavy", rawFullPage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, loads := countingPages(t)
			durs, err := rawLoop(t.Context(), chrome, srv.URL+tt.page, tt.kind, 3, 0, false)
			if err != nil {
				t.Fatal(err)
			}
			if len(durs) != 3 || loads.Load() != 3 {
				t.Fatalf("%d durations and %d page loads, want 3 of each", len(durs), loads.Load())
			}
			for _, d := range durs {
				if d <= 0 {
					t.Errorf("duration %v", d)
				}
			}
		})
	}
}

// TestRawLoopFailedNavigation: a page that cannot load ends the loop with an error.
func TestRawLoopFailedNavigation(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL + "/small"
	srv.Close() // nothing listens there any more
	if _, err := rawLoop(t.Context(), chrome, url, rawPNG, 1, 0, false); err == nil {
		t.Fatal("no error for a page that cannot load")
	}
}

// BenchmarkRawLoop: the floor, one reused target; reports the median iteration.
func BenchmarkRawLoop(b *testing.B) {
	srv, _ := countingPages(b)
	b.ResetTimer()
	durs, err := rawLoop(b.Context(), chrome, srv.URL+"/small", rawPNG, b.N, 0, false)
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	slices.Sort(durs)
	b.ReportMetric(float64(durs[len(durs)/2])/float64(time.Millisecond), "median-ms")
}

// TestRawClean: the clean floor's cleaning leaves the tab on a page of the same origin with no
// cookie and no storage of the previous render, and the clean loop still loads each iteration.
func TestRawClean(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		if r.URL.Path == "/set" {
			w.Header().Set("Set-Cookie", "c=1; Path=/")
			fmt.Fprint(w, `<script>localStorage.setItem('k', 'v')</script>`)
			return
		}
		fmt.Fprint(w, `<p>read</p>`)
	}))
	defer srv.Close()
	ctx := t.Context()
	tgt, err := chrome.OpenTarget(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	state := func() string {
		if err := rawLoad(ctx, tgt, srv.URL+"/read"); err != nil {
			t.Fatal(err)
		}
		res, err := tgt.Client.Runtime.Evaluate(ctx, runtime.NewEvaluateArgs(`document.cookie + '|' + localStorage.length`).SetReturnByValue(true))
		if err != nil {
			t.Fatal(err)
		}
		return string(res.Result.Value)
	}
	if err := rawLoad(ctx, tgt, srv.URL+"/set"); err != nil {
		t.Fatal(err)
	}
	if got := state(); got != `"c=1|1"` {
		t.Fatalf("before the cleaning: %s, want the page's cookie and storage", got)
	}
	if err := rawClean(ctx, tgt, srv.URL+"/set"); err != nil {
		t.Fatal(err)
	}
	if got := state(); got != `"|0"` {
		t.Fatalf("after the cleaning: %s, want no cookie and no storage", got)
	}

	pages, loads := countingPages(t)
	durs, err := rawLoop(ctx, chrome, pages.URL+"/small", rawPNG, 3, 0, true)
	if err != nil || len(durs) != 3 || loads.Load() != 3 {
		t.Fatalf("clean loop: %d durations, %d loads, %v; want 3 of each", len(durs), loads.Load(), err)
	}
}
