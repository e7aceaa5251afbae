package egress

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/internal/testkit"
)

const (
	routeUser = "render-user"
	routePass = "s3cret-pass"
)

// openRoute opens a route of e's guard through up, logging into logs, closed with the test.
func openRoute(t *testing.T, e *proxyEnv, up Upstream, logs io.Writer) *Route {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := e.guard.OpenRoute(ctx, up, zerolog.New(logs).Level(zerolog.DebugLevel))
	if err != nil {
		t.Fatalf("OpenRoute: %v", err)
	}
	t.Cleanup(func() {
		if err := r.Close(context.Background()); err != nil {
			t.Errorf("route Close: %v", err)
		}
	})
	return r
}

// through returns a client whose proxy is the route, trusting e's TLS backend.
func through(t *testing.T, e *proxyEnv, r *Route) *http.Client {
	tr := e.tlsBackend.Client().Transport.(*http.Transport).Clone()
	tr.Proxy = http.ProxyURL(&url.URL{Scheme: "http", Host: r.Addr()})
	tr.DisableKeepAlives = true
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// TestRoute: a route reaches allowed destinations through the user's proxy with its
// credentials, as an absolute-form request for http and a CONNECT tunnel for https, each to the
// address the guard checked; a bypass host goes direct; what the guard refuses never reaches the
// proxy; the credentials appear in no log line.
func TestRoute(t *testing.T) {
	testkit.CheckGoroutines(t, 5*time.Second)
	e := newProxyEnv(t)
	up := testkit.NewUpstreamProxy(t, "127.0.0.1", routeUser, routePass)
	logs := &syncBuffer{}
	r := openRoute(t, e, Upstream{Host: up.Addr(), Username: routeUser, Password: routePass, Bypass: []string{"backend.test"}}, logs)
	c := through(t, e, r)
	tlsAddr := e.tlsBackend.Listener.Addr().String()
	p := e.port

	tests := []struct {
		name       string
		url        string
		wantStatus int
		want       *testkit.Request // what the upstream is asked; nil: nothing
	}{
		{name: "http through the upstream", url: "http://127.0.0.1:" + p + "/echo", wantStatus: 200,
			want: &testkit.Request{Method: "GET", Target: "http://127.0.0.1:" + p + "/echo", Host: "127.0.0.1:" + p, Authorized: true}},
		{name: "https through a tunnel", url: "https://" + tlsAddr + "/hello", wantStatus: 200,
			want: &testkit.Request{Method: "CONNECT", Target: tlsAddr, Host: tlsAddr, Authorized: true}},
		{name: "bypass host goes direct", url: "http://backend.test:" + p + "/hello", wantStatus: 200},
		{name: "refused literal", url: "http://127.0.0.3:" + p + "/", wantStatus: 403},
		{name: "refused name", url: "http://canary.test:" + p + "/", wantStatus: 403},
		{name: "refused tunnel", url: "https://127.0.0.3:" + p + "/", wantStatus: -1},
		{name: "the route itself", url: "http://" + r.Addr() + "/", wantStatus: 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(up.Requests())
			resp, err := c.Get(tt.url)
			if tt.wantStatus == -1 {
				if err == nil {
					resp.Body.Close()
					t.Fatalf("GET %s succeeded, want a refused tunnel", tt.url)
				}
			} else {
				if err != nil {
					t.Fatalf("GET %s: %v", tt.url, err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tt.wantStatus {
					t.Fatalf("status = %d (%s), want %d", resp.StatusCode, body, tt.wantStatus)
				}
				if tt.wantStatus == 403 && resp.Header.Get(RefusedHeader) == "" {
					t.Errorf("403 without %s", RefusedHeader)
				}
				if resp.StatusCode == 200 && resp.Header.Get("X-Saw-Proxy-Authorization") != "" {
					t.Errorf("the site saw the proxy's credentials")
				}
			}
			got := up.Requests()[before:]
			switch {
			case tt.want == nil && len(got) != 0:
				t.Errorf("the upstream was asked %+v, want nothing", got)
			case tt.want != nil && (len(got) != 1 || got[0] != *tt.want):
				t.Errorf("the upstream was asked %+v, want %+v", got, *tt.want)
			}
		})
	}
	encoded := base64.StdEncoding.EncodeToString([]byte(routeUser + ":" + routePass))
	if s := logs.String() + e.logs.String(); strings.Contains(s, routePass) || strings.Contains(s, encoded) {
		t.Errorf("a log line holds the credentials:\n%s", s)
	}
}

// TestRouteWrongCredentials: a 407 of the upstream is the proxy's own error page (502 with a
// reason) for http, a failed tunnel for https: never a 407 the browser would answer.
func TestRouteWrongCredentials(t *testing.T) {
	testkit.CheckGoroutines(t, 5*time.Second)
	e := newProxyEnv(t)
	up := testkit.NewUpstreamProxy(t, "127.0.0.1", routeUser, routePass)
	r := openRoute(t, e, Upstream{Host: up.Addr(), Username: routeUser, Password: "wrong"}, io.Discard)
	c := through(t, e, r)
	resp, err := c.Get("http://127.0.0.1:" + e.port + "/hello")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 502 || resp.Header.Get(UpstreamErrorHeader) != "proxy authentication failed" {
		t.Errorf("status %d, %s %q; want 502 with the reason", resp.StatusCode, UpstreamErrorHeader, resp.Header.Get(UpstreamErrorHeader))
	}
	if _, err := c.Get("https://" + e.tlsBackend.Listener.Addr().String() + "/hello"); err == nil {
		t.Error("https through a proxy that refused the credentials succeeded")
	}
	for _, req := range up.Requests() {
		if req.Authorized {
			t.Errorf("request %+v authorized with the wrong password", req)
		}
	}
}

// TestRouteRefusedUpstream: the upstream's own address is checked like any destination, its
// name resolved once; a refused one opens no route and is never dialled.
func TestRouteRefusedUpstream(t *testing.T) {
	testkit.CheckGoroutines(t, 5*time.Second)
	e := newProxyEnv(t)
	// The canary listens on 127.0.0.3 at e.port: newProxyEnv fails the test if it is dialled.
	for _, host := range []string{"127.0.0.3", "canary.test", "mixed.test", "[::ffff:127.0.0.3]"} {
		t.Run(host, func(t *testing.T) {
			r, err := e.guard.OpenRoute(context.Background(), Upstream{Host: host + ":" + e.port, Username: "u", Password: "p"}, zerolog.Nop())
			if err == nil {
				r.Close(context.Background())
				t.Fatal("OpenRoute succeeded")
			}
			if shotd.CodeOf(err) != shotd.CodeHostNotAllowed {
				t.Fatalf("error %v, want host_not_allowed", err)
			}
		})
	}
	if _, err := e.guard.OpenRoute(context.Background(), Upstream{Host: "nx.test:" + e.port}, zerolog.Nop()); shotd.CodeOf(err) != shotd.CodeNavigationFailed {
		t.Errorf("an upstream name that does not resolve: %v, want navigation_failed", err)
	}
}

// TestRoutePort: while a route is open its port is refused to every page, so that no other
// render can send its connections through the route's proxy; closing it frees the port.
func TestRoutePort(t *testing.T) {
	testkit.CheckGoroutines(t, 5*time.Second)
	e := newProxyEnv(t)
	up := testkit.NewUpstreamProxy(t, "127.0.0.1", "", "")
	r, err := e.guard.OpenRoute(context.Background(), Upstream{Host: up.Addr()}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ap := netip.MustParseAddrPort(r.Addr())
	resp, err := e.client.Get("http://" + r.Addr() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Errorf("the route's port through the main proxy: status %d, want 403", resp.StatusCode)
	}
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if e.guard.portDenied(ap.Addr(), ap.Port(), netip.AddrPort{}) {
		t.Error("the route's port is still refused after Close")
	}
}

// TestDirectRouteBlock: a direct route keeps its connections between requests, as a browser's
// proxy should; Block ends all of them (the client's idle connection to the route, an open
// tunnel, a request under way and the route's idle connection to the server) and answers 503
// until Unblock, after which the server sees a new connection.
func TestDirectRouteBlock(t *testing.T) {
	testkit.CheckGoroutines(t, 5*time.Second)
	var mu sync.Mutex
	var peers []string // the remote address of each request the server saw
	held := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		peers = append(peers, r.RemoteAddr)
		mu.Unlock()
		fmt.Fprint(w, "ok")
	})
	mux.HandleFunc("/hold", func(w http.ResponseWriter, r *http.Request) {
		w.(http.Flusher).Flush()
		close(held)
		<-r.Context().Done() // until the route gives up on it
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	guard := NewGuard(NewPolicy([]netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}), nil)
	r, err := guard.OpenDirectRoute(zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())

	tr := &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: r.Addr()})}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	// get fetches path and reports its status and whether it went over a reused connection.
	get := func(path string) (int, bool) {
		t.Helper()
		var reused bool
		ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
			GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }})
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, reused
	}
	// A request under way, on a connection of its own to the server.
	pending := make(chan error, 1)
	go func() {
		holdClient := &http.Client{Transport: &http.Transport{Proxy: tr.Proxy}}
		resp, err := holdClient.Get(srv.URL + "/hold")
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		pending <- err
	}()
	<-held
	if code, _ := get("/a"); code != 200 {
		t.Fatalf("first request: %d", code)
	}
	if code, reused := get("/b"); code != 200 || !reused {
		t.Fatalf("second request: %d, reused %v: the route kept no connection, so Block could not be tested", code, reused)
	}
	mu.Lock()
	if peers[0] != peers[1] {
		t.Fatalf("the route did not keep its connection to the server: %v", peers)
	}
	mu.Unlock()

	// A tunnel.
	tunnel, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer tunnel.Close()
	fmt.Fprintf(tunnel, "CONNECT %s HTTP/1.1\r\nHost: %[1]s\r\n\r\n", srv.Listener.Addr())
	br := bufio.NewReader(tunnel)
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}

	r.Block()
	if code, reused := get("/c"); code != 503 || reused {
		t.Errorf("while blocked: %d, reused %v; want 503 on a new connection", code, reused)
	}
	_ = tunnel.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := br.ReadByte(); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("the tunnel outlived Block: %v", err)
	}
	select {
	case err := <-pending:
		if err == nil {
			t.Error("the request under way finished as if nothing happened")
		}
	case <-time.After(5 * time.Second):
		t.Error("the request under way outlived Block")
	}

	r.Unblock()
	if code, _ := get("/d"); code != 200 {
		t.Fatalf("after Unblock: %d", code)
	}
	mu.Lock()
	defer mu.Unlock()
	if last := peers[len(peers)-1]; last == peers[0] {
		t.Errorf("the route's connection to the server outlived Block: %v", peers)
	}
}

