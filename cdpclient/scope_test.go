package cdpclient

import (
	"fmt"
	"image"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shotd/shotd"
)

// recorder records the headers of every request per path.
type recorder struct {
	mu  sync.Mutex
	got map[string][]http.Header
}

func newRecorder() *recorder { return &recorder{got: map[string][]http.Header{}} }

// reset forgets what was recorded.
func (rec *recorder) reset() {
	rec.mu.Lock()
	rec.got = map[string][]http.Header{}
	rec.mu.Unlock()
}

func (rec *recorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.got[r.URL.Path] = append(rec.got[r.URL.Path], r.Header.Clone())
		rec.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

// headers returns the headers of the only request for path.
func (rec *recorder) headers(t *testing.T, path string) http.Header {
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	hs := rec.got[path]
	if len(hs) != 1 {
		t.Fatalf("%d requests for %s, want 1", len(hs), path)
	}
	return hs[0]
}

func (rec *recorder) count(path string) int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return len(rec.got[path])
}

var gif = []byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;")

func serveGIF(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "image/gif")
	w.Write(gif)
}

// recorded serves mux on 127.0.0.1 with every request recorded in rec; it returns the base URL
// and the port.
func recorded(t *testing.T, rec *recorder, mux *http.ServeMux) (base, port string, release <-chan struct{}) {
	t.Helper()
	outer := http.NewServeMux()
	outer.Handle("/", rec.wrap(mux))
	srv, release := server(t, outer)
	_, port, _ = strings.Cut(srv.Listener.Addr().String(), ":")
	return srv.URL, port, release
}

// gifSite serves a GIF at every path of a second site recorded in rec, and returns its port.
func gifSite(t *testing.T, rec *recorder) string {
	t.Helper()
	other := http.NewServeMux()
	other.HandleFunc("/", serveGIF)
	_, port, _ := recorded(t, rec, other)
	return port
}

// TestScopedHeaders: the page on 127.0.0.1:A loads images from itself, from 127.0.0.1:B (the
// same host name on another port: another site for scoped headers, the same for cookies, which
// ignore ports) and from localhost:B (another host), plus a redirect from A to B.
func TestScopedHeaders(t *testing.T) {
	rec := newRecorder()
	portB := gifSite(t, rec)

	mux := http.NewServeMux()
	mux.HandleFunc("/{$}", htmlPage(fmt.Sprintf(`<body>
<img src="/a-img"><img src="http://127.0.0.1:%[1]s/b-img"><img src="http://localhost:%[1]s/c-img"><img src="/to-b">
</body>`, portB)))
	mux.HandleFunc("/a-img", serveGIF)
	mux.HandleFunc("/to-b", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://127.0.0.1:"+portB+"/redirected", http.StatusFound)
	})
	baseA, _, _ := recorded(t, rec, mux)

	o := opts(baseA + "/")
	o.Headers = []shotd.Header{{Name: "X-Api-Key", Value: "key-1"}, {Name: "X-Trace", Value: "trace-1"}, {Name: "Cookie", Value: "hc=1"}}
	o.Authorization = "Bearer tok-1"
	o.Cookies = []shotd.Cookie{{Name: "sess", Value: "abc", Domain: "127.0.0.1", Path: "/"}}
	mustRender(t, shared, o)

	tests := []struct {
		name       string
		path       string
		scoped     bool   // X-Api-Key, Authorization, the Cookie header's hc=1
		cookies    string // a cookie from the jar expected in Cookie ("" none)
		notCookies string // a cookie that must not be there
	}{
		{name: "page", path: "/", scoped: true, cookies: "sess=abc"},
		{name: "same site subresource", path: "/a-img", scoped: true, cookies: "sess=abc"},
		{name: "same host other port", path: "/b-img", cookies: "sess=abc"},
		{name: "other host", path: "/c-img", notCookies: "sess="},
		{name: "redirect hop to the other port", path: "/redirected", cookies: "sess=abc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := rec.headers(t, tt.path)
			if got := h.Get("X-Trace"); got != "trace-1" {
				t.Errorf("X-Trace = %q, want it everywhere", got)
			}
			apiKey, auth, cookie := h.Get("X-Api-Key"), h.Get("Authorization"), h.Get("Cookie")
			if tt.scoped {
				if apiKey != "key-1" || auth != "Bearer tok-1" || !strings.Contains(cookie, "hc=1") {
					t.Errorf("scoped headers missing: X-Api-Key %q Authorization %q Cookie %q", apiKey, auth, cookie)
				}
			} else if apiKey != "" || auth != "" || strings.Contains(cookie, "hc=1") {
				t.Errorf("scoped headers leaked: X-Api-Key %q Authorization %q Cookie %q", apiKey, auth, cookie)
			}
			if tt.cookies != "" && !strings.Contains(cookie, tt.cookies) {
				t.Errorf("Cookie %q, want %s", cookie, tt.cookies)
			}
			if tt.notCookies != "" && strings.Contains(cookie, tt.notCookies) {
				t.Errorf("Cookie %q carries %s", cookie, tt.notCookies)
			}
		})
	}
}

