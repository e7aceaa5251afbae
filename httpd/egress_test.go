package httpd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/color"
	"image/png"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/internal/testkit"
)

// The end-to-end tests of the egress guard: real Chromium behind the real egress proxy,
// with only 127.0.0.1/32 allow-listed. 127.0.0.3 stands for every address that must never be
// reached: a canary listens there, on the fixture's own port and on others, and counts every
// connection it accepts. Each test ends by checking that it saw none.

// egressCanaryWait is how long Chrome gets after a render before the canary is read: a refused
// connection attempt would have landed by then.
const egressCanaryWait = 500 * time.Millisecond

// egressSite is an allowed fixture server on 127.0.0.1:port with a canary on 127.0.0.3 at the
// same port, on another port, on 80 and 443 when they are free, and on [::1] at the same port
// (localhost means ::1 too, which is not allow-listed).
type egressSite struct {
	srv       *httptest.Server
	port      string // the fixture's port, which the main canary shares
	other     string // a second canary port on 127.0.0.3
	has80     bool   // the canary also holds 127.0.0.3:80
	has443    bool   // and 127.0.0.3:443
	canary    *testkit.Canary
	mu        sync.Mutex
	hits      []string // paths (with query) that reached the fixture, in order
	hookSeen  atomic.Int32
	pageRules *strings.Replacer
}

func newEgressSite(t *testing.T) *egressSite {
	t.Helper()
	s := &egressSite{canary: testkit.NewCanary(t)}
	c := s.canary
	// The canary must share the fixture's port; a port taken on 127.0.0.3 makes us try another.
	for attempt := 0; ; attempt++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
		if _, err := c.Listen("127.0.0.3:" + port); err == nil {
			s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
			s.srv.Listener.Close()
			s.srv.Listener = ln
			s.srv.Start()
			s.port = port
			break
		} else if attempt == 4 {
			t.Fatalf("canary cannot listen on 127.0.0.3:%s: %v", port, err)
		}
		ln.Close()
	}
	other, err := c.Listen("127.0.0.3:0")
	if err != nil {
		t.Fatalf("canary cannot listen on 127.0.0.3:0: %v", err)
	}
	s.other = fmt.Sprint(other.Port)
	s.has80 = listenIfFree(t, c, "127.0.0.3:80")
	s.has443 = listenIfFree(t, c, "127.0.0.3:443")
	listenIfFree(t, c, "[::1]:"+s.port)
	s.pageRules = strings.NewReplacer("{C}", s.canaryURL(), "{CH}", "127.0.0.3:"+s.port, "{W}", s.srv.URL, "{WH}", "127.0.0.1:"+s.port)
	t.Cleanup(func() {
		// Every test ends here: give Chrome its moment, then the canary must have seen nothing.
		time.Sleep(egressCanaryWait)
		c.CheckUntouched(t)
		s.srv.Close()
	})
	return s
}

// listenIfFree adds addr to the canary when it can be had.
func listenIfFree(t *testing.T, c *testkit.Canary, addr string) bool {
	t.Helper()
	if _, err := c.Listen(addr); err != nil {
		t.Logf("canary: %s not available (%v); its forms are checked on the other listeners", addr, err)
		return false
	}
	return true
}

// canaryURL is the base URL of the canary on the fixture's own port.
func (s *egressSite) canaryURL() string { return "http://127.0.0.3:" + s.port }

// url is a fixture URL on the allowed 127.0.0.1.
func (s *egressSite) url(path string) string { return s.srv.URL + path }

func (s *egressSite) hit(path string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.ContainsFunc(s.hits, func(h string) bool { return h == path || strings.HasPrefix(h, path+"?") })
}

func (s *egressSite) hitCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.hits)
}

