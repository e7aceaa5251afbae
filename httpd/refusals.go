package httpd

import (
	"strings"

	"github.com/shotd/shotd"
	"github.com/valyala/fasthttp"
)

// Refused requests are answered before any account limit applies (the rate is counted at
// admission, after authentication and validation), so without an allowance of their own a
// client could make the server read, parse and refuse without end: unknown keys, bad
// signatures, invalid options. They are counted per client address and per access key; past
// its allowance a key or an address is 429 rate_limited until its minute ends.
//
// A request whose key and signature verify is judged by its key's allowance alone: its
// refusals count against the key, and its address's allowance does not refuse it, so that one
// client with a bug does not shut out every account behind the same address. What fails
// authentication, or comes before it, counts against the address. A key counts only the
// refusals of requests that passed its checks (signature, expires): access keys travel in
// links, and a stranger who knows one must not be able to shut it out with bad signatures or
// bodies.
//
// The account's own refusals (rate, quota, concurrency, queue) count too: conversion and DNS
// come after admission, but a client that keeps sending past its limits still costs a key
// lookup and an admission each time.

// codeKey is the user value under which writeError leaves the answer's error code.
const codeKey = "shotd.code"

// verifiedKey is the user value under which verify leaves the access key it let through.
const verifiedKey = "shotd.verified_key"

// refusalExempt are paths that refuse nothing and that a load balancer probes.
func refusalExempt(path []byte) bool {
	p := string(path)
	// /pressure answers 503 while the node is full: a load balancer that checks it must never
	// be throttled for that.
	return p == "/healthz" || p == "/readyz" || p == "/pressure" || p == "/docs" || strings.HasPrefix(p, "/docs/")
}

// addrWaitKey is the user value under which throttled leaves the seconds the address must
// wait, when its allowance is used up: fail answers 429 to what does not verify.
const addrWaitKey = "shotd.addr_wait"

// admittedKey is the user value admit sets when the account admitted the request: its later
// refusals are the account's to count.
const admittedKey = "shotd.admitted"

// requestKey is the access key a request names in its query or headers, found without reading
// its body; "" when it names none there.
func requestKey(ctx *fasthttp.RequestCtx) string {
	if v := ctx.QueryArgs().Peek("access_key"); len(v) > 0 {
		return string(v)
	}
	return headerKey(ctx)
}

// throttled answers 429 rate_limited and reports true when the request's key has used up its
// allowance of refusals, or its address has and it names no key that could verify.
func (s *Server) throttled(ctx *fasthttp.RequestCtx) bool {
	if (s.refusedAddr == nil && s.refusedKey == nil) || refusalExempt(ctx.Path()) {
		return false
	}
	ak := requestKey(ctx)
	if wait := s.refusedKey.wait(ak); wait > 0 {
		s.fail(ctx, tooManyRefusals("this access key", s.refusedKey.limit, wait))
		return true
	}
	if wait := s.refusedAddr.wait(clientID(ctx.RemoteAddr())); wait > 0 {
		if ak == "" {
			// Nothing to verify without reading the body.
			s.fail(ctx, tooManyRefusals("this address", s.refusedAddr.limit, wait))
			return true
		}
		ctx.SetUserValue(addrWaitKey, wait)
	}
	return false
}

// addressRefusal is the 429 that replaces the answer to a request that did not verify from an
// address past its allowance, or nil.
func (s *Server) addressRefusal(ctx *fasthttp.RequestCtx) error {
	wait, _ := ctx.UserValue(addrWaitKey).(int)
	if wait <= 0 {
		return nil
	}
	if ak, _ := ctx.UserValue(verifiedKey).(string); ak != "" {
		return nil
	}
	return tooManyRefusals("this address", s.refusedAddr.limit, wait)
}

func tooManyRefusals(who string, limit, wait int) error {
	e := shotd.Errorf(shotd.CodeRateLimited, "more than %d requests of %s were refused in the last minute; fix them before retrying", limit, who)
	e.RetryAfter = wait
	return e
}

// countRefusal counts a 4xx or 503 answer that the account did not count as admitted: against
// the key when the request verified, else against the address. Failures after admission (a
// selector not found, a job that does not exist) are the account's.
func (s *Server) countRefusal(ctx *fasthttp.RequestCtx) {
	if (s.refusedAddr == nil && s.refusedKey == nil) || refusalExempt(ctx.Path()) {
		return
	}
	st := ctx.Response.StatusCode()
	if (st < 400 || st > 499) && st != fasthttp.StatusServiceUnavailable {
		return
	}
	if admitted, _ := ctx.UserValue(admittedKey).(bool); admitted {
		return
	}
	if ak, _ := ctx.UserValue(verifiedKey).(string); ak != "" {
		s.refusedKey.add(ak)
		return
	}
	s.refusedAddr.add(clientID(ctx.RemoteAddr()))
}

// admit asks the account to admit a request and notes on it when it did.
func (s *Server) admit(ctx *fasthttp.RequestCtx, req shotd.Admission) (*shotd.AdmitResult, shotd.LimitsSnapshot, error) {
	adm, limits, err := s.gate.Admit(req)
	if err == nil {
		ctx.SetUserValue(admittedKey, true)
	}
	return adm, limits, err
}
