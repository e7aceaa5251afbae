package testkit

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Pages serves a small page for renders on 127.0.0.1 at every path. /slow answers only after the
// hold, or never when the client goes away first. It counts the loads of every URL and the /slow
// requests, those under way and all that came. The page shows the query's n in its heading, on
// a #396 background, with enough text to make a file of some size.
type Pages struct {
	srv  *httptest.Server
	hold time.Duration

	slow     atomic.Int32 // under way
	slowSeen atomic.Int32 // come in all
	mu       sync.Mutex
	loads    map[string]int // request URI -> loads
}

// NewPages starts the page server; Close stops it.
func NewPages(hold time.Duration) *Pages {
	p := &Pages{hold: hold, loads: map[string]int{}}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	return p
}

// StartPages is NewPages, closed when the test ends.
func StartPages(t testing.TB, hold time.Duration) *Pages {
	p := NewPages(hold)
	t.Cleanup(p.Close)
	return p
}

// URL is the address of path on the server.
func (p *Pages) URL(path string) string { return p.srv.URL + path }

// Close stops the server.
func (p *Pages) Close() { p.srv.Close() }

// Loads is how often rawURL (a URL of this server) was requested.
func (p *Pages) Loads(rawURL string) int {
	u, err := url.Parse(rawURL)
	if err != nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.loads[u.RequestURI()]
}

// Slow is the number of /slow requests under way.
func (p *Pages) Slow() int { return int(p.slow.Load()) }

// WaitSlow waits up to within until n requests for /slow (with any query) have come since the
// server started, and fails the test if they do not.
func (p *Pages) WaitSlow(t testing.TB, n int, within time.Duration) {
	t.Helper()
	for end := time.Now().Add(within); int(p.slowSeen.Load()) < n; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%d requests for %s after %v, want %d", p.slowSeen.Load(), p.URL("/slow"), within, n)
		}
	}
}

func (p *Pages) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.loads[r.URL.RequestURI()]++
	p.mu.Unlock()
	if r.URL.Path == "/slow" {
		p.slowSeen.Add(1)
		p.slow.Add(1)
		defer p.slow.Add(-1)
		select {
		case <-time.After(p.hold):
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "text/html")
	fmt.Fprintf(w, "<html><body style='background:#396;margin:0'><h1>%s</h1><p>%s</p></body></html>",
		r.URL.Query().Get("n"), strings.Repeat("lorem ipsum ", 40))
}
