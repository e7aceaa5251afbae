package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/internal/urlhost"
)

// Resolver looks up the addresses of a host name. *net.Resolver satisfies it; tests pass a fake
// because they must not use real DNS.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// ResolverFunc adapts a function to Resolver.
type ResolverFunc func(ctx context.Context, network, host string) ([]netip.Addr, error)

// LookupNetIP calls f.
func (f ResolverFunc) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	return f(ctx, network, host)
}

// dialTimeout bounds one TCP connect when the caller's context has no earlier deadline.
const dialTimeout = 30 * time.Second

// Guard resolves, checks and dials. It is safe for concurrent use.
type Guard struct {
	policy   *Policy
	resolver Resolver
	dialer   net.Dialer

	mu          sync.RWMutex
	deniedPorts []netip.AddrPort

	refusals atomic.Pointer[func(reason string)] // ObserveRefusals
}

// NewGuard returns a guard over policy p (nil: the built-in table only) that resolves names with
// r (nil: net.DefaultResolver).
func NewGuard(p *Policy, r Resolver) *Guard {
	if p == nil {
		p = NewPolicy(nil)
	}
	if r == nil {
		r = net.DefaultResolver
	}
	return &Guard{policy: p, resolver: r, dialer: net.Dialer{Timeout: dialTimeout}}
}

// Policy returns the guard's address policy.
func (g *Guard) Policy() *Policy { return g.policy }

// DenyPort refuses every dial to ap, even when its address is allow-listed: it keeps pages away
// from the service's own listeners, its proxy ports and Chrome's devtools port. For a loopback or
// unspecified address the port is refused on every loopback and unspecified address, because on
// Linux a connect to 0.0.0.0 or :: lands on a loopback listener and a listener may be bound on
// both address families; for an unspecified address also on the host's own addresses
// (WithHostAddrs), where a listener on 0.0.0.0 answers too.
func (g *Guard) DenyPort(ap netip.AddrPort) {
	ap = netip.AddrPortFrom(ap.Addr().WithZone("").Unmap(), ap.Port())
	g.mu.Lock()
	defer g.mu.Unlock()
	g.deniedPorts = append(g.deniedPorts, ap)
}

// AllowPort undoes one DenyPort of ap, once its listener is gone (a Chrome that stopped), so that
// a later listener on the same port is not refused for ever.
func (g *Guard) AllowPort(ap netip.AddrPort) {
	ap = netip.AddrPortFrom(ap.Addr().WithZone("").Unmap(), ap.Port())
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, d := range g.deniedPorts {
		if d == ap {
			g.deniedPorts = append(g.deniedPorts[:i], g.deniedPorts[i+1:]...)
			return
		}
	}
}

// portDenied reports whether a dial to a:port is refused by DenyPort or by extra.
func (g *Guard) portDenied(a netip.Addr, port uint16, extra netip.AddrPort) bool {
	a = a.WithZone("").Unmap()
	// An IPv6 address that carries an IPv4 one (NAT64, 6to4, Teredo) may reach it.
	for _, a := range append([]netip.Addr{a}, embeddedV4(a)...) {
		dst := netip.AddrPortFrom(a, port)
		if extra.IsValid() && sameListener(dst, extra) {
			return true
		}
		g.mu.RLock()
		for _, d := range g.deniedPorts {
			if sameListener(dst, d) || d.Addr().IsUnspecified() && d.Port() == port && g.policy.isHostAddr(a) {
				g.mu.RUnlock()
				return true
			}
		}
		g.mu.RUnlock()
	}
	return false
}

// sameListener reports whether a connect to dst may reach a listener bound on denied.
func sameListener(dst, denied netip.AddrPort) bool {
	if dst.Port() != denied.Port() {
		return false
	}
	if dst.Addr() == denied.Addr() {
		return true
	}
	return isLocal(dst.Addr()) && isLocal(denied.Addr())
}

func isLocal(a netip.Addr) bool { return a.IsLoopback() || a.IsUnspecified() }

