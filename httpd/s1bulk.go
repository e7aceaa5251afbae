package httpd

import (
	"encoding/json"
	"net/url"
	"strings"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/option"
	"github.com/shotd/shotd/sign"
	"github.com/shotd/shotd/view"
	"github.com/valyala/fasthttp"
)

// S1BulkMaxItems is ScreenshotOne's most requests in one bulk call; a server whose
// limits.bulk_max_items is lower keeps its own.
const S1BulkMaxItems = 20

// s1BulkItem is one answer of their bulk: the signed link that takes the screenshot, and, when
// the call asked to execute, how that went (their JSON answer or their error body).
type s1BulkItem struct {
	URL      string `json:"url"`
	Response any    `json:"response,omitempty"`
}

// s1Bulk serves POST /bulk as ScreenshotOne documents it: a JSON body of options (the defaults
// of every request), requests (at most S1BulkMaxItems), execute and optimize. Every request is
// validated as their /take validates it; the answer links each to /take, signed their way with
// the key's secret, and, with execute, renders them one after another while the client waits.
// optimize (their hint to group the work) changes nothing here.
func (s *Server) s1Bulk(ctx *fasthttp.RequestCtx) {
	ps := queryParams(ctx.QueryArgs())
	ak := accessKey(ctx, ps)
	var who *principal
	var err error
	if ak != "" {
		who, err = s.identify(ak)
	}
	if err == nil {
		err = checkJSON(ctx, "the bulk body")
	}
	var body []byte
	if err == nil {
		body, err = s.readBody(ctx, who != nil)
	}
	if err == nil && who == nil {
		v, _ := option.JSONString(body, "access_key")
		who, err = s.identify(v)
	}
	if err != nil {
		s.fail(ctx, err)
		return
	}
	if err := s.verify(ctx, who, withoutParam(ps, "access_key")); err != nil {
		s.fail(ctx, err)
		return
	}
	var req struct {
		AccessKey string            `json:"access_key"`
		Execute   bool              `json:"execute"`
		Optimize  bool              `json:"optimize"`
		Options   json.RawMessage   `json:"options"`
		Requests  []json.RawMessage `json:"requests"`
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		s.fail(ctx, shotd.Errorf(shotd.CodeInvalidRequest, "the body must be a JSON object of options, requests, execute and optimize"))
		return
	}
	if req.AccessKey != "" && req.AccessKey != who.key.AccessKey {
		s.fail(ctx, shotd.Errorf(shotd.CodeAccessKeyInvalid, "the access key is ambiguous; send it once"))
		return
	}
	most := S1BulkMaxItems
	if m := s.set.BulkMaxItems; m > 0 && m < most {
		most = m
	}
	if len(req.Requests) == 0 || len(req.Requests) > most {
		s.fail(ctx, shotd.Errorf(shotd.CodeInvalidRequest, "requests must hold 1 to %d items", most))
		return
	}
	lim := option.Limits{MaxSourceBytes: s.set.MaxSourceBytes}
	var defaults option.Params
	if len(req.Options) > 0 && string(req.Options) != "null" {
		if defaults, err = option.ReadJSONParams(req.Options, lim); err != nil {
			s.fail(ctx, err)
			return
		}
	}
	var errs []shotd.FieldError
	items := make([]option.Params, len(req.Requests))
	opts := make([]*shotd.Options, len(req.Requests))
	for i, raw := range req.Requests {
		item, err := option.ReadJSONParams(raw, lim)
		if err == nil {
			items[i] = s1Merge(item, defaults)
			opts[i], err = s1Options(items[i], lim)
		}
		if err != nil {
			if whole := addItemError(&errs, i, err); whole != nil {
				s.fail(ctx, whole)
				return
			}
		}
	}
	if err := itemsInvalid(errs); err != nil {
		s.fail(ctx, err)
		return
	}
	out := make([]s1BulkItem, len(items))
	for i, item := range items {
		out[i].URL = s.s1Link(who.key, item)
		if req.Execute {
			out[i].Response = s.s1Execute(ctx, who, opts[i])
		}
	}
	writeJSON(ctx, fasthttp.StatusOK, map[string]any{"responses": out})
}

// s1Merge puts their options under a request's own: the request's win, and a request that
// gives a source (or an area) takes none of the options' group.
func s1Merge(item, defaults option.Params) option.Params {
	out := append(option.Params{}, item...)
	for _, d := range defaults {
		if !overridden(item, d.Name) && d.Name != "access_key" {
			out = append(out, d)
		}
	}
	return out
}

// s1Options validates a request of their bulk as their /take does.
func s1Options(ps option.Params, lim option.Limits) (*shotd.Options, error) {
	async := false
	if v, ok := ps.Get("async"); ok {
		async = v == "true" || v == "1"
	}
	t, err := option.S1Take(ps)
	if err != nil {
		return nil, err
	}
	o, err := option.ParseOptions(t, option.S1Limits(lim, async))
	if err != nil {
		return nil, err
	}
	o.Dialect = shotd.DialectS1
	return o, nil
}

// s1Link is the link to /take of a request's options, signed their way with key's secret: the
// query text as sent, then signature.
func (s *Server) s1Link(key shotd.Key, ps option.Params) string {
	var parts []string
	for _, p := range ps {
		if p.Name == "access_key" || p.Name == "signature" {
			continue
		}
		for _, v := range p.Values {
			parts = append(parts, url.QueryEscape(p.Name)+"="+url.QueryEscape(v))
		}
	}
	parts = append(parts, "access_key="+url.QueryEscape(key.AccessKey))
	q := strings.Join(parts, "&")
	return s.set.PublicURL + "/take?" + q + "&signature=" + sign.SignQueryS1(key.SecretKey, q)
}

// s1Execute renders one request of an executed bulk call and says how it went: their JSON
// answer with the link to the stored file, or their error body.
func (s *Server) s1Execute(ctx *fasthttp.RequestCtx, who *principal, o *shotd.Options) any {
	c := *o
	c.ResponseType = "json" // the file is kept, so that the answer links to it
	c.Async, c.Cache = false, false
	rec, _, err := s.renderKept(ctx, who, &c, "")
	if err != nil {
		_, body := newS1Error(s.set.PublicURL, err)
		return body
	}
	return view.NewS1Result(view.ResultFor(s.files.ResultOf(rec, "MISS"), &c), s.set.PublicURL, false)
}