// waitHit waits up to d for the fixture to have served path.
func (s *egressSite) waitHit(path string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for !s.hit(path) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// checkCanary fails the test when the canary has accepted more than before connections, after
// the moment Chrome gets to make them.
func (s *egressSite) checkCanary(t *testing.T, before int, wait time.Duration) {
	t.Helper()
	time.Sleep(wait)
	if n := s.canary.Count(); n != before {
		t.Fatalf("the canary accepted %d connections", n-before)
	}
}

// pageBG is the background of every fixture page: a capture of that colour is of the page
// itself, not of something it navigated to.
var pageBG = color.RGBA{0x1e, 0x9e, 0x5a, 0xff}

const pageHead = `<!doctype html><html><head><meta charset="utf-8"><style>body{background:#1e9e5a;margin:0}` +
	`iframe,img,object{width:40px;height:30px;border:0}</style>`

// subPages are pages that try to reach the canary with one kind of request and then, once that
// attempt has ended, make the same kind of request to a witness path on the allowed fixture: the
// witness proves the page ran and the mechanism works, so that zero canary connections means
// refused, not never tried.
// subPage is a page of TestEgressSubresources: body follows pageHead, and witness is the fixture
// path that the page requests after its attempt on the canary has ended. Elements that hold up
// the load event need no delay; scripted attempts and preloads run after it.
type subPage struct {
	name, witness string
	delay         bool
	body          string
}

var subPages = []subPage{
	{"img", "/witness/img", false, `</head><body><img src="{C}/x.png"><img src="{W}/witness/img">`},
	{"script", "/witness/script", false, `<script src="{C}/x.js"></script><script src="{W}/witness/script"></script></head><body>`},
	{"iframe", "/witness/iframe", false, `</head><body><iframe src="{C}/"></iframe><iframe src="{W}/witness/iframe"></iframe>`},
	{"stylesheet", "/witness/stylesheet", false, `<link rel="stylesheet" href="{C}/x.css"><link rel="stylesheet" href="{W}/witness/stylesheet"></head><body>`},
	{"css url", "/witness/css-url", true, `</head><body><div style="width:9px;height:9px;background:url({C}/bg.png)"></div><div style="width:9px;height:9px;background:url({W}/witness/css-url)"></div>`},
	{"preload", "/witness/preload", true, `<link rel="preload" as="image" href="{C}/pre.png"><link rel="preload" as="image" href="{W}/witness/preload"></head><body>`},
	// The fixture's /redirect/302 sends the request on to the canary: the hop is what is refused.
	{"img via redirect", "/witness/img-redirect", false, `</head><body><img src="{W}/redirect/302"><img src="{W}/witness/img-redirect">`},
	{"iframe via redirect", "/witness/iframe-redirect", false, `</head><body><iframe src="{W}/redirect/302"></iframe><iframe src="{W}/witness/iframe-redirect"></iframe>`},
	{"fetch", "/witness/fetch", true, `</head><body><script>fetch("{C}/f", {mode: "no-cors"}).catch(() => {}).finally(() => fetch("{W}/witness/fetch"))</script>`},
	{"xhr", "/witness/xhr", true, `</head><body><script>const x = new XMLHttpRequest(); x.open("GET", "{C}/x");
x.onloadend = () => { const y = new XMLHttpRequest(); y.open("GET", "{W}/witness/xhr"); y.send() }; x.send()</script>`},
	{"websocket", "/witness/websocket", true, `</head><body><script>const ws = new WebSocket("ws://{CH}/ws");
ws.onclose = () => new WebSocket("ws://{WH}/witness/websocket")</script>`},
	{"secure websocket", "/witness/wss", true, `</head><body><script>const ws = new WebSocket("wss://{CH}/ws");
ws.onclose = () => new WebSocket("ws://{WH}/witness/wss")</script>`},
	{"eventsource", "/witness/eventsource", true, `</head><body><script>const es = new EventSource("{C}/es");
es.onerror = () => { es.close(); new EventSource("{W}/witness/eventsource") }</script>`},
	{"beacon", "/witness/beacon", true, `</head><body><script>navigator.sendBeacon("{C}/b", "x"); navigator.sendBeacon("{W}/witness/beacon", "x")</script>`},
	{"iframe form", "/witness/iframe-form", true, `</head><body><iframe name="f"></iframe><form target="f" method="post" action="{C}/form"><input name="a" value="b"></form>
<form target="f" method="post" action="{W}/witness/iframe-form"><input name="a" value="b"></form>
<script>document.forms[0].submit(); setTimeout(() => document.forms[1].submit(), 100)</script>`},
}

// navPages navigate the main frame to {T}: meta refresh once loaded, the others while the page is
// still being parsed.
var navPages = map[string]string{
	"meta refresh": `<meta http-equiv="refresh" content="0;url={T}"></head><body>`,
	"location":     `</head><body><script>location = "{T}"</script>`,
	"link click":   `</head><body><a id="a" href="{T}">x</a><script>document.getElementById("a").click()</script>`,
	"form submit":  `</head><body><form method="post" action="{T}"><input name="a" value="b"></form><script>document.forms[0].submit()</script>`,
}

func (s *egressSite) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.hits = append(s.hits, r.URL.RequestURI())
	s.mu.Unlock()
	p := r.URL.Path
	switch {
	case p == "/" || p == "/page":
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, pageHead+`</head><body>allowed</body></html>`)
	case strings.HasPrefix(p, "/witness/"):
		w.WriteHeader(http.StatusNoContent)
	case strings.HasPrefix(p, "/redirect/"):
		// /redirect/CODE?to=URL answers CODE with Location URL (default: the canary).
		to := r.URL.Query().Get("to")
		if to == "" {
			to = s.canaryURL() + "/redirected"
		}
		var code int
		fmt.Sscan(strings.TrimPrefix(p, "/redirect/"), &code)
		http.Redirect(w, r, to, code)
	case p == "/chain1":
		http.Redirect(w, r, s.srv.URL+"/chain2", http.StatusFound)
	case p == "/chain2":
		http.Redirect(w, r, "http://127.0.0.1:"+s.port+"/chain3", http.StatusFound)
	case p == "/chain3":
		http.Redirect(w, r, s.canaryURL()+"/end-of-chain", http.StatusFound)
	case strings.HasPrefix(p, "/sub/"):
		i := slices.IndexFunc(subPages, func(sp subPage) bool { return sp.name == strings.TrimPrefix(p, "/sub/") })
		if i < 0 {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, s.pageRules.Replace(pageHead+subPages[i].body+"</body></html>"))
	case strings.HasPrefix(p, "/nav/"):
		body, ok := navPages[strings.TrimPrefix(p, "/nav/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		// {T} sits inside an attribute or a JS string: the targets used here need no escaping.
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, strings.ReplaceAll(pageHead+body+"</body></html>", "{T}", r.URL.Query().Get("to")))
	case p == "/hook-redirect":
		// A webhook receiver that sends the delivery on to the canary.
		s.hookSeen.Add(1)
		code := http.StatusFound
		if r.URL.Query().Get("code") == "307" {
			code = http.StatusTemporaryRedirect
		}
		http.Redirect(w, r, s.canaryURL()+"/hook", code)
	default:
		http.NotFound(w, r)
	}
}

