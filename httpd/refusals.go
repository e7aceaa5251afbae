package httpd

import (
	"strings"

	"github.com/shotd/shotd"
	"github.com/valyala/fasthttp"
)

// Refused requests are answered before any account limit applies (the rate is counted at
// admission, after authentication and validation), so without an allowance of their own a
// client could make the server read, parse and refuse without end: unknown keys, bad
// signatures, invalid options. They are counted per client address and per
// access key; past either allowance every request of that address or key is 429 rate_limited
// until its minute ends, valid ones included, so that guessing gains nothing meanwhile.
//
// A key counts only the refusals of requests that passed its checks (signature, expires):
// access keys travel in links, and a stranger who knows one must not be able to shut it out
// with bad signatures or bodies. The stranger's address counts those.

// codeKey is the user value under which writeError leaves the answer's error code.
const codeKey = "shotd.code"

// verifiedKey is the user value under which verify leaves the access key it let through.
const verifiedKey = "shotd.verified_key"

// refusalExempt are paths that refuse nothing and that a load balancer probes.
func refusalExempt(path []byte) bool {
	p := string(path)
	return p == "/healthz" || p == "/readyz" || strings.HasPrefix(p, "/docs/")
}

// requestKey is the access key a request names, in the order of renderKey, found without
// parsing options; "" when it names none.
func requestKey(ctx *fasthttp.RequestCtx) string {
	if v := ctx.QueryArgs().Peek("access_key"); len(v) > 0 {
		return string(v)
	}
	if ctx.IsPost() {
		if v, ok := shotd.JSONString(ctx.PostBody(), "access_key"); ok && v != "" {
			return v
		}
	}
	return headerKey(ctx)
}

// throttled answers 429 rate_limited and reports true when the request's address or key has
// used up its allowance of refusals.
func (s *Server) throttled(ctx *fasthttp.RequestCtx) bool {
	if (s.refusedAddr == nil && s.refusedKey == nil) || refusalExempt(ctx.Path()) {
		return false
	}
	if wait := s.refusedAddr.wait(clientID(ctx.RemoteAddr())); wait > 0 {
		s.fail(ctx, tooManyRefusals("this address", s.refusedAddr.limit, wait))
		return true
	}
	if wait := s.refusedKey.wait(requestKey(ctx)); wait > 0 {
		s.fail(ctx, tooManyRefusals("this access key", s.refusedKey.limit, wait))
		return true
	}
	return false
}

func tooManyRefusals(who string, limit, wait int) error {
	e := shotd.Errorf(shotd.CodeRateLimited, "more than %d requests of %s were refused in the last minute; fix them before retrying", limit, who)
	e.RetryAfter = wait
	return e
}

// countRefusal counts the answer against the allowances when it refused the request before
// the account's limits counted it: a 4xx other than 402 and 429 without the account's rate
// headers, or a plan feature the account lacks (the account actor refuses it uncounted).
func (s *Server) countRefusal(ctx *fasthttp.RequestCtx) {
	if (s.refusedAddr == nil && s.refusedKey == nil) || refusalExempt(ctx.Path()) {
		return
	}
	st := ctx.Response.StatusCode()
	if st < 400 || st > 499 || st == fasthttp.StatusPaymentRequired || st == fasthttp.StatusTooManyRequests {
		return
	}
	code, _ := ctx.UserValue(codeKey).(shotd.Code)
	if len(ctx.Response.Header.Peek("X-RateLimit-Limit")) > 0 && code != shotd.CodeFeatureNotAvailable {
		return // the account admitted or refused it and counted it against its own rate
	}
	s.refusedAddr.add(clientID(ctx.RemoteAddr()))
	if ak, _ := ctx.UserValue(verifiedKey).(string); ak != "" {
		s.refusedKey.add(ak)
	}
}
