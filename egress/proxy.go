package egress

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/shotd/shotd"
	"github.com/shotd/shotd/internal/proc"
	"github.com/shotd/shotd/internal/tunnel"
	"github.com/shotd/shotd/internal/urlhost"
)

// RefusedHeader is set on every answer of the proxy that refuses a destination, with the value
// "host_not_allowed", so that whoever reads the answer (a log, a test) can tell it from a site's
// own 403. The proxy strips it from the answers it forwards: a site cannot forge it. (A render
// tells its route's refusals by Route.Troubles.)
const RefusedHeader = "X-Shotd-Refused"

// UpstreamErrorHeader is set on the proxy's own 502 answers, with a short reason ("connection
// refused", "no such host", "timeout", "unreachable"), to tell them from a 502 page of the site;
// stripped from forwarded answers as RefusedHeader is.
const UpstreamErrorHeader = "X-Shotd-Upstream-Error"

// upstreamReason names a dial or forward failure in words safe to show a client.
func upstreamReason(err error) string {
	msg := err.Error()
	switch {
	case errors.Is(err, errProxyAuth):
		return "proxy authentication failed"
	case strings.Contains(msg, "connection refused"):
		return "connection refused"
	case strings.Contains(msg, "no such host"), shotd.CodeOf(err) == shotd.CodeNavigationFailed:
		return "no such host"
	case strings.Contains(msg, "timeout"), strings.Contains(msg, "deadline exceeded"):
		return "timeout"
	case strings.Contains(msg, "reset by peer"), strings.Contains(msg, "EOF"):
		return "connection reset"
	}
	return "unreachable"
}

// DefaultDenyHosts are the hosts Chrome contacts on its own (updates, component and safe-browsing
// downloads, sign-in, push, field trials). The proxy refuses them by name, before any DNS. They are
// precise on purpose: refusing all of *.google.com, *.googleapis.com or *.gstatic.com would also
// break screenshots of google.com and of every page that uses Google Fonts or hosted libraries.
// Patterns: "*.example.com" matches example.com and every name below it; otherwise each label is
// matched with path.Match, so "clients*.google.com" matches clients2.google.com.
var DefaultDenyHosts = []string{
	"clients*.google.com",           // update checks, crash upload, extension downloads
	"android.clients.google.com",    // push and device registration
	"accounts.google.com",           // sign-in
	"oauth2.googleapis.com",         // sign-in tokens
	"update.googleapis.com",         // component updater
	"clientservices.googleapis.com", // field-trial seed
	"content-autofill.googleapis.com",
	"*-pa.googleapis.com", // Chrome's private APIs: optimization guide, sync, leak check
	"safebrowsing.googleapis.com",
	"safebrowsing.google.com",
	"sb-ssl.google.com",
	"mtalk.google.com", // push messaging
	"dl.google.com",    // downloads
	"tools.google.com",
	"*.gvt1.com", // component and update payloads
	"*.gvt2.com",
}

// Proxy is the HTTP forward proxy that Chrome is launched behind (--proxy-server and
// --proxy-bypass-list="<-loopback>", so that even loopback goes through it). It forwards
// absolute-form http requests, streaming bodies both ways without caching, and opens CONNECT
// tunnels for https, ws and wss. Every connection it makes is dialled by the Guard.
type Proxy struct {
	guard     *Guard
	log       zerolog.Logger
	denyHosts []string
	refused   atomic.Uint64

	transport *http.Transport
	forward   *httputil.ReverseProxy
	via       *upstream // a Route's way out; nil: every connection is dialled directly

	mu      sync.Mutex
	started bool
	closed  bool
	ln      net.Listener
	self    netip.AddrPort
	srv     *http.Server
	ctx     context.Context
	cancel  context.CancelFunc
	tunnels map[net.Conn]struct{}
	conns   map[net.Conn]struct{} // the clients' connections to the proxy, until hijacked or closed
	blocked atomic.Bool           // Route.Block: every request is answered 503
	// troubles: a Route's refusals and unreachable destinations since its last Block; nil for
	// the proxy every Chrome is launched behind.
	troubles *troubleLog
	// credentials: a plain-text request in one of a route's tunnels carried an Authorization
	// header since the route was opened or last unblocked (authSniffer).
	credentials atomic.Bool
	// active counts the serve loop and every handler, tunnels included. Add happens under mu and
	// only while !closed, so that Close can Wait safely.
	active sync.WaitGroup
}