// egressShot renders with a small viewport and the given options on top.
func egressShot(t *testing.T, a account, kv ...string) answer {
	t.Helper()
	q := a.q("viewport_width", "400", "viewport_height", "300")
	for i := 0; i < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	return get(t, "/api/v1/screenshot", q)
}

// wantPageCapture checks that an answer is a 400x300 PNG whose corner has the fixture pages'
// background: the capture is of the page itself.
func wantPageCapture(t *testing.T, r answer) {
	t.Helper()
	if r.status != 200 || r.header.Get("Content-Type") != "image/png" {
		t.Fatalf("render: status %d, %s, %d bytes; want a png", r.status, r.header.Get("Content-Type"), len(r.body))
	}
	if c, ok := cornerColour(r.body); !ok || !near(c, pageBG) {
		t.Fatalf("the capture's corner is %v, want the page background %v", c, pageBG)
	}
}

// cornerColour is the colour near the bottom-right corner of a PNG.
func cornerColour(b []byte) (color.RGBA, bool) {
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		return color.RGBA{}, false
	}
	r := img.Bounds()
	return color.RGBAModel.Convert(img.At(r.Max.X-5, r.Max.Y-5)).(color.RGBA), true
}

func near(a, b color.RGBA) bool {
	d := func(x, y uint8) bool { return x-y < 8 || y-x < 8 }
	return d(a.R, b.R) && d(a.G, b.G) && d(a.B, b.B)
}

