package cdpclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/jpeg"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mafredri/cdp/protocol/page"
	"github.com/rs/zerolog"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/internal/testenv"
)

const noisyPage = `<!doctype html><html><body style="margin:0">
<canvas id=c width=400 height=300></canvas>
<script>
const c = document.getElementById('c').getContext('2d');
let s = 7;
for (let y = 0; y < 300; y += 4) for (let x = 0; x < 400; x += 4) {
  s = (s * 1103515245 + 12345) % 2147483648;
  c.fillStyle = '#' + (s % 16777216).toString(16).padStart(6, '0');
  c.fillRect(x, y, 4, 4);
}
</script></body></html>`

func TestFormats(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/", htmlPage(noisyPage))
	srv, _ := server(t, mux)

	tests := []struct {
		name        string
		format      string
		contentType string
		check       func(t *testing.T, data []byte) (w, h int)
	}{
		{"png", shotd.FormatPNG, "image/png", func(t *testing.T, data []byte) (int, int) {
			if !bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")) {
				t.Fatalf("no png signature: % x", data[:8])
			}
			b := decodePNG(t, data).Bounds()
			return b.Dx(), b.Dy()
		}},
		{"jpeg", shotd.FormatJPEG, "image/jpeg", func(t *testing.T, data []byte) (int, int) {
			if !bytes.HasPrefix(data, []byte{0xff, 0xd8, 0xff}) {
				t.Fatalf("no jpeg signature: % x", data[:3])
			}
			img, err := jpeg.Decode(bytes.NewReader(data))
			if err != nil {
				t.Fatalf("decode jpeg: %v", err)
			}
			return img.Bounds().Dx(), img.Bounds().Dy()
		}},
		{"webp", shotd.FormatWebP, "image/webp", func(t *testing.T, data []byte) (int, int) {
			if len(data) < 16 || string(data[:4]) != "RIFF" || string(data[8:12]) != "WEBP" {
				t.Fatalf("no RIFF....WEBP header: %q", data[:16])
			}
			if c := string(data[12:16]); c != "VP8 " && c != "VP8L" && c != "VP8X" {
				t.Fatalf("unknown webp chunk %q", c)
			}
			w, h, err := webpSize(data)
			if err != nil {
				t.Fatal(err)
			}
			return w, h
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := opts(srv.URL)
			o.Format = tt.format
			out := mustRender(t, shared, o)
			w, h := tt.check(t, out.Data)
			if w != 400 || h != 300 {
				t.Errorf("decoded size %dx%d, want 400x300", w, h)
			}
			if out.Width != 400 || out.Height != 300 {
				t.Errorf("Output size %dx%d, want 400x300", out.Width, out.Height)
			}
			if out.ContentType != tt.contentType || out.Format != tt.format {
				t.Errorf("content type %q format %q, want %q %q", out.ContentType, out.Format, tt.contentType, tt.format)
			}
			if out.RenderMs <= 0 {
				t.Errorf("RenderMs = %d", out.RenderMs)
			}
		})
	}
}

func TestImageQuality(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/", htmlPage(noisyPage))
	srv, _ := server(t, mux)

	size := map[int]int{}
	for _, q := range []int{10, 95} {
		o := opts(srv.URL)
		o.Format = shotd.FormatJPEG
		o.ImageQuality = q
		size[q] = len(mustRender(t, shared, o).Data)
	}
	if size[95] < 2*size[10] {
		t.Errorf("jpeg sizes: quality 10 = %d bytes, quality 95 = %d bytes; want the second at least twice the first", size[10], size[95])
	}
}

// beacon records the query of each /beacon request, so that pages can report what they see.
type beacon struct {
	mu   sync.Mutex
	got  []url.Values
	hdrs []http.Header
}

func (b *beacon) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	b.got = append(b.got, r.URL.Query())
	b.hdrs = append(b.hdrs, r.Header.Clone())
	b.mu.Unlock()
	w.Header().Set("Content-Type", "image/gif")
	w.Write([]byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;"))
}

func (b *beacon) last(t *testing.T) (url.Values, http.Header) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.got) == 0 {
		t.Fatal("the page sent no beacon")
	}
	return b.got[len(b.got)-1], b.hdrs[len(b.hdrs)-1]
}