// MaxAnswerHeaderBytes caps the headers of an answer the proxy reads for a page, as Chrome
// itself does (256 KiB): Go's default of 10 MiB a connection, read whole before Chrome sees a
// byte, would let a site hold gigabytes of the service's memory through a render's connections.
const MaxAnswerHeaderBytes = 256 << 10

// NewProxy returns a proxy that dials through g and logs refusals and failures at debug level
// on log. It refuses DefaultDenyHosts until SetDenyHosts says otherwise. Call Start to listen.
func NewProxy(g *Guard, logger zerolog.Logger) *Proxy {
	deny, err := compileDenyHosts(DefaultDenyHosts)
	if err != nil {
		panic(err) // DefaultDenyHosts is a constant table; a bad entry is a programming error
	}
	p := &Proxy{
		guard:     g,
		log:       logger,
		denyHosts: deny,
		tunnels:   make(map[net.Conn]struct{}),
		conns:     make(map[net.Conn]struct{}),
	}
	p.transport = &http.Transport{
		Proxy:       nil, // never chain to a proxy from the environment
		DialContext: p.dial,
		// The browser asked for its own encodings; decompressing here would change the answer.
		DisableCompression:     true,
		MaxIdleConns:           64,
		MaxIdleConnsPerHost:    8,
		IdleConnTimeout:        60 * time.Second,
		MaxResponseHeaderBytes: MaxAnswerHeaderBytes,
	}
	p.forward = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			// Forward proxying: the absolute URL already names the destination, and the Host
			// follows it. Rewrite (not Director) also drops any X-Forwarded-* the page sent, and
			// the proxy adds none, so the site learns nothing about the service.
			pr.Out.Host = ""
		},
		// The proxy's own headers mean something only on its own answers: a site must not make
		// its page look refused or unreachable.
		ModifyResponse: func(r *http.Response) error {
			r.Header.Del(RefusedHeader)
			r.Header.Del(UpstreamErrorHeader)
			return nil
		},
		Transport:     p.transport,
		FlushInterval: -1, // stream: a page waiting on a long poll or event stream gets each chunk
		ErrorLog:      log.New(debugWriter{p.log}, "", 0),
		ErrorHandler:  p.forwardError,
	}
	return p
}

// SetDenyHosts replaces the list of host-name patterns refused before any DNS (see
// DefaultDenyHosts for the syntax). Call it before Start. It fails on a malformed pattern.
func (p *Proxy) SetDenyHosts(patterns []string) error {
	out, err := compileDenyHosts(patterns)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started {
		return errors.New("egress: SetDenyHosts after Start")
	}
	p.denyHosts = out
	return nil
}

// Start listens on addr, which must be a loopback address ("127.0.0.1:0" picks a free port): the
// proxy is for the service's own Chrome processes and must not be an open proxy on a network.
// It serves until Close.
func (p *Proxy) Start(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("egress: proxy address %q: %w", addr, err)
	}
	if a, err := netip.ParseAddr(host); err != nil || !a.IsLoopback() {
		return fmt.Errorf("egress: proxy address %q: must be a loopback address", addr)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started || p.closed {
		return errors.New("egress: proxy already started")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("egress: proxy listen: %w", err)
	}
	p.started = true
	p.ln = ln
	if ap, err := netip.ParseAddrPort(ln.Addr().String()); err == nil {
		p.self = ap
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.srv = &http.Server{
		Handler:           http.HandlerFunc(p.serve),
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       90 * time.Second,
		ErrorLog:          log.New(debugWriter{p.log}, "", 0),
		BaseContext:       func(net.Listener) context.Context { return p.ctx },
		ConnState:         p.connState,
	}
	p.active.Add(1)
	go func() {
		defer p.active.Done()
		if err := p.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.log.Error().Err(err).Msg("egress proxy stopped serving")
		}
	}()
	p.log.Debug().Str("addr", ln.Addr().String()).Msg("egress proxy listening")
	return nil
}

// Addr returns the address the proxy listens on ("127.0.0.1:port"), or "" before Start.
func (p *Proxy) Addr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		return ""
	}
	return p.ln.Addr().String()
}

// Refused returns how many destinations the proxy has refused since it was made.
func (p *Proxy) Refused() uint64 { return p.refused.Load() }

