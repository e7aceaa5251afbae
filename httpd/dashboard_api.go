package httpd

import (
	"net/url"
	"strings"
	"time"

	"github.com/shotd/shotd"
	"github.com/valyala/fasthttp"
)

// The admin endpoints behind the dashboard's chart and list, beside the documented admin API.

// UseRenderLog makes GET /admin/v1/renders list l's entries.
func (a *Admin) UseRenderLog(l *RenderLog) { a.renders = l }

// dailyUsage serves GET /admin/v1/accounts/{id}/usage/daily?days=N (default 30, at most 366):
// the account's renders per UTC day, oldest first.
func (a *Admin) dailyUsage(ctx *fasthttp.RequestCtx) {
	id := ctx.UserValue("id").(string)
	if _, err := a.store.Account(id); err != nil {
		a.fail(ctx, a.storeErr(err, "account"))
		return
	}
	days := 30
	if ctx.QueryArgs().Has("days") {
		n, err := ctx.QueryArgs().GetUint("days")
		if err != nil || n < 1 || n > 366 {
			a.fail(ctx, &shotd.Error{Code: shotd.CodeInvalidOptions, Message: "days must be an integer from 1 to 366",
				Fields: []shotd.FieldError{{Field: "days", Message: "must be an integer from 1 to 366"}}})
			return
		}
		days = n
	}
	out, err := a.store.DailyUsage(id, days, time.Now())
	if err != nil {
		a.fail(ctx, a.storeErr(err, "account"))
		return
	}
	writeJSON(ctx, 200, map[string]any{"account_id": id, "days": out})
}

// recentRenders serves GET /admin/v1/renders?limit=N&account=ID: the last renders this run saw
// (sync answers, acceptances, job ends), newest first; limit defaults to 50, at most 500.
func (a *Admin) recentRenders(ctx *fasthttp.RequestCtx) {
	limit := ctx.QueryArgs().GetUintOrZero("limit")
	if limit <= 0 || limit > 500 {
		limit = 50
	}
	writeJSON(ctx, 200, map[string]any{"renders": a.renders.Recent(limit, string(ctx.QueryArgs().Peek("account")))})
}

// info serves GET /admin/v1/info: what the dashboard needs to build links to the public API.
func (a *Admin) info(ctx *fasthttp.RequestCtx) {
	writeJSON(ctx, 200, map[string]any{"public_url": a.publicURL})
}

// serveDashboard serves the page. Its CSP lets it load renders from the public API (the
// playground's preview) and nothing else from outside.
func (a *Admin) serveDashboard(ctx *fasthttp.RequestCtx) {
	ctx.SetContentType("text/html; charset=utf-8")
	// The page holds the admin token in memory: keep it out of frames and caches.
	ctx.Response.Header.Set("X-Frame-Options", "DENY")
	ctx.Response.Header.Set("Cache-Control", "no-store")
	pub := publicOrigin(a.publicURL)
	ctx.Response.Header.Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "+
		"img-src 'self' data: "+pub+"; media-src "+pub+"; frame-src "+pub)
	ctx.SetBody(dashboardHTML)
}

// publicOrigin is scheme://host[:port] of publicURL, for the CSP; 'none' when it does not parse.
func publicOrigin(publicURL string) string {
	u, err := url.Parse(publicURL)
	if err != nil || u.Scheme == "" || u.Host == "" || strings.ContainsAny(u.Host, " ;'") {
		return "'none'"
	}
	return u.Scheme + "://" + u.Host
}