// reportPage sends the JS expressions of kv (name, expression, ...) in order to /beacon; the
// image delays the load event, so a load wait sees it sent.
func reportPage(kv ...string) string {
	var parts []string
	for i := 0; i+1 < len(kv); i += 2 {
		parts = append(parts, fmt.Sprintf("%q + '=' + encodeURIComponent(%s)", kv[i], kv[i+1]))
	}
	return `<!doctype html><html><head><meta name="viewport" content="width=device-width"></head><body><script>
document.write('<img src="/beacon?' + [` + strings.Join(parts, ", ") + `].join('&') + '">');
</script></body></html>`
}

// reportServer serves reportPage(kv...) at every path and collects its beacons.
func reportServer(t *testing.T, kv ...string) (*httptest.Server, *beacon) {
	t.Helper()
	b := &beacon{}
	mux := http.NewServeMux()
	mux.Handle("/beacon", b)
	mux.HandleFunc("/", htmlPage(reportPage(kv...)))
	srv, _ := server(t, mux)
	return srv, b
}

func TestViewport(t *testing.T) {
	srv, b := reportServer(t,
		"w", "innerWidth",
		"dpr", "devicePixelRatio",
		"orientation", "screen.orientation.type",
		"touch", "navigator.maxTouchPoints",
	)

	tests := []struct {
		name         string
		w, h         int
		scale        float64
		mobile       bool
		landscape    bool
		touch        bool
		wantW, wantH int
		wantDPR      string
		orientation  string // "": not checked (a desktop follows its width and height)
		wantTouch    bool
	}{
		{name: "desktop", w: 400, h: 300, scale: 1, wantW: 400, wantH: 300, wantDPR: "1"},
		{name: "retina", w: 400, h: 300, scale: 2, wantW: 800, wantH: 600, wantDPR: "2"},
		{name: "phone", w: 375, h: 667, scale: 3, mobile: true, touch: true, wantW: 1125, wantH: 2001, wantDPR: "3", orientation: "portrait-primary", wantTouch: true},
		{name: "phone landscape", w: 667, h: 375, scale: 2, mobile: true, landscape: true, touch: true, wantW: 1334, wantH: 750, wantDPR: "2", orientation: "landscape-primary", wantTouch: true},
		{name: "fractional", w: 333, h: 201, scale: 1.5, wantW: 500, wantH: 302, wantDPR: "1.5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := opts(srv.URL)
			o.ViewportWidth, o.ViewportHeight, o.DeviceScaleFactor = tt.w, tt.h, tt.scale
			o.ViewportMobile, o.ViewportLandscape, o.HasTouch = tt.mobile, tt.landscape, tt.touch
			out := mustRender(t, shared, o)
			bounds := decodePNG(t, out.Data).Bounds()
			if bounds.Dx() != tt.wantW || bounds.Dy() != tt.wantH || out.Width != tt.wantW || out.Height != tt.wantH {
				t.Errorf("png %dx%d, Output %dx%d, want %dx%d", bounds.Dx(), bounds.Dy(), out.Width, out.Height, tt.wantW, tt.wantH)
			}
			q, _ := b.last(t)
			if got := q.Get("w"); got != fmt.Sprint(tt.w) {
				t.Errorf("innerWidth = %s, want %d", got, tt.w)
			}
			if got := q.Get("dpr"); got != tt.wantDPR {
				t.Errorf("devicePixelRatio = %s, want %s", got, tt.wantDPR)
			}
			if got := q.Get("orientation"); tt.orientation != "" && got != tt.orientation {
				t.Errorf("screen.orientation.type = %s, want %s", got, tt.orientation)
			}
			if got := q.Get("touch") != "0"; got != tt.wantTouch {
				t.Errorf("navigator.maxTouchPoints = %s, want touch %v", q.Get("touch"), tt.wantTouch)
			}
		})
	}
}