// TestEgressDirectURL: a url aimed at a refused address, in every spelling, is answered 403
// host_not_allowed at once, without rendering and without billing.
func TestEgressDirectURL(t *testing.T) {
	s := newEgressSite(t)
	a := newAccount(t, "jobs", true)
	p, o := s.port, s.other
	type tc struct {
		name, url string
		code      shotd.Code // "" = host_not_allowed
	}
	cases := []tc{
		{"dotted", "http://127.0.0.3:" + p + "/", ""},
		{"dotted, other port", "http://127.0.0.3:" + o + "/", ""},
		{"decimal", "http://2130706435:" + p + "/", ""},
		{"hex", "http://0x7f000003:" + p + "/", ""},
		{"octal", "http://0177.0.0.3:" + p + "/", ""},
		{"hex parts", "http://0x7f.0.0.0x3:" + p + "/", ""},
		{"short 127.3", "http://127.3:" + p + "/", ""},
		{"short 127.0.3", "http://127.0.3:" + p + "/", ""},
		{"short hex 0x7f.3", "http://0x7f.3:" + p + "/", ""},
		{"trailing dot", "http://127.0.0.3.:" + p + "/", ""},
		{"decimal, trailing dot", "http://2130706435.:" + p + "/", ""},
		// Go's URL parser allows percent-encoding in a host only for bytes >= 0x80: the url is
		// refused as invalid before the guard sees it. Refused either way, and never rendered.
		{"percent-encoded", "http://127.0.0.%33:" + p + "/", shotd.CodeInvalidURL},
		{"full-width digits", "http://１２７．０．０．３:" + p + "/", ""},
		{"mapped ipv6 dotted", "http://[::ffff:127.0.0.3]:" + p + "/", ""},
		{"mapped ipv6 hex", "http://[::ffff:7f00:3]:" + p + "/", ""},
		{"mapped ipv6 long", "http://[0:0:0:0:0:ffff:7f00:0003]:" + p + "/", ""},
		{"ipv4-compatible", "http://[::127.0.0.3]:" + p + "/", ""},
		{"nat64", "http://[64:ff9b::7f00:3]:" + p + "/", ""},
		{"6to4", "http://[2002:7f00:3::1]:" + p + "/", ""},
		{"upper-case scheme", "HTTP://127.0.0.3:" + p + "/", ""},
		{"https dotted", "https://127.0.0.3:" + p + "/", ""},
		{"https decimal", "https://2130706435:" + p + "/", ""},
		{"https hex", "https://0x7f000003:" + p + "/", ""},
		{"https octal", "https://0177.0.0.3:" + p + "/", ""},
		{"https short", "https://127.3:" + p + "/", ""},
		{"https mapped ipv6", "https://[::ffff:7f00:3]:" + p + "/", ""},
		{"https trailing dot", "https://127.0.0.3.:" + p + "/", ""},
		{"default port", "http://127.0.0.3/", ""},
		{"https default port", "https://127.0.0.3/", ""},
		{"this network 0", "http://0:" + p + "/", ""},
		{"0.0.0.0", "http://0.0.0.0:" + p + "/", ""},
		{"ipv6 unspecified", "http://[::]:" + p + "/", ""},
		{"ipv6 loopback", "http://[::1]:" + p + "/", ""},
		// localhost is resolved without DNS to 127.0.0.1 and ::1; ::1 is not allow-listed and a
		// name with any refused address is refused whole.
		{"localhost", "http://localhost:" + p + "/", ""},
		{"LOCALHOST", "http://LOCALHOST:" + p + "/", ""},
		{"localhost.", "http://localhost.:" + p + "/", ""},
		{"sub.localhost", "http://shotd.localhost:" + p + "/", ""},
		{"userinfo lookalike", "http://127.0.0.1:" + p + "%40127.0.0.3:" + p + "/", shotd.CodeInvalidURL},
		{"userinfo", "http://127.0.0.1:" + p + "@127.0.0.3:" + p + "/", shotd.CodeInvalidURL},
	}
	if !s.has80 {
		cases = slices.DeleteFunc(cases, func(c tc) bool { return c.name == "default port" })
	}
	if !s.has443 {
		cases = slices.DeleteFunc(cases, func(c tc) bool { return c.name == "https default port" })
	}
	before := usageOf(t, a)
	hitsBefore := s.hitCount()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, method := range []string{"GET", "POST"} {
				var r answer
				if method == "GET" {
					r = egressShot(t, a, "url", c.url)
				} else {
					r = postJSON(t, "/api/v1/screenshot", a.key.AccessKey, mustJSON(t, map[string]any{"url": c.url}))
				}
				if c.code == "" {
					wantError(t, r, 403, shotd.CodeHostNotAllowed)
				} else {
					wantError(t, r, 400, c.code)
				}
				if r.header.Get("X-Render-Ms") != "" {
					t.Fatalf("%s: a refused url was rendered", method)
				}
				if strings.Contains(string(r.body), "127.0.0.3") {
					t.Fatalf("%s: the error names the refused address", method)
				}
			}
		})
	}
	t.Run("bulk item", func(t *testing.T) {
		body := map[string]any{"requests": []any{map[string]any{"url": s.url("/")}, map[string]any{"url": "http://2130706435:" + p + "/"}}}
		wantError(t, postJSON(t, "/api/v1/bulk", a.key.AccessKey, mustJSON(t, body)), 403, shotd.CodeHostNotAllowed)
	})
	t.Run("async", func(t *testing.T) {
		body := map[string]any{"url": "http://[::ffff:7f00:3]:" + p + "/", "async": true}
		wantError(t, postJSON(t, "/api/v1/screenshot", a.key.AccessKey, mustJSON(t, body)), 403, shotd.CodeHostNotAllowed)
	})
	if after := usageOf(t, a); after != before {
		t.Fatalf("refused requests changed the usage: %+v -> %+v", before, after)
	}
	if n := s.hitCount() - hitsBefore; n != 0 {
		t.Fatalf("the fixture was contacted %d times", n)
	}
	s.checkCanary(t, 0, 0)
}