// Close stops listening, cancels forwarded requests, closes open tunnels and waits for every
// goroutine of the proxy to end, or for ctx. It is safe to call more than once.
func (p *Proxy) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.closed || !p.started {
		p.closed = true
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()

	p.cancel() // ends forwarded requests and upgraded connections
	err := p.srv.Shutdown(ctx)
	if err != nil {
		_ = p.srv.Close()
	}
	p.mu.Lock()
	for c := range p.tunnels {
		_ = c.Close()
	}
	p.mu.Unlock()

	if werr := proc.WaitGroup(ctx, &p.active); werr != nil {
		err = werr
	}
	p.transport.CloseIdleConnections()
	if err != nil {
		return fmt.Errorf("egress: proxy close: %w", err)
	}
	return nil
}

// enter counts a handler in; it fails once Close has begun.
func (p *Proxy) enter() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.active.Add(1)
	return true
}

// serve answers one proxy request.
func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	if !p.enter() {
		http.Error(w, "proxy is closing", http.StatusServiceUnavailable)
		return
	}
	defer p.active.Done()
	if p.blocked.Load() {
		w.Header().Set("Connection", "close")
		http.Error(w, "route blocked between renders", http.StatusServiceUnavailable)
		return
	}
	if r.Method == http.MethodConnect {
		p.serveConnect(w, r)
		return
	}
	if r.URL.Scheme != "http" || r.URL.Host == "" {
		// Only absolute-form http requests are proxied; https comes as CONNECT.
		http.Error(w, "not a forward proxy request", http.StatusBadRequest)
		return
	}
	if host := r.URL.Hostname(); p.deniedName(host) {
		p.refuse(w, r, r.URL.Host, refused(&RefusedError{Host: host, Reason: "denied host name"}))
		return
	}
	if p.via != nil && !p.via.bypasses(r.URL.Hostname()) {
		p.forwardVia(w, r)
		return
	}
	p.forward.ServeHTTP(w, r)
}

// forwardError answers a plain request whose forwarding failed: 403 for a refusal, else 502.
func (p *Proxy) forwardError(w http.ResponseWriter, r *http.Request, err error) {
	if IsRefused(err) {
		p.refuse(w, r, r.URL.Host, err)
		return
	}
	p.log.Debug().Str("method", r.Method).Str("host", r.URL.Host).Err(err).Msg("egress forward failed")
	reason := upstreamReason(err)
	p.noteTrouble(r, false, reason)
	w.Header().Set(UpstreamErrorHeader, reason)
	http.Error(w, "bad gateway", http.StatusBadGateway)
}

// refuse answers 403 with RefusedHeader and counts the refusal.
func (p *Proxy) refuse(w http.ResponseWriter, r *http.Request, target string, err error) {
	p.refused.Add(1)
	p.guard.observe(err)
	p.noteTrouble(r, true, "")
	ev := p.log.Debug().Str("method", r.Method).Str("target", target)
	var e *shotd.Error
	if errors.As(err, &e) && e.Cause != nil {
		ev = ev.Str("reason", e.Cause.Error())
	}
	ev.Msg("egress refused")
	h := w.Header()
	h.Set(RefusedHeader, string(shotd.CodeHostNotAllowed))
	h.Set("Cache-Control", "no-store")
	http.Error(w, "host not allowed", http.StatusForbidden)
}

// compileDenyHosts normalises patterns (lower case, no trailing dot) into a fresh slice and
// rejects malformed ones.
func compileDenyHosts(patterns []string) ([]string, error) {
	out := make([]string, 0, len(patterns))
	for _, pat := range patterns {
		pat = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(pat)), ".")
		if pat == "" {
			continue
		}
		for _, label := range strings.Split(pat, ".") {
			if _, err := path.Match(label, ""); err != nil {
				return nil, fmt.Errorf("egress: deny host pattern %q: %w", pat, err)
			}
		}
		out = append(out, pat)
	}
	return out, nil
}

// deniedName reports whether host is a name on the deny list. Literals are never on it.
func (p *Proxy) deniedName(host string) bool {
	_, name, kind := urlhost.Parse(host)
	if kind != urlhost.Name {
		return false
	}
	name = strings.TrimSuffix(name, ".")
	for _, pat := range p.denyHosts {
		if matchHost(pat, name) {
			return true
		}
	}
	return false
}

