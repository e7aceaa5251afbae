package cdpclient

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/egress"
	"github.com/shotd/shotd/internal/testenv"
	"github.com/shotd/shotd/internal/testkit"
)

// launchGuarded starts a Process of the test's own behind the real egress guard and proxy, with
// only 127.0.0.1 allowed, or the allow prefixes: 127.0.0.3 stands for every address a page must
// not reach.
func launchGuarded(t *testing.T, allow ...string) *Process {
	t.Helper()
	return launchGuardedFlags(t, nil, allow...)
}

// launchGuardedFlags is launchGuarded with extra Chrome flags.
func launchGuardedFlags(t *testing.T, flags []string, allow ...string) *Process {
	t.Helper()
	guard, proxyFlags := guardFor(t, allow...)
	return launchConfig(t, Config{Path: testenv.Browser(), Isolation: testenv.Isolation(), Prewarm: 1, Guard: guard,
		ExtraFlags: append(proxyFlags, flags...), Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)})
}

// guardFor makes an egress guard that allows only 127.0.0.1 or the allow prefixes, and starts
// its proxy, closed with the test; the flags put a Chrome behind it.
func guardFor(t testing.TB, allow ...string) (*egress.Guard, []string) {
	t.Helper()
	if len(allow) == 0 {
		allow = []string{"127.0.0.1/32"}
	}
	var prefixes []netip.Prefix
	for _, a := range allow {
		prefixes = append(prefixes, netip.MustParsePrefix(a))
	}
	guard := egress.NewGuard(egress.NewPolicy(prefixes), nil)
	proxy := egress.NewProxy(guard, zerolog.Nop())
	if err := proxy.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close(context.Background()) }) // after the Chrome's own cleanup
	return guard, ProxyFlags(proxy.Addr())
}

// launchConfig launches a Process of cfg in a dir of the test's, closed and checked gone at the
// end of the test.
func launchConfig(t testing.TB, cfg Config) *Process {
	t.Helper()
	cfg.Dir = t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := Launch(ctx, cfg)
	if err != nil {
		t.Fatalf("launch: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
		if err := checkGone(p); err != nil {
			t.Error(err)
		}
	})
	return p
}