// TestEgressPrivateLiterals: private and link-local literals are refused by the classifier alone.
// Nothing is ever sent to them: each url is first checked in process with the guard, and only a
// refusal lets it be sent to the service, whose answer must then be an immediate 403.
func TestEgressPrivateLiterals(t *testing.T) {
	s := newEgressSite(t)
	a := newAccount(t, "jobs", true)
	cases := []struct{ name, url string }{
		{"metadata", "http://169.254.169.254/latest/meta-data/"},
		{"metadata hex", "http://0xa9fea9fe/"},
		{"metadata decimal", "http://2852039166/"},
		{"metadata mapped", "http://[::ffff:169.254.169.254]/"},
		{"link-local", "http://169.254.1.1:8080/"},
		{"10/8", "http://10.0.0.1/"},
		{"10/8 short", "http://10.1/"},
		{"172.16/12", "http://172.16.0.1/"},
		{"192.168/16", "http://192.168.1.1/"},
		{"cgnat", "http://100.64.0.1/"},
		{"unique-local", "http://[fd00::1]/"},
		{"link-local v6 with zone", "http://[fe80::1%25eth0]/"},
		{"link-local v6", "https://[fe80::1]/"},
		{"multicast", "http://224.0.0.1/"},
		{"broadcast", "http://255.255.255.255/"},
		{"teredo of private", "http://[2001:0:a00:1::f5ff:fffe]/"},
	}
	before := usageOf(t, a)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			if err := env.guard.CheckURL(ctx, c.url); shotd.CodeOf(err) != shotd.CodeHostNotAllowed {
				t.Fatalf("the guard does not refuse %s (%v); not sending it to the service", c.url, err)
			}
			start := time.Now()
			r := egressShot(t, a, "url", c.url)
			took := time.Since(start)
			wantError(t, r, 403, shotd.CodeHostNotAllowed)
			// Loopback HTTP on a loaded machine; a connection attempt would take a timeout.
			if took > 2*time.Second {
				t.Fatalf("the refusal took %v: not decided by the classifier alone", took)
			}
		})
	}
	if after := usageOf(t, a); after != before {
		t.Fatalf("refused requests changed the usage: %+v -> %+v", before, after)
	}
	s.checkCanary(t, 0, 0)
}

// TestEgressSchemes: only http and https may be rendered.
func TestEgressSchemes(t *testing.T) {
	s := newEgressSite(t)
	a := newAccount(t, "jobs", true)
	cases := []struct{ name, url string }{
		{"file", "file:///etc/passwd"},
		{"FILE", "FILE:///etc/passwd"},
		{"file with host", "file://127.0.0.1/etc/passwd"},
		{"chrome", "chrome://version"},
		{"chrome-untrusted", "chrome-untrusted://terms/"},
		{"devtools", "devtools://devtools/bundled/inspector.html"},
		{"view-source", "view-source:http://127.0.0.1:" + s.port + "/"},
		{"javascript", "javascript:alert(1)"},
		{"data", "data:text/html,x"},
		{"data base64", "data:text/html;base64,PGgxPng8L2gxPg=="},
		{"blob", "blob:http://127.0.0.1:" + s.port + "/0c3b"},
		{"about", "about:blank"},
		{"ftp", "ftp://127.0.0.1/"},
		{"ws", "ws://127.0.0.1:" + s.port + "/"},
		{"gopher", "gopher://127.0.0.3:" + s.port + "/"},
		{"filesystem", "filesystem:http://127.0.0.1/temporary/x"},
		{"scheme-relative", "//127.0.0.3:" + s.port + "/"},
		{"no slashes", "http:127.0.0.3:" + s.port},
		{"leading space", " http://127.0.0.3:" + s.port + "/"},
	}
	before := usageOf(t, a)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := wantError(t, egressShot(t, a, "url", c.url), 400, shotd.CodeInvalidOptions)
			if e.Errors[0].Field != "url" {
				t.Fatalf("error on %q, want url", e.Errors[0].Field)
			}
		})
	}
	if after := usageOf(t, a); after != before {
		t.Fatalf("refused requests changed the usage: %+v -> %+v", before, after)
	}
	s.checkCanary(t, 0, 0)
}

