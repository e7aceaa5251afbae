package cdpclient

import (
	"context"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/mafredri/cdp/protocol/browser"
	"github.com/mafredri/cdp/protocol/page"
	"github.com/rs/zerolog"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/internal/proc"
	"github.com/shotd/shotd/internal/testenv"
)

// stateSite serves the pages of the wipe tests on two origins of two sites: the page on
// 127.0.0.1, and a cross-site iframe on localhost (its own renderer process). reports carries
// what the probe script found; styles counts the fetches of a stylesheet served with max-age.
type stateSite struct {
	page, frame *httptest.Server
	reports     chan string
	styles      atomic.Int32
	beacons     atomic.Int32
}

func newStateSite(t *testing.T) *stateSite {
	s := &stateSite{reports: make(chan string, 16)}
	frame := http.NewServeMux()
	frame.HandleFunc("/frame", htmlPage(stateFrameHTML))
	s.frame = httptest.NewServer(frame)
	t.Cleanup(s.frame.Close)
	// The iframe's origin is another site: localhost, not 127.0.0.1.
	frameURL := strings.Replace(s.frame.URL, "127.0.0.1", "localhost", 1) + "/frame"

	mux := http.NewServeMux()
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		src := frameURL
		if r.URL.Query().Has("dirty") {
			src += "?dirty"
		}
		htmlPage(`<!doctype html><link rel="stylesheet" href="/style.css"><h1>state</h1><iframe src="`+src+`"></iframe>`)(w, r)
	})
	mux.HandleFunc("/style.css", func(w http.ResponseWriter, r *http.Request) {
		s.styles.Add(1)
		w.Header().Set("Content-Type", "text/css")
		w.Header().Set("Cache-Control", "max-age=3600")
		fmt.Fprint(w, "h1{color:#123456}")
	})
	mux.HandleFunc("/beacon", func(w http.ResponseWriter, r *http.Request) {
		s.beacons.Add(1)
		http.SetCookie(w, &http.Cookie{Name: "beacon", Value: "dirty", MaxAge: 3600})
	})
	mux.HandleFunc("/worker.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		fmt.Fprint(w, stateWorkerJS)
	})
	mux.HandleFunc("/sw.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		fmt.Fprint(w, `self.addEventListener('fetch', () => {});`)
	})
	mux.HandleFunc("/report", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.reports <- string(b)
	})
	s.page = httptest.NewServer(mux)
	t.Cleanup(s.page.Close)
	return s
}

// stateFrameHTML is the cross-site iframe: with ?dirty it stores state of its own (partitioned
// under the page's site); it always answers the page's probe with what it finds.
const stateFrameHTML = `<!doctype html><script>
if (location.search.includes('dirty')) {
	document.cookie = 'frame=dirty; max-age=3600';
	localStorage.setItem('frame', 'dirty');
	indexedDB.open('framedb', 1);
}
addEventListener('message', async e => {
	const dbs = (await indexedDB.databases()).map(d => d.name).sort();
	e.source.postMessage({cookie: document.cookie, local: Object.keys(localStorage).sort(), idb: dbs}, '*');
});
</script>`

// stateWorkerJS keeps writing storage for as long as it lives: a worker that outlives the wipe
// would bring its database back.
const stateWorkerJS = `
let n = 0;
const write = () => { const r = indexedDB.open('worker' + (n++ % 2), 1); r.onupgradeneeded = () => r.result.createObjectStore('s'); };
write();
setInterval(write, 10);
`

// dirtyJS stores every kind of state a page can leave behind, from the page, from handlers that
// run when it is left, and through its worker and its iframe.
const dirtyJS = `(async () => {
	document.cookie = 'page=dirty; max-age=3600';
	localStorage.setItem('page', 'dirty');
	sessionStorage.setItem('page', 'dirty');
	await new Promise(res => { const r = indexedDB.open('pagedb', 1); r.onupgradeneeded = () => r.result.createObjectStore('s'); r.onsuccess = res; r.onerror = res; });
	const c = await caches.open('pagecache');
	await c.put('/cached', new Response('dirty'));
	await navigator.serviceWorker.register('/sw.js');
	await navigator.serviceWorker.ready;
	window.name = 'dirty';
	history.pushState({}, '', '#dirty');
	new Worker('/worker.js');
	addEventListener('pagehide', () => { document.cookie = 'pagehide=dirty; max-age=3600'; localStorage.setItem('pagehide', 'dirty'); });
	addEventListener('unload', () => {
		document.cookie = 'unload=dirty; max-age=3600';
		localStorage.setItem('unload', 'dirty');
		navigator.sendBeacon('/beacon');
		fetch('/beacon', {keepalive: true, method: 'POST'});
	});
	await new Promise(res => setTimeout(res, 100)); // the worker's first writes
})()`

