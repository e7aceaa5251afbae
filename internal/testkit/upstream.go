package testkit

import (
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/shotd/shotd/internal/tunnel"
)

// Request is one request an UpstreamProxy was asked for.
type Request struct {
	Method     string // CONNECT, or the method of an absolute-form request
	Target     string // CONNECT's host:port, or the absolute URL
	Host       string // the Host header
	Authorized bool   // it carried the proxy's credentials
}

// UpstreamProxy is an HTTP forward proxy on loopback: CONNECT tunnels and absolute-form
// requests, each recorded, answered 407 without its credentials.
type UpstreamProxy struct {
	srv  *http.Server
	ln   net.Listener
	auth string

	mu       sync.Mutex
	requests []Request
	wg       sync.WaitGroup
	conns    map[net.Conn]struct{}
}

// NewUpstreamProxy listens on host (a loopback address) with credentials user:pass ("" and "":
// none asked for), and stops at the end of the test.
func NewUpstreamProxy(t testing.TB, host, user, pass string) *UpstreamProxy {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatalf("upstream proxy listen: %v", err)
	}
	p := &UpstreamProxy{ln: ln, conns: map[net.Conn]struct{}{}}
	if user != "" || pass != "" {
		p.auth = "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
	}
	forward := &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.Out.Host = pr.In.Host },
		Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
	}
	p.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target := r.Host
		if r.Method != http.MethodConnect {
			target = r.URL.String()
		}
		ok := p.auth == "" || r.Header.Get("Proxy-Authorization") == p.auth
		p.mu.Lock()
		p.requests = append(p.requests, Request{Method: r.Method, Target: target, Host: r.Host, Authorized: ok})
		p.mu.Unlock()
		if !ok {
			w.Header().Set("Proxy-Authenticate", `Basic realm="test"`)
			http.Error(w, "proxy credentials required", http.StatusProxyAuthRequired)
			return
		}
		if r.Method == http.MethodConnect {
			p.tunnel(w, r)
			return
		}
		r.Header.Del("Proxy-Authorization")
		forward.ServeHTTP(w, r)
	})}
	go func() { _ = p.srv.Serve(ln) }()
	t.Cleanup(p.close)
	return p
}

// Addr is host:port.
func (p *UpstreamProxy) Addr() string { return p.ln.Addr().String() }

// URL is the proxy option's value: http://user:pass@host:port, or without credentials.
func (p *UpstreamProxy) URL(user, pass string) string {
	u := url.URL{Scheme: "http", Host: p.Addr()}
	if user != "" || pass != "" {
		u.User = url.UserPassword(user, pass)
	}
	return u.String()
}

// Requests returns what the proxy was asked for so far.
func (p *UpstreamProxy) Requests() []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Request(nil), p.requests...)
}

func (p *UpstreamProxy) tunnel(w http.ResponseWriter, r *http.Request) {
	dst, err := net.DialTimeout("tcp", r.Host, 5*time.Second)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	c, brw, err := w.(http.Hijacker).Hijack()
	if err != nil {
		_ = dst.Close()
		return
	}
	p.mu.Lock()
	p.conns[c], p.conns[dst] = struct{}{}, struct{}{}
	p.wg.Add(1)
	p.mu.Unlock()
	defer p.wg.Done()
	_, _ = io.WriteString(c, "HTTP/1.1 200 Connection Established\r\n\r\n")
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n)
		_, _ = dst.Write(b)
	}
	tunnel.Join(c, dst, dst)
}

func (p *UpstreamProxy) close() {
	_ = p.srv.Close()
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
