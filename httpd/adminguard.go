package httpd

import (
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shotd/shotd"
	"github.com/valyala/fasthttp"
)

// AdminFailuresPerMinute is how many wrong or missing admin tokens one client address may send
// in a minute; past it every wrong or missing token of that address is 429 rate_limited until
// the minute ends, without being counted or logged further. The right token still passes.
const AdminFailuresPerMinute = 10

// Metrics access on the admin listener (SetMetricsToken).
const (
	metricsAuto  int32 = iota // the token unless the listener is on loopback, decided in Serve
	metricsToken              // the admin token
	metricsOpen               // none
)

// SetMetricsToken says whether /metrics asks for the admin token; call it before Serve.
// Without it, /metrics asks for the token unless the admin listener is on a loopback address.
func (a *Admin) SetMetricsToken(need bool) {
	if need {
		a.metrics.Store(metricsToken)
	} else {
		a.metrics.Store(metricsOpen)
	}
}

// resolveMetrics decides metricsAuto from the address the admin listener is bound to.
func (a *Admin) resolveMetrics(ln net.Listener) {
	if a.metrics.Load() != metricsAuto {
		return
	}
	mode := metricsToken
	if ap, err := netip.ParseAddrPort(ln.Addr().String()); err == nil && ap.Addr().Unmap().IsLoopback() {
		mode = metricsOpen
	}
	a.metrics.CompareAndSwap(metricsAuto, mode)
}

// metricsGate puts the admin token in front of the /metrics handler when it is asked for.
func (a *Admin) metricsGate(next fasthttp.RequestHandler) fasthttp.RequestHandler {
	withToken := a.auth(next)
	return func(ctx *fasthttp.RequestCtx) {
		if a.metrics.Load() == metricsOpen {
			next(ctx)
			return
		}
		withToken(ctx) // metricsAuto here: Serve was not called (a bare Handler); be safe
	}
}

// adminGuard counts failed admin tokens per client address and checks the Host header.
type adminGuard struct {
	failures *allowance
	metrics  atomic.Int32

	hostMu sync.RWMutex
	hosts  map[string]bool
}

// AllowHost lets the admin listener answer requests whose Host names host (any port): the
// names of admin_listen and public_url are allowed by themselves, as are IP literals and
// localhost. Call it before Serve.
func (g *adminGuard) AllowHost(host string) {
	host = strings.ToLower(strings.Trim(host, "[]"))
	if host == "" {
		return
	}
	g.hostMu.Lock()
	defer g.hostMu.Unlock()
	if g.hosts == nil {
		g.hosts = map[string]bool{}
	}
	g.hosts[host] = true
}

// hostAllowed reports whether the Host header may name the admin listener. A page of another
// site that rebinds its own name to the listener's address (DNS rebinding) sends its own name:
// refused, so that an operator's browser cannot be made to read /metrics or the API for it.
func (g *adminGuard) hostAllowed(hostHeader string) bool {
	host := hostHeader
	if h, _, err := net.SplitHostPort(hostHeader); err == nil {
		host = h
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	if _, err := netip.ParseAddr(host); err == nil || host == "" {
		return true // an IP literal is no name to rebind; browsers always send a Host
	}
	g.hostMu.RLock()
	defer g.hostMu.RUnlock()
	return g.hosts[strings.TrimSuffix(host, ".")]
}

// hostGuard refuses requests whose Host names no address of the admin listener.
func (a *Admin) hostGuard(next fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		if !a.hostAllowed(string(ctx.Host())) {
			a.fail(ctx, shotd.Errorf(shotd.CodeNotFound, "the Host header %q names neither admin_listen nor public_url", clipHost(ctx.Host())))
			return
		}
		next(ctx)
	}
}

func clipHost(h []byte) string {
	if len(h) > 100 {
		h = h[:100]
	}
	return string(h)
}

func newAdminGuard() adminGuard {
	return adminGuard{failures: newAllowance(AdminFailuresPerMinute, time.Now)}
}

// tokenThrottled answers 429 and reports true when the client used up its failed attempts.
func (g *adminGuard) tokenThrottled(ctx *fasthttp.RequestCtx, publicURL string) bool {
	wait := g.failures.wait(clientID(ctx.RemoteAddr()))
	if wait == 0 {
		return false
	}
	e := shotd.Errorf(shotd.CodeRateLimited, "more than %d admin requests of this address had a wrong or no token in the last minute", AdminFailuresPerMinute)
	e.RetryAfter = wait
	writeError(ctx, publicURL, e)
	return true
}

func (g *adminGuard) tokenFailed(ctx *fasthttp.RequestCtx) {
	g.failures.add(clientID(ctx.RemoteAddr()))
}
