package httpd

import (
	"errors"
	"io"
	"sync"
	"time"

	"github.com/shotd/shotd"
	"github.com/valyala/fasthttp"
)

// Request bodies are streamed (fasthttp's StreamRequestBody): the handler runs once the headers
// are read, and a body is read only by readBody, after the key in the query or a header was
// found and checked. Read whole as they arrived, 64 connections that only sent headers
// declaring 22 MB bodies held 2 GB before any handler ran.
//
// The bytes read are charged to a budget shared by the server as they arrive, so that memory
// held by bodies in flight is bounded whatever the number of connections: past it a request is
// 503 service_unavailable. A body read before its key is known (a key in the JSON body only)
// draws from a smaller share of the budget, so that clients without a key cannot take the rest.

const (
	// bodyBudgetBodies is the global budget in bodies at the limit: 8 of 16 MiB by default.
	bodyBudgetBodies = 8
	// bodyChunk is how much a body buffer grows at once, and so the least it charges.
	bodyChunk = 64 << 10
	// drainMax and drainTime bound what is read and discarded of a body refused unread, so that
	// the answer is not lost to a connection reset.
	drainMax  = 32 << 20
	drainTime = 3 * time.Second
)

// bodyLimit is the largest body a valid request needs: one source (html or markdown, the url is
// short) plus styles and scripts, each at most maxSource bytes decoded, and 1 MiB for the other
// options and the JSON escapes. A bulk body is held to the same limit.
func bodyLimit(maxSource int) int { return 3*maxSource + 1<<20 }

// budget counts bytes in flight against a bound, without waiting.
type budget struct {
	mu   sync.Mutex
	used int64
	max  int64
}

func (b *budget) take(n int64) bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.max {
		return false
	}
	b.used += n
	return true
}

func (b *budget) give(n int64) {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

// InFlight is the bytes charged now.
func (b *budget) InFlight() int64 {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// BodyBytesInFlight is the request body bytes the server holds now, as charged to its budget.
func (s *Server) BodyBytesInFlight() int64 { return s.bodies.InFlight() }

// bodyState is what readBody left on a request: bytes to give back, and whether the body was
// read to its end.
type bodyState struct {
	charged, keyless int64
	done             bool
}

const bodyStateKey = "shotd.body"

func stateOf(ctx *fasthttp.RequestCtx) *bodyState {
	if st, ok := ctx.UserValue(bodyStateKey).(*bodyState); ok {
		return st
	}
	st := &bodyState{}
	ctx.SetUserValue(bodyStateKey, st)
	return st
}

// hasBody reports whether the request declares a body.
func hasBody(ctx *fasthttp.RequestCtx) bool {
	cl := ctx.Request.Header.ContentLength()
	return cl > 0 || cl == -1
}

// checkBodySize refuses a declared body over the limit before a byte of it is read.
func (s *Server) checkBodySize(ctx *fasthttp.RequestCtx) error {
	if ctx.Request.Header.ContentLength() > s.set.MaxBodyBytes {
		return tooLarge(s.set.MaxBodyBytes)
	}
	return nil
}

func tooLarge(limit int) error {
	return shotd.Errorf(shotd.CodeContentTooLarge, "the request body is larger than %d bytes", limit)
}

var errBodyBudget = shotd.Errorf(shotd.CodeServiceUnavailable, "too many request bodies are being read at once; retry after a short pause")

// readBody reads the request body whole, charging the budget as it grows. keyed says whether
// the request's key was checked before: a body read to find its key draws from the keyless share.
func (s *Server) readBody(ctx *fasthttp.RequestCtx, keyed bool) ([]byte, error) {
	if err := s.checkBodySize(ctx); err != nil {
		return nil, err
	}
	st := stateOf(ctx)
	stream := ctx.RequestBodyStream()
	if stream == nil || st.done {
		// Not streamed (a handler called directly, the admin listener), or read already.
		st.done = true
		return ctx.PostBody(), nil
	}
	buf := make([]byte, 0)
	limit := s.set.MaxBodyBytes
	for {
		if len(buf) == cap(buf) {
			grow := min(max(cap(buf), bodyChunk), limit+1-cap(buf))
			if grow <= 0 {
				return nil, tooLarge(limit)
			}
			if !keyed && !s.keyless.take(int64(grow)) {
				return nil, errBodyBudget
			}
			if !s.bodies.take(int64(grow)) {
				if !keyed {
					s.keyless.give(int64(grow))
				}
				return nil, errBodyBudget
			}
			st.charged += int64(grow)
			if !keyed {
				st.keyless += int64(grow)
			}
			nb := make([]byte, len(buf), cap(buf)+grow)
			copy(nb, buf)
			buf = nb
		}
		n, err := stream.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if len(buf) > limit {
			return nil, tooLarge(limit)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, shotd.Wrap(shotd.CodeInvalidRequest, err, "the request body could not be read")
		}
	}
	st.done = true
	// The body is read: fasthttp's stream is released and the connection may serve the next request.
	ctx.Request.SetBodyRaw(buf)
	return buf, nil
}

// endBody runs after the handler: it gives back the body's budget and, when the body was not
// read to its end, discards a bounded amount of it and closes the connection, whose next bytes
// would otherwise be read as a request.
func (s *Server) endBody(ctx *fasthttp.RequestCtx) {
	st, _ := ctx.UserValue(bodyStateKey).(*bodyState)
	if st != nil {
		s.bodies.give(st.charged)
		s.keyless.give(st.keyless)
		st.charged, st.keyless = 0, 0
	}
	stream := ctx.RequestBodyStream()
	if stream == nil || (st != nil && st.done) || !hasBody(ctx) {
		return
	}
	ctx.SetConnectionClose()
	buf := make([]byte, 32<<10)
	end := time.Now().Add(drainTime)
	var n int
	for n < drainMax && time.Now().Before(end) {
		_ = ctx.Conn().SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		m, err := stream.Read(buf)
		n += m
		if err != nil {
			break
		}
	}
	_ = ctx.Conn().SetReadDeadline(time.Time{})
}