func TestUserAgent(t *testing.T) {
	b := &beacon{}
	var mu sync.Mutex
	var pageUA string
	mux := http.NewServeMux()
	mux.Handle("/beacon", b)
	report := htmlPage(reportPage("ua", "navigator.userAgent"))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		pageUA = r.UserAgent()
		mu.Unlock()
		report(w, r)
	})
	srv, _ := server(t, mux)

	tests := []struct {
		name string
		ua   string
	}{
		{"custom", "shotd-test-agent/1.0 (+https://example.com)"},
		{"default", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := opts(srv.URL)
			o.UserAgent = tt.ua
			mustRender(t, shared, o)
			q, h := b.last(t)
			mu.Lock()
			header := pageUA
			mu.Unlock()
			if tt.ua == "" {
				// Desktop Chrome's, never the headless one that sites turn away.
				if !strings.Contains(header, " Chrome/") || strings.Contains(header, "Headless") || q.Get("ua") != header {
					t.Errorf("default agent: header %q, navigator %q", header, q.Get("ua"))
				}
				return
			}
			if header != tt.ua || h.Get("User-Agent") != tt.ua {
				t.Errorf("User-Agent header %q (subresource %q), want %q", header, h.Get("User-Agent"), tt.ua)
			}
			if q.Get("ua") != tt.ua {
				t.Errorf("navigator.userAgent = %q, want %q", q.Get("ua"), tt.ua)
			}
		})
	}
}

// TestIsolation: what one render stores (cookie, localStorage) is gone in the next.
func TestIsolation(t *testing.T) {
	b := &beacon{}
	var mu sync.Mutex
	var docCookies []string // Cookie header of each document request
	mux := http.NewServeMux()
	mux.Handle("/beacon", b)
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) { // not /favicon.ico
		mu.Lock()
		docCookies = append(docCookies, r.Header.Get("Cookie"))
		mu.Unlock()
		http.SetCookie(w, &http.Cookie{Name: "visit", Value: "seen", Path: "/", MaxAge: 3600})
		htmlPage(reportPage(
			"cookie", "document.cookie",
			"stored", "localStorage.getItem('k')",
			"set", "localStorage.setItem('k', 'v')",
		))(w, r)
	})
	srv, _ := server(t, mux)

	for i := range 3 {
		mustRender(t, shared, opts(srv.URL))
		q, h := b.last(t)
		// Within a render the cookie works: the beacon carries it.
		if !strings.Contains(h.Get("Cookie"), "visit=seen") || q.Get("cookie") != "visit=seen" {
			t.Fatalf("render %d: cookie within the render: header %q, document.cookie %q", i, h.Get("Cookie"), q.Get("cookie"))
		}
		if q.Get("stored") != "null" {
			t.Errorf("render %d: localStorage from an earlier render: %q", i, q.Get("stored"))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for i, c := range docCookies {
		if c != "" {
			t.Errorf("document request %d carried cookie %q from an earlier render", i, c)
		}
	}
	if len(docCookies) != 3 {
		t.Errorf("%d document requests, want 3", len(docCookies))
	}
}

// slowSite serves /slow?id=X: the first half of the document at once, the rest after hold, with an
// image that takes hold more; it records when each part was done.
type slowSite struct {
	hold time.Duration
	mu   sync.Mutex
	part map[string]time.Time // id + "/doc" and id + "/img": when sent
}

func (s *slowSite) mark(key string) {
	s.mu.Lock()
	s.part[key] = time.Now()
	s.mu.Unlock()
}

func (s *slowSite) at(key string) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.part[key]
}

func (s *slowSite) sleep(r *http.Request) {
	select {
	case <-time.After(s.hold):
	case <-r.Context().Done():
	}
}

func (s *slowSite) mux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("id")
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<!doctype html><html><body><p>first half</p>"+strings.Repeat(" ", 2048))
		w.(http.Flusher).Flush()
		s.sleep(r)
		fmt.Fprintf(w, `<img src="/img?id=%s"></body></html>`, id)
		s.mark(id + "/doc")
	})
	mux.HandleFunc("/img", func(w http.ResponseWriter, r *http.Request) {
		s.sleep(r)
		w.Header().Set("Content-Type", "image/gif")
		w.Write([]byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;"))
		s.mark(r.URL.Query().Get("id") + "/img")
	})
	return mux
}

