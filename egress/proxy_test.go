package egress

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"

	"github.com/shotd/shotd/internal/testkit"
)

// proxyEnv is a proxy in front of a backend on 127.0.0.1 (allowed), a TLS backend on 127.0.0.1,
// and a canary on 127.0.0.3 at the backend's port (not allowed).
type proxyEnv struct {
	backend    *httptest.Server
	tlsBackend *httptest.Server
	port       string // the backend's port, also the canary's
	canary     *testkit.Canary
	dns        *fakeDNS
	guard      *Guard
	proxy      *Proxy
	logs       *syncBuffer
	client     *http.Client // plain http and https through the proxy
	stream     chan struct{}
}

func newProxyEnv(t *testing.T, allow ...string) *proxyEnv {
	t.Helper()
	e := &proxyEnv{stream: make(chan struct{})}
	upgrader := websocket.Upgrader{}
	mux := http.NewServeMux()
	mux.HandleFunc("/spoof", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(RefusedHeader, "host_not_allowed")
		w.Header().Set(UpstreamErrorHeader, "timeout")
		fmt.Fprint(w, "a page of the site")
	})
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "hello from backend")
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		// Report the headers that must not survive the proxy.
		for _, h := range []string{"Proxy-Connection", "Proxy-Authorization", "X-Hop", "Keep-Alive", "X-Forwarded-For", "X-Kept"} {
			w.Header().Set("X-Saw-"+h, r.Header.Get(h))
		}
		w.Header().Set("X-Saw-Host", r.Host)
		_, _ = io.Copy(w, r.Body)
	})
	mux.HandleFunc("/header", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("kib"))
		w.Header().Set("X-Large", strings.Repeat("a", n<<10))
		fmt.Fprint(w, "large header")
	})
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "first\n")
		w.(http.Flusher).Flush()
		// The client asks for the rest only after it has read the first line: a proxy that
		// buffered the answer would make this time out.
		select {
		case <-e.stream:
			fmt.Fprint(w, "second\n")
		case <-time.After(5 * time.Second):
			fmt.Fprint(w, "timeout\n")
		case <-r.Context().Done():
		}
	})
	// For TestChromeThroughProxy: a page that aims at the canary, and a redirect to it.
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		_, port, _ := net.SplitHostPort(r.Host)
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, chromePage(port))
	})
	mux.HandleFunc("/webrtc", func(w http.ResponseWriter, r *http.Request) {
		_, port, _ := net.SplitHostPort(r.Host)
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, webrtcPage(port))
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		_, port, _ := net.SplitHostPort(r.Host)
		http.Redirect(w, r, "http://127.0.0.3:"+port+"/redirected", http.StatusFound)
	})
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := upgrader.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		for {
			mt, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			if err := c.WriteMessage(mt, append([]byte("echo "), msg...)); err != nil {
				return
			}
		}
	})
	e.backend = httptest.NewServer(mux)
	t.Cleanup(e.backend.Close)
	e.tlsBackend = httptest.NewTLSServer(mux)
	t.Cleanup(e.tlsBackend.Close)
	e.port = strconv.Itoa(serverPort(t, e.backend))
	e.canary = testkit.NewCanary(t, "127.0.0.3:"+e.port)
	e.dns = newFakeDNS(map[string]string{
		"backend.test": "127.0.0.1",
		"canary.test":  "127.0.0.3",
		"mixed.test":   "127.0.0.1,127.0.0.3",
		"mapped.test":  "::ffff:127.0.0.3",
		"rebind.test":  "127.0.0.1|127.0.0.3",
		"rebind2.test": "127.0.0.1|127.0.0.3",
	})
	if len(allow) == 0 {
		allow = []string{"127.0.0.1/32"}
	}
	e.guard = NewGuard(NewPolicy(prefixes(allow...)), e.dns)
	e.logs = &syncBuffer{}
	e.proxy = NewProxy(e.guard, zerolog.New(e.logs).Level(zerolog.DebugLevel))
	if err := e.proxy.Start("127.0.0.1:0"); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := e.proxy.Close(ctx); err != nil {
			t.Errorf("proxy Close: %v", err)
		}
	})
	proxyURL := &url.URL{Scheme: "http", Host: e.proxy.Addr()}
	tr := e.tlsBackend.Client().Transport.(*http.Transport).Clone()
	tr.Proxy = http.ProxyURL(proxyURL)
	tr.DisableKeepAlives = true
	t.Cleanup(tr.CloseIdleConnections)
	e.client = &http.Client{Transport: tr, Timeout: 10 * time.Second}
	t.Cleanup(func() { e.canary.CheckUntouched(t) })
	return e
}