// TestSelfNavigation: a page that replaces its document before its load event (location=, a
// click, a form, a meta refresh), or opens a popup, is rendered at once: the render follows the
// new document, ends when a navigation loads none, answers host_not_allowed as soon as the
// guard refuses the main frame's new document (never a capture of Chrome's error page), and
// closes popups, which would keep the opener from painting.
func TestSelfNavigation(t *testing.T) {
	mux := http.NewServeMux()
	// /first is green with the body of its query; /second is blue; /empty answers 204, which
	// loads nothing.
	mux.HandleFunc("/first", func(w http.ResponseWriter, r *http.Request) {
		htmlPage(`<!doctype html><html><head><style>body{margin:0;background:rgb(0,128,0)}</style>`+
			r.URL.Query().Get("b")+`</body></html>`)(w, r)
	})
	mux.HandleFunc("/second", htmlPage(`<!doctype html><body style="margin:0;background:rgb(0,0,255)">second</body>`))
	mux.HandleFunc("/empty", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	// /slow answers after slowAnswer, as its query says: a redirect (keeping a POST) to "to", a
	// "code", or the blue page. slowDone is set just before the answer.
	var slowDone atomic.Bool
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(slowAnswer):
		case <-r.Context().Done():
			return
		}
		slowDone.Store(true)
		switch q := r.URL.Query(); {
		case q.Get("to") != "":
			http.Redirect(w, r, q.Get("to"), http.StatusTemporaryRedirect)
		case q.Get("code") != "":
			code, _ := strconv.Atoi(q.Get("code"))
			w.WriteHeader(code)
		default:
			htmlPage(`<!doctype html><body style="margin:0;background:rgb(0,0,255)">slow</body>`)(w, r)
		}
	})
	mux.HandleFunc("/nav.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		fmt.Fprint(w, `location = "/second"`)
	})
	srv, _ := server(t, mux)
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	refused := "http://127.0.0.3:" + port + "/x"
	first := func(body string) string { return srv.URL + "/first?b=" + url.QueryEscape(body) }
	// A form the page submits from its load handler, or while it is parsed: the submission is
	// queued as a task, which may run after the page's load event and stop.
	onload := func(action string) string {
		return `</head><body onload="document.forms[0].submit()"><form method="post" action="` + action + `"></form>`
	}
	parsing := func(action string) string {
		return `</head><body><form method="post" action="` + action + `"></form><script>document.forms[0].submit()</script>`
	}
	slowRefused := "/slow?to=" + url.QueryEscape(refused)
	greenStyle := `<style>body{margin:0;background:rgb(0,128,0)}</style>`

	green, blue := [3]uint8{0, 128, 0}, [3]uint8{0, 0, 255}
	tests := []struct {
		name  string
		o     *shotd.Options
		both  bool       // runs without the guard (no Fetch interception) too
		code  shotd.Code // "" = a capture of want
		want  [3]uint8
		popup bool // the page opens a popup: none may be open after the settle step
		// slow: the wait must not end before /slow answered the navigation the page requested.
		// noStart: the page requests a navigation that never starts, which holds the wait for
		// navStartMax; otherwise that time must not run out. sameDoc: the page navigates only
		// within its document, which must not hold the wait at all.
		slow, noStart, sameDoc bool
	}{
		{name: "location to another page", o: opts(first(`</head><body><script>location = "/second"</script>`)), want: blue, both: true},
		{name: "location to another page, domcontentloaded", o: withWait(opts(first(`</head><body><script>location = "/second"</script>`)), shotd.WaitDOMContentLoaded), want: blue},
		{name: "location to another page, networkidle", o: withWait(opts(first(`</head><body><script>location = "/second"</script>`)), shotd.WaitNetworkIdle), want: blue},
		{name: "link click to another page", o: opts(first(`</head><body><a id="a" href="/second">x</a><script>document.getElementById("a").click()</script>`)), want: blue},
		{name: "location to a 204", o: opts(first(`</head><body><script>location = "/empty"</script>`)), want: green, both: true},
		{name: "form post to a 204", o: opts(first(`</head><body><form method="post" action="/empty"><input name="a" value="b"></form><script>document.forms[0].submit()</script>`)), want: green},
		{name: "html source to another page", o: htmlOpts(`<body style="background:rgb(0,128,0)"><script>location = "` + srv.URL + `/second"</script></body>`), want: blue},
		{name: "script that navigates", o: opts(first(`<script src="/nav.js"></script></head><body>`)), want: blue, both: true},
		// The guarded process's pre-warmed tabs pause documents alone until a render with
		// rules asks for every request.
		{name: "script that navigates, blocked", o: withBlocked(opts(first(`<script src="/nav.js"></script></head><body>`)), "*/nav.js"), want: green, both: true},
		{name: "popup from scripts", o: withScripts(opts(first(`</head><body>x`)), `window.open("/second")`), want: green, popup: true, both: true},
		{name: "noopener popup from scripts", o: withScripts(opts(first(`</head><body>x`)), `window.open("/second", "_blank", "noopener")`), want: green, popup: true},
		{name: "popup from a click", o: withClick(opts(first(`</head><body><a id="p" target="_blank" href="/second">popup</a>`)), "#p"), want: green, popup: true},

		{name: "form post from the load handler to a slow page", o: opts(first(onload("/slow"))), want: blue, slow: true, both: true},
		{name: "form post from the load handler to a slow 204", o: opts(first(onload("/slow?code=204"))), want: green, slow: true, both: true},
		{name: "form post while parsing to a slow page", o: opts(first(parsing("/slow"))), want: blue, slow: true, both: true},
		{name: "form post while parsing to a slow 204", o: opts(first(parsing("/slow?code=204"))), want: green, slow: true},
		{name: "form post from scripts to a slow page", o: withScripts(opts(first(`</head><body><form method="post" action="/slow"></form>`)), `document.forms[0].submit()`), want: blue},
		{name: "form post that window.stop cancels", o: opts(first(`</head><body onload="document.forms[0].submit(); window.stop()"><form method="post" action="/slow"></form>`)), want: green, noStart: true, both: true},
		// The stop cuts the parsing short: the first document never gets its load event.
		{name: "form post while parsing that window.stop cancels", o: opts(first(`</head><body><form method="post" action="/slow"></form><script>document.forms[0].submit(); window.stop()</script>`)), want: green, noStart: true, both: true},
		// Page.setDocumentContent answers after document.open's init and the load handler's
		// request: the request, made after the init, must outlive it.
		{name: "html source form post from the load handler to a slow page", o: htmlOpts(greenStyle + onload(srv.URL+"/slow")), want: blue, slow: true, both: true},
		{name: "fragment and history navigations", o: opts(first(`</head><body onload="location = '#a'; history.pushState(null, '', '#b'); document.getElementById('c').click()"><a id="c" href="#c">c</a>`)), want: green, sameDoc: true, both: true},

		{name: "location to a refused host", o: opts(first(`</head><body><script>location = "` + refused + `"</script>`)), code: shotd.CodeHostNotAllowed},
		{name: "link click to a refused host", o: opts(first(`</head><body><a id="a" href="` + refused + `">x</a><script>document.getElementById("a").click()</script>`)), code: shotd.CodeHostNotAllowed},
		{name: "form post to a refused host", o: opts(first(parsing(refused))), code: shotd.CodeHostNotAllowed},
		{name: "form post from the load handler to a refused host", o: opts(first(onload(refused))), code: shotd.CodeHostNotAllowed},
		{name: "form post from the load handler to a slow refused redirect", o: opts(first(onload(slowRefused))), code: shotd.CodeHostNotAllowed},
		{name: "form post while parsing to a slow refused redirect", o: opts(first(parsing(slowRefused))), code: shotd.CodeHostNotAllowed},
		{name: "html source form post from the load handler to a refused host", o: htmlOpts(greenStyle + onload(refused)), code: shotd.CodeHostNotAllowed},
		// After the load event, during the delay: the capture would be Chrome's error page.
		{name: "meta refresh to a refused host", o: withDelay(opts(first(`<meta http-equiv="refresh" content="0;url=`+refused+`"></head><body>`)), 500*time.Millisecond), code: shotd.CodeHostNotAllowed},
		{name: "html source to a refused host", o: withDelay(htmlOpts(`<body><script>location = "`+refused+`"</script></body>`), 500*time.Millisecond), code: shotd.CodeHostNotAllowed},
		{name: "click to a refused host", o: withClick(opts(first(`</head><body><a id="a" href="`+refused+`">x</a>`)), "#a"), code: shotd.CodeHostNotAllowed},
	}
	guarded := launchGuarded(t)
	for _, tt := range tests {
		for _, p := range []*Process{guarded, shared} {
			name := tt.name
			if p == shared {
				if !tt.both {
					continue
				}
				name += ", unguarded"
			}
			t.Run(name, func(t *testing.T) {
				o := *tt.o
				// A hang ends in a timeout error; the bound is generous for a loaded machine.
				o.Timeout = 10 * time.Second
				if p == guarded {
					// A pre-warmed tab, whose Fetch is on with the guard's patterns already: the
					// render must still apply its own rules there.
					for deadline := time.Now().Add(10 * time.Second); len(p.ready) < cap(p.ready); time.Sleep(10 * time.Millisecond) {
						if time.Now().After(deadline) {
							t.Fatal("the guarded pool did not refill")
						}
					}
				}
				openPopups, prewarmed := -1, false
				slowDone.Store(false)
				testHookAfterStep = func(step string, tb *tab) {
					switch {
					case step == "emulate":
						prewarmed = tb.guardFetch
					case step == "wait" && tt.slow && !slowDone.Load():
						t.Error("the wait ended before the navigation the page requested was answered")
					case step == "settle" && tt.popup:
						openPopups = popupsOf(t, p, tb)
					}
				}
				graceStarted, graceExpired := false, false
				testHookNavGrace = func(expired bool) {
					graceStarted = true
					graceExpired = graceExpired || expired
				}
				// A requested navigation may be slow to start on a busy host: only the noStart
				// cases show the bound.
				defer func(max time.Duration) { testHookAfterStep, testHookNavGrace, navStartMax = nil, nil, max }(navStartMax)
				if !tt.noStart {
					navStartMax = 10 * time.Second
				}
				out, err := doRender(t, p, &o)
				if graceExpired != tt.noStart {
					t.Errorf("the wait for a requested navigation to start ran out: %v, want %v", graceExpired, tt.noStart)
				}
				if tt.sameDoc && graceStarted {
					t.Error("a same-document navigation held the wait")
				}
				if p == guarded && !prewarmed && tt.code == "" {
					t.Error("the render did not get a pre-warmed tab with the guard's Fetch on")
				}
				if tt.code != "" {
					wantCode(t, err, tt.code)
				} else {
					if err != nil {
						t.Fatalf("render: %v", err)
					}
					if got := rgbAt(decodePNG(t, out.Data), 200, 150); got != tt.want {
						t.Errorf("pixel %v, want %v", got, tt.want)
					}
				}
				if tt.popup && openPopups != 0 {
					t.Errorf("%d popups open at the capture, want 0", openPopups)
				}
			})
		}
	}
}