func TestWaitUntil(t *testing.T) {
	site := &slowSite{hold: time.Second, part: map[string]time.Time{}}
	srv, _ := server(t, site.mux())

	// Render end against the server's clock: before or after the document's second half (doc)
	// and the image (img) were sent.
	notPastImage := func(end, doc, img time.Time) error {
		if !img.IsZero() && !end.Before(img) {
			return fmt.Errorf("waited %v past the image", end.Sub(img))
		}
		return nil
	}
	imageLoaded := func(end, doc, img time.Time) error {
		if img.IsZero() || end.Before(img) {
			return fmt.Errorf("returned before the image was loaded")
		}
		return nil
	}
	quietAfterImage := func(end, doc, img time.Time) error {
		if img.IsZero() || end.Sub(img) < 450*time.Millisecond {
			return fmt.Errorf("returned %v after the last request, want 500ms of quiet", end.Sub(img))
		}
		return nil
	}
	tests := []struct {
		name      string
		html      bool
		waitUntil string
		check     func(end, doc, img time.Time) error
	}{
		{"commit", false, shotd.WaitCommit, func(end, doc, img time.Time) error {
			if !doc.IsZero() && !end.Before(doc) {
				return fmt.Errorf("returned %v after the document was complete", end.Sub(doc))
			}
			return nil
		}},
		{"domcontentloaded", false, shotd.WaitDOMContentLoaded, func(end, doc, img time.Time) error {
			if doc.IsZero() || end.Before(doc) {
				return fmt.Errorf("returned before the document was complete")
			}
			return notPastImage(end, doc, img)
		}},
		{"load", false, shotd.WaitLoad, imageLoaded},
		{"networkidle", false, shotd.WaitNetworkIdle, quietAfterImage},
		{"html commit", true, shotd.WaitCommit, notPastImage},
		{"html domcontentloaded", true, shotd.WaitDOMContentLoaded, notPastImage},
		{"html load", true, shotd.WaitLoad, imageLoaded},
		{"html networkidle", true, shotd.WaitNetworkIdle, quietAfterImage},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := fmt.Sprint(i)
			o := opts(fmt.Sprintf("%s/slow?id=%s", srv.URL, id))
			if tt.html {
				o = htmlOpts(fmt.Sprintf(`<p>html</p><img src="%s/img?id=%s">`, srv.URL, id))
			}
			o.WaitUntil = tt.waitUntil
			mustRender(t, shared, o)
			end := time.Now()
			if err := tt.check(end, site.at(id+"/doc"), site.at(id+"/img")); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestDelay: a page that turns red 600ms after load is white without delay and red with one.
func TestDelay(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/", htmlPage(`<body style="background:#fff"><script>
addEventListener('load', () => setTimeout(() => document.body.style.background = '#f00', 600));
</script></body>`))
	srv, _ := server(t, mux)

	tests := []struct {
		name  string
		delay time.Duration
		want  [3]uint8
	}{
		{"none", 0, [3]uint8{255, 255, 255}},
		{"1.5s", 1500 * time.Millisecond, [3]uint8{255, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := opts(srv.URL)
			o.Delay = tt.delay
			start := time.Now()
			out := mustRender(t, shared, o)
			if took := time.Since(start); took < tt.delay {
				t.Errorf("render took %v, less than the delay", took)
			}
			if got := rgbAt(decodePNG(t, out.Data), 200, 150); got != tt.want {
				t.Errorf("pixel %v, want %v", got, tt.want)
			}
		})
	}
}

func TestTimeout(t *testing.T) {
	mux := http.NewServeMux()
	srv, release := server(t, mux)
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	mux.HandleFunc("/img", htmlPage(`<img src="/hang">`))
	mux.HandleFunc("/poll", htmlPage(`<script>setInterval(() => fetch('/poll-data?' + Math.random()), 150)</script>`))
	mux.HandleFunc("/poll-data", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("x")) })

	tests := []struct {
		name      string
		path      string
		waitUntil string
	}{
		{"document never answers", "/hang", shotd.WaitCommit},
		{"image never loads", "/img", shotd.WaitLoad},
		{"network never idle", "/poll", shotd.WaitNetworkIdle},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := opts(srv.URL + tt.path)
			o.WaitUntil = tt.waitUntil
			o.Timeout = time.Second
			start := time.Now()
			_, err := doRender(t, shared, o)
			took := time.Since(start)
			e := wantCode(t, err, shotd.CodeTimeout)
			if took < time.Second || took > 3*time.Second {
				t.Errorf("timed out after %v, want about 1s", took)
			}
			if !strings.Contains(e.Message, "timeout") {
				t.Errorf("message %q", e.Message)
			}
		})
	}
}

func TestNavigationFailed(t *testing.T) {
	// A loopback port that was just free: nothing listens there.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()

	_, err = doRender(t, shared, opts("http://"+addr+"/"))
	e := wantCode(t, err, shotd.CodeNavigationFailed)
	if !strings.Contains(e.Message, "net::ERR_CONNECTION_REFUSED") {
		t.Errorf("message %q does not name the net error", e.Message)
	}
	if strings.Contains(e.Message, addr) {
		t.Errorf("message %q shows the address", e.Message)
	}
}

// TestHTTPErrorPages: 4xx and 5xx answers are pages like any other.
func TestHTTPErrorPages(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		status := 404
		fmt.Sscan(strings.TrimPrefix(r.URL.Path, "/"), &status)
		if r.URL.Query().Has("empty") {
			w.WriteHeader(status)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(status)
		fmt.Fprintf(w, `<body style="background:#00f">error %d</body>`, status)
	})
	srv, _ := server(t, mux)

	tests := []struct {
		name string
		path string
		blue bool
	}{
		{"404 page", "/404", true},
		{"500 page", "/500", true},
		{"503 empty body", "/503?empty", false},
		{"404 empty body", "/404?empty", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := mustRender(t, shared, opts(srv.URL+tt.path))
			got := rgbAt(decodePNG(t, out.Data), 390, 290)
			if blue := got == [3]uint8{0, 0, 255}; blue != tt.blue {
				t.Errorf("pixel %v, want the page's own blue %v", got, tt.blue)
			}
		})
	}
}

func TestHTMLSource(t *testing.T) {
	tests := []struct {
		name string
		html string
		want [3]uint8
	}{
		{"fragment", `<body style="margin:0;background:rgb(0,128,0)">hello</body>`, [3]uint8{0, 128, 0}},
		{"script", `<body><script>document.body.style.background = 'rgb(255,0,255)'</script></body>`, [3]uint8{255, 0, 255}},
		// Larger than one websocket frame buffer: the message goes out fragmented.
		{"large", `<body style="background:rgb(10,20,30)"><!--` + strings.Repeat("x", 300<<10) + `--></body>`, [3]uint8{10, 20, 30}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := mustRender(t, shared, htmlOpts(tt.html))
			if got := rgbAt(decodePNG(t, out.Data), 200, 150); got != tt.want {
				t.Errorf("pixel %v, want %v", got, tt.want)
			}
		})
	}
}

func TestConcurrentRenders(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		htmlPage(fmt.Sprintf(`<body style="background:rgb(%s,0,0)"></body>`, r.URL.Query().Get("r")))(w, r)
	})
	srv, _ := server(t, mux)

	const n = 6
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			out, err := doRender(t, shared, opts(fmt.Sprintf("%s/?r=%d", srv.URL, 40*i)))
			if err != nil {
				errs[i] = err
				return
			}
			img, err := pngDecode(out.Data)
			if err != nil {
				errs[i] = err
				return
			}
			if got := rgbAt(img, 10, 10); got != [3]uint8{uint8(40 * i), 0, 0} {
				errs[i] = fmt.Errorf("render %d got pixel %v: another render's page", i, got)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func TestRenderRejects(t *testing.T) {
	tests := []struct {
		name string
		o    *shotd.Options
		code shotd.Code
	}{
		{"nil options", nil, shotd.CodeInternalError},
		{"no source", &shotd.Options{Format: shotd.FormatPNG}, shotd.CodeInternalError},
		{"unknown format", &shotd.Options{HTML: "<p>x</p>", Format: "bmp"}, shotd.CodeInvalidOptions},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := doRender(t, shared, tt.o)
			wantCode(t, err, tt.code)
		})
	}
}

// TestOpenTarget: a Target loads a page with nothing of a render around it, and its Close
// disposes its browser context.
func TestOpenTarget(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/", htmlPage("<h1>raw</h1>"))
	srv, _ := server(t, mux)
	ctx := t.Context()
	tg, err := shared.OpenTarget(ctx)
	if err != nil {
		t.Fatal(err)
	}
	nav, err := tg.Client.Page.Navigate(ctx, page.NewNavigateArgs(srv.URL))
	if err != nil || nav.LoaderID == nil {
		t.Fatalf("navigate: %+v, %v", nav, err)
	}
	if err := tg.AwaitLoad(ctx, *nav.LoaderID); err != nil {
		t.Fatalf("await the load: %v", err)
	}
	bc := tg.t.browserContext
	tg.Close()
	ids, err := shared.browser.Target.GetBrowserContexts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(ids.BrowserContextIDs, bc) {
		t.Errorf("browser context %s outlived Close", bc)
	}
}

// TestPageTrouble: a dialog does not stall the render; a crashed renderer ends it at once.
func TestPageTrouble(t *testing.T) {
	tests := []struct {
		name string
		o    *shotd.Options
		code shotd.Code // "" = success
		want [3]uint8
	}{
		{name: "alert", o: htmlOpts(`<body style="background:rgb(0,255,0)"><script>alert('hi'); confirm('sure?'); prompt('name')</script></body>`), want: [3]uint8{0, 255, 0}},
		{name: "crash", o: htmlOpts(`<p>about to crash</p>`), code: shotd.CodePageCrashed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.Timeout = 10 * time.Second
			if tt.code != "" {
				// Crash the renderer between navigate and wait; the wait for load must end.
				testHookAfterStep = func(step string, tb *tab) {
					if step == "navigate" {
						ctx, cancel := context.WithTimeout(context.Background(), time.Second)
						defer cancel()
						tb.c.Page.Crash(ctx) // answers with an error or not at all
					}
				}
				defer func() { testHookAfterStep = nil }()
			}
			start := time.Now()
			out, err := doRender(t, shared, tt.o)
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("render took %v", took)
			}
			if tt.code != "" {
				e := wantCode(t, err, tt.code)
				if !strings.Contains(e.Message, "crashed") {
					t.Errorf("message %q", e.Message)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := rgbAt(decodePNG(t, out.Data), 200, 150); got != tt.want {
				t.Errorf("pixel %v, want %v", got, tt.want)
			}
		})
	}
}

// TestCancel: the caller's cancellation ends a render at once, as a retryable internal error.
func TestCancel(t *testing.T) {
	mux := http.NewServeMux()
	srv, release := server(t, mux)
	mux.HandleFunc("/", htmlPage(`<img src="/hang">`))
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(500*time.Millisecond, cancel)
	start := time.Now()
	_, err := shared.Render(ctx, opts(srv.URL))
	if took := time.Since(start); took > 1500*time.Millisecond {
		t.Errorf("returned %v after the start, cancelled at 500ms", took)
	}
	e := wantCode(t, err, shotd.CodeInternalError)
	if !strings.Contains(e.Message, "cancelled") || !errors.Is(err, context.Canceled) {
		t.Errorf("error %v: want a cancellation that keeps context.Canceled", err)
	}
}

// panicBlocker panics when the render asks it for its element hiding: a bug in the render's own
// code, in the render's goroutine.
type panicBlocker struct{}

func (panicBlocker) Block(string, string, string) bool { return false }
func (panicBlocker) HideCSS(string) string             { panic("a bug in the blocker") }

// TestRenderPanicContained: a panic in a render's step answers internal_error, and the Process
// goes on rendering.
func TestRenderPanicContained(t *testing.T) {
	p := launchConfig(t, Config{Path: testenv.Browser(), Isolation: IsolationWipe, Prewarm: 1,
		Blocker: func(o *shotd.Options) Blocker {
			if o.BlockAds {
				return panicBlocker{}
			}
			return nil
		},
		Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)})
	o := htmlOpts("<p>x</p>")
	o.BlockAds = true
	if _, err := doRender(t, p, o); shotd.CodeOf(err) != shotd.CodeInternalError {
		t.Fatalf("a render that panicked: %v, want internal_error", err)
	}
	mustRender(t, p, htmlOpts("<p>after</p>"))
}