// probeJS reports what the page finds: storage of every kind, its iframe's, what survives of
// window and history, and the emulation in force.
const probeJS = `(async () => {
	const frame = await new Promise(res => {
		addEventListener('message', e => res(e.data), {once: true});
		document.querySelector('iframe').contentWindow.postMessage('probe', '*');
	});
	const out = {
		cookie: document.cookie,
		local: Object.keys(localStorage).sort(),
		session: Object.keys(sessionStorage).sort(),
		idb: (await indexedDB.databases()).map(d => d.name).sort(),
		caches: (await caches.keys()).sort(),
		serviceWorkers: (await navigator.serviceWorker.getRegistrations()).length,
		name: window.name,
		history: history.length,
		userAgent: navigator.userAgent,
		timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
		dark: matchMedia('(prefers-color-scheme: dark)').matches,
		touch: navigator.maxTouchPoints,
		// Native unless a script of the last render replaced them.
		observe: IntersectionObserver.prototype.observe.toString(),
		addEventListener: EventTarget.prototype.addEventListener.toString(),
		geolocation: await new Promise(res => navigator.geolocation.getCurrentPosition(
			p => res(p.coords.latitude), e => res('error ' + e.code), {timeout: 2000})),
		frame,
	};
	await fetch('/report', {method: 'POST', body: JSON.stringify(out)});
})()`

// htmlProbeJS is probeJS for an html source, which has no origin of its own.
// The window is the blank document's, which the wipe's leave made: the methods are native
// unless that document ran a script of the last render.
const htmlProbeJS = `document.title = JSON.stringify({name: window.name, history: history.length, origin: location.origin, ua: navigator.userAgent,
	observe: IntersectionObserver.prototype.observe.toString(), addEventListener: EventTarget.prototype.addEventListener.toString()})`

// probe renders the state page with probeJS and returns the report.
func (s *stateSite) probe(t *testing.T, p *Process) string {
	t.Helper()
	o := opts(s.page.URL + "/page")
	o.Scripts = probeJS
	mustRender(t, p, o)
	select {
	case r := <-s.reports:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("the probe reported nothing")
		return ""
	}
}

// renderContext renders o on p and returns the browser context it ran in.
func renderContext(t *testing.T, p *Process, o *shotd.Options) browser.ContextID {
	t.Helper()
	var used browser.ContextID
	testHookAfterStep = func(step string, tb *tab) {
		if step == "emulate" {
			used = tb.browserContext
		}
	}
	defer func() { testHookAfterStep = nil }()
	mustRender(t, p, o)
	return used
}

// poolFull waits until p's pool is full.
func poolFull(t *testing.T, p *Process) {
	t.Helper()
	waitCond(t, "the pool to fill", 15*time.Second, func() bool { return len(p.ready) == cap(p.ready) })
}

// nextTab waits until p's pool is full (every used tab wiped and back), then orders it so that
// the next render gets the tab of browser context id. It fails when that tab was not reused.
func nextTab(t *testing.T, p *Process, id browser.ContextID) {
	t.Helper()
	poolFull(t, p)
	var rest []*tab
	var found *tab
	for len(p.ready) > 0 {
		tb := <-p.ready
		if tb.browserContext == id {
			found = tb
		} else {
			rest = append(rest, tb)
		}
	}
	if found == nil {
		for _, tb := range rest {
			p.ready <- tb
		}
		t.Fatalf("the tab of context %s is not back in the pool: it was replaced, not wiped", id)
	}
	p.ready <- found
	for _, tb := range rest {
		p.ready <- tb
	}
}