// slowAnswer is how long /slow of TestSelfNavigation takes to answer: far longer than a capture
// of the first page, which a wait that ended before the navigation would make meanwhile.
const slowAnswer = time.Second

// popupsOf counts the page targets that tb opened and that are still open.
func popupsOf(t *testing.T, p *Process, tb *tab) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	ts, err := p.browser.Target.GetTargets(ctx, nil)
	if err != nil {
		t.Errorf("get targets: %v", err)
		return -1
	}
	n := 0
	for _, i := range ts.TargetInfos {
		if i.OpenerID != nil && *i.OpenerID == tb.targetID {
			n++
		}
	}
	return n
}

func withBlocked(o *shotd.Options, patterns ...string) *shotd.Options {
	o.BlockRequests = patterns
	return o
}

func withWait(o *shotd.Options, w string) *shotd.Options {
	o.WaitUntil = w
	return o
}

func withDelay(o *shotd.Options, d time.Duration) *shotd.Options {
	o.Delay = d
	return o
}

// withScripts runs s (with a user gesture, which window.open needs) and waits a moment, so that
// a popup it opens is there before the capture.
func withScripts(o *shotd.Options, s string) *shotd.Options {
	o.Scripts = s
	o.Delay = 500 * time.Millisecond
	return o
}

func withClick(o *shotd.Options, sel string) *shotd.Options {
	o.Click = sel
	o.Delay = 500 * time.Millisecond
	return o
}