// TestRouteTroubles: a route records each destination it refuses or cannot reach, with the URL
// of a plain-http request and the host and port of a tunnel, and forgets them on Block; a
// destination it reaches is no trouble.
func TestRouteTroubles(t *testing.T) {
	testkit.CheckGoroutines(t, 5*time.Second)
	e := newProxyEnv(t)
	r := openDirectRoute(t, e)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	shut := closed.Addr().String()
	closed.Close()

	tr := &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: r.Addr()}), DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	get := func(u string, want int) {
		t.Helper()
		resp, err := client.Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("GET %s: %d, want %d", u, resp.StatusCode, want)
		}
	}
	connect := func(target string, want int) {
		t.Helper()
		c, _ := connectThrough(t, r, target, want)
		c.Close()
	}
	get("http://127.0.0.1:"+e.port+"/hello", 200)
	get("http://127.0.0.3:"+e.port+"/x?y=1", 403)
	get("http://"+shut+"/down", 502)
	connect("127.0.0.3:"+e.port, 403)
	connect(shut, 502)
	get("http://canary.test/", 403)
	want := []Trouble{
		{Target: "127.0.0.3:" + e.port, URL: "http://127.0.0.3:" + e.port + "/x?y=1", Refused: true},
		{Target: shut, URL: "http://" + shut + "/down", Reason: "connection refused"},
		{Target: "127.0.0.3:" + e.port, Refused: true},
		{Target: shut, Reason: "connection refused"},
		{Target: "canary.test:80", URL: "http://canary.test/", Refused: true},
	}
	if got := r.Troubles(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("troubles:\n%+v\nwant\n%+v", got, want)
	}
	r.Block()
	if got := r.Troubles(); len(got) != 0 {
		t.Errorf("troubles after Block: %+v", got)
	}
	r.Unblock()
}