// TestCookies: each cookie goes where its Domain, Path and Secure let Chrome send it. The page
// on 127.0.0.1 loads /sub/img and an image from localhost (another site).
func TestCookies(t *testing.T) {
	rec := newRecorder()
	portB := gifSite(t, rec)
	mux := http.NewServeMux()
	mux.HandleFunc("/{$}", htmlPage(fmt.Sprintf(`<img src="/sub/img"><img src="http://localhost:%s/other">`, portB)))
	mux.HandleFunc("/sub/img", serveGIF)
	base, portA, _ := recorded(t, rec, mux)

	tests := []struct {
		name   string
		url    string
		cookie shotd.Cookie
		where  map[string]bool // path -> cookie sent
	}{
		{name: "host cookie", url: base + "/", cookie: shotd.Cookie{Name: "c", Value: "1", Domain: "127.0.0.1"},
			where: map[string]bool{"/": true, "/sub/img": true, "/other": false}},
		{name: "path", url: base + "/", cookie: shotd.Cookie{Name: "c", Value: "1", Domain: "127.0.0.1", Path: "/sub"},
			where: map[string]bool{"/": false, "/sub/img": true, "/other": false}},
		// Secure cannot be shown here: Chrome counts http://127.0.0.1 as a secure origin.
		{name: "other domain", url: base + "/", cookie: shotd.Cookie{Name: "c", Value: "1", Domain: "example.com"},
			where: map[string]bool{"/": false, "/sub/img": false, "/other": false}},
		{name: "page on localhost", url: "http://localhost:" + portA + "/", cookie: shotd.Cookie{Name: "c", Value: "1", Domain: "localhost"},
			where: map[string]bool{"/": true, "/sub/img": true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec.reset()
			o := opts(tt.url)
			o.Cookies = []shotd.Cookie{tt.cookie}
			mustRender(t, shared, o)
			for path, want := range tt.where {
				if got := strings.Contains(rec.headers(t, path).Get("Cookie"), "c=1"); got != want {
					t.Errorf("%s: cookie sent %v, want %v", path, got, want)
				}
			}
		})
	}
}

// testBlocker blocks the requests to one host key, hides .ad-box, and records what it was asked.
type testBlocker struct {
	host   string
	script string
	mu     sync.Mutex
	asked  []string // resourceType + " " + url + " on " + pageURL
}

func (b *testBlocker) Block(rawURL, pageURL, resourceType string) bool {
	b.mu.Lock()
	b.asked = append(b.asked, resourceType+" "+rawURL+" on "+pageURL)
	b.mu.Unlock()
	return hostKey(rawURL) == b.host
}

func (b *testBlocker) HideCSS(pageURL string) string { return ".ad-box { display: none !important; }" }

func (b *testBlocker) StartScript() string { return b.script }