// TestHTTPSThroughTheGuard: an https page reaches Chrome through the route's tunnel and is
// captured. The test's Chrome takes the test server's certificate.
func TestHTTPSThroughTheGuard(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		htmlPage(`<body style="margin:0;background:rgb(0,0,255)">tls</body>`)(w, r)
	}))
	t.Cleanup(srv.Close)
	p := launchGuardedFlags(t, []string{"--ignore-certificate-errors"})
	out := mustRender(t, p, opts(srv.URL+"/"))
	if got := rgbAt(decodePNG(t, out.Data), 200, 150); got != [3]uint8{0, 0, 255} {
		t.Errorf("pixel %v, want the site's blue page", got)
	}
}

// TestHTTPSRefusals: over https the route sees only a tunnel, and Chrome an error page when the
// route refuses or cannot open it. The render says why, whether the url itself, a redirect hop
// or the page's own later navigation failed, and never captures Chrome's error page.
func TestHTTPSRefusals(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", htmlPage(`<body style="margin:0;background:rgb(0,0,255)">tls</body>`))
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})
	mux.HandleFunc("/later", func(w http.ResponseWriter, r *http.Request) {
		htmlPage(`<!doctype html><meta http-equiv="refresh" content="0;url=`+r.URL.Query().Get("to")+
			`"><body style="margin:0;background:rgb(0,0,255)">later</body>`)(w, r)
	})
	srv := httptest.NewTLSServer(mux)
	t.Cleanup(srv.Close)
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "https://" + closed.Addr().String() + "/"
	closed.Close()
	refused := "https://127.0.0.3:" + port + "/x"
	q := url.QueryEscape

	tests := []struct {
		name   string
		o      *shotd.Options
		code   shotd.Code
		reason string // in the message
	}{
		{name: "the url", o: opts(refused), code: shotd.CodeHostNotAllowed},
		{name: "a redirect hop", o: opts(srv.URL + "/redirect?to=" + q(refused)), code: shotd.CodeHostNotAllowed},
		{name: "the page's own navigation", o: withDelay(opts(srv.URL+"/later?to="+q(refused)), 500*time.Millisecond), code: shotd.CodeHostNotAllowed},
		{name: "unreachable url", o: opts(down), code: shotd.CodeNavigationFailed, reason: "connection refused"},
		{name: "unreachable redirect hop", o: opts(srv.URL + "/redirect?to=" + q(down)), code: shotd.CodeNavigationFailed, reason: "connection refused"},
		{name: "the page's own navigation, unreachable", o: withDelay(opts(srv.URL+"/later?to="+q(down)), 500*time.Millisecond), code: shotd.CodeNavigationFailed, reason: "connection refused"},
	}
	p := launchGuardedFlags(t, []string{"--ignore-certificate-errors"})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := *tt.o
			o.Timeout = 10 * time.Second
			_, err := doRender(t, p, &o)
			e := wantCode(t, err, tt.code)
			if !strings.Contains(e.Message, tt.reason) {
				t.Errorf("message %q does not say %q", e.Message, tt.reason)
			}
		})
	}
	// The control: the same page, allowed, is captured.
	out := mustRender(t, p, opts(srv.URL+"/redirect?to="+q(srv.URL+"/ok")))
	if got := rgbAt(decodePNG(t, out.Data), 200, 150); got != [3]uint8{0, 0, 255} {
		t.Errorf("pixel %v, want the site's blue page", got)
	}
}