// connect sends a raw CONNECT to the proxy and returns its answer and the connection.
func (e *proxyEnv) connect(t *testing.T, target string) (*http.Response, net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", e.proxy.Addr(), 5*time.Second)
	if err != nil {
		t.Fatalf("dial proxy: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatalf("CONNECT %s: %v", target, err)
	}
	return resp, conn, br
}

func TestProxyForward(t *testing.T) {
	testkit.CheckGoroutines(t, 5*time.Second)
	e := newProxyEnv(t)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()
	tlsAddr := e.tlsBackend.Listener.Addr().String()
	p := e.port

	tests := []struct {
		name       string
		url        string
		wantStatus int
		wantBody   string
		refused    bool
	}{
		{name: "allowed literal", url: "http://127.0.0.1:" + p + "/hello", wantStatus: 200, wantBody: "hello from backend"},
		{name: "allowed name", url: "http://backend.test:" + p + "/hello", wantStatus: 200, wantBody: "hello from backend"},
		{name: "allowed integer literal", url: "http://2130706433:" + p + "/hello", wantStatus: 200, wantBody: "hello from backend"},
		{name: "https through CONNECT", url: "https://" + tlsAddr + "/hello", wantStatus: 200, wantBody: "hello from backend"},
		{name: "canary direct", url: "http://127.0.0.3:" + p + "/", wantStatus: 403, refused: true},
		{name: "canary integer", url: "http://2130706435:" + p + "/", wantStatus: 403, refused: true},
		{name: "canary hex", url: "http://0x7f.0.0.3:" + p + "/", wantStatus: 403, refused: true},
		{name: "canary hex whole", url: "http://0x7f000003:" + p + "/", wantStatus: 403, refused: true},
		{name: "canary octal", url: "http://0177.0.0.3:" + p + "/", wantStatus: 403, refused: true},
		{name: "canary short", url: "http://127.3:" + p + "/", wantStatus: 403, refused: true},
		{name: "canary trailing dot", url: "http://127.0.0.3.:" + p + "/", wantStatus: 403, refused: true},
		{name: "canary mapped v6", url: "http://[::ffff:127.0.0.3]:" + p + "/", wantStatus: 403, refused: true},
		{name: "canary by name", url: "http://canary.test:" + p + "/", wantStatus: 403, refused: true},
		{name: "canary by name, mapped answer", url: "http://mapped.test:" + p + "/", wantStatus: 403, refused: true},
		{name: "canary in a mix", url: "http://mixed.test:" + p + "/", wantStatus: 403, refused: true},
		{name: "localhost has ::1", url: "http://localhost:" + p + "/", wantStatus: 403, refused: true},
		{name: "chrome update host", url: "http://update.googleapis.com/service/update2", wantStatus: 403, refused: true},
		{name: "chrome clients host", url: "http://clients2.google.com/", wantStatus: 403, refused: true},
		{name: "the proxy itself", url: "http://" + e.proxy.Addr() + "/", wantStatus: 403, refused: true},
		{name: "headers within Chrome's limit", url: "http://127.0.0.1:" + p + "/header?kib=200", wantStatus: 200, wantBody: "large header"},
		// Read whole before Chrome sees a byte: past Chrome's own limit they are not held.
		{name: "headers past Chrome's limit", url: "http://127.0.0.1:" + p + "/header?kib=1024", wantStatus: 502},
		{name: "unknown name", url: "http://nx.test:" + p + "/", wantStatus: 502},
		{name: "connection refused", url: "http://" + closedAddr + "/", wantStatus: 502},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := e.proxy.Refused()
			resp, err := e.client.Get(tt.url)
			if err != nil {
				t.Fatalf("GET %s: %v", tt.url, err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("GET %s = %d %q, want %d", tt.url, resp.StatusCode, body, tt.wantStatus)
			}
			if tt.wantBody != "" && string(body) != tt.wantBody {
				t.Fatalf("GET %s body %q, want %q", tt.url, body, tt.wantBody)
			}
			if got := resp.Header.Get(RefusedHeader); (got == "host_not_allowed") != tt.refused {
				t.Fatalf("GET %s: %s = %q, want refused=%v", tt.url, RefusedHeader, got, tt.refused)
			}
			wantRefused := before
			if tt.refused {
				wantRefused++
			}
			if got := e.proxy.Refused(); got != wantRefused {
				t.Fatalf("Refused() = %d, want %d", got, wantRefused)
			}
		})
	}
	for _, name := range []string{"update.googleapis.com", "clients2.google.com"} {
		if n := e.dns.callsFor(name); n != 0 {
			t.Errorf("%s went to the resolver %d times", name, n)
		}
	}
	if !strings.Contains(e.logs.String(), `"message":"egress refused"`) {
		t.Errorf("no debug log line for the refusals:\n%s", e.logs)
	}
}