// TestEgressRedirect: a redirect of the main document to a refused address makes the render 403.
func TestEgressRedirect(t *testing.T) {
	s := newEgressSite(t)
	a := newAccount(t, "jobs", true)
	p := s.port
	type tc struct {
		name, path, hit string // hit: the fixture path that must have been served
	}
	redirect := func(code, to string) string { return "/redirect/" + code + "?to=" + url.QueryEscape(to) }
	cases := []tc{
		// 302, and 307/308 which keep the method and body (301 and 303 take Chrome's 302 path).
		{"302", "/redirect/302", ""},
		{"307", "/redirect/307", ""},
		{"308", "/redirect/308", ""},
		{"chain allowed, allowed, canary", "/chain1", "/chain3"},
		{"to decimal", redirect("302", "http://2130706435:"+p+"/"), ""},
		{"to mapped ipv6", redirect("302", "http://[::ffff:7f00:3]:"+p+"/"), ""},
		{"to short form", redirect("302", "http://127.3:"+p+"/"), ""},
		{"to other port", redirect("302", "http://127.0.0.3:"+s.other+"/"), ""},
		{"to https", redirect("302", "https://127.0.0.3:"+p+"/"), ""},
		{"scheme-relative", redirect("302", "//127.0.0.3:"+p+"/"), ""},
		{"to localhost", redirect("302", "http://localhost:"+p+"/"), ""},
		{"to ipv6 loopback", redirect("302", "http://[::1]:"+p+"/"), ""},
		{"to userinfo", redirect("302", "http://127.0.0.1:"+p+"@127.0.0.3:"+p+"/"), ""},
	}
	if s.has80 {
		cases = append(cases, tc{"to default port", redirect("302", "http://127.0.0.3/"), ""})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := s.canary.Count()
			wantError(t, egressShot(t, a, "url", s.url(c.path)), 403, shotd.CodeHostNotAllowed)
			hit := c.hit
			if hit == "" {
				hit = c.path
			}
			if !s.hit(hit) {
				t.Fatalf("the fixture never served %s: the redirect was not tested", hit)
			}
			s.checkCanary(t, n, 100*time.Millisecond)
		})
	}
	// Chrome itself refuses a redirect from http to file:; either refusal is fine, a capture is not.
	t.Run("to file", func(t *testing.T) {
		r := egressShot(t, a, "url", s.url(redirect("302", "file:///etc/passwd")))
		if r.status == 200 {
			t.Fatalf("a redirect to file: was rendered (%d bytes)", len(r.body))
		}
		e := wantError(t, r, r.status, shotd.Code(errorCode(r)))
		t.Logf("a redirect to file:///etc/passwd answers %d %s", r.status, e.ErrorCode)
	})
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// errorCode reads the error_code of an error answer, or "".
func errorCode(r answer) string {
	var e errorBody
	_ = json.Unmarshal(r.body, &e)
	return e.ErrorCode
}

// TestEgressSubresources: a page on an allowed host tries to reach the canary in every way a page
// can; each attempt fails, the render succeeds, and a witness request of the same kind to the
// allowed fixture shows that the attempt was made.
func TestEgressSubresources(t *testing.T) {
	s := newEgressSite(t)
	a := newAccount(t, "jobs", true)
	for _, c := range subPages {
		t.Run(c.name, func(t *testing.T) {
			n := s.canary.Count()
			delay := "0"
			if c.delay {
				delay = "0.5" // keeps the page open while its scripted attempts run
			}
			r := egressShot(t, a, "url", s.url("/sub/"+c.name), "delay", delay)
			wantPageCapture(t, r)
			if !s.waitHit(c.witness, time.Second) {
				t.Fatalf("the witness %s was never requested: the page did not make its attempts", c.witness)
			}
			s.checkCanary(t, n, 100*time.Millisecond)
		})
	}
}