// TestRouteSawCredentials: a plain-text request with an Authorization header in one of a route's
// tunnels (a ws:// handshake) is reported until Unblock, Block included; one without is not.
func TestRouteSawCredentials(t *testing.T) {
	testkit.CheckGoroutines(t, 5*time.Second)
	e := newProxyEnv(t)
	r := openDirectRoute(t, e)
	tunnel := func(header string) {
		t.Helper()
		target := "127.0.0.1:" + e.port
		c, br := connectThrough(t, r, target, 200)
		defer c.Close()
		fmt.Fprintf(c, "GET /hello HTTP/1.1\r\nHost: %s\r\n%s\r\n", target, header)
		if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET in the tunnel: %v %v", resp, err)
		}
	}
	tunnel("")
	if r.SawCredentials() {
		t.Fatal("credentials seen in a request without any")
	}
	tunnel("Authorization: Basic dTpw\r\n")
	if !r.SawCredentials() {
		t.Fatal("the Authorization header in the tunnel went unseen")
	}
	r.Block()
	if !r.SawCredentials() {
		t.Error("Block forgot the credentials")
	}
	r.Unblock()
	if r.SawCredentials() {
		t.Error("Unblock kept the credentials")
	}
}

// openDirectRoute opens a direct route of e's guard, closed with the test.
func openDirectRoute(t *testing.T, e *proxyEnv) *Route {
	t.Helper()
	r, err := e.guard.OpenDirectRoute(zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(context.Background()) })
	return r
}