func TestProxyConnect(t *testing.T) {
	testkit.CheckGoroutines(t, 5*time.Second)
	e := newProxyEnv(t)
	p := e.port
	tests := []struct {
		name       string
		target     string
		wantStatus int
	}{
		{name: "allowed literal", target: "127.0.0.1:" + p, wantStatus: 200},
		{name: "allowed name", target: "backend.test:" + p, wantStatus: 200},
		{name: "canary direct", target: "127.0.0.3:" + p, wantStatus: 403},
		{name: "canary integer", target: "2130706435:" + p, wantStatus: 403},
		{name: "canary hex", target: "0x7f.0.0.3:" + p, wantStatus: 403},
		{name: "canary octal", target: "0177.0.0.3:" + p, wantStatus: 403},
		{name: "canary short", target: "127.3:" + p, wantStatus: 403},
		{name: "canary mapped", target: "[::ffff:127.0.0.3]:" + p, wantStatus: 403},
		{name: "canary nat64 form", target: "[64:ff9b::7f00:3]:" + p, wantStatus: 403},
		{name: "canary by name", target: "canary.test:" + p, wantStatus: 403},
		{name: "canary in a mix", target: "mixed.test:" + p, wantStatus: 403},
		{name: "chrome clients host", target: "clients2.google.com:443", wantStatus: 403},
		{name: "chrome component host", target: "edgedl.me.gvt1.com:443", wantStatus: 403},
		{name: "chrome private api", target: "optimizationguide-pa.googleapis.com:443", wantStatus: 403},
		{name: "chrome safe browsing", target: "safebrowsing.googleapis.com:443", wantStatus: 403},
		{name: "the proxy itself", target: e.proxy.Addr(), wantStatus: 403},
		{name: "no port", target: "127.0.0.1", wantStatus: 400},
		{name: "unknown name", target: "nx.test:443", wantStatus: 502},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, conn, br := e.connect(t, tt.target)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("CONNECT %s = %d, want %d", tt.target, resp.StatusCode, tt.wantStatus)
			}
			if got := resp.Header.Get(RefusedHeader); (got == "host_not_allowed") != (tt.wantStatus == 403) {
				t.Fatalf("CONNECT %s: %s = %q", tt.target, RefusedHeader, got)
			}
			if tt.wantStatus != 200 {
				return
			}
			// Speak HTTP through the tunnel.
			fmt.Fprintf(conn, "GET /hello HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", tt.target)
			inner, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("through the tunnel: %v", err)
			}
			defer inner.Body.Close()
			body, _ := io.ReadAll(inner.Body)
			if string(body) != "hello from backend" {
				t.Fatalf("through the tunnel: %q", body)
			}
		})
	}
	for _, name := range []string{"clients2.google.com", "edgedl.me.gvt1.com", "optimizationguide-pa.googleapis.com", "safebrowsing.googleapis.com"} {
		if n := e.dns.callsFor(name); n != 0 {
			t.Errorf("%s went to the resolver %d times", name, n)
		}
	}
}