// TestWipeLeavesNothing: a render whose page stores every kind of state (cookies, local and session
// storage, IndexedDB, Cache Storage, a service worker, window.name, history), from its pagehide and
// unload handlers too (a beacon that sets a cookie among them), from a worker that keeps writing
// and from a cross-site iframe, and whose options set emulation overrides (geolocation granted and
// overridden among them) is followed in the same tab by a render of the same page that finds
// exactly what a fresh tab finds, and refetches a stylesheet cached with max-age. An html source
// after it gets an opaque origin, as in a fresh tab.
// Behind the egress guard, as in the service, the tab's egress route is what stops the leaving
// page's requests.
func TestWipeLeavesNothing(t *testing.T) {
	for _, guarded := range []bool{false, true} {
		t.Run(fmt.Sprintf("guarded %v", guarded), func(t *testing.T) {
			launch := launchIsolated
			if guarded {
				launch = launchIsolatedGuarded
			}
			wipeLeavesNothing(t, launch(t, 1, IsolationWipe))
		})
	}
}

func wipeLeavesNothing(t *testing.T, p *Process) {
	s := newStateSite(t)

	fresh := s.probe(t, p)
	htmlFresh := htmlProbe(t, p)
	if strings.Contains(fresh, "dirty") {
		t.Fatalf("a fresh tab found state: %s", fresh)
	}

	dirty := opts(s.page.URL + "/page?dirty")
	dirty.Scripts = dirtyJS
	dirty.UserAgent = "Dirty/1.0"
	dirty.TimeZone = "Asia/Tokyo"
	dirty.DarkMode = true
	dirty.HasTouch = true
	dirty.HasGeolocation, dirty.Latitude, dirty.Longitude = true, 48.85, 2.35 // granted and overridden
	dirty.FullPage, dirty.FullPageScroll = true, true                         // watchMarkJS in its documents
	used := renderContext(t, p, dirty)
	nextTab(t, p, used)
	if got := htmlProbe(t, p); got != htmlFresh {
		t.Errorf("an html source right after the dirty render is not as in a fresh tab:\n fresh  %s\n reused %s", htmlFresh, got)
	}

	used = renderContext(t, p, dirty)
	nextTab(t, p, used)
	styles := s.styles.Load()
	var again string
	if got := renderContextProbe(t, p, s, &again); got != used {
		t.Fatalf("the probe ran in context %s, not in the dirty tab's %s", got, used)
	}
	if again != fresh {
		t.Errorf("the reused tab is not as a fresh one:\n fresh  %s\n reused %s", fresh, again)
	}
	if n := s.styles.Load() - styles; n != 1 {
		t.Errorf("the stylesheet cached with max-age was fetched %d times by the next render, want 1", n)
	}

	nextTab(t, p, used)
	if got := htmlProbe(t, p); got != htmlFresh {
		t.Errorf("an html source in the reused tab is not as in a fresh one:\n fresh  %s\n reused %s", htmlFresh, got)
	}
}

// TestWipeEndsConnections: behind the egress guard, the next render in a wiped tab reaches the
// site over a connection of its own. None that a render opened (its context's to the egress
// route, the route's to the server) serves the next one, as none would in a fresh context: the
// server could tell by it that two renders, of two accounts maybe, came from one tab, or take the
// second for the first (a login bound to the connection).
func TestWipeEndsConnections(t *testing.T) {
	var mu sync.Mutex
	var peers []string // the remote address of each request for the page
	mux := http.NewServeMux()
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		peers = append(peers, r.RemoteAddr)
		mu.Unlock()
		htmlPage(`<!doctype html><h1>connection</h1>`)(w, r)
	})
	srv, _ := server(t, mux)
	p := launchIsolatedGuarded(t, 1, IsolationWipe)
	poolFull(t, p)
	used := renderContext(t, p, opts(srv.URL+"/page"))
	nextTab(t, p, used)
	if got := renderContext(t, p, opts(srv.URL+"/page")); got != used {
		t.Fatalf("the second render ran in context %s, not in the first one's %s", got, used)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(peers) != 2 || peers[0] == peers[1] {
		t.Errorf("the two renders reached the server over %v; want two connections", peers)
	}
}