// TestBlocking: blocked requests never reach the server and fail at once inside Chrome. The
// blocked resources would hang the load event until the timeout were they requested.
func TestBlocking(t *testing.T) {
	rec := newRecorder()
	third := http.NewServeMux()
	_, portB, releaseB := recorded(t, rec, third)
	third.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { <-releaseB })

	mux := http.NewServeMux()
	base, _, release := recorded(t, rec, mux)
	hang := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}
	mux.HandleFunc("/{$}", htmlPage(fmt.Sprintf(`<head><link rel=stylesheet href="/style.css"><script src="/app.js"></script></head>
<body style="margin:0">
<div class=ad-box style="height:100px;background:#f00"></div>
<img src="/img/hang.gif"><img src="/ads/banner.gif"><img src="http://localhost:%s/track.gif">
<iframe src="/frame"></iframe>
<script>fetch('/data'); new WebSocket('ws://' + location.host + '/ws');</script></body>`, portB)))
	mux.HandleFunc("/style.css", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/css")
		w.Write([]byte("body { background: #0f0 !important }"))
	})
	mux.HandleFunc("/app.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		w.Write([]byte("document.documentElement.dataset.app = '1';"))
	})
	mux.HandleFunc("/img/", hang)
	mux.HandleFunc("/ads/", hang)
	mux.HandleFunc("/frame", htmlPage(`<p>frame</p>`))
	mux.HandleFunc("/data", hang)
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", 400) })

	all := []string{"/style.css", "/app.js", "/img/hang.gif", "/ads/banner.gif", "/track.gif", "/frame", "/data", "/ws"}
	// The start script puts a blue bar at the top; the blocker's CSS hides the red .ad-box.
	startScript := `addEventListener('DOMContentLoaded', () => document.body.insertAdjacentHTML('afterbegin', '<div style="height:40px;background:#00f"></div>'))`
	tests := []struct {
		name      string
		resources []string
		requests  []string
		blocker   *testBlocker
		blocked   []string // never requested; the others once
		pixels    map[image.Point][3]uint8
	}{
		{name: "types", resources: []string{"image", "fetch", "document"}, blocked: []string{"/img/hang.gif", "/ads/banner.gif", "/track.gif", "/frame", "/data"},
			pixels: map[image.Point][3]uint8{{200, 50}: red, {390, 200}: green}},
		{name: "stylesheet and script", resources: []string{"stylesheet", "script", "image", "xhr"}, blocked: []string{"/style.css", "/app.js", "/img/hang.gif", "/ads/banner.gif", "/track.gif", "/data"},
			pixels: map[image.Point][3]uint8{{200, 50}: red, {390, 200}: white}},
		{name: "websocket", resources: []string{"websocket", "image", "fetch"}, blocked: []string{"/ws", "/img/hang.gif", "/ads/banner.gif", "/track.gif", "/data"},
			pixels: map[image.Point][3]uint8{{200, 50}: red}},
		{name: "patterns", requests: []string{"*/ads/*", "localhost", "http://127.0.0.1:*/img/*", "*/data", "ws://*"}, blocked: []string{"/img/hang.gif", "/ads/banner.gif", "/track.gif", "/data", "/ws"},
			pixels: map[image.Point][3]uint8{{200, 50}: red}},
		{name: "blocker", resources: []string{"fetch"}, requests: []string{"*/img/*", "*/ads/*"}, blocker: &testBlocker{host: "localhost:" + portB, script: startScript},
			blocked: []string{"/img/hang.gif", "/ads/banner.gif", "/track.gif", "/data"}, pixels: map[image.Point][3]uint8{{200, 20}: blue, {395, 60}: green}}, // the frame got a bar too
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec.reset()
			o := opts(base + "/")
			o.BlockResources, o.BlockRequests = tt.resources, tt.requests
			o.Timeout = 10 * time.Second
			if tt.blocker != nil {
				shared.cfg.Blocker = func(*shotd.Options) Blocker { return tt.blocker }
				defer func() { shared.cfg.Blocker = nil }()
			}
			start := time.Now()
			out := mustRender(t, shared, o)
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("render took %v: blocked requests did not fail at once", took)
			}
			wantPixels(t, decodePNG(t, out.Data), tt.pixels)
			time.Sleep(100 * time.Millisecond) // a request after load (the websocket) has arrived
			blocked := map[string]bool{}
			for _, p := range tt.blocked {
				blocked[p] = true
			}
			for _, p := range all {
				if n := rec.count(p); blocked[p] && n != 0 {
					t.Errorf("%s requested %d times, want blocked", p, n)
				} else if !blocked[p] && n != 1 {
					t.Errorf("%s requested %d times, want once", p, n)
				}
			}
			if tt.blocker != nil {
				tt.blocker.mu.Lock()
				asked := strings.Join(tt.blocker.asked, "\n")
				tt.blocker.mu.Unlock()
				for _, want := range []string{"image http://localhost:" + portB + "/track.gif on " + base + "/", "subdocument " + base + "/frame on " + base + "/", "stylesheet " + base + "/style.css"} {
					if !strings.Contains(asked, want) {
						t.Errorf("blocker not asked %q; asked:\n%s", want, asked)
					}
				}
				if strings.Contains(asked, "document "+base+"/ on") {
					t.Error("blocker asked about the main document")
				}
			}
		})
	}
}
