package egress

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/shotd/shotd/internal/urlhost"
)

// Upstream is an HTTP proxy of a user's that the connections of one render leave through (the
// proxy option).
type Upstream struct {
	Host string // host:port
	// Username and Password go to the upstream as Proxy-Authorization: Basic; both "": none.
	Username, Password string
	// Bypass lists the hosts reached directly, in shotd.UpstreamProxy's canonical forms:
	// lower-case names, "*." and a name for a domain and its subdomains, IP addresses.
	Bypass []string
}

// errProxyAuth is the upstream proxy's 407: it refused the credentials, or wants some.
var errProxyAuth = errors.New("egress: the upstream proxy refused the credentials")

// Route is an egress proxy of one browser context: the same proxy as the one every Chrome is
// launched behind, with the same Guard, listening on a loopback port of its own.
// OpenDirectRoute's reaches destinations directly; OpenRoute's is a one-off for one render that
// goes through a user's upstream proxy. A browser context whose proxy is this address sends every
// connection here; each destination is checked by the Guard as usual and then reached directly,
// or through the upstream (a CONNECT tunnel, or an absolute-form request for plain http) at the
// address the Guard checked, or directly for a bypass host. The port is what tells the context's
// connections apart: no header a page could forge, and the Guard refuses the port to every
// page while the route lives.
type Route struct {
	guard *Guard
	proxy *Proxy
}

// OpenRoute resolves the upstream's host once, checks its addresses like any destination
// (host_not_allowed when refused, navigation_failed when the name does not resolve) and starts
// the route on 127.0.0.1. The route dials only the addresses checked now. Close it once the
// browser context that uses it is gone.
func (g *Guard) OpenRoute(ctx context.Context, up Upstream, logger zerolog.Logger) (*Route, error) {
	addrs, err := g.checkAddress(ctx, "tcp", up.Host, netip.AddrPort{})
	if err != nil {
		return nil, g.observe(err)
	}
	p := NewProxy(g, logger)
	p.troubles = &troubleLog{}
	v := &upstream{guard: g, addrs: addrs, bypass: up.Bypass}
	proxyURL := &url.URL{Scheme: "http", Host: up.Host}
	if up.Username != "" || up.Password != "" {
		v.auth = "Basic " + base64.StdEncoding.EncodeToString([]byte(up.Username+":"+up.Password))
		proxyURL.User = url.UserPassword(up.Username, up.Password)
	}
	v.transport = &http.Transport{
		// Absolute-form requests to the upstream, with Proxy-Authorization from the userinfo.
		Proxy: http.ProxyURL(proxyURL),
		// The upstream's name was resolved once, above: dial only what was checked then.
		DialContext:            func(ctx context.Context, _, _ string) (net.Conn, error) { return g.dialFirst(ctx, v.addrs) },
		DisableCompression:     true,
		MaxIdleConnsPerHost:    8,
		IdleConnTimeout:        60 * time.Second,
		MaxResponseHeaderBytes: MaxAnswerHeaderBytes,
	}
	v.forward = &httputil.ReverseProxy{
		// forwardVia put the checked address in the URL and kept the name in Host.
		Rewrite: func(pr *httputil.ProxyRequest) { pr.Out.Host = pr.In.Host },
		ModifyResponse: func(r *http.Response) error {
			if r.StatusCode == http.StatusProxyAuthRequired {
				return errProxyAuth // the page must not see a 407 meant for its proxy settings
			}
			r.Header.Del(RefusedHeader)
			r.Header.Del(UpstreamErrorHeader)
			return nil
		},
		Transport:     v.transport,
		FlushInterval: -1,
		ErrorLog:      log.New(debugWriter{logger}, "", 0),
		ErrorHandler:  p.forwardError,
	}
	p.via = v
	if err := p.Start("127.0.0.1:0"); err != nil {
		v.forget()
		return nil, err
	}
	for _, a := range addrs {
		if sameListener(a, p.self) {
			_ = p.Close(ctx)
			v.forget()
			return nil, g.observe(refused(&RefusedError{Host: up.Host, Addr: a.Addr(), Port: a.Port(), Reason: "denied port"}))
		}
	}
	g.DenyPort(p.self)
	return &Route{guard: g, proxy: p}, nil
}

// OpenDirectRoute starts a route that reaches every destination directly, as the Proxy every
// Chrome is launched behind does, on a loopback port of its own: the browser context of one tab
// sends its connections there, so that Block can end them all between two renders. Close it once
// the browser context that uses it is gone.
func (g *Guard) OpenDirectRoute(logger zerolog.Logger) (*Route, error) {
	p := NewProxy(g, logger)
	p.troubles = &troubleLog{}
	if err := p.Start("127.0.0.1:0"); err != nil {
		return nil, err
	}
	g.DenyPort(p.self)
	return &Route{guard: g, proxy: p}, nil
}

// Block ends every connection of the route (Chrome's connections to it, idle keep-alive ones
// too, its tunnels, its forwarded requests and its own idle connections to servers) and answers
// every request and tunnel with 503 until Unblock. It also forgets the route's Troubles. A browser context that uses the route then
// keeps no connection, and no answer, from one render to the next.
func (r *Route) Block() { r.proxy.block() }

// Troubles returns what the route refused or could not reach since it was opened or last
// blocked, oldest first, the latest 64 at most.
func (r *Route) Troubles() []Trouble { return r.proxy.troubles.all() }

// SawCredentials reports whether, since the route was opened or last unblocked, the browser
// sent credentials where only its HTTP auth cache can have them from or put them in: a plain-text
// request in a tunnel (a ws:// handshake) with an Authorization header. After Block it holds for
// every answer that reached the browser.
func (r *Route) SawCredentials() bool { return r.proxy.credentials.Load() }