// connectThrough asks r for a tunnel to target and fails the test unless it answers want. The
// caller closes the connection; the reader holds what follows the answer.
func connectThrough(t *testing.T, r *Route, target string, want int) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %[1]s\r\n\r\n", target)
	br := bufio.NewReader(c)
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != want {
		c.Close()
		t.Fatalf("CONNECT %s: %v %v, want %d", target, resp, err, want)
	}
	return c, br
}

// TestRouteConnectAnswerBounded: an upstream that answers CONNECT with an endless status line is
// cut off after maxConnectAnswer bytes, not read into memory for as long as it sends.
func TestRouteConnectAnswerBounded(t *testing.T) {
	testkit.CheckGoroutines(t, 5*time.Second)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		line := []byte("HTTP/1.1 200 " + strings.Repeat("x", 4096))
		// 4 MiB, more than the bound, then the end of the connection: without the bound the
		// whole line is read and the answer fails only at EOF.
		for i := 0; i < 1024; i++ {
			if _, err := c.Write(line); err != nil {
				return
			}
		}
	}()
	g := NewGuard(NewPolicy([]netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}), nil)
	v := &upstream{guard: g, addrs: []netip.AddrPort{netip.MustParseAddrPort(ln.Addr().String())}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := v.connect(ctx, netip.MustParseAddrPort("127.0.0.1:443"))
	if err == nil {
		c.Close()
		t.Fatal("CONNECT succeeded")
	}
	if !errors.Is(err, errConnectAnswerTooLarge) {
		t.Fatalf("error %v, want %v", err, errConnectAnswerTooLarge)
	}
	ln.Close()
	<-done
}
