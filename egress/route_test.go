package egress

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
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
