package httpd

import (
	"bytes"
	"context"
	"strconv"

	"github.com/shotd/shotd"
	"github.com/valyala/fasthttp"
)

// requestParams collects a render request's options: the query string, and for POST the JSON
// object body as well (api-v1 4.1 rule 6).
func requestParams(ctx *fasthttp.RequestCtx) (shotd.Params, error) {
	ps := queryParams(ctx.QueryArgs())
	if !ctx.IsPost() {
		return ps, nil
	}
	ct := ctx.Request.Header.ContentType()
	if mt, _, _ := bytes.Cut(ct, []byte(";")); !bytes.EqualFold(bytes.TrimSpace(mt), []byte("application/json")) {
		return nil, shotd.Errorf(shotd.CodeInvalidRequest, "send the options as a JSON object with Content-Type: application/json")
	}
	body, err := shotd.ParamsFromJSON(ctx.PostBody())
	if err != nil {
		return nil, err
	}
	return append(ps, body...), nil
}

// screenshot serves GET and POST of /api/v1/screenshot and /api/v1/take.
func (s *Server) screenshot(ctx *fasthttp.RequestCtx) {
	ps, err := requestParams(ctx)
	if err != nil {
		s.fail(ctx, err)
		return
	}
	who, err := s.authenticate(ctx, ps)
	if err != nil {
		s.fail(ctx, err)
		return
	}
	log := logOf(ctx).With().Str("account", who.account.ID).Logger()
	ctx.SetUserValue(logKey, &log)

	o, err := shotd.ParseOptions(ps, shotd.Limits{MaxSourceBytes: s.set.MaxSourceBytes})
	if err != nil {
		s.fail(ctx, err)
		return
	}
	for _, f := range o.Features() {
		if !who.plan.HasFeature(f) {
			s.fail(ctx, shotd.Errorf(shotd.CodeFeatureNotAvailable, "the %s plan does not include %s", who.plan.Name, f))
			return
		}
	}

	rctx, cancel := context.WithTimeout(context.Background(), o.Timeout+o.Delay+s.set.RenderGrace)
	defer cancel()
	out, err := s.renderer.Render(rctx, o)
	if err != nil {
		s.fail(ctx, err)
		return
	}
	ctx.Response.Header.Set("X-Render-Ms", strconv.FormatInt(out.RenderMs, 10))
	ctx.Response.Header.Set("X-Cache", "MISS")
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType(out.ContentType)
	ctx.SetBody(out.Data)
}

// statusAuth authenticates a status endpoint request (usage, jobs, batches, files).
func (s *Server) statusAuth(ctx *fasthttp.RequestCtx) (*principal, bool) {
	ps := queryParams(ctx.QueryArgs())
	who, err := s.authenticate(ctx, ps)
	if err == nil {
		err = statusParams(ps)
	}
	if err != nil {
		s.fail(ctx, err)
		return nil, false
	}
	return who, true
}

func (s *Server) usage(ctx *fasthttp.RequestCtx) {
	who, ok := s.statusAuth(ctx)
	if !ok {
		return
	}
	p := who.plan
	writeJSON(ctx, 200, map[string]any{
		"quota": map[string]any{"limit": p.MonthlyQuota, "used": 0, "remaining": p.MonthlyQuota + who.account.BonusScreenshots,
			"bonus": who.account.BonusScreenshots},
		"requests_per_minute":        p.RequestsPerMinute,
		"status_requests_per_minute": p.StatusRequestsPerMinute,
		"concurrency":                p.Concurrency,
		"queue_limit":                p.QueueLimit,
		"failures_per_minute":        p.FailuresPerMinute,
	})
}

func (s *Server) job(ctx *fasthttp.RequestCtx) {
	if _, ok := s.statusAuth(ctx); !ok {
		return
	}
	s.fail(ctx, shotd.Errorf(shotd.CodeJobNotFound, "no job %q for this account", ctx.UserValue("id")))
}

func (s *Server) batch(ctx *fasthttp.RequestCtx) {
	if _, ok := s.statusAuth(ctx); !ok {
		return
	}
	s.fail(ctx, shotd.Errorf(shotd.CodeJobNotFound, "no batch %q for this account", ctx.UserValue("id")))
}

func (s *Server) file(ctx *fasthttp.RequestCtx) {
	if _, ok := s.statusAuth(ctx); !ok {
		return
	}
	s.fail(ctx, shotd.Errorf(shotd.CodeFileNotFound, "no file %q for this account", ctx.UserValue("id")))
}

func (s *Server) bulk(ctx *fasthttp.RequestCtx) {
	ps := queryParams(ctx.QueryArgs())
	who, err := s.authenticate(ctx, ps)
	if err != nil {
		s.fail(ctx, err)
		return
	}
	s.fail(ctx, shotd.Errorf(shotd.CodeFeatureNotAvailable, "the %s plan does not include bulk on this server yet", who.plan.Name))
}
