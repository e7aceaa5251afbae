package httpd

import (
	_ "embed"

	"github.com/valyala/fasthttp"
)

// dashboardHTML is the key-management page of api-v1 2.1: accounts, keys (create, name, revoke,
// Require signature) and usage. It is static; it talks to the admin API with the admin token the
// operator types in, so it needs no session of its own.
//
//go:embed dashboard/index.html
var dashboardHTML []byte

func serveDashboard(ctx *fasthttp.RequestCtx) {
	ctx.SetContentType("text/html; charset=utf-8")
	// The page holds the admin token in memory: keep it out of frames and caches.
	ctx.Response.Header.Set("X-Frame-Options", "DENY")
	ctx.Response.Header.Set("Cache-Control", "no-store")
	ctx.Response.Header.Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'")
	ctx.SetBody(dashboardHTML)
}