func TestProxyWebSocket(t *testing.T) {
	testkit.CheckGoroutines(t, 5*time.Second)
	e := newProxyEnv(t)
	proxyURL := &url.URL{Scheme: "http", Host: e.proxy.Addr()}
	tests := []struct {
		name    string
		url     string
		tls     bool
		refused bool
	}{
		{name: "ws allowed", url: "ws://127.0.0.1:" + e.port + "/ws"},
		{name: "wss allowed", url: "wss://" + e.tlsBackend.Listener.Addr().String() + "/ws", tls: true},
		{name: "ws canary", url: "ws://127.0.0.3:" + e.port + "/ws", refused: true},
		{name: "ws canary integer", url: "ws://2130706435:" + e.port + "/ws", refused: true},
		{name: "wss canary by name", url: "wss://canary.test:" + e.port + "/ws", tls: true, refused: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := websocket.Dialer{Proxy: http.ProxyURL(proxyURL), HandshakeTimeout: 5 * time.Second}
			if tt.tls {
				d.TLSClientConfig = e.tlsBackend.Client().Transport.(*http.Transport).TLSClientConfig
			}
			before := e.proxy.Refused()
			c, resp, err := d.Dial(tt.url, nil)
			if resp != nil && resp.Body != nil {
				resp.Body.Close()
			}
			if tt.refused {
				if err == nil {
					c.Close()
					t.Fatalf("websocket to %s opened", tt.url)
				}
				if e.proxy.Refused() != before+1 {
					t.Fatalf("Refused() = %d, want %d (%v)", e.proxy.Refused(), before+1, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("websocket to %s: %v", tt.url, err)
			}
			defer c.Close()
			if err := c.WriteMessage(websocket.TextMessage, []byte("ping")); err != nil {
				t.Fatal(err)
			}
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, msg, err := c.ReadMessage()
			if err != nil || string(msg) != "echo ping" {
				t.Fatalf("websocket echo = %q, %v", msg, err)
			}
		})
	}
}

func TestProxyHeadersAndStreaming(t *testing.T) {
	testkit.CheckGoroutines(t, 5*time.Second)
	e := newProxyEnv(t)
	target := "127.0.0.1:" + e.port

	t.Run("hop-by-hop headers are stripped", func(t *testing.T) {
		conn, err := net.DialTimeout("tcp", e.proxy.Addr(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(conn, "POST http://%s/echo HTTP/1.1\r\nHost: %s\r\n"+
			"Connection: X-Hop\r\nX-Hop: secret\r\nProxy-Connection: keep-alive\r\n"+
			"Proxy-Authorization: Basic eDp5\r\nKeep-Alive: 300\r\nX-Forwarded-For: 10.0.0.1\r\n"+
			"X-Kept: yes\r\nContent-Length: 4\r\n\r\nbody", target, target)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || string(body) != "body" {
			t.Fatalf("answer %d %q", resp.StatusCode, body)
		}
		for _, h := range []string{"Proxy-Connection", "Proxy-Authorization", "X-Hop", "Keep-Alive", "X-Forwarded-For"} {
			if v := resp.Header.Get("X-Saw-" + h); v != "" {
				t.Errorf("the backend saw %s: %q", h, v)
			}
		}
		if v := resp.Header.Get("X-Saw-X-Kept"); v != "yes" {
			t.Errorf("the backend saw X-Kept %q, want yes", v)
		}
		if v := resp.Header.Get("X-Saw-Host"); v != target {
			t.Errorf("the backend saw Host %q, want %q", v, target)
		}
	})

	t.Run("a site cannot send the proxy's own headers", func(t *testing.T) {
		resp, err := e.client.Get("http://" + target + "/spoof")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get(RefusedHeader) != "" || resp.Header.Get(UpstreamErrorHeader) != "" {
			t.Fatalf("answer %d with %v", resp.StatusCode, resp.Header)
		}
	})

	t.Run("large body both ways", func(t *testing.T) {
		payload := make([]byte, 3<<20)
		_, _ = rand.Read(payload)
		resp, err := e.client.Post("http://"+target+"/echo", "application/octet-stream", bytes.NewReader(payload))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		got, err := io.ReadAll(resp.Body)
		if err != nil || !bytes.Equal(got, payload) {
			t.Fatalf("echo of %d bytes came back as %d bytes, %v", len(payload), len(got), err)
		}
	})

	t.Run("response is streamed", func(t *testing.T) {
		resp, err := e.client.Get("http://" + target + "/stream")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		br := bufio.NewReader(resp.Body)
		first, err := br.ReadString('\n')
		if err != nil || first != "first\n" {
			t.Fatalf("first line %q, %v", first, err)
		}
		close(e.stream)
		rest, _ := io.ReadAll(br)
		if string(rest) != "second\n" {
			t.Fatalf("rest %q, want the second line sent after the first was read", rest)
		}
	})

	t.Run("origin-form request is not proxied", func(t *testing.T) {
		resp, err := http.Get("http://" + e.proxy.Addr() + "/hello")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Fatalf("origin-form request answered %d, want 400", resp.StatusCode)
		}
	})
}

// TestProxyRebinding: a name that answers an allowed address first and the canary after can not
// make the proxy dial the canary, neither after the render pre-check nor after a first tunnel.
func TestProxyRebinding(t *testing.T) {
	testkit.CheckGoroutines(t, 5*time.Second)
	e := newProxyEnv(t)

	t.Run("pre-check then page load", func(t *testing.T) {
		u := "http://rebind.test:" + e.port + "/hello"
		if err := e.guard.CheckURL(context.Background(), u); err != nil {
			t.Fatalf("CheckURL: %v", err)
		}
		resp, err := e.client.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 403 || resp.Header.Get(RefusedHeader) == "" {
			t.Fatalf("after rebinding: %d, want a 403 refusal", resp.StatusCode)
		}
	})

	t.Run("second tunnel", func(t *testing.T) {
		target := "rebind2.test:" + e.port
		first, _, _ := e.connect(t, target)
		if first.StatusCode != 200 {
			t.Fatalf("first CONNECT = %d, want 200", first.StatusCode)
		}
		second, _, _ := e.connect(t, target)
		if second.StatusCode != 403 {
			t.Fatalf("second CONNECT = %d, want 403", second.StatusCode)
		}
		if n := e.dns.callsFor("rebind2.test"); n != 2 {
			t.Fatalf("rebind2.test resolved %d times, want once per CONNECT", n)
		}
	})
}

// TestProxyDevtoolsPort: the devtools port stays closed to pages even though 127.0.0.1 is allowed.
func TestProxyDevtoolsPort(t *testing.T) {
	testkit.CheckGoroutines(t, 5*time.Second)
	e := newProxyEnv(t, "127.0.0.1/32", "::1/128")
	devtools, conns := newBackend(t)
	ap := netip.MustParseAddrPort(devtools.Listener.Addr().String())
	e.guard.DenyPort(ap)
	d := strconv.Itoa(int(ap.Port()))

	for _, u := range []string{
		"http://127.0.0.1:" + d + "/json/version",
		"http://2130706433:" + d + "/json",
		"http://localhost:" + d + "/json",
		"http://[::1]:" + d + "/json",
		"http://[::ffff:127.0.0.1]:" + d + "/json",
		"http://0.0.0.0:" + d + "/json",
	} {
		t.Run("GET "+u, func(t *testing.T) {
			resp, err := e.client.Get(u)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 403 || resp.Header.Get(RefusedHeader) != "host_not_allowed" {
				t.Fatalf("GET %s = %d, want a 403 refusal", u, resp.StatusCode)
			}
		})
	}
	for _, target := range []string{"127.0.0.1:" + d, "localhost:" + d, "[::1]:" + d} {
		t.Run("CONNECT "+target, func(t *testing.T) {
			resp, _, _ := e.connect(t, target)
			if resp.StatusCode != 403 {
				t.Fatalf("CONNECT %s = %d, want 403", target, resp.StatusCode)
			}
		})
	}
	// The allowed backend on another port of 127.0.0.1 stays reachable.
	resp, err := e.client.Get("http://127.0.0.1:" + e.port + "/hello")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("allowed backend answered %d", resp.StatusCode)
	}
	if n := conns.Load(); n != 0 {
		t.Fatalf("the devtools listener accepted %d connections", n)
	}
}

func TestProxyClose(t *testing.T) {
	testkit.CheckGoroutines(t, 5*time.Second)
	e := newProxyEnv(t)
	resp, conn, br := e.connect(t, "127.0.0.1:"+e.port)
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT = %d", resp.StatusCode)
	}
	// A slow forwarded request in flight.
	slowDone := make(chan error, 1)
	go func() {
		r, err := e.client.Get("http://127.0.0.1:" + e.port + "/stream")
		if err == nil {
			_, err = io.ReadAll(r.Body)
			r.Body.Close()
		}
		slowDone <- err
	}()
	time.Sleep(100 * time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := e.proxy.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("Close took %v; it should end tunnels and requests, not wait for them", d)
	}
	// The tunnel is gone.
	_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := br.ReadByte(); err == nil {
		t.Fatal("the tunnel still answers after Close")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the tunnel was left open by Close")
	}
	select {
	case <-slowDone:
	case <-time.After(5 * time.Second):
		t.Fatal("the in-flight request did not end after Close")
	}
	if c, err := net.DialTimeout("tcp", e.proxy.Addr(), time.Second); err == nil {
		c.Close()
		t.Fatal("the proxy still accepts connections after Close")
	}
	if err := e.proxy.Close(ctx); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := e.proxy.Start("127.0.0.1:0"); err == nil {
		t.Fatal("Start after Close succeeded")
	}
}

