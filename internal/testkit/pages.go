package testkit

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// Pages serves a small page for renders on 127.0.0.1 at every path. /slow answers only after the
// hold, or at Release, or never when the client goes away first: a render of it holds its
// concurrency slot (or its job) as long as the test needs. It counts the loads of every URL and
// the /slow requests: under way, come in all, and the most under way at once. The page shows the
// query's n in its heading, on a #396 background, with enough text to make a file of some size.
type Pages struct {
	srv     *httptest.Server
	hold    time.Duration
	release chan struct{}
	once    sync.Once

	mu    sync.Mutex
	loads map[string]int // request URI -> loads
	slow  struct{ now, came, peak int }
}

// NewPages starts the page server; Close stops it.
func NewPages(hold time.Duration) *Pages {
	p := &Pages{hold: hold, release: make(chan struct{}), loads: map[string]int{}}
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

// Close releases the held requests and stops the server.
func (p *Pages) Close() {
	p.Release()
	p.srv.Close()
}

// Release ends the hold of /slow: the requests held now answer, and later ones answer at once.
func (p *Pages) Release() { p.once.Do(func() { close(p.release) }) }

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
func (p *Pages) Slow() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.slow.now
}

// SlowCame is the number of /slow requests (with any query) since the server started.
func (p *Pages) SlowCame() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.slow.came
}

// SlowPeak is the most /slow requests that were under way at once.
func (p *Pages) SlowPeak() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.slow.peak
}

// WaitSlow waits up to within until n requests for /slow have come since the server started,
// and fails the test if they do not.
func (p *Pages) WaitSlow(t testing.TB, n int, within time.Duration) {
	t.Helper()
	for end := time.Now().Add(within); p.SlowCame() < n; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%d requests for %s after %v, want %d", p.SlowCame(), p.URL("/slow"), within, n)
		}
	}
}

func (p *Pages) serve(w http.ResponseWriter, r *http.Request) {
	slow := r.URL.Path == "/slow"
	p.mu.Lock()
	p.loads[r.URL.RequestURI()]++
	if slow {
		p.slow.now++
		p.slow.came++
		p.slow.peak = max(p.slow.peak, p.slow.now)
	}
	p.mu.Unlock()
	if slow {
		defer func() {
			p.mu.Lock()
			p.slow.now--
			p.mu.Unlock()
		}()
		select {
		case <-time.After(p.hold):
		case <-p.release:
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "text/html")
	fmt.Fprintf(w, "<html><body style='background:#396;margin:0'><h1>%s</h1><p>%s</p></body></html>",
		r.URL.Query().Get("n"), strings.Repeat("lorem ipsum ", 40))
}