// localhostAddrs is what "localhost" and its subdomains mean (RFC 6761): resolving them locally,
// as Chrome does, keeps them off DNS; the policy then refuses them unless loopback is allowed.
var localhostAddrs = []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1}), netip.IPv6Loopback()}

// Resolve returns the addresses of host after checking each against the policy. host is a URL
// host without port: an IP literal in any spelling (see ParseHostLiteral) is checked without DNS;
// a name is resolved exactly once, and if any of its addresses is refused the whole host is
// refused, since a name that resolves to a public and a private address is an attack, not a
// mistake. Errors: host_not_allowed for a refusal or a malformed host, navigation_failed when the
// name does not resolve. IPv4-mapped results are returned as IPv4.
func (g *Guard) Resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	a, name, kind := urlhost.Parse(host)
	switch kind {
	case urlhost.IP:
		if err := g.policy.Check(a); err != nil {
			return nil, withHost(err, host)
		}
		if a.Is4In6() {
			a = a.Unmap()
		}
		return []netip.Addr{a}, nil
	case urlhost.Invalid:
		return nil, refused(&RefusedError{Host: host, Reason: "malformed host"})
	}
	var addrs []netip.Addr
	if isLocalhostName(name) {
		addrs = localhostAddrs
	} else {
		var err error
		addrs, err = g.resolver.LookupNetIP(ctx, "ip", name)
		if err != nil {
			return nil, shotd.Wrap(shotd.CodeNavigationFailed, err, "the host name could not be resolved")
		}
	}
	out := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		a = a.Unmap()
		if err := g.policy.Check(a); err != nil {
			return nil, withHost(err, host)
		}
		if !containsAddr(out, a) {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, shotd.Wrap(shotd.CodeNavigationFailed, fmt.Errorf("egress: no address for %q", host), "the host name could not be resolved")
	}
	return out, nil
}

// isLocalhostName reports "localhost" and its subdomains (name as parseHost returns it).
func isLocalhostName(name string) bool {
	n := strings.TrimSuffix(name, ".")
	return n == "localhost" || strings.HasSuffix(n, ".localhost")
}

// withHost records the asked-for host in the cause of a refusal, for the log.
func withHost(err error, host string) error {
	var e *shotd.Error
	var r *RefusedError
	if errors.As(err, &e) && errors.As(e.Cause, &r) {
		r.Host = host
	}
	return err
}

func containsAddr(as []netip.Addr, a netip.Addr) bool {
	for _, b := range as {
		if a == b {
			return true
		}
	}
	return false
}

// CheckURL is the pre-check of a render's url: it must start with http:// or https:// (otherwise
// invalid_options naming the field "url", as option.ParseOptions answers a missing or wrong
// scheme), be a valid full address (otherwise invalid_url: no host, a malformed host such as
// 999.1.1.1, a bad port), its host must not be refused (host_not_allowed; a name is resolved
// once for that), nor its port denied. A name that does not resolve gives
// navigation_failed. Passing CheckURL is no licence to dial: the proxy checks again at connect
// time, which is what defeats DNS rebinding.
func (g *Guard) CheckURL(ctx context.Context, rawURL string) error {
	return g.observe(g.checkURL(ctx, rawURL, true))
}

// CheckURLLiteral is CheckURL without DNS, for a URL that is dialed later (a background job's):
// the scheme, the host's syntax, IP literals in any spelling, localhost and denied ports are
// checked now; any other name passes, as the dial checks its addresses.
func (g *Guard) CheckURLLiteral(rawURL string) error {
	return g.observe(g.checkURL(context.Background(), rawURL, false))
}