func TestProxyStartAndDenyHosts(t *testing.T) {
	testkit.CheckGoroutines(t, 5*time.Second)
	g := NewGuard(nil, newFakeDNS(nil))
	tests := []struct {
		name    string
		addr    string
		wantErr bool
	}{
		{name: "loopback v4", addr: "127.0.0.1:0"},
		{name: "loopback v6", addr: "[::1]:0"},
		{name: "all interfaces", addr: "0.0.0.0:0", wantErr: true},
		{name: "empty host", addr: ":0", wantErr: true},
		{name: "name", addr: "localhost:0", wantErr: true},
		{name: "no port", addr: "127.0.0.1", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewProxy(g, zerolog.Nop())
			err := p.Start(tt.addr)
			defer p.Close(context.Background())
			if (err != nil) != tt.wantErr {
				t.Fatalf("Start(%q) = %v, want error=%v", tt.addr, err, tt.wantErr)
			}
			if err == nil && p.Addr() == "" {
				t.Fatal("Addr() is empty after Start")
			}
		})
	}

	matchTests := []struct {
		name     string
		patterns []string
		host     string
		want     bool
	}{
		{name: "default clients", host: "clients2.google.com", want: true},
		{name: "default clients upper, trailing dot", host: "CLIENTS4.google.com.", want: true},
		{name: "default gvt1 apex", host: "gvt1.com", want: true},
		{name: "default gvt1 deep", host: "r1---sn-x.gvt1.com", want: true},
		{name: "default pa api", host: "chromesyncpasswords-pa.googleapis.com", want: true},
		{name: "google fonts stay open", host: "fonts.googleapis.com"},
		{name: "gstatic stays open", host: "fonts.gstatic.com"},
		{name: "google search stays open", host: "www.google.com"},
		{name: "lookalike", host: "clients2.google.com.evil.example"},
		{name: "literal never matches", patterns: []string{"*"}, host: "127.0.0.1"},
		{name: "custom", patterns: []string{"*.corp.example"}, host: "a.corp.example", want: true},
		{name: "custom replaces defaults", patterns: []string{"*.corp.example"}, host: "clients2.google.com"},
	}
	for _, tt := range matchTests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewProxy(g, zerolog.Nop())
			if tt.patterns != nil {
				if err := p.SetDenyHosts(tt.patterns); err != nil {
					t.Fatal(err)
				}
			}
			if got := p.deniedName(tt.host); got != tt.want {
				t.Fatalf("deniedName(%q) = %v, want %v", tt.host, got, tt.want)
			}
		})
	}
	p := NewProxy(g, zerolog.Nop())
	if err := p.SetDenyHosts([]string{"[bad"}); err == nil {
		t.Fatal("SetDenyHosts accepted a malformed pattern")
	}
	if err := p.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	if err := p.SetDenyHosts(nil); err == nil {
		t.Fatal("SetDenyHosts after Start succeeded")
	}
	if err := p.Start("127.0.0.1:0"); err == nil {
		t.Fatal("second Start succeeded")
	}
}