// TestEgressNavigation: a page that navigates itself to the canary never reaches it; the render
// answers 403 or captures the page itself. A control render of the same page aimed at a witness
// on the fixture (which answers 204, so the page stays) shows that the navigation does happen.
// timeout 3: a render that hangs fails in seconds, not in 30.
func TestEgressNavigation(t *testing.T) {
	s := newEgressSite(t)
	a := newAccount(t, "jobs", true)
	kinds := []string{"meta refresh", "location", "link click", "form submit"}
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			w := "/witness/nav-" + strings.ReplaceAll(kind, " ", "-")
			n := s.canary.Count()
			r := egressShot(t, a, "url", s.url("/nav/"+kind+"?to="+url.QueryEscape(s.canaryURL()+"/nav")), "delay", "0.5", "timeout", "3")
			if r.status == 200 {
				wantPageCapture(t, r)
			} else {
				wantError(t, r, 403, shotd.CodeHostNotAllowed)
			}
			t.Logf("%s to the canary: %d", kind, r.status)
			s.checkCanary(t, n, 100*time.Millisecond)

			r = egressShot(t, a, "url", s.url("/nav/"+kind+"?to="+url.QueryEscape(s.url(w))), "delay", "0.5", "timeout", "3")
			if !s.waitHit(w, time.Second) {
				t.Fatalf("control: the page never navigated to %s", w)
			}
			wantPageCapture(t, r)
		})
	}
}

// TestEgressPopup: window.open to the canary, with the user activation that the scripts option
// gives (without it Chrome's popup blocker stops window.open and nothing is tested). The popup
// is a target of its own that the render does not wait for; its request goes through the proxy.
func TestEgressPopup(t *testing.T) {
	s := newEgressSite(t)
	a := newAccount(t, "jobs", true)
	cases := []struct {
		name, script, witness string
	}{
		{"to the canary", `window.open("{C}/popup")`, ""},
		{"control", `window.open("{W}/witness/popup")`, "/witness/popup"},
		// A popup that shows a page, to tell a popup problem from an egress one.
		{"allowed popup with a page", `window.open("{W}/page")`, "/page"},
		// An allowed popup that then navigates itself to the canary.
		{"allowed popup navigates to the canary", `window.open("{W}/nav/location?to={C}/popup-nav")`, "/nav/location"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := s.canary.Count()
			// The service closes a popup as soon as Chrome reports it, which can be before the
			// popup's first request: a few tries, so that one of them tests the egress path.
			for try := 1; ; try++ {
				r := egressShot(t, a, "url", s.url("/"), "scripts", s.pageRules.Replace(c.script), "delay", "0.5", "timeout", "3")
				wantPageCapture(t, r)
				if c.witness == "" || s.waitHit(c.witness, time.Second) {
					break
				}
				if try == 3 {
					t.Fatalf("the popup never requested %s in %d tries: nothing was tested", c.witness, try)
				}
			}
			s.checkCanary(t, n, 100*time.Millisecond)
		})
	}
}