// TestAuthChallengePage: a page, or a subresource that holds its load (an image, a synchronous
// XMLHttpRequest), answered 401 with a challenge gets the server's answer, as a 404 is, on every
// browser: nobody is there to log in. Full Chromium left to itself fails such a document behind
// the guard's interception (net::ERR_INVALID_AUTH_CREDENTIALS) and holds such a subresource on
// a login prompt until the timeout, unless its requests are paused (Process.pauseAll); the
// headless shell needs no pause.
func TestAuthChallengePage(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/private", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Basic realm="shotd test"`)
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `<body style="margin:0;background:rgb(255,0,0)">401</body>`)
	})
	green := `<body style="margin:0;background:rgb(0,128,0)">`
	mux.HandleFunc("/image", htmlPage(`<!doctype html>`+green+`<img src="/private">`))
	mux.HandleFunc("/xhr", htmlPage(`<!doctype html>`+green+`<script>
		const x = new XMLHttpRequest(); x.open('GET', '/private', false); x.send();</script>`))
	srv, _ := server(t, mux)
	p := launchGuarded(t)
	for _, c := range []struct {
		path string
		want [3]uint8
	}{
		{"/private", [3]uint8{255, 0, 0}},
		{"/image", [3]uint8{0, 128, 0}},
		{"/xhr", [3]uint8{0, 128, 0}},
	} {
		t.Run(c.path, func(t *testing.T) {
			o := opts(srv.URL + c.path)
			o.Timeout = 10 * time.Second // a login prompt holds the load until then
			out := mustRender(t, p, o)
			if got := rgbAt(decodePNG(t, out.Data), 200, 150); got != c.want {
				t.Errorf("pixel %v, want %v", got, c.want)
			}
		})
	}
}

