package httpd

import (
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/shotd/shotd"
	"github.com/valyala/fasthttp"
)

// AdminFailuresPerMinute is how many wrong or missing admin tokens one client address may send
// in a minute; past it every admin request of that address, a right token included, is 429
// rate_limited until the minute ends, so that guessing the token gains nothing.
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

// adminGuard counts failed admin tokens per client address.
type adminGuard struct {
	failures *allowance
	metrics  atomic.Int32
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