// TestEgressLocalSchemesFromPage: a page that navigates itself to file:, data:, chrome: or
// view-source: never shows them: the capture keeps the page's own background.
func TestEgressLocalSchemesFromPage(t *testing.T) {
	s := newEgressSite(t)
	a := newAccount(t, "jobs", true)
	cases := []struct{ name, to string }{
		{"file", "file:///etc/passwd"},
		{"data", "data:text/html,<body style='background:red'>data</body>"},
		{"chrome", "chrome://version"},
		{"view-source", "view-source:" + s.url("/")},
	}
	for _, c := range cases {
		for _, kind := range []string{"location", "link click", "scripts option"} {
			if kind != "location" && c.name != "file" && c.name != "data" {
				continue // the other ways are tried on file: and data:; this keeps the run short
			}
			t.Run(c.name+" by "+kind, func(t *testing.T) {
				var r answer
				if kind == "scripts option" {
					// The scripts option runs with a user gesture, as a click would.
					r = egressShot(t, a, "url", s.url("/"), "scripts", "location = "+jsString(c.to), "delay", "0.5", "timeout", "3")
				} else {
					r = egressShot(t, a, "url", s.url("/nav/"+kind+"?to="+url.QueryEscape(c.to)), "delay", "0.5", "timeout", "3")
				}
				if r.status != 200 {
					e := wantError(t, r, r.status, shotd.Code(errorCode(r)))
					t.Logf("%s: the render failed cleanly: %d %s", c.name, r.status, e.ErrorCode)
					return
				}
				wantPageCapture(t, r)
			})
		}
	}
	// Our own html source may not navigate to data: either, nor reach the canary.
	t.Run("html source to data", func(t *testing.T) {
		html := pageHead + `</head><body><script>location = "data:text/html,<body style='background:red'>x</body>"</script></body></html>`
		wantPageCapture(t, egressShot(t, a, "html", html, "delay", "0.5", "timeout", "3"))
	})
	t.Run("html source to file", func(t *testing.T) {
		html := pageHead + `</head><body><script>location = "file:///etc/passwd"</script></body></html>`
		wantPageCapture(t, egressShot(t, a, "html", html, "delay", "0.5", "timeout", "3"))
	})
	t.Run("html source subresources", func(t *testing.T) {
		n := s.canary.Count()
		html := s.pageRules.Replace(pageHead + `</head><body><img src="{C}/i.png"><iframe src="{C}/"></iframe>
<script>fetch("{C}/f", {mode: "no-cors"}).catch(() => {}); new WebSocket("ws://{CH}/ws")</script></body></html>`)
		wantPageCapture(t, egressShot(t, a, "html", html, "delay", "0.5", "timeout", "3"))
		s.checkCanary(t, n, 100*time.Millisecond)
	})
	t.Run("html source navigates to canary", func(t *testing.T) {
		n := s.canary.Count()
		html := s.pageRules.Replace(pageHead + `</head><body><script>location = "{C}/nav"</script></body></html>`)
		r := egressShot(t, a, "html", html, "delay", "0.5", "timeout", "3")
		if r.status == 200 {
			wantPageCapture(t, r)
		} else {
			wantError(t, r, 403, shotd.CodeHostNotAllowed)
		}
		s.checkCanary(t, n, 100*time.Millisecond)
	})
}

// TestEgressWebhook: a webhook aimed at the canary is refused at acceptance; a receiver that
// redirects the delivery to the canary does not get it there.
func TestEgressWebhook(t *testing.T) {
	s := newEgressSite(t)
	a := newAccount(t, "jobs", true)
	before := usageOf(t, a)
	for _, hook := range []string{
		s.canaryURL() + "/hook",
		"http://127.0.0.3:" + s.other + "/hook",
		"http://2130706435:" + s.port + "/hook",
		"http://[::ffff:7f00:3]:" + s.port + "/hook",
		"http://127.3:" + s.port + "/hook",
		"https://127.0.0.3:" + s.port + "/hook",
		"http://localhost:" + s.port + "/hook",
	} {
		t.Run("refused "+hook, func(t *testing.T) {
			for _, src := range []map[string]any{{"url": s.url("/")}, {"html": "<p>x</p>"}} {
				body := map[string]any{"async": true, "webhook_url": hook}
				for k, v := range src {
					body[k] = v
				}
				e := wantError(t, postJSON(t, "/api/v1/screenshot", a.key.AccessKey, mustJSON(t, body)), 403, shotd.CodeHostNotAllowed)
				if strings.Contains(e.ErrorMessage, "127.0.0.3") {
					t.Fatal("the error names the refused address")
				}
			}
		})
	}
	if after := usageOf(t, a); after != before {
		t.Fatalf("refused requests changed the usage: %+v -> %+v", before, after)
	}
	for _, code := range []string{"302", "307"} {
		t.Run("receiver redirects with "+code, func(t *testing.T) {
			n, seen := s.canary.Count(), s.hookSeen.Load()
			id := submit(t, a.key.AccessKey, map[string]any{"html": "<p>hook</p>", "viewport_width": 300, "viewport_height": 200,
				"webhook_url": s.url("/hook-redirect?code=" + code)})
			j := waitDelivered(t, a.key.AccessKey, id)
			if j.Status != "succeeded" {
				t.Fatalf("job %s (%s)", j.Status, j.ErrorCode)
			}
			if j.Webhook.Status != "failed" {
				t.Fatalf("webhook %s after %d attempts, want failed", j.Webhook.Status, j.Webhook.Attempts)
			}
			got := s.hookSeen.Load() - seen
			if got < 1 || int(got) != j.Webhook.Attempts {
				t.Fatalf("the receiver got %d deliveries, the job counts %d attempts", got, j.Webhook.Attempts)
			}
			t.Logf("redirect %s: webhook failed after %d attempts", code, j.Webhook.Attempts)
			s.checkCanary(t, n, egressCanaryWait)
		})
	}
}