// TestHasCredentials: only a user name or password in the authority counts, not an "@" in the
// path or query.
func TestHasCredentials(t *testing.T) {
	for u, want := range map[string]bool{
		"http://u:p@127.0.0.1/":           true,
		"https://user@example.test/a":     true,
		"http://127.0.0.1/a@b":            false,
		"http://127.0.0.1/?mail=a@b.test": false,
		"https://example.test/":           false,
	} {
		if got := hasCredentials(u); got != want {
			t.Errorf("hasCredentials(%q) = %v, want %v", u, got, want)
		}
	}
}

// TestRefusedNavigationEndsWait: a page that goes to a refused host while a loading step waits
// (here for a selector that never comes) ends the render with host_not_allowed at once, rather
// than once the wait runs out on the error page.
func TestRefusedNavigationEndsWait(t *testing.T) {
	mux := http.NewServeMux()
	srv, _ := server(t, mux)
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	mux.HandleFunc("/", htmlPage(`<!doctype html><body>x<script>setTimeout(() => { location = "http://127.0.0.3:`+port+`/x" }, 300)</script>`))
	p := launchGuarded(t)
	o := opts(srv.URL + "/")
	o.WaitForSelector = "#never"
	o.Timeout = 80 * time.Second // far past the test's own bound below
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := p.Render(ctx, o); shotd.CodeOf(err) != shotd.CodeHostNotAllowed {
		t.Fatalf("got %v, want host_not_allowed before the selector's wait ends", err)
	}
}

// TestWebRTCBehindTheGuard: a page's WebRTC sends no UDP around the egress proxy, to a STUN
// server on a refused address, on either browser (full Chromium reads the policy from the
// profile's preferences, not from the switch); without the guard's flags the same page reaches
// it, so the test can fail.
func TestWebRTCBehindTheGuard(t *testing.T) {
	canary := testkit.NewUDPCanary(t, "127.0.0.3:0")
	stun := canary.Addr()
	mux := http.NewServeMux()
	mux.HandleFunc("/", htmlPage(`<!doctype html><body><script>
const pc = new RTCPeerConnection({iceServers: [{urls: "stun:`+stun+`"}]});
pc.createDataChannel("d");
const done = () => document.body.append(Object.assign(document.createElement("p"), {id: "done", textContent: "done"}));
pc.onicegatheringstatechange = () => { if (pc.iceGatheringState === "complete") done(); };
pc.createOffer().then(o => pc.setLocalDescription(o));
setTimeout(done, 3000);
</script>`))
	srv, _ := server(t, mux)
	o := opts(srv.URL + "/")
	o.WaitForSelector = "#done"
	mustRender(t, launchGuarded(t), o)
	t.Run("as a user of its own", func(t *testing.T) { // the preferences are that user's
		u := chromeUser(t)
		guard, flags := guardFor(t)
		mustRender(t, launchConfig(t, Config{Path: testenv.Browser(), Isolation: testenv.Isolation(), Prewarm: 1, Guard: guard,
			ExtraFlags: flags, User: u, Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)}), o)
	})
	time.Sleep(300 * time.Millisecond)
	if n := canary.Packets(); n != 0 {
		t.Fatalf("%d UDP packets reached %s past the egress proxy", n, stun)
	}
	mustRender(t, launchIsolated(t, 1, testenv.Isolation()), o)
	for end := time.Now().Add(3 * time.Second); canary.Packets() == 0 && time.Now().Before(end); {
		time.Sleep(50 * time.Millisecond)
	}
	if canary.Packets() == 0 {
		t.Fatal("without the guard no STUN packet reached the server either: the test sees nothing")
	}
}
