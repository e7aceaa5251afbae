package httpd

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/option"
	"github.com/shotd/shotd/view"
	"github.com/valyala/fasthttp"
)

// ScreenshotOne's paths at the root of the public listener, where their SDKs send when only
// the host is changed. There shotd answers as ScreenshotOne documents: their option defaults
// and bounds (option.S1Take, option.S1Animate), their answers and their error body.
var s1Paths = map[string]bool{"/take": true, "/animate": true, "/bulk": true, "/usage": true}

// isS1 reports whether ctx came in on one of ScreenshotOne's paths.
func isS1(ctx *fasthttp.RequestCtx) bool { return s1Paths[string(ctx.Path())] }

func (s *Server) s1Take(ctx *fasthttp.RequestCtx)    { s.render(ctx, option.S1Take) }
func (s *Server) s1Animate(ctx *fasthttp.RequestCtx) { s.render(ctx, option.S1Animate) }

// s1ErrorBody is ScreenshotOne's error body. error_details lists each invalid option of
// request_not_valid; returned_status_code is the page's status of host_returned_error.
type s1ErrorBody struct {
	IsSuccessful       bool               `json:"is_successful"`
	ErrorCode          string             `json:"error_code"`
	ErrorMessage       string             `json:"error_message"`
	DocumentationURL   string             `json:"documentation_url"`
	ErrorDetails       []shotd.FieldError `json:"error_details,omitempty"`
	ReturnedStatusCode int                `json:"returned_status_code,omitempty"`
}

// newS1Error is err in ScreenshotOne's shape, with its status.
func newS1Error(publicURL string, err error) (int, s1ErrorBody) {
	e := shotd.AsError(err)
	info := shotd.Info(e.Code)
	x := shotd.S1CodeOfError(&shotd.Error{Code: info.Code, Message: e.Message})
	msg := e.Message
	if msg == "" {
		msg = info.Doc
	}
	return x.Status, s1ErrorBody{ErrorCode: x.Code, ErrorMessage: msg, ErrorDetails: e.Fields,
		DocumentationURL: publicURL + "/docs/errors#" + string(info.Code), ReturnedStatusCode: e.HostStatus}
}

// writeResult answers a render's stored result as JSON: shotd's result view, or
// ScreenshotOne's on their paths; the upload's location only when o asked for it.
func (s *Server) writeResult(ctx *fasthttp.RequestCtx, o *shotd.Options, r shotd.JobResult) {
	r = view.ResultFor(r, o)
	if isS1(ctx) {
		writeJSON(ctx, fasthttp.StatusOK, view.NewS1Result(r, s.set.PublicURL, o.Cache))
		return
	}
	writeJSON(ctx, fasthttp.StatusOK, view.NewResultView(r, s.set.PublicURL))
}

// s1Usage is ScreenshotOne's usage answer: the quota of the period and what is left of it,
// and the account's concurrency (reset in Unix nanoseconds, as theirs).
type s1Usage struct {
	Total       int `json:"total"`
	Available   int `json:"available"`
	Used        int `json:"used"`
	Concurrency struct {
		Limit     int   `json:"limit"`
		Remaining int   `json:"remaining"`
		Reset     int64 `json:"reset"`
	} `json:"concurrency"`
}

// s1UsageOf is ScreenshotOne's usage answer of u at now: the quota with its bonus, and the
// account's renders at once (its background jobs rendering taken off), whose window is the
// current minute.
func s1UsageOf(u *shotd.UsageReport, now time.Time) s1Usage {
	var out s1Usage
	out.Total, out.Used = u.Quota.Limit+u.Quota.Bonus, u.Quota.Used
	out.Available = max(u.Quota.Remaining, 0)
	out.Concurrency.Limit = u.Concurrency
	out.Concurrency.Remaining = max(u.Concurrency-u.Jobs.Running, 0)
	out.Concurrency.Reset = now.Truncate(time.Minute).Add(time.Minute).UnixNano()
	return out
}

// s1UsageHandler serves GET /usage in ScreenshotOne's shape.
func (s *Server) s1UsageHandler(ctx *fasthttp.RequestCtx) {
	if u, ok := s.usageReport(ctx); ok {
		writeJSON(ctx, fasthttp.StatusOK, s1UsageOf(u, s.now()))
	}
}

// s1Async is ScreenshotOne's answer to an accepted async request, with shotd's job id beside it
// so that the job can be followed.
func s1Async(jobID, statusURL string) map[string]any {
	return map[string]any{"is_successful": true, "job_id": jobID, "status_url": statusURL}
}

// s1IsAsync reports whether an S1 request asks for async, for its bounds: an async one may
// take 600 s.
func s1IsAsync(ps option.Params) bool {
	v, _ := ps.Get("async")
	b, err := strconv.ParseBool(v)
	return err == nil && b
}

// s1AnswerHeaders sets ScreenshotOne's documented headers of an answer on their paths: where
// store=true put the file (their SDK's store() reads these), and on an answer that is not JSON
// the object's location that storage_return_location asked for (a JSON answer has it in its
// body, as theirs) and the page's status and headers that metadata_http_response_* asked for.
// location is where this request stored the file ("" = nowhere), meta the render's metadata
// (a cached render's too).
func s1AnswerHeaders(h *fasthttp.ResponseHeader, o *shotd.Options, location string, meta *shotd.Metadata) {
	if o.Store && location != "" {
		h.Set("X-ScreenshotOne-Store-Bucket", o.Storage.Bucket)
		if key := storageKey(location, o.Storage); key != "" {
			h.Set("X-ScreenshotOne-Store-Key", key)
		}
		if o.Storage.ReturnLocation && o.ResponseType != "json" {
			h.Set("X-ScreenshotOne-Store-Location", location)
		}
	}
	if o.ResponseType == "json" || meta == nil {
		return
	}
	if o.MetaStatusCode && meta.HTTPResponseStatusCode != 0 {
		h.Set("X-ScreenshotOne-HTTP-Response-Status-Code", strconv.Itoa(meta.HTTPResponseStatusCode))
	}
	if o.MetaHeaders && meta.HTTPResponseHeaders != nil {
		// json.Marshal escapes every control character: the value is one line, whatever the
		// page sent.
		if b, err := json.Marshal(meta.HTTPResponseHeaders); err == nil {
			h.Set("X-ScreenshotOne-HTTP-Response-Headers", string(b))
		}
	}
}

// storageKey is the object key within the location that the uploader returned
// (objstore.Client.Location): the path, less the bucket when the endpoint addresses it by path
// rather than by host.
func storageKey(location string, st shotd.StorageTarget) string {
	u, err := url.Parse(location)
	if err != nil {
		return ""
	}
	p := strings.TrimPrefix(u.Path, "/")
	if !strings.HasPrefix(u.Host, st.Bucket+".") {
		p = strings.TrimPrefix(p, st.Bucket+"/")
	}
	return p
}