// Unblock lets the route serve again after Block, and forgets SawCredentials.
func (r *Route) Unblock() {
	r.proxy.credentials.Store(false)
	r.proxy.blocked.Store(false)
}

// Addr is the route's address, "127.0.0.1:port", for the browser context's proxy.
func (r *Route) Addr() string { return r.proxy.Addr() }

// Close stops the route, ends its connections, waits for its goroutines (or ctx), frees its
// port in the Guard and drops the credentials.
func (r *Route) Close(ctx context.Context) error {
	err := r.proxy.Close(ctx)
	r.guard.AllowPort(r.proxy.self)
	if r.proxy.via != nil {
		r.proxy.via.forget()
	}
	return err
}

// upstream is the way out of a Route's proxy.
type upstream struct {
	guard     *Guard
	addrs     []netip.AddrPort // the upstream proxy's checked addresses
	auth      string           // the Proxy-Authorization value; "" for none
	bypass    []string
	transport *http.Transport
	forward   *httputil.ReverseProxy
}

// forget drops the credentials once the route is closed.
func (v *upstream) forget() {
	v.transport.CloseIdleConnections()
	v.auth, v.transport.Proxy, v.forward = "", nil, nil
}

// bypasses reports whether host (a URL's host, an IP without brackets, or a name) is to be
// reached directly.
func (v *upstream) bypasses(host string) bool {
	if strings.IndexByte(host, ':') >= 0 && !strings.HasPrefix(host, "[") {
		host = "[" + host + "]"
	}
	a, name, kind := urlhost.Parse(host)
	name = strings.TrimSuffix(name, ".")
	for _, b := range v.bypass {
		switch {
		case kind == urlhost.IP && b == a.Unmap().String():
			return true
		case kind == urlhost.Name && matchHost(b, name):
			return true
		}
	}
	return false
}

// tunnel opens a tunnel to target ("host:port") through the upstream: the Guard resolves and
// checks target here, and the upstream is asked to CONNECT to a checked address, so it reaches
// nothing the Guard did not allow, whatever its own DNS says.
func (v *upstream) tunnel(ctx context.Context, target string, self netip.AddrPort) (net.Conn, error) {
	targets, err := v.guard.checkAddress(ctx, "tcp", target, self)
	if err != nil {
		return nil, err
	}
	var firstErr error
	for _, t := range targets {
		c, err := v.connect(ctx, t)
		if err == nil {
			return c, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if errors.Is(err, errProxyAuth) || ctx.Err() != nil {
			break
		}
	}
	return nil, firstErr
}

// connect asks the upstream for a CONNECT tunnel to t.
func (v *upstream) connect(ctx context.Context, t netip.AddrPort) (net.Conn, error) {
	c, err := v.guard.dialFirst(ctx, v.addrs)
	if err != nil {
		return nil, fmt.Errorf("egress: dial the upstream proxy: %w", err)
	}
	// The handshake ends with ctx, or after dialTimeout.
	_ = c.SetDeadline(time.Now().Add(dialTimeout))
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	req := "CONNECT " + t.String() + " HTTP/1.1\r\nHost: " + t.String() + "\r\n"
	if v.auth != "" {
		req += "Proxy-Authorization: " + v.auth + "\r\n"
	}
	lim := &answerLimit{r: c, left: maxConnectAnswer}
	br := bufio.NewReader(lim)
	var resp *http.Response
	if _, err = io.WriteString(c, req+"\r\n"); err == nil {
		resp, err = http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	}
	if !stop() && err == nil {
		err = ctx.Err()
	}
	switch {
	case err != nil:
		err = fmt.Errorf("egress: CONNECT through the upstream proxy: %w", err)
	case resp.StatusCode == http.StatusProxyAuthRequired:
		err = errProxyAuth
	case resp.StatusCode/100 != 2:
		err = fmt.Errorf("egress: the upstream proxy answered CONNECT with %q", resp.Status)
	}
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	_ = c.SetDeadline(time.Time{})
	lim.left = -1 // the tunnel's bytes are the page's, unbounded
	if br.Buffered() > 0 {
		return &bufferedConn{Conn: c, r: br}, nil
	}
	return c, nil
}

// maxConnectAnswer bounds the upstream's answer to CONNECT, status line and headers: a proxy
// that sends an endless line would otherwise grow the heap at line speed.
const maxConnectAnswer = 64 << 10

// errConnectAnswerTooLarge is the answer of an upstream that sent more than maxConnectAnswer.
var errConnectAnswerTooLarge = errors.New("egress: the upstream proxy's answer to CONNECT is too large")

// answerLimit reads from r and fails once left bytes are read; left < 0: no limit.
type answerLimit struct {
	r    io.Reader
	left int64
}

func (l *answerLimit) Read(p []byte) (int, error) {
	if l.left < 0 {
		return l.r.Read(p)
	}
	if l.left == 0 {
		return 0, errConnectAnswerTooLarge
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

// bufferedConn is a connection whose first bytes were read into r already.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// forwardVia forwards a plain http request through the upstream as an absolute-form request to
// the address the Guard checked, with the name kept in Host.
func (p *Proxy) forwardVia(w http.ResponseWriter, r *http.Request) {
	hostPort := r.URL.Host
	if r.URL.Port() == "" {
		hostPort = net.JoinHostPort(r.URL.Hostname(), "80")
	}
	targets, err := p.guard.checkAddress(r.Context(), "tcp", hostPort, p.self)
	if err != nil {
		p.forwardError(w, r, err)
		return
	}
	// One request, one address: the first the Guard checked, as a browser would take it.
	out := r.Clone(r.Context())
	out.URL.Host = targets[0].String()
	out.Host = r.Host
	p.via.forward.ServeHTTP(w, out)
}
