package httpd

import (
	"github.com/shotd/shotd"
	"github.com/shotd/shotd/pressure"
	"github.com/valyala/fasthttp"
)

// servePressure answers GET /pressure on the public listener, without a key, so that a load
// balancer can health-check the node with it: 200 while the node takes more work (a browser is
// up and a render slot is free), 503 when it is full or has no browser; the body holds numbers
// and the verdict only (pressure.Pressure), nothing about accounts or pages.
func (s *Server) servePressure(ctx *fasthttp.RequestCtx) {
	writePressure(ctx, s.pressure())
}

func writePressure(ctx *fasthttp.RequestCtx, p pressure.Pressure) {
	ctx.Response.Header.Set("Cache-Control", "no-store")
	status := fasthttp.StatusOK
	if !p.Available {
		status = fasthttp.StatusServiceUnavailable
	}
	writeJSON(ctx, status, map[string]any{"pressure": p})
}

// UsePressure serves the node's pressure at GET /admin/v1/pressure, for the dashboard's
// overview; without it that endpoint answers not_found.
func (a *Admin) UsePressure(read func() pressure.Pressure) { a.pressure = read }

func (a *Admin) servePressure(ctx *fasthttp.RequestCtx) {
	if a.pressure == nil {
		a.fail(ctx, shotd.Errorf(shotd.CodeNotFound, "the pressure is not gathered here"))
		return
	}
	p := a.pressure()
	writeJSON(ctx, 200, map[string]any{"pressure": p})
}