// TestWipeForgetsCredentials: a page that authenticates with a user and password in a URL (an
// XMLHttpRequest's, in the page, a dedicated worker or a shared worker, its own navigation's, or
// a ws:// WebSocket's) leaves them in Chrome's HTTP auth cache, which no wipe can clear and from
// which Chrome would authenticate the next render's requests to that site, of any account: its
// tab is replaced instead.
func TestWipeForgetsCredentials(t *testing.T) {
	var mu sync.Mutex
	var seen []string // the Authorization of each request for /auth/ since the last reset
	mux := http.NewServeMux()
	mux.HandleFunc("/auth/", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		if r.URL.Path == "/auth/ws" && r.Header.Get("Authorization") != "" {
			if c, err := (&websocket.Upgrader{}).Upgrade(w, r, nil); err == nil {
				c.Close()
			}
			return
		}
		if r.URL.Path == "/auth/peek" {
			// No challenge: Chrome sends credentials it keeps for /auth/ unasked, and full
			// Chromium would hold a request that is challenged without any on a login prompt.
			return
		}
		if u, pw, ok := r.BasicAuth(); !ok || u != "u" || pw != "p" {
			w.Header().Set("WWW-Authenticate", `Basic realm="shotd test"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		htmlPage(`<!doctype html><title>200</title><h1 id="done">logged in</h1>`)(w, r)
	})
	// Each login page shows #done once its credentials were answered, which the render waits for.
	const done = `document.body.append(Object.assign(document.createElement('p'), {id: 'done', textContent: 'done'}))`
	mux.HandleFunc("/xhr", htmlPage(`<!doctype html><body><script>
		const x = new XMLHttpRequest(); x.open('GET', '/auth/x', false, 'u', 'p'); x.send();
		document.title = x.status; `+done+`</script>`))
	mux.HandleFunc("/navigate", htmlPage(`<!doctype html><script>
		location.href = location.href.replace('//', '//u:p@').replace('/navigate', '/auth/page');</script>`))
	mux.HandleFunc("/websocket", htmlPage(`<!doctype html><body><script>
		const ws = new WebSocket(location.href.replace('http://', 'ws://u:p@').replace('/websocket', '/auth/ws'));
		ws.onopen = () => { `+done+` };</script>`))
	mux.HandleFunc("/login.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		fmt.Fprint(w, `const x = new XMLHttpRequest(); x.open('GET', '/auth/x', false, 'u', 'p'); x.send();
			const tell = p => p.postMessage(x.status);
			if (self.postMessage) { tell(self) } else { onconnect = e => tell(e.ports[0]) }`)
	})
	mux.HandleFunc("/worker", htmlPage(`<!doctype html><body><script>
		new Worker('/login.js').onmessage = () => { `+done+` };</script>`))
	mux.HandleFunc("/sharedworker", htmlPage(`<!doctype html><body><script>
		const w = new SharedWorker('/login.js'); w.port.onmessage = () => { `+done+` }; w.port.start();</script>`))
	mux.HandleFunc("/peek", htmlPage(`<!doctype html><script>
		const x = new XMLHttpRequest(); x.open('GET', '/auth/peek', false); x.send();
		document.title = x.status;</script>`))
	srv, _ := server(t, mux)
	p := launchIsolatedGuarded(t, 1, IsolationWipe)
	for _, login := range []string{"/xhr", "/navigate", "/websocket", "/sharedworker", "/worker"} {
		t.Run(login, func(t *testing.T) {
			poolFull(t, p)
			mu.Lock()
			seen = nil
			mu.Unlock()
			o := opts(srv.URL + login)
			o.WaitForSelector = "#done"
			used := renderContext(t, p, o)
			mu.Lock()
			if len(seen) == 0 || seen[len(seen)-1] != "Basic dTpw" {
				t.Fatalf("the page did not log in: %q", seen)
			}
			seen = nil
			mu.Unlock()
			poolFull(t, p)
			// Were the tab back in the pool, the peek below would get it first.
			var first, rest []*tab
			for len(p.ready) > 0 {
				if tb := <-p.ready; tb.browserContext == used {
					t.Error("the tab that kept the credentials is back in the pool")
					first = append(first, tb)
				} else {
					rest = append(rest, tb)
				}
			}
			for _, tb := range append(first, rest...) {
				p.ready <- tb
			}
			mustRender(t, p, opts(srv.URL+"/peek"))
			mu.Lock()
			defer mu.Unlock()
			for _, a := range seen {
				if a != "" {
					t.Errorf("the next render was authenticated with the previous render's credentials: %q", seen)
					break
				}
			}
		})
	}
}

// renderContextProbe is probe that also returns the browser context it ran in.
func renderContextProbe(t *testing.T, p *Process, s *stateSite, report *string) browser.ContextID {
	t.Helper()
	o := opts(s.page.URL + "/page")
	o.Scripts = probeJS
	id := renderContext(t, p, o)
	select {
	case *report = <-s.reports:
	case <-time.After(5 * time.Second):
		t.Fatal("the probe reported nothing")
	}
	return id
}

// htmlProbe renders an html source that reports its window name, history length, origin and
// User-Agent in its title, read back through a hook.
func htmlProbe(t *testing.T, p *Process) string {
	t.Helper()
	var title string
	testHookAfterStep = func(step string, tb *tab) {
		if step == "page" {
			var s string
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			r := &render{t: tb, p: p}
			if err := r.eval(ctx, "document.title", &s); err == nil {
				title = s
			}
		}
	}
	defer func() { testHookAfterStep = nil }()
	o := htmlOpts(`<p>html</p>`)
	o.Scripts = htmlProbeJS
	mustRender(t, p, o)
	if !strings.Contains(title, `"origin":"null"`) {
		t.Errorf("an html source runs with origin %s, want an opaque one", title)
	}
	return title
}

// TestWipeConcurrentCookies: six renders at once, each with its own cookie, twice over (the
// second round on wiped tabs), each see their own cookie alone.
func TestWipeConcurrentCookies(t *testing.T) {
	reports := make(chan string, 12)
	mux := http.NewServeMux()
	mux.HandleFunc("/", htmlPage(`<p>cookies</p>`))
	mux.HandleFunc("/report", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		reports <- string(b)
	})
	srv, _ := server(t, mux)
	p := launchIsolated(t, 2, IsolationWipe)
	host := strings.TrimPrefix(srv.URL, "http://")
	host = host[:strings.IndexByte(host, ':')]
	for round := range 2 {
		var wg sync.WaitGroup
		for i := range 6 {
			wg.Go(func() {
				o := opts(srv.URL + "/")
				o.Cookies = []shotd.Cookie{{Name: "who", Value: fmt.Sprint(i), Domain: host}}
				// Reported before the page sets a cookie of its own, which a tab reused
				// without the wipe would show the next render.
				o.Scripts = fmt.Sprintf(`fetch('/report', {method: 'POST', body: %d + ' ' + document.cookie}).then(() => { document.cookie = 'left%d=1' })`, i, i)
				if _, err := doRender(t, p, o); err != nil {
					t.Errorf("round %d render %d: %v", round, i, err)
				}
			})
		}
		wg.Wait()
		for range 6 {
			select {
			case r := <-reports:
				i, cookie, _ := strings.Cut(r, " ")
				if cookie != "who="+i {
					t.Errorf("round %d: render %s saw cookies %q", round, i, cookie)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("round %d: a render reported nothing", round)
			}
		}
		waitCond(t, "the pool to fill", 15*time.Second, func() bool { return len(p.ready) == cap(p.ready) })
	}
}

// TestWipeFailureReplacesTab: a page whose pagehide handler holds its renderer longer than the
// wipe may wait is not known clean: its tab is disposed and replaced, and the next render works
// in a fresh one.
func TestWipeFailureReplacesTab(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/", htmlPage(fmt.Sprintf(`<p>stuck</p><script>
addEventListener('pagehide', () => { const end = Date.now() + %d; while (Date.now() < end) {} });
</script>`, (leaveTimeout+time.Second).Milliseconds())))
	srv, _ := server(t, mux)
	p := launchIsolated(t, 1, IsolationWipe)
	used := renderContext(t, p, opts(srv.URL+"/"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	waitCond(t, "the stuck tab's context to be disposed", 15*time.Second, func() bool {
		r, err := p.browser.Target.GetBrowserContexts(ctx)
		if err != nil {
			t.Fatalf("get browser contexts: %v", err)
		}
		for _, id := range r.BrowserContextIDs {
			if id == used {
				return false
			}
		}
		return true
	})
	waitCond(t, "the pool to fill", 15*time.Second, func() bool { return len(p.ready) == cap(p.ready) })
	if got := renderContext(t, p, htmlOpts(`<p>next</p>`)); got == used {
		t.Error("the next render ran in the tab that was not known clean")
	}
}

// TestWipeLeavesAHoldingPage: a page that cancels every navigation it is told of (Navigation
// API) and keeps one of its own pending is still left: the wipe's navigation comes from the
// browser, which the page cannot cancel, so the tab is wiped and serves again rather than being
// replaced after the leave's timeout.
func TestWipeLeavesAHoldingPage(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/", htmlPage(`<p>holding</p><script>
navigation.addEventListener('navigate', e => { if (e.cancelable) e.preventDefault(); });
addEventListener('load', () => setTimeout(() => { location.href = '/elsewhere'; }, 0));
</script>`))
	mux.HandleFunc("/elsewhere", htmlPage(`<p>elsewhere</p>`))
	srv, _ := server(t, mux)
	p := launchIsolated(t, 1, IsolationWipe)
	poolFull(t, p)
	used := renderContext(t, p, opts(srv.URL+"/"))
	nextTab(t, p, used)
	if got := renderContext(t, p, htmlOpts(`<p>next</p>`)); got != used {
		t.Errorf("the next render ran in context %s, not in the wiped tab's %s", got, used)
	}
}

// TestWipeForgetsThePagesPolicy: an html source written into a wiped tab runs under no policy of
// the page before it. The blank document of a page's own navigation to about:blank inherits
// that page's Content-Security-Policy, which then refused the html source's images.
func TestWipeForgetsThePagesPolicy(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/strict", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "img-src 'none'")
		htmlPage(`<p>strict</p>`)(w, r)
	})
	mux.HandleFunc("/green.png", func(w http.ResponseWriter, r *http.Request) {
		img := image.NewRGBA(image.Rect(0, 0, 4, 4))
		draw.Draw(img, img.Bounds(), image.NewUniform(color.RGBA{0, 255, 0, 255}), image.Point{}, draw.Src)
		w.Header().Set("Content-Type", "image/png")
		png.Encode(w, img)
	})
	srv, _ := server(t, mux)
	p := launchIsolated(t, 1, IsolationWipe)
	poolFull(t, p) // a tab made inline for want of a ready one may find no place to go back to
	used := renderContext(t, p, opts(srv.URL+"/strict"))
	nextTab(t, p, used)
	html := htmlOpts(`<body style="margin:0"><img src="` + srv.URL + `/green.png" style="display:block;width:400px;height:300px"></body>`)
	var id browser.ContextID
	testHookAfterStep = func(step string, tb *tab) {
		if step == "emulate" {
			id = tb.browserContext
		}
	}
	defer func() { testHookAfterStep = nil }()
	got := decodePNG(t, mustRender(t, p, html).Data)
	if id != used {
		t.Fatalf("the html source ran in context %s, not in the wiped tab's %s", id, used)
	}
	wantPixels(t, got, map[image.Point][3]uint8{{200, 150}: green})
}

// TestWipeMovesThePointerAway: after a render that clicked or hovered, the tab is wiped and
// reused, and the next render's page under the same point shows no :hover style, as in a fresh
// tab, whose pointer is nowhere.
func TestWipeMovesThePointerAway(t *testing.T) {
	page := `<style>body{margin:0} #b{width:100vw;height:100vh;background:rgb(255,0,0)} #b:hover{background:rgb(0,255,0)}</style><div id=b></div>`
	tests := []struct {
		name string
		set  func(o *shotd.Options)
	}{
		{name: "click", set: func(o *shotd.Options) { o.Click = "#b" }},
		{name: "hover", set: func(o *shotd.Options) { o.Hover = "#b" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := launchIsolated(t, 1, IsolationWipe)
			poolFull(t, p)
			o := htmlOpts(page)
			tt.set(o)
			used := renderContext(t, p, o)
			nextTab(t, p, used)
			var id browser.ContextID
			testHookAfterStep = func(step string, tb *tab) {
				if step == "emulate" {
					id = tb.browserContext
				}
			}
			defer func() { testHookAfterStep = nil }()
			got := decodePNG(t, mustRender(t, p, htmlOpts(page)).Data)
			if id != used {
				t.Fatalf("the next render ran in context %s, not in the wiped tab's %s", id, used)
			}
			wantPixels(t, got, map[image.Point][3]uint8{{200, 150}: {255, 0, 0}})
		})
	}
}

// TestWipeLeavesAPromptingPage: a page that asks to stay (a beforeunload prompt, which Chrome
// shows once the page has had a user gesture, here the render's click) is left all the same, and
// its tab wiped and reused, rather than kept until the leave times out and replaced.
func TestWipeLeavesAPromptingPage(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/", htmlPage(`<button id=b style="width:100vw;height:100vh">b</button><script>
addEventListener('beforeunload', e => { e.preventDefault(); e.returnValue = 'stay'; });
</script>`))
	srv, _ := server(t, mux)
	p := launchIsolated(t, 1, IsolationWipe)
	poolFull(t, p)
	o := opts(srv.URL + "/")
	o.Click = "#b"
	used := renderContext(t, p, o)
	nextTab(t, p, used)
}

// TestWipeAtIdlePriority: after a render, its Chrome's whole process group cleans the tab at
// the lowest CPU priority, and has its priority back once the cleaning is done, so that the next
// render does not wait for the setpriority call; the render runs at that priority.
func TestWipeAtIdlePriority(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/", htmlPage(`<p>priority</p>`))
	srv, _ := server(t, mux)
	// Below the service's priority, as the service runs it: the wipe's priority is given back
	// to that, not to the service's.
	p := launchConfig(t, Config{Path: testenv.Browser(), Isolation: IsolationWipe, Prewarm: 1, Nice: 2,
		Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)})
	if !p.prio.ok {
		t.Skip("this process may not give a nice value back (not root, no RLIMIT_NICE)")
	}
	poolFull(t, p)
	groupNice := func() int { return groupNice(p.PID(), false) }
	base := proc.Nice() + 2
	if p.prio.base != base {
		t.Fatalf("browser started at nice %d, want %d", p.prio.base, base)
	}
	// The wipe's leave is the first navigation to about:blank sent after the render.
	during := make(chan int, 1)
	hook := func(msg []byte) {
		if strings.Contains(string(msg), `"Page.navigate"`) && strings.Contains(string(msg), `"`+blankURL+`"`) {
			select {
			case during <- groupNice():
			default:
			}
		}
	}
	seen := make(chan int, 1)
	testHookAfterStep = func(step string, _ *tab) {
		if step == "navigate" {
			select {
			case seen <- groupNice():
			default:
			}
		}
	}
	defer func() { testHookAfterStep = nil }()
	for i := range 2 {
		testHookWrite.Store(&hook)
		mustRender(t, p, opts(srv.URL+"/"))
		if n := <-seen; n != base {
			t.Errorf("render %d ran with its browser at nice %d, not %d", i, n, base)
		}
		select {
		case n := <-during:
			if n != idleNice {
				t.Errorf("wipe %d ran at nice %d, not %d", i, n, idleNice)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("wipe %d: no leave seen", i)
		}
		poolFull(t, p) // the wipe done
		testHookWrite.Store(nil)
		if n := groupNice(); n != base {
			t.Errorf("after wipe %d the browser is at nice %d, not %d", i, n, base)
		}
	}
}

// groupNice is the nice value of every process of group pgid, and with threads of each of their
// threads, or -100 when they differ.
func groupNice(pgid int, threads bool) int {
	n := -100
	for _, st := range proc.Members(pgid) {
		ids := []int{st.PID}
		if threads {
			ids = tasks(st.PID)
		}
		for _, id := range ids {
			raw, err := syscall.Getpriority(syscall.PRIO_PROCESS, id)
			if err != nil {
				continue // gone meanwhile
			}
			if n != -100 && 20-raw != n {
				return -100
			}
			n = 20 - raw
		}
	}
	return n
}

// tasks lists the threads of process pid.
func tasks(pid int) []int {
	entries, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	var out []int
	for _, e := range entries {
		if id, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, id)
		}
	}
	return out
}

// TestChromeBelowTheService: a Chrome launched with Nice runs that far below the service's CPU
// priority, every thread of every process of it, renderers made long after the launch included
// (Chrome sets nice values of its own where it may, as root: none may undo it).
func TestChromeBelowTheService(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/", htmlPage(`<p>below</p><canvas></canvas><script>setTimeout(()=>{}, 10)</script>`))
	srv, _ := server(t, mux)
	// Tabs replaced every second render: new contexts and renderer processes as it goes.
	p := launchConfig(t, Config{Path: testenv.Browser(), Isolation: IsolationWipe, Prewarm: 1, TabReuse: 2, Nice: 4,
		Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)})
	poolFull(t, p)
	first := map[int]bool{}
	for _, st := range proc.Members(p.PID()) {
		first[st.PID] = true
	}
	want := min(proc.Nice()+4, proc.MaxNice)
	for i := range 8 {
		o := opts(srv.URL + "/")
		if i%2 == 1 {
			o.Format = shotd.FormatJPEG
		}
		mustRender(t, p, o)
	}
	poolFull(t, p) // the wipes done: the priority is the browser's own again
	fresh := 0
	for _, st := range proc.Members(p.PID()) {
		if !first[st.PID] {
			fresh++
		}
	}
	if fresh == 0 {
		t.Fatal("no process made after the first renders: the test sees only the launch's")
	}
	// A disposal of a replaced tab may still run at idle priority, and its end gives every
	// thread the browser's own back while the threads are read: read until they agree.
	n := groupNice(p.PID(), true)
	for end := time.Now().Add(10 * time.Second); n != want && time.Now().Before(end); n = groupNice(p.PID(), true) {
		time.Sleep(50 * time.Millisecond)
	}
	if n != want {
		t.Fatalf("the browser's threads at nice %d (-100: not all alike), want %d", n, want)
	}
}

// TestBlankDocumentLoaded: a tab serves only once its blank document has loaded, new or left
// to. That document's lifecycle events come after Page.frameNavigated and after the calls that
// make a tab; one that came late would end the wait of the next html source, written into the
// same document under the same loader, before its own document had loaded.
func TestBlankDocumentLoaded(t *testing.T) {
	for i := range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		tb, err := shared.newTab(ctx)
		if err != nil {
			cancel()
			t.Fatalf("new tab: %v", err)
		}
		lateLoad(t, tb, fmt.Sprintf("new tab %d", i))
		if err := tb.c.Page.SetDocumentContent(ctx, page.NewSetDocumentContentArgs(tb.frameID, "<p>x</p>")); err != nil {
			t.Fatalf("write: %v", err)
		}
		if err := tb.leave(ctx); err != nil {
			t.Fatalf("leave: %v", err)
		}
		lateLoad(t, tb, fmt.Sprintf("left tab %d", i))
		shared.disposeTab(tb)
		cancel()
	}
}

// lateLoad fails t when a load, init or DOMContentLoaded event of tb's main frame arrives
// within a moment from now.
func lateLoad(t *testing.T, tb *tab, what string) {
	t.Helper()
	deadline := time.After(300 * time.Millisecond)
	for {
		select {
		case <-tb.lifecycle.Ready():
			ev, err := tb.lifecycle.Recv()
			if err != nil {
				t.Fatalf("%s: lifecycle: %v", what, err)
			}
			switch ev.Name {
			case "init", "commit", "DOMContentLoaded", "load":
				if ev.FrameID == tb.frameID {
					t.Errorf("%s: the blank document's %s came after the tab was ready", what, ev.Name)
				}
			}
		case <-deadline:
			return
		}
	}
}

// TestWipedTabServesNext: once wiped, the tab of the last render is the one the next render
// takes, though other tabs are ready: its renderer process is the warmest (putFirst).
func TestWipedTabServesNext(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/", htmlPage(`<p>warm</p>`))
	srv, _ := server(t, mux)
	p := launchIsolated(t, 2, IsolationWipe)
	for i := range 3 {
		poolFull(t, p)
		used := renderContext(t, p, opts(srv.URL+"/"))
		poolFull(t, p)
		if got := renderContext(t, p, opts(srv.URL+"/")); got != used {
			t.Fatalf("round %d: the next render ran in context %s, not in the tab wiped last (%s)", i, got, used)
		}
	}
}