// matchHost matches a lower-case name against a deny pattern (see DefaultDenyHosts).
func matchHost(pattern, name string) bool {
	if rest, ok := strings.CutPrefix(pattern, "*."); ok {
		return name == rest || strings.HasSuffix(name, "."+rest)
	}
	pl, nl := strings.Split(pattern, "."), strings.Split(name, ".")
	if len(pl) != len(nl) {
		return false
	}
	for i := range pl {
		if ok, _ := path.Match(pl[i], nl[i]); !ok {
			return false
		}
	}
	return true
}

// dial is the transport's and the tunnels' dialer: the Guard, with the proxy's own address denied.
func (p *Proxy) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	p.mu.Lock()
	self := p.self
	p.mu.Unlock()
	return p.guard.dial(ctx, network, addr, self)
}

// serveConnect opens a tunnel: dial first (so a refusal is an ordinary 403 answer), then hijack,
// answer 200 and copy both ways until either side ends or the proxy closes.
func (p *Proxy) serveConnect(w http.ResponseWriter, r *http.Request) {
	target := r.Host
	host, _, err := net.SplitHostPort(target)
	if err != nil {
		http.Error(w, "CONNECT needs host:port", http.StatusBadRequest)
		return
	}
	if p.deniedName(host) {
		p.refuse(w, r, target, refused(&RefusedError{Host: host, Reason: "denied host name"}))
		return
	}
	var upstream net.Conn
	if p.via != nil && !p.via.bypasses(host) {
		upstream, err = p.via.tunnel(r.Context(), target, p.self)
	} else {
		upstream, err = p.dial(r.Context(), "tcp", target)
	}
	if err != nil {
		if IsRefused(err) {
			p.refuse(w, r, target, err)
			return
		}
		p.log.Debug().Str("target", target).Err(err).Msg("egress connect failed")
		p.noteTrouble(r, false, upstreamReason(err))
		http.Error(w, "bad gateway", http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		_ = upstream.Close()
		http.Error(w, "tunnels not supported", http.StatusInternalServerError)
		return
	}
	client, brw, err := hj.Hijack()
	if err != nil {
		_ = upstream.Close()
		p.log.Debug().Str("target", target).Err(err).Msg("egress hijack failed")
		return
	}
	if !p.track(client, upstream) {
		closeBoth(client, upstream)
		return
	}
	defer p.untrack(client, upstream)
	// The server may have left its header read deadline on the connection.
	_ = client.SetDeadline(time.Time{})
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		closeBoth(client, upstream)
		return
	}
	var toUpstream io.Writer = upstream
	if p.troubles != nil { // a route: its context's tab must know of credentials Chrome keeps
		toUpstream = &authSniffer{w: upstream, saw: func() { p.credentials.Store(true) }}
	}
	// Bytes the client sent right after its CONNECT header sit in the server's buffer.
	if n := brw.Reader.Buffered(); n > 0 {
		buf, _ := brw.Reader.Peek(n)
		if _, err := toUpstream.Write(buf); err != nil {
			closeBoth(client, upstream)
			return
		}
	}
	tunnel.Join(client, upstream, toUpstream)
}

// closeBoth ends a tunnel that failed before tunnel.Join took its two connections over (untrack
// only forgets them).
func closeBoth(client, upstream net.Conn) {
	_ = client.Close()
	_ = upstream.Close()
}

// connState keeps the set of the clients' connections that block ends.
func (p *Proxy) connState(c net.Conn, state http.ConnState) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch state {
	case http.StateNew:
		p.conns[c] = struct{}{}
	case http.StateHijacked, http.StateClosed:
		delete(p.conns, c)
	}
}

// block answers every request 503 from now on and ends every connection: the clients' (a
// request under way is cancelled with its connection), the tunnels, and the idle ones to servers.
func (p *Proxy) block() {
	p.blocked.Store(true)
	if p.troubles != nil {
		p.troubles.clear()
	}
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	for c := range p.tunnels {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.transport.CloseIdleConnections()
	if p.via != nil {
		p.via.transport.CloseIdleConnections()
	}
}

// track registers an open tunnel so that Close can end it; it fails once Close has begun.
func (p *Proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	for _, c := range conns {
		p.tunnels[c] = struct{}{}
	}
	return true
}

func (p *Proxy) untrack(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		delete(p.tunnels, c)
	}
}

// debugWriter sends the standard library's server and proxy log lines to zerolog at debug level.
type debugWriter struct{ log zerolog.Logger }

func (d debugWriter) Write(b []byte) (int, error) {
	d.log.Debug().Msg(string(bytes.TrimSpace(b)))
	return len(b), nil
}