func (g *Guard) checkURL(ctx context.Context, rawURL string, resolveNames bool) error {
	if !urlhost.HasHTTPScheme(rawURL) {
		return badScheme()
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return invalidURL("is not a valid address")
	}
	host := u.Hostname()
	if host == "" {
		return invalidURL("has no host")
	}
	_, name, kind := urlhost.Parse(host)
	if kind == urlhost.Invalid {
		return invalidURL("has an invalid host")
	}
	port := uint16(80)
	if u.Scheme == "https" {
		port = 443
	}
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 {
			return invalidURL("has an invalid port")
		}
		port = uint16(n)
	}
	if kind == urlhost.Name && !resolveNames && !isLocalhostName(name) {
		return nil
	}
	addrs, err := g.Resolve(ctx, host)
	if err != nil {
		return err
	}
	for _, a := range addrs {
		if g.portDenied(a, port, netip.AddrPort{}) {
			return refused(&RefusedError{Host: host, Addr: a, Port: port, Reason: "denied port"})
		}
	}
	return nil
}

// badScheme is the invalid_options answer to a url that is not http:// or https://.
func badScheme() *shotd.Error {
	const msg = "must be a full http:// or https:// address"
	return &shotd.Error{
		Code:    shotd.CodeInvalidOptions,
		Message: "url " + msg,
		Fields:  []shotd.FieldError{{Field: "url", Message: msg}},
	}
}

// invalidURL is the invalid_url answer to a malformed http(s) address.
func invalidURL(msg string) *shotd.Error {
	return &shotd.Error{
		Code:    shotd.CodeInvalidURL,
		Message: "url " + msg,
		Fields:  []shotd.FieldError{{Field: "url", Message: msg}},
	}
}

// DialContext connects to address ("host:port") over network "tcp", "tcp4" or "tcp6": it
// resolves the host once through Resolve, refuses if any address or the port is refused, and then
// dials the checked addresses in order until one answers. It never hands a name to the dialer, so
// nothing is resolved twice. It fits http.Transport.DialContext. A refusal is a host_not_allowed
// *shotd.Error (see IsRefused); a failed connect is the dialer's error.
func (g *Guard) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	c, err := g.dial(ctx, network, address, netip.AddrPort{})
	return c, g.observe(err)
}

// dial is DialContext with one more denied listener, the proxy's own address, so that a page
// cannot make the proxy connect to itself when loopback is allow-listed.
func (g *Guard) dial(ctx context.Context, network, address string, self netip.AddrPort) (net.Conn, error) {
	targets, err := g.checkAddress(ctx, network, address, self)
	if err != nil {
		return nil, err
	}
	return g.dialFirst(ctx, targets)
}

// checkAddress resolves the host of address ("host:port") once and returns the addresses a
// connect over network may use, after checking each and the port (self is one more denied
// listener). A refusal is a host_not_allowed *shotd.Error.
func (g *Guard) checkAddress(ctx context.Context, network, address string, self netip.AddrPort) ([]netip.AddrPort, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, fmt.Errorf("egress: network %q is not supported", network)
	}
	host, portText, err := net.SplitHostPort(address)
	if err != nil {
		return nil, refused(&RefusedError{Host: address, Reason: "malformed address"})
	}
	n, err := strconv.ParseUint(portText, 10, 16)
	if err != nil || n == 0 {
		return nil, refused(&RefusedError{Host: address, Reason: "malformed port"})
	}
	port := uint16(n)
	// SplitHostPort removed the brackets; put them back so that parseHost reads IPv6 with a zone.
	if strings.IndexByte(host, ':') >= 0 {
		host = "[" + host + "]"
	}
	addrs, err := g.Resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	var usable []netip.AddrPort
	for _, a := range addrs {
		if g.portDenied(a, port, self) {
			return nil, refused(&RefusedError{Host: host, Addr: a, Port: port, Reason: "denied port"})
		}
		if network == "tcp" || (network == "tcp4") == a.Is4() {
			usable = append(usable, netip.AddrPortFrom(a, port))
		}
	}
	if len(usable) == 0 {
		return nil, fmt.Errorf("egress: %q has no %s address", host, network)
	}
	return usable, nil
}

// dialFirst connects to the checked targets in order until one answers.
func (g *Guard) dialFirst(ctx context.Context, targets []netip.AddrPort) (net.Conn, error) {
	var firstErr error
	for _, t := range targets {
		conn, err := g.dialer.DialContext(ctx, "tcp", t.String())
		if err == nil {
			return conn, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, firstErr
}
